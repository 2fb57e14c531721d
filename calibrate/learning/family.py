"""The curve family from runs at two or more values of one knob (``rlsim-calibrate fit-learning --family``): which of
the sigmoid's midpoint S_mid, exponent b and ceiling A the knob moves, with their errors, and the table
rlsim's ``learning.family.<knob>`` holds (rlsim.learning.family).

Per knob value (the batch B, responses per prompt G at one batch, or the staleness k) the evaluated points of its
runs are pooled and ScaleRL's sigmoid fitted to them (calibrate.learning.curve) with one R0 shared by every value:
the mean of every run's metric before training (``eval_metric_initial``, else its first evaluation), since the
runs start from one model. Each value's parameters are then read against the reference value's as ratios:
S_mid_v / S_mid_ref, b_v / b_ref and (A_v - R0) / (A_ref - R0), the share of the gain kept; those ratios are the
table's columns (rlsim normalizes at the reference, where they are 1).

Uncertainty: the fit's linearized covariance (calibrate.learning.curve), the two curves' errors of the log parameter
in quadrature; with five or more runs at every value also a bootstrap over seeds (the runs at each value resampled
with replacement, ``boots`` times, each resample refitted from the full fit's optimum: the standard deviation of
each log ratio over the resamples), and the larger of the two is used (a bootstrap over few seeds understates the
spread: on 3 seeds a value 1.7 covariance errors off came out 3.4 bootstrap errors off). ``method`` says which.
Seeds that never reach the target at a value where others do are left out of that value's curve (they make the stall
share fit-learning measures, and would pull a curve of the seeds that learn down); where none reaches it, all are
kept (a ceiling below the target is what the table must show). A parameter moves when its log ratios differ from 0
beyond their errors: chi-square = sum over the non-reference values of (log ratio / its sd)^2 on as many degrees of
freedom, p below ``LEVEL`` (the ceiling test's level, calibrate.learning.ceiling). An asymptote on a bound of the
fit (a curve that has not flattened) is not determined and does not count toward the ceiling's test.

The table written: the S_mid column always (the seed paper's member moves it alone), the exponent and gain
columns where they move; a column that does not move is left out (1 at every value). rlsim holds the table at its
ends beyond the values fitted (with a warning): the family says nothing past the runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares
from scipy.stats import chi2 as chi2_dist

from calibrate import CalibrateError
from calibrate.learning.ceiling import LEVEL
from calibrate.learning.checks import check_target, run_batch, run_points
from calibrate.learning.curve import SigmoidFit, first_crossing, fit_sigmoid_checked
from calibrate.learning.groups import run_group_size
from calibrate.learning.staleness import run_initial, run_staleness
from rlsim.learning.curve import sigmoid_fraction
from rlsim.run.profile import LEARNING_VERSION

PARAMS = ("mid_samples", "exponent", "gain")
MIN_BOOT_RUNS = 5  # runs at every knob value for the bootstrap over seeds; fewer: the fit's covariance alone
KNOB_KEYS = ("batch", "group", "staleness")


def knob_of(run: Sequence[Mapping[str, Any]], knob: str, index: int) -> float:
    """A run's value of ``knob``: responses per step, the group size it logs, or its largest staleness."""
    if knob == "batch":
        return float(run_batch(run, index))
    if knob == "group":
        return float(run_group_size(run, index))
    return float(run_staleness(run))


def varying_knobs(runs: Sequence[Sequence[Mapping[str, Any]]]) -> list[str]:
    """The knobs whose values differ between ``runs`` (a run that logs no group size has none)."""
    out = []
    for knob in KNOB_KEYS:
        try:
            values = {knob_of(run, knob, i) for i, run in enumerate(runs)}
        except CalibrateError:
            continue
        if len(values) > 1:
            out.append(knob)
    return out


@dataclass(frozen=True)
class ParamShift:
    """One parameter across the knob values: its ratio to the reference's and the ratio's one-sigma error (in log)
    per value, and the test of all ratios being 1."""

    ratios: dict[float, float]
    log_errors: dict[float, float]
    chi2: float | None
    dof: int
    p_value: float | None
    moved: bool
    note: str = ""


