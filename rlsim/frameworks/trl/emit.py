"""The TRL GRPOConfig keys and launch facts that express a planned scenario: the inverse of
:mod:`rlsim.frameworks.trl.mapping` (rlsim.frameworks.emit diffs them against the original config and moves the
launch facts to the commands that take them)."""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.adapter import EmitContext
from rlsim.frameworks.common import note_unexpressed, optimizer_steps_per_pass, plan_divisible, planned_lr
from rlsim.frameworks.trl.mapping import GA, GEN, PDB, SPG


def emit_keys(ctx: EmitContext) -> dict[str, Any]:
    """The GRPOConfig keys (and launch facts) that express the planned scenario ``ctx.scenario``, with notes in
    ``ctx.notes``."""
    s, hw = ctx.scenario, ctx.scenario.hardware
    d: dict[str, Any] = {}
    procs = hw.num_train_gpus
    micro = s.training.micro_batch_size
    B = s.workload.responses_per_step
    spg = plan_divisible("workload P x G", B, f"{PDB} x num_processes", micro * procs, "TRL")
    ga = plan_divisible(SPG, spg, "the optimizer steps per step", optimizer_steps_per_pass(s), "TRL")
    d["num_processes"] = procs
    d[PDB] = micro
    d[GA] = ga
    d["num_generations"] = s.workload.group_size
    d["num_iterations"] = s.algorithm.epochs_per_step
    if ctx.has(GEN):
        d[GEN] = B
    elif ctx.has(SPG) or spg != ga:
        d[SPG] = spg
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
    d["learning_rate"] = planned_lr(s)
    d["gradient_checkpointing"] = s.training.activation_recompute != "none"
    tr = s.training
    if tr.backend == "megatron":
        ctx.notes.append(
            f"training.backend megatron (TP {tr.tensor_parallel_size}, PP {tr.pipeline_parallel_size}): TRL trains "
            "data-parallel (DeepSpeed ZeRO / FSDP)"
        )
    if tr.sequence_packing:
        ctx.notes.append("training.sequence_packing: TRL's GRPOTrainer pads its micro-batches (as rlsim maps it)")
    note_unexpressed(ctx, "TRL", asynchronous=False, max_num_seqs=False, pp=True)
    return d
