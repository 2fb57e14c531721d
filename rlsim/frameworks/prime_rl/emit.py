"""The prime-rl keys that express a planned scenario: the inverse of :mod:`rlsim.frameworks.prime_rl.mapping`
(rlsim.frameworks.emit diffs them against the original; without one, every key with prime-rl's default from
``defaults.yaml`` beside the scenario's). The patch is written as TOML (the adapter's ``render_patch``)."""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.adapter import EmitContext
from rlsim.frameworks.basic import keep_original, with_defaults
from rlsim.frameworks.common import note_unexpressed, planned_lr
from rlsim.frameworks.prime_rl.mapping import DEFAULTS, DP, ORC, V


def emit_keys(ctx: EmitContext) -> dict[str, Any]:
    """The prime-rl keys for ``ctx.scenario``, with notes in ``ctx.notes``."""
    s = ctx.scenario
    P, G = s.workload.prompts_per_step, s.workload.group_size
    hw = s.hardware
    if hw.placement == "colocated":
        ctx.notes.append(
            f"hardware.placement colocated: prime-rl always runs inference apart; emitted as {hw.num_gpus} + "
            f"{hw.num_gpus} GPUs"
        )
    if s.schedule.mode != "async" or s.schedule.max_staleness != 1:
        ctx.notes.append(f"schedule.mode {s.schedule.mode}: prime-rl runs one step ahead (staleness 1), always")
    if s.optimizer_steps_per_step != 1:
        ctx.notes.append(f"{s.optimizer_steps_per_step} optimizer steps per step: prime-rl takes one per batch")
    rollout, train = hw.num_rollout_gpus, hw.num_train_gpus
    per_node = hw.gpus_per_node or int(DEFAULTS[DP + "gpus_per_node"])
    d: dict[str, Any] = {
        ORC + "batch_size": P * G,
        ORC + "group_size": G,
        ORC + "seq_len": s.workload.max_prompt_tokens + s.workload.max_response_tokens,
        ORC + "train.sampling.max_completion_tokens": s.workload.max_response_tokens,
        V + "tensor_parallel_size": s.engine.tensor_parallel_size,
        V + "gpu_memory_utilization": s.engine.gpu_memory_utilization,
        V + "max_num_seqs": s.engine.max_num_seqs,
        "model.name": s.model.hf_id or s.model.name,
        "trainer.optim.lr": planned_lr(s),
    }
    if rollout + train <= per_node:
        d.update({DP + "type": "single_node", DP + "num_train_gpus": train, DP + "num_infer_gpus": rollout})
    elif rollout % per_node or train % per_node:
        ctx.notes.append(f"{rollout} + {train} GPUs: not whole {per_node}-GPU nodes; prime-rl's multi_node needs them")
    else:
        d.update({DP + "type": "multi_node", DP + "gpus_per_node": per_node})
        d.update({DP + "num_train_nodes": train // per_node, DP + "num_infer_nodes": rollout // per_node})
        d[DP + "num_infer_replicas"] = 1
    keep_original(ctx, d, "model.name", lambda x: x.model.name)
    keep_original(ctx, d, ORC + "seq_len", lambda x: x.workload.max_prompt_tokens + x.workload.max_response_tokens)
    note_unexpressed(ctx, "prime-rl", asynchronous=True, max_num_seqs=True, pp=True)
    out = with_defaults(ctx, DEFAULTS, d)
    if "model.name" in out:  # the shared name wins over the trainer's (rl.py:281)
        out.pop("trainer.model.name", None)
    if out.get(DP + "type") == "single_node":  # multi_node's keys are not single_node's (pydantic refuses them)
        for key in (DP + "num_infer_replicas",):
            out.pop(key, None)
    return out