@dataclass(frozen=True)
class FamilyFit:
    knob: str
    reference: float  # the reference knob value (batch, G or k)
    initial: float  # the shared R0
    curves: dict[float, SigmoidFit]  # per knob value, R0 shared
    runs: dict[float, int]  # runs per knob value
    shifts: dict[str, ParamShift]  # per parameter (PARAMS)
    method: str  # "bootstrap over seeds (N resamples)" or "the fit's covariance"
    samples_to_target: dict[float, float | None] = field(default_factory=dict)  # median first crossing per value
    notes: tuple[str, ...] = ()

    def table(self, source: str = "") -> dict[str, Any]:
        """The ``learning.family.<knob>`` table (plain data): knob values relative to the reference (staleness as
        it is), the S_mid column and each column that moved."""
        vals = sorted(self.curves)
        scale = 1.0 if self.knob == "staleness" else self.reference
        out: dict[str, Any] = {"values": [v / scale for v in vals]}
        for p in PARAMS:
            if p == "mid_samples" or self.shifts[p].moved:
                out[p] = [self.shifts[p].ratios[v] for v in vals]
        out["source"] = source or f"rlsim-calibrate fit-learning --family {self.knob}"
        return out

    def to_dict(self) -> dict[str, Any]:
        """The report written beside the table (``learning.family_fit``)."""
        return {
            "knob": self.knob,
            "reference": self.reference,
            "initial": self.initial,
            "method": self.method,
            "level": LEVEL,
            "runs": {f"{v:g}": n for v, n in sorted(self.runs.items())},
            "curves": {f"{v:g}": c.to_dict() for v, c in sorted(self.curves.items())},
            "parameters": {
                p: {
                    "moved": s.moved,
                    "chi2": s.chi2,
                    "dof": s.dof,
                    "p_value": s.p_value,
                    "ratios": {f"{v:g}": r for v, r in sorted(s.ratios.items())},
                    "log_errors": {f"{v:g}": _finite(e) for v, e in sorted(s.log_errors.items())},
                    "note": s.note,
                }
                for p, s in self.shifts.items()
            },
            "samples_to_target": {f"{v:g}": n for v, n in sorted(self.samples_to_target.items())},
            "notes": list(self.notes),
        }

    def lines(self) -> list[str]:
        """The printed report: per value the fitted curve, per parameter whether it moved."""
        name = {"batch": "B", "group": "G", "staleness": "k"}[self.knob]
        out = [f"family over {self.knob} (R0 {self.initial:.4g} shared; errors: {self.method}):"]
        out.append(f"{name:>7} {'runs':>5} {'S_mid':>12} {'b':>14} {'A':>16}")
        for v in sorted(self.curves):
            c = self.curves[v]
            a = f"{c.asymptote:.4g} +- {c.asymptote_err:.2g}" + (" (bound)" if "asymptote" in c.at_bound else "")
            out.append(
                f"{v:>7g} {self.runs[v]:>5} {c.mid_samples:>12,.0f} "
                f"{c.exponent:>7.3g} +- {c.exponent_err:<4.2g} {a:>16}"
            )
        for p in PARAMS:
            s = self.shifts[p]
            each = ", ".join(
                f"{name}={v:g} {r:.3g}x +- {100 * s.log_errors[v]:.2g}%"
                for v, r in sorted(s.ratios.items())
                if v != self.reference
            )
            test = f"chi-square {s.chi2:.3g} on {s.dof}, p = {s.p_value:.3g}" if s.p_value is not None else s.note
            verdict = "moved" if s.moved else "not moved"
            out.append(f"  {p}: {verdict} ({test}); against {name}={self.reference:g}: {each}")
        return out


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def fit_family(
    runs: Sequence[Sequence[Mapping[str, Any]]],
    target: float,
    knob: str,
    reference: float | None = None,
    upper: float | None = 1.0,
    boots: int = 100,
    seed: int = 0,
) -> FamilyFit:
    """The family over ``knob`` (batch, group or staleness) from run logs at two or more of its values (module
    docstring); ``reference``: the reference value (default: the smallest batch or staleness, the G with most
    runs)."""
    target = check_target(target)
    if knob not in KNOB_KEYS:
        raise CalibrateError(f"knob {knob!r} is not one of {', '.join(KNOB_KEYS)}")
    if not runs:
        raise CalibrateError("no runs given; pass run directories or runlog.jsonl files")
    vals = [knob_of(run, knob, i) for i, run in enumerate(runs)]
    distinct = sorted(set(vals))
    if len(distinct) < 2:
        raise CalibrateError(
            f"the family over {knob} needs runs at two or more values of it; every run has {distinct[0]:g}"
        )
    counts = {v: vals.count(v) for v in distinct}
    if reference is None:
        reference = max(distinct, key=lambda v: (counts[v], -v)) if knob == "group" else distinct[0]
    elif float(reference) not in counts:
        raise CalibrateError(
            f"reference {reference:g} is not among the runs' {knob} values ({', '.join(f'{v:g}' for v in distinct)})"
        )
    reference = float(reference)
    points = [run_points(run, i) for i, run in enumerate(runs)]
    firsts = [run_initial(run) for run in runs]
    r0 = float(np.mean([f if f is not None else p[1][0] for f, p in zip(firsts, points)]))
    idx = {v: [i for i, x in enumerate(vals) if x == v] for v in distinct}
    notes: list[str] = []
    crossed = [first_crossing(*p, target) for p in points]
    for v in distinct:  # seeds that stall describe the stall share (fit-learning's), not the curve of those that learn
        stalled = [i for i in idx[v] if crossed[i] is None]
        if stalled and len(stalled) < len(idx[v]):
            idx[v] = [i for i in idx[v] if crossed[i] is not None]
            notes.append(
                f"{knob} {v:g}: {len(stalled)} of {len(stalled) + len(idx[v])} runs never reached {target:g}; their "
                "points are left out of its curve (the stall share is fit-learning's)"
            )
    curves: dict[float, SigmoidFit] = {}
    for v in distinct:
        s, m = _pooled(points, idx[v])
        try:
            curves[v] = fit_sigmoid_checked(s, m, r0, 0.0, upper)
        except CalibrateError as exc:
            if v == reference:
                raise CalibrateError(f"{knob} {v:g} (the reference): {exc}") from None
            notes.append(f"{knob} {v:g}: left out, no curve to fit ({exc})")
    if len(curves) < 2:
        raise CalibrateError(f"fewer than two {knob} values have a curve to fit; run longer or evaluate more often")
    stt = {}
    for v in curves:
        got = [crossed[i] for i in idx[v] if crossed[i] is not None and crossed[i] > 0]  # type: ignore[operator]
        stt[v] = float(np.median(got)) if got else None
    boot = all(len(idx[v]) >= MIN_BOOT_RUNS for v in curves) and boots > 0
    if boot:
        logs = _bootstrap(points, idx, curves, r0, upper, boots, seed)
        method = f"bootstrap over seeds ({boots} resamples) or the fit's covariance, the larger"
    else:
        logs = None
        method = f"the fit's covariance (fewer than {MIN_BOOT_RUNS} runs at some value for a bootstrap)"
    shifts = {p: _shift(p, curves, reference, r0, logs) for p in PARAMS}
    return FamilyFit(knob, reference, r0, curves, {v: len(idx[v]) for v in curves}, shifts, method, stt, tuple(notes))


