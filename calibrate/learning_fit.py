"""Fit rlsim's learning model (rlsim.learning) from run logs. Pure functions: numpy and scipy, no file I/O.

Pieces (REFERENCE sections 3-5):

* :func:`fit_sigmoid`: the metric curve in cumulative samples S, ScaleRL's form (arXiv 2510.13786)
  ``R(S) = R0 + (A - R0) / (1 + (S_mid / S)^b)``.

  Procedure (equivalent to ScaleRL's grid over (A, C_mid) with b from curve_fit, but vectorized): R0 is fixed
  (the first observed metric, or given). For fixed (S_mid, b) the model is linear in A, so the least-squares A is
  closed-form (clipped to its bounds, which is exact for a one-dimensional quadratic). A grid over
  (log S_mid, log b) with A profiled out this way finds the basin; a bounded joint least-squares refinement of
  (A, log S_mid, b) (scipy ``least_squares``, trust-region reflective, analytic Jacobian) polishes it.
  Bounds: A in [max observed, ``upper``] (``upper=None``: at most R0 + 10 x the observed gain),
  S_mid in [1e-3 x smallest positive S, 1e4 x largest S], b in [1e-3, 20].
  Uncertainties (one sigma) come from the linearized covariance at the optimum,
  ``s^2 (J^T J)^+`` with ``s^2 = SSR / (n - 3)``; S_mid's is propagated from log S_mid (delta method). They are
  ``inf`` when n == 3 (no degrees of freedom left) and understate the error when a parameter sits on a bound.
* :func:`samples_to_target`: first upward crossing of a target by the evaluated points, linearly interpolated;
  :func:`samples_to_target_from_fit`: the inverse of a fitted curve.
* :func:`fit_critical_batch`: ``E(B) = E_min (1 + B / B_crit) ** p``, least squares on ``log E`` over
  (log E_min, log B_crit), the power p fixed by the runs' LR rule (:func:`critical_power`: McCandlish et al.
  2018's 1 for the linear rule, Adam's 1/2 under sqrt, as ``fit --runs`` uses); :func:`table_multiplier`: the
  measured table.
* :func:`invariance_score`: how far apart learning curves at different batches are along samples.
* :func:`noise_terms`: the two-batch gradient-noise estimates per step; :func:`b_simple_pooled`: B_simple from
  them, pooled over every step of one or more runs.
* :func:`fit_learning`: all of the above from run logs grouped by batch, and the ``learning`` dict of a profile.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares
from scipy.special import expit

from calibrate.errors import CalibrateError
from rlsim.learning import LearningModelError, reference_samples_to_target
from rlsim.scenario import BatchMultiplier, Learning, MetricCurve

B_MAX = 20.0  # largest sigmoid exponent b
B_MIN = 1e-3
GRAD_KEYS = ("grad_norm_sq_small", "grad_norm_sq_big", "grad_batch_small", "grad_batch_big")
INVARIANCE_DEFINITION = (
    "levels: n_levels metric values evenly spaced strictly inside the common range [max of the curves' first "
    "values, min of the curves' maxima]; N_c(y): samples at which curve c first reaches y (linear interpolation "
    "between evaluated points); per level: ratio = max_c N_c / min_c N_c, gstd = exp(population std of "
    "log N_c); summary: mean and max over levels; stretch[c] = geometric mean over levels of N_c / N_first, "
    "first = the curve with the smallest key; 1.0 = identical curves"
)


# ---------------------------------------------------------------------------------------------- checks


def _array(values: Any, name: str) -> np.ndarray:
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


def _curve_points(samples: Any, metric: Any, min_points: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    s = _array(samples, "samples")
    m = _array(metric, "metric")
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


def _finite_or_none(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(x)


# ---------------------------------------------------------------------------------------------- sigmoid


@dataclass(frozen=True)
class SigmoidFit:
    """R(S) = initial + (asymptote - initial) / (1 + (mid_samples / S)^exponent) fitted to evaluated points.

    ``*_err`` are one-sigma uncertainties (linearized covariance; see the module docstring), ``rmse`` the root mean
    square residual over the ``num_points`` fitted points, ``samples_range`` their sample range.
    """

    initial: float
    asymptote: float
    mid_samples: float
    exponent: float
    asymptote_err: float
    mid_samples_err: float
    exponent_err: float
    rmse: float
    num_points: int
    samples_range: tuple[float, float]
    at_bound: tuple[str, ...] = ()  # parameters that ended on a bound: "asymptote", "mid_samples", "exponent"

    # ScaleRL's names
    @property
    def R0(self) -> float:
        return self.initial

    @property
    def A(self) -> float:
        return self.asymptote

    @property
    def S_mid(self) -> float:
        return self.mid_samples

    @property
    def b(self) -> float:
        return self.exponent

    def predict(self, samples: Any) -> np.ndarray:
        """R(S) at ``samples`` (R0 at S = 0)."""
        s = np.asarray(samples, dtype=float)
        return self.initial + (self.asymptote - self.initial) * _frac(s, math.log(self.mid_samples), self.exponent)

    def to_metric_curve(self) -> MetricCurve:
        return MetricCurve(
            initial=float(self.initial),
            asymptote=float(self.asymptote),
            mid_samples=float(self.mid_samples),
            exponent=float(self.exponent),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (non-finite uncertainties become None)."""
        return {
            "initial": float(self.initial),
            "asymptote": float(self.asymptote),
            "mid_samples": float(self.mid_samples),
            "exponent": float(self.exponent),
            "uncertainty": {
                "asymptote": _finite_or_none(self.asymptote_err),
                "mid_samples": _finite_or_none(self.mid_samples_err),
                "exponent": _finite_or_none(self.exponent_err),
            },
            "rmse": float(self.rmse),
            "num_points": int(self.num_points),
            "samples_range": [float(self.samples_range[0]), float(self.samples_range[1])],
            "at_bound": list(self.at_bound),
        }


