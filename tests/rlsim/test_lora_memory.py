"""Oracle tests of LoRA (rlsim.trainer.lora), the actor's loaded dtype (training.param_dtype), the in-place log-prob
logits (training.inplace_logprobs) and the framework keys that set them.

Toy model: N = 1e9 parameters, 8 layers, hidden 1024, 8 heads (and 8 KV heads) of 128, MLP 4096, vocabulary 1000,
on 8 GPUs. Every expected number is worked out here from those inputs and the mechanism.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from rlsim.errors import ScenarioError
from rlsim.frameworks.adapter import ImportConfigError
from rlsim.frameworks.config_import import import_config
from rlsim.scenario import apply_overrides, from_dict
from rlsim.trainer import lora, training
from rlsim.trainer import memory as training_memory
from tests.rlsim.test_offload_memory import GPU, _sections

N = 1e9
MODEL = {
    "name": "toy-1b",
    "num_layers": 8,
    "hidden_size": 1024,
    "num_attention_heads": 8,
    "num_kv_heads": 8,
    "head_dim": 128,
    "intermediate_size": 4096,
    "vocab_size": 1000,
    "num_params": N,
    "num_active_params": N,
}
CORPUS = Path(__file__).parents[1] / "launch_corpus"

# all-linear at rank 8, per layer: q, k, v, o each 8 x (1024 + 1024) = 16,384; gate, up each 8 x (1024 + 4096)
# = 40,960, down 8 x (4096 + 1024) = 40,960: 4 x 16,384 + 3 x 40,960 = 188,416; 8 layers: 1,507,328
ALL_LINEAR_R8 = 8 * (4 * 8 * (1024 + 1024) + 3 * 8 * (1024 + 4096))


def _scn(over: dict[str, Any] | None = None):
    """The toy model (with its MLP width) in test_offload_memory's toy scenario, ``over`` applied as dotted keys."""
    d: dict[str, Any] = {
        **_sections("toy", dict(GPU)),
        "model": dict(MODEL),
        "costs": {"train_step_overhead_s": 0, "forward_overhead_s": 0, "train_compute_efficiency": 0.5},
        "run": {"steps": 2},
    }
    return from_dict(apply_overrides(d, over or {}))


LORA8 = {"training.lora_rank": 8}


def test_adapter_parameters_of_all_linear_and_of_megatrons_fused_layers():
    """all-linear: 1,507,328 (above). Megatron's fused layers at rank 8, per layer: linear_qkv 8 x (1024 + 3 x 1024)
    = 32,768, linear_proj 8 x (1024 + 1024) = 16,384, linear_fc1 8 x (1024 + 2 x 4096) = 73,728, linear_fc2
    8 x (4096 + 1024) = 40,960: 163,840; 8 layers 1,310,720. q_proj alone: 8 x 16,384 = 131,072."""
    s = _scn(LORA8)
    assert lora.adapter_params(s.model, s.training) == (1_507_328.0, 0.0)
    assert ALL_LINEAR_R8 == 1_507_328
    fused = _scn({**LORA8, "training.lora_target_modules": "linear_qkv,linear_proj,linear_fc1,linear_fc2"})
    assert lora.adapter_params(fused.model, fused.training) == (1_310_720.0, 0.0)
    q = _scn({**LORA8, "training.lora_target_modules": "q_proj"})
    assert lora.adapter_params(q.model, q.training) == (131_072.0, 0.0)


def test_moe_experts_get_adapters_each():
    """A MoE toy: 4 experts of width 512 in every layer (no dense layer), rank 8, targets gate/up/down: each expert
    gate and up 8 x (1024 + 512) = 12,288, down the same: 36,864 an expert; 4 experts x 8 layers: 1,179,648."""
    moe = {"num_experts": 4, "num_experts_per_token": 2, "moe_intermediate_size": 512}
    s = _scn(
        {
            **LORA8,
            "training.lora_target_modules": "gate_proj,up_proj,down_proj",
            **{f"model.{k}": v for k, v in moe.items()},
        }
    )
    assert lora.adapter_params(s.model, s.training) == (0.0, 1_179_648.0)


def test_fsdp_lora_memory_is_the_frozen_base_plus_the_adapters_training_state():
    """FSDP over 8 GPUs, fp32 loaded (verl's actor default): the frozen base 4 bytes x N / 8 = 5e8; the adapters'
    shard 1,507,328 / 8 = 188,416 parameters at 4 (weights) + 4 (gradients) = 8 bytes: 1,507,328; Adam's two fp32
    moments 8 bytes: 1,507,328. Full fine-tuning holds 8 x N / 8 = 1e9 and 1e9."""
    full = training_memory.memory(_scn())
    assert (full.weights_grads_bytes, full.optimizer_bytes) == (1e9, 1e9)
    m = training_memory.memory(_scn(LORA8))
    assert m.weights_grads_bytes == pytest.approx(5e8 + 1_507_328)
    assert m.optimizer_bytes == pytest.approx(1_507_328)
    assert m.activation_bytes == full.activation_bytes  # activations as before


