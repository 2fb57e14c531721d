"""Scenario: everything one simulated RL run needs, as frozen dataclasses loaded from YAML.

Validation happens here and only here: unknown keys, types, ranges and cross-field consistency (the model must
fit the GPUs, one sequence must fit the KV cache of a replica). Every error is a :class:`ScenarioError` naming
the field path, the value, the rule and the fix. Units live in field names (``_tokens``, ``_s``, ``_bytes``).

Sections: ``model``, ``hardware``, ``engine``, ``workload``, ``algorithm``, ``training`` (rlsim.training),
``weight_sync`` (rlsim.sync), ``schedule``, ``learning``, ``costs``, ``run``; plus free-text ``name``,
``description`` and ``assumptions`` (a list of what the scenario assumes that is not measured or published).
``model`` and ``hardware.gpu`` name a catalog entry
(``rlsim/catalog/*.yaml``) or spell the numbers out.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union

import yaml

from rlsim import catalog, training_memory
from rlsim import training as training_model
from rlsim.errors import ScenarioError
from rlsim.files import load_yaml, read_text
from rlsim.scheduler import SchedulerRules
from rlsim.sync import WeightSync
from rlsim.training import Training

# ---------------------------------------------------------------------------------------------------- specs


MAX_TOKENS = 100_000_000  # a bound on any length, so that numbers stay far inside int64 arithmetic


# an accelerator's peak rates (FLOP/s, bytes/s) and memory: from a megabyte (per second) to an exa-scale value;
# outside that a typo, and the step times underflow or overflow (1e-300 FLOP/s gave NaN step times)
MIN_RATE, MAX_RATE = 1e6, 1e21
MAX_OVERHEAD_S = 1e6  # a cost coefficient in seconds above 11.6 days is a typo, and near 1e308 times overflow


def _rule(**kw: Any) -> dict[str, Any]:
    """Field metadata: ge / gt / le / lt bounds, and doc."""
    return kw


@dataclass(frozen=True)
class ModelSpec:
    """Architecture and size of a causal LM (catalog entry or spelled out)."""

    name: str
    num_layers: int = field(metadata=_rule(ge=1, le=10_000))
    hidden_size: int = field(metadata=_rule(ge=1, le=1_000_000))
    num_attention_heads: int = field(metadata=_rule(ge=1, le=100_000))
    num_kv_heads: int = field(metadata=_rule(ge=1, le=100_000))
    head_dim: int = field(metadata=_rule(ge=1, le=100_000))
    vocab_size: int = field(metadata=_rule(ge=1, le=100_000_000))
    num_params: float = field(metadata=_rule(gt=0))
    num_active_params: float = field(metadata=_rule(gt=0))
    intermediate_size: int = field(default=0, metadata=_rule(ge=0))
    num_experts: int = field(default=0, metadata=_rule(ge=0))
    num_experts_per_token: int = field(default=0, metadata=_rule(ge=0))
    moe_intermediate_size: int = field(default=0, metadata=_rule(ge=0))
    # MoE layers: how many layers keep a dense MLP, and the always-active shared experts of each MoE layer
    num_dense_layers: int = field(default=0, metadata=_rule(ge=0))
    num_shared_experts: int = field(default=0, metadata=_rule(ge=0))
    # multi-head latent attention (DeepSeek-V2/V3): the KV cache holds one latent of kv_lora_rank plus the
    # decoupled RoPE key (qk_rope_head_dim) per token per layer, shared by all heads
    kv_lora_rank: int = field(default=0, metadata=_rule(ge=0))
    qk_rope_head_dim: int = field(default=0, metadata=_rule(ge=0))
    num_mtp_layers: int = field(default=0, metadata=_rule(ge=0))  # multi-token-prediction modules (draft heads)
    # sliding-window attention: num_sliding_layers of the layers attend to the last sliding_window tokens only
    # (Gemma 2 and gpt-oss: every other layer); the engine keeps only the window's KV for them
    sliding_window: int = field(default=0, metadata=_rule(ge=0, le=MAX_TOKENS))
    num_sliding_layers: int = field(default=0, metadata=_rule(ge=0))
    dtype: str = "bfloat16"
    tie_word_embeddings: bool = False
    hf_id: str = ""

    @property
    def dtype_bytes(self) -> int:
        return _DTYPE_BYTES[self.dtype]

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def uses_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V for every layer: 2 * layers * kv_heads * head_dim * dtype bytes (REFERENCE section 6); with
        MLA one latent per layer: layers * (kv_lora_rank + qk_rope_head_dim) * dtype bytes (DeepSeek-V2 paper,
        arXiv 2405.04434, section 2.1)."""
        if self.uses_mla:
            return self.num_layers * (self.kv_lora_rank + self.qk_rope_head_dim) * self.dtype_bytes
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * self.dtype_bytes

    @property
    def sliding_layer_fraction(self) -> float:
        """Share of the layers with sliding-window attention (0 when the model has no window)."""
        return self.num_sliding_layers / self.num_layers if self.sliding_window > 0 else 0.0

    @property
    def weight_bytes(self) -> float:
        return self.num_params * self.dtype_bytes

    @property
    def expert_params(self) -> float:
        """Parameters in routed experts (gate, up, down projections of every expert of every layer)."""
        return float(self.num_moe_layers * self.num_experts * 3 * self.hidden_size * self.moe_intermediate_size)

    @property
    def num_moe_layers(self) -> int:
        return self.num_layers - self.num_dense_layers if self.is_moe else 0


@dataclass(frozen=True)
class GPUSpec:
    """Peak numbers of one accelerator (dense bf16, SI units)."""

    name: str
    bf16_flops_per_s: float = field(metadata=_rule(ge=MIN_RATE, le=MAX_RATE))
    hbm_bandwidth_bytes_per_s: float = field(metadata=_rule(ge=MIN_RATE, le=MAX_RATE))
    memory_bytes: float = field(metadata=_rule(ge=1e6, le=1e18))
    link_bandwidth_bytes_per_s: float = field(metadata=_rule(ge=MIN_RATE, le=MAX_RATE))
    host_link_bandwidth_bytes_per_s: float = field(default=64e9, metadata=_rule(ge=MIN_RATE, le=MAX_RATE))
    # memory the driver reports (what vLLM's gpu_memory_utilization multiplies); None: memory_bytes
    device_memory_bytes: float | None = field(default=None, metadata=_rule(ge=1e6, le=1e18))
    # dense FP8 tensor peak; None: no FP8 tensor cores (FP8 training is refused there)
    fp8_flops_per_s: float | None = field(default=None, metadata=_rule(ge=MIN_RATE, le=MAX_RATE))
    # GPUs in one NVLink/NVSwitch domain of the standard system (8 for DGX/HGX, 72 for GB200 NVL72)
    nvlink_domain_size: int = field(default=8, metadata=_rule(ge=1, le=100_000))
    # scale-out network per GPU, one direction (DGX H100: one 400 Gb/s NIC per GPU = 50 GB/s)
    nic_bandwidth_bytes_per_s: float = field(default=50e9, metadata=_rule(ge=MIN_RATE, le=MAX_RATE))
    vendor: str = ""
    # cpu: vLLM's CPU platform defaults apply (128-token KV blocks, max_num_batched_tokens 4096 per rank)
    platform: Literal["gpu", "cpu"] = "gpu"


