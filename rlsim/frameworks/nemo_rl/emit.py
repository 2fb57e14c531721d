"""The NeMo RL recipe keys that express a planned scenario: the inverse of :mod:`rlsim.frameworks.nemo_rl.mapping`
(rlsim.frameworks.emit diffs the keys against the original recipe).
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.adapter import MISSING, EmitContext
from rlsim.frameworks.common import node_layout, note_unexpressed, optimizer_steps_per_pass, plan_divisible, planned_lr
from rlsim.frameworks.nemo_rl.mapping import ASYNC, COL, DT, GEN, MG, PO, G, V
from rlsim.frameworks.nemo_rl.recipe import VLLM_ASYNC_ENGINE_MAX_NUM_SEQS, llm_class_max_num_seqs


def emit_keys(ctx: EmitContext) -> dict[str, Any]:
    """The NeMo RL recipe keys that express the planned scenario (rlsim.frameworks.emit diffs them against the
    original recipe)."""
    d: dict[str, Any] = {}
    _emit_batch(ctx, d)
    _emit_placement(ctx, d)
    _emit_generation(ctx, d)
    _emit_training(ctx, d)
    note_unexpressed(ctx, "NeMo RL", asynchronous=True, max_num_seqs=True, pp=True)
    return d


def _emit_batch(ctx: EmitContext, d: dict[str, Any]) -> None:
    """Adds to ``d`` the prompts and generations per step, dynamic sampling and the global batch."""
    s, tr = ctx.scenario, ctx.scenario.training
    B = s.workload.responses_per_step
    d[G + "num_prompts_per_step"] = s.workload.prompts_per_step
    d[G + "num_generations_per_prompt"] = s.workload.group_size
    ds = s.algorithm.dynamic_sampling
    if ds is not None:  # the keep rate is the data's, not a key: the rounds follow from it
        d[G + "use_dynamic_sampling"] = True
        d[G + "batch_multiplier"] = ds.batch_multiplier
        d[G + "dynamic_sampling_max_gen_batches"] = ds.max_gen_batches
    elif ctx.current(G + "use_dynamic_sampling"):
        d[G + "use_dynamic_sampling"] = False
    gbs = tr.global_batch_size or plan_divisible(
        "workload P x G", B, "the optimizer steps per step", optimizer_steps_per_pass(s), "NeMo RL"
    )
    d[PO + "train_global_batch_size"] = gbs
    if s.algorithm.epochs_per_step > 1:
        ctx.notes.append(f"algorithm.epochs_per_step {s.algorithm.epochs_per_step}: NeMo RL trains each batch once")
    if ctx.current("loss_fn.force_on_policy_ratio") is True and gbs != B:
        d["loss_fn.force_on_policy_ratio"] = False
        ctx.notes.append("loss_fn.force_on_policy_ratio: false (it needs train_global_batch_size == P x G)")


def _emit_placement(ctx: EmitContext, d: dict[str, Any]) -> None:
    """Adds to ``d`` the cluster's nodes and whether generation is colocated or has resources of its own."""
    hw = ctx.scenario.hardware
    per_node, nodes = node_layout(ctx, hw.num_gpus, "cluster.gpus_per_node", 8)
    d["cluster.gpus_per_node"], d["cluster.num_nodes"] = per_node, nodes
    if hw.placement == "colocated":
        d[COL + "enabled"] = True
    else:
        d[COL + "enabled"] = False
        rollout = hw.num_rollout_gpus
        if nodes == 1:
            d[COL + "resources.gpus_per_node"] = rollout
            if ctx.current(COL + "resources.num_nodes") not in (None, 1, MISSING):
                d[COL + "resources.num_nodes"] = 1
        else:
            gen_nodes = plan_divisible(
                "hardware.rollout_gpus",
                rollout,
                "cluster.gpus_per_node (NeMo RL gives generation whole nodes on several nodes)",
                per_node,
                "NeMo RL",
            )
            d[COL + "resources.num_nodes"] = gen_nodes
            d[COL + "resources.gpus_per_node"] = per_node


