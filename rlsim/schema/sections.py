"""The sections of a scenario other than the catalog specs: hardware, engine, workload and its length
distributions, algorithm, reward, software, schedule, learning model, cost coefficients, run, sweep and plan, and the
trainer-side ``training`` and ``weight_sync``, as frozen dataclasses of plain data.

Each field's bounds are its metadata (:func:`rlsim.schema.specs.bounds`), enforced at load by
:func:`rlsim.scenario.build.check_bounds`; the rules that relate several fields are in :mod:`rlsim.scenario.validation`.
The models that read ``training`` and ``weight_sync`` are rlsim.trainer's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from rlsim.schema.family import CurveFamily
from rlsim.schema.specs import MAX_OVERHEAD_S, MAX_TOKENS, GPUSpec, ModelSpec, bounds

# how the learning rate follows the batch (learning.lr_rule, learning.invariant_rule; rlsim.workload.lr_rules)
LrRule = Literal["sqrt", "linear", "none"]


@dataclass(frozen=True)
class Hardware:
    gpu: GPUSpec
    num_gpus: int = field(default=8, metadata=bounds(ge=1, le=1_000_000))
    placement: Literal["colocated", "separate"] = "colocated"
    rollout_gpus: int | None = field(default=None, metadata=bounds(ge=1))  # separate placement only
    train_gpus: int | None = field(default=None, metadata=bounds(ge=1))  # separate placement only
    # GPUs per node (or GB200 compute tray) and the scale-out bandwidth per GPU (one direction); None: the GPU
    # catalog's node_size / nic_bandwidth_bytes_per_s (the vendor's standard system)
    gpus_per_node: int | None = field(default=None, metadata=bounds(ge=1))
    internode_bandwidth_bytes_per_s: float | None = field(default=None, metadata=bounds(gt=0))
    # whether collectives between the nodes (trays) of one multi-node NVLink domain ride NVLink (NCCL's MNNVL) or
    # the nodes' NICs. true: NVLink across the trays of one rack (the job has the fabric's IMEX channels in its
    # containers and NCCL's cuMem on in every process: NCCL src/mnnvl.cc); false or None: the NICs, the default,
    # because no framework launch we read sets that up and the published GB200 runs behave so (docs/design.md,
    # "Topology"). Irrelevant where the domain is one node (DGX / HGX)
    multi_node_nvlink: bool | None = None
    # host (CPU) memory of one node, bytes; None: the GPU catalog's host_memory_bytes (offloaded state must fit it)
    host_memory_bytes: float | None = field(default=None, metadata=bounds(gt=0))

    @property
    def engine_memory_bytes(self) -> float:
        """Memory of one GPU as the engine's memory profiler sees it."""
        return self.gpu.device_memory_bytes or self.gpu.memory_bytes

    @property
    def memory_text(self) -> str:
        """One GPU's memory as every message states it: what CUDA reports (engine_memory_bytes), GB and GiB."""
        b = self.engine_memory_bytes
        return f"{self.gpu.name}'s {b / 1e9:.1f} GB ({b / 2**30:.1f} GiB, as CUDA reports it)"

    @property
    def node_gpus(self) -> int:
        """GPUs of one node (or compute tray)."""
        return self.gpus_per_node or self.gpu.node_size or self.gpu.nvlink_domain_size

    @property
    def nvlink_domain(self) -> int:
        """GPUs a collective reaches over NVLink: the catalog's domain when it spans several nodes and the job
        says it uses multi-node NVLink, else one node. A group larger than this crosses the NICs."""
        node = self.node_gpus
        if self.multi_node_nvlink_available and self.multi_node_nvlink is True:
            return max(node, self.gpu.nvlink_domain_size)
        return node

    def topology_warnings(self) -> list[str]:
        """One line when a job spans several nodes of a multi-node NVLink domain and does not say whether it uses
        that fabric: rlsim prices the NICs between the nodes, and says how to price NVLink instead."""
        if not self.multi_node_nvlink_available or self.multi_node_nvlink is not None:
            return []
        if self.num_gpus <= self.node_gpus:
            return []
        return [
            f"hardware: the {self.num_gpus} GPUs span {-(-self.num_gpus // self.node_gpus)} {self.gpu.name} nodes "
            f"of {self.node_gpus}; collectives between them are priced on the NICs. Multi-node NVLink needs the "
            "fabric's IMEX channels in the job and NCCL's cuMem on; if your job has them, set "
            "hardware.multi_node_nvlink: true (false silences this)"
        ]

    @property
    def multi_node_nvlink_available(self) -> bool:
        """Whether the system's NVLink domain spans several nodes (the catalog gives a node smaller than it)."""
        return self.gpu.node_size is not None and self.gpu.node_size < self.gpu.nvlink_domain_size

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

    tensor_parallel_size: int = field(default=1, metadata=bounds(ge=1))
    replicas: int | None = field(default=None, metadata=bounds(ge=1))  # default: rollout GPUs / TP
    max_num_seqs: int = field(default=256, metadata=bounds(ge=1, le=65536))
    # Fraction of each GPU's memory the engine may use for weights, activations and KV cache (vLLM's
    # gpu_memory_utilization); the KV cache gets what is left after weights and activations.
    gpu_memory_utilization: float = field(default=0.9, metadata=bounds(gt=0, le=1))
    activation_memory_fraction: float = field(default=0.05, metadata=bounds(ge=0, lt=1))
    # fp8: weights stored and read in FP8 (one byte) and GEMMs at the FP8 peak; the KV cache stays in the model
    # dtype
    precision: Literal["bf16", "fp8"] = "bf16"
    # the engine's CPU work per iteration (costs.decode_iteration_overhead_s + decode_per_seq_overhead_s x batch:
    # scheduling, sampling, detokenizing) runs between GPU steps (false: vLLM <= 0.5, one synchronous loop) or
    # overlaps them, costing only what exceeds the GPU step (true: vLLM >= 0.6 multi-step scheduling and
    # asynchronous output processing, and the V1 engine)
    cpu_overlap: bool = False
    # in_process: the engine core runs in the caller's process (vLLM's LLM class with
    # VLLM_ENABLE_V1_MULTIPROCESSING=0, as NeMo RL runs its synchronous engine), so each iteration's output
    # processing follows its GPU step (costs.detokenize_per_token_s per generated token when it detokenizes);
    # false: a separate engine-core process (vLLM V1's default, AsyncLLM always) overlaps it. detokenize: vLLM
    # turns each new token into text (false: skip_tokenizer_init); None: the framework release's choice
    # (rlsim/catalog/software.yaml `detokenize`), else vLLM's default, on
    in_process: bool = False
    detokenize: bool | None = None
    # KV cache element type: auto (the model dtype) or fp8 (one byte per element; vLLM --kv-cache-dtype fp8)
    kv_cache_dtype: Literal["auto", "fp8"] = "auto"
    # a named engine behaviour (rlsim/catalog/engines.yaml: vllm-0.5, vllm-v1) whose CPU-work coefficients and
    # overlap replace costs.decode_iteration_overhead_s / decode_per_seq_overhead_s / tp_rank_overhead_s and
    # engine.cpu_overlap; None: those fields as given
    behaviour: str | None = None
    # enforce_eager: decode without CUDA graphs (vLLM's enforce_eager): the engine's behaviour becomes its eager
    # variant (engines.yaml `eager`: vllm-v1 and vllm-v1-piecewise -> vllm-v1-eager style entries), whose host
    # launches of every layer's kernels put a floor under each decode iteration's GPU time
    enforce_eager: bool = False
    # How the engine schedules and pages its KV cache (rlsim/engine/replica.py). None: the named behaviour's value, else
    # vLLM V1's default. block_size: tokens per KV block (vLLM --block-size: 16 on GPUs, 128 on CPU).
    block_size: int | None = field(default=None, metadata=bounds(ge=1, le=4096))
    # chunked prefill (V1): prompts split under max_num_batched_tokens and prefilled in the same forward pass as
    # the decodes; false: whole-prompt admission rounds before the decode iteration (vLLM 0.5's default)
    chunked_prefill: bool | None = None
    # automatic prefix caching: the G responses of a prompt share its cached prompt blocks (prefilled once)
    prefix_caching: bool | None = None
    # the share of KV blocks an admission leaves free (vLLM V0's block watermark, 0.01; V1 has none): admission
    # only, decode growth may take them. None: the named behaviour's value, else 0
    kv_watermark: float | None = field(default=None, metadata=bounds(ge=0, lt=1))
    # tokens per iteration (chunked) or per admission round's prefill; None: vLLM's default (V1 LLM class: 16384
    # on GPUs with >= 70 GB other than the A100, else 8192, on CPUs 4096 x TP, never below max_num_seqs; rounds:
    # max(longest prompt + response, 2048), as vLLM 0.5 with max_model_len). block_size None: 16, 128 on CPUs
    max_num_batched_tokens: int | None = field(default=None, metadata=bounds(ge=1, le=100_000_000))
    # how a KV-cache thrash is simulated (chunked prefill only; docs/design.md "The fast thrash model"): exact
    # (every preemption and readmission, the reference) or fast (once the engine has preempted, the waiting
    # queue's front is hosted in the free blocks in aggregate: makespan, decode batch and finish times within
    # 0.4% of exact on the recorded cases, preemptions within 5%, recompute within 1%, 1.2-1.5x faster there)
    thrash_model: Literal["exact", "fast"] = "exact"
    # speculative decoding with the model's multi-token-prediction modules (vLLM speculative_config method "mtp"):
    # draft tokens per iteration, and the chance that a draft token is accepted when the ones before it were
    # (DeepSeek-V3 report: 85-90% for its second token)
    speculative_tokens: int = field(default=0, metadata=bounds(ge=0, le=16))
    speculative_acceptance_rate: float = field(default=0.85, metadata=bounds(ge=0, lt=1))
    # static batching (transformers' generate, as rlsim-real's hf engine runs it): a step's requests form one
    # batch that decodes until its longest response ends, and the trainer's batch is padded to it, so every
    # response of the step costs as many tokens as the longest one
    static_batching: bool = False
    # MoE engines: attention data-parallel ranks per engine (vLLM --data-parallel-size with
    # --enable-expert-parallel), each with its own batch, scheduler and KV cache; the experts are sharded over all
    # data_parallel_size x tensor_parallel_size GPUs and tokens reach them by all-to-all
    data_parallel_size: int = field(default=1, metadata=bounds(ge=1, le=4096))
    expert_parallel: bool = False

    @property
    def weight_bytes_per_param(self) -> int | None:
        return 1 if self.precision == "fp8" else None