_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float8": 1}

# ---------------------------------------------------------------------------------------------------- sections


@dataclass(frozen=True)
class Hardware:
    gpu: GPUSpec
    num_gpus: int = field(default=8, metadata=_rule(ge=1, le=1_000_000))
    placement: Literal["colocated", "separate"] = "colocated"
    rollout_gpus: int | None = field(default=None, metadata=_rule(ge=1))  # separate placement only
    train_gpus: int | None = field(default=None, metadata=_rule(ge=1))  # separate placement only
    # GPUs in one NVLink domain and the scale-out bandwidth per GPU (one direction); None: the GPU catalog's
    # nvlink_domain_size / nic_bandwidth_bytes_per_s (the vendor's standard system)
    gpus_per_node: int | None = field(default=None, metadata=_rule(ge=1))
    internode_bandwidth_bytes_per_s: float | None = field(default=None, metadata=_rule(gt=0))

    @property
    def engine_memory_bytes(self) -> float:
        """Memory of one GPU as the engine's memory profiler sees it."""
        return self.gpu.device_memory_bytes or self.gpu.memory_bytes

    @property
    def nvlink_domain(self) -> int:
        return self.gpus_per_node or self.gpu.nvlink_domain_size

    @property
    def nic_bandwidth_bytes_per_s(self) -> float:
        return self.internode_bandwidth_bytes_per_s or self.gpu.nic_bandwidth_bytes_per_s

    @property
    def num_rollout_gpus(self) -> int:
        return self.num_gpus if self.placement == "colocated" else int(self.rollout_gpus or 0)

    @property
    def num_train_gpus(self) -> int:
        return self.num_gpus if self.placement == "colocated" else int(self.train_gpus or 0)


@dataclass(frozen=True)
class Engine:
    """The rollout inference engine (vLLM semantics)."""

    tensor_parallel_size: int = field(default=1, metadata=_rule(ge=1))
    replicas: int | None = field(default=None, metadata=_rule(ge=1))  # default: rollout GPUs / TP
    max_num_seqs: int = field(default=256, metadata=_rule(ge=1, le=65536))
    # Fraction of each GPU's memory the engine may use for weights, activations and KV cache (vLLM's
    # gpu_memory_utilization); the KV cache gets what is left after weights and activations.
    gpu_memory_utilization: float = field(default=0.9, metadata=_rule(gt=0, le=1))
    activation_memory_fraction: float = field(default=0.05, metadata=_rule(ge=0, lt=1))
    # fp8: weights stored and read in FP8 (one byte) and GEMMs at the FP8 peak; the KV cache stays in the model
    # dtype
    precision: Literal["bf16", "fp8"] = "bf16"
    # the engine's CPU work per iteration (costs.decode_iteration_overhead_s + decode_per_seq_overhead_s x batch:
    # scheduling, sampling, detokenizing) runs between GPU steps (false: vLLM <= 0.5, one synchronous loop) or
    # overlaps them, costing only what exceeds the GPU step (true: vLLM >= 0.6 multi-step scheduling and
    # asynchronous output processing, and the V1 engine)
    cpu_overlap: bool = False
    # KV cache element type: auto (the model dtype) or fp8 (one byte per element; vLLM --kv-cache-dtype fp8)
    kv_cache_dtype: Literal["auto", "fp8"] = "auto"
    # a named engine behaviour (rlsim/catalog/engines.yaml: vllm-0.5, vllm-v1) whose CPU-work coefficients and
    # overlap replace costs.decode_iteration_overhead_s / decode_per_seq_overhead_s / tp_rank_overhead_s and
    # engine.cpu_overlap; None: those fields as given
    behaviour: str | None = None
    # How the engine schedules and pages its KV cache (rlsim/engine.py). None: the named behaviour's value, else
    # vLLM V1's default. block_size: tokens per KV block (vLLM --block-size: 16 on GPUs, 128 on CPU).
    block_size: int | None = field(default=None, metadata=_rule(ge=1, le=4096))
    # chunked prefill (V1): prompts split under max_num_batched_tokens and prefilled in the same forward pass as
    # the decodes; false: whole-prompt admission rounds before the decode iteration (vLLM 0.5's default)
    chunked_prefill: bool | None = None
    # automatic prefix caching: the G responses of a prompt share its cached prompt blocks (prefilled once)
    prefix_caching: bool | None = None
    # tokens per iteration (chunked) or per admission round's prefill; None: vLLM's default (V1 LLM class: 16384
    # on GPUs with >= 70 GB other than the A100, else 8192, on CPUs 4096 x TP, never below max_num_seqs; rounds:
    # max(longest prompt + response, 2048), as vLLM 0.5 with max_model_len). block_size None: 16, 128 on CPUs
    max_num_batched_tokens: int | None = field(default=None, metadata=_rule(ge=1, le=100_000_000))
    # speculative decoding with the model's multi-token-prediction modules (vLLM speculative_config method "mtp"):
    # draft tokens per iteration, and the chance that a draft token is accepted when the ones before it were
    # (DeepSeek-V3 report: 85-90% for its second token)
    speculative_tokens: int = field(default=0, metadata=_rule(ge=0, le=16))
    speculative_acceptance_rate: float = field(default=0.85, metadata=_rule(ge=0, lt=1))
    # static batching (transformers' generate, as rlsim-real's hf engine runs it): a step's requests form one
    # batch that decodes until its longest response ends, and the trainer's batch is padded to it, so every
    # response of the step costs as many tokens as the longest one
    static_batching: bool = False
    # MoE engines: attention data-parallel ranks per engine (vLLM --data-parallel-size with
    # --enable-expert-parallel), each with its own batch, scheduler and KV cache; the experts are sharded over all
    # data_parallel_size x tensor_parallel_size GPUs and tokens reach them by all-to-all
    data_parallel_size: int = field(default=1, metadata=_rule(ge=1, le=4096))
    expert_parallel: bool = False

    @property
    def weight_bytes_per_param(self) -> int | None:
        return 1 if self.precision == "fp8" else None


