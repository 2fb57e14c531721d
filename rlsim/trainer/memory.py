"""The training section's memory model and rules: what one training GPU holds at the peak of a step, and which
layouts the scenario refuses (divisibility of the parallel sizes, FP8 support, the train global batch, memory).

Bytes per GPU (sources in rlsim.trainer.training's docstring): Megatron 6 bytes per parameter of a GPU's model shard for
bf16 weights and fp32 gradients plus 12 / d for the distributed optimizer (18 without; Megatron-LM
``docs/source/api-guide/dist_optimizer.md``); 4 with bf16 gradients (``grad_reduce_in_fp32`` off) and 10 / d under the
precision-aware optimizer (master weights as 16-bit remainders), as NeMo RL runs Megatron; activations of p
in-flight micro-batches of L/p layers (34 s h / t per layer with sequence parallel and flash attention, 2 s h / t
under full recompute; Korthikanti et al. 2022) and the last stage's fp32 logits; FSDP 16 bytes per parameter
sharded over the group plus two gathered layers and one micro-batch's activations; a PPO critic's state and a
GPU-resident reference model's bf16 weights on top. Every refusal is a ScenarioError naming the field, the value
and the fix.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rlsim.errors import ScenarioError
from rlsim.trainer import headroom, lora, offload
from rlsim.trainer.offload import megatron_grad_bytes, megatron_optimizer_bytes
from rlsim.trainer.training import (
    ACT_BYTES,
    LOGIT_BYTES,
    SEQ_PARALLEL_ACT_BYTES_PER_TOKEN_HIDDEN,
    layout_of,
    packing_tokens,
    reference_weight_bytes,
    shard_group,
)
from rlsim.workload.priors import response_prior

if TYPE_CHECKING:
    from rlsim.schema import ModelSpec, Scenario, Workload


@dataclass(frozen=True)
class TrainMemory:
    """Bytes per training GPU at the peak of a step (the most loaded pipeline stage)."""

    weights_grads_bytes: float
    optimizer_bytes: float
    activation_bytes: float
    budget_bytes: float

    @property
    def total_bytes(self) -> float:
        return self.weights_grads_bytes + self.optimizer_bytes + self.activation_bytes

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.budget_bytes


MICRO_TOKENS_QUANTILE = 0.99  # a micro-batch without padding is priced at this quantile of its real tokens
_DRAWS = 4000  # micro-batches drawn for that quantile (seeded: the same scenario gives the same answer)


def micro_batch_tokens(scenario: Scenario) -> float:
    """Tokens one training micro-batch holds at its peak: micro_batch_size x packing_tokens (the bins with
    packing, the padded cap without); with ``remove_padding``, the MICRO_TOKENS_QUANTILE quantile of the sum of
    micro_batch_size sequences' lengths drawn from the workload (each response phase; the largest; drift is not
    applied; assumed lengths at their range's low end, :func:`_checked_workload`), at most that cap."""
    tr = scenario.training
    cap = tr.micro_batch_size * packing_tokens(scenario)
    if tr.sequence_packing or not tr.remove_padding:
        return float(cap)
    return min(float(cap), _unpadded_quantile(_checked_workload(scenario.workload), tr.micro_batch_size))


@functools.lru_cache(maxsize=256)
def _checked_workload(w: Workload) -> Workload:
    """The lengths the memory check takes: assumed lengths (``workload.length_source: assumed``, a guess from the
    cap) at the low end of their plausible range, so that a layout is refused only where it would not fit at any
    length the prior allows; the answer still prices the assumed mean and shows the range (rlsim.run.length_range).
    Cached: a plan checks the memory of hundreds of candidates that share a workload (the mean is solved for)."""
    if w.length_source != "assumed":
        return w
    # here, not at the top: it loads numpy (start-up time)
    from rlsim.workload.lengths import with_clipped_mean

    low = w.length_range_tokens[0] if w.length_range_tokens else response_prior(w.max_response_tokens).low_tokens
    return dataclasses.replace(w, response_length=with_clipped_mean(w.response_length, w.max_response_tokens, low))


