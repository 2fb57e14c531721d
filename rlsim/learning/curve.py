"""The metric curve in samples, defined once: ScaleRL's sigmoid ``R(S) = R0 + (A - R0) / (1 + (S_mid / S)^b)``
(arXiv 2510.13786), with R0 the metric at the start, A its asymptote, S_mid the samples at half the gain and b the
efficiency exponent. Samples are cumulative retained responses; the metric is unitless (a reward or a pass rate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rlsim.schema import MetricCurve

if TYPE_CHECKING:
    import numpy.typing as npt


def sigmoid_fraction(
    samples: np.ndarray | float, mid_samples: np.ndarray | float, exponent: np.ndarray | float
) -> np.ndarray:
    """``1 / (1 + (S_mid / S)^b)``: the share of the gain A - R0 that ScaleRL's curve has made after S samples.

    The one definition of the curve's shape (:func:`metric_at` and calibrate's sigmoid fit use it): 0 at S <= 0,
    1/2 at S_mid, rising to 1. The arguments broadcast against each other like numpy arrays; a power that
    overflows reads as its limit (0 well before S_mid, 1 well after)."""
    s = np.asarray(samples, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):
        frac = 1.0 / (1.0 + np.power(mid_samples / np.maximum(s, 1e-300), exponent))
    return np.where(s > 0, frac, 0.0)[()]


def metric_at(curve: MetricCurve, samples: npt.ArrayLike, multiplier: float = 1.0) -> np.ndarray:
    """R(S / m): the metric after ``samples`` cumulative samples for a configuration with multiplier m."""
    s = np.asarray(samples, dtype=float) / multiplier
    return curve.initial + (curve.asymptote - curve.initial) * sigmoid_fraction(s, curve.mid_samples, curve.exponent)
