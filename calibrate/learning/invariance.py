"""How far apart learning curves at different batches are along samples (:func:`invariance_score`).

1.0 means identical curves: the batch changes nothing about how many samples a metric level takes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from calibrate import CalibrateError
from calibrate.learning.checks import check_target, curve_points
from calibrate.learning.curve import first_crossing

INVARIANCE_DEFINITION = (
    "levels: n_levels metric values evenly spaced strictly inside the common range [max of the curves' first "
    "values, min of the curves' maxima]; N_c(y): samples at which curve c first reaches y (linear interpolation "
    "between evaluated points); per level: ratio = max_c N_c / min_c N_c, gstd = exp(population std of "
    "log N_c); summary: mean and max over levels; stretch[c] = geometric mean over levels of N_c / N_first, "
    "first = the curve with the smallest key; 1.0 = identical curves"
)


def invariance_score(
    curves: Mapping[Any, tuple[Any, Any]], target: float | None = None, n_levels: int = 50
) -> dict[str, Any]:
    """How far apart learning curves at different batches are along the samples axis.

    Definition (also in the result's ``definition``): the metric levels y are ``n_levels`` values evenly spaced
    strictly inside the common range [max over curves of the first metric value, min over curves of the largest
    metric value]. N_c(y) is the samples at which curve c first reaches y, interpolated linearly between its
    evaluated points (as :func:`samples_to_target`). Per level: ``ratio(y) = max_c N_c(y) / min_c N_c(y)`` and
    ``gstd(y) = exp(std_c log N_c(y))`` (population std, ddof 0). Summary: ``mean_ratio``, ``max_ratio``,
    ``mean_gstd``, ``max_gstd`` over levels; all are 1.0 for identical curves. Two curves, one stretched by k along
    samples: ratio = k and gstd = sqrt(k) at every level. ``stretch[c]`` = geometric mean over levels of
    N_c(y) / N_first(y), first = the curve with the smallest key: the samples multiplier of c relative to it.
    With ``target`` (inside the common range), ``at_target`` holds ratio, gstd and N_c at that level; else None.
    Noisy curves inflate the score (first crossings of noise); pass fitted curves to compare shapes.
    """
    if len(curves) < 2:
        raise CalibrateError(
            f"invariance_score needs two or more curves; got {len(curves)}: add a run at another batch"
        )
    if not (isinstance(n_levels, int) and n_levels >= 1):
        raise CalibrateError(f"n_levels {n_levels!r} must be an integer >= 1; pass e.g. 50")
    keys = sorted(curves)
    pts = {}
    for key in keys:
        try:
            samples, metric = curves[key]
        except (TypeError, ValueError):
            raise CalibrateError(f"curve {key!r} must be a (samples, metric) pair; pass two sequences") from None
        pts[key] = curve_points(samples, metric, 2, f"curve {key!r}")
    lo = max(float(m[0]) for _, m in pts.values())
    hi = min(float(m.max()) for _, m in pts.values())
    if not hi > lo:
        raise CalibrateError(
            f"the curves do not overlap in metric: common range [{lo:g}, {hi:g}] is empty; compare runs that start "
            "from the same metric and rise past it"
        )
    levels = np.linspace(lo, hi, n_levels + 2)[1:-1]
    log_n = np.array([[math.log(first_crossing(s, m, y)) for y in levels] for s, m in pts.values()])  # (c, L)
    ratio = np.exp(log_n.max(axis=0) - log_n.min(axis=0))
    gstd = np.exp(log_n.std(axis=0))
    stretch = np.exp((log_n - log_n[0]).mean(axis=1))
    at_target = None
    if target is not None:
        target = check_target(target)
        if lo < target <= hi:
            nt = np.array([first_crossing(s, m, target) for s, m in pts.values()])
            at_target = {
                "target": target,
                "ratio": float(nt.max() / nt.min()),
                "gstd": float(np.exp(np.log(nt).std())),
                "samples": {str(k): float(v) for k, v in zip(keys, nt)},
            }
    return {
        "definition": INVARIANCE_DEFINITION,
        "mean_ratio": float(ratio.mean()),
        "max_ratio": float(ratio.max()),
        "mean_gstd": float(gstd.mean()),
        "max_gstd": float(gstd.max()),
        "stretch": {str(k): float(v) for k, v in zip(keys, stretch)},
        "level_range": [lo, hi],
        "levels": [float(y) for y in levels],
        "ratio_by_level": [float(x) for x in ratio],
        "gstd_by_level": [float(x) for x in gstd],
        "at_target": at_target,
    }