def _frac(s: np.ndarray, log_mid: float | np.ndarray, b: float | np.ndarray) -> np.ndarray:
    """1 / (1 + (S_mid / S)^b) computed stably as expit(b (log S - log S_mid)); 0 at S = 0."""
    s = np.asarray(s, dtype=float)
    with np.errstate(divide="ignore"):
        log_s = np.log(s)
    return np.where(s > 0, expit(b * (log_s - log_mid)), 0.0)


def fit_sigmoid(
    samples: Sequence[float] | np.ndarray,
    metric: Sequence[float] | np.ndarray,
    r0: float | None = None,
    exclude_fraction: float = 0.0,
    upper: float | None = 1.0,
) -> SigmoidFit:
    """Fit ScaleRL's sigmoid in cumulative samples to evaluated points of one run.

    ``r0``: the fixed initial metric R0 (default: the first observed metric, before any exclusion).
    ``exclude_fraction``: drop points with samples < exclude_fraction x the largest samples (ScaleRL drops the
    first ~epoch). ``upper``: the largest possible asymptote (1.0 for an accuracy; None for an unbounded metric).
    The metric must rise: the curve is increasing in S.
    """
    s, m = _curve_points(samples, metric, 3, "a sigmoid fit")
    return _fit_sigmoid(s, m, r0, exclude_fraction, upper)


