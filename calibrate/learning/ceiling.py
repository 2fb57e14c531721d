"""Does the ceiling move with the batch? The asymptotes of the per-batch curves fit-learning fits, tested for
equality; where they differ, the table rlsim's ``learning.ceiling_batches`` / ``learning.ceilings`` hold.

ScaleRL (arXiv 2510.13786) finds larger batches slower early and higher at the end: the batch moves the asymptote
A of its compute-performance sigmoid, not only the samples axis. A run log says so only where its curve has
flattened: an asymptote fitted to a curve still rising is an extrapolation (ScaleRL fits only past its early
regime for the same reason). So a batch counts here only when its pooled curve's asymptote is determined: not on
a bound of the fit (the largest metric observed, or ``upper``, e.g. 1 for an accuracy every run reaches) and with
a finite error. The test: weighted least squares of one shared A against the determined asymptotes,
chi-square = sum_b (A_b - A_shared)^2 / sigma_b^2 on (k - 1) degrees of freedom; the ceiling moves when its
p-value is below ``LEVEL``, the asymptotes also differ by a material amount (``MIN_SHIFT`` of the reference
curve's gain A - R0: run logs with tiny noise make any difference significant) and the reference batch's asymptote
is among them (the table then agrees with the reference curve at the reference batch). Otherwise every batch
shares the reference curve's asymptote.

The batch term is then fitted on the samples axis alone: each batch's samples-to-target is divided by its
ceiling term (N* on the reference curve with the batch's ceiling over N* on the reference curve), as
rlsim.learning.model multiplies them back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.stats import chi2 as chi2_dist

from calibrate.learning.curve import SigmoidFit
from rlsim.learning.model import LearningModelError, reference_samples_to_target
from rlsim.scenario import MetricCurve

LEVEL = 0.05  # p-value below which the asymptotes are taken to differ
MIN_SHIFT = 0.02  # and by at least this share of the reference curve's gain (asymptote - initial)


@dataclass(frozen=True)
class CeilingTest:
    """The asymptotes' test across batches (module docstring)."""

    asymptotes: dict[int, tuple[float, float]]  # batch -> (A, one-sigma error) where the data determine it
    left_out: dict[int, str] = field(default_factory=dict)  # batch -> why its asymptote is not used
    chi2: float | None = None
    dof: int = 0
    p_value: float | None = None
    moves: bool = False
    reason: str = ""  # in words: why the ceiling moves or is shared

    @property
    def ceilings(self) -> dict[int, float]:
        """The table rlsim reads (batch -> ceiling) when the ceiling moves; empty when it is shared."""
        return {b: a for b, (a, _) in sorted(self.asymptotes.items())} if self.moves else {}

    @property
    def errors(self) -> dict[int, float]:
        """Their one-sigma errors (rlsim's learning.ceiling_errors: the band widens by the N* they move)."""
        return {b: e for b, (_, e) in sorted(self.asymptotes.items())} if self.moves else {}

    def to_dict(self) -> dict[str, Any]:
        return {
            "asymptotes": {str(b): {"asymptote": a, "error": e} for b, (a, e) in sorted(self.asymptotes.items())},
            "left_out": {str(b): why for b, why in sorted(self.left_out.items())},
            "chi2": self.chi2,
            "dof": self.dof,
            "p_value": self.p_value,
            "level": LEVEL,
            "moves": self.moves,
            "reason": self.reason,
        }


def ceiling_test(curves: dict[int, SigmoidFit], reference_batch: int) -> CeilingTest:
    """Whether the per-batch curves' asymptotes differ beyond their errors (module docstring)."""
    used: dict[int, tuple[float, float]] = {}
    left: dict[int, str] = {}
    for b, c in sorted(curves.items()):
        if "asymptote" in c.at_bound:
            left[b] = f"its asymptote {c.asymptote:.4g} is on a bound of the fit (the curve has not flattened there)"
        elif not (math.isfinite(c.asymptote_err) and c.asymptote_err > 0):
            left[b] = "its asymptote has no finite error (too few points)"
        else:
            used[b] = (float(c.asymptote), float(c.asymptote_err))
    if len(used) < 2:
        why = "fewer than two batches have a determined asymptote"
        return CeilingTest(used, left, reason=f"shared: {why}")
    a = np.array([x for x, _ in used.values()])
    w = 1.0 / np.array([e for _, e in used.values()]) ** 2
    shared = float(np.sum(w * a) / np.sum(w))
    chi2 = float(np.sum(w * (a - shared) ** 2))
    dof = len(used) - 1
    p = float(chi2_dist.sf(chi2, dof))
    if p >= LEVEL:
        reason = f"shared: the asymptotes agree within their errors (chi-square {chi2:.3g} on {dof}, p = {p:.3g})"
        return CeilingTest(used, left, chi2, dof, p, False, reason)
    gain = abs(curves[reference_batch].asymptote - curves[reference_batch].initial)
    shift = float(a.max() - a.min())
    if shift < MIN_SHIFT * gain:
        reason = (
            f"shared: the asymptotes differ (p = {p:.3g}) by {shift:.3g}, under {MIN_SHIFT:.0%} of the reference "
            f"curve's gain ({gain:.3g})"
        )
        return CeilingTest(used, left, chi2, dof, p, False, reason)
    if reference_batch not in used:
        reason = (
            f"shared: the asymptotes differ (p = {p:.3g}) but the reference batch's is not determined, so the "
            "table would not agree with the reference curve"
        )
        return CeilingTest(used, left, chi2, dof, p, False, reason)
    reason = f"moves with the batch: chi-square {chi2:.3g} on {dof}, p = {p:.3g} < {LEVEL}"
    return CeilingTest(used, left, chi2, dof, p, True, reason)


def ceiling_factor(reference: MetricCurve, ceilings: dict[int, float], batch: int, target: float) -> float | None:
    """The ceiling term at ``batch`` as rlsim reads the table (log batch, nearest end beyond): N* on ``reference``
    with that ceiling over N* on ``reference``; None where that ceiling does not clear ``target``."""
    xs = np.log(np.array(sorted(ceilings), dtype=float))
    top = float(np.interp(math.log(batch), xs, np.array([ceilings[b] for b in sorted(ceilings)])))
    try:
        moved = reference_samples_to_target(replace(reference, asymptote=top), target)
    except LearningModelError:
        return None
    return moved / reference_samples_to_target(reference, target)
