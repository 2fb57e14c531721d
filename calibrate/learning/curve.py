"""ScaleRL's sigmoid fitted to the evaluated points of a run, and the samples at which a curve reaches a target.

* :func:`fit_sigmoid`: the metric curve in cumulative samples S, ScaleRL's form (arXiv 2510.13786)
  ``R(S) = R0 + (A - R0) / (1 + (S_mid / S)^b)``, the curve defined once in :func:`rlsim.learning.curve.metric_at`
  (its shape: :func:`rlsim.learning.curve.sigmoid_fraction`); the fit evaluates it through rlsim, so a fitted curve is
  the one the simulator follows.

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
  :func:`samples_to_target_from_fit`: the inverse of a fitted curve
  (:func:`rlsim.learning.model.reference_samples_to_target`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from calibrate import CalibrateError
from calibrate.learning.checks import check_target, curve_points
from rlsim.io.numbers import finite
from rlsim.learning.curve import metric_at, sigmoid_fraction
from rlsim.learning.model import LearningModelError, reference_samples_to_target
from rlsim.scenario import MetricCurve

B_MAX = 20.0  # largest sigmoid exponent b
B_MIN = 1e-3


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
        return metric_at(self.to_metric_curve(), samples)

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
                "asymptote": finite(self.asymptote_err),
                "mid_samples": finite(self.mid_samples_err),
                "exponent": finite(self.exponent_err),
            },
            "rmse": float(self.rmse),
            "num_points": int(self.num_points),
            "samples_range": [float(self.samples_range[0]), float(self.samples_range[1])],
            "at_bound": list(self.at_bound),
        }


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
    s, m = curve_points(samples, metric, 3, "a sigmoid fit")
    return fit_sigmoid_checked(s, m, r0, exclude_fraction, upper)


def fit_sigmoid_checked(
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
        f = sigmoid_fraction(s[None, :], math.exp(lm), bs[:, None])  # (nb, n); 0 at S = 0
        sf, ff = f @ y, np.einsum("ij,ij->i", f, f)
        gain = np.clip(np.divide(sf, ff, out=np.full_like(sf, gain_lo), where=ff > 0), gain_lo, gain_hi)
        sse = y @ y - 2 * gain * sf + gain**2 * ff
        k = int(np.argmin(sse))
        if sse[k] < best[0]:
            best = (float(sse[k]), float(gain[k]), float(lm), float(bs[k]))
    _, gain0, lm0, b0 = best

    def resid(p: np.ndarray) -> np.ndarray:  # p = (A, log S_mid, b)
        return r0 + (p[0] - r0) * sigmoid_fraction(s, math.exp(p[1]), p[2]) - m

    def jac(p: np.ndarray) -> np.ndarray:
        f = sigmoid_fraction(s, math.exp(p[1]), p[2])
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


def first_crossing(s: np.ndarray, m: np.ndarray, target: float) -> float | None:
    """Samples at which the checked points ``(s, m)`` first reach ``target``, linearly interpolated; None when
    never."""
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
    target = check_target(target)
    s, m = curve_points(samples, metric, 1, "samples-to-target")
    return first_crossing(s, m, target)


def samples_to_target_from_fit(fit: SigmoidFit, target: float) -> float | None:
    """The fitted curve's inverse: S with R(S) = target; 0.0 when target <= R0; None when the curve never reaches
    it (target >= A, or beyond 1e30 samples)."""
    target = check_target(target)
    if target <= fit.initial:
        return 0.0
    if target >= fit.asymptote:
        return None
    try:
        return reference_samples_to_target(fit.to_metric_curve(), target)
    except LearningModelError:
        return None