def _fit_sigmoid(
    s: np.ndarray, m: np.ndarray, r0: float | None, exclude_fraction: float, upper: float | None
) -> SigmoidFit:
    """The fit on checked arrays (``s`` sorted, ties allowed: pooled seeds)."""
    if not (isinstance(exclude_fraction, (int, float)) and 0.0 <= exclude_fraction < 1.0):
        raise CalibrateError(f"exclude_fraction {exclude_fraction!r} must be in [0, 1); pass e.g. 0.1 or 0")
    if r0 is None:
        r0 = float(m[0])
    elif not (isinstance(r0, (int, float)) and math.isfinite(r0)):
        raise CalibrateError(f"r0 {r0!r} must be a finite number; pass the initial metric or None")
    r0 = float(r0)
    keep = s >= exclude_fraction * s[-1]
    s, m = s[keep], m[keep]
    if s.size < 3:
        raise CalibrateError(
            f"a sigmoid fit needs at least 3 evaluated points after excluding the first {exclude_fraction:g} of "
            f"samples; {s.size} remain: lower exclude_fraction or evaluate more often"
        )
    max_obs = float(m.max())
    if max_obs <= r0:
        raise CalibrateError(
            f"the metric never rises above R0 = {r0:g} (max {max_obs:g}); the sigmoid fits a rising metric: check "
            "the metric's sign or pass r0"
        )
    if upper is None:
        a_hi = r0 + 10.0 * (max_obs - r0)
    else:
        if not (isinstance(upper, (int, float)) and math.isfinite(upper)):
            raise CalibrateError(f"upper {upper!r} must be a finite number or None; pass 1.0 for an accuracy")
        if max_obs > upper:
            raise CalibrateError(
                f"the metric reaches {max_obs:g}, above upper = {upper:g}; pass upper=None for a metric that is "
                "not an accuracy, or a larger bound"
            )
        a_hi = float(upper)
    a_hi = max(a_hi, max_obs + 1e-12 * max(1.0, abs(max_obs)))  # least_squares needs lb < ub
    pos = s[s > 0]
    if pos.size == 0:
        raise CalibrateError("every point has samples 0; pass cumulative samples that grow during the run")
    lm_lo, lm_hi = math.log(pos.min()) - math.log(1e3), math.log(s[-1]) + math.log(1e4)
    y = m - r0
    gain_lo, gain_hi = max_obs - r0, a_hi - r0

    # grid over (log S_mid, log b) with the gain A - R0 profiled out in closed form
    log_mids = np.linspace(lm_lo, lm_hi, 90)
    bs = np.geomspace(0.05, B_MAX, 70)
    with np.errstate(divide="ignore"):
        log_s = np.where(s > 0, np.log(np.where(s > 0, s, 1.0)), -np.inf)
    best = (math.inf, 0.0, 0.0, 0.0)
    for lm in log_mids:
        f = expit(bs[:, None] * (log_s[None, :] - lm))  # (nb, n); S = 0 gives expit(-inf) = 0
        sf, ff = f @ y, np.einsum("ij,ij->i", f, f)
        gain = np.clip(np.divide(sf, ff, out=np.full_like(sf, gain_lo), where=ff > 0), gain_lo, gain_hi)
        sse = y @ y - 2 * gain * sf + gain**2 * ff
        k = int(np.argmin(sse))
        if sse[k] < best[0]:
            best = (float(sse[k]), float(gain[k]), float(lm), float(bs[k]))
    _, gain0, lm0, b0 = best

    def resid(p: np.ndarray) -> np.ndarray:
        return r0 + (p[0] - r0) * expit(p[2] * (log_s - p[1])) - m

    def jac(p: np.ndarray) -> np.ndarray:
        f = expit(p[2] * (log_s - p[1]))
        d = (p[0] - r0) * f * (1 - f)
        with np.errstate(invalid="ignore"):
            db = np.where(s > 0, d * (log_s - p[1]), 0.0)
        return np.column_stack([f, -p[2] * d, db])

    lb = np.array([max_obs, lm_lo, B_MIN])
    ub = np.array([a_hi, lm_hi, B_MAX])
    x0 = np.clip([r0 + gain0, lm0, b0], lb, ub)
    res = least_squares(resid, x0, jac=jac, bounds=(lb, ub), method="trf", x_scale="jac", xtol=1e-12, ftol=1e-12)
    p = res.x if res.cost <= 0.5 * best[0] + 1e-300 else x0  # keep the grid point if the polish went astray
    r = resid(p)
    sse = float(r @ r)
    n = s.size
    dof = n - 3
    if dof > 0:
        j = jac(p)
        cov = (sse / dof) * np.linalg.pinv(j.T @ j)
        errs = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        a_err, lm_err, b_err = (float(e) for e in errs)
    else:
        a_err = lm_err = b_err = math.inf
    mid = math.exp(p[1])
    names = ("asymptote", "mid_samples", "exponent")
    tol = 1e-9
    at_bound = tuple(
        nm
        for nm, v, lo, hi in zip(names, p, lb, ub)
        if (v - lo) <= tol * max(1, abs(lo)) or (hi - v) <= tol * max(1, abs(hi))
    )
    # A at max observed is a data bound, not a wall of the search: report only A at `upper`
    at_bound = tuple(
        nm for nm in at_bound if not (nm == "asymptote" and abs(p[0] - max_obs) <= tol * max(1, abs(max_obs)))
    )
    return SigmoidFit(
        initial=r0,
        asymptote=float(p[0]),
        mid_samples=mid,
        exponent=float(p[2]),
        asymptote_err=a_err,
        mid_samples_err=mid * lm_err if math.isfinite(lm_err) else math.inf,
        exponent_err=b_err,
        rmse=math.sqrt(sse / n),
        num_points=int(n),
        samples_range=(float(s[0]), float(s[-1])),
        at_bound=at_bound,
    )


