"""The ROLL keys that express a planned scenario: the inverse of :mod:`rlsim.frameworks.roll.mapping`
(rlsim.frameworks.emit diffs them against the original; without one, every key with ROLL's default from
``defaults.yaml`` beside the scenario's). Device mappings are written as ``list(range(a,b))``."""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.adapter import MISSING, EmitContext
from rlsim.frameworks.basic import keep_original, with_defaults
from rlsim.frameworks.common import note_unexpressed, optimizer_steps_per_pass, plan_divisible, planned_lr
from rlsim.frameworks.roll.mapping import AI, AT, DEFAULTS, SC, TA, TC, devices


def _current(ctx: EmitContext, key: str) -> int:
    value = ctx.current(key)
    return int(value) if value is not MISSING and value else int(DEFAULTS.get(key) or 1)


def _same_devices(ctx: EmitContext, key: str, count: int) -> bool:
    """Whether the original's mapping of ``key`` already names ``count`` devices (kept as written then)."""
    if not ctx.has(key):
        return False
    return len(devices(ctx.current(key), key) or ()) == count


def emit_keys(ctx: EmitContext) -> dict[str, Any]:
    """The ROLL keys for ``ctx.scenario``, with notes in ``ctx.notes``."""
    s = ctx.scenario
    P, G = s.workload.prompts_per_step, s.workload.group_size
    hw, tp = s.hardware, s.engine.tensor_parallel_size
    train, rollout = hw.num_train_gpus, hw.num_rollout_gpus
    if hw.placement == "colocated" and s.engine.replicas:
        rollout = s.engine.replicas * tp
    split = _current(ctx, TC + "tensor_model_parallel_size") * _current(ctx, TC + "pipeline_model_parallel_size")
    dp = plan_divisible(
        "the train GPUs", train, "TP x PP x CP", split * _current(ctx, TC + "context_parallel_size"), "ROLL"
    )
    steps = optimizer_steps_per_pass(s)
    per_step = plan_divisible("P x G", P * G, "the optimizer steps per step", steps, "ROLL")
    per_rank = plan_divisible("the samples per optimizer step", per_step, "the data-parallel ranks", dp, "ROLL")
    micro = _current(ctx, TA + "per_device_train_batch_size")
    if per_rank % micro:
        micro = 1
    d: dict[str, Any] = {
        "rollout_batch_size": P,
        "num_return_sequences_in_group": G,
        "prompt_length": s.workload.max_prompt_tokens,
        "response_length": s.workload.max_response_tokens,
        "async_generation_ratio": s.schedule.max_staleness if s.schedule.mode == "async" else 0,
        "ppo_epochs": s.algorithm.epochs_per_step,
        "adv_estimator": "gae" if s.algorithm.name == "ppo" else "grpo",
        "pretrain": s.model.hf_id or s.model.name,
        AI + "strategy_args.strategy_name": "sglang" if s.engine.behaviour.startswith("sglang") else "vllm",
        SC + "tensor_parallel_size": tp,
        TA + "learning_rate": planned_lr(s),
        TA + "per_device_train_batch_size": micro,
        TA + "gradient_accumulation_steps": per_rank // micro,
    }
    d[
        SC + ("mem_fraction_static" if d[AI + "strategy_args.strategy_name"] == "sglang" else "gpu_memory_utilization")
    ] = s.engine.gpu_memory_utilization
    first = 0 if hw.placement == "colocated" else train
    d[AT + "device_mapping"] = f"list(range(0,{train}))"
    d[AI + "device_mapping"] = f"list(range({first},{first + rollout}))"
    if s.algorithm.kl_reference:
        d["reference.device_mapping"] = d[AT + "device_mapping"]
    else:
        d.update({"init_kl_coef": 0.0, "use_kl_loss": False, "enable_reference": False})
    for key, count in ((AT + "device_mapping", train), (AI + "device_mapping", rollout)):
        if _same_devices(ctx, key, count) and ctx.base is not None and ctx.base.hardware == s.hardware:
            d[key] = ctx.current(key)
    if ctx.has("reference.device_mapping") and s.algorithm.kl_reference:
        d["reference.device_mapping"] = ctx.current("reference.device_mapping")
    keep_original(ctx, d, "pretrain", lambda x: x.model.name)
    keep_original(ctx, d, "adv_estimator", lambda x: x.algorithm.name)  # reinforce, grpo, ...: all critic-free
    note_unexpressed(ctx, "ROLL", asynchronous=True, max_num_seqs=False, pp=True)
    return with_defaults(ctx, DEFAULTS, d)
