"""``fit-learning``: the learning model from run logs at two or more batch sizes (:func:`fit_learning`), and the
``learning`` dict of a profile it writes (:meth:`LearningFit.to_profile_learning`).

Per run a sigmoid and the measured samples-to-target; per batch a sigmoid on the pooled points of its runs and
the samples-to-target used across batches; across batches the critical-batch fit, the table, the invariance
score and B_simple per batch (the pieces: :mod:`calibrate.learning`). Run logs come in as lists of step
records (rlsim.io.runlog); reading the files is the CLI's.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibrate import CalibrateError
from calibrate.learning.batch import CriticalBatchFit, critical_power, fit_critical_batch, table_multiplier
from calibrate.learning.ceiling import CeilingTest, ceiling_factor, ceiling_test
from calibrate.learning.checks import check_target, run_batch, run_points
from calibrate.learning.curve import SigmoidFit, first_crossing, fit_sigmoid_checked, samples_to_target_from_fit
from calibrate.learning.invariance import INVARIANCE_DEFINITION, invariance_score
from calibrate.learning.noise import GRAD_KEYS, b_simple_pooled
from calibrate.learning.seeds import seed_model, stall_upper
from rlsim.io.numbers import finite
from rlsim.run.profile import LEARNING_VERSION
from rlsim.scenario import BatchMultiplier, Learning, MetricCurve


@dataclass(frozen=True)
class RunFit:
    batch: int
    num_points: int
    sigmoid: SigmoidFit | None  # None: the run's metric never rose (a stalled seed)
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
    stall_by_batch: dict[int, float] = field(default_factory=dict)  # share of seeds that stall, per batch
    seeds_by_batch: dict[int, tuple[int, int]] = field(default_factory=dict)  # (runs, reaching target) per batch
    ceiling: CeilingTest | None = None  # do the batches' asymptotes differ (calibrate.learning.ceiling)

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
            stall_probability=float(self.stall_by_batch.get(self.reference_batch, 0.0)),
            stall_batches=tuple(float(b) for b in sorted(self.stall_by_batch)) or None,
            stall_shares=tuple(float(self.stall_by_batch[b]) for b in sorted(self.stall_by_batch)) or None,
            ceiling_batches=tuple(float(b) for b in self.ceilings) or None,
            ceilings=tuple(self.ceilings.values()) or None,
            ceiling_errors=tuple(self.ceiling.errors.values()) if self.ceilings else None,  # type: ignore[union-attr]
        )

    @property
    def ceilings(self) -> dict[int, float]:
        """Batch -> ceiling where the asymptotes move with the batch; empty where they are shared."""
        return self.ceiling.ceilings if self.ceiling is not None else {}

    def to_profile_learning(self) -> dict[str, Any]:
        """Plain JSON-able dict for the ``learning`` key of an rlsim profile (non-finite values become None).

        ``reference_batch``, ``metric``, ``target``, ``batch_multiplier`` and ``samples_spread`` are rlsim
        ``Learning`` fields; the rest documents the fit.
        """
        ref = self.curves[self.reference_batch]
        ref_runs, ref_hits = self.seeds_by_batch.get(self.reference_batch, (0, 0))
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
            # the stall share per batch (rlsim Learning fields) and the reference batch's, with the seed counts
            # behind each (calibrate.runs.validate's reaching band)
            "stall_probability": float(self.stall_by_batch.get(self.reference_batch, 0.0)),
            "stall_batches": [float(b) for b in sorted(self.stall_by_batch)] or None,
            "stall_shares": [float(self.stall_by_batch[b]) for b in sorted(self.stall_by_batch)] or None,
            "stall_probability_upper_90": stall_upper(ref_runs - ref_hits, ref_runs) if ref_runs else None,
            # the ceiling per batch where the batches' asymptotes differ (rlsim Learning fields), and the test
            "ceiling_batches": [float(b) for b in self.ceilings] or None,
            "ceilings": list(self.ceilings.values()) or None,
            "ceiling_errors": list(self.ceiling.errors.values()) if self.ceilings else None,  # type: ignore[union-attr]
            "ceiling_test": self.ceiling.to_dict() if self.ceiling is not None else None,
            "runs": ref_runs,
            "runs_reaching_target": ref_hits,
            "seeds_by_batch": {str(b): list(v) for b, v in sorted(self.seeds_by_batch.items())},
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
            "b_simple": {str(b): finite(d["b_simple"]) for b, d in sorted(self.b_simple.items())} or None,
            "b_simple_interval": {str(b): [finite(x) for x in d["interval"]] for b, d in sorted(self.b_simple.items())}
            or None,
            "fitted_range": {
                # the batches seeds ran at (their stall shares are measured even where no curve was fitted)
                "batch": [min(self.seeds_by_batch or self.curves), max(self.seeds_by_batch or self.curves)],
                "samples": [
                    min(r.sigmoid.samples_range[0] for r in self.runs if r.sigmoid is not None),
                    max(r.max_samples for r in self.runs),
                ],
            },
            "notes": list(self.notes),
        }


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
    (ddof 1) of the log of their first crossings (rlsim.learning.model's definition); 0 when none.
    """
    target = check_target(target)
    if isinstance(runs, Mapping) or not isinstance(runs, Sequence) or not runs:
        raise CalibrateError("runs must be a non-empty list of run logs (each a list of step records)")
    batch_of = [run_batch(run, i) for i, run in enumerate(runs)]
    distinct = sorted(set(batch_of))
    if len(distinct) < 2:
        raise CalibrateError(f"need run logs at two or more batch sizes for a learning fit; got one (B={distinct[0]})")
    if reference_batch is not None and reference_batch not in distinct:
        raise CalibrateError(
            f"reference_batch {reference_batch!r} is not among the run batches ({', '.join(map(str, distinct))}); "
            "pass one of them or None"
        )
    points = [run_points(run, i) for i, run in enumerate(runs)]
    run_fits = []
    notes: list[str] = []
    for i, ((s, m), b) in enumerate(zip(points, batch_of)):
        crossed = first_crossing(s, m, target)
        try:
            sig: SigmoidFit | None = fit_sigmoid_checked(s, m, None, exclude_fraction, upper)
        except CalibrateError as exc:
            if crossed is not None:
                raise CalibrateError(f"run {i} (B={b}): {exc}") from None
            sig = None  # a seed that never rose: it counts as not reaching the target (the stall share's)
            notes.append(f"run {i} (B={b}): no curve to fit ({exc}); counted as a seed that did not reach the target")
        run_fits.append(
            RunFit(
                b,
                int(s.size),
                sig,
                crossed,
                samples_to_target_from_fit(sig, target) if sig is not None else None,
                float(s[-1]),
            )
        )

    curves: dict[int, SigmoidFit] = {}
    stall: dict[int, float] = {}  # per batch: the share of seeds that stall
    seeds: dict[int, tuple[int, int]] = {}  # per batch: (runs, runs that reached the target)
    stt: dict[int, float] = {}
    source: dict[int, str] = {}
    spreads = []
    for b in distinct:
        idx = [i for i, x in enumerate(batch_of) if x == b]
        measured = [run_fits[i].samples_to_target for i in idx]
        # the batch's curve is the learners' where some seeds reached the target: a stalled seed is the stall share's
        # (below), and pooled into the curve it would stretch N* past what the learners needed (as --family does)
        learned = [i for i, x in zip(idx, measured) if x is not None and x > 0]
        pool = learned or idx
        if len(pool) < len(idx):
            notes.append(f"B={b}: the curve from the {len(pool)} of {len(idx)} runs that reached the target")
        s = np.concatenate([points[i][0] for i in pool])
        m = np.concatenate([points[i][1] for i in pool])
        order = np.argsort(s, kind="stable")
        r0 = float(np.mean([points[i][1][0] for i in pool]))
        try:
            curves[b] = fit_sigmoid_checked(s[order], m[order], r0, exclude_fraction, upper)
        except CalibrateError as exc:
            if any(x is not None for x in measured):
                raise CalibrateError(f"batch {b}: {exc}") from None
            notes.append(f"B={b}: no run reached the target and their pooled metric does not rise ({exc})")
        hits = [x for x in measured if x is not None and x > 0]
        censored = [run_fits[i].max_samples for i, x in zip(idx, measured) if x is None or x <= 0]
        seeds[b] = (len(idx), len(hits))
        if len(hits) == len(measured):
            stt[b] = float(np.exp(np.mean(np.log(hits))))
            source[b] = "measured"
            stall[b] = 0.0
        elif hits:  # as fit --runs does: the seeds that learn give N*, the censored ones a stall share
            mu, _, q = seed_model(hits, censored)
            stt[b], source[b], stall[b] = float(math.exp(mu)), "seeds", float(min(q, 0.99))
            notes.append(
                f"B={b}: {len(censored)} of {len(idx)} runs did not reach the target: samples-to-target from the "
                f"{len(hits)} that did (lognormal, the others right-censored), stall share {stall[b]:.2f}"
            )
        else:
            stall[b] = (len(idx) + 0.5) / (len(idx) + 1.0)  # none reached: Jeffreys' posterior mean of the share
            n_fit = samples_to_target_from_fit(curves[b], target) if b in curves else None
            if n_fit is None or n_fit <= 0:
                notes.append(f"B={b}: the target {target:g} is not reached, measured or by the fit; left out")
            else:
                stt[b] = n_fit
                source[b] = "fit"
                notes.append(f"B={b}: samples-to-target from the fitted curve (not every run reached the target)")
        if len(hits) >= 2:
            spreads.append(float(np.std(np.log(hits), ddof=1)))  # rlsim.learning.model: the log-sd over seeds
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
    ceiling = ceiling_test(curves, reference_batch)
    along = dict(stt)  # samples-to-target along the samples axis: the batch term's (the ceiling term divided out)
    if ceiling.moves:
        ref_curve = curves[reference_batch].to_metric_curve()
        for b in stt:
            f = ceiling_factor(ref_curve, ceiling.ceilings, b, target)
            if f is None:
                del along[b]
                notes.append(
                    f"B={b}: its ceiling does not clear the target on the reference curve; left out of the batch fits"
                )
            else:
                along[b] = stt[b] / f
        notes.append(f"ceiling {ceiling.reason}: the batch term is fitted with each batch's ceiling term divided out")
    bl = sorted(along)
    if len(bl) < 2:
        raise CalibrateError("fewer than two batches left for the batch fits once the ceilings are divided out")
    cb = fit_critical_batch(bl, [along[b] for b in bl], critical_power(lr_rule))
    table = table_multiplier(bl, [along[b] for b in bl])
    fitted = {}
    for b in curves:
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
        stall_by_batch=stall,
        seeds_by_batch=seeds,
        ceiling=ceiling,
    )
