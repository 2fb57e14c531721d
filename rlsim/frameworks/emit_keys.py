"""What each framework's config says for a scenario: one function per framework (``EMITTERS``) from the
scenario (and the original config, through ``_Ctx``) to the framework's keys, with notes on what it cannot say.
Split from :mod:`rlsim.frameworks.emit`, which diffs these against the original and writes the overrides."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rlsim.errors import RlsimError
from rlsim.frameworks import nemo_rl, trl, verl
from rlsim.learning import lr_for_batch
from rlsim.scenario.schema import Scenario

_MISSING = object()


class EmitError(RlsimError, ValueError):
    """A planned scenario the framework's batch rules cannot express (the message names both sides)."""


@dataclass
class _Ctx:
    """The plan and, when given, the original config (flat TABLE-spelled keys) and its import."""

    fmt: str
    s: Scenario
    flat: dict[str, Any] | None
    spelling: dict[str, str]
    legacy: bool
    base: Scenario | None
    table: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def current(self, key: str) -> Any:
        """The original's value of ``key`` (absent: the framework default of the TABLE); _MISSING without one."""
        if self.flat is None:
            return _MISSING
        value = self.flat.get(key)
        if value is None:
            return self.table.get(key)
        return value

    def has(self, key: str) -> bool:
        return self.flat is not None and self.flat.get(key) is not None

    def changed(self, get: Callable[[Scenario], Any], default: Any) -> bool:
        """Whether the plan's value differs from the original's import (without an original: from ``default``)."""
        was = get(self.base) if self.base is not None else default
        return get(self.s) != was


def _opt_steps(s: Scenario) -> int:
    """Optimizer steps per pass over the step's batch (the frameworks' mini-batches)."""
    return s.optimizer_steps_per_step // s.algorithm.epochs_per_step


def _lr(s: Scenario) -> float:
    """learning.lr0 scaled by learning.lr_rule from learning.reference_batch to the scenario's responses per step."""
    return lr_for_batch(s.learning, s.workload.responses_per_step)


def _nodes(ctx: _Ctx, gpus: int, per_node_key: str, framework_default: int) -> tuple[int, int]:
    """(GPUs per node, nodes) for ``gpus``: hardware.gpus_per_node, else the original's, else the framework's
    default; a count below one node is one node of that many GPUs."""
    per_node = ctx.s.hardware.gpus_per_node
    if per_node is None:
        cur = ctx.current(per_node_key)
        per_node = int(cur) if cur is not _MISSING and cur else framework_default
    if gpus <= per_node:
        return gpus, 1
    if gpus % per_node:
        raise EmitError(
            f"{gpus} GPUs are not a whole number of {per_node}-GPU nodes ({per_node_key}); set "
            "hardware.gpus_per_node to a divisor"
        )
    return per_node, gpus // per_node


def _divide(a_field: str, a: int, b_what: str, b: int, framework: str) -> int:
    if b <= 0 or a % b:
        raise EmitError(f"{a_field} ({a}) must be divisible by {b_what} ({b}) for {framework}; change the plan")
    return a // b


def _packing_tokens(s: Scenario) -> int:
    tr = s.training
    tokens = tr.packing_tokens or (s.workload.max_prompt_tokens + s.workload.max_response_tokens)
    return tokens * tr.micro_batch_size


def _common_notes(ctx: _Ctx, framework: str, *, asynchronous: bool, max_num_seqs: bool, pp: bool) -> None:
    s = ctx.s
    if not asynchronous and s.schedule.mode == "async":
        ctx.notes.append(
            f"schedule.mode async (max_staleness {s.schedule.max_staleness}): {framework} has no async schedule here"
        )
    if not max_num_seqs and ctx.changed(lambda x: x.engine.max_num_seqs, 256):
        ctx.notes.append(f"engine.max_num_seqs {s.engine.max_num_seqs}: {framework} has no key for it")
    if not pp and s.training.pipeline_parallel_size > 1:
        ctx.notes.append(f"training.pipeline_parallel_size {s.training.pipeline_parallel_size}: {framework} has none")
    if ctx.changed(lambda x: (x.workload.max_prompt_tokens, x.workload.max_response_tokens), _MISSING) and (
        ctx.base is not None
    ):
        ctx.notes.append("workload.max_prompt_tokens / max_response_tokens: length caps are not emitted")
    ds = s.algorithm.dynamic_sampling
    if ds is not None and framework != "NeMo RL":
        ctx.notes.append(f"algorithm.dynamic_sampling (keep rate {ds.keep_rate:g}): not emitted for {framework}")
    if s.reward.model is not None:
        where = f"{s.reward.num_gpus} GPUs of its own" if s.reward.num_gpus else "the training GPUs"
        ctx.notes.append(f"reward.model {s.reward.model.name} on {where}: not emitted (set the framework's reward)")