# ---------------------------------------------------------------------------------------------- samples-to-target


def _check_target(target: Any) -> float:
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not math.isfinite(target):
        raise CalibrateError(f"target {target!r} must be a finite number; pass the metric value to reach")
    return float(target)


def _first_crossing(s: np.ndarray, m: np.ndarray, target: float) -> float | None:
    hit = np.flatnonzero(m >= target)
    if hit.size == 0:
        return None
    i = int(hit[0])
    if i == 0:
        return float(s[0])
    s0, s1, m0, m1 = s[i - 1], s[i], m[i - 1], m[i]
    return float(s0 + (target - m0) / (m1 - m0) * (s1 - s0))


def samples_to_target(
    samples: Sequence[float] | np.ndarray, metric: Sequence[float] | np.ndarray, target: float
) -> float | None:
    """Samples at which ``metric`` first reaches ``target`` (>=), interpolated linearly between the evaluated points
    around the first crossing; the first sample count when the first point already meets it; None when never."""
    target = _check_target(target)
    s, m = _curve_points(samples, metric, 1, "samples-to-target")
    return _first_crossing(s, m, target)


def samples_to_target_from_fit(fit: SigmoidFit, target: float) -> float | None:
    """The fitted curve's inverse: S with R(S) = target; 0.0 when target <= R0; None when the curve never reaches
    it (target >= A, or beyond 1e30 samples)."""
    target = _check_target(target)
    if target <= fit.initial:
        return 0.0
    if target >= fit.asymptote:
        return None
    try:
        return reference_samples_to_target(fit.to_metric_curve(), target)
    except LearningModelError:
        return None


# ---------------------------------------------------------------------------------------------- batch


@dataclass(frozen=True)
class CriticalBatchFit:
    """E(B) = min_samples (1 + B / critical_batch) (McCandlish et al. 2018), fitted in log space.

    ``*_err`` are one-sigma uncertainties (linearized covariance of (log E_min, log B_crit), ``s^2 = SSR/(n-2)``,
    propagated by the delta method; ``inf`` with two points). ``rms_log_residual``: RMS of log E - log model.
    ``at_bound``: "upper" when B_crit hit 1e3 x the largest batch (samples invariant in batch over the measured
    range), "lower" when it hit 1e-3 x the smallest (samples proportional to batch), else "".
    """

    min_samples: float
    critical_batch: float
    min_samples_err: float
    critical_batch_err: float
    rms_log_residual: float
    num_points: int
    batch_range: tuple[float, float]
    at_bound: str = ""
    power: float = 1.0  # E = E_min (1 + B / B_crit) ** power: 1 McCandlish (LR tuned), 0.5 Adam under the sqrt rule

    @property
    def E_min(self) -> float:
        return self.min_samples

    @property
    def B_crit(self) -> float:
        return self.critical_batch

    @property
    def min_steps(self) -> float:
        """S_min = E_min x B_crit: the steps needed at an infinite batch."""
        return self.min_samples * self.critical_batch

    def predict(self, batches: Any) -> np.ndarray:
        return self.min_samples * (1.0 + np.asarray(batches, dtype=float) / self.critical_batch) ** self.power

    def to_batch_multiplier(self) -> BatchMultiplier:
        return BatchMultiplier(
            form="critical_batch", critical_batch=float(self.critical_batch), critical_power=float(self.power)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_samples": float(self.min_samples),
            "critical_batch": float(self.critical_batch),
            "uncertainty": {
                "min_samples": _finite_or_none(self.min_samples_err),
                "critical_batch": _finite_or_none(self.critical_batch_err),
            },
            "rms_log_residual": float(self.rms_log_residual),
            "num_points": int(self.num_points),
            "batch_range": [float(self.batch_range[0]), float(self.batch_range[1])],
            "at_bound": self.at_bound,
            "power": float(self.power),
        }


