"""verl's per-step metrics -> rlsim run-log fields.

Sources: volcengine/verl ``verl/trainer/ppo/ray_trainer.py`` (``RayPPOTrainer.fit``: ``marked_timer`` names,
``training/global_step``; ``testing`` and ``save_checkpoint`` run *inside* the ``step`` timer) and
``verl/trainer/ppo/metric_utils.py`` (``compute_timing_metrics`` -> ``timing_s/<name>``; ``compute_data_metrics``
-> ``critic/score/mean``, ``critic/rewards/mean``, ``response_length/mean``, ``prompt_length/mean``;
``compute_throughout_metrics`` -> ``perf/total_num_tokens`` = prompt+response tokens of every response).
Validation keys ``val-core/<data_source>/<var>/<metric>`` come from ``RayPPOTrainer._validate``. Newer verl
trainers (checkpoint-engine path) time the weight push as ``update_weights``; ``sync_weights`` and
``sync_rollout_weights`` are accepted as aliases.

  ======================================  ==========================================
  ``timing_s/gen`` (+ ``gen_max``)         rollout
  ``timing_s/reward``                      reward
  ``timing_s/old_log_prob``                old_logprob
  ``timing_s/ref``                         ref_logprob
  ``timing_s/values``                      values
  ``timing_s/update_actor``                train_actor
  ``timing_s/update_critic``               train_critic
  ``timing_s/update_weights`` / sync_*     weight_sync
  ``timing_s/testing``                     eval
  ``timing_s/step`` (required)             step time; ``testing`` is subtracted when nested (rlsim.frameworks.logs)
  ``critic/score/mean`` (else rewards)     reward_mean
  ``actor/lr``                             lr
  ``val-core/.../mean@N``                  eval_metric (mean over data sources)
  responses                                ``perf/total_num_tokens / (prompt_length/mean + response_length/mean)``
  ======================================  ==========================================

``adv``, ``save_checkpoint``, profiler timers and the generation sub-timers stay in ``source_metrics``.
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.logs.core import Format, Mapped, eval_mean, first, lengths_and_count, need, step_without_eval
from rlsim.phases import Phase

STEP_KEYS = ("training/global_step", "step", "_step")  # wandb's _step is the trainer step here
STEP_TIMER = "timing_s/step"
EVAL_TIMER = "timing_s/testing"  # may run inside the step timer
PHASES: dict[str, Phase] = {
    "timing_s/gen": Phase.ROLLOUT,
    "timing_s/gen_max": Phase.ROLLOUT,
    "timing_s/reward": Phase.REWARD,
    "timing_s/old_log_prob": Phase.OLD_LOGPROB,
    "timing_s/ref": Phase.REF_LOGPROB,
    "timing_s/values": Phase.VALUES,
    "timing_s/update_actor": Phase.TRAIN_ACTOR,
    "timing_s/update_critic": Phase.TRAIN_CRITIC,
    "timing_s/update_weights": Phase.WEIGHT_SYNC,
    "timing_s/sync_weights": Phase.WEIGHT_SYNC,
    "timing_s/sync_rollout_weights": Phase.WEIGHT_SYNC,
}
# top-level timers of the step that are not phases (generation sub-timers are inside gen and are not summed)
OTHER_TIMERS = ("timing_s/adv", "timing_s/save_checkpoint", "timing_s/dump_rollout_generations")
# run-log field -> the log keys it is read from, the first present wins
FIELDS: dict[str, tuple[str, ...]] = {
    "reward_mean": ("critic/score/mean", "critic/rewards/mean"),
    "lr": ("actor/lr",),
}
MEAN_PROMPT = "prompt_length/mean"
MEAN_RESPONSE = "response_length/mean"
TOTAL_TOKENS = "perf/total_num_tokens"  # prompt + response tokens of the step: gives the response count
EVAL_PREFIX = "val-core/"  # val-core/<data_source>/<var>/mean@N
OLD_EVAL_PREFIX = "val/test_score/"  # older verl: val/test_score/<data_source>


def _val_key(k: str) -> bool:
    if k.startswith(EVAL_PREFIX):
        return k.rsplit("/", 1)[-1].startswith("mean@")
    return False


def eval_metric(row: dict[str, Any]) -> float | None:
    """The mean over data sources of the validation metric."""
    found = eval_mean(row, _val_key)
    if found is None:
        found = eval_mean(row, lambda k: k.startswith(OLD_EVAL_PREFIX))
    return found


def map_row(row: dict[str, Any]) -> Mapped:
    used = {STEP_TIMER}
    step = need(row, STEP_TIMER)
    timing: dict[str, float] = {}
    for key, phase in PHASES.items():
        if key in row:
            timing[phase.value] = timing.get(phase.value, 0.0) + need(row, key)
            used.add(key)
    others = sum(timing.values()) + sum(need(row, k) for k in OTHER_TIMERS if k in row)
    m = Mapped(timing, step_without_eval(row, step, timing, others, EVAL_TIMER, used), used)
    m.reward = first(row, FIELDS["reward_mean"], used)
    m.lr = first(row, FIELDS["lr"], used)
    m.eval_metric = eval_metric(row)
    return lengths_and_count(m, row, used, MEAN_PROMPT, MEAN_RESPONSE, TOTAL_TOKENS)


FORMAT = Format("verl", STEP_KEYS, STEP_TIMER, lambda r: STEP_TIMER in r, eval_metric, map_row)