# --------------------------------------------------------------------------------------------------- verl


def _verl(ctx: _Ctx) -> dict[str, Any]:
    s, A, R, M = ctx.s, verl.A, verl.R, verl.M
    d: dict[str, Any] = {}
    P, G = s.workload.prompts_per_step, s.workload.group_size
    steps = _opt_steps(s)
    mini = _divide(
        "workload.prompts_per_step",
        P,
        "the optimizer steps per step (verl's ppo_mini_batch_size counts prompts)",
        steps,
        "verl",
    )
    d["data.train_batch_size"] = P
    d[R + "n"] = G
    d[A + "ppo_mini_batch_size"] = mini
    d[A + "ppo_epochs"] = s.algorithm.epochs_per_step
    gpus = s.hardware.num_gpus
    if s.hardware.placement == "separate":
        ctx.notes.append(
            f"hardware.placement separate ({s.hardware.rollout_gpus} + {s.hardware.train_gpus}): verl's hybrid "
            f"engine (as rlsim maps it) shares all GPUs; emitted as {gpus} colocated GPUs"
        )
    per_node, nnodes = _nodes(ctx, gpus, "trainer.n_gpus_per_node", 8)
    d["trainer.n_gpus_per_node"], d["trainer.nnodes"] = per_node, nnodes
    tr = s.training
    if tr.sequence_packing:
        d[A + "use_dynamic_bsz"] = True
        d[A + "ppo_max_token_len_per_gpu"] = _packing_tokens(s)
    else:
        d[A + "use_dynamic_bsz"] = False
        per_rank = _divide(f"{A}ppo_mini_batch_size x {R}n ({mini} x {G})", mini * G, "the GPUs", gpus, "verl")
        _divide("verl's per-GPU mini-batch", per_rank, "training.micro_batch_size", tr.micro_batch_size, "verl")
        if ctx.has(A + "ppo_micro_batch_size"):
            d[A + "ppo_micro_batch_size"] = tr.micro_batch_size * gpus
        else:
            d[A + "ppo_micro_batch_size_per_gpu"] = tr.micro_batch_size
        if tr.logprob_micro_batch_size is not None:
            if ctx.has(R + "log_prob_micro_batch_size"):
                d[R + "log_prob_micro_batch_size"] = tr.logprob_micro_batch_size * gpus
            else:
                d[R + "log_prob_micro_batch_size_per_gpu"] = tr.logprob_micro_batch_size
    d[R + "tensor_model_parallel_size"] = s.engine.tensor_parallel_size
    d[R + "gpu_memory_utilization"] = s.engine.gpu_memory_utilization
    d[R + "max_num_seqs"] = s.engine.max_num_seqs
    if s.engine.replicas is not None and s.engine.replicas * s.engine.tensor_parallel_size != gpus:
        ctx.notes.append(f"engine.replicas {s.engine.replicas}: verl runs one engine per TP group of all GPUs")
    d[A + "optim.lr"] = _lr(s)
    d[M + "enable_gradient_checkpointing"] = tr.activation_recompute != "none"
    if tr.backend == "megatron":
        ctx.notes.append(
            f"training.backend megatron (TP {tr.tensor_parallel_size}, PP {tr.pipeline_parallel_size}): verl's "
            "Megatron workers are not mapped by rlsim; emitted for FSDP"
        )
    else:
        d[A + "fsdp_config.param_offload"] = tr.offload_params
        d[A + "fsdp_config.optimizer_offload"] = tr.offload_optimizer
    _common_notes(ctx, "verl", asynchronous=False, max_num_seqs=True, pp=tr.backend == "megatron")
    return d


# --------------------------------------------------------------------------------------------------- TRL