@dataclass(frozen=True)
class LengthDist:
    """Token-length distribution: fixed, uniform, lognormal or empirical histogram."""

    dist: Literal["fixed", "uniform", "lognormal", "empirical"] = "fixed"
    tokens: int | None = field(default=None, metadata=bounds(ge=0, le=MAX_TOKENS))  # fixed
    low: int | None = field(default=None, metadata=bounds(ge=0, le=MAX_TOKENS))  # uniform, inclusive
    high: int | None = field(default=None, metadata=bounds(ge=0, le=MAX_TOKENS))  # uniform, inclusive
    mean_tokens: float | None = field(default=None, metadata=bounds(gt=0))  # lognormal, before clipping
    sigma: float | None = field(default=None, metadata=bounds(gt=0, le=5))  # lognormal, std of log
    bin_edges: tuple[float, ...] | None = None  # empirical: n+1 increasing edges
    weights: tuple[float, ...] | None = None  # empirical: n non-negative weights


@dataclass(frozen=True)
class Drift:
    """Mean response length moves linearly from the distribution's mean to ``final_mean_tokens`` over the first
    ``over_samples`` cumulative samples (sample-indexed, so batch sizes see the same drift at equal samples)."""

    final_mean_tokens: float = field(metadata=bounds(gt=0))
    over_samples: float = field(metadata=bounds(gt=0))


@dataclass(frozen=True)
class LengthPhase:
    """Response lengths while a run's cumulative samples are below ``until_samples`` (None: to the end). A policy's
    responses change as it learns (sample-indexed, so batch sizes see the same lengths at equal samples)."""

    length: LengthDist
    until_samples: float | None = field(default=None, metadata=bounds(gt=0))