def _pooled(points: list[tuple[np.ndarray, np.ndarray]], which: list[int]) -> tuple[np.ndarray, np.ndarray]:
    s = np.concatenate([points[i][0] for i in which])
    m = np.concatenate([points[i][1] for i in which])
    order = np.argsort(s, kind="stable")
    return s[order], m[order]


def _params(c: SigmoidFit, r0: float) -> dict[str, float]:
    return {"mid_samples": c.mid_samples, "exponent": c.exponent, "gain": c.asymptote - r0}


def _shift(
    p: str, curves: dict[float, SigmoidFit], reference: float, r0: float, logs: dict[float, np.ndarray] | None
) -> ParamShift:
    """Parameter ``p`` across the values against the reference's, and its chi-square test (module docstring)."""
    ref = _params(curves[reference], r0)[p]
    ratios, errs = {}, {}
    for v, c in curves.items():
        ratios[v] = _params(c, r0)[p] / ref
        if v == reference:
            errs[v] = 0.0
            continue
        errs[v] = math.hypot(_rel_err(c, p, r0), _rel_err(curves[reference], p, r0))
        if logs is not None:
            k = PARAMS.index(p)
            errs[v] = max(errs[v], float(np.std(logs[v][:, k] - logs[reference][:, k], ddof=1)))
    others = [v for v in curves if v != reference]
    note = ""
    if p == "gain":
        bound = [v for v in curves if "asymptote" in curves[v].at_bound]
        if bound:
            note = "asymptote on a bound of the fit (a curve not flattened) at " + ", ".join(f"{v:g}" for v in bound)
            others = [v for v in others if v not in bound]
            if reference in bound:
                others = []
    usable = [v for v in others if math.isfinite(errs[v]) and errs[v] > 0]
    if not usable:
        return ParamShift(ratios, errs, None, 0, None, False, note or "no value with a finite error to test")
    chi2 = float(sum((math.log(ratios[v]) / errs[v]) ** 2 for v in usable))
    dof = len(usable)
    pv = float(chi2_dist.sf(chi2, dof))
    return ParamShift(ratios, errs, chi2, dof, pv, pv < LEVEL, note)


def _rel_err(c: SigmoidFit, p: str, r0: float) -> float:
    """The one-sigma error of log p from the fit's covariance."""
    if p == "mid_samples":
        return c.mid_samples_err / c.mid_samples
    if p == "exponent":
        return c.exponent_err / c.exponent
    return c.asymptote_err / (c.asymptote - r0)