@functools.lru_cache(maxsize=256)
def _unpadded_quantile(w: Workload, micro: int) -> float:
    """The draw behind micro_batch_tokens, cached: a plan checks the memory of hundreds of candidates that share
    a workload."""
    # here, not at the top: it loads numpy (start-up time)
    import numpy as np

    from rlsim.workload.lengths import sample_lengths

    rng = np.random.default_rng(0)
    n = micro * _DRAWS
    prompts = sample_lengths(w.prompt_length, n, rng, 1, w.max_prompt_tokens)
    worst = 0.0
    for dist in [w.response_length, *(phase.length for phase in w.response_length_by_samples)]:
        responses = sample_lengths(dist, n, rng, 1, w.max_response_tokens)
        sums = (prompts + responses).reshape(_DRAWS, micro).sum(axis=1)
        worst = max(worst, float(np.quantile(sums, MICRO_TOKENS_QUANTILE)))
    return worst


def memory(scenario: Scenario, model: ModelSpec | None = None) -> TrainMemory:
    """Training memory per GPU for ``model`` (default: the policy) on the scenario's layout."""
    model = model or scenario.model
    tr, lay = scenario.training, layout_of(scenario)
    budget = headroom.budget_bytes(scenario)
    tokens_mb = micro_batch_tokens(scenario)
    h = model.hidden_size
    per_layer_full = SEQ_PARALLEL_ACT_BYTES_PER_TOKEN_HIDDEN * h
    logit_bytes = ACT_BYTES if tr.inplace_logprobs else LOGIT_BYTES
    logits = tokens_mb / lay.c / lay.t * model.vocab_size * logit_bytes
    if tr.backend == "megatron":
        dense = (model.num_params - model.expert_params) / (lay.t * lay.p)
        expert = model.expert_params / (lay.e * lay.et * lay.p)
        params = dense + expert
        # LoRA: the base frozen in bf16, the adapters' weights, gradients and optimizer state (rlsim.trainer.lora)
        t_dense, t_expert = lora.trained(model, tr, dense, expert, lay.t * lay.p, lay.e * lay.et * lay.p)
        adapters = (t_dense + t_expert) if tr.lora_rank else 0.0
        weights_grads = 2.0 * (params + adapters) + megatron_grad_bytes(tr) * (t_dense + t_expert)
        state = megatron_optimizer_bytes(tr)
        if tr.distributed_optimizer:
            opt = state * (t_dense / (lay.d * lay.c) + t_expert / lay.d_expert)
        else:
            opt = state * (t_dense + t_expert)
        opt *= 1.0 - offload.cpu_adam_fraction(scenario)  # the hybrid optimizer's host share leaves the GPU
        per_layer = 2.0 * h if tr.activation_recompute == "full" else per_layer_full
        tok = tokens_mb / (lay.c * lay.t)
        act = tok * per_layer * model.num_layers / lay.p * lay.p + logits  # p micro-batches of L/p layers
        if tr.activation_recompute == "full":
            act += tok * per_layer_full  # one layer recomputed at a time
        return TrainMemory(weights_grads, opt, act, budget)
    n = lay.n
    group = shard_group(scenario) if tr.zero_stage == 3 else n
    shard = model.num_params / group
    # parameters and gradients in the loaded dtype (param_dtype: fp32, or bf16 as verl's fsdp_config.model_dtype
    # bfloat16 loads them, verl@v0.7.0 fsdp_workers.py:324), sharded; under ZeRO-Offload (offload_optimizer alone)
    # the fp32 master lives on the host and the GPU keeps the bf16 parameters and gradients (DeepSpeed@v0.19.5
    # stage_1_and_2.py)
    pb = 4.0 if tr.param_dtype == "fp32" else 2.0
    weights_grads = 0.0 if tr.offload_params else (4.0 if tr.offload_optimizer else 2.0 * pb) * shard
    opt = 0.0 if (tr.offload_optimizer or tr.offload_params) else 2.0 * pb * shard  # Adam moments
    if tr.lora_rank:  # the frozen base in its loaded dtype, the adapters trained as above (rlsim.trainer.lora)
        adapters = sum(lora.adapter_params(model, tr)) / group
        base = 0.0 if tr.offload_params else (pb * shard if tr.zero_stage == 3 else 0.0)
        weights_grads = base + (0.0 if tr.offload_params else 2.0 * pb * adapters)
        opt = 0.0 if (tr.offload_optimizer or tr.offload_params) else 2.0 * pb * adapters
    layer_bytes = model.num_params / model.num_layers * ACT_BYTES
    # two gathered layers (the one computing, the one prefetched); without reshard_after_forward the forward keeps
    # every layer it gathered until the backward frees it: the whole bf16 parameters at the peak
    gathered = 2 * layer_bytes if tr.reshard_after_forward else ACT_BYTES * model.num_params
    if tr.zero_stage < 3:  # the bf16 parameters whole on every GPU (no gathered layers); ZeRO-1 the bf16 gradients
        grads = model.num_params if not tr.lora_rank else sum(lora.adapter_params(model, tr))
        weights_grads += ACT_BYTES * (model.num_params + (grads if tr.zero_stage == 1 else 0.0))
        gathered = 0.0
    per_layer = 2.0 * h if tr.activation_recompute == "full" else per_layer_full
    if not tr.sequence_packing:  # a Ulysses group of c GPUs splits the micro-batch's sequences (packed bins are
        tokens_mb /= lay.c  # per GPU already: verl packs c budgets per group)
    logits = tokens_mb * model.vocab_size * logit_bytes
    act = tokens_mb * per_layer * model.num_layers + tokens_mb * per_layer_full + logits + gathered
    return TrainMemory(weights_grads, opt, act, budget)