@dataclass(frozen=True)
class Workload:
    prompts_per_step: int = field(default=128, metadata=bounds(ge=1, le=10_000_000))  # P
    group_size: int = field(default=8, metadata=bounds(ge=1, le=100_000))  # G
    prompt_length: LengthDist = LengthDist(dist="fixed", tokens=512)
    response_length: LengthDist = LengthDist(dist="fixed", tokens=1024)
    max_prompt_tokens: int = field(default=4096, metadata=bounds(ge=1, le=MAX_TOKENS))
    max_response_tokens: int = field(default=16384, metadata=bounds(ge=1, le=MAX_TOKENS))
    response_length_drift: Drift | None = None
    # response lengths by training progress: the first phase whose until_samples exceeds the step's progress, the
    # last one after that (its until_samples None); empty: response_length throughout
    response_length_by_samples: tuple[LengthPhase, ...] = ()
    # what the progress of response_length_by_samples and response_length_drift counts
    # (rlsim.workload.lengths.progress):
    # "samples", the cumulative samples; "learning_rate", the cumulative learning rate in samples at
    # learning.reference_batch (the same as samples at that batch; under the sqrt rule samples x (B_ref / B) ** 0.5),
    # for lengths that move with how far the optimizer has moved the policy
    length_progress: Literal["samples", "learning_rate"] = "samples"
    # where the response lengths come from: "measured" (a profile's fit to a user's runs), "run_log" (a run's logged
    # lengths, rlsim check), "stated" (the scenario's author or the source wrote them; a hand-written scenario's),
    # "assumed" (only a cap was given: rlsim.workload.priors' prior, priced over its range too)
    length_source: Literal["measured", "run_log", "stated", "assumed"] = "stated"
    length_note: str = ""  # why, in a few words (the prior and its source, the run log, the table)
    # assumed lengths: the plausible (low, high) mean response tokens after clipping; unset: the prior's at the cap
    length_range_tokens: tuple[float, float] | None = None

    @property
    def responses_per_step(self) -> int:
        """B = P x G: samples per step."""
        return self.prompts_per_step * self.group_size


@dataclass(frozen=True)
class DynamicSampling:
    """DAPO's dynamic sampling (NeMo RL ``grpo.use_dynamic_sampling``, ``nemo_rl/algorithms/grpo.py`` at v0.5.0):
    each generation round samples ``batch_multiplier`` x P prompts, generates G responses each and scores them;
    the prompt groups whose rewards all agree (std 0) are dropped, the others cached, and rounds repeat until P
    groups are cached (the surplus is discarded). Log-probs and training see the P x G kept samples only; the
    reward sees every generated one. ``keep_rate`` is the fraction of groups the filter keeps: an input (it
    depends on the data and the model's accuracy; NeMo RL logs it as ``dynamic_sampling_num_gen_batches``)."""

    keep_rate: float = field(metadata=bounds(gt=0, le=1))
    batch_multiplier: float = field(default=1.0, metadata=bounds(ge=1, le=1000))
    max_gen_batches: int = field(default=10, metadata=bounds(ge=1, le=10_000))  # NeMo RL's grpo_math_1B default
    # rounds: NeMo RL's waves, each scored and filtered before the next. replace: OpenRLHF's streaming replacement
    # (algo.dynamic_filtering_enable, openrlhf/trainer/ppo_utils/samples_generator.py _generate_vllm at 3c3be62):
    # P prompts go to the engines and each group the filter drops sends one new prompt at once, until P groups
    # pass; priced as one generation call of ceil(P / keep_rate) groups queued in order, exact while the engines'
    # running slots stay full (a replacement waits for a slot either way), short by the replacements' own tail
    # otherwise
    mode: Literal["rounds", "replace"] = "rounds"
    # assumed: the config enables the filter without a keep rate, so the import took rlsim.learning.keep.ASSUMED_KEEP
    # (its source there) and the answer says so and prices KEEP_RANGE's ends beside it (rlsim.run.keep_range)
    keep_rate_source: Literal["given", "assumed"] = "given"

    def rounds(self) -> int:
        """Generation rounds per step: the first r with r x multiplier x keep_rate >= 1 (expected kept groups);
        one under streaming replacement."""
        if self.mode == "replace":
            return 1
        return max(1, math.ceil(1.0 / (self.batch_multiplier * self.keep_rate) - 1e-9))

    def prompts_per_call(self, prompts: int) -> int:
        """Prompts one generation call holds: ceil(multiplier x P) per round, ceil(P / keep_rate) replacing."""
        if self.mode == "replace":
            return math.ceil(prompts / self.keep_rate - 1e-9)
        return math.ceil(self.batch_multiplier * prompts - 1e-9)


@dataclass(frozen=True)
class Algorithm:
    name: Literal["grpo", "ppo"] = "grpo"
    mini_batches_per_step: int = field(default=1, metadata=bounds(ge=1, le=1_000_000))
    epochs_per_step: int = field(default=1, metadata=bounds(ge=1, le=1_000))
    kl_reference: bool = False
    # verl recomputes the behaviour policy's log-probs with the trainer every step; with one update per step
    # they equal the current policy's and a framework may skip the pass.
    recompute_old_logprob: bool = True
    critic_model: ModelSpec | None = None  # PPO critic; default: same architecture as the policy
    # PPO: GPUs of the critic's own pool (OpenRLHF's critic.num_nodes x critic.num_gpus_per_node, its default
    # placement): the values pass runs beside the actor's log-prob passes and the critic's training beside the
    # actor's (ppo_trainer.py launches both groups at once and waits for both); None: the critic runs on the
    # training pool after the actor's passes
    critic_gpus: int | None = field(default=None, metadata=bounds(ge=1, le=1_000_000))
    # GPUs of the reference model's own pool (OpenRLHF's ref.num_nodes x ref.num_gpus_per_node without
    # colocate_actor_ref): its log-prob pass runs beside the actor's (make_experience launches both at once);
    # None: on the training pool, after the actor's
    reference_gpus: int | None = field(default=None, metadata=bounds(ge=1, le=1_000_000))
    # PPO: the critic on the reward model's own GPUs (reward.num_gpus; OpenRLHF colocate_critic_reward): its passes
    # there, its values after the reward model's forward, the GPUs counted once
    critic_with_reward: bool = False
    # PPO: the critic's own micro-batching where its framework sets it apart from the actor's (verl's critic.*:
    # model.use_remove_padding, false by default where the actor's is true; use_dynamic_bsz;
    # ppo_max_token_len_per_gpu, 32768 by default; ppo_micro_batch_size_per_gpu); None: as the training section.
    # Its values and training passes are priced with these in place of the training section's (Scenario.critic_view)
    critic_pad_to_cap: bool | None = None
    critic_sequence_packing: bool | None = None
    critic_packing_tokens: int | None = field(default=None, metadata=bounds(ge=1))
    critic_micro_batch_size: int | None = field(default=None, metadata=bounds(ge=1))
    dynamic_sampling: DynamicSampling | None = None  # DAPO: generation rounds until the batch fills
    # ReMax (verl adv_estimator remax, ray_trainer.py:1368-1400 at v0.7.0): after the sampled rollout, one greedy
    # response per prompt in a generation call of its own (P requests), scored by the reward, as its baseline
    greedy_baseline: bool = False
    # false: the advantages' baseline is not the group's (REINFORCE / REINFORCE++ whiten over the batch: verl
    # reinforce_plus_plus, OpenRLHF reinforce), so one response per prompt (group_size 1) is a valid critic-free run
    group_baseline: bool = True

    @property
    def optimizer_steps_per_step(self) -> int:
        return self.mini_batches_per_step * self.epochs_per_step


