"""OpenRLHF's per-step metrics -> rlsim run-log fields.

Sources: OpenRLHF/OpenRLHF ``openrlhf/trainer/ppo_trainer.py`` (``BasePPOTrainer.train_step``:
``timing/make_experience``, ``timing/ppo_train``, ``timing/broadcast``; ``PPOTrainer.fit``: ``timing/generation``
and ``timing/step_total`` = sum of the ``timing/*`` values; ``_compute_rollout_stats``: ``rollout/reward_mean``,
``rollout/response_length_mean``, ``rollout/num_samples``; ``compute_eval_metrics``: ``eval_<ds>_pass1``) and the
wandb logger (prefixes ``train/`` and ``eval/``, ``train/global_step``); checked at v0.11.0: ppo_trainer.py:215-258
(train_step's timers), 540-541 (generation, step_total), 412-427 (rollout stats), utils/logging_utils.py:97-99. The
``train/`` prefix is dropped before mapping.

  ======================================  ==========================================
  ``timing/generation``                    rollout
  ``timing/make_experience``               old_logprob + ref_logprob (+ values when ``critic_loss`` is logged),
                                           split in equal shares (see below)
  ``timing/ppo_train``                     train_actor (critic training runs inside it, concurrently)
  ``timing/broadcast``                     weight_sync
  ``timing/step_total``                    step time (else the sum of the four timers above)
  ``rollout/reward_mean`` (else reward)    reward_mean
  ``actor_lr``                             lr
  ``eval_<ds>_pass1``                      eval_metric (mean over data sources)
  ``rollout/num_samples``                  responses
  ======================================  ==========================================

make_experience split: OpenRLHF times the whole experience making (actor, reference and critic forwards, the
reward model) as one number; those forwards run as concurrent Ray calls over the same tokens, so no per-model
time exists. We give each forward pass an equal share, keeping the sum. Older OpenRLHF timed generation
*inside* make_experience; when ``generation + make_experience + ppo_train + broadcast`` exceeds ``step_total``
(beyond 2 % + 0.5 s) generation is subtracted from make_experience first. Eval is not timed and not inside
``step_total``.
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.logs.core import ABS_TOL_S, REL_TOL, Format, Mapped, eval_mean, first, opt
from rlsim.phases import Phase

STEP_KEYS = ("global_step", "eval/global_step", "step")  # OpenRLHF logs to wandb without a step: no _step
PREFIX = "train/"  # wandb's prefix, dropped before mapping
STEP_TIMER = "timing/step_total"
GENERATION = "timing/generation"  # rollout
MAKE_EXPERIENCE = "timing/make_experience"  # the forward passes below, equal shares
PPO_TRAIN = "timing/ppo_train"  # train_actor
BROADCAST = "timing/broadcast"  # weight_sync
FORWARDS = (Phase.OLD_LOGPROB, Phase.REF_LOGPROB)  # inside make_experience; and values with a critic
CRITIC_KEY = "critic_loss"  # logged when a critic trains: its values forward is inside make_experience too
ASYNC_TIMERS = ("timing/vllm_idle_wait", "timing/actor_idle_wait")  # async training: the timers overlap
PARTS = (GENERATION, MAKE_EXPERIENCE, PPO_TRAIN)  # a step timer when step_total is not logged
# run-log field -> the log keys it is read from, the first present wins
FIELDS: dict[str, tuple[str, ...]] = {
    "reward_mean": ("rollout/reward_mean", "reward"),
    "lr": ("actor_lr",),
}
MEAN_RESPONSE = ("rollout/response_length_mean", "response_length")
MEAN_TOTAL = "total_length"  # prompt + response: gives the prompt length with response_length
NUM_SAMPLES = "rollout/num_samples"  # responses per step


def normalize(k: str) -> str:
    return k[len(PREFIX) :] if k.startswith(PREFIX) else k


def has_timer(row: dict[str, Any]) -> bool:
    return STEP_TIMER in row or all(k in row for k in PARTS)


def _eval_key(k: str) -> bool:
    name = k[len("eval/") :] if k.startswith("eval/") else k
    return name.startswith("eval_") and name.endswith("_pass1")


def eval_metric(row: dict[str, Any]) -> float | None:
    """The mean over data sources of ``eval_<ds>_pass1``."""
    return eval_mean(row, _eval_key)


def map_row(row: dict[str, Any]) -> Mapped:
    used: set[str] = set()
    gen = first(row, (GENERATION,), used, timer=True) or 0.0
    make = first(row, (MAKE_EXPERIENCE,), used, timer=True) or 0.0
    train = first(row, (PPO_TRAIN,), used, timer=True) or 0.0
    bcast = first(row, (BROADCAST,), used, timer=True) or 0.0
    parts = gen + make + train + bcast
    total = first(row, (STEP_TIMER,), used, timer=True)
    is_async = any(k in row for k in ASYNC_TIMERS)
    rest = make
    if total is not None and not is_async and parts > total * (1 + REL_TOL) + ABS_TOL_S and make >= gen:
        rest = make - gen  # older layout: generation timed inside make_experience
    forwards = [*FORWARDS] + ([Phase.VALUES] if CRITIC_KEY in row else [])
    timing = {Phase.ROLLOUT.value: gen, Phase.TRAIN_ACTOR.value: train, Phase.WEIGHT_SYNC.value: bcast}
    for phase in forwards:
        timing[phase.value] = rest / len(forwards)
    m = Mapped(timing, total if total is not None else parts, used)
    m.reward = first(row, FIELDS["reward_mean"], used)
    m.lr = first(row, FIELDS["lr"], used)
    m.eval_metric = eval_metric(row)
    m.mean_response = first(row, MEAN_RESPONSE, set())
    if "response_length" in row and MEAN_TOTAL in row:
        resp, tot = opt(row, "response_length"), opt(row, MEAN_TOTAL)
        if resp is not None and tot is not None and tot >= resp:
            m.mean_prompt = tot - resp
    num = opt(row, NUM_SAMPLES)
    if num is not None and num >= 1 and float(num).is_integer():
        used.add(NUM_SAMPLES)
        m.responses = int(num)
        m.count_note = f"responses per step = {NUM_SAMPLES}"
    return m


FORMAT = Format(
    "openrlhf",
    STEP_KEYS,
    f"{STEP_TIMER} (or {' + '.join(PARTS)})",
    has_timer,
    eval_metric,
    map_row,
    normalize,
    # make_experience holds the reward model and the forwards; ppo_train the critic's training too
    together=((Phase.REWARD, *FORWARDS, Phase.VALUES), (Phase.TRAIN_ACTOR, Phase.TRAIN_CRITIC)),
)