@dataclass(frozen=True)
class LengthDist:
    """Token-length distribution: fixed, uniform, lognormal or empirical histogram."""

    dist: Literal["fixed", "uniform", "lognormal", "empirical"] = "fixed"
    tokens: int | None = field(default=None, metadata=_rule(ge=0, le=MAX_TOKENS))  # fixed
    low: int | None = field(default=None, metadata=_rule(ge=0, le=MAX_TOKENS))  # uniform, inclusive
    high: int | None = field(default=None, metadata=_rule(ge=0, le=MAX_TOKENS))  # uniform, inclusive
    mean_tokens: float | None = field(default=None, metadata=_rule(gt=0))  # lognormal, before clipping
    sigma: float | None = field(default=None, metadata=_rule(gt=0, le=5))  # lognormal, std of log
    bin_edges: tuple[float, ...] | None = None  # empirical: n+1 increasing edges
    weights: tuple[float, ...] | None = None  # empirical: n non-negative weights


@dataclass(frozen=True)
class Drift:
    """Mean response length moves linearly from the distribution's mean to ``final_mean_tokens`` over the first
    ``over_samples`` cumulative samples (sample-indexed, so batch sizes see the same drift at equal samples)."""

    final_mean_tokens: float = field(metadata=_rule(gt=0))
    over_samples: float = field(metadata=_rule(gt=0))


@dataclass(frozen=True)
class LengthPhase:
    """Response lengths while a run's cumulative samples are below ``until_samples`` (None: to the end). A policy's
    responses change as it learns (sample-indexed, so batch sizes see the same lengths at equal samples)."""

    length: LengthDist
    until_samples: float | None = field(default=None, metadata=_rule(gt=0))


@dataclass(frozen=True)
class Workload:
    prompts_per_step: int = field(default=128, metadata=_rule(ge=1, le=10_000_000))  # P
    group_size: int = field(default=8, metadata=_rule(ge=1, le=100_000))  # G
    prompt_length: LengthDist = LengthDist(dist="fixed", tokens=512)
    response_length: LengthDist = LengthDist(dist="fixed", tokens=1024)
    max_prompt_tokens: int = field(default=4096, metadata=_rule(ge=1, le=MAX_TOKENS))
    max_response_tokens: int = field(default=16384, metadata=_rule(ge=1, le=MAX_TOKENS))
    response_length_drift: Drift | None = None
    # response lengths by training progress: the first phase whose until_samples exceeds the step's cumulative
    # samples, the last one after that (its until_samples None); empty: response_length throughout
    response_length_by_samples: tuple[LengthPhase, ...] = ()

    @property
    def responses_per_step(self) -> int:
        """B = P x G: samples per step."""
        return self.prompts_per_step * self.group_size


@dataclass(frozen=True)
class Algorithm:
    name: Literal["grpo", "ppo"] = "grpo"
    mini_batches_per_step: int = field(default=1, metadata=_rule(ge=1, le=1_000_000))
    epochs_per_step: int = field(default=1, metadata=_rule(ge=1, le=1_000))
    kl_reference: bool = False
    # verl recomputes the behaviour policy's log-probs with the trainer every step; with one update per step
    # they equal the current policy's and a framework may skip the pass.
    recompute_old_logprob: bool = True
    critic_model: ModelSpec | None = None  # PPO critic; default: same architecture as the policy

    @property
    def optimizer_steps_per_step(self) -> int:
        return self.mini_batches_per_step * self.epochs_per_step


@dataclass(frozen=True)
class Schedule:
    mode: Literal["sync-colocated", "sync-separate", "async"] = "sync-colocated"
    max_staleness: int = field(default=0, metadata=_rule(ge=0, le=64))  # async: k >= 1
    # async only. streaming: the engines keep generating across step boundaries (up to k batches ahead of the
    # trainer), so a batch does not wait for its own stragglers with the engines half idle; in-flight weight
    # updates: new weights are loaded between engine iterations instead of after the engines drain
    streaming: bool = True
    in_flight_weight_updates: bool = True

    @property
    def staleness(self) -> int:
        return self.max_staleness if self.mode == "async" else 0


@dataclass(frozen=True)
class MetricCurve:
    """R(S) = initial + (asymptote - initial) / (1 + (mid_samples / S)^exponent), S = cumulative samples."""

    initial: float = field(metadata=_rule(ge=-1e9, le=1e9))
    asymptote: float = field(metadata=_rule(ge=-1e9, le=1e9))
    mid_samples: float = field(metadata=_rule(gt=0))
    exponent: float = field(default=1.0, metadata=_rule(gt=0, le=100))


@dataclass(frozen=True)
class BatchMultiplier:
    """How samples-to-target depends on the batch B = P x G (see rlsim.learning)."""

    form: Literal["invariant", "critical_batch", "table"] = "invariant"
    # invariant: m = 1 in [low, high] (responses per step, so at least 1); None: open
    batch_low: float | None = field(default=None, metadata=_rule(ge=1))
    batch_high: float | None = field(default=None, metadata=_rule(ge=1))
    penalty_per_doubling: float = field(default=1.5, metadata=_rule(ge=1, le=1000))  # above batch_high
    penalty_per_doubling_below: float = field(default=1.0, metadata=_rule(ge=1, le=1000))  # below batch_low
    critical_batch: float | None = field(default=None, metadata=_rule(gt=0))  # critical_batch form
    # critical_batch form: E ~ (1 + B / critical_batch) ** critical_power; 1: LR tuned per batch (McCandlish et
    # al. 2018); 0.5: Adam under the sqrt LR rule (rlsim.learning derives it)
    critical_power: float = field(default=1.0, metadata=_rule(gt=0, le=2))
    batches: tuple[float, ...] | None = None  # table form: increasing batches (responses per step)
    samples_to_target: tuple[float, ...] | None = None  # table form: measured N* at each batch
    allow_extrapolation: bool = False  # table form