def _trl(ctx: _Ctx) -> dict[str, Any]:
    s, hw = ctx.s, ctx.s.hardware
    d: dict[str, Any] = {}
    procs = hw.num_train_gpus
    micro = s.training.micro_batch_size
    B = s.workload.responses_per_step
    spg = _divide("workload P x G", B, f"{trl.PDB} x num_processes", micro * procs, "TRL")
    ga = _divide(trl.SPG, spg, "the optimizer steps per step", _opt_steps(s), "TRL")
    d["num_processes"] = procs
    d[trl.PDB] = micro
    d[trl.GA] = ga
    d["num_generations"] = s.workload.group_size
    d["num_iterations"] = s.algorithm.epochs_per_step
    if ctx.has(trl.GEN):
        d[trl.GEN] = B
    elif ctx.has(trl.SPG) or spg != ga:
        d[trl.SPG] = spg
    use_vllm = not s.engine.static_batching
    d["use_vllm"] = use_vllm
    tp = s.engine.tensor_parallel_size
    if use_vllm and hw.placement == "colocated":
        d["vllm_mode"] = "colocate"
        d["vllm_tensor_parallel_size"] = tp
        d["vllm_gpu_memory_utilization"] = s.engine.gpu_memory_utilization
    elif use_vllm:
        d["vllm_mode"] = "server"
        d["vllm_server_tensor_parallel_size"] = tp
        d["vllm_server_data_parallel_size"] = s.num_replicas
        d["vllm_server_gpu_memory_utilization"] = s.engine.gpu_memory_utilization
        if s.num_replicas * tp != hw.num_rollout_gpus:
            ctx.notes.append(f"engine.replicas {s.num_replicas} x TP {tp} leaves rollout GPUs idle (trl vllm-serve)")
    elif hw.placement == "separate":
        ctx.notes.append("hardware.placement separate without vLLM: TRL's transformers generation is colocated")
    d["learning_rate"] = _lr(s)
    d["gradient_checkpointing"] = s.training.activation_recompute != "none"
    tr = s.training
    if tr.backend == "megatron":
        ctx.notes.append(
            f"training.backend megatron (TP {tr.tensor_parallel_size}, PP {tr.pipeline_parallel_size}): TRL trains "
            "data-parallel (DeepSpeed ZeRO / FSDP)"
        )
    if tr.sequence_packing:
        ctx.notes.append("training.sequence_packing: TRL's GRPOTrainer pads its micro-batches (as rlsim maps it)")
    _common_notes(ctx, "TRL", asynchronous=False, max_num_seqs=False, pp=True)
    return d


# --------------------------------------------------------------------------------------------------- OpenRLHF