# ---------------------------------------------------------------------------------------------------- checks


def validate(scenario: Scenario) -> None:
    """Rules of the ``training`` section against the rest of the scenario; raises ScenarioError."""
    _check_padding(scenario)
    if scenario.training.backend == "fsdp":
        _check_fsdp_layout(scenario)
    else:
        _check_megatron_layout(scenario)
    _check_hardware(scenario)
    _check_global_batch(scenario)
    _check_offload(scenario)
    if scenario.training.lora_rank:
        lora.target_modules(scenario.training)  # names it knows
    check_memory(scenario)
    offload.check_host_memory(scenario)


def _check_padding(scenario: Scenario) -> None:
    """``remove_padding``, ``pad_to_longest``, ``pad_to_cap``, ``pad_micro_batches`` and ``sequence_packing``: at most
    one way to treat padding."""
    tr, at = scenario.training, "training"
    if tr.remove_padding and tr.pad_to_longest:  # (with sequence packing it changes nothing: bins hold no padding)
        raise ScenarioError(
            f"{at}.remove_padding",
            True,
            f"prices unpadded micro-batches, which {at}.pad_to_longest contradicts",
            f"remove one of {at}.remove_padding and {at}.pad_to_longest",
        )
    ways = [k for k in ("remove_padding", "pad_to_longest", "pad_to_cap", "pad_micro_batches") if getattr(tr, k)]
    if len(ways) > 1:
        raise ScenarioError(
            f"{at}.{ways[-1]}",
            True,
            f"treats padding one way, which {at}.{ways[0]} contradicts",
            f"remove one of {at}.{ways[0]} and {at}.{ways[-1]}",
        )
    if tr.pad_micro_batches and tr.sequence_packing:
        raise ScenarioError(
            f"{at}.pad_micro_batches",
            True,
            "pads unpacked micro-batches, but sequence packing leaves no padding",
            f"set {at}.sequence_packing: false, or remove {at}.pad_micro_batches",
        )
    if tr.pad_to_longest and tr.sequence_packing:
        raise ScenarioError(
            f"{at}.pad_to_longest",
            True,
            "pads every sequence to the batch's longest, but sequence packing leaves no padding",
            f"set {at}.sequence_packing: false, or remove {at}.pad_to_longest",
        )


def _check_offload(scenario: Scenario) -> None:
    """The offload fields agree: a host share only for Megatron's hybrid optimizer, and no swap of what
    offload_params already keeps on the host."""
    tr = scenario.training
    if tr.backend == "fsdp" and tr.offload_optimizer_fraction != 1.0:
        raise ScenarioError(
            "training.offload_optimizer_fraction",
            tr.offload_optimizer_fraction,
            "is the host share of Megatron-Core's hybrid optimizer; backend fsdp offloads all of it or none",
            "remove it, or set training.backend: megatron",
        )
    if tr.offload_params and (tr.swap_params or tr.swap_optimizer):
        raise ScenarioError(
            "training.swap_params" if tr.swap_params else "training.swap_optimizer",
            True,
            "swaps state that training.offload_params already keeps on the host (verl turns its swaps off under "
            "FSDP2's offload_policy)",
            "remove it, or set training.offload_params: false",
        )