def test_megatron_lora_memory():
    """Megatron on 8 GPUs (t = p = 1, d = 8): bf16 base 2 x N = 2e9; the adapters whole on each GPU (1,507,328) at
    2 (bf16) + 4 (fp32 gradient buffer) bytes: 9,043,968; the distributed optimizer's 12 bytes (fp32 master and
    moments) over d = 8: 12 x 188,416 = 2,260,992."""
    m = training_memory.memory(_scn({**LORA8, "training.backend": "megatron"}))
    assert m.weights_grads_bytes == pytest.approx(2e9 + 6 * 1_507_328)
    assert m.optimizer_bytes == pytest.approx(12 * 1_507_328 / 8)


def test_the_reference_is_the_base_unless_the_framework_keeps_its_own():
    """kl_reference with LoRA: verl and TRL take the reference log-probs from the base (no copy held); OpenRLHF's
    reference model is its own: + bf16 N / 8 = 2.5e8 per GPU."""
    kl = {**LORA8, "algorithm.kl_reference": True}
    base = training_memory.resident_memory(_scn(kl))
    own = training_memory.resident_memory(_scn({**kl, "training.lora_reference_in_base": False}))
    assert base.weights_grads_bytes == pytest.approx(5e8 + 1_507_328)
    assert own.weights_grads_bytes - base.weights_grads_bytes == pytest.approx(2.5e8)


def test_lora_linear_layers_cost_two_thirds_of_full_training():
    """No attention (0 squared tokens), no recompute: full training 3 x 2 N x 1e4 tokens = 6e13 FLOPs over 8 GPUs at
    1e15 x 0.5: 0.015 s; LoRA 2 x 2 N x 1e4 = 4e13: 0.01 s (no weight gradients for the frozen base)."""
    none = {"training.activation_recompute": "none"}
    full = _scn(none)
    lo = _scn({**none, **LORA8})
    t_full, _ = training._compute_s(full, full.model, 1e4, 0.0, 8, False)
    t_lora, _ = training._compute_s(lo, lo.model, 1e4, 0.0, 8, False)
    assert t_full == pytest.approx(6e13 / (8 * 1e15 * 0.5))
    assert t_lora == pytest.approx(4e13 / (8 * 1e15 * 0.5))


def test_lora_optimizer_steps_over_the_adapters_only():
    """GPU Adam streams ADAM_BYTES_PER_PARAM over the adapters' shard, 188,416 parameters, not N / 8."""
    s = _scn(LORA8)
    hbm = 1e12 * s.costs.optimizer_memory_efficiency
    t = training.phase_time(s, s.model, 1e4, 0.0).optimizer_s
    assert t == pytest.approx(training.ADAM_BYTES_PER_PARAM * ALL_LINEAR_R8 / 8 / hbm)


def test_bf16_loaded_actor_holds_half():
    """param_dtype bf16 (verl fsdp_config.model_dtype bfloat16): parameters and gradients 2 + 2 bytes, Adam's moments
    2 + 2: 4 x N / 8 = 5e8 each."""
    m = training_memory.memory(_scn({"training.param_dtype": "bf16"}))
    assert (m.weights_grads_bytes, m.optimizer_bytes) == (5e8, 5e8)


def test_inplace_logprobs_hold_the_logits_once_in_bf16():
    """A packed micro-batch of 1 x 1024 tokens: fp32 logits 1024 x 1000 x 4 = 4,096,000 bytes, bf16 in place
    2,048,000."""
    a = training_memory.memory(_scn()).activation_bytes
    b = training_memory.memory(_scn({"training.inplace_logprobs": True})).activation_bytes
    assert a - b == pytest.approx(1024 * 1000 * 2)


def test_an_unknown_target_module_is_refused_naming_it():
    with pytest.raises(ScenarioError, match=r"lora_target_modules.*qproj.*all-linear"):
        _scn({**LORA8, "training.lora_target_modules": "qproj"})


def test_param_dtype_is_an_fsdp_option():
    with pytest.raises(ScenarioError, match="param_dtype"):
        _scn({"training.backend": "megatron", "training.param_dtype": "bf16"})


def _import(rel: str, sets: dict[str, Any] | None = None) -> dict[str, Any]:
    path = CORPUS / rel
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        return import_config(path, None, sets).scenario
    finally:
        os.chdir(cwd)


def test_verl_megatron_lora_script_imports_as_lora():
    """run_qwen3moe-30b_megatron_lora.sh: actor_rollout_ref.model.lora.rank=32 on verl's default Megatron targets."""
    tr = _import("verl/examples__grpo_trainer__run_qwen3moe-30b_megatron_lora.sh")["training"]
    assert tr["lora_rank"] == 32
    assert tr["lora_target_modules"] == "linear_qkv,linear_proj,linear_fc1,linear_fc2"


def test_verl_gptoss_reads_the_bf16_actor_the_inplace_logits_and_the_offloaded_reference():
    """run_gptoss_20b.sh: fsdp_config.model_dtype=bfloat16, entropy_coeff=0, ref.fsdp_config.param_offload=True."""
    tr = _import("verl/examples__grpo_trainer__run_gptoss_20b.sh")["training"]
    assert (tr["param_dtype"], tr["inplace_logprobs"], tr["reference_on_host"]) == ("bf16", True, True)


