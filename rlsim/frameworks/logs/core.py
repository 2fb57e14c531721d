"""The framework-independent half of an import: lines into rows of metrics, rows into steps, and the helpers the
per-framework mappings (``rlsim.frameworks.logs.verl``, ...) read a step's metrics with.

A framework module gives a :class:`Format` (its step keys, its step timer, how to map one step's merged metrics to
a :class:`Mapped`); :mod:`rlsim.frameworks.logs.convert` runs every format through :func:`read_rows` and
:func:`group_steps` and turns the mapped steps into run-log records. The rules these functions follow (flattening,
merging rows of one step, duplicated and unnumbered steps) are in :mod:`rlsim.frameworks.logs`.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlsim.frameworks.logs.console import console_rows
from rlsim.io.files import read_text
from rlsim.phases import Phase

REL_TOL = 0.02  # nested-timer test: the parts fit in the total within 2 % + 0.5 s
ABS_TOL_S = 0.5
INT_TOL = 1e-3  # a derived response count must be this close (relative) to an integer


class RowError(Exception):
    """A row that cannot become a record; the message is the reason reported with its line number."""


# ---------------------------------------------------------------------------------------------------------------
# what a framework module provides


@dataclass
class Mapped:
    """One step's metrics in rlsim's terms, as a framework mapping read them."""

    timing: dict[str, float]  # seconds per phase, keyed by Phase values
    step_s: float  # step time excluding eval
    used: set[str]  # the log keys the mapping consumed (the rest goes to source_metrics)
    reward: float | None = None
    lr: float | None = None
    eval_metric: float | None = None
    responses: int | None = None
    mean_prompt: float | None = None
    mean_response: float | None = None
    tokens_cumulative: float | None = None  # TRL num_tokens (prompt + response, cumulative)
    count_note: str | None = None
    checkpoint_s: float | None = None  # a checkpoint save timed inside the step, taken out of step_s


@dataclass(frozen=True)
class Format:
    """How one framework's log is read."""

    name: str
    step_keys: tuple[str, ...]  # the keys holding the step number, the first present wins
    timer_hint: str  # for "missing the step timer ..." messages
    has_timer: Callable[[dict[str, Any]], bool]  # whether a row holds the step's timers (a training step)
    eval_metric: Callable[[dict[str, Any]], float | None]
    map_row: Callable[[dict[str, Any]], Mapped]
    normalize: Callable[[str], str] = lambda k: k  # a log key -> the name the mapping knows it by
    # phases the framework times as one (their sum is what the log measures; rlsim check compares the sum)
    together: tuple[tuple[Phase, ...], ...] = ()


# ---------------------------------------------------------------------------------------------------------------
# numbers