def _check_fsdp_layout(scenario: Scenario) -> None:
    """Backend fsdp: no Megatron parallel sizes, and the optimizer is always sharded."""
    tr, at = scenario.training, "training"
    for key in (
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "virtual_pipeline_stages",
        "context_parallel_size",
        "expert_parallel_size",
        "expert_tensor_parallel_size",
    ):
        if getattr(tr, key) != 1:
            raise ScenarioError(
                f"{at}.{key}",
                getattr(tr, key),
                "is a Megatron layout; backend fsdp shards data-parallel only",
                f"set {at}.backend: megatron or remove {at}.{key}",
            )
    if not tr.distributed_optimizer:
        raise ScenarioError(
            f"{at}.distributed_optimizer", False, "has no meaning for backend fsdp (always sharded)", "remove it"
        )
    _check_fsdp_options(scenario)


def _check_fsdp_options(scenario: Scenario) -> None:
    """Backend fsdp: Ulysses groups divide the GPUs and the attention heads; ZeRO-1/2 keep parameters on the GPU."""
    tr, at = scenario.training, "training"
    sp, n = tr.ulysses_sequence_parallel_size, scenario.hardware.num_train_gpus
    if n % sp or scenario.model.num_attention_heads % sp:
        raise ScenarioError(
            f"{at}.ulysses_sequence_parallel_size",
            sp,
            f"must divide the training GPUs ({n}) and the attention heads ({scenario.model.num_attention_heads})",
            "choose a divisor of both",
        )
    f = tr.fsdp_shard_size
    if f is not None and (n % f or tr.zero_stage < 3):
        raise ScenarioError(
            f"{at}.fsdp_shard_size",
            f,
            f"must divide the training GPUs ({n}) and needs {at}.zero_stage 3 (hybrid sharding of FSDP)",
            "choose a divisor of the training GPUs, or remove it",
        )
    if tr.zero_stage < 3 and (tr.offload_params or sp > 1):
        what = "offload_params" if tr.offload_params else "ulysses_sequence_parallel_size"
        raise ScenarioError(
            f"{at}.zero_stage",
            tr.zero_stage,
            f"keeps the parameters whole on every GPU, which {at}.{what} contradicts (ZeRO-3 / FSDP only)",
            f"set {at}.zero_stage: 3, or remove {at}.{what}",
        )


def _check_fsdp_only(scenario: Scenario) -> None:
    """Fields that only the fsdp backend reads."""
    tr, at = scenario.training, "training"
    for key, default in (
        ("ulysses_sequence_parallel_size", 1),
        ("zero_stage", 3),
        ("pad_to_cap", False),
        ("pad_micro_batches", False),
        ("reshard_after_forward", True),
        ("fsdp_shard_size", None),
        ("param_dtype", "fp32"),
    ):
        if getattr(tr, key) != default:
            raise ScenarioError(
                f"{at}.{key}", getattr(tr, key), "is an fsdp option", f"set {at}.backend: fsdp or remove it"
            )


def _check_megatron_layout(scenario: Scenario) -> None:
    """Backend megatron: the parallel sizes divide the training GPUs, the experts, the heads and the layers."""
    tr, m = scenario.training, scenario.model
    n = scenario.hardware.num_train_gpus
    at = "training"
    if tr.offload_params:
        raise ScenarioError(f"{at}.offload_params", True, "is an FSDP option", f"set {at}.backend: fsdp or remove it")
    _check_fsdp_only(scenario)
    t, p, c = tr.tensor_parallel_size, tr.pipeline_parallel_size, tr.context_parallel_size
    if n % (t * p * c):
        raise ScenarioError(
            f"{at}.tensor_parallel_size",
            t,
            f"x pipeline_parallel_size ({p}) x context_parallel_size ({c}) = {t * p * c} must divide the "
            f"{n} training GPUs",
            "choose sizes whose product divides the training GPUs",
        )
    e, et = tr.expert_parallel_size, tr.expert_tensor_parallel_size
    if e * et > 1 and not m.is_moe:
        key, value = ("expert_parallel_size", e) if e > 1 else ("expert_tensor_parallel_size", et)
        raise ScenarioError(f"{at}.{key}", value, f"needs a MoE model ({m.name} is dense)", "set it to 1")
    if m.is_moe and m.num_experts % e:
        raise ScenarioError(
            f"{at}.expert_parallel_size", e, f"must divide num_experts ({m.num_experts})", "choose a divisor"
        )
    if m.is_moe and n % (e * et * p):
        raise ScenarioError(
            f"{at}.expert_parallel_size",
            e,
            f"x expert_tensor_parallel_size ({et}) x pipeline_parallel_size ({p}) = {e * et * p} must divide "
            f"the {n} training GPUs",
            "choose sizes whose product divides the training GPUs",
        )
    if m.num_attention_heads % t:
        raise ScenarioError(
            f"{at}.tensor_parallel_size",
            t,
            f"must divide num_attention_heads ({m.num_attention_heads})",
            "choose a divisor",
        )
    if p > m.num_layers:
        raise ScenarioError(f"{at}.pipeline_parallel_size", p, f"exceeds the model's {m.num_layers} layers", "lower it")
    if tr.virtual_pipeline_stages > 1 and p == 1:
        raise ScenarioError(
            f"{at}.virtual_pipeline_stages",
            tr.virtual_pipeline_stages,
            "needs pipeline_parallel_size > 1",
            "set it to 1 or use pipeline parallelism",
        )