def _batch_points(batches: Any, samples: Any) -> tuple[np.ndarray, np.ndarray]:
    b = _array(batches, "batches")
    e = _array(samples, "samples_to_target")
    if b.size != e.size:
        raise CalibrateError(
            f"batches has {b.size} values but samples_to_target has {e.size}; pass one samples-to-target per batch"
        )
    if np.any(b <= 0) or np.any(e <= 0):
        raise CalibrateError("batches and samples_to_target must be > 0; drop runs that never reached the target")
    if np.unique(b).size < 2:
        raise CalibrateError(
            f"need samples-to-target at two or more distinct batch sizes; got {np.unique(b).size} "
            f"({', '.join(f'{x:g}' for x in np.unique(b))}): add runs at another batch"
        )
    return b, e


def fit_critical_batch(
    batches: Sequence[float] | np.ndarray, samples_to_target: Sequence[float] | np.ndarray, power: float = 1.0
) -> CriticalBatchFit:
    """Fit E(B) = E_min (1 + B / B_crit) ** power to samples-to-target at each batch by least squares in log E.

    ``power`` is fixed by the LR rule (:func:`critical_power`). Repeated batches (seeds) are allowed: each point
    counts once. B_crit is bounded to [1e-3 x smallest batch, 1e3 x largest batch].
    """
    b, e = _batch_points(batches, samples_to_target)
    log_e = np.log(e)
    lc_lo, lc_hi = math.log(b.min()) - math.log(1e3), math.log(b.max()) + math.log(1e3)

    def resid(p: np.ndarray) -> np.ndarray:
        return p[0] + power * np.log1p(b / math.exp(p[1])) - log_e

    def jac(p: np.ndarray) -> np.ndarray:
        q = b / math.exp(p[1])
        return np.column_stack([np.ones_like(b), -power * q / (1 + q)])

    # profile over log B_crit: log E_min is the mean residual in closed form
    grid = np.linspace(lc_lo, lc_hi, 400)
    shape = power * np.log1p(b[None, :] / np.exp(grid)[:, None])
    le = (log_e[None, :] - shape).mean(axis=1)
    sse = ((le[:, None] + shape - log_e[None, :]) ** 2).sum(axis=1)
    k = int(np.argmin(sse))
    x0 = np.array([le[k], grid[k]])
    lb, ub = np.array([-np.inf, lc_lo]), np.array([np.inf, lc_hi])
    res = least_squares(resid, x0, jac=jac, bounds=(lb, ub), method="trf", xtol=1e-12, ftol=1e-12)
    p = res.x if 2 * res.cost <= sse[k] + 1e-300 else x0
    r = resid(p)
    ssr = float(r @ r)
    n = b.size
    if n > 2:
        j = jac(p)
        cov = (ssr / (n - 2)) * np.linalg.pinv(j.T @ j)
        le_err, lc_err = (float(x) for x in np.sqrt(np.clip(np.diag(cov), 0.0, None)))
    else:
        le_err = lc_err = math.inf
    e_min, b_crit = math.exp(p[0]), math.exp(p[1])
    at_bound = ""
    if p[1] >= lc_hi - 1e-6:
        at_bound = "upper"
    elif p[1] <= lc_lo + 1e-6:
        at_bound = "lower"
    return CriticalBatchFit(
        min_samples=e_min,
        critical_batch=b_crit,
        min_samples_err=e_min * le_err if math.isfinite(le_err) else math.inf,
        critical_batch_err=b_crit * lc_err if math.isfinite(lc_err) else math.inf,
        rms_log_residual=math.sqrt(ssr / n),
        num_points=int(n),
        batch_range=(float(b.min()), float(b.max())),
        at_bound=at_bound,
        power=float(power),
    )


def critical_power(lr_rule: str | None) -> float:
    """The critical-batch power for runs trained under ``lr_rule``: 1/2 for Adam under the sqrt rule (and a
    fixed LR, whose mismatch with sqrt the LR term prices; rlsim.learning derives both), 1 under the linear rule
    (McCandlish et al. 2018, LR tuned per batch) and when the rule is unknown."""
    return 0.5 if lr_rule in ("sqrt", "none") else 1.0


