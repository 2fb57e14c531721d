"""NeMo RL's per-step metrics -> rlsim run-log fields.

Sources: ``nemo_rl/algorithms/grpo.py`` (``grpo_train``: ``timer.time`` names ``total_step_time``,
``prepare_for_generation`` (the refit), ``generation``, ``reward_calculation``, ``data_processing``,
``logprob_inference_prep``, ``policy_and_reference_logprobs``, ``training_prep``, ``policy_training``,
``checkpointing``; validation runs *inside* ``total_step_time``; logged with prefixes ``train``, ``timing/train``,
``validation``, ``timing/validation``) read via code search of NeMo RL forks; NVIDIA-NeMo/RL
``docs/performance-summary.md`` (step time = training + generation + policy logprobs + refit).

  ======================================================  ==========================================
  ``timing/train/generation``                              rollout
  ``timing/train/reward_calculation``                      reward
  ``timing/train/policy_and_reference_logprobs``           old_logprob and ref_logprob, half each (the same
                                                           tokens through same-size models)
  ``timing/train/prepare_for_generation``                  weight_sync (refit / wake-up)
  ``timing/train/policy_training``                         train_actor
  ``timing/validation/total_validation_time``              eval
  ``timing/train/checkpointing``                           checkpoint_s (a save step's write: a run overhead,
                                                           subtracted from the step like validation)
  ``timing/train/total_step_time`` (required)              step time (validation subtracted when nested)
  ``train/reward`` / ``train/lr`` / ``validation/accuracy``  reward_mean / lr / eval_metric
  responses                                                ``train/total_num_tokens / (train/mean_prompt_length
                                                           + train/mean_gen_tokens_per_sample)``
  ======================================================  ==========================================
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.logs.core import (
    Format,
    Mapped,
    first,
    is_number,
    lengths_and_count,
    need,
    nested,
    opt,
    step_without_eval,
)
from rlsim.phases import Phase

STEP_KEYS = ("step", "_step")  # NeMo RL passes its trainer step to wandb
STEP_TIMER = "timing/train/total_step_time"
EVAL_TIMER = "timing/validation/total_validation_time"  # inside the step timer
# timer -> the phases it is read into, in equal shares
PHASES: dict[str, tuple[Phase, ...]] = {
    "timing/train/generation": (Phase.ROLLOUT,),
    "timing/train/reward_calculation": (Phase.REWARD,),
    "timing/train/policy_and_reference_logprobs": (Phase.OLD_LOGPROB, Phase.REF_LOGPROB),
    "timing/train/policy_logprobs": (Phase.OLD_LOGPROB,),
    "timing/train/reference_logprobs": (Phase.REF_LOGPROB,),
    "timing/train/prepare_for_generation": (Phase.WEIGHT_SYNC,),
    "timing/train/prepare_for_generation/total": (Phase.WEIGHT_SYNC,),  # when the refit is timed in parts
    "timing/train/policy_training": (Phase.TRAIN_ACTOR,),
}
# top-level timers of the step that are not phases
OTHER_TIMERS = (
    "timing/train/data_processing",
    "timing/train/logprob_inference_prep",
    "timing/train/training_prep",
)
# a save step's checkpoint write, timed inside total_step_time (grpo.py saves at multiples of
# checkpointing.save_period): read as checkpoint_s, a run overhead (rlsim.run.overheads), not a step phase
CHECKPOINT_TIMER = "timing/train/checkpointing"
# run-log field -> the log keys it is read from, the first present wins
FIELDS: dict[str, tuple[str, ...]] = {
    "reward_mean": ("train/reward",),
    "lr": ("train/lr",),
}
EVAL_METRIC = "validation/accuracy"
MEAN_PROMPT = "train/mean_prompt_length"
MEAN_RESPONSE = "train/mean_gen_tokens_per_sample"
TOTAL_TOKENS = "train/total_num_tokens"  # gives the response count


def eval_metric(row: dict[str, Any]) -> float | None:
    return opt(row, EVAL_METRIC) if is_number(row.get(EVAL_METRIC)) else None


def map_row(row: dict[str, Any]) -> Mapped:
    used = {STEP_TIMER}
    step = need(row, STEP_TIMER)
    timing: dict[str, float] = {}
    for key, phases in PHASES.items():
        if key == "timing/train/prepare_for_generation/total" and "timing/train/prepare_for_generation" in row:
            continue
        if key in row:
            sec = need(row, key)
            used.add(key)
            for phase in phases:
                timing[phase.value] = timing.get(phase.value, 0.0) + sec / len(phases)
    others = sum(timing.values()) + sum(need(row, k) for k in OTHER_TIMERS if k in row)
    save = need(row, CHECKPOINT_TIMER) if CHECKPOINT_TIMER in row else None
    if save is not None:
        used.add(CHECKPOINT_TIMER)
    step_s = step_without_eval(row, step, timing, others + (save or 0.0), EVAL_TIMER, used)
    if save is not None and nested(step_s, save, others):
        step_s -= save
    m = Mapped(timing, step_s, used, checkpoint_s=save)
    m.reward = first(row, FIELDS["reward_mean"], used)
    m.lr = first(row, FIELDS["lr"], used)
    m.eval_metric = opt(row, EVAL_METRIC)
    return lengths_and_count(m, row, used, MEAN_PROMPT, MEAN_RESPONSE, TOTAL_TOKENS)


FORMAT = Format(
    "nemo-rl",
    STEP_KEYS,
    STEP_TIMER,
    lambda r: STEP_TIMER in r,
    eval_metric,
    map_row,
    together=((Phase.OLD_LOGPROB, Phase.REF_LOGPROB),),  # policy_and_reference_logprobs
)
