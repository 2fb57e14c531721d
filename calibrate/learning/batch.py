"""How samples-to-target grows with the batch, fitted across batch sizes.

* :func:`fit_critical_batch`: ``E(B) = E_min (1 + B / B_crit) ** p``, least squares on ``log E`` over
  (log E_min, log B_crit), the power p fixed by the runs' LR rule (:func:`critical_power`: McCandlish et al.
  2018's 1 for the linear rule, Adam's 1/2 under sqrt, as ``fit --runs`` uses);
* :func:`table_multiplier`: the measured table (rlsim's ``table`` form of the batch multiplier).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from calibrate import CalibrateError
from calibrate.learning.checks import as_array
from rlsim.io.numbers import finite
from rlsim.scenario import BatchMultiplier


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
                "min_samples": finite(self.min_samples_err),
                "critical_batch": finite(self.critical_batch_err),
            },
            "rms_log_residual": float(self.rms_log_residual),
            "num_points": int(self.num_points),
            "batch_range": [float(self.batch_range[0]), float(self.batch_range[1])],
            "at_bound": self.at_bound,
            "power": float(self.power),
        }


def _batch_points(batches: Any, samples: Any) -> tuple[np.ndarray, np.ndarray]:
    b = as_array(batches, "batches")
    e = as_array(samples, "samples_to_target")
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
    fixed LR, whose mismatch with sqrt the LR term prices; rlsim.learning.model derives both), 1 under the linear rule
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