def table_multiplier(
    batches: Sequence[float] | np.ndarray,
    samples_to_target: Sequence[float] | np.ndarray,
    allow_extrapolation: bool = False,
) -> BatchMultiplier:
    """BatchMultiplier(form="table") from measured samples-to-target, sorted by batch; repeated batches (seeds)
    are merged by their geometric mean."""
    b, e = _batch_points(batches, samples_to_target)
    ub = np.unique(b)
    merged = [float(np.exp(np.log(e[b == x]).mean())) for x in ub]
    return BatchMultiplier(
        form="table",
        batches=tuple(float(x) for x in ub),
        samples_to_target=tuple(merged),
        allow_extrapolation=bool(allow_extrapolation),
    )


# ---------------------------------------------------------------------------------------------- invariance


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
        pts[key] = _curve_points(samples, metric, 2, f"curve {key!r}")
    lo = max(float(m[0]) for _, m in pts.values())
    hi = min(float(m.max()) for _, m in pts.values())
    if not hi > lo:
        raise CalibrateError(
            f"the curves do not overlap in metric: common range [{lo:g}, {hi:g}] is empty; compare runs that start "
            "from the same metric and rise past it"
        )
    levels = np.linspace(lo, hi, n_levels + 2)[1:-1]
    log_n = np.array([[math.log(_first_crossing(s, m, y)) for y in levels] for s, m in pts.values()])  # (c, L)
    ratio = np.exp(log_n.max(axis=0) - log_n.min(axis=0))
    gstd = np.exp(log_n.std(axis=0))
    stretch = np.exp((log_n - log_n[0]).mean(axis=1))
    at_target = None
    if target is not None:
        target = _check_target(target)
        if lo < target <= hi:
            nt = np.array([_first_crossing(s, m, target) for s, m in pts.values()])
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


# ---------------------------------------------------------------------------------------------- B_simple


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

    Per step (:func:`noise_terms`, REFERENCE section 3): ``|G|^2 ~ (B_big |g_big|^2 - B_small |g_small|^2) /
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


# ---------------------------------------------------------------------------------------------- from run logs


@dataclass(frozen=True)
class RunFit:
    batch: int
    num_points: int
    sigmoid: SigmoidFit
    samples_to_target: float | None  # measured first crossing
    samples_to_target_fit: float | None  # inverse of the run's sigmoid
    max_samples: float


@dataclass(frozen=True)
class LearningFit:
    """Everything :func:`fit_learning` measured; :meth:`to_profile_learning` is the profile's ``learning`` dict."""

    target: float
    reference_batch: int
    runs: tuple[RunFit, ...]
    curves: dict[int, SigmoidFit]  # per batch, on the pooled points of its runs
    samples_to_target: dict[int, float]  # per batch used in the batch fits
    samples_source: dict[int, str]  # "measured" (first crossing) or "fit" (the batch curve's inverse)
    critical_batch: CriticalBatchFit
    table: BatchMultiplier
    invariance: dict[str, Any]
    b_simple: dict[int, dict[str, Any]] = field(default_factory=dict)  # per batch, pooled over its runs' steps
    samples_spread: float = 0.0
    notes: tuple[str, ...] = ()
    lr_rule: str | None = None  # the runs' LR rule: it fixes the critical-batch power

    @property
    def metric_curve(self) -> MetricCurve:
        return self.curves[self.reference_batch].to_metric_curve()

    def to_learning(self, base: Learning | None = None) -> Learning:
        """``base`` (default Learning()) with the fitted curve, target, batch multiplier and spread."""
        return dataclasses.replace(
            base or Learning(),
            reference_batch=int(self.reference_batch),
            metric=self.metric_curve,
            target=float(self.target),
            batch_multiplier=self.critical_batch.to_batch_multiplier(),
            samples_spread=float(min(self.samples_spread, 2.0)),
        )

    def to_profile_learning(self) -> dict[str, Any]:
        """Plain JSON-able dict for the ``learning`` key of an rlsim profile (non-finite values become None).

        ``reference_batch``, ``metric``, ``target``, ``batch_multiplier`` and ``samples_spread`` are rlsim
        ``Learning`` fields; the rest documents the fit.
        """
        from rlsim.profile import LEARNING_VERSION

        ref = self.curves[self.reference_batch]
        inv = {k: v for k, v in self.invariance.items() if k not in ("levels", "ratio_by_level", "gstd_by_level")}
        return {
            "version": LEARNING_VERSION,
            "reference_batch": int(self.reference_batch),
            "metric": {
                k: v for k, v in ref.to_dict().items() if k in ("initial", "asymptote", "mid_samples", "exponent")
            },
            "metric_fit": {
                k: v for k, v in ref.to_dict().items() if k not in ("initial", "asymptote", "mid_samples", "exponent")
            },
            "target": float(self.target),
            "batch_multiplier": {
                "form": "critical_batch",
                "critical_batch": float(self.critical_batch.critical_batch),
                "critical_power": float(self.critical_batch.power),
            },
            "invariant_rule": "linear" if self.critical_batch.power == 1.0 and self.lr_rule == "linear" else "sqrt",
            "critical_batch_fit": self.critical_batch.to_dict(),
            "batch_multiplier_table": {
                "form": "table",
                "batches": list(self.table.batches or ()),
                "samples_to_target": list(self.table.samples_to_target or ()),
            },
            "samples_spread": float(self.samples_spread),
            "samples_to_target": {
                str(b): {
                    "samples": float(n),
                    "source": self.samples_source[b],
                    "runs": sum(1 for r in self.runs if r.batch == b),
                }
                for b, n in sorted(self.samples_to_target.items())
            },
            "curves": {str(b): c.to_dict() for b, c in sorted(self.curves.items())},
            "invariance": inv,
            "b_simple": {str(b): _finite_or_none(d["b_simple"]) for b, d in sorted(self.b_simple.items())} or None,
            "b_simple_interval": {
                str(b): [_finite_or_none(x) for x in d["interval"]] for b, d in sorted(self.b_simple.items())
            }
            or None,
            "fitted_range": {
                "batch": [min(self.curves), max(self.curves)],
                "samples": [min(r.sigmoid.samples_range[0] for r in self.runs), max(r.max_samples for r in self.runs)],
            },
            "notes": list(self.notes),
        }