def _openrlhf(ctx: _Ctx) -> dict[str, Any]:
    s, hw, tr = ctx.s, ctx.s.hardware, ctx.s.training
    d: dict[str, Any] = {}
    P, G, B = s.workload.prompts_per_step, s.workload.group_size, s.workload.responses_per_step
    train_batch = _divide("workload P x G", B, "the optimizer steps per step", _opt_steps(s), "OpenRLHF")
    d["rollout.batch_size"], d["rollout.n_samples_per_prompt"] = P, G
    d["train.batch_size"] = train_batch
    d["train.max_epochs"] = s.algorithm.epochs_per_step
    train_gpus = hw.num_train_gpus
    per_node, nodes = _nodes(ctx, train_gpus, "actor.num_gpus_per_node", 8)
    d["actor.num_nodes"], d["actor.num_gpus_per_node"] = nodes, per_node
    tp = s.engine.tensor_parallel_size
    d["vllm.num_engines"] = s.num_replicas
    d["vllm.tensor_parallel_size"] = tp
    d["vllm.gpu_memory_utilization"] = s.engine.gpu_memory_utilization
    if s.engine.prefix_caching is not None:
        d["vllm.enable_prefix_caching"] = s.engine.prefix_caching
    if s.num_replicas * tp != hw.num_rollout_gpus:
        ctx.notes.append(
            f"engine.replicas {s.num_replicas} x TP {tp} != {hw.num_rollout_gpus} rollout GPUs: OpenRLHF's engines "
            "use vllm.num_engines x vllm.tensor_parallel_size GPUs"
        )
    colocated = hw.placement == "colocated"
    d["train.colocate_all"] = colocated
    is_async = s.schedule.mode == "async"
    d["train.async_enable"] = is_async
    if is_async:
        d["train.async_queue_size"] = s.schedule.max_staleness
        d["train.partial_rollout_enable"] = s.schedule.in_flight_weight_updates
        if s.schedule.streaming:
            ctx.notes.append("schedule.streaming: OpenRLHF's generator finishes a rollout before the next starts")
    ref_with_actor = colocated or bool(ctx.current("train.colocate_actor_ref") is True)
    if s.algorithm.kl_reference and ref_with_actor:  # OpenRLHF asserts equal sizes
        d["ref.num_nodes"], d["ref.num_gpus_per_node"] = nodes, per_node
    if s.algorithm.name == "ppo" and colocated:
        d["critic.num_nodes"], d["critic.num_gpus_per_node"] = nodes, per_node
    if tr.backend == "megatron":
        d["ds.tensor_parallel_size"] = tr.tensor_parallel_size
        d["ds.ring_attn_size"] = tr.context_parallel_size
        if tr.expert_parallel_size > 1:
            ctx.notes.append(f"training.expert_parallel_size {tr.expert_parallel_size}: OpenRLHF has none")
    else:
        d["ds.tensor_parallel_size"] = 1
        d["ds.ring_attn_size"] = 1
    dp = train_gpus // (tr.tensor_parallel_size * tr.context_parallel_size) if tr.backend == "megatron" else train_gpus
    if tr.sequence_packing:
        d["train.dynamic_batch_enable"] = True
        d["ds.packing_samples"] = True
        d["train.max_tokens_per_gpu"] = _packing_tokens(s)
    else:
        d["train.dynamic_batch_enable"] = False
        d["train.micro_batch_size"] = tr.micro_batch_size
        _divide(
            "OpenRLHF train.batch_size",
            train_batch,
            "training.micro_batch_size x data-parallel GPUs",
            tr.micro_batch_size * dp,
            "OpenRLHF (DeepSpeed)",
        )
    if tr.logprob_micro_batch_size is not None:
        d["rollout.micro_batch_size"] = tr.logprob_micro_batch_size
    d["actor.gradient_checkpointing_enable"] = tr.activation_recompute != "none"
    d["ds.adam_offload"] = tr.offload_optimizer
    d["actor.adam.lr"] = _lr(s)
    _common_notes(ctx, "OpenRLHF", asynchronous=True, max_num_seqs=False, pp=False)
    return d


# --------------------------------------------------------------------------------------------------- NeMo RL