def _check_hardware(scenario: Scenario) -> None:
    """FP8 training needs FP8 tensor cores; offloading the trainer needs GPUs shared with the engines."""
    at = "training"
    if scenario.training.precision == "fp8" and scenario.hardware.gpu.fp8_flops_per_s is None:
        raise ScenarioError(
            f"{at}.precision",
            "fp8",
            f"needs FP8 tensor cores; {scenario.hardware.gpu.name} has none (no fp8_flops_per_s)",
            f"set {at}.precision: bf16 or use an FP8-capable GPU",
        )
    if scenario.weight_sync.offload_trainer and scenario.hardware.placement != "colocated":
        raise ScenarioError(
            "weight_sync.offload_trainer",
            True,
            "only applies when trainer and engines share GPUs (colocated)",
            "remove it or set hardware.placement: colocated",
        )
    ws = scenario.weight_sync
    if ws.host_staged and (ws.transfer != "bucketed" or scenario.hardware.placement != "separate"):
        raise ScenarioError(
            "weight_sync.host_staged",
            True,
            "is a checkpoint engine's path: buckets (transfer bucketed) from the trainer's pool to the engines' pool",
            "remove it, or set weight_sync.transfer: bucketed and hardware.placement: separate",
        )


def _check_global_batch(scenario: Scenario) -> None:
    """``global_batch_size`` divides the responses per step and agrees with algorithm.mini_batches_per_step."""
    at = "training"
    gbs, batch = scenario.training.global_batch_size, scenario.workload.responses_per_step
    if gbs is None:
        return
    if batch % gbs:
        raise ScenarioError(
            f"{at}.global_batch_size",
            gbs,
            f"must divide the responses per step ({batch} = P x G)",
            "choose a divisor of P x G (several optimizer steps per RL step) or P x G itself",
        )
    if scenario.algorithm.mini_batches_per_step not in (1, batch // gbs):
        raise ScenarioError(
            "algorithm.mini_batches_per_step",
            scenario.algorithm.mini_batches_per_step,
            f"contradicts training.global_batch_size ({gbs}: {batch // gbs} optimizer steps per step)",
            "give one of the two",
        )


def resident_memory(scenario: Scenario) -> TrainMemory:
    """What the training GPUs hold at the peak of a step: the policy's training state and activations, a PPO
    critic's training state, and a reference model's bf16 weights unless it waits on the host."""
    mem = memory(scenario)
    extra = 0.0
    if (
        scenario.algorithm.name == "ppo" and not scenario.critic_pool_gpus
    ):  # a critic on a pool of its own holds its state there
        critic = memory(scenario, scenario.critic)
        extra += critic.weights_grads_bytes + critic.optimizer_bytes
    if (
        scenario.algorithm.kl_reference
        and not scenario.training.reference_on_host
        and not (scenario.training.lora_rank and scenario.training.lora_reference_in_base)
        and not scenario.algorithm.reference_gpus
    ):
        extra += reference_weight_bytes(scenario, scenario.model)
    return TrainMemory(mem.weights_grads_bytes + extra, mem.optimizer_bytes, mem.activation_bytes, mem.budget_bytes)


def check_memory(scenario: Scenario) -> None:
    """Refuse a layout whose training state does not fit, naming the field to change and how (and a PPO critic's
    on its own GPUs, algorithm.critic_gpus)."""
    if scenario.critic_pool_gpus:
        view = scenario.pool_view(scenario.critic_pool_gpus).critic_view()
        crit = memory(view, scenario.critic)
        if not crit.fits:
            raise ScenarioError(
                "algorithm.critic_gpus",
                scenario.algorithm.critic_gpus,
                f"holds the critic ({scenario.critic.name}) at {crit.total_bytes / 1e9:.1f} GB per GPU (weights and "
                f"gradients {crit.weights_grads_bytes / 1e9:.1f}, optimizer {crit.optimizer_bytes / 1e9:.1f}, "
                f"activations {crit.activation_bytes / 1e9:.1f}), over the {crit.budget_bytes / 1e9:.1f} GB a "
                f"{scenario.hardware.gpu.name} leaves it ({headroom.headroom(view).describe()})",
                "raise it, or set training.offload_optimizer: true",
            )
    if scenario.algorithm.kl_reference and scenario.algorithm.reference_gpus:
        view = scenario.pool_view(scenario.algorithm.reference_gpus)
        act = (
            memory(view).activation_bytes
            / scenario.training.micro_batch_size
            * (scenario.training.logprob_micro_batch_size or scenario.training.micro_batch_size)
        )
        need = reference_weight_bytes(view, scenario.model) + act
        if need > (budget := headroom.budget_bytes(view)):
            raise ScenarioError(
                "algorithm.reference_gpus",
                scenario.algorithm.reference_gpus,
                f"holds the reference model ({scenario.model.name}) at {need / 1e9:.1f} GB per GPU (weights and one "
                f"forward micro-batch), over the {budget / 1e9:.1f} GB a {scenario.hardware.gpu.name} leaves it "
                f"({headroom.headroom(view).describe()})",
                "raise it",
            )
    tr = scenario.training
    model, mem = scenario.model, resident_memory(scenario)
    if mem.fits:
        return
    gb = 1e9
    what = (
        f"needs {mem.total_bytes / gb:.1f} GB per training GPU for {model.name} (weights and gradients "
        f"{'with the critic and reference ' if mem.weights_grads_bytes > memory(scenario).weights_grads_bytes else ''}"
        f"{mem.weights_grads_bytes / gb:.1f}, optimizer {mem.optimizer_bytes / gb:.1f}, activations "
        f"{mem.activation_bytes / gb:.1f}), over the {mem.budget_bytes / gb:.1f} GB a {scenario.hardware.gpu.name} "
        f"leaves the trainer ({headroom.headroom(scenario).describe()})"
    )
    if mem.activation_bytes > mem.weights_grads_bytes + mem.optimizer_bytes:
        if tr.activation_recompute != "full":
            raise ScenarioError(
                "training.activation_recompute",
                tr.activation_recompute,
                what,
                "set training.activation_recompute: full, or lower training.micro_batch_size",
            )
        fix = "lower it" if tr.backend == "fsdp" else "lower it, or raise training.context_parallel_size"
        raise ScenarioError("training.micro_batch_size", tr.micro_batch_size, what, fix)
    if tr.backend == "fsdp":
        gpus = "hardware.num_gpus" if scenario.hardware.placement == "colocated" else "hardware.train_gpus"
        if not tr.offload_optimizer:
            raise ScenarioError(
                "training.offload_optimizer",
                False,
                what,
                f"set training.offload_optimizer: true (CPU Adam), or raise {gpus}",
            )
        raise ScenarioError(
            gpus, scenario.hardware.num_train_gpus, what, f"raise {gpus} or set training.offload_params: true"
        )
    if not tr.distributed_optimizer:
        raise ScenarioError("training.distributed_optimizer", False, what, "set training.distributed_optimizer: true")
    key = (
        "expert_parallel_size"
        if model.is_moe and model.expert_params > 0.5 * model.num_params
        else ("pipeline_parallel_size")
    )
    offload = "" if tr.offload_optimizer else ", or set training.offload_optimizer: true"
    raise ScenarioError(
        f"training.{key}", getattr(tr, key), what, f"raise training.{key} or training.tensor_parallel_size{offload}"
    )