@dataclass(frozen=True)
class Reward:
    """How samples are scored. Without ``model``: a rule or verifier on the CPU (``costs.reward_overhead_s`` +
    ``costs.reward_s_per_sample`` per sample). With ``model``: a reward model's forward pass over every scored
    sample (prompt + response), on ``num_gpus`` GPUs of its own (OpenRLHF's ``reward.num_nodes`` x
    ``reward.num_gpus_per_node``; a pool beside the rollout and training pools, counted in the GPU-hours) or,
    with ``num_gpus`` unset, on the training pool between the rollout and the log-prob passes (OpenRLHF's
    ``colocate_all``). ``tensor_parallel_size`` GPUs hold one copy; the copies split the samples."""

    model: ModelSpec | None = None
    num_gpus: int | None = field(default=None, metadata=bounds(ge=1, le=1_000_000))
    tensor_parallel_size: int = field(default=1, metadata=bounds(ge=1, le=1024))


@dataclass(frozen=True)
class Software:
    """The RL framework and inference engine with their versions (rlsim.scenario.software,
    rlsim/catalog/software.yaml): a
    framework release pins its engine release, an engine release selects its behaviour (engine.behaviour, unless
    the scenario sets one) and defaults; unknown versions take the nearest known with a warning."""

    framework: str | None = None  # a framework of rlsim/catalog/software.yaml (nemo-rl)
    framework_version: str | None = None
    engine: Literal["vllm", "sglang"] = "vllm"
    engine_version: str | None = None


@dataclass(frozen=True)
class Schedule:
    mode: Literal["sync-colocated", "sync-separate", "async", "fully-async"] = "sync-colocated"
    max_staleness: int = field(default=0, metadata=bounds(ge=0, le=64))  # async: k >= 1
    # async only. streaming: the engines keep generating across step boundaries (up to k batches ahead of the
    # trainer), so a batch does not wait for its own stragglers with the engines half idle; in-flight weight
    # updates: new weights are loaded between engine iterations instead of after the engines drain
    streaming: bool = True
    in_flight_weight_updates: bool = True
    # async only. collector: batches (a batch's requests go to the engines together, k + 1 batches held at once:
    # streaming) or prompt_groups (NeMo RL's AsyncTrajectoryCollector, rlsim.run.collector: one prompt group at a
    # time, at most prompts_per_step x max_staleness groups in flight, the next step's groups started as slots free)
    collector: Literal["batches", "prompt_groups"] = "batches"
    # fully-async only (verl's fully-async trainer, rlsim.run.fully_async): a step is one trainer update on one batch
    # (verl: require_batches mini-batches); the weights reach the rollout pool every sync_every updates (verl's
    # trigger_parameter_sync_step); the rollout pool dispatches prompts up to (1 + staleness_threshold) x sync_every
    # batches past the last weights it received (a fraction of a batch allowed); partial_rollout: a weight sync
    # interrupts the responses in flight, which resume on the new weights, instead of waiting for them to finish
    sync_every: int = field(default=1, metadata=bounds(ge=1, le=4096))
    staleness_threshold: float = field(default=0.0, metadata=bounds(ge=0, le=64))
    partial_rollout: bool = False

    @property
    def staleness(self) -> int:
        """The largest lag, in steps, of a batch's weights behind the trainer's (the learning model's k)."""
        if self.mode == "fully-async":  # the batches dispatched ahead, a started fraction counting whole, less one
            return math.ceil(round((1.0 + self.staleness_threshold) * self.sync_every, 9)) - 1
        return self.max_staleness if self.mode == "async" else 0


@dataclass(frozen=True)
class MetricCurve:
    """R(S) = initial + (asymptote - initial) / (1 + (mid_samples / S)^exponent), S = cumulative samples."""

    initial: float = field(metadata=bounds(ge=-1e9, le=1e9))
    asymptote: float = field(metadata=bounds(ge=-1e9, le=1e9))
    mid_samples: float = field(metadata=bounds(gt=0))
    exponent: float = field(default=1.0, metadata=bounds(gt=0, le=100))


@dataclass(frozen=True)
class BatchMultiplier:
    """How samples-to-target depends on the batch B = P x G (see rlsim.learning.model)."""

    form: Literal["invariant", "critical_batch", "table"] = "invariant"
    # invariant: m = 1 in [low, high] (responses per step, so at least 1); None: open
    batch_low: float | None = field(default=None, metadata=bounds(ge=1))
    batch_high: float | None = field(default=None, metadata=bounds(ge=1))
    penalty_per_doubling: float = field(default=1.5, metadata=bounds(ge=1, le=1000))  # above batch_high
    penalty_per_doubling_below: float = field(default=1.0, metadata=bounds(ge=1, le=1000))  # below batch_low
    critical_batch: float | None = field(default=None, metadata=bounds(gt=0))  # critical_batch form
    # critical_batch form: E ~ (1 + B / critical_batch) ** critical_power; 1: LR tuned per batch (McCandlish et
    # al. 2018); 0.5: Adam under the sqrt LR rule (rlsim.learning.model derives it)
    critical_power: float = field(default=1.0, metadata=bounds(gt=0, le=2))
    batches: tuple[float, ...] | None = None  # table form: increasing batches (responses per step)
    samples_to_target: tuple[float, ...] | None = None  # table form: measured N* at each batch
    allow_extrapolation: bool = False  # table form