def _nemo_rl(ctx: _Ctx) -> dict[str, Any]:
    s, hw, tr = ctx.s, ctx.s.hardware, ctx.s.training
    G_, PO, MG, DT, V, COL, ASYNC = (
        nemo_rl.G,
        nemo_rl.PO,
        nemo_rl.MG,
        nemo_rl.DT,
        nemo_rl.V,
        nemo_rl.COL,
        nemo_rl.ASYNC,
    )
    d: dict[str, Any] = {}
    B = s.workload.responses_per_step
    d[G_ + "num_prompts_per_step"] = s.workload.prompts_per_step
    d[G_ + "num_generations_per_prompt"] = s.workload.group_size
    ds = s.algorithm.dynamic_sampling
    if ds is not None:  # the keep rate is the data's, not a key: the rounds follow from it
        d[G_ + "use_dynamic_sampling"] = True
        d[G_ + "batch_multiplier"] = ds.batch_multiplier
        d[G_ + "dynamic_sampling_max_gen_batches"] = ds.max_gen_batches
    elif ctx.current(G_ + "use_dynamic_sampling"):
        d[G_ + "use_dynamic_sampling"] = False
    gbs = tr.global_batch_size or _divide("workload P x G", B, "the optimizer steps per step", _opt_steps(s), "NeMo RL")
    d[PO + "train_global_batch_size"] = gbs
    if s.algorithm.epochs_per_step > 1:
        ctx.notes.append(f"algorithm.epochs_per_step {s.algorithm.epochs_per_step}: NeMo RL trains each batch once")
    if ctx.current("loss_fn.force_on_policy_ratio") is True and gbs != B:
        d["loss_fn.force_on_policy_ratio"] = False
        ctx.notes.append("loss_fn.force_on_policy_ratio: false (it needs train_global_batch_size == P x G)")
    per_node, nodes = _nodes(ctx, hw.num_gpus, "cluster.gpus_per_node", 8)
    d["cluster.gpus_per_node"], d["cluster.num_nodes"] = per_node, nodes
    if hw.placement == "colocated":
        d[COL + "enabled"] = True
    else:
        d[COL + "enabled"] = False
        rollout = hw.num_rollout_gpus
        if nodes == 1:
            d[COL + "resources.gpus_per_node"] = rollout
            if ctx.current(COL + "resources.num_nodes") not in (None, 1, _MISSING):
                d[COL + "resources.num_nodes"] = 1
        else:
            gen_nodes = _divide(
                "hardware.rollout_gpus",
                rollout,
                "cluster.gpus_per_node (NeMo RL gives generation whole nodes on several nodes)",
                per_node,
                "NeMo RL",
            )
            d[COL + "resources.num_nodes"] = gen_nodes
            d[COL + "resources.gpus_per_node"] = per_node
    is_async = s.schedule.mode == "async"
    d[ASYNC + "enabled"] = is_async
    if is_async:
        d[ASYNC + "max_trajectory_age_steps"] = s.schedule.max_staleness
        d[ASYNC + "in_flight_weight_updates"] = s.schedule.in_flight_weight_updates
        d[V + "async_engine"] = True
        d["loss_fn.use_importance_sampling_correction"] = True
        if not s.schedule.streaming:
            ctx.notes.append("schedule.streaming false: NeMo RL's async GRPO streams rollouts")
    async_engine = is_async or ctx.current(V + "async_engine") is True
    d[V + "tensor_parallel_size"] = s.engine.tensor_parallel_size
    d[V + "gpu_memory_utilization"] = s.engine.gpu_memory_utilization
    vllm_default = (
        nemo_rl.VLLM_ASYNC_ENGINE_MAX_NUM_SEQS
        if async_engine
        else nemo_rl.llm_class_max_num_seqs(
            s.software.framework_version, s.hardware.gpu.name, s.hardware.engine_memory_bytes
        )
    )
    if s.engine.max_num_seqs != vllm_default or ctx.has(nemo_rl.GEN + "vllm_kwargs.max_num_seqs"):
        d[nemo_rl.GEN + "vllm_kwargs.max_num_seqs"] = s.engine.max_num_seqs
    if s.engine.replicas is not None and s.engine.replicas * s.engine.tensor_parallel_size != hw.num_rollout_gpus:
        ctx.notes.append(f"engine.replicas {s.engine.replicas}: NeMo RL runs one engine per TP group of its GPUs")
    megatron = _nemo_backend(ctx)
    d[MG + "enabled"], d[DT + "enabled"] = megatron, not megatron
    if megatron:
        d[MG + "tensor_model_parallel_size"] = tr.tensor_parallel_size
        d[MG + "pipeline_model_parallel_size"] = tr.pipeline_parallel_size
        d[MG + "context_parallel_size"] = tr.context_parallel_size
        d[MG + "expert_model_parallel_size"] = tr.expert_parallel_size
        d[MG + "activation_checkpointing"] = tr.activation_recompute != "none"
        d[MG + "optimizer.lr"] = _lr(s)
    else:
        d[DT + "tensor_parallel_size"] = tr.tensor_parallel_size
        d[DT + "context_parallel_size"] = tr.context_parallel_size
        d[DT + "activation_checkpointing"] = tr.activation_recompute != "none"
        d[PO + "optimizer.kwargs.lr"] = _lr(s)
    d[PO + "train_micro_batch_size"] = tr.micro_batch_size
    d[PO + "sequence_packing.enabled"] = tr.sequence_packing
    if tr.logprob_micro_batch_size is not None:
        d[PO + "logprob_batch_size"] = tr.logprob_micro_batch_size
    _common_notes(ctx, "NeMo RL", asynchronous=True, max_num_seqs=True, pp=True)
    return d


def _nemo_backend(ctx: _Ctx) -> bool:
    """Megatron (True) or DTensor: the original's unless the plan needs the other; without one, the plan's."""
    tr = ctx.s.training
    megatron_only = tr.pipeline_parallel_size > 1 or tr.expert_parallel_size > 1
    if ctx.flat is None:
        return tr.backend == "megatron"
    was_megatron = bool(ctx.current(nemo_rl.MG + "enabled"))
    if tr.backend == "fsdp":
        return False
    if megatron_only:
        return True
    return was_megatron


EMITTERS: dict[str, Callable[[_Ctx], dict[str, Any]]] = {
    "verl": _verl,
    "trl": _trl,
    "openrlhf": _openrlhf,
    "nemo-rl": _nemo_rl,
}
