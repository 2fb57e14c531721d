"""The OpenRLHF ``train_ppo_ray`` arguments that express a planned scenario: the inverse of
:mod:`rlsim.frameworks.openrlhf.mapping` (rlsim.frameworks.emit diffs them against the original arguments).
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.adapter import EmitContext
from rlsim.frameworks.common import (
    node_layout,
    note_unexpressed,
    optimizer_steps_per_pass,
    packing_token_budget,
    plan_divisible,
    planned_lr,
)


def emit_keys(ctx: EmitContext) -> dict[str, Any]:
    """The OpenRLHF arguments that express the planned scenario ``ctx.scenario``, with notes in ``ctx.notes``."""
    s, hw, tr = ctx.scenario, ctx.scenario.hardware, ctx.scenario.training
    d: dict[str, Any] = {}
    P, G, B = s.workload.prompts_per_step, s.workload.group_size, s.workload.responses_per_step
    train_batch = plan_divisible(
        "workload P x G", B, "the optimizer steps per step", optimizer_steps_per_pass(s), "OpenRLHF"
    )
    d["rollout.batch_size"], d["rollout.n_samples_per_prompt"] = P, G
    d["train.batch_size"] = train_batch
    d["train.max_epochs"] = s.algorithm.epochs_per_step
    train_gpus = hw.num_train_gpus
    per_node, nodes = node_layout(ctx, train_gpus, "actor.num_gpus_per_node", 8)
    d["actor.num_nodes"], d["actor.num_gpus_per_node"] = nodes, per_node
    tp = s.engine.tensor_parallel_size
    d["vllm.num_engines"] = s.num_replicas
    d["vllm.tensor_parallel_size"] = tp
    d["vllm.gpu_memory_utilization"] = s.engine.gpu_memory_utilization
    if s.engine.prefix_caching is not None:
        d["vllm.enable_prefix_caching"] = s.engine.prefix_caching
    d["vllm.enforce_eager"] = s.engine.enforce_eager
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
        d["train.max_tokens_per_gpu"] = packing_token_budget(s)
    else:
        d["train.dynamic_batch_enable"] = False
        d["train.micro_batch_size"] = tr.micro_batch_size
        d["ds.packing_samples"] = tr.remove_padding
        plan_divisible(
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
    if tr.backend == "fsdp":
        d["ds.zero_stage"] = tr.zero_stage
        if tr.zero_stage < 3:
            d["ds.overlap_comm"] = tr.overlap_communication
    d["actor.adam.lr"] = planned_lr(s)
    note_unexpressed(ctx, "OpenRLHF", asynchronous=True, max_num_seqs=False, pp=False)
    return d
