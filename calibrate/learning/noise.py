"""The gradient-noise scale B_simple from the two-batch gradient norms that real runs log (docs/reference.md section 3).

:func:`noise_terms`: the unbiased per-step estimates of |G|^2 and tr(Sigma); :func:`b_simple_pooled`: B_simple
from them, pooled over every step of one or more runs, with a bootstrap interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from calibrate import CalibrateError

GRAD_KEYS = ("grad_norm_sq_small", "grad_norm_sq_big", "grad_batch_small", "grad_batch_big")


def noise_terms(records: Sequence[Mapping[str, Any]]) -> tuple[list[Any], list[float], list[float]]:
    """Per step with the two-batch gradient norms: the step, the unbiased |G|^2 and tr(Sigma) estimates.

    Raises CalibrateError, naming the step and the fix, when a run cannot give the estimator (no norms logged,
    one batch size only, non-finite values)."""
    steps: list[Any] = []
    g2: list[float] = []
    tr: list[float] = []
    for i, rec in enumerate(records):
        present = [k for k in GRAD_KEYS if rec.get(k) is not None]
        if not present:
            continue
        step = rec.get("step", i + 1)
        if len(present) < len(GRAD_KEYS):
            missing = [k for k in GRAD_KEYS if k not in present]
            raise CalibrateError(
                f"step {step} logs {', '.join(present)} but not {', '.join(missing)}; log all four or none"
            )
        vals = []
        for k in GRAD_KEYS:
            v = rec[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise CalibrateError(f"step {step}: {k} = {v!r} must be a finite number; fix the log")
            vals.append(float(v))
        gs, gb, bs, bb = vals
        if bs <= 0 or bb <= 0:
            raise CalibrateError(f"step {step}: grad batches {bs:g}, {bb:g} must be > 0; fix the log")
        if bs == bb:
            raise CalibrateError(
                f"step {step}: grad_batch_small == grad_batch_big == {bs:g}; the two-batch estimator needs two "
                "different batch sizes"
            )
        steps.append(step)
        g2.append((bb * gb - bs * gs) / (bb - bs))
        tr.append((gs - gb) / (1.0 / bs - 1.0 / bb))
    if not steps:
        raise CalibrateError(
            f"no record has {', '.join(GRAD_KEYS)}; log the two-batch gradient norms (real runs do) to estimate "
            "B_simple"
        )
    return steps, g2, tr


def b_simple_pooled(
    runs: Sequence[Sequence[Mapping[str, Any]]],
    resamples: int = 1000,
    names: Sequence[str] | None = None,
    skip_unusable: bool = False,
) -> dict[str, Any]:
    """B_simple from every step of one or more runs (seeds of one configuration): ``mean tr(Sigma) / mean |G|^2``.

    Per step (:func:`noise_terms`, docs/reference.md section 3): ``|G|^2 ~ (B_big |g_big|^2 - B_small |g_small|^2) /
    (B_big - B_small)`` and ``tr(Sigma) ~ (|g_small|^2 - |g_big|^2) / (1/B_small - 1/B_big)``. McCandlish et al.
    (2018, appendix A) average the two unbiased estimates separately over many steps before taking the ratio,
    because each step's ratio is dominated by noise in |G|^2. Pooling all steps of all runs uses every logged step
    with equal weight, which is what the learning model needs: one noise scale for the stretch of training up to
    the target. Returns ``b_simple`` (None when the pooled |G|^2 is not positive or no run could give the
    estimator), ``grad_sq``, ``trace_sigma``, ``num_steps``, ``num_runs`` (used), ``interval``: the 16th and
    84th percentiles of the ratio over ``resamples`` bootstrap resamples of the steps (seeded: the same logs give
    the same interval), and ``unusable``: ``"name: why"`` per run that could not give the estimator. Such a run
    raises CalibrateError naming it (``names[i]``, default ``run i``) unless ``skip_unusable``.
    """
    g2: list[float] = []
    tr: list[float] = []
    unusable: list[str] = []
    for i, run in enumerate(runs):
        name = names[i] if names is not None else f"run {i}"
        try:
            _, g, t = noise_terms(run)
        except CalibrateError as exc:
            if not skip_unusable:
                raise CalibrateError(f"{name}: {exc}") from None
            unusable.append(f"{name}: {exc}")
            continue
        g2 += g
        tr += t
    if not g2:
        none = dict.fromkeys(("b_simple", "grad_sq", "trace_sigma"))
        return {**none, "num_steps": 0, "num_runs": 0, "interval": (None, None), "unusable": unusable}
    g_arr, t_arr = np.array(g2), np.array(tr)
    grad_sq, trace = float(g_arr.mean()), float(t_arr.mean())
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(g_arr), size=(resamples, len(g_arr)))
    g_b, t_b = g_arr[idx].mean(axis=1), t_arr[idx].mean(axis=1)
    ratios = np.where(g_b > 0, t_b / np.where(g_b > 0, g_b, 1.0), np.inf)
    lo, hi = (float(x) for x in np.percentile(ratios, [16, 84], method="nearest"))  # inf stays inf, never nan
    return {
        "b_simple": trace / grad_sq if grad_sq > 0 else None,
        "grad_sq": grad_sq,
        "trace_sigma": trace,
        "num_steps": len(g_arr),
        "num_runs": len(runs) - len(unusable),
        "interval": (lo, hi),
        "unusable": unusable,
    }
