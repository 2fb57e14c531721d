"""Input checks shared by the learning fits: arrays of numbers, curves of evaluated points, targets, and a run
log's batch and evaluated points.

Each refuses what a fit cannot use with a :class:`~calibrate.CalibrateError` that names the fix.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from calibrate import CalibrateError


def as_array(values: Any, name: str) -> np.ndarray:
    """A 1-d float copy of ``values`` (never a view of the caller's data); refuses NaN, inf and None."""
    try:
        arr = np.array(values, dtype=float, copy=True)
    except (TypeError, ValueError):
        raise CalibrateError(f"{name} must be a sequence of numbers; pass floats (drop unevaluated points)") from None
    if arr.ndim != 1:
        raise CalibrateError(f"{name} must be one-dimensional; got shape {arr.shape}: pass a flat sequence of numbers")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise CalibrateError(
            f"{name} holds a non-finite value (NaN, inf or None) at index {int(bad[0])}; drop unevaluated points "
            "(eval_metric null) or fix the log"
        )
    return arr


def curve_points(samples: Any, metric: Any, min_points: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    s = as_array(samples, "samples")
    m = as_array(metric, "metric")
    if s.size != m.size:
        raise CalibrateError(f"samples has {s.size} values but metric has {m.size}; pass one sample count per metric")
    if s.size < min_points:
        raise CalibrateError(
            f"{what} needs at least {min_points} evaluated points; got {s.size}: evaluate more often or run longer"
        )
    if np.any(s < 0):
        raise CalibrateError(f"samples holds a negative value ({s.min():g}); pass cumulative samples (>= 0)")
    steps = np.diff(s)
    if np.any(steps <= 0):
        i = int(np.flatnonzero(steps <= 0)[0])
        raise CalibrateError(
            f"samples must be strictly increasing; got {s[i]:g} then {s[i + 1]:g} at index {i + 1}: sort the "
            "points by cumulative samples and drop duplicates"
        )
    return s, m


def check_target(target: Any) -> float:
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not math.isfinite(target):
        raise CalibrateError(f"target {target!r} must be a finite number; pass the metric value to reach")
    return float(target)


def run_batch(run: Sequence[Mapping[str, Any]], index: int) -> int:
    """The responses per step of run ``index`` (a list of run-log records); refuses a run whose batch changes."""
    if not run:
        raise CalibrateError(f"run {index} has no records; drop it or pass its run log")
    batches = set()
    for rec in run:
        v = rec.get("responses")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise CalibrateError(
                f"run {index} step {rec.get('step', '?')}: responses = {v!r} must be a number > 0 (responses per step)"
            )
        batches.add(int(v))
    if len(batches) > 1:
        raise CalibrateError(
            f"run {index} changes its batch ({', '.join(map(str, sorted(batches)))} responses per step); split it "
            "into one run per batch size"
        )
    return batches.pop()


def run_points(run: Sequence[Mapping[str, Any]], index: int) -> tuple[np.ndarray, np.ndarray]:
    """The (cumulative samples, eval metric) points of run ``index`` (a list of run-log records), checked as
    :func:`curve_points` checks them; at least 3."""
    s, m = [], []
    for rec in run:
        v = rec.get("eval_metric")
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise CalibrateError(
                f"run {index} step {rec.get('step', '?')}: eval_metric = {v!r} is not a finite number; use null for "
                "steps without eval"
            )
        cs = rec.get("cumulative_samples")
        if isinstance(cs, bool) or not isinstance(cs, (int, float)) or not math.isfinite(cs):
            raise CalibrateError(
                f"run {index} step {rec.get('step', '?')}: cumulative_samples = {cs!r} must be a finite number"
            )
        s.append(float(cs))
        m.append(float(v))
    if len(s) < 3:
        raise CalibrateError(
            f"run {index} has {len(s)} evaluated points; a sigmoid fit needs at least 3: evaluate more often"
        )
    try:
        return curve_points(s, m, 3, f"run {index}")
    except CalibrateError as exc:
        raise CalibrateError(f"run {index}: {exc}") from None