@dataclass(frozen=True)
class Learning:
    """Learning-rate rule and the sample-indexed learning model (rlsim.learning)."""

    lr0: float = field(default=1e-6, metadata=_rule(gt=0))
    reference_batch: int = field(default=1024, metadata=_rule(ge=1))  # responses per step at which lr0 holds
    lr_rule: Literal["sqrt", "linear", "none"] = "sqrt"
    # the rule that keeps the trajectory in samples (sqrt for Adam); other rules pay untuned_lr_penalty
    invariant_rule: Literal["sqrt", "linear", "none"] = "sqrt"
    # samples multiplier for doubling the batch at a fixed LR: the seed paper's fixed-LR control (P 128 -> 256)
    untuned_lr_penalty: float = field(default=1.67, metadata=_rule(ge=1, le=1000))
    metric: MetricCurve | None = None
    target: float | None = field(default=None, metadata=_rule(ge=-1e9, le=1e9))
    batch_multiplier: BatchMultiplier = BatchMultiplier()
    staleness_penalty_per_step: float = field(default=0.0, metadata=_rule(ge=0, le=10))
    samples_spread: float = field(default=0.0, metadata=_rule(ge=0, le=2))  # std of log N* across seeds
    # share of seeds that never reach the target at any budget (a GRPO run whose groups all score alike stops
    # learning); the rest reach it at a lognormal N* (rlsim.learning.reach_within)
    stall_probability: float = field(default=0.0, metadata=_rule(ge=0, lt=1))


@dataclass(frozen=True)
class Costs:
    """Roofline efficiencies and fixed overheads (REFERENCE sections 6-7). A calibrated profile replaces them.

    Defaults are assumptions, typical of vLLM and FSDP on H100-class GPUs; each is a fraction of the catalog
    peak (efficiency) or seconds (overhead).
    """

    decode_memory_efficiency: float = field(default=0.7, metadata=_rule(gt=0, le=1))
    decode_compute_efficiency: float = field(default=0.5, metadata=_rule(gt=0, le=1))
    prefill_compute_efficiency: float = field(default=0.6, metadata=_rule(gt=0, le=1))
    train_compute_efficiency: float = field(default=0.4, metadata=_rule(gt=0, le=1))
    forward_compute_efficiency: float = field(default=0.5, metadata=_rule(gt=0, le=1))
    link_efficiency: float = field(default=0.7, metadata=_rule(gt=0, le=1))
    decode_iteration_overhead_s: float = field(default=0.004, metadata=_rule(ge=0, le=MAX_OVERHEAD_S))
    decode_per_seq_overhead_s: float = field(default=2e-6, metadata=_rule(ge=0, le=MAX_OVERHEAD_S))
    prefill_overhead_s: float = field(default=0.002, metadata=_rule(ge=0, le=MAX_OVERHEAD_S))
    # engine CPU work per iteration per tensor-parallel rank beyond the first (the driver sends each step's
    # inputs to every worker)
    tp_rank_overhead_s: float = field(default=0.0, metadata=_rule(ge=0, le=MAX_OVERHEAD_S))
    # one collective inside an NVLink domain
    collective_latency_s: float = field(default=2e-5, metadata=_rule(ge=0, le=MAX_OVERHEAD_S))
    # one collective whose group crosses NVLink domains (small messages: network round trips, NCCL protocol)
    internode_latency_s: float = field(default=1e-4, metadata=_rule(ge=0, le=MAX_OVERHEAD_S))
    train_step_overhead_s: float = field(default=0.5, metadata=_rule(ge=0, le=MAX_OVERHEAD_S))  # per optimizer step
    forward_overhead_s: float = field(default=0.2, metadata=_rule(ge=0, le=MAX_OVERHEAD_S))  # per log-prob/values pass
    weight_sync_latency_s: float = field(default=1.0, metadata=_rule(ge=0, le=MAX_OVERHEAD_S))
    sleep_wake_overhead_s: float = field(default=2.0, metadata=_rule(ge=0, le=MAX_OVERHEAD_S))  # colocated only
    # per step: dispatch and gather
    rollout_overhead_s: float = field(default=0.5, metadata=_rule(ge=0, le=MAX_OVERHEAD_S))
    # per response per step: host work outside the engine (detokenizing, batch assembly, logging)
    rollout_s_per_sample: float = field(default=0.0, metadata=_rule(ge=0, le=MAX_OVERHEAD_S))
    reward_overhead_s: float = field(default=0.1, metadata=_rule(ge=0, le=MAX_OVERHEAD_S))
    reward_s_per_sample: float = field(default=1e-4, metadata=_rule(ge=0, le=MAX_OVERHEAD_S))
    # training at scale (rlsim.training): GEMM efficiency against the FP8 peak, the fraction of the dense
    # efficiency that routed-expert GEMMs reach, and the host's Adam rate when the optimizer is offloaded
    fp8_train_compute_efficiency: float = field(default=0.3, metadata=_rule(gt=0, le=1))
    moe_compute_efficiency_factor: float = field(default=0.85, metadata=_rule(gt=0, le=1))
    cpu_adam_params_per_s: float = field(default=1e9, metadata=_rule(gt=0))
    # fraction of the host link's peak that copies between GPU and host memory reach (pinned buffers come close
    # to it; pageable memory, as plain tensor.to("cpu") uses, reaches a fraction)
    host_link_efficiency: float = field(default=1.0, metadata=_rule(gt=0, le=1))


@dataclass(frozen=True)
class Run:
    steps: int = field(default=20, metadata=_rule(ge=1, le=1_000_000))
    seed: int = field(default=0, metadata=_rule(ge=0, le=2**63 - 1))
    # simulate until the predicted metric reaches learning.target (at most max_steps) instead of `steps`
    until_target: bool = False
    max_steps: int = field(default=100_000, metadata=_rule(ge=1, le=1_000_000))
    band_seeds: int = field(default=3, metadata=_rule(ge=1, le=100))  # simulation seeds for the band


