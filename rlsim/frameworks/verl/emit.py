"""The verl keys that express a planned scenario: the inverse of :mod:`rlsim.frameworks.verl.mapping`
(rlsim.frameworks.emit diffs them against the original config)."""

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
from rlsim.frameworks.verl.mapping import A, M, R


def emit_keys(ctx: EmitContext) -> dict[str, Any]:
    """The verl keys that express the planned scenario ``ctx.scenario``, with notes in ``ctx.notes``."""
    s = ctx.scenario
    d: dict[str, Any] = {}
    P, G = s.workload.prompts_per_step, s.workload.group_size
    steps = optimizer_steps_per_pass(s)
    mini = plan_divisible(
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
    per_node, nnodes = node_layout(ctx, gpus, "trainer.n_gpus_per_node", 8)
    d["trainer.n_gpus_per_node"], d["trainer.nnodes"] = per_node, nnodes
    tr = s.training
    if tr.sequence_packing:
        d[A + "use_dynamic_bsz"] = True
        d[A + "ppo_max_token_len_per_gpu"] = packing_token_budget(s)
    else:
        d[A + "use_dynamic_bsz"] = False
        per_rank = plan_divisible(f"{A}ppo_mini_batch_size x {R}n ({mini} x {G})", mini * G, "the GPUs", gpus, "verl")
        plan_divisible("verl's per-GPU mini-batch", per_rank, "training.micro_batch_size", tr.micro_batch_size, "verl")
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
    d[A + "optim.lr"] = planned_lr(s)
    d[M + "enable_gradient_checkpointing"] = tr.activation_recompute != "none"
    if tr.backend == "megatron":
        ctx.notes.append(
            f"training.backend megatron (TP {tr.tensor_parallel_size}, PP {tr.pipeline_parallel_size}): verl's "
            "Megatron workers are not mapped by rlsim; emitted for FSDP"
        )
    else:
        d[A + "fsdp_config.param_offload"] = tr.swap_params
        d[A + "fsdp_config.optimizer_offload"] = tr.swap_optimizer
        if tr.offload_params or tr.offload_optimizer:  # FSDP2's CPUOffloadPolicy: CPU Adam
            d[A + "strategy"] = "fsdp2"
            d[A + "fsdp_config.offload_policy"] = True
        d[M + "use_remove_padding"] = not tr.pad_to_cap
        if tr.fsdp_shard_size is not None:
            d[A + "fsdp_config.fsdp_size"] = tr.fsdp_shard_size
        if not tr.reshard_after_forward:
            d[A + "fsdp_config.reshard_after_forward"] = False
        if tr.ulysses_sequence_parallel_size > 1:
            d[A + "ulysses_sequence_parallel_size"] = tr.ulysses_sequence_parallel_size
        if tr.sequence_packing and tr.logprob_packing_tokens is not None:
            d[R + "log_prob_max_token_len_per_gpu"] = tr.logprob_packing_tokens
        if tr.zero_stage < 3:
            ctx.notes.append(f"training.zero_stage {tr.zero_stage}: verl's FSDP shards fully; emitted as FSDP")
    note_unexpressed(ctx, "verl", asynchronous=False, max_num_seqs=True, pp=tr.backend == "megatron")
    return d