@dataclass(frozen=True)
class Learning:
    """Learning-rate rule and the sample-indexed learning model (rlsim.learning.model)."""

    lr0: float = field(default=1e-6, metadata=bounds(gt=0))
    reference_batch: int = field(default=1024, metadata=bounds(ge=1))  # responses per step at which lr0 holds
    lr_rule: LrRule = "sqrt"
    # the rule that keeps the trajectory in samples (sqrt for Adam); other rules pay untuned_lr_penalty
    invariant_rule: LrRule = "sqrt"
    # samples multiplier for doubling the batch at a fixed LR: the seed paper's fixed-LR control (P 128 -> 256)
    untuned_lr_penalty: float = field(default=1.67, metadata=bounds(ge=1, le=1000))
    metric: MetricCurve | None = None
    target: float | None = field(default=None, metadata=bounds(ge=-1e9, le=1e9))
    batch_multiplier: BatchMultiplier = BatchMultiplier()
    staleness_penalty_per_step: float = field(default=0.0, metadata=bounds(ge=0, le=10))
    # stretch: the staleness that costs nothing; the samples stretch by (1 + penalty) ** (k - free) beyond it
    # (rlsim-calibrate fit-staleness fits it: stale-policy runs slow down only past a few steps)
    staleness_free_steps: float = field(default=0.0, metadata=bounds(ge=0, le=1e6))
    # how staleness acts (rlsim.learning.staleness): stretch, the samples stretched by (1 + penalty) ** k; or by
    # the loss an async run trains with, threshold-like on the ceiling: naive_ppo (importance ratio against the
    # behaviour policy) or decoupled_ppo (AReaL's proximal-policy objective), from AReaL's staleness table
    staleness_loss: Literal["stretch", "naive_ppo", "decoupled_ppo"] = "stretch"
    # the loss's threshold constants (free steps, ceiling loss, half steps) in place of AReaL's, fitted to a user's
    # runs by rlsim-calibrate fit-staleness; None: the loss's published constants
    staleness_form: tuple[float, ...] | None = None
    # how far the staleness form was from the user's runs (rlsim-calibrate fit-staleness): the standard deviation of
    # log samples-to-target it missed them by, added to samples_spread in the band of an async run
    staleness_spread: float = field(default=0.0, metadata=bounds(ge=0, le=2))
    samples_spread: float = field(default=0.0, metadata=bounds(ge=0, le=2))  # std of log N* across seeds
    # share of seeds that never reach the target at any budget (a GRPO run whose groups all score alike stops
    # learning); the rest reach it at a lognormal N* (rlsim.learning.model.reach_within)
    stall_probability: float = field(default=0.0, metadata=bounds(ge=0, lt=1))
    # the stall share measured at several batches (rlsim-calibrate fit-learning with seeds at each): increasing
    # batches and their shares, read in log batch between them and the nearest end beyond; None: stall_probability
    # at every batch
    stall_batches: tuple[float, ...] | None = None
    stall_shares: tuple[float, ...] | None = None
    # the ceiling (the metric curve's asymptote) measured at several batches (rlsim-calibrate fit-learning, where
    # the batches' asymptotes differ beyond their errors): increasing batches and the asymptote at each, read in
    # log batch between them and the nearest end beyond; it replaces metric.asymptote at the batch run (ScaleRL,
    # arXiv 2510.13786: larger batches end higher). None: metric.asymptote at every batch
    ceiling_batches: tuple[float, ...] | None = None
    ceilings: tuple[float, ...] | None = None
    # their one-sigma errors (fit-learning: each batch curve's fitted asymptote error): the N* they move, as a log
    # standard deviation, widens the time-to-target band in quadrature with samples_spread; None: no error given
    ceiling_errors: tuple[float, ...] | None = None
    # how stall_probability (measured at reference_batch) carries to other batches without a measured table:
    # constant, or signal_free_steps (PPO with batch-whitened advantages: a hazard per step that holds no correct
    # answer, which a step of B responses does with probability (1 - initial_success) ** B; rlsim.learning.model)
    stall_form: Literal["constant", "signal_free_steps"] = "constant"
    # the share of responses that are correct before training (the reference runs' first steps)
    initial_success: float | None = field(default=None, metadata=bounds(ge=0, lt=1))
    # responses per prompt of the runs the metric curve was measured at; set, a group whose rewards all agree
    # trains nothing and N* follows the share of informative groups at workload.group_size (rlsim.learning.groups;
    # the metric must be a pass rate in [0, 1]); unset, the batch P x G alone counts
    reference_group_size: int | None = field(default=None, metadata=bounds(ge=2))
    # with reference_group_size: the spread of the prompts' pass rates, Beta(p k, (1 - p) k) around the curve's p
    # (None: every prompt at p), and the correlation of responses to one prompt (design effect 1 + (G - 1) rho);
    # rlsim-calibrate fit-groups fits both (rlsim.learning.groups)
    prompt_concentration: float | None = field(default=None, metadata=bounds(gt=0))
    group_correlation: float = field(default=0.0, metadata=bounds(ge=0, lt=1))
    # DAPO's dynamic sampling (algorithm.dynamic_sampling) trains on groups with a signal only: the batch that
    # carries signal is B where unfiltered it is keep_rate x B, so the trained samples to target scale by
    # keep_rate ** this (0.5: Adam at a fixed LR, a step's progress as the square root of that batch; 0: filtering
    # changes nothing per trained sample; 1: per generated sample; rlsim.learning.model)
    filtered_signal_power: float = field(default=0.5, metadata=bounds(ge=0, le=1))
    # how the batch, responses per prompt, the LR rule and staleness move the curve's midpoint, exponent and ceiling
    # (tables per knob, rlsim.learning.family); unset: the seed paper's member, the batch stretching samples alone
    family: CurveFamily = CurveFamily()


