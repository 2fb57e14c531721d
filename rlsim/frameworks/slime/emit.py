"""The slime flags that express a planned scenario: the inverse of :mod:`rlsim.frameworks.slime.mapping`
(rlsim.frameworks.emit diffs them against the original launch; without one, every flag with slime's documented
default from ``defaults.yaml`` beside the scenario's)."""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.adapter import EmitContext
from rlsim.frameworks.basic import keep_original, with_defaults
from rlsim.frameworks.common import node_layout, note_unexpressed, optimizer_steps_per_pass, plan_divisible, planned_lr
from rlsim.frameworks.slime.mapping import ASYNC_ENTRY, DEFAULTS


def emit_keys(ctx: EmitContext) -> dict[str, Any]:
    """The slime flags for ``ctx.scenario``, with notes in ``ctx.notes``."""
    s = ctx.scenario
    P, G = s.workload.prompts_per_step, s.workload.group_size
    steps = optimizer_steps_per_pass(s)
    gbs = plan_divisible(
        "P x G", P * G, "the optimizer steps per step (global-batch-size counts samples)", steps, "slime"
    )
    hw = s.hardware
    d: dict[str, Any] = {
        "rollout-batch-size": P,
        "n-samples-per-prompt": G,
        "global-batch-size": gbs,
        "rollout-num-gpus-per-engine": s.engine.tensor_parallel_size,
        "rollout-max-prompt-len": s.workload.max_prompt_tokens,
        "rollout-max-response-len": s.workload.max_response_tokens,
        "sglang-mem-fraction-static": s.engine.gpu_memory_utilization,
        "sglang-server-concurrency": s.engine.max_num_seqs,
        "lr": planned_lr(s),
        "use-kl-loss": s.algorithm.kl_reference,
        "advantage-estimator": "ppo" if s.algorithm.name == "ppo" else "grpo",
        "hf-checkpoint": s.model.hf_id or s.model.name,
        "colocate": hw.placement == "colocated",
    }
    per_node, nodes = node_layout(ctx, hw.num_train_gpus, "actor-num-gpus-per-node", 8)
    d["actor-num-gpus-per-node"], d["actor-num-nodes"] = per_node, nodes
    if hw.placement == "separate":
        d["rollout-num-gpus"] = hw.num_rollout_gpus
    if s.schedule.mode == "async":
        d["update-weights-interval"] = s.schedule.max_staleness
        ctx.notes.append(f"schedule.mode async: launch {ASYNC_ENTRY} (train.py alternates generation and training)")
    keep_original(ctx, d, "hf-checkpoint", lambda x: x.model.name)
    keep_original(ctx, d, "rollout-max-prompt-len", lambda x: x.workload.max_prompt_tokens)
    note_unexpressed(ctx, "slime", asynchronous=True, max_num_seqs=True, pp=True)
    return with_defaults(ctx, DEFAULTS, d)