def _emit_generation(ctx: EmitContext, d: dict[str, Any]) -> None:
    """Adds to ``d`` async GRPO's keys and the vLLM engine's (max_num_seqs where it differs from vLLM's default)."""
    s, hw = ctx.scenario, ctx.scenario.hardware
    is_async = s.schedule.mode == "async"
    d[ASYNC + "enabled"] = is_async
    if is_async:
        d[ASYNC + "max_trajectory_age_steps"] = s.schedule.max_staleness
        d[ASYNC + "in_flight_weight_updates"] = s.schedule.in_flight_weight_updates
        d[V + "async_engine"] = True
        d["loss_fn.use_importance_sampling_correction"] = True
        if not s.schedule.streaming:
            ctx.notes.append("schedule.streaming false: NeMo RL's async GRPO streams rollouts")
        if s.schedule.collector != "prompt_groups":
            ctx.notes.append(
                "schedule.collector batches: NeMo RL's async GRPO collects prompt groups, P x k in flight "
                "(rlsim.run.collector); its step time can differ from this scenario's"
            )
    async_engine = is_async or ctx.current(V + "async_engine") is True
    d[V + "tensor_parallel_size"] = s.engine.tensor_parallel_size
    d[V + "gpu_memory_utilization"] = s.engine.gpu_memory_utilization
    vllm_default = (
        VLLM_ASYNC_ENGINE_MAX_NUM_SEQS
        if async_engine
        else llm_class_max_num_seqs(s.software.framework_version, s.hardware.gpu.name, s.hardware.engine_memory_bytes)
    )
    if s.engine.max_num_seqs != vllm_default or ctx.has(GEN + "vllm_kwargs.max_num_seqs"):
        d[GEN + "vllm_kwargs.max_num_seqs"] = s.engine.max_num_seqs
    if s.engine.replicas is not None and s.engine.replicas * s.engine.tensor_parallel_size != hw.num_rollout_gpus:
        ctx.notes.append(f"engine.replicas {s.engine.replicas}: NeMo RL runs one engine per TP group of its GPUs")


def _emit_training(ctx: EmitContext, d: dict[str, Any]) -> None:
    """Adds to ``d`` the Megatron or DTensor policy's layout, recomputation, learning rate and micro-batches."""
    s, tr = ctx.scenario, ctx.scenario.training
    megatron = _nemo_backend(ctx)
    d[MG + "enabled"], d[DT + "enabled"] = megatron, not megatron
    if megatron:
        d[MG + "tensor_model_parallel_size"] = tr.tensor_parallel_size
        d[MG + "pipeline_model_parallel_size"] = tr.pipeline_parallel_size
        d[MG + "context_parallel_size"] = tr.context_parallel_size
        d[MG + "expert_model_parallel_size"] = tr.expert_parallel_size
        d[MG + "activation_checkpointing"] = tr.activation_recompute != "none"
        d[MG + "optimizer.lr"] = planned_lr(s)
    else:
        d[DT + "tensor_parallel_size"] = tr.tensor_parallel_size
        d[DT + "context_parallel_size"] = tr.context_parallel_size
        d[DT + "activation_checkpointing"] = tr.activation_recompute != "none"
        d[PO + "optimizer.kwargs.lr"] = planned_lr(s)
    d[PO + "train_micro_batch_size"] = tr.micro_batch_size
    d[PO + "sequence_packing.enabled"] = tr.sequence_packing
    if tr.logprob_micro_batch_size is not None:
        d[PO + "logprob_batch_size"] = tr.logprob_micro_batch_size


def _nemo_backend(ctx: EmitContext) -> bool:
    """Megatron (True) or DTensor: the original's unless the plan needs the other; without one, the plan's."""
    tr = ctx.scenario.training
    megatron_only = tr.pipeline_parallel_size > 1 or tr.expert_parallel_size > 1
    if ctx.flat is None:
        return tr.backend == "megatron"
    was_megatron = bool(ctx.current(MG + "enabled"))
    if tr.backend == "fsdp":
        return False
    if megatron_only:
        return True
    return was_megatron
