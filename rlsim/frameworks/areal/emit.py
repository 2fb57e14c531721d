"""The AReaL keys that express a planned scenario: the inverse of :mod:`rlsim.frameworks.areal.mapping`
(rlsim.frameworks.emit diffs them against the original; without one, every key with AReaL's default from
``defaults.yaml`` beside the scenario's)."""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.adapter import EmitContext
from rlsim.frameworks.areal.mapping import DEFAULTS
from rlsim.frameworks.basic import keep_original, with_defaults
from rlsim.frameworks.common import note_unexpressed, optimizer_steps_per_pass, plan_divisible, planned_lr


def emit_keys(ctx: EmitContext) -> dict[str, Any]:
    """The AReaL keys for ``ctx.scenario``, with notes in ``ctx.notes``."""
    s = ctx.scenario
    hw, tp = s.hardware, s.engine.tensor_parallel_size
    if hw.placement == "colocated":
        ctx.notes.append(f"hardware.placement colocated: AReaL decouples rollout and training; {hw.num_gpus} each")
    replicas = plan_divisible("the rollout GPUs", hw.num_rollout_gpus, "engine.tensor_parallel_size", tp, "AReaL")
    sglang = s.engine.behaviour.startswith("sglang")
    engine = "sglang" if sglang else "vllm"
    d: dict[str, Any] = {
        "train_dataset.batch_size": s.workload.prompts_per_step,
        "train_dataset.max_length": s.workload.max_prompt_tokens,
        "gconfig.n_samples": s.workload.group_size,
        "gconfig.max_new_tokens": s.workload.max_response_tokens,
        "rollout.backend": f"{engine}:d{replicas}p1t{tp}",
        "actor.backend": f"fsdp:d{hw.num_train_gpus}p1t1",
        "rollout.max_head_offpolicyness": s.schedule.max_staleness if s.schedule.mode == "async" else 0,
        "actor.path": s.model.hf_id or s.model.name,
        "actor.optimizer.lr": planned_lr(s),
        "actor.ppo_n_minibatches": optimizer_steps_per_pass(s),
        f"{engine}.{'mem_fraction_static' if sglang else 'gpu_memory_utilization'}": s.engine.gpu_memory_utilization,
        f"{engine}.{'max_running_requests' if sglang else 'max_num_seqs'}": s.engine.max_num_seqs,
    }
    if s.schedule.mode == "async" and s.learning.staleness_loss != "stretch":
        d["actor.use_decoupled_loss"] = s.learning.staleness_loss == "decoupled_ppo"
    if not s.algorithm.kl_reference:
        d["actor.kl_ctl"] = 0.0
    elif not ctx.has("actor.kl_ctl"):
        ctx.notes.append(
            "algorithm.kl_reference: give AReaL a ref section (the reference runs with kl_ctl > 0 and one)"
        )
    if hw.gpus_per_node:
        d["cluster.n_gpus_per_node"] = hw.gpus_per_node
    if ctx.has("allocation_mode") and not ctx.has("rollout.backend"):  # the original's deprecated form
        d["allocation_mode"] = f"{d.pop('rollout.backend')}+{d.pop('actor.backend').partition(':')[2]}"
    keep_original(ctx, d, "actor.path", lambda x: x.model.name)
    keep_original(ctx, d, "train_dataset.max_length", lambda x: x.workload.max_prompt_tokens)
    note_unexpressed(ctx, "AReaL", asynchronous=True, max_num_seqs=True, pp=True)
    return with_defaults(ctx, DEFAULTS, d)
