"""The two record formats that real runs, the simulator and calibrate exchange, each defined once.

**Run-log record** (one JSON object per step in ``runlog.jsonl``, ``schema_version`` 1). Written by simulated
runs (``rlsim.run.pipeline``), real runs (``real.train``) and imported logs (``calibrate.importers``); read by
calibrate and the report. :data:`RUN_LOG_FIELDS` lists every field a producer writes, with its type, whether it
is required, and its unit; required fields must be present (``eval_metric`` and a few others may be ``null``),
optional fields are checked when present, and keys not listed are allowed (a producer's own metrics).
:func:`run_log_record` builds a record (adding ``schema_version``) and checks it; :func:`validate_record` checks
one that was read or built by hand. Seconds everywhere; ``wall_s`` excludes eval.

**Bench table** (``bench.csv`` / ``bench.parquet`` from ``rlsim-real bench``, read by ``calibrate.bench.tables``): one
row per measured repeat. :data:`BENCH_COLUMNS` is the table's column order, :data:`BENCH_REQUIRED_COLUMNS` what
every table must have, :data:`BENCH_PHASE_COLUMNS` the configuration columns each phase is fitted on.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from rlsim.errors import RlsimError
from rlsim.io.numbers import finite
from rlsim.phases import PHASES, Phase

SCHEMA_VERSION = 1

_PHASE_NAMES = frozenset(p.value for p in PHASES)


class RunLogError(RlsimError, ValueError):
    """A run-log record or file breaks the schema."""


@dataclass(frozen=True)
class Field:
    """One run-log field: ``kind`` is int, number, str, timing (phase -> seconds), counts (list of int >= 0) or
    mapping (str -> anything); ``minimum`` bounds numbers; ``nullable`` allows ``null``."""

    name: str
    kind: str
    doc: str
    required: bool = False
    nullable: bool = False
    minimum: float | None = None


RUN_LOG_FIELDS: tuple[Field, ...] = (
    # required: every producer writes them
    Field("schema_version", "int", f"the schema's version, {SCHEMA_VERSION}", required=True),
    Field("run_id", "str", "the run's name (its directory, or sim-<scenario digest>)", required=True),
    Field("step", "int", "the step, 1-based", required=True, minimum=1),
    Field("cumulative_samples", "int", "responses trained on so far, this step included", required=True, minimum=0),
    Field("prompts", "int", "prompts in the step (P)", required=True, minimum=1),
    Field("responses", "int", "responses in the step (P x G)", required=True, minimum=1),
    Field("prompt_tokens", "int", "prompt tokens over the step's responses", required=True, nullable=True, minimum=0),
    Field("response_tokens", "int", "response tokens in the step", required=True, nullable=True, minimum=0),
    Field("lr", "number", "the learning rate of the step", required=True, nullable=True, minimum=0),
    Field("reward_mean", "number", "mean reward of the step's responses", required=True, nullable=True),
    Field(
        "eval_metric", "number", "held-out metric after the step, null if not evaluated", required=True, nullable=True
    ),
    Field("wall_s", "number", "seconds since the start, eval excluded", required=True, minimum=0),
    Field("timing_s", "timing", "seconds per phase (rlsim.phases names) in the step", required=True),
    # optional: written by some producers, checked when present
    Field("eval_metric_initial", "number", "held-out metric before training (with step 1)", nullable=True),
    Field("step_time_s", "number", "seconds of this step (simulated and imported runs)", minimum=0),
    Field("response_tokens_max", "int", "the step's longest response, tokens (real runs)", minimum=0),
    Field("response_length_counts", "counts", "responses of each length 0..max_new_tokens (real runs)"),
    Field("other_cpu_fraction", "number", "other processes' share of the CPU over the step", nullable=True, minimum=0),
    Field("cpu_s", "number", "this process's CPU seconds over the step", nullable=True, minimum=0),
    Field("load_avg_1m", "number", "1-minute load average at the step's end", nullable=True, minimum=0),
    Field("algo", "str", "grpo or ppo (real runs)"),
    Field("engine", "str", "the rollout engine, hf or vllm (real runs)"),
    Field("group_size", "int", "responses per prompt, G (real runs)", minimum=1),
    Field("accuracy_train", "number", "fraction of the step's responses that are correct (real runs)", minimum=0),
    Field(
        "zero_variance_groups", "number", "share of the step's groups whose rewards all agree (real runs)", minimum=0
    ),
    Field("policy_loss", "number", "mean clipped policy loss over the step's micro-batches (real runs)"),
    Field("clip_fraction", "number", "fraction of tokens where the clip was active (real runs)", minimum=0),
    Field("value_loss", "number", "mean critic loss (real PPO runs)", minimum=0),
    Field("grad_norm_sq_small", "number", "mean squared gradient norm of one micro-batch", minimum=0),
    Field("grad_batch_small", "int", "responses in that micro-batch", minimum=1),
    Field("grad_norm_sq_big", "number", "squared gradient norm of the first mini-batch", minimum=0),
    Field("grad_batch_big", "int", "responses in that mini-batch", minimum=1),
    Field("staleness", "int", "policy versions between the rollout's weights and the update", minimum=0),
    Field("behav_weight_filtered", "number", "tokens the decoupled loss's weight cap left out (real runs)", minimum=0),
    Field("generated_responses", "int", "responses generated in the step, filtered ones too (DAPO)", minimum=0),
    Field("cumulative_generated", "int", "responses generated up to and with the step (DAPO)", minimum=0),
    Field("generation_rounds", "int", "generation rounds the step took to fill its batch (DAPO)", minimum=1),
    Field("groups_short", "int", "groups trained with equal rewards after the last round (DAPO)", minimum=0),
    Field("generation_tokens_per_s", "number", "response tokens / rollout seconds (simulated)", minimum=0),
    Field("num_preemptions", "int", "engine preemptions in the step (simulated)", minimum=0),
    Field("recomputed_tokens", "int", "context tokens prefilled again after preemptions (simulated)", minimum=0),
    Field("recompute_share", "number", "recompute's share of the step's engine seconds (simulated)", minimum=0),
    Field("mean_decode_batch", "number", "decoded tokens per decode iteration (simulated)", minimum=0),
    Field("peak_kv_tokens", "int", "largest KV cache on any replica, tokens (simulated)", minimum=0),
    Field("utilization", "mapping", "busy fraction of each GPU pool within the step (simulated)"),
    Field("source_format", "str", "verl, openrlhf, trl or nemo-rl (imported runs)"),
    Field("source_line", "int", "line of the step in the imported log", minimum=1),
    Field("source_metrics", "mapping", "the imported log's other numeric metrics of the step"),
    Field("checkpoint_s", "number", "a checkpoint save timed in the step, out of step_time_s (imported)", minimum=0),
)


# A run-log record's type: every field of :data:`RUN_LOG_FIELDS` (required ones plain, optional ones NotRequired; a
# producer's own extra keys are allowed at run time, as :func:`validate_record` allows them).
# tests/rlsim/test_records.py checks that the two list the same fields.
# (The functional form: its types are evaluated here, so NotRequired counts under postponed annotations.)
RunLogRecord = TypedDict(  # noqa: UP013
    "RunLogRecord",
    {
        "schema_version": int,
        "run_id": str,
        "step": int,
        "cumulative_samples": int,
        "prompts": int,
        "responses": int,
        "prompt_tokens": int | None,
        "response_tokens": int | None,
        "lr": float | None,
        "reward_mean": float | None,
        "eval_metric": float | None,
        "wall_s": float,
        "timing_s": dict[str, float],
        "eval_metric_initial": NotRequired[float | None],
        "step_time_s": NotRequired[float],
        "response_tokens_max": NotRequired[int],
        "response_length_counts": NotRequired[list[int]],
        "other_cpu_fraction": NotRequired[float | None],
        "cpu_s": NotRequired[float | None],
        "load_avg_1m": NotRequired[float | None],
        "algo": NotRequired[str],
        "engine": NotRequired[str],
        "group_size": NotRequired[int],
        "accuracy_train": NotRequired[float],
        "zero_variance_groups": NotRequired[float],
        "policy_loss": NotRequired[float],
        "clip_fraction": NotRequired[float],
        "value_loss": NotRequired[float],
        "grad_norm_sq_small": NotRequired[float],
        "grad_batch_small": NotRequired[int],
        "grad_norm_sq_big": NotRequired[float],
        "grad_batch_big": NotRequired[int],
        "staleness": NotRequired[int],
        "behav_weight_filtered": NotRequired[float],
        "generated_responses": NotRequired[int],
        "cumulative_generated": NotRequired[int],
        "generation_rounds": NotRequired[int],
        "groups_short": NotRequired[int],
        "generation_tokens_per_s": NotRequired[float],
        "num_preemptions": NotRequired[int],
        "recomputed_tokens": NotRequired[int],
        "recompute_share": NotRequired[float],
        "mean_decode_batch": NotRequired[float],
        "peak_kv_tokens": NotRequired[int],
        "utilization": NotRequired[dict[str, Any]],
        "source_format": NotRequired[str],
        "source_line": NotRequired[int],
        "source_metrics": NotRequired[dict[str, Any]],
        "checkpoint_s": NotRequired[float],
    },
)


FIELDS_BY_NAME: dict[str, Field] = {f.name: f for f in RUN_LOG_FIELDS}
REQUIRED_KEYS: tuple[str, ...] = tuple(f.name for f in RUN_LOG_FIELDS if f.required)


def _is_int(v: Any) -> bool:
    if type(v) is int:  # the common case, without the abstract-class check (simulated records: every step)
        return True
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _finite(v: Any) -> bool:
    return finite(v) is not None


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


_KIND_CHECKS = {"int": _is_int, "number": _finite, "str": _is_str}


def _check_field(f: Field, value: Any) -> None:
    if value is None:
        if not f.nullable:
            raise RunLogError(f"{f.name} is null; it must be {_kind_text(f)}")
        return
    if f.kind == "timing":
        _check_timing(value)
        return
    if f.kind == "counts":
        if not isinstance(value, list) or not all(_is_int(n) and n >= 0 for n in value):
            raise RunLogError(f"{f.name} {_short(value)} must be a list of integers >= 0")
        return
    if f.kind == "mapping":
        if not isinstance(value, dict):
            raise RunLogError(f"{f.name} {_short(value)} must be a mapping")
        return
    ok = _KIND_CHECKS[f.kind](value)
    if not ok or (f.minimum is not None and value < f.minimum):
        raise RunLogError(f"{f.name} {_short(value)} must be {_kind_text(f)}")


def _kind_text(f: Field) -> str:
    text = {"int": "an integer", "number": "a finite number", "str": "a string"}.get(f.kind, f.kind)
    return text + (f" >= {f.minimum:g}" if f.minimum is not None else "")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_timing(timing: Any) -> None:
    if not isinstance(timing, dict):
        raise RunLogError("timing_s must be a mapping of phase -> seconds")
    for phase, sec in timing.items():
        if phase not in _PHASE_NAMES:
            raise RunLogError(f"timing_s has unknown phase {phase!r}; phases are {', '.join(sorted(_PHASE_NAMES))}")
        if not _finite(sec) or sec < 0:
            raise RunLogError(f"timing_s.{phase} = {sec!r} must be a finite number >= 0")


def validate_record(rec: dict[str, Any]) -> None:
    """Raise RunLogError naming the first field that breaks the schema (missing, wrong type, out of range)."""
    if not isinstance(rec, dict):
        raise RunLogError(f"a run-log record must be a JSON object, not {type(rec).__name__}")
    missing = [k for k in REQUIRED_KEYS if k not in rec]
    if missing:
        raise RunLogError(f"run-log record misses key(s) {', '.join(missing)}")
    if rec["schema_version"] != SCHEMA_VERSION:
        raise RunLogError(f"schema_version {rec['schema_version']!r} is not {SCHEMA_VERSION}")
    for key, value in rec.items():
        f = FIELDS_BY_NAME.get(key)
        if f is not None:
            _check_field(f, value)


def run_log_record(**fields: Any) -> RunLogRecord:
    """One step's run-log record from its fields (``schema_version`` added), checked by :func:`validate_record`.

    ``run_log_record(run_id="r", step=1, cumulative_samples=8, prompts=2, responses=8, prompt_tokens=40,
    response_tokens=64, lr=1e-3, reward_mean=0.5, eval_metric=None, wall_s=1.2, timing_s={"rollout": 0.9})``
    """
    rec = {"schema_version": SCHEMA_VERSION, **fields}
    validate_record(rec)
    return rec  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------- bench tables

BENCH_COLUMNS: tuple[str, ...] = (
    "phase",  # rlsim.phases name: rollout, train_actor, old_logprob or weight_sync
    "engine",  # hf, vllm, or torch (training benches)
    "model",  # the model spec benchmarked (tiny, tiny:hidden_size=256, a folder, a hub name)
    "device",  # the device string of the machine (real.environment), or unknown
    "concurrency",  # sequences generated in one batch (rollout); sequences per step (train)
    "prompt_tokens",  # tokens per prompt (rollout)
    "response_tokens",  # tokens generated per sequence, EOS ignored (rollout)
    "tokens",  # tokens the repeat processed (generated for rollout, trained or scored for train)
    "sequences",  # sequences in the repeat
    "repeat",  # 0-based index of the timed repeat
    "time_s",  # seconds of the repeat (a weight sync: the mean of its loads)
    "tokens_per_s",  # tokens / time_s
    "bytes",  # weight bytes moved (weight_sync)
    "other_cpu_fraction",  # other processes' share of the CPU over the repeat (rlsim.host.machine_load)
    "cpu_s",  # this process's CPU seconds over the repeat
    "load_avg_1m",  # 1-minute load average at the repeat's end
    "provenance",  # JSON: device, engine and version, torch version, model, dtype, date, command, ...
)
BENCH_REQUIRED_COLUMNS: tuple[str, ...] = ("phase", "device", "time_s")
BENCH_PHASE_COLUMNS: dict[str, tuple[str, ...]] = {
    Phase.ROLLOUT.value: ("concurrency", "prompt_tokens", "response_tokens"),
    Phase.TRAIN_ACTOR.value: ("tokens", "sequences"),
    Phase.OLD_LOGPROB.value: ("tokens", "sequences"),
    Phase.WEIGHT_SYNC.value: ("bytes",),
    # rlsim-real bench optimizer (real/offload.py): torch's Adam step on the module, and the offloaded step's copies
    # (gradients out, parameters back) and Adam on the host buffers; bytes: the trained parameters' bytes
    **{phase: ("bytes",) for phase in ("optimizer", "offload_copy", "host_adam")},
    # rlsim-real bench detokenize (real/detokenize.py): vLLM's output processing with and without a tokenizer, and
    # the tokenizer calls alone; tokens: sequences x steps
    **{phase: ("concurrency", "tokens") for phase in ("detokenize", "no_detokenize", "tokenizer_calls")},
}
OPTIMIZER_BENCH_PHASES = ("optimizer", "offload_copy", "host_adam")  # bench phases that are no run phase
DETOKENIZE_BENCH_PHASES = ("detokenize", "no_detokenize", "tokenizer_calls")  # priced apart (real.detokenize)