def _run_batch(run: Sequence[Mapping[str, Any]], index: int) -> int:
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


def _run_points(run: Sequence[Mapping[str, Any]], index: int) -> tuple[np.ndarray, np.ndarray]:
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
        return _curve_points(s, m, 3, f"run {index}")
    except CalibrateError as exc:
        raise CalibrateError(f"run {index}: {exc}") from None


def fit_learning(
    runs: Sequence[Sequence[Mapping[str, Any]]],
    target: float,
    reference_batch: int | None = None,
    exclude_fraction: float = 0.0,
    upper: float | None = 1.0,
    lr_rule: str | None = None,
) -> LearningFit:
    """Fit the learning model from run logs (one list of step records per run) at two or more batch sizes.

    Runs are grouped by batch (``responses`` per step). Per run: a sigmoid fit and the measured samples-to-target.
    Per batch: a sigmoid on the pooled evaluated points of its runs (R0 = mean of the runs' first metrics) and the
    samples-to-target used across batches: the geometric mean of the runs' measured first crossings when every run
    reached the target, else the batch curve's inverse (``samples_source`` says which; a batch whose curve never
    reaches the target is left out with a note). Across batches: the critical-batch fit, the table, the invariance
    score of the batch curves (evaluated on 257 points over each batch's observed samples), and B_simple per batch
    where logged, pooled over every logged step of that batch's runs (:func:`b_simple_pooled`).
    ``reference_batch`` (default: the smallest batch with a samples-to-target) must be one of the batches.
    ``samples_spread``: mean over batches with two or more runs that reached the target of the standard deviation
    (ddof 1) of the log of their first crossings (rlsim.learning's definition); 0 when none.
    """
    target = _check_target(target)
    if isinstance(runs, Mapping) or not isinstance(runs, Sequence) or not runs:
        raise CalibrateError("runs must be a non-empty list of run logs (each a list of step records)")
    batch_of = [_run_batch(run, i) for i, run in enumerate(runs)]
    distinct = sorted(set(batch_of))
    if len(distinct) < 2:
        raise CalibrateError(f"need run logs at two or more batch sizes for a learning fit; got one (B={distinct[0]})")
    if reference_batch is not None and reference_batch not in distinct:
        raise CalibrateError(
            f"reference_batch {reference_batch!r} is not among the run batches ({', '.join(map(str, distinct))}); "
            "pass one of them or None"
        )
    points = [_run_points(run, i) for i, run in enumerate(runs)]
    run_fits = []
    for i, ((s, m), b) in enumerate(zip(points, batch_of)):
        try:
            sig = _fit_sigmoid(s, m, None, exclude_fraction, upper)
        except CalibrateError as exc:
            raise CalibrateError(f"run {i} (B={b}): {exc}") from None
        run_fits.append(
            RunFit(
                b,
                int(s.size),
                sig,
                _first_crossing(s, m, target),
                samples_to_target_from_fit(sig, target),
                float(s[-1]),
            )
        )

    curves: dict[int, SigmoidFit] = {}
    stt: dict[int, float] = {}
    source: dict[int, str] = {}
    notes: list[str] = []
    spreads = []
    for b in distinct:
        idx = [i for i, x in enumerate(batch_of) if x == b]
        s = np.concatenate([points[i][0] for i in idx])
        m = np.concatenate([points[i][1] for i in idx])
        order = np.argsort(s, kind="stable")
        r0 = float(np.mean([points[i][1][0] for i in idx]))
        try:
            curves[b] = _fit_sigmoid(s[order], m[order], r0, exclude_fraction, upper)
        except CalibrateError as exc:
            raise CalibrateError(f"batch {b}: {exc}") from None
        measured = [run_fits[i].samples_to_target for i in idx]
        hits = [x for x in measured if x is not None and x > 0]
        if len(hits) == len(measured):
            stt[b] = float(np.exp(np.mean(np.log(hits))))
            source[b] = "measured"
        else:
            n_fit = samples_to_target_from_fit(curves[b], target)
            if n_fit is None or n_fit <= 0:
                notes.append(f"B={b}: the target {target:g} is not reached, measured or by the fit; left out")
            else:
                stt[b] = n_fit
                source[b] = "fit"
                notes.append(f"B={b}: samples-to-target from the fitted curve (not every run reached the target)")
        if len(hits) >= 2:
            spreads.append(float(np.std(np.log(hits), ddof=1)))  # rlsim.learning: the log-sd over seeds
    if len(stt) < 2:
        raise CalibrateError(
            f"the target {target:g} is reached (measured or by the fit) at fewer than two batch sizes "
            f"({', '.join(map(str, stt)) or 'none'}); lower the target or run longer"
        )
    if reference_batch is None:
        reference_batch = min(stt)
    elif reference_batch not in stt:
        raise CalibrateError(
            f"reference_batch {reference_batch} never reaches the target {target:g}; pick one of "
            f"{', '.join(map(str, stt))} or lower the target"
        )
    if not curves[reference_batch].initial < target < curves[reference_batch].asymptote:
        raise CalibrateError(
            f"the reference curve (B={reference_batch}) runs from {curves[reference_batch].initial:g} to "
            f"{curves[reference_batch].asymptote:g}; pick a target strictly between them"
        )
    bl = sorted(stt)
    cb = fit_critical_batch(bl, [stt[b] for b in bl], critical_power(lr_rule))
    table = table_multiplier(bl, [stt[b] for b in bl])
    fitted = {}
    for b in distinct:
        smax = max(r.max_samples for r in run_fits if r.batch == b)
        grid = np.linspace(0.0, smax, 257)
        fitted[b] = (grid, curves[b].predict(grid))
    try:
        inv = invariance_score(fitted, target=target)
    except CalibrateError as exc:
        inv = {"definition": INVARIANCE_DEFINITION, "error": str(exc)}
        notes.append(f"invariance: {exc}")
    bsimple: dict[int, dict[str, Any]] = {}
    for b in distinct:  # runs that logged no gradient norms are left out; broken norms are an error
        logged = [
            i
            for i, run in enumerate(runs)
            if batch_of[i] == b and any(rec.get(k) is not None for rec in run for k in GRAD_KEYS)
        ]
        if logged:
            bsimple[b] = b_simple_pooled([runs[i] for i in logged], names=[f"run {i} (B={b})" for i in logged])
    return LearningFit(
        target=target,
        reference_batch=int(reference_batch),
        runs=tuple(run_fits),
        curves=curves,
        samples_to_target=stt,
        samples_source=source,
        critical_batch=cb,
        table=table,
        invariance=inv,
        b_simple=bsimple,
        samples_spread=float(np.mean(spreads)) if spreads else 0.0,
        notes=tuple(notes),
        lr_rule=lr_rule,
    )
