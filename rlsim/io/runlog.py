"""Run-log files: JSON Lines, one record per step, shared by simulated runs, real runs and importers.

The record itself (its fields, types and units, the constructor and the validator) is defined in
:mod:`rlsim.io.records`; this module reads and writes files of them, validating every line. Files are append-only
and flushed per step, so a killed run loses at most the step in flight.

In tables (pandas), nested dicts are flattened with ``/``: ``timing_s/rollout``, ``utilization/rollout_pool``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from rlsim.io.records import REQUIRED_KEYS, SCHEMA_VERSION, RunLogError, validate_record

if TYPE_CHECKING:  # imported where a table is made: reading and writing records needs no pandas
    import pandas as pd

__all__ = [
    "REQUIRED_KEYS",
    "SCHEMA_VERSION",
    "RunLogError",
    "append_record",
    "flatten",
    "from_frame",
    "read_jsonl",
    "to_frame",
    "unflatten",
    "validate_record",
    "write_jsonl",
]


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
            except RecursionError:
                raise RunLogError(f"{path}:{lineno}: nested too deeply to be a run-log record") from None
            yield rec


def flatten(rec: Mapping[str, Any], sep: str = "/") -> dict[str, Any]:
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


def to_frame(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Records as a DataFrame with flattened ``timing_s/<phase>`` columns, one row per step."""
    # here, not at the top: it loads pandas (start-up time)
    import pandas as pd

    return pd.DataFrame([flatten(r) for r in records])


def from_frame(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Inverse of :func:`to_frame` (NaN becomes None)."""
    rows = df.astype(object).where(df.notna(), None).to_dict(orient="records")
    return [unflatten(r) for r in rows]