@dataclass(frozen=True)
class Costs:
    """Roofline efficiencies and fixed overheads (docs/reference.md sections 6-7). A calibrated profile replaces them.

    Defaults are assumptions, typical of vLLM and FSDP on H100-class GPUs; each is a fraction of the catalog
    peak (efficiency) or seconds (overhead).
    """

    decode_memory_efficiency: float = field(default=0.7, metadata=bounds(gt=0, le=1))
    decode_compute_efficiency: float = field(default=0.5, metadata=bounds(gt=0, le=1))
    prefill_compute_efficiency: float = field(default=0.6, metadata=bounds(gt=0, le=1))
    train_compute_efficiency: float = field(default=0.4, metadata=bounds(gt=0, le=1))
    forward_compute_efficiency: float = field(default=0.5, metadata=bounds(gt=0, le=1))
    link_efficiency: float = field(default=0.7, metadata=bounds(gt=0, le=1))
    decode_iteration_overhead_s: float = field(default=0.004, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))
    decode_per_seq_overhead_s: float = field(default=2e-6, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))
    prefill_overhead_s: float = field(default=0.002, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))
    # host CPU per generated token of an in-process engine that detokenizes (engine.in_process, engine.detokenize):
    # the incremental decode and the sampled token's text, vLLM 0.10.0's two tokenizer calls, measured by
    # `rlsim-real bench detokenize` (real/detokenize.py; docs/calibrate.md) with a byte-level BPE tokenizer
    detokenize_per_token_s: float = field(default=5.0e-6, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))
    # engine CPU work per iteration per tensor-parallel rank beyond the first (the driver sends each step's
    # inputs to every worker)
    tp_rank_overhead_s: float = field(default=0.0, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))
    # one collective inside an NVLink domain
    collective_latency_s: float = field(default=2e-5, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))
    # one collective whose group crosses NVLink domains (small messages: network round trips, NCCL protocol)
    internode_latency_s: float = field(default=1e-4, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))
    train_step_overhead_s: float = field(default=0.5, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))  # per optimizer step
    forward_overhead_s: float = field(default=0.2, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))  # per log-prob/values pass
    weight_sync_latency_s: float = field(default=1.0, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))
    # per collective of a per_tensor / bucketed weight sync: the Python-side call around it (the engine's
    # load_weights, OpenRLHF's Ray call per engine, the launch); an assumption, not fitted
    weight_sync_call_s: float = field(default=1e-3, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))
    sleep_wake_overhead_s: float = field(default=2.0, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))  # colocated only
    # per step: dispatch and gather
    rollout_overhead_s: float = field(default=0.5, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))
    # per response per step: host work outside the engine (detokenizing, batch assembly, logging)
    rollout_s_per_sample: float = field(default=0.0, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))
    reward_overhead_s: float = field(default=0.1, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))
    reward_s_per_sample: float = field(default=1e-4, metadata=bounds(ge=0, le=MAX_OVERHEAD_S))
    # training at scale (rlsim.trainer.training): GEMM efficiency against the FP8 peak, the fraction of the dense
    # efficiency that routed-expert GEMMs reach, and the host's Adam rate when the optimizer is offloaded
    fp8_train_compute_efficiency: float = field(default=0.3, metadata=bounds(gt=0, le=1))
    moe_compute_efficiency_factor: float = field(default=0.85, metadata=bounds(gt=0, le=1))
    # decode: the fraction of the dense GEMMs' HBM bandwidth the grouped expert GEMMs (vLLM's fused MoE kernels)
    # reach while streaming the experts the batch touches, few tokens per expert. FITTED on the 48 vLLM 0.5.4
    # generation rows (its Mixtral rows carry it): rlsim/catalog/fitted.yaml has its provenance and prior
    moe_decode_memory_efficiency_factor: float = field(default=0.67, metadata=bounds(gt=0, le=1))
    cpu_adam_params_per_s: float = field(default=1e9, metadata=bounds(gt=0))
    # fraction of the device's memory bandwidth an Adam step on the device reaches (its fp32 master, moments and
    # gradient read and written; rlsim.trainer.training). 1 unless fitted: rlsim-real bench optimizer on a CPU,
    # whose per-tensor Adam reaches a few percent of the nominal bandwidth (calibrate.bench.optimizer)
    optimizer_memory_efficiency: float = field(default=1.0, metadata=bounds(gt=0, le=1))
    # fraction of the host link's peak that copies between GPU and host memory reach (pinned buffers come close
    # to it, the prior 1.0; pageable memory, as plain tensor.to("cpu") uses, reaches a fraction). FITTED on the
    # published step rows: rlsim/catalog/fitted.yaml has its provenance and prior
    host_link_efficiency: float = field(default=0.0722, metadata=bounds(gt=0, le=1))
    # the PPO critic's passes against the policy's passes of the same shape (rlsim prices the critic as the policy's
    # architecture): a value head in place of the LM head, a value loss in place of the policy loss. 1 unless fitted
    # from runs that time the critic's phases (rlsim-calibrate fit: the critic's own in-loop factors)
    critic_forward_time_scale: float = field(default=1.0, metadata=bounds(gt=0, le=10))
    critic_train_time_scale: float = field(default=1.0, metadata=bounds(gt=0, le=10))


@dataclass(frozen=True)
class Run:
    steps: int = field(default=20, metadata=bounds(ge=1, le=1_000_000))
    seed: int = field(default=0, metadata=bounds(ge=0, le=2**63 - 1))
    # simulate until the predicted metric reaches learning.target (at most max_steps) instead of `steps`; None
    # (unset): to the target when there is a learning model, so run, decide, sweep and plan give one answer; false:
    # `steps` steps, the rest of the way extrapolated at the steady-state step time (the result says so)
    until_target: bool | None = None
    max_steps: int = field(default=100_000, metadata=bounds(ge=1, le=1_000_000))
    band_seeds: int = field(default=3, metadata=bounds(ge=1, le=100))  # simulation seeds for the band
    # run overheads, reported beside time-to-target and not in it (rlsim.run.overheads). Evaluation every
    # eval_every_steps steps (None: none), also before the first step (eval_at_start) and after the last when it
    # is not a multiple (eval_at_end): eval_prompts prompts (None: workload.prompts_per_step) x eval_group_size
    # responses generated on the engines at the workload's lengths
    eval_every_steps: int | None = field(default=None, metadata=bounds(ge=1, le=1_000_000))
    eval_at_start: bool = False
    eval_at_end: bool = False
    eval_prompts: int | None = field(default=None, metadata=bounds(ge=1, le=10_000_000))
    eval_group_size: int = field(default=1, metadata=bounds(ge=1, le=1024))
    # checkpoint saves every checkpoint_every_steps steps (None: none; checkpoint_at_end: also after a last step
    # that is not a multiple): the trained weights and optimizer state written at storage_bytes_per_s
    checkpoint_every_steps: int | None = field(default=None, metadata=bounds(ge=1, le=1_000_000))
    checkpoint_at_end: bool = False
    # start-up, once: engine_start_s (engine init, CUDA graphs) plus the weights read from storage; None: not priced
    engine_start_s: float | None = field(default=None, metadata=bounds(ge=0, le=1e6))
    # the job's aggregate storage bandwidth, written (checkpoints) and read (start-up): 1 GB/s, what a typical NFS
    # server sustains for writes (1-2 GB/s aggregate; spheron.network, "Parallel File Systems for AI on GPU Cloud",
    # 2026); set the cluster's own
    storage_bytes_per_s: float = field(default=1e9, metadata=bounds(gt=0, le=1e15))