def _bootstrap(
    points: list[tuple[np.ndarray, np.ndarray]],
    idx: dict[float, list[int]],
    curves: dict[float, SigmoidFit],
    r0: float,
    upper: float | None,
    boots: int,
    seed: int,
) -> dict[float, np.ndarray]:
    """Per knob value, ``boots`` rows of (log S_mid, log b, log gain) refitted on its runs resampled with
    replacement."""
    rng = np.random.default_rng(seed)
    out = {}
    for v, c in curves.items():
        rows = []
        for _ in range(boots):
            pick = list(rng.choice(idx[v], size=len(idx[v]), replace=True))
            s, m = _pooled(points, pick)
            a, mid, b = _refit(s, m, r0, c, upper)
            rows.append((math.log(mid), math.log(b), math.log(max(a - r0, 1e-12))))
        out[v] = np.array(rows)
    return out


def _refit(
    s: np.ndarray, m: np.ndarray, r0: float, start: SigmoidFit, upper: float | None
) -> tuple[float, float, float]:
    """(A, S_mid, b) least squares from ``start``'s optimum (a resample's refit: no grid search)."""
    a_hi = float(upper) if upper is not None else r0 + 10.0 * (float(m.max()) - r0)
    a_hi = max(a_hi, start.asymptote + 1e-9)

    def resid(p: np.ndarray) -> np.ndarray:
        return r0 + (p[0] - r0) * sigmoid_fraction(s, math.exp(p[1]), p[2]) - m

    lo = [r0 + 1e-9 * max(1.0, abs(r0)), math.log(start.mid_samples) - 10.0, 1e-3]
    hi = [a_hi, math.log(start.mid_samples) + 10.0, 20.0]
    x0 = np.clip([start.asymptote, math.log(start.mid_samples), start.exponent], lo, hi)
    res = least_squares(resid, x0, bounds=(lo, hi), method="trf", x_scale="jac")
    return float(res.x[0]), math.exp(float(res.x[1])), float(res.x[2])


def _metric(c: SigmoidFit) -> dict[str, float]:
    return {"initial": c.initial, "asymptote": c.asymptote, "mid_samples": c.mid_samples, "exponent": c.exponent}


def _check_reference(family: FamilyFit, target: float) -> SigmoidFit:
    ref = family.curves[family.reference]
    if not ref.initial < target < ref.asymptote:
        raise CalibrateError(
            f"the reference curve ({family.knob} {family.reference:g}) runs from {ref.initial:.4g} to "
            f"{ref.asymptote:.4g}; pick a target strictly between them (or another --reference)"
        )
    return ref


def with_family(learning: dict[str, Any], family: FamilyFit) -> dict[str, Any]:
    """fit-learning's profile ``learning`` dict with the batch family in place of its batch term: the reference
    batch's curve with the shared R0, ``family.batch`` the table, the batch multiplier invariant (the table's S_mid
    column carries it) and no ceilings table (its gain column does, where the ceiling moved)."""
    ref = _check_reference(family, float(learning["target"]))
    out = dict(learning)
    out["metric"] = _metric(ref)
    out["family"] = {"batch": family.table()}
    out["family_fit"] = family.to_dict()
    out["batch_multiplier"] = {"form": "invariant"}
    out.update(ceiling_batches=None, ceilings=None, ceiling_errors=None)
    return out


def family_learning(family: FamilyFit, runs: Sequence[Sequence[Mapping[str, Any]]], target: float) -> dict[str, Any]:
    """A profile's ``learning`` dict from a family over G or staleness at one batch: the reference value's curve,
    the seeds' spread there, and the table."""
    ref = _check_reference(family, target)
    batch = run_batch(runs[0], 0)
    hits = [
        first_crossing(*run_points(run, i), target)
        for i, run in enumerate(runs)
        if knob_of(run, family.knob, i) == family.reference
    ]
    logs = [math.log(h) for h in hits if h is not None and h > 0]
    out: dict[str, Any] = {
        "version": LEARNING_VERSION,
        "reference_batch": batch,
        "metric": _metric(ref),
        "target": float(target),
        "samples_spread": float(min(np.std(logs, ddof=1), 2.0)) if len(logs) >= 2 else 0.0,
        "family": {family.knob: family.table()},
        "family_fit": family.to_dict(),
        "fitted_range": {"batch": [batch, batch]},
    }
    if family.knob == "group":
        out["reference_group_size"] = int(family.reference)
    else:
        out.update(staleness_loss="stretch", staleness_penalty_per_step=0.0)
    return out
