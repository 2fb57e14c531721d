"""The run-log schema: JSON Lines, one object per step, shared by simulated runs, real runs and importers.

Each line holds at least the keys in ``REQUIRED_KEYS``: the schema version, run id, step (1-based),
cumulative samples (retained responses so far), prompts and responses in the step, prompt and response tokens,
the learning rate, the mean reward, the eval metric (``null`` when not evaluated), wall-clock seconds since the
start *excluding eval*, and ``timing_s``: seconds per phase (names from :mod:`rlsim.phases`). Extra keys are
allowed (``staleness``, ``utilization``, ``grad_norm_sq_small`` ...). Files are append-only and flushed per step,
so a killed run loses at most the step in flight.

In tables (pandas), nested dicts are flattened with ``/``: ``timing_s/rollout``, ``utilization/rollout_pool``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from rlsim.errors import RlsimError
from rlsim.phases import PHASES

SCHEMA_VERSION = 1

REQUIRED_KEYS: tuple[str, ...] = (
    "schema_version",
    "run_id",
    "step",
    "cumulative_samples",
    "prompts",
    "responses",
    "prompt_tokens",
    "response_tokens",
    "lr",
    "reward_mean",
    "eval_metric",
    "wall_s",
    "timing_s",
)
_PHASE_NAMES = frozenset(p.value for p in PHASES)


class RunLogError(RlsimError, ValueError):
    """A run-log record or file breaks the schema."""


def validate_record(rec: dict[str, Any]) -> None:
    """Raise RunLogError naming the first key that breaks the schema."""
    missing = [k for k in REQUIRED_KEYS if k not in rec]
    if missing:
        raise RunLogError(f"run-log record misses key(s) {', '.join(missing)}")
    if rec["schema_version"] != SCHEMA_VERSION:
        raise RunLogError(f"schema_version {rec['schema_version']!r} is not {SCHEMA_VERSION}")
    if not isinstance(rec["step"], int) or rec["step"] < 1:
        raise RunLogError(f"step {rec['step']!r} must be an integer >= 1")
    timing = rec["timing_s"]
    if not isinstance(timing, dict):
        raise RunLogError("timing_s must be a mapping of phase -> seconds")
    for phase, sec in timing.items():
        if phase not in _PHASE_NAMES:
            raise RunLogError(f"timing_s has unknown phase {phase!r}; phases are {', '.join(sorted(_PHASE_NAMES))}")
        if not isinstance(sec, (int, float)) or isinstance(sec, bool) or not math.isfinite(sec) or sec < 0:
            raise RunLogError(f"timing_s.{phase} = {sec!r} must be a finite number >= 0")


def append_record(fh: TextIO, rec: dict[str, Any]) -> None:
    """Validate, append one line and flush it to disk."""
    validate_record(rec)
    fh.write(json.dumps(rec, sort_keys=True, allow_nan=False) + "\n")
    fh.flush()


def write_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> None:
    with open(path, "w") as fh:
        for rec in records:
            append_record(fh, rec)


def read_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield validated records; a broken line raises RunLogError naming the file and line number."""
    with open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                validate_record(rec)
            except (json.JSONDecodeError, RunLogError) as exc:
                raise RunLogError(f"{path}:{lineno}: {exc}") from None
            yield rec


def flatten(rec: dict[str, Any], sep: str = "/") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in rec.items():
        if isinstance(value, dict):
            for sub, v in value.items():
                out[f"{key}{sep}{sub}"] = v
        else:
            out[key] = value
    return out


def unflatten(row: dict[str, Any], sep: str = "/") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if sep in key:
            head, sub = key.split(sep, 1)
            out.setdefault(head, {})[sub] = value
        else:
            out[key] = value
    return out


def to_frame(records: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Records as a DataFrame with flattened ``timing_s/<phase>`` columns, one row per step."""
    return pd.DataFrame([flatten(r) for r in records])


def from_frame(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Inverse of :func:`to_frame` (NaN becomes None)."""
    rows = df.astype(object).where(df.notna(), None).to_dict(orient="records")
    return [unflatten(r) for r in rows]
