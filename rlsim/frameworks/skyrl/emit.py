"""The SkyRL keys that express a planned scenario: the inverse of :mod:`rlsim.frameworks.skyrl.mapping`
(rlsim.frameworks.emit diffs them against the original; without one, every key with SkyRL's default from
``defaults.yaml`` beside the scenario's)."""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.adapter import EmitContext
from rlsim.frameworks.basic import keep_original, with_defaults
from rlsim.frameworks.common import node_layout, note_unexpressed, optimizer_steps_per_pass, plan_divisible, planned_lr
from rlsim.frameworks.skyrl.mapping import ASYNC_ENTRY, DEFAULTS, FULLY_ASYNC_ENTRY, G_, PL


def emit_keys(ctx: EmitContext) -> dict[str, Any]:
    """The SkyRL keys for ``ctx.scenario``, with notes in ``ctx.notes``."""
    s = ctx.scenario
    P, G = s.workload.prompts_per_step, s.workload.group_size
    mini = plan_divisible(
        "workload.prompts_per_step", P, "the optimizer steps per step", optimizer_steps_per_pass(s), "SkyRL"
    )
    hw, tp = s.hardware, s.engine.tensor_parallel_size
    engines = plan_divisible("the rollout GPUs", hw.num_rollout_gpus, "engine.tensor_parallel_size", tp, "SkyRL")
    per_node, nodes = node_layout(ctx, hw.num_train_gpus, PL + "policy_num_gpus_per_node", 8)
    d: dict[str, Any] = {
        "trainer.train_batch_size": P,
        G_ + "n_samples_per_prompt": G,
        "trainer.policy_mini_batch_size": mini,
        "trainer.update_epochs_per_batch": s.algorithm.epochs_per_step,
        PL + "colocate_all": hw.placement == "colocated",
        PL + "policy_num_nodes": nodes,
        PL + "policy_num_gpus_per_node": per_node,
        G_ + "num_inference_engines": engines,
        G_ + "inference_engine_data_parallel_size": 1,
        G_ + "inference_engine_tensor_parallel_size": tp,
        G_ + "backend": "sglang" if s.engine.behaviour.startswith("sglang") else "vllm",
        G_ + "gpu_memory_utilization": s.engine.gpu_memory_utilization,
        G_ + "max_num_seqs": s.engine.max_num_seqs,
        "trainer.max_prompt_length": s.workload.max_prompt_tokens,
        G_ + "sampling_params.max_generate_length": s.workload.max_response_tokens,
        "trainer.policy.model.path": s.model.hf_id or s.model.name,
        "trainer.policy.optimizer_config.lr": planned_lr(s),
        "trainer.algorithm.use_kl_loss": s.algorithm.kl_reference,
    }
    if s.algorithm.name == "ppo":
        d["trainer.algorithm.advantage_estimator"] = "gae"
    if s.schedule.mode == "fully-async":
        d["trainer.train_batch_size"] = d["trainer.policy_mini_batch_size"] = P
        d["trainer.fully_async.max_staleness_steps"] = s.schedule.staleness
        ctx.notes.append(f"schedule.mode fully-async: launch -m {FULLY_ASYNC_ENTRY}")
    elif s.schedule.mode == "async":
        ctx.notes.append(f"schedule.mode async: launch -m {ASYNC_ENTRY} (one-step off-policy)")
    keep_original(ctx, d, "trainer.policy.model.path", lambda x: x.model.name)
    note_unexpressed(ctx, "SkyRL", asynchronous=True, max_num_seqs=True, pp=True)
    return with_defaults(ctx, DEFAULTS, d)