def test_a_refusal_on_the_assumed_gpu_names_the_catalog_gpus_where_it_validates(monkeypatch):
    """fitting_hardware tries every catalog GPU, smallest memory first, and names those the scenario validates on; a
    GPU whose entry does not know its node's host memory is tried with the assumed GPU's (DGX H100: 2 TB), so a
    host-memory refusal is not passed over by a GPU that cannot make the check."""
    from rlsim import catalog
    from rlsim.errors import ScenarioError
    from rlsim.frameworks import gpu_fit

    tried: dict[str, dict] = {}

    def fake_from_dict(raw):
        hw = raw["hardware"]
        tried[hw["gpu"]] = hw
        if hw["gpu"] not in ("H200", "B200"):
            raise ScenarioError("hardware.gpu", hw["gpu"], "does not fit")

    monkeypatch.setattr(gpu_fit, "from_dict", fake_from_dict)
    fits = gpu_fit.fitting_hardware({"hardware": {"num_gpus": 8}}, "H100-SXM")
    assert [gpu_fit.label(h) for h in fits] == ["H200 (141 GB)", "B200 (180 GB)"]
    assert not catalog.gpu("H20").get("host_memory_bytes") and tried["H20"]["host_memory_bytes"] == 2e12
    assert "host_memory_bytes" not in tried["B200"]  # its own entry knows it
    assert "H100-SXM" not in tried


def test_trl_use_peft_and_a_bad_verl_rank():
    """TRL's ModelConfig use_peft / lora_r (default 16; targets None: PEFT's q_proj, v_proj)."""
    path = Path(__file__).parent / "fixtures" / "configs" / "trl_gspo_qwen3_0.6b.yaml"
    tr = import_config(path, "trl", {"use_peft": True}).scenario["training"]
    assert (tr["lora_rank"], tr["lora_target_modules"]) == (16, "q_proj,v_proj")
    verl = Path(__file__).parent / "fixtures" / "configs" / "verl_grpo_qwen3_8b.yaml"
    with pytest.raises(ImportConfigError, match="lora_rank"):
        import_config(verl, "verl", {"actor_rollout_ref.model.lora_rank": "eight"})


def test_openrlhf_and_nemo_rl_lora_keep_their_own_reference():
    """OpenRLHF's flat --lora_rank (v0.9.5; --ds.lora.rank at v0.11.0), all-linear by default; NeMo RL's DTensor
    lora_cfg (dim 8, match_all_linear): both launch a reference model of their own."""
    configs = Path(__file__).parent / "fixtures" / "configs"
    o = import_config(configs / "openrlhf_ppo_llama3_8b_hybrid_engine_v0.9.5.yaml", "openrlhf", {"lora_rank": 16})
    n = import_config(
        configs / "nemo_rl" / "grpo_math_1B.yaml", "nemo-rl", {"policy.dtensor_cfg.lora_cfg.enabled": True}
    )
    want = {"lora_target_modules": "all-linear", "lora_reference_in_base": False}
    assert o.scenario["training"] | want == o.scenario["training"] and o.scenario["training"]["lora_rank"] == 16
    assert n.scenario["training"] | want == n.scenario["training"] and n.scenario["training"]["lora_rank"] == 8


def test_slime_trains_with_megatrons_flags():
    """run-qwen3-30B-A3B.sh: TP 4, EP 8, expert TP 1, full recompute, dynamic batch of 20,480 tokens, CPU Adam with
    the precision-aware optimizer, the reference on the host (--use-kl-loss); run-deepseek-r1.sh: bins of
    --max-tokens-per-gpu 16,384 x CP 4 = 65,536 tokens (dp_schedule.py:120)."""
    tr = _import("slime/scripts/run-qwen3-30B-A3B.sh")["training"]
    want = {
        "backend": "megatron",
        "tensor_parallel_size": 4,
        "expert_parallel_size": 8,
        "expert_tensor_parallel_size": 1,
        "activation_recompute": "full",
        "packing_tokens": 20480,
        "offload_optimizer": True,
        "precision_aware_optimizer": True,
        "reference_on_host": True,
        "distributed_optimizer": True,
    }
    assert {k: tr[k] for k in want} == want
    assert _import("slime/scripts/run-deepseek-r1.sh")["training"]["packing_tokens"] == 16384 * 4


def test_a_streamed_reference_crosses_the_host_link_once():
    """reference_on_host: the swap moves 3 bf16 shards (policy out, reference in, policy back); verl's FSDP CPU offload
    streams the reference's shard up once. Shard 2 x N / 8 = 2.5e8 bytes over 1e10 x costs.host_link_efficiency."""
    host = {"training.reference_on_host": True, "algorithm.kl_reference": True, "costs.host_link_efficiency": 0.5}
    swap = _scn(host)
    streamed = _scn({**host, "training.reference_streamed": True})
    assert training.reference_swap_s(swap, swap.model) == pytest.approx(3 * 2.5e8 / 5e9)
    assert training.reference_swap_s(streamed, streamed.model) == pytest.approx(2.5e8 / 5e9)
