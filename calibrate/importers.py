"""Import the per-step metrics that real RL frameworks log into rlsim run logs (:mod:`rlsim.runlog`).

``import_log(path, fmt)`` reads a metrics dump of a verl, OpenRLHF, TRL (GRPOTrainer) or NeMo RL run and returns
an :class:`ImportResult`: one valid run-log record per training step, plus ``problems``, the (line number, reason)
of every line that could not be used. A broken line never stops the import; it is reported and skipped.

Input files
-----------
* JSON Lines: one metrics object per line, as wandb/console/file loggers dump them. Nested objects are flattened
  with ``/`` (``{"timing_s": {"gen": 1}}`` is ``timing_s/gen``). verl's ``file`` logger envelope
  ``{"step": N, "data": {...}}`` is unwrapped.
* CSV (``.csv``): a header row of metric names; empty cells are "not logged".

Rows that carry the same step number are merged (wandb, mlflow and NeMo RL log one step in several calls: train
metrics, timings, validation). A second row for a step that already has its step timer is a *duplicated step*.
Rows without any step number are attached to the next row that has one (TRL's profiling timers are logged to
wandb without a step). A file without any step key is read as one step per row, numbered 1, 2, ...
Step keys per format are listed in ``_FORMATS``; wandb's ``_step`` is used only for verl and NeMo RL, which pass
their trainer step to wandb (OpenRLHF and TRL call ``wandb.log`` without a step, so there ``_step`` counts log
calls). If the framework counts steps from 0 (a step-0 row with the step timer), every step is shifted by +1.
A row at or before step 0 that only holds eval metrics is the evaluation before training: it becomes
``initial_eval_metric``, also written into the first record as ``eval_metric_initial`` (as real runs log it).

Mapping per framework (what we read, what it becomes, where the name comes from)
---------------------------------------------------------------------------------
**verl** -- volcengine/verl ``verl/trainer/ppo/ray_trainer.py`` (``RayPPOTrainer.fit``: ``marked_timer`` names,
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
  ``timing_s/step`` (required)             step time; ``testing`` is subtracted when nested (see below)
  ``critic/score/mean`` (else rewards)     reward_mean
  ``actor/lr``                             lr
  ``val-core/.../mean@N``                  eval_metric (mean over data sources)
  responses                                ``perf/total_num_tokens / (prompt_length/mean + response_length/mean)``
  ======================================  ==========================================

  ``adv``, ``save_checkpoint``, profiler timers and the generation sub-timers stay in ``source_metrics``.

**OpenRLHF** -- OpenRLHF/OpenRLHF ``openrlhf/trainer/ppo_trainer.py`` (``BasePPOTrainer.train_step``:
``timing/make_experience``, ``timing/ppo_train``, ``timing/broadcast``; ``PPOTrainer.fit``: ``timing/generation``
and ``timing/step_total`` = sum of the ``timing/*`` values; ``_compute_rollout_stats``: ``rollout/reward_mean``,
``rollout/response_length_mean``, ``rollout/num_samples``; ``compute_eval_metrics``: ``eval_<ds>_pass1``) and
``openrlhf/trainer/ppo_utils/loggers.py`` (wandb prefixes ``train/`` and ``eval/``, ``train/global_step``). The
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

**TRL GRPOTrainer** -- huggingface/trl ``trl/trainer/grpo_trainer.py`` (``training_step`` -> ``step_time``, the
time of one optimizer step including generation; ``_generate_and_score_completions`` -> ``num_tokens``,
cumulative prompt+completion tokens, ``completions/mean_length``, ``reward``) and ``trl/extras/profiling.py``
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
  ``logging_steps=1``: TRL averages metrics over the logging window.

**NeMo RL** -- ``nemo_rl/algorithms/grpo.py`` (``grpo_train``: ``timer.time`` names ``total_step_time``,
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
  ``timing/train/total_step_time`` (required)              step time (validation subtracted when nested)
  ``train/reward`` / ``train/lr`` / ``validation/accuracy``  reward_mean / lr / eval_metric
  responses                                                ``train/total_num_tokens / (train/mean_prompt_length
                                                           + train/mean_gen_tokens_per_sample)``
  ======================================================  ==========================================

Common rules
------------
* ``wall_s`` is the cumulative step time *excluding eval*. When the eval timer may run inside the step timer
  (verl ``testing``, NeMo RL validation), it is subtracted only if the step's other timers plus eval fit in the step
  time (within 2 % + 0.5 s); otherwise the step timer is taken to exclude eval already. Skipped (broken) steps add
  nothing to ``wall_s`` nor ``cumulative_samples``; their step numbers are missing from the records.
* Responses per step: the framework's logged count (or the derivation above, used only if it lands within 0.1 %
  of an integer); else ``prompts_per_step x group_size``; prompts: ``prompts_per_step``, else responses /
  ``group_size``. If neither is known, :class:`~calibrate.errors.CalibrateError` asks for both options.
* Tokens: frameworks log means only, so ``response_tokens = round(mean response length x responses)`` and
  ``prompt_tokens = round(mean prompt length x responses)`` (a prompt counts once per response, as in rlsim's own
  run logs). ``None`` when the mean is not logged.
* ``source_metrics`` keeps every numeric metric the mapping did not consume (eval keys are kept too, as
  ``eval_metric`` is a reduction of them), under its original name. Extra keys: ``step_time_s``, ``source_format``,
  ``source_line``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calibrate.errors import CalibrateError
from rlsim.files import read_text
from rlsim.phases import Phase
from rlsim.runlog import SCHEMA_VERSION, validate_record, write_jsonl

FORMATS: tuple[str, ...] = ("verl", "openrlhf", "trl", "nemo-rl")

_REL_TOL = 0.02  # nested-timer test: the parts fit in the total within 2 % + 0.5 s
_ABS_TOL_S = 0.5
_INT_TOL = 1e-3  # a derived response count must be this close (relative) to an integer


@dataclass
class ImportResult:
    """Records of one imported run and the lines that could not be read."""

    fmt: str
    source: str
    run_id: str
    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)
    initial_eval_metric: float | None = None  # eval logged before the first training step (verl val_before_train)
    notes: list[str] = field(default_factory=list)  # how counts were obtained


class _RowError(Exception):
    """A row that cannot become a record; the message is the reason reported with its line number."""


# ---------------------------------------------------------------------------------------------------------------
# reading


def _flatten(obj: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, name + "/"))
        else:
            out[name] = value
    return out


def _csv_value(text: str) -> Any:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _read_rows(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[tuple[int, str]]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[tuple[int, str]] = []
    text = read_text(path, "log")
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if not reader.fieldnames:
            return rows, problems
        width = len(reader.fieldnames)
        for raw in reader:
            lineno = reader.line_num
            extra = raw.pop(None, None)  # type: ignore[call-overload]
            missing = sum(v is None for v in raw.values())
            if extra or missing:
                got = width + len(extra or []) - missing
                problems.append((lineno, f"has {got} fields but the header has {width}"))
                continue
            row = {k: _csv_value(v) for k, v in raw.items() if v.strip() != ""}
            if row:
                rows.append((lineno, row))
        return rows, problems
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append((lineno, f"not valid JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}"))
            continue
        if not isinstance(obj, dict):
            problems.append((lineno, f"a JSON {type(obj).__name__}, not an object of metrics"))
            continue
        if isinstance(obj.get("data"), dict) and "step" in obj:  # verl file logger: {"step": N, "data": {...}}
            row = _flatten(obj["data"])
            row["step"] = obj["step"]
        else:
            row = _flatten(obj)
        rows.append((lineno, row))
    return rows, problems


# ---------------------------------------------------------------------------------------------------------------
# numbers


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _need(row: dict[str, Any], key: str) -> float:
    """A number that must be present, finite and >= 0 (timers)."""
    v = row[key]
    if not _is_number(v) or not math.isfinite(v):
        raise _RowError(f"{key} = {v!r} is not a finite number")
    if v < 0:
        raise _RowError(f"{key} = {v!r} is negative")
    return float(v)


def _opt(row: dict[str, Any], key: str, *, timer: bool = False) -> float | None:
    """A number that may be missing; NaN/inf read as not logged (except timers); a string is an error."""
    if key not in row:
        return None
    if timer:
        return _need(row, key)
    v = row[key]
    if not _is_number(v):
        raise _RowError(f"{key} = {v!r} is not a number")
    return float(v) if math.isfinite(v) else None


def _first(row: dict[str, Any], keys: tuple[str, ...], used: set[str], *, timer: bool = False) -> float | None:
    for key in keys:
        if key in row:
            used.add(key)
            return _opt(row, key, timer=timer)
    return None


def _mean_of(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _nested(total: float, part: float, others: float) -> bool:
    """Whether ``part`` was timed inside ``total``: the other timers plus ``part`` still fit in ``total``."""
    return part <= total and others + part <= total * (1 + _REL_TOL) + _ABS_TOL_S


def _derive_count(total_tokens: float | None, mean_prompt: float | None, mean_response: float | None) -> int | None:
    if total_tokens is None or mean_prompt is None or mean_response is None or mean_prompt + mean_response <= 0:
        return None
    n = total_tokens / (mean_prompt + mean_response)
    k = round(n)
    return k if k >= 1 and abs(n - k) <= _INT_TOL * k else None


# ---------------------------------------------------------------------------------------------------------------
# per-framework mapping: a row (merged metrics of one step) -> _Mapped


@dataclass
class _Mapped:
    timing: dict[str, float]
    step_s: float  # step time excluding eval
    used: set[str]
    reward: float | None = None
    lr: float | None = None
    eval_metric: float | None = None
    responses: int | None = None
    mean_prompt: float | None = None
    mean_response: float | None = None
    tokens_cumulative: float | None = None  # TRL num_tokens (prompt + response, cumulative)
    count_note: str | None = None


@dataclass(frozen=True)
class _Format:
    name: str
    step_keys: tuple[str, ...]
    timer_hint: str  # for "missing the step timer ..." messages
    has_timer: Callable[[dict[str, Any]], bool]
    eval_metric: Callable[[dict[str, Any]], float | None]
    map_row: Callable[[dict[str, Any]], _Mapped]
    normalize: Callable[[str], str] = lambda k: k


def _eval_mean(row: dict[str, Any], pick: Callable[[str], bool]) -> float | None:
    vals = [float(v) for k, v in sorted(row.items()) if pick(k) and _is_number(v) and math.isfinite(v)]
    return _mean_of(vals)


# verl --------------------------------------------------------------------------------------------------------

_VERL_PHASES: dict[str, Phase] = {
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
_VERL_OTHER_TOP = ("timing_s/adv", "timing_s/save_checkpoint", "timing_s/dump_rollout_generations")


def _verl_val_key(k: str) -> bool:
    if k.startswith("val-core/"):
        return k.rsplit("/", 1)[-1].startswith("mean@")
    return False


def _verl_eval(row: dict[str, Any]) -> float | None:
    found = _eval_mean(row, _verl_val_key)
    if found is None:  # older verl: val/test_score/<data_source>
        found = _eval_mean(row, lambda k: k.startswith("val/test_score/"))
    return found


def _verl_map(row: dict[str, Any]) -> _Mapped:
    used = {"timing_s/step"}
    step = _need(row, "timing_s/step")
    timing: dict[str, float] = {}
    for key, phase in _VERL_PHASES.items():
        if key in row:
            timing[phase.value] = timing.get(phase.value, 0.0) + _need(row, key)
            used.add(key)
    others = sum(timing.values()) + sum(_need(row, k) for k in _VERL_OTHER_TOP if k in row)
    step_s = step
    if "timing_s/testing" in row:
        testing = _need(row, "timing_s/testing")
        used.add("timing_s/testing")
        timing[Phase.EVAL.value] = testing
        if _nested(step, testing, others):
            step_s = step - testing
    m = _Mapped(timing, step_s, used)
    m.reward = _first(row, ("critic/score/mean", "critic/rewards/mean"), used)
    m.lr = _first(row, ("actor/lr",), used)
    m.eval_metric = _verl_eval(row)
    m.mean_prompt = _opt(row, "prompt_length/mean")
    m.mean_response = _opt(row, "response_length/mean")
    m.responses = _derive_count(_opt(row, "perf/total_num_tokens"), m.mean_prompt, m.mean_response)
    if m.responses is not None:
        used.update(("perf/total_num_tokens",))
        m.count_note = "responses per step = perf/total_num_tokens / (prompt_length/mean + response_length/mean)"
    return m


# OpenRLHF ----------------------------------------------------------------------------------------------------

_ORLHF_PARTS = ("timing/generation", "timing/make_experience", "timing/ppo_train")


def _orlhf_norm(k: str) -> str:
    return k[len("train/") :] if k.startswith("train/") else k


def _orlhf_has_timer(row: dict[str, Any]) -> bool:
    return "timing/step_total" in row or all(k in row for k in _ORLHF_PARTS)


def _orlhf_eval_key(k: str) -> bool:
    name = k[len("eval/") :] if k.startswith("eval/") else k
    return name.startswith("eval_") and name.endswith("_pass1")


def _orlhf_map(row: dict[str, Any]) -> _Mapped:
    used: set[str] = set()
    gen = _first(row, ("timing/generation",), used, timer=True) or 0.0
    make = _first(row, ("timing/make_experience",), used, timer=True) or 0.0
    train = _first(row, ("timing/ppo_train",), used, timer=True) or 0.0
    bcast = _first(row, ("timing/broadcast",), used, timer=True) or 0.0
    parts = gen + make + train + bcast
    total = _first(row, ("timing/step_total",), used, timer=True)
    is_async = any(k in row for k in ("timing/vllm_idle_wait", "timing/actor_idle_wait"))
    rest = make
    if total is not None and not is_async and parts > total * (1 + _REL_TOL) + _ABS_TOL_S and make >= gen:
        rest = make - gen  # older layout: generation timed inside make_experience
    forwards = [Phase.OLD_LOGPROB, Phase.REF_LOGPROB] + ([Phase.VALUES] if "critic_loss" in row else [])
    timing = {Phase.ROLLOUT.value: gen, Phase.TRAIN_ACTOR.value: train, Phase.WEIGHT_SYNC.value: bcast}
    for phase in forwards:
        timing[phase.value] = rest / len(forwards)
    m = _Mapped(timing, total if total is not None else parts, used)
    m.reward = _first(row, ("rollout/reward_mean", "reward"), used)
    m.lr = _first(row, ("actor_lr",), used)
    m.eval_metric = _eval_mean(row, _orlhf_eval_key)
    m.mean_response = _first(row, ("rollout/response_length_mean", "response_length"), set())
    if "response_length" in row and "total_length" in row:
        resp, tot = _opt(row, "response_length"), _opt(row, "total_length")
        if resp is not None and tot is not None and tot >= resp:
            m.mean_prompt = tot - resp
    num = _opt(row, "rollout/num_samples")
    if num is not None and num >= 1 and float(num).is_integer():
        used.add("rollout/num_samples")
        m.responses = int(num)
        m.count_note = "responses per step = rollout/num_samples"
    return m


# TRL ---------------------------------------------------------------------------------------------------------

_TRL_PROFILE = "profiling/Time taken: "
_TRL_ROLLOUT_FNS = ("vLLM.generate", "transformers.generate", "_generate_single_turn", "_generate")


def _trl_norm(k: str) -> str:
    if k.startswith("train/"):
        return k[len("train/") :]
    if k.startswith("eval/"):
        return "eval_" + k[len("eval/") :]
    return k


def _trl_profile(row: dict[str, Any]) -> dict[str, str]:
    """function name -> key, for TRL profiling keys (the class name before the first dot is dropped)."""
    out: dict[str, str] = {}
    for key in row:
        if key.startswith(_TRL_PROFILE) and "." in key:
            out[key[len(_TRL_PROFILE) :].split(".", 1)[1]] = key
    return out


def _trl_map(row: dict[str, Any]) -> _Mapped:
    used = {"step_time"}
    step = _need(row, "step_time")
    prof = _trl_profile(row)
    timing: dict[str, float] = {}
    for fn in _TRL_ROLLOUT_FNS:
        if fn in prof:
            timing[Phase.ROLLOUT.value] = _need(row, prof[fn])
            used.add(prof[fn])
            break
    for fn, phase in (("_calculate_rewards", Phase.REWARD), ("_move_model_to_vllm", Phase.WEIGHT_SYNC)):
        if fn in prof:
            timing[phase.value] = _need(row, prof[fn])
            used.add(prof[fn])
    timing[Phase.TRAIN_ACTOR.value] = round(max(0.0, step - sum(timing.values())), 9)
    if "eval_runtime" in row:
        timing[Phase.EVAL.value] = _need(row, "eval_runtime")
        used.add("eval_runtime")
    m = _Mapped(timing, step, used)
    m.reward = _first(row, ("reward",), used)
    m.lr = _first(row, ("learning_rate",), used)
    m.eval_metric = _opt(row, "eval_reward")
    m.mean_response = _opt(row, "completions/mean_length")
    m.tokens_cumulative = _opt(row, "num_tokens")
    return m


# NeMo RL -----------------------------------------------------------------------------------------------------

_NEMO_PHASES: dict[str, tuple[Phase, ...]] = {
    "timing/train/generation": (Phase.ROLLOUT,),
    "timing/train/reward_calculation": (Phase.REWARD,),
    "timing/train/policy_and_reference_logprobs": (Phase.OLD_LOGPROB, Phase.REF_LOGPROB),
    "timing/train/policy_logprobs": (Phase.OLD_LOGPROB,),
    "timing/train/reference_logprobs": (Phase.REF_LOGPROB,),
    "timing/train/prepare_for_generation": (Phase.WEIGHT_SYNC,),
    "timing/train/prepare_for_generation/total": (Phase.WEIGHT_SYNC,),
    "timing/train/policy_training": (Phase.TRAIN_ACTOR,),
}
_NEMO_OTHER_TOP = (
    "timing/train/data_processing",
    "timing/train/logprob_inference_prep",
    "timing/train/training_prep",
    "timing/train/checkpointing",
)
_NEMO_STEP = "timing/train/total_step_time"
_NEMO_VAL_TIME = "timing/validation/total_validation_time"


def _nemo_map(row: dict[str, Any]) -> _Mapped:
    used = {_NEMO_STEP}
    step = _need(row, _NEMO_STEP)
    timing: dict[str, float] = {}
    for key, phases in _NEMO_PHASES.items():
        if key == "timing/train/prepare_for_generation/total" and "timing/train/prepare_for_generation" in row:
            continue
        if key in row:
            sec = _need(row, key)
            used.add(key)
            for phase in phases:
                timing[phase.value] = timing.get(phase.value, 0.0) + sec / len(phases)
    others = sum(timing.values()) + sum(_need(row, k) for k in _NEMO_OTHER_TOP if k in row)
    step_s = step
    if _NEMO_VAL_TIME in row:
        val = _need(row, _NEMO_VAL_TIME)
        used.add(_NEMO_VAL_TIME)
        timing[Phase.EVAL.value] = val
        if _nested(step, val, others):
            step_s = step - val
    m = _Mapped(timing, step_s, used)
    m.reward = _first(row, ("train/reward",), used)
    m.lr = _first(row, ("train/lr",), used)
    m.eval_metric = _opt(row, "validation/accuracy")
    m.mean_prompt = _opt(row, "train/mean_prompt_length")
    m.mean_response = _opt(row, "train/mean_gen_tokens_per_sample")
    m.responses = _derive_count(_opt(row, "train/total_num_tokens"), m.mean_prompt, m.mean_response)
    if m.responses is not None:
        used.add("train/total_num_tokens")
        m.count_note = (
            "responses per step = train/total_num_tokens"
            " / (train/mean_prompt_length + train/mean_gen_tokens_per_sample)"
        )
    return m


_FORMATS: dict[str, _Format] = {
    "verl": _Format(
        "verl",
        ("training/global_step", "step", "_step"),
        "timing_s/step",
        lambda r: "timing_s/step" in r,
        _verl_eval,
        _verl_map,
    ),
    "openrlhf": _Format(
        "openrlhf",
        ("global_step", "eval/global_step", "step"),
        "timing/step_total (or timing/generation + timing/make_experience + timing/ppo_train)",
        _orlhf_has_timer,
        lambda r: _eval_mean(r, _orlhf_eval_key),
        _orlhf_map,
        _orlhf_norm,
    ),
    "trl": _Format(
        "trl",
        ("step", "global_step"),
        "step_time",
        lambda r: "step_time" in r,
        lambda r: _opt(r, "eval_reward") if "eval_reward" in r and _is_number(r["eval_reward"]) else None,
        _trl_map,
        _trl_norm,
    ),
    "nemo-rl": _Format(
        "nemo-rl",
        ("step", "_step"),
        _NEMO_STEP,
        lambda r: _NEMO_STEP in r,
        lambda r: _opt(r, "validation/accuracy") if _is_number(r.get("validation/accuracy")) else None,
        _nemo_map,
    ),
}


# ---------------------------------------------------------------------------------------------------------------
# grouping rows into steps


@dataclass
class _Group:
    step: int
    line: int
    row: dict[str, Any]
    timer_line: int | None = None


def _step_of(fmt: _Format, row: dict[str, Any]) -> tuple[str, int] | None:
    for key in fmt.step_keys:
        if key in row:
            v = row[key]
            if not _is_number(v) or not math.isfinite(v) or not float(v).is_integer():
                raise _RowError(f"step key {key} = {v!r} is not an integer")
            return key, int(v)
    return None


def _merge(into: dict[str, Any], row: dict[str, Any]) -> None:
    for k, v in row.items():
        if k.startswith("profiling/") and _is_number(into.get(k)) and _is_number(v):
            into[k] = into[k] + v  # a profiled function called several times in the step
        else:
            into.setdefault(k, v)


def _group(fmt: _Format, rows: list[tuple[int, dict[str, Any]]], problems: list[tuple[int, str]]) -> list[_Group]:
    keyed = any(k in row for _, row in rows for k in fmt.step_keys)
    groups: dict[int, _Group] = {}
    order: list[int] = []
    pending: list[tuple[int, dict[str, Any]]] = []
    max_timed = -(10**9)
    counter = 0
    for lineno, row in rows:
        try:
            found = _step_of(fmt, row) if keyed else None
        except _RowError as exc:
            problems.append((lineno, str(exc)))
            continue
        if keyed and found is None:
            pending.append((lineno, row))
            continue
        if found is None:
            counter += 1
            step = counter
        else:
            step = found[1]
        timed = fmt.has_timer(row)
        if step in groups:
            g = groups[step]
            if timed and g.timer_line is not None:
                problems.append((lineno, f"duplicated step {step} (already read on line {g.timer_line}); skipped"))
                continue
        else:
            if timed and step <= max_timed:
                problems.append((lineno, f"step {step} comes after step {max_timed}; steps must increase"))
                continue
            g = groups[step] = _Group(step, pending[0][0] if pending else lineno, {})
            order.append(step)
        for _, prow in pending:
            _merge(g.row, prow)
        pending.clear()
        _merge(g.row, row)
        if timed:
            g.timer_line = lineno
            max_timed = max(max_timed, step)
    for lineno, _ in pending:
        problems.append((lineno, "no step number and no later step to attach it to"))
    return [groups[s] for s in order]


# ---------------------------------------------------------------------------------------------------------------
# public API


def import_log(
    path: str | Path,
    fmt: str,
    *,
    prompts_per_step: int | None = None,
    group_size: int | None = None,
    run_id: str | None = None,
) -> ImportResult:
    """Read a framework's per-step metrics (JSON Lines or CSV) into rlsim run-log records.

    ``fmt`` is one of ``verl``, ``openrlhf``, ``trl``, ``nemo-rl``. ``prompts_per_step`` and ``group_size``
    give the batch when the log does not count it. Unreadable lines are listed in ``problems`` and skipped;
    :class:`CalibrateError` is raised for an unknown format, a missing file, bad arguments, a log from which no
    step could be read, or an unknown batch size.
    """
    if fmt not in _FORMATS:
        raise CalibrateError(f"unknown log format {fmt!r}; use one of {', '.join(FORMATS)}")
    spec = _FORMATS[fmt]
    p = Path(path)
    if not p.is_file():
        raise CalibrateError(f"no such log file {str(p)!r}; check the path")
    for name, value in (("prompts_per_step", prompts_per_step), ("group_size", group_size)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise CalibrateError(f"{name} = {value!r} must be an integer >= 1; pass --{name.replace('_', '-')} N")
    result = ImportResult(fmt=fmt, source=str(p), run_id=run_id or p.stem)

    raw_rows, problems = _read_rows(p)
    rows = [(ln, {spec.normalize(k): v for k, v in row.items()}) for ln, row in raw_rows]
    groups = _group(spec, rows, problems)

    timed = [g for g in groups if spec.has_timer(g.row)]
    offset = 1 if timed and min(g.step for g in timed) == 0 else 0
    first_timed = min((g.step for g in timed), default=None)

    mapped: list[tuple[_Group, _Mapped]] = []
    for g in groups:
        if not spec.has_timer(g.row):
            try:
                ev = spec.eval_metric(g.row)
            except _RowError:
                ev = None
            if ev is not None and (first_timed is None or g.step < first_timed) and g.step <= 0:
                result.initial_eval_metric = ev
            elif ev is not None:
                problems.append(
                    (
                        g.line,
                        f"eval metrics for step {g.step} but no training metrics for it "
                        f"(missing the step timer {spec.timer_hint})",
                    )
                )
            else:
                problems.append((g.line, f"missing the step timer {spec.timer_hint}"))
            continue
        try:
            mapped.append((g, spec.map_row(g.row)))
        except _RowError as exc:
            problems.append((g.timer_line or g.line, str(exc)))

    result.problems = sorted(problems)
    if not mapped:
        first = f"; first: line {result.problems[0][0]}: {result.problems[0][1]}" if result.problems else ""
        raise CalibrateError(
            f"no training step could be read from {str(p)!r} as a {fmt} log ({len(result.problems)} problem(s){first});"
            f" check the file and --format"
        )
    result.records = _records(result, mapped, offset, prompts_per_step, group_size)
    return result


def _records(
    result: ImportResult,
    mapped: list[tuple[_Group, _Mapped]],
    offset: int,
    prompts_per_step: int | None,
    group_size: int | None,
) -> list[dict[str, Any]]:
    fmt = result.fmt
    fix = "pass --prompts-per-step and --group-size (prompts per step and responses per prompt)"
    records: list[dict[str, Any]] = []
    cumulative = 0
    wall = 0.0
    prev_step: int | None = None
    prev_tokens: float | None = None
    notes: set[str] = set()
    for g, m in mapped:
        responses = m.responses
        if responses is not None:
            notes.add(m.count_note or "responses per step from the log")
        elif prompts_per_step is not None and group_size is not None:
            responses = prompts_per_step * group_size
            notes.add("responses per step = prompts_per_step x group_size")
        else:
            raise CalibrateError(f"the {fmt} log {result.source!r} does not say how many responses a step has; {fix}")
        if prompts_per_step is not None:
            prompts = prompts_per_step
        elif group_size is not None:
            prompts = max(1, round(responses / group_size))
        else:
            raise CalibrateError(
                f"the {fmt} log {result.source!r} does not say how many prompts a step has "
                f"({responses} responses); {fix}"
            )
        step = g.step + offset
        response_tokens = round(m.mean_response * responses) if m.mean_response is not None else None
        prompt_tokens = round(m.mean_prompt * responses) if m.mean_prompt is not None else None
        if m.tokens_cumulative is not None:  # TRL: num_tokens counts prompt + completion tokens since the start
            before = prev_tokens if prev_step is not None and step == prev_step + 1 else (0.0 if step == 1 else None)
            if before is not None and response_tokens is not None and m.tokens_cumulative - before >= response_tokens:
                prompt_tokens = round(m.tokens_cumulative - before - response_tokens)
            prev_tokens = m.tokens_cumulative
        cumulative += responses
        wall += m.step_s
        used = m.used | set(_FORMATS[fmt].step_keys)
        source_metrics = {k: v for k, v in g.row.items() if k not in used and _is_number(v) and math.isfinite(v)}
        rec: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "run_id": result.run_id,
            "step": step,
            "cumulative_samples": cumulative,
            "prompts": prompts,
            "responses": responses,
            "prompt_tokens": prompt_tokens,
            "response_tokens": response_tokens,
            "lr": m.lr,
            "reward_mean": m.reward,
            "eval_metric": m.eval_metric,
            "wall_s": wall,
            "step_time_s": m.step_s,
            "timing_s": m.timing,
            "source_format": fmt,
            "source_line": g.timer_line or g.line,
            "source_metrics": source_metrics,
        }
        if not records and result.initial_eval_metric is not None:
            rec["eval_metric_initial"] = result.initial_eval_metric  # as real runs log it with their first step
        validate_record(rec)
        records.append(rec)
        prev_step = step
    result.notes = sorted(notes)
    return records


def write_runlog(result: ImportResult, out_path: str | Path) -> Path:
    """Write the imported records as a run log (JSON Lines, validated line by line)."""
    from rlsim.files import atomic_write

    out = Path(out_path)
    atomic_write(out, lambda p: write_jsonl(p, result.records))  # all or nothing
    return out


def format_problems(result: ImportResult) -> str:
    """The unreadable lines of an import, one per line with its reason (a short line when there are none)."""
    if not result.problems:
        return f"{result.source}: all lines read ({len(result.records)} steps)"
    head = f"{result.source}: {len(result.problems)} line(s) skipped, {len(result.records)} steps read"
    return "\n".join([head] + [f"  line {ln}: {reason}" for ln, reason in result.problems])