def is_number(v: Any) -> bool:
    """A JSON/CSV number a float can hold: not a bool, not an integer past the largest float (JSON allows
    10**400, and math.isfinite of it raises OverflowError). NaN and infinities pass; callers check finiteness."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return False
    return isinstance(v, float) or abs(v) <= sys.float_info.max


def need(row: dict[str, Any], key: str) -> float:
    """A number that must be present, finite and >= 0 (timers)."""
    v = row[key]
    if not is_number(v) or not math.isfinite(v):
        raise RowError(f"{key} = {v!r} is not a finite number")
    if v < 0:
        raise RowError(f"{key} = {v!r} is negative")
    return float(v)


def opt(row: dict[str, Any], key: str, *, timer: bool = False) -> float | None:
    """A number that may be missing; NaN/inf read as not logged (except timers); a string is an error."""
    if key not in row:
        return None
    if timer:
        return need(row, key)
    v = row[key]
    if not is_number(v):
        raise RowError(f"{key} = {v!r} is not a number")
    return float(v) if math.isfinite(v) else None


def first(row: dict[str, Any], keys: tuple[str, ...], used: set[str], *, timer: bool = False) -> float | None:
    """The first of ``keys`` present in the row (marked as used), or None."""
    for key in keys:
        if key in row:
            used.add(key)
            return opt(row, key, timer=timer)
    return None


def mean_of(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def eval_mean(row: dict[str, Any], pick: Callable[[str], bool]) -> float | None:
    """The mean of the finite numbers under the keys ``pick`` accepts (eval metrics over data sources)."""
    vals = [float(v) for k, v in sorted(row.items()) if pick(k) and is_number(v) and math.isfinite(v)]
    return mean_of(vals)


def nested(total: float, part: float, others: float) -> bool:
    """Whether ``part`` was timed inside ``total``: the other timers plus ``part`` still fit in ``total``."""
    return part <= total and others + part <= total * (1 + REL_TOL) + ABS_TOL_S


def step_without_eval(
    row: dict[str, Any], step: float, timing: dict[str, float], others: float, key: str, used: set[str]
) -> float:
    """The step's seconds with its evaluation taken out: the eval timer ``key`` (when logged) goes into
    ``timing`` as the eval phase and is subtracted from ``step`` when it was timed inside it (:func:`nested`)."""
    if key not in row:
        return step
    sec = need(row, key)
    used.add(key)
    timing[Phase.EVAL.value] = sec
    return step - sec if nested(step, sec, others) else step


def derive_count(total_tokens: float | None, mean_prompt: float | None, mean_response: float | None) -> int | None:
    """Responses = total tokens / (mean prompt + mean response length), when that lands close to an integer."""
    if total_tokens is None or mean_prompt is None or mean_response is None or mean_prompt + mean_response <= 0:
        return None
    n = total_tokens / (mean_prompt + mean_response)
    k = round(n)
    return k if k >= 1 and abs(n - k) <= INT_TOL * k else None


# ---------------------------------------------------------------------------------------------------------------
# reading


def lengths_and_count(m: Mapped, row: dict[str, Any], used: set[str], prompt: str, response: str, total: str) -> Mapped:
    """Fill ``m``'s mean prompt and response lengths from their keys, and its responses per step as
    ``total`` tokens / (mean prompt + mean response) when that is close to an integer (:func:`derive_count`)."""
    m.mean_prompt, m.mean_response = opt(row, prompt), opt(row, response)
    m.responses = derive_count(opt(row, total), m.mean_prompt, m.mean_response)
    if m.responses is not None:
        used.add(total)
        m.count_note = f"responses per step = {total} / ({prompt} + {response})"
    return m


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


def read_rows(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[tuple[int, str]]]:
    """(line number, flat metrics) per row of a JSON Lines or CSV log, or of a console log that
    rlsim.frameworks.logs.console reads, and (line number, reason) per bad line."""
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
    if not any(line.lstrip().startswith("{") for line in text.splitlines()):
        printed = console_rows(text)  # verl's console logger or NeMo RL's step summary, as pasted from a terminal
        if printed is not None:
            return printed
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append((lineno, f"not valid JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}"))
            continue
        except RecursionError:  # [[[[... thousands deep
            problems.append((lineno, "nested too deeply to be a line of metrics"))
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
# grouping rows into steps


@dataclass
class Group:
    """The merged rows of one step."""

    step: int
    line: int  # the first line of the step
    row: dict[str, Any]
    timer_line: int | None = None  # the line that held the step timer


def _step_of(fmt: Format, row: dict[str, Any]) -> tuple[str, int] | None:
    for key in fmt.step_keys:
        if key in row:
            v = row[key]
            if not is_number(v) or not math.isfinite(v) or not float(v).is_integer():
                raise RowError(f"step key {key} = {v!r} is not an integer")
            return key, int(v)
    return None


def _merge(into: dict[str, Any], row: dict[str, Any]) -> None:
    for k, v in row.items():
        if k.startswith("profiling/") and is_number(into.get(k)) and is_number(v):
            into[k] = into[k] + v  # a profiled function called several times in the step
        else:
            into.setdefault(k, v)


def group_steps(fmt: Format, rows: list[tuple[int, dict[str, Any]]], problems: list[tuple[int, str]]) -> list[Group]:
    """The rows merged into steps, in the order the steps first appear; rows that cannot be placed go to
    ``problems``."""
    keyed = any(k in row for _, row in rows for k in fmt.step_keys)
    groups: dict[int, Group] = {}
    order: list[int] = []
    pending: list[tuple[int, dict[str, Any]]] = []
    max_timed = -(10**9)
    counter = 0
    for lineno, row in rows:
        try:
            found = _step_of(fmt, row) if keyed else None
        except RowError as exc:
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
            g = groups[step] = Group(step, pending[0][0] if pending else lineno, {})
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
