"""TRL GRPOTrainer's per-step metrics -> rlsim run-log fields.

Sources: huggingface/trl ``trl/trainer/grpo_trainer.py`` (``training_step`` -> ``step_time``, the time of one
optimizer step including generation; ``_generate_and_score_completions`` -> ``num_tokens``, cumulative
prompt+completion tokens, ``completions/mean_length``, ``reward``) and ``trl/extras/profiling.py``
(``profiling/Time taken: <Class>.<function>``). ``learning_rate``, ``eval_<metric>`` and ``eval_runtime`` are
transformers ``Trainer`` log names; wandb's ``train/`` prefix is dropped and ``eval/x`` is read as ``eval_x``.

  ======================================================  =================================================
  ``profiling/Time taken: *.vLLM.generate`` (else
  ``transformers.generate``, ``_generate_single_turn``,
  ``_generate``; the first present, they nest)             rollout
  ``profiling/Time taken: *._calculate_rewards``           reward
  ``profiling/Time taken: *._move_model_to_vllm``          weight_sync
  ``step_time`` (required)                                 step time; the rest of it (log-prob forwards,
                                                           loss, backward, optimizer) -> train_actor
  ``eval_runtime``                                         eval (not inside ``step_time``)
  ``reward`` / ``learning_rate`` / ``eval_reward``         reward_mean / lr / eval_metric
  ======================================================  =================================================

TRL logs no batch counts: pass ``prompts_per_step`` and ``group_size``. Prompt tokens are the step's increase
of ``num_tokens`` minus the response tokens (only when the previous step was read too). Log with
``logging_steps=1``: TRL averages metrics over the logging window. A profiled function called several times in a
step is summed (rlsim.frameworks.logs.core).
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.logs.core import Format, Mapped, first, is_number, need, opt
from rlsim.phases import Phase

STEP_KEYS = ("step", "global_step")  # TRL logs to wandb without a step: its _step counts log calls
STEP_TIMER = "step_time"
PROFILE = "profiling/Time taken: "  # + <Class>.<function>
ROLLOUT_FNS = ("vLLM.generate", "transformers.generate", "_generate_single_turn", "_generate")  # nested: first wins
PROFILED: dict[str, Phase] = {"_calculate_rewards": Phase.REWARD, "_move_model_to_vllm": Phase.WEIGHT_SYNC}
EVAL_TIMER = "eval_runtime"
# run-log field -> the log keys it is read from, the first present wins
FIELDS: dict[str, tuple[str, ...]] = {
    "reward_mean": ("reward",),
    "lr": ("learning_rate",),
}
EVAL_METRIC = "eval_reward"
MEAN_RESPONSE = "completions/mean_length"
CUMULATIVE_TOKENS = "num_tokens"  # prompt + completion tokens since the start


def normalize(k: str) -> str:
    if k.startswith("train/"):
        return k[len("train/") :]
    if k.startswith("eval/"):
        return "eval_" + k[len("eval/") :]
    return k


def _profile(row: dict[str, Any]) -> dict[str, str]:
    """function name -> key, for TRL profiling keys (the class name before the first dot is dropped)."""
    out: dict[str, str] = {}
    for key in row:
        if key.startswith(PROFILE) and "." in key:
            out[key[len(PROFILE) :].split(".", 1)[1]] = key
    return out


def eval_metric(row: dict[str, Any]) -> float | None:
    return opt(row, EVAL_METRIC) if EVAL_METRIC in row and is_number(row[EVAL_METRIC]) else None


def map_row(row: dict[str, Any]) -> Mapped:
    used = {STEP_TIMER}
    step = need(row, STEP_TIMER)
    prof = _profile(row)
    timing: dict[str, float] = {}
    for fn in ROLLOUT_FNS:
        if fn in prof:
            timing[Phase.ROLLOUT.value] = need(row, prof[fn])
            used.add(prof[fn])
            break
    for fn, phase in PROFILED.items():
        if fn in prof:
            timing[phase.value] = need(row, prof[fn])
            used.add(prof[fn])
    timing[Phase.TRAIN_ACTOR.value] = round(max(0.0, step - sum(timing.values())), 9)
    if EVAL_TIMER in row:
        timing[Phase.EVAL.value] = need(row, EVAL_TIMER)
        used.add(EVAL_TIMER)
    m = Mapped(timing, step, used)
    m.reward = first(row, FIELDS["reward_mean"], used)
    m.lr = first(row, FIELDS["lr"], used)
    m.eval_metric = opt(row, EVAL_METRIC)
    m.mean_response = opt(row, MEAN_RESPONSE)
    m.tokens_cumulative = opt(row, CUMULATIVE_TOKENS)
    return m


FORMAT = Format(
    "trl",
    STEP_KEYS,
    STEP_TIMER,
    lambda r: STEP_TIMER in r,
    eval_metric,
    map_row,
    normalize,
    together=((Phase.OLD_LOGPROB, Phase.REF_LOGPROB, Phase.TRAIN_ACTOR),),  # the rest of step_time
)
