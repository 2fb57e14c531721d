"""LoRA training (``training.lora_rank`` > 0): what adapters add and what the frozen base saves.

* Adapters: a linear layer W of d_in x d_out gets A (d_in x r) and B (r x d_out), r (d_in + d_out) parameters
  (Hu et al. 2021, "LoRA", section 4: W0 + BA with B in R^{d x r}, A in R^{r x k}). ``training.lora_target_modules``
  names the layers: Hugging Face / PEFT names (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj; PEFT's
  ``all-linear`` is all of them, the output head excluded: peft@v0.17.0 tuners_utils.py
  ``_maybe_include_all_linear_layers``) or Megatron's fused ones (linear_qkv, linear_proj, linear_fc1, linear_fc2:
  one adapter per fused layer, verl b178a3c ``_generated_ppo_megatron_trainer.yaml`` model.lora.target_modules).
  MoE experts are linear layers too: every expert of every MoE layer gets its own adapters; the router none.
* Memory: the base weights frozen in bf16 (2 bytes per parameter; no gradient, no optimizer state); the adapters
  train as a full model would (weights, gradients, Adam). verl and TRL take the reference log-probs from the
  base with the adapters switched off, so no reference copy is held (verl@v0.7.0 fsdp_workers.py:1046 "actor
  without lora applied is the ref"; TRL's GRPOTrainer ``ref_model = None`` for a PEFT model).
* Compute: the forward as before; the backward still propagates activation gradients through every frozen
  layer (2 N FLOPs per token) but computes no weight gradients for them (the other 2 N of a full backward:
  Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters", section 5.1: a
  backward is twice a forward, one GEMM for input gradients and one for weight gradients per layer). The linear
  layers cost 4 N per token instead of 6 N (2/3); attention, which has no weights, is unchanged; the adapters'
  own GEMMs (r << d) are left out. The optimizer steps over the adapters only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlsim.errors import ScenarioError

if TYPE_CHECKING:
    from rlsim.schema import ModelSpec, Training

HF_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
MEGATRON_MODULES = ("linear_qkv", "linear_proj", "linear_fc1", "linear_fc2")
ALL_LINEAR = "all-linear"
LINEAR_PASSES = 2.0  # forward + input gradients, in units of the forward's 2 N FLOPs per token (full: 3)
BASE_BYTES = 2  # frozen bf16 base weights per parameter


def target_modules(training: Training) -> tuple[str, ...]:
    """The modules named by ``training.lora_target_modules``; ScenarioError for an unknown name."""
    names = tuple(n.strip() for n in training.lora_target_modules.split(",") if n.strip())
    bad = [n for n in names if n not in (ALL_LINEAR, *HF_MODULES, *MEGATRON_MODULES)]
    if bad or not names:
        raise ScenarioError(
            "training.lora_target_modules",
            training.lora_target_modules,
            f"names no linear layer rlsim knows ({', '.join(bad) or 'empty'})",
            f"use {ALL_LINEAR}, or names among {' '.join(HF_MODULES)} {' '.join(MEGATRON_MODULES)}",
        )
    return names


def _linears(model: ModelSpec, dense_ffn: int) -> dict[str, list[tuple[int, int]]]:
    """(d_in, d_out) of each linear layer of one layer, by module name (an MLP of ``dense_ffn`` width)."""
    h, q, kv = model.hidden_size, model.num_attention_heads * model.head_dim, model.num_kv_heads * model.head_dim
    return {
        "q_proj": [(h, q)],
        "k_proj": [(h, kv)],
        "v_proj": [(h, kv)],
        "o_proj": [(q, h)],
        "linear_qkv": [(h, q + 2 * kv)],
        "linear_proj": [(q, h)],
        "gate_proj": [(h, dense_ffn)],
        "up_proj": [(h, dense_ffn)],
        "down_proj": [(dense_ffn, h)],
        "linear_fc1": [(h, 2 * dense_ffn)],
        "linear_fc2": [(dense_ffn, h)],
    }


_ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj", "linear_qkv", "linear_proj")
_MLP = ("gate_proj", "up_proj", "down_proj", "linear_fc1", "linear_fc2")


def adapter_params(model: ModelSpec, training: Training) -> tuple[float, float]:
    """(adapter parameters outside the experts, adapter parameters of the routed experts) for the whole model:
    r (d_in + d_out) per targeted linear layer; all-linear is the Hugging Face set."""
    r = training.lora_rank
    if r == 0:
        return 0.0, 0.0
    names = target_modules(training)
    if ALL_LINEAR in names:
        names = HF_MODULES

    def per_layer(ffn: int, modules: tuple[str, ...]) -> float:
        table = _linears(model, ffn)
        return float(sum(r * (i + o) for n in names if n in modules for i, o in table[n]))

    attention = model.attention_layers * per_layer(0, _ATTENTION)
    if not model.is_moe:
        return attention + model.num_layers * per_layer(model.intermediate_size, _MLP), 0.0
    moe_layers = model.num_moe_layers
    dense = model.num_dense_layers * per_layer(model.intermediate_size, _MLP)
    shared = moe_layers * model.num_shared_experts * per_layer(model.moe_intermediate_size, _MLP)
    experts = moe_layers * model.num_experts * per_layer(model.moe_intermediate_size, _MLP)
    return attention + dense + shared, float(experts)


def trained(
    model: ModelSpec, training: Training, dense: float, expert: float, dense_div: float, expert_div: float
) -> tuple[float, float]:
    """(dense, expert) parameters one GPU trains: ``dense`` and ``expert`` (its shard of the model) in full
    fine-tuning; under LoRA the adapters, split as the layers they sit on (``dense_div``, ``expert_div``)."""
    if training.lora_rank == 0:
        return dense, expert
    ad, ae = adapter_params(model, training)
    return ad / dense_div, ae / expert_div


def linear_passes(training: Training) -> float:
    """Forward-equivalents of the linear layers in one training pass: 3 (forward, input and weight gradients),
    LINEAR_PASSES under LoRA (no weight gradients for the frozen base)."""
    return LINEAR_PASSES if training.lora_rank else 3.0
