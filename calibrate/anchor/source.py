"""The measured step an anchor is fitted on: from a framework's metrics log (verl, OpenRLHF, TRL, NeMo RL, through
``calibrate.importers.convert.import_log``) or typed (``--step-time S``, ``--phase NAME=S``). Seconds.

From a log: the step named by ``step`` or else the median, over every step after the first (its warm-ups: CUDA
graphs, the engine's first wake, compilation), of the step time and of each phase the log timed (each median
alone; a log of one step gives that step). ``format="auto"`` imports the log with every known format and takes
the one that reads the most timed steps; a tie is an error asking for ``--format``.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from calibrate import CalibrateError
from calibrate.anchor.fit import Measured
from calibrate.importers.convert import FORMATS, import_log
from rlsim.phases import TIMED_PHASES, Phase

PHASE_NAMES = tuple(p.value for p in TIMED_PHASES)


def _timed(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("step_time_s") or r.get("timing_s")]


def read_log(path: Path, fmt: str, prompts_per_step: int, group_size: int) -> tuple[str, list[dict[str, Any]]]:
    """(format, the timed records) of a framework log; ``fmt`` ``auto`` tries every format (module docstring)."""
    if fmt != "auto":
        result = import_log(path, fmt, prompts_per_step=prompts_per_step, group_size=group_size)
        return fmt, _timed(result.records)
    if not path.is_file():
        raise CalibrateError(f"no such log file {str(path)!r}; check the path")
    read: dict[str, list[dict[str, Any]]] = {}
    for name in FORMATS:
        try:
            result = import_log(path, name, prompts_per_step=prompts_per_step, group_size=group_size)
            read[name] = _timed(result.records)
        except CalibrateError:
            continue
    most = max((len(r) for r in read.values()), default=0)
    best = [n for n, r in read.items() if len(r) == most and most]
    if len(best) != 1:
        found = f"it reads as {' and '.join(best)}" if best else "no format reads a timed step from it"
        raise CalibrateError(f"{path}: cannot tell the log's format ({found}); pass --format {'|'.join(FORMATS)}")
    return best[0], read[best[0]]


def from_log(path: Path, fmt: str, prompts_per_step: int, group_size: int, step: int | None = None) -> Measured:
    """The anchor step of a log (module docstring)."""
    name, records = read_log(path, fmt, prompts_per_step, group_size)
    if not records:
        raise CalibrateError(f"{path}: no step with a step time or phase timings in it as a {name} log")
    if step is not None:
        chosen = [r for r in records if r["step"] == step]
        if not chosen:
            have = ", ".join(str(r["step"]) for r in records[:10])
            raise CalibrateError(f"--step {step}: the log has no timed step {step} (it has {have}...)")
        where = f"step {step}"
    else:
        chosen = records[1:] if len(records) > 1 else records
        span = f"steps {chosen[0]['step']}..{chosen[-1]['step']}" if len(chosen) > 1 else f"step {chosen[0]['step']}"
        where = f"median of {span}" + (" (the first left out: warm-up)" if len(records) > 1 else "")
    steps = [r["step_time_s"] for r in chosen if r.get("step_time_s")]
    phases = {}
    for p in PHASE_NAMES:
        if p == Phase.EVAL.value:
            continue
        values = [r["timing_s"][p] for r in chosen if (r.get("timing_s") or {}).get(p)]
        if values:
            phases[p] = float(statistics.median(values))
    return check(
        Measured(
            step_time_s=float(statistics.median(steps)) if steps else None,
            phases_s=phases,
            source=f"{path} ({name} log, {where})",
        )
    )


def typed(step_time_s: float | None, phases: list[str]) -> Measured:
    """A step typed on the command line: ``--step-time S`` and ``--phase NAME=S`` items."""
    out: dict[str, float] = {}
    for item in phases:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or name not in PHASE_NAMES:
            raise CalibrateError(f"--phase {item!r}: write NAME=SECONDS with NAME one of {', '.join(PHASE_NAMES)}")
        if name in out:
            raise CalibrateError(f"--phase {name} given twice; give each phase once")
        try:
            out[name] = float(text)
        except ValueError:
            raise CalibrateError(f"--phase {item!r}: {text!r} is not a number of seconds") from None
    return check(Measured(step_time_s=step_time_s, phases_s=out, source="a step typed on the command line"))


def check(m: Measured) -> Measured:
    """``m`` if every time is a positive finite number of seconds, else one error naming the first that is not."""
    items = ([("step time", m.step_time_s)] if m.step_time_s is not None else []) + list(m.phases_s.items())
    for name, value in items:
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise CalibrateError(f"{name} = {value!r}: a measured time must be a positive number of seconds")
    if m.step_time_s is None and not m.phases_s:
        raise CalibrateError("nothing measured: give LOG, or --step-time S and/or --phase NAME=S")
    return m
