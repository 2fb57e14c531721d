"""Input checks shared by the learning fits: arrays of numbers, curves of evaluated points, targets.

Each refuses what a fit cannot use with a :class:`~calibrate.CalibrateError` that names the fix.
"""

from __future__ import annotations

import math
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


def finite_or_none(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(x)


def check_target(target: Any) -> float:
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not math.isfinite(target):
        raise CalibrateError(f"target {target!r} must be a finite number; pass the metric value to reach")
    return float(target)