@dataclass(frozen=True)
class Sweep:
    """A default grid for ``rlsim sweep``: dotted scenario keys -> values."""

    grid: dict[str, tuple[Any, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    """What ``rlsim plan`` prices with: US dollars per GPU-hour by GPU type (catalog names, e.g. ``H100-SXM: 2.5``),
    over the price catalog's (rlsim/catalog/prices.yaml); ``--price GPU=USD`` wins over both."""

    prices: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Training:
    """The trainer's parallel layout and options (scenario section ``training``)."""

    backend: Literal["fsdp", "megatron"] = "fsdp"
    tensor_parallel_size: int = field(default=1, metadata=bounds(ge=1, le=1024))
    pipeline_parallel_size: int = field(default=1, metadata=bounds(ge=1, le=1024))
    virtual_pipeline_stages: int = field(default=1, metadata=bounds(ge=1, le=128))
    context_parallel_size: int = field(default=1, metadata=bounds(ge=1, le=1024))
    expert_parallel_size: int = field(default=1, metadata=bounds(ge=1, le=4096))
    expert_tensor_parallel_size: int = field(default=1, metadata=bounds(ge=1, le=1024))
    # sequences per micro-batch; with sequence packing, micro-batches are bins of micro_batch_size x
    # packing_tokens tokens (default: workload.max_prompt_tokens + max_response_tokens)
    micro_batch_size: int = field(default=1, metadata=bounds(ge=1, le=1_000_000))
    sequence_packing: bool = True
    packing_tokens: int | None = field(default=None, metadata=bounds(ge=1))
    # without packing: the trainer pads the step's whole batch to its longest prompt + response, so every
    # log-prob and training pass costs responses x that length (rlsim-real's trainer, real/update.py
    # batch_tensors); the longest of more samples is longer, so the cost per sample grows with the batch
    pad_to_longest: bool = False
    # without packing: each micro-batch holds only its sequences' real tokens (verl use_remove_padding, its
    # default; OpenRLHF packing_samples), so its memory is priced at a high quantile of micro_batch_size sequences'
    # prompt + response tokens under the workload's lengths (rlsim.trainer.memory), not at micro_batch_size x cap
    remove_padding: bool = False
    # sequences (packed: bins) per micro-batch of the forward-only log-prob passes; None: micro_batch_size
    logprob_micro_batch_size: int | None = field(default=None, metadata=bounds(ge=1))
    # with sequence packing: tokens per bin of the log-prob passes (verl log_prob_max_token_len_per_gpu);
    # None: packing_tokens
    logprob_packing_tokens: int | None = field(default=None, metadata=bounds(ge=1))
    # fsdp, without remove_padding: every sequence padded to max_prompt_tokens + max_response_tokens and the
    # linear layers and logits run on the padding (verl without use_remove_padding: its agent loop pads prompts
    # and responses to their caps); attention runs on the real tokens (flash attention unpads)
    pad_to_cap: bool = False
    # without packing: each micro-batch padded to its longest sequence, the linear layers and logits run on the
    # padding, attention on the real tokens (OpenRLHF without packing_samples; rlsim.trainer.padding)
    pad_micro_batches: bool = False
    # fsdp: Ulysses sequence parallel (verl ulysses_sequence_parallel_size): each micro-batch split over this many
    # GPUs by sequence, with all-to-alls of q, k, v and the attention output around every attention layer
    ulysses_sequence_parallel_size: int = field(default=1, metadata=bounds(ge=1, le=1024))
    # fsdp: ZeRO stage (DeepSpeed, OpenRLHF --zero_stage): 3 shards parameters, gradients and optimizer (FSDP);
    # 2 keeps the bf16 parameters whole and reduce-scatters gradients every micro-batch; 1 reduces gradients
    # once per optimizer step; 1 and 2 all-gather the updated parameters after each optimizer step
    zero_stage: int = field(default=3, metadata=bounds(ge=1, le=3))
    # fsdp, zero_stage 3: free each layer's gathered parameters after its forward and gather them again for the
    # backward (verl fsdp_config.reshard_after_forward, true by default); false keeps them through the backward
    # (FSDP1 SHARD_GRAD_OP, FSDP2 reshard_after_forward=False): one gather per micro-batch and layer, the whole
    # bf16 parameters held at the micro-batch's peak
    reshard_after_forward: bool = True
    # fsdp, zero_stage 3: shard over groups of this many GPUs and replicate across the groups (hybrid sharding;
    # verl fsdp_config.fsdp_size): gathers and reduce-scatters inside a group, then an all-reduce of each gradient
    # shard across the groups; None: one group of all training GPUs
    fsdp_shard_size: int | None = field(default=None, metadata=bounds(ge=1))
    # responses per optimizer step (the frameworks' train global batch); None: responses per step divided by
    # algorithm.mini_batches_per_step
    global_batch_size: int | None = field(default=None, metadata=bounds(ge=1))
    distributed_optimizer: bool = True
    # Megatron's gradient buffer in fp32 (DDP grad_reduce_in_fp32; Megatron-LM's own scripts) or in bf16 (false:
    # NeMo RL's distributed_data_parallel_config default); 4 or 2 bytes per parameter of the shard
    grad_reduce_in_fp32: bool = True
    # Megatron use_precision_aware_optimizer with bf16 weights (TE FusedAdam, store_param_remainders): the fp32
    # master weight is the bf16 weight plus a 16-bit remainder, 2 bytes of optimizer state per parameter, not 4
    precision_aware_optimizer: bool = False
    overlap_communication: bool = True  # DP reduce-scatter / all-gather overlapped with compute
    # full: keep each layer's input only (verl's enable_gradient_checkpointing, on by default there)
    activation_recompute: Literal["none", "selective", "full"] = "full"
    precision: Literal["bf16", "fp8"] = "bf16"
    # optimizer states and update on the host (CPU Adam: Megatron-Core's HybridDeviceOptimizer, DeepSpeed's
    # ZeRO-Offload, FSDP2's CPUOffloadPolicy with offload_params; rlsim.trainer.offload)
    offload_optimizer: bool = False
    # megatron: the share of a rank's optimizer state offload_optimizer puts on the host (Megatron-Core
    # optimizer_offload_fraction; NeMo RL allows only 1.0); the rest steps on the GPU
    offload_optimizer_fraction: float = field(default=1.0, metadata=bounds(ge=0, le=1))
    offload_params: bool = False  # fsdp only: parameters live on the host between uses (FSDP2 CPUOffloadPolicy)
    # verl's param_offload / optimizer_offload: the parameters (optimizer state) wait in host memory between phases
    # and come back for each log-prob pass and update (the optimizer state for the update only); Adam on the GPU
    swap_params: bool = False
    swap_optimizer: bool = False
    # flat share of each GPU's datasheet memory the trainer may use; None: the framework's headroom, what CUDA
    # reports less the reserves of rlsim.trainer.headroom (non-PyTorch memory, a colocated engine's share,
    # allocator fragmentation)
    memory_fraction: float | None = field(default=None, metadata=bounds(gt=0, le=1))
    # the reference model waits in host memory and is swapped into the trainer's parameters for the reference
    # pass: policy weights out, reference in, policy back (NeMo RL use_reference_model)
    reference_on_host: bool = False
    # with reference_on_host: the reference's shard streams up layer by layer for its forward (FSDP CPU offload, as
    # verl wraps its reference): one bf16 shard over the host link, not the swap's three
    reference_streamed: bool = False
    # LoRA (rlsim.trainer.lora): adapters of this rank on lora_target_modules train, the base weights stay frozen in
    # bf16 (no gradients, no optimizer state) and serve as the reference model; 0: full fine-tuning
    lora_rank: int = field(default=0, metadata=bounds(ge=0, le=65536))
    # comma-separated: all-linear, or q_proj k_proj v_proj o_proj gate_proj up_proj down_proj (Hugging Face / PEFT)
    # and linear_qkv linear_proj linear_fc1 linear_fc2 (Megatron, fused: one adapter each)
    lora_target_modules: str = "all-linear"
    # LoRA: the reference log-probs come from the base with the adapters off, no copy held (verl, TRL); false: a
    # reference model of its own (OpenRLHF, NeMo RL)
    lora_reference_in_base: bool = True
    # fsdp: the dtype the actor is loaded in (verl fsdp_config.model_dtype), hence of its parameters, gradients and
    # Adam moments: 16 bytes per parameter in fp32, 8 in bf16
    param_dtype: Literal["fp32", "bf16"] = "fp32"
    # log-probs from the bf16 logits by an in-place cross entropy (flash-attn's, as verl's dp_actor uses without
    # entropy): the logits are held once in bf16, 2 bytes per token and vocabulary entry instead of 4
    inplace_logprobs: bool = False


@dataclass(frozen=True)
class WeightSync:
    """How a framework moves the weights (scenario section ``weight_sync``)."""

    # sharded: every engine GPU receives only its own shard, every trainer GPU of one model copy sends its part,
    # all in parallel. broadcast: every GPU receives the whole model in the training dtype, as NeMo RL v0.5-v0.6
    # do: separate pools, one training rank broadcasts every tensor (nemo_rl/utils/packed_tensor.py,
    # packed_broadcast_producer with src=0); colocated, every rank exports full HF tensors
    # (megatron_policy_worker.py, export_hf_weights) and its engine keeps its slice
    # per_tensor: the trainer gathers each tensor whole and one collective sends it to every engine GPU, tensor by
    # tensor (verl's separate pools without a checkpoint engine, OpenRLHF's NCCL group or, colocated, CUDA IPC
    # handles per parameter). bucketed: the same whole tensors packed into bucket_bytes buckets, one collective per
    # bucket (slime's --update-weight-buffer-size, verl's update_weights_bucket_megabytes, a checkpoint engine)
    transfer: Literal["sharded", "broadcast", "per_tensor", "bucketed"] = "sharded"
    bucket_bytes: float = field(default=512.0 * 2**20, metadata=bounds(gt=0, le=1e12))  # bucketed: bytes per bucket
    # bucketed, separate pools: a checkpoint engine (verl's fully-async checkpoint_engine, after MoonshotAI's): each
    # trainer GPU copies its share of the whole tensors to host memory, then, bucket by bucket, back to the GPU and
    # out to every engine GPU
    host_staged: bool = False
    # tensors the per_tensor / bucketed paths send (the HF checkpoint's); None: counted from the architecture
    # (rlsim.trainer.sync_gathered.tensor_count)
    tensors: int | None = field(default=None, metadata=bounds(ge=1, le=100_000_000))
    # colocated: the trainer's parameters, gradients and optimizer state go to host memory before generation and
    # come back after it (NeMo RL offload_before_refit / offload_after_refit)
    offload_trainer: bool = False
    # colocated: the engine sleeps while the trainer runs (vLLM sleep mode: its weights to host memory, its KV cache
    # freed) and wakes for the sync, paying those copies and costs.sleep_wake_overhead_s; false: it keeps its
    # weights where they are (transformers' generate, vLLM without sleep mode, an engine on a CPU)
    engine_sleeps: bool = True
    # vLLM's sleep level: 1 backs the engine's weights up to pinned host memory and restores them on waking (the
    # host copies priced); 2 discards them, the weight sync that follows loads them anew (no host copy; verl from
    # v0.6.0: verl/third_party/vllm/__init__.py VLLM_SLEEP_LEVEL)
    sleep_level: Literal[1, 2] = 1