@dataclass(frozen=True)
class Sweep:
    """A default grid for ``rlsim sweep``: dotted scenario keys -> values."""

    grid: dict[str, tuple[Any, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    model: ModelSpec
    hardware: Hardware
    engine: Engine = Engine()
    workload: Workload = Workload()
    algorithm: Algorithm = Algorithm()
    training: Training = Training()
    weight_sync: WeightSync = WeightSync()
    schedule: Schedule = Schedule()
    learning: Learning = Learning()
    costs: Costs = Costs()
    run: Run = Run()
    sweep: Sweep = Sweep()
    name: str = "scenario"
    description: str = ""
    assumptions: tuple[str, ...] = ()

    # derived ---------------------------------------------------------------------------------------------
    @property
    def num_replicas(self) -> int:
        if self.engine.replicas is not None:
            return self.engine.replicas
        return self.hardware.num_rollout_gpus // self.engine.tensor_parallel_size

    @property
    def critic(self) -> ModelSpec:
        return self.algorithm.critic_model or self.model

    @property
    def engine_weight_bytes(self) -> float:
        """Bytes of the policy's weights in the engine (FP8 engines store one byte per parameter)."""
        per_param = self.engine.weight_bytes_per_param or self.model.dtype_bytes
        return self.model.num_params * per_param

    @property
    def engine_weight_bytes_per_gpu(self) -> float:
        """Engine weight bytes on each GPU: TP shards everything; expert parallelism shards the experts over the
        data-parallel ranks too."""
        tp = self.engine.tensor_parallel_size
        if not self.engine.expert_parallel:
            return self.engine_weight_bytes / tp
        experts = self.engine_weight_bytes * self.model.expert_params / self.model.num_params
        return (self.engine_weight_bytes - experts) / tp + experts / (tp * self.engine.data_parallel_size)

    @property
    def optimizer_steps_per_step(self) -> int:
        """Optimizer steps per RL step, from the train global batch (or algorithm.mini_batches_per_step)."""
        return training_model.optimizer_steps_per_step(self)

    @property
    def kv_capacity_tokens(self) -> int:
        """KV-cache tokens one replica holds: engine memory left after weights and activations."""
        tp = self.engine.tensor_parallel_size
        per_gpu = (
            self.hardware.engine_memory_bytes
            * (self.engine.gpu_memory_utilization - self.engine.activation_memory_fraction)
            - self.engine_weight_bytes_per_gpu
        )
        # sliding-window layers hold the window of every sequence that may run (vLLM's hybrid KV cache manager)
        kv_bytes = per_gpu * tp - self.engine.max_num_seqs * self.sliding_kv_bytes_per_seq
        return max(0, int(kv_bytes // self.kv_bytes_per_token))

    @property
    def scheduler_rules(self) -> SchedulerRules:
        """The engine's scheduling and paging rules: engine fields, else the named behaviour's, else vLLM V1's."""
        eng = self.engine
        entry = catalog.engine(eng.behaviour) if eng.behaviour is not None else {}

        def pick(name: str, default: Any) -> Any:
            value = getattr(eng, name)
            return value if value is not None else entry.get(name, default)

        chunked = bool(pick("chunked_prefill", True))
        budget = eng.max_num_batched_tokens
        gpu = self.hardware.gpu
        on_cpu = gpu.platform == "cpu"
        if budget is None and chunked:
            big = self.hardware.engine_memory_bytes >= 70 * 2**30 and "a100" not in gpu.name.lower()
            default = 4096 * eng.tensor_parallel_size if on_cpu else 16384 if big else 8192
            budget = max(default, eng.max_num_seqs)
        elif budget is None:
            budget = max(self.workload.max_prompt_tokens + self.workload.max_response_tokens, 2048)
        return SchedulerRules(
            block_size=int(pick("block_size", 128 if on_cpu else 16)),
            chunked_prefill=chunked,
            max_num_batched_tokens=int(budget),
            prefix_caching=bool(pick("prefix_caching", True)),
        )

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per token of the engine's full-attention layers (the model's K/V or MLA latent, at the
        cache's element size); sliding-window layers are in :attr:`sliding_kv_bytes_per_seq`."""
        return self._kv_bytes_all_layers * (1.0 - self.model.sliding_layer_fraction)

    @property
    def sliding_kv_bytes_per_seq(self) -> float:
        """KV bytes a running sequence holds in its sliding-window layers: the window's tokens (an upper bound
        for contexts shorter than the window)."""
        return self._kv_bytes_all_layers * self.model.sliding_layer_fraction * self.model.sliding_window

    @property
    def _kv_bytes_all_layers(self) -> float:
        if self.engine.kv_cache_dtype == "fp8":
            return self.model.kv_bytes_per_token / self.model.dtype_bytes
        return float(self.model.kv_bytes_per_token)

    def to_dict(self) -> dict[str, Any]:
        return _to_plain(self)

    def digest(self) -> str:
        """Short stable hash of the resolved scenario (used as run id and in report provenance)."""
        text = json.dumps(self.to_dict(), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def with_overrides(self, overrides: dict[str, Any] | list[str]) -> Scenario:
        """A new scenario with dotted-key overrides applied (``{"workload.prompts_per_step": 256}``)."""
        raw = self.to_dict()
        items = parse_overrides(overrides) if isinstance(overrides, list) else overrides
        for key, value in items.items():
            _set_path(raw, key, value)
        return from_dict(raw)


# ---------------------------------------------------------------------------------------------------- loading


def load_scenario(path: str | Path, overrides: list[str] | dict[str, Any] | None = None) -> Scenario:
    """Read a YAML scenario file, apply ``key=value`` overrides and validate."""
    p = Path(path)
    if not p.is_file():
        raise ScenarioError("scenario", str(p), "is not a file", "give the path of a scenario YAML file")
    try:
        raw = load_yaml(read_text(p, "scenario"))
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f" at line {line + 1}" if line is not None else ""
        problem = getattr(exc, "problem", None) or (str(exc) if type(exc) is yaml.YAMLError else None)
        detail = f" ({problem})" if problem and ("duplicate" in problem or "aliases" in problem) else ""
        raise ScenarioError("scenario", str(p), f"is not valid YAML{where}{detail}", "fix the YAML syntax") from None
    if not isinstance(raw, dict):
        raise ScenarioError("scenario", str(p), "must be a YAML mapping of sections", "see scenarios/*.yaml")
    if overrides:
        items = parse_overrides(overrides) if isinstance(overrides, list) else overrides
        for key, value in items.items():
            _set_path(raw, key, value)
    return from_dict(raw)


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """Parse ``a.b=c`` strings; values are read as YAML scalars (numbers, booleans, null, strings)."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ScenarioError("--set", item, "is not of the form key=value", "write e.g. run.steps=50")
        key, _, text = item.partition("=")
        key = key.strip()
        if not key:
            raise ScenarioError("--set", item, "has an empty key", "write e.g. run.steps=50")
        out[key] = _parse_scalar(text.strip())
    return out


def _parse_scalar(text: str) -> Any:
    try:
        value = yaml.safe_load(text) if text else ""
    except yaml.YAMLError:
        return text
    if isinstance(value, str):
        try:  # YAML 1.1 reads "1e-6" as a string
            return float(value) if any(ch.isdigit() for ch in value) else value
        except ValueError:
            return value
    return value


def _set_path(raw: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node: Any = raw
    for i, part in enumerate(parts[:-1]):
        nxt = node.get(part) if isinstance(node, dict) else None
        if isinstance(nxt, str) and part in ("model", "gpu", "critic_model"):
            nxt = {"base": nxt}  # override one number of a catalog entry
        elif nxt is None:
            nxt = {}
        elif not isinstance(nxt, dict):
            raise ScenarioError(".".join(parts[: i + 1]), nxt, "is not a section", f"cannot set {dotted}")
        node[part] = nxt
        node = nxt
    node[parts[-1]] = value


def from_dict(raw: dict[str, Any]) -> Scenario:
    """Build and validate a scenario from plain data (as read from YAML)."""
    if not isinstance(raw, dict):
        raise ScenarioError("scenario", raw, "must be a mapping of sections", "see scenarios/*.yaml")
    data = dict(raw)
    if "model" not in data:
        raise ScenarioError("model", None, "is required", "name a catalog model, e.g. model: Qwen2.5-7B")
    if "hardware" not in data or not isinstance(data.get("hardware"), dict) or "gpu" not in data["hardware"]:
        raise ScenarioError("hardware.gpu", None, "is required", "name a catalog GPU, e.g. gpu: H100-SXM")
    scenario = _build(Scenario, data, "")
    _validate(scenario)
    return scenario


def _resolve_spec(kind: str, value: Any, path: str) -> dict[str, Any]:
    """Expand a catalog name (or a mapping with ``base: NAME``) into a full spec mapping."""
    lookup = catalog.model if kind == "model" else catalog.gpu
    names = catalog.model_names if kind == "model" else catalog.gpu_names
    if isinstance(value, str):
        try:
            return lookup(value)
        except KeyError:
            raise ScenarioError(path, value, f"is not a catalog {kind}", f"use one of: {', '.join(names())}") from None
    if isinstance(value, dict):
        value = dict(value)
        base = value.pop("base", None)
        if base is not None:
            merged = _resolve_spec(kind, base, f"{path}.base")
            merged.update(value)
            return merged
        return value
    raise ScenarioError(path, value, f"must be a catalog {kind} name or a mapping", f"e.g. {path}: {names()[0]}")


def _build(cls: type, data: Any, path: str) -> Any:
    """Construct dataclass ``cls`` from a mapping, checking keys, types and per-field bounds."""
    where = path or "scenario"
    if not isinstance(data, dict):
        raise ScenarioError(where, data, "must be a mapping", f"write {where} as key: value lines")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [key for key in data if key not in fields]
    if unknown:
        key = unknown[0]
        raise ScenarioError(
            f"{path}.{key}" if path else str(key), data[key], "is not a known key", f"use one of: {', '.join(fields)}"
        )
    kwargs: dict[str, Any] = {}
    for name, f in fields.items():
        fpath = f"{path}.{name}" if path else name
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:  # type: ignore[misc]
                raise ScenarioError(fpath, None, "is required", f"add {fpath} to the scenario")
            continue
        kwargs[name] = _convert(hints[name], data[name], fpath, f.metadata)
    return cls(**kwargs)


def _convert(tp: Any, value: Any, path: str, meta: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return _convert(args[0], value, path, meta)
    if tp is ModelSpec or tp is GPUSpec:
        kind = "model" if tp is ModelSpec else "gpu"
        spec = _resolve_spec(kind, value, path)
        spec.setdefault("name", value if isinstance(value, str) else "custom")
        for extra in ("source", "notes", "verify", "aliases"):
            spec.pop(extra, None)
        return _build(tp, spec, path)
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, path)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            raise ScenarioError(path, value, "is not allowed", f"use one of: {', '.join(map(str, allowed))}")
        return value
    if origin is dict:
        if not isinstance(value, dict):
            raise ScenarioError(path, value, "must be a mapping", f"write {path} as key: value lines")
        inner = typing.get_args(tp)[1]
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ScenarioError(f"{path}.{k}", k, "must be a string key", "quote the key")
            out[k] = _convert(inner, v, f"{path}.{k}", {})
        return out
    if tp is Any:
        if isinstance(value, (dict, list)):
            raise ScenarioError(path, value, "must be a single value", "give a number, string or boolean")
        return value
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ScenarioError(path, value, "must be a list", f"write {path}: [..]")
        inner = typing.get_args(tp)[0]
        return tuple(_convert(inner, v, f"{path}[{i}]", {}) for i, v in enumerate(value))
    if tp is bool:
        if not isinstance(value, bool):
            raise ScenarioError(path, value, "must be true or false", f"write {path}: true or false")
        return value
    if tp is int:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or (isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()))
        ):
            raise ScenarioError(path, value, "must be an integer", f"write a whole number for {path}")
        value = int(value)
    elif tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ScenarioError(path, value, "must be a finite number", f"write a number for {path}")
        value = float(value)
    elif tp is str:
        if not isinstance(value, str):
            raise ScenarioError(path, value, "must be a string", f"quote the value of {path}")
        return value
    _check_bounds(value, path, meta)
    return value


def _check_bounds(value: float, path: str, meta: Any) -> None:
    for key, op, word in (
        ("ge", lambda a, b: a >= b, "at least"),
        ("gt", lambda a, b: a > b, "greater than"),
        ("le", lambda a, b: a <= b, "at most"),
        ("lt", lambda a, b: a < b, "less than"),
    ):
        bound = meta.get(key) if meta else None
        if bound is not None and not op(value, bound):
            raise ScenarioError(path, value, f"must be {word} {bound}", f"set {path} to a value {word} {bound}")


# ---------------------------------------------------------------------------------------------------- consistency


def _validate(s: Scenario) -> None:
    """Cross-field rules. Order matters: the first broken rule is reported."""
    _validate_model(s.model, "model")
    if s.algorithm.critic_model is not None:
        _validate_model(s.algorithm.critic_model, "algorithm.critic_model")
    _validate_lengths(s.workload)
    hw, eng, sched = s.hardware, s.engine, s.schedule
    if hw.placement == "separate":
        for key in ("rollout_gpus", "train_gpus"):
            if getattr(hw, key) is None:
                raise ScenarioError(
                    f"hardware.{key}", None, "is required with placement: separate", f"set hardware.{key}"
                )
        if hw.rollout_gpus + hw.train_gpus != hw.num_gpus:  # type: ignore[operator]
            raise ScenarioError(
                "hardware.num_gpus",
                hw.num_gpus,
                f"must equal rollout_gpus ({hw.rollout_gpus}) + train_gpus ({hw.train_gpus})",
                "make the pools add up to num_gpus",
            )
    elif hw.rollout_gpus is not None or hw.train_gpus is not None:
        raise ScenarioError(
            "hardware.placement",
            hw.placement,
            "shares all GPUs; rollout_gpus/train_gpus are unused",
            "remove them or set hardware.placement: separate",
        )
    want = "colocated" if sched.mode == "sync-colocated" else "separate"
    if hw.placement != want:
        raise ScenarioError(
            "schedule.mode",
            sched.mode,
            f"needs hardware.placement: {want}",
            f"set hardware.placement: {want} or choose another schedule.mode",
        )
    if sched.mode == "async" and sched.max_staleness < 1:
        raise ScenarioError(
            "schedule.max_staleness",
            sched.max_staleness,
            "must be at least 1 for mode async",
            "set schedule.max_staleness: 1 (one-step off-policy) or use mode sync-separate",
        )
    if sched.mode != "async" and sched.max_staleness != 0:
        raise ScenarioError(
            "schedule.max_staleness",
            sched.max_staleness,
            f"has no meaning for mode {sched.mode}",
            "set it to 0 or use mode async",
        )
    tp = eng.tensor_parallel_size
    if hw.num_rollout_gpus % tp:
        raise ScenarioError(
            "engine.tensor_parallel_size",
            tp,
            f"must divide the rollout GPUs ({hw.num_rollout_gpus})",
            "choose a divisor",
        )
    if eng.data_parallel_size > 1 and not eng.expert_parallel:
        raise ScenarioError(
            "engine.data_parallel_size",
            eng.data_parallel_size,
            "without expert parallelism data-parallel ranks are independent replicas",
            "set engine.expert_parallel: true (MoE models), or use engine.replicas",
        )
    if eng.expert_parallel and not s.model.is_moe:
        raise ScenarioError(
            "engine.expert_parallel", True, f"needs a mixture-of-experts model ({s.model.name} is dense)", "remove it"
        )
    if hw.num_rollout_gpus % (tp * eng.data_parallel_size):
        raise ScenarioError(
            "engine.data_parallel_size",
            eng.data_parallel_size,
            f"x tensor_parallel_size {tp} must divide the rollout GPUs ({hw.num_rollout_gpus})",
            "choose sizes whose product divides the rollout GPUs",
        )
    if eng.speculative_tokens > 0 and s.model.num_mtp_layers < 1:
        raise ScenarioError(
            "engine.speculative_tokens",
            eng.speculative_tokens,
            f"needs multi-token-prediction modules; {s.model.name} has none (model.num_mtp_layers 0)",
            "set it to 0, or use a model that ships MTP modules (DeepSeek-V3)",
        )
    if eng.replicas is not None and eng.replicas * tp > hw.num_rollout_gpus:
        raise ScenarioError(
            "engine.replicas",
            eng.replicas,
            f"x tensor_parallel_size {tp} needs more than the {hw.num_rollout_gpus} rollout GPUs",
            "lower engine.replicas or add GPUs",
        )
    if eng.behaviour is not None and eng.behaviour not in catalog.engine_names():
        raise ScenarioError(
            "engine.behaviour",
            eng.behaviour,
            "is not a named engine behaviour",
            f"use one of: {', '.join(catalog.engine_names())} (rlsim/catalog/engines.yaml), or remove it",
        )
    if eng.activation_memory_fraction >= eng.gpu_memory_utilization:
        raise ScenarioError(
            "engine.activation_memory_fraction",
            eng.activation_memory_fraction,
            f"must be below gpu_memory_utilization ({eng.gpu_memory_utilization})",
            "lower it or raise engine.gpu_memory_utilization",
        )
    if s.algorithm.name == "grpo" and s.workload.group_size < 2:
        raise ScenarioError(
            "workload.group_size",
            s.workload.group_size,
            "must be at least 2 for grpo (advantages are normalized within a group)",
            "set workload.group_size: 8, say",
        )
    _validate_learning(s.learning)
    if s.workload.responses_per_step % s.algorithm.mini_batches_per_step:
        raise ScenarioError(
            "algorithm.mini_batches_per_step",
            s.algorithm.mini_batches_per_step,
            f"must divide the responses per step ({s.workload.responses_per_step} = P x G)",
            "choose a divisor of P x G",
        )
    # memory: engine weights, KV cache, trainer state
    gpu_mem = hw.engine_memory_bytes
    budget = gpu_mem * (eng.gpu_memory_utilization - eng.activation_memory_fraction)
    weights_per_gpu = s.engine_weight_bytes_per_gpu
    if weights_per_gpu >= budget:
        raise ScenarioError(
            "model",
            s.model.name,
            f"needs {weights_per_gpu / 1e9:.1f} GB of weights per GPU at tensor_parallel_size {tp}, "
            f"over the engine's {budget / 1e9:.1f} GB on {hw.gpu.name}",
            "raise engine.tensor_parallel_size, use a larger GPU or a smaller model",
        )
    rules = s.scheduler_rules
    if rules.chunked_prefill and rules.max_num_batched_tokens < eng.max_num_seqs:
        raise ScenarioError(
            "engine.max_num_batched_tokens",
            eng.max_num_batched_tokens,
            f"is below engine.max_num_seqs ({eng.max_num_seqs}): with chunked prefill every running sequence's "
            "decode token must fit one iteration (vLLM refuses it too)",
            f"raise it to at least {eng.max_num_seqs}, or lower engine.max_num_seqs",
        )
    cap = s.kv_capacity_tokens // rules.block_size * rules.block_size  # whole blocks
    longest = s.workload.max_prompt_tokens + s.workload.max_response_tokens + 1
    if cap < longest:
        raise ScenarioError(
            "workload.max_response_tokens",
            s.workload.max_response_tokens,
            f"plus max_prompt_tokens ({s.workload.max_prompt_tokens}) does not fit one replica's KV "
            f"cache of {cap} tokens",
            "raise engine.tensor_parallel_size or engine.gpu_memory_utilization, or lower the lengths",
        )
    training_memory.validate(s)


def _validate_model(m: ModelSpec, path: str) -> None:
    if m.dtype not in _DTYPE_BYTES:
        raise ScenarioError(f"{path}.dtype", m.dtype, "is not supported", f"use one of: {', '.join(_DTYPE_BYTES)}")
    if m.num_active_params > m.num_params:
        raise ScenarioError(
            f"{path}.num_active_params",
            m.num_active_params,
            f"exceeds num_params ({m.num_params})",
            "active parameters are a subset of all",
        )
    if m.sliding_window > 0 and not 0 < m.num_sliding_layers < m.num_layers:
        raise ScenarioError(
            f"{path}.num_sliding_layers",
            m.num_sliding_layers,
            f"must be between 1 and num_layers - 1 ({m.num_layers - 1}) with a sliding_window",
            "count the sliding-window layers; models whose every layer slides are not modelled",
        )
    if m.num_attention_heads % m.num_kv_heads:
        raise ScenarioError(
            f"{path}.num_kv_heads",
            m.num_kv_heads,
            f"must divide num_attention_heads ({m.num_attention_heads})",
            "fix the architecture",
        )
    if (m.num_experts > 0) != (m.num_experts_per_token > 0) or m.num_experts_per_token > m.num_experts:
        raise ScenarioError(
            f"{path}.num_experts_per_token",
            m.num_experts_per_token,
            f"is inconsistent with num_experts ({m.num_experts})",
            "both are 0 for a dense model; experts per token <= experts for MoE",
        )
    if m.is_moe and (m.moe_intermediate_size <= 0 or m.expert_params >= m.num_params):
        raise ScenarioError(
            f"{path}.moe_intermediate_size",
            m.moe_intermediate_size,
            "gives expert parameters inconsistent with num_params",
            "check the MoE architecture",
        )


def _validate_learning(lr: Learning) -> None:
    if (lr.metric is None) != (lr.target is None):
        missing = "learning.metric" if lr.metric is None else "learning.target"
        raise ScenarioError(
            missing,
            None,
            "is required when the other of learning.metric / learning.target is set",
            "give both (the metric curve and the target on it) or neither",
        )
    if lr.metric is not None:
        lo, hi = sorted((lr.metric.initial, lr.metric.asymptote))
        if not lo < lr.target < hi:  # type: ignore[operator]
            raise ScenarioError(
                "learning.target",
                lr.target,
                f"is not strictly between metric.initial ({lr.metric.initial}) and metric.asymptote "
                f"({lr.metric.asymptote})",
                "choose a target the curve reaches",
            )
    bm, at = lr.batch_multiplier, "learning.batch_multiplier"
    need = {"invariant": (), "critical_batch": ("critical_batch",), "table": ("batches", "samples_to_target")}[bm.form]
    for key in need:
        if getattr(bm, key) is None:
            raise ScenarioError(f"{at}.{key}", None, f"is required for form {bm.form}", f"set {at}.{key}")
    if bm.form == "invariant" and None not in (bm.batch_low, bm.batch_high) and bm.batch_low > bm.batch_high:  # type: ignore[operator]
        raise ScenarioError(f"{at}.batch_low", bm.batch_low, f"exceeds batch_high ({bm.batch_high})", "swap them")
    if bm.form == "table":
        xs, ys = bm.batches, bm.samples_to_target
        if len(xs) != len(ys) or len(xs) < 2:  # type: ignore[arg-type]
            raise ScenarioError(
                f"{at}.batches",
                xs,
                f"needs as many entries as samples_to_target ({len(ys)}), at least 2",
                "give one measured samples-to-target per batch",
            )
        if any(x <= 0 for x in xs) or any(b <= a for a, b in zip(xs, xs[1:])):  # type: ignore[union-attr, index]
            raise ScenarioError(f"{at}.batches", xs, "must be positive and increasing", "sort the table by batch")
        if any(not 0 < y < math.inf for y in ys):  # type: ignore[union-attr]
            raise ScenarioError(f"{at}.samples_to_target", ys, "must be positive and finite", "fix the table")


def _validate_lengths(w: Workload) -> None:
    phases = w.response_length_by_samples
    if phases:
        at = "workload.response_length_by_samples"
        if w.response_length_drift is not None:
            raise ScenarioError(
                f"{at}", "[...]", "cannot be combined with response_length_drift", "give one of the two"
            )
        ends = [p.until_samples for p in phases]
        if ends[-1] is not None or any(e is None for e in ends[:-1]):
            raise ScenarioError(
                f"{at}[{len(ends) - 1}].until_samples",
                ends[-1],
                "must be null for the last phase only",
                "give until_samples to every phase but the last",
            )
        if any(b <= a for a, b in zip(ends[:-2], ends[1:-1])):
            raise ScenarioError(f"{at}", ends, "until_samples must increase", "sort the phases by samples")
    for key, d, cap in (
        ("workload.prompt_length", w.prompt_length, w.max_prompt_tokens),
        ("workload.response_length", w.response_length, w.max_response_tokens),
        *(
            (f"workload.response_length_by_samples[{i}].length", p.length, w.max_response_tokens)
            for i, p in enumerate(phases)
        ),
    ):
        need = {
            "fixed": ("tokens",),
            "uniform": ("low", "high"),
            "lognormal": ("mean_tokens", "sigma"),
            "empirical": ("bin_edges", "weights"),
        }[d.dist]
        for k in need:
            if getattr(d, k) is None:
                raise ScenarioError(f"{key}.{k}", None, f"is required for dist {d.dist}", f"set {key}.{k}")
        extra = [
            f.name
            for f in dataclasses.fields(d)
            if f.name != "dist" and f.name not in need and getattr(d, f.name) is not None
        ]
        if extra:
            raise ScenarioError(
                f"{key}.{extra[0]}",
                getattr(d, extra[0]),
                f"is not used by dist {d.dist}",
                f"remove it; dist {d.dist} takes {', '.join(need)}",
            )
        if d.dist == "fixed" and d.tokens > cap:  # type: ignore[operator]
            raise ScenarioError(f"{key}.tokens", d.tokens, f"exceeds the maximum ({cap})", "lower it or raise the max")
        if d.dist == "uniform" and not d.low <= d.high:  # type: ignore[operator]
            raise ScenarioError(f"{key}.low", d.low, f"must not exceed high ({d.high})", "swap low and high")
        if d.dist == "empirical":
            edges, weights = d.bin_edges, d.weights
            if len(edges) != len(weights) + 1 or len(weights) < 1:  # type: ignore[arg-type]
                raise ScenarioError(
                    f"{key}.bin_edges",
                    edges,
                    f"needs one more edge than weights ({len(weights)})",
                    "give n+1 edges for n weights",
                )
            if any(b <= a for a, b in zip(edges, edges[1:])) or edges[0] < 0:  # type: ignore[index]
                raise ScenarioError(f"{key}.bin_edges", edges, "must be non-negative and increasing", "sort them")
            if any(x < 0 for x in weights) or not 0 < sum(weights) < math.inf:  # type: ignore[union-attr, arg-type]
                raise ScenarioError(
                    f"{key}.weights",
                    weights,
                    "must be non-negative with a finite positive sum",
                    "fix the histogram counts",
                )
    rmin = {"fixed": w.response_length.tokens, "uniform": w.response_length.low}.get(w.response_length.dist)
    if rmin is not None and rmin < 1:
        raise ScenarioError(
            "workload.response_length", rmin, "gives responses of 0 tokens", "every response >= 1 token"
        )


# ---------------------------------------------------------------------------------------------------- output


def _to_plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj):
        return {f.name: _to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {k: _to_plain(v) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return [_to_plain(x) for x in obj]
    return obj


def dump_yaml(s: Scenario) -> str:
    """The resolved scenario (catalog entries expanded) as YAML; loading it gives the same scenario."""
    return yaml.safe_dump(s.to_dict(), sort_keys=False)
