"""Whether responses per prompt count apart from the batch in a user's own runs (``rlsim-calibrate fit-groups``;
issue 33).

Runs of one setup at one batch B = P x G and two or more group sizes G answer it. The runs at the reference G
(default: the G with the most runs, ties to the larger) give the curve (a sigmoid on their pooled evaluations from
the initial metric) and the measured samples-to-target (the median over seeds, a seed that never reaches the
target counted as latest). At every other G two models predict the median samples-to-target: ``batch`` (B = P x G
alone: the reference's) and ``groups`` (the reference's times rlsim.learning.groups' multiplier along the curve).
The one with the smaller root-mean-square log error wins; with ``groups`` the profile gets
``learning.reference_group_size`` = the reference G.

A third model, ``spread``, adds what runs on a real model showed the informative share alone misses (docs/learning.md):
the prompts' pass rates spread around the mean (``learning.prompt_concentration``, fitted to the share of groups
whose rewards all agree that the run logs record per step, ``zero_variance_groups``) and the correlation of
responses to one prompt (``learning.group_correlation``, fitted to the measured samples-to-target at the other G).
Its RMS log error is cross-validated, leaving one G out: the G scored is predicted with both fitted without its
runs; ``batch`` and ``groups`` fit nothing to the G they score.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar

from calibrate import CalibrateError
from calibrate.learning.checks import check_target, run_batch, run_points
from calibrate.learning.curve import first_crossing, fit_sigmoid_checked
from calibrate.learning.staleness import run_initial
from rlsim.learning.groups import group_multiplier, informative_share
from rlsim.learning.model import LearningModelError, reference_samples_to_target
from rlsim.scenario import MetricCurve

MODELS = ("batch", "groups", "spread")
TRAIN_RANGE = (0.02, 0.98)  # steps whose train accuracy is this far from 0 and 1 fit the concentration
CONCENTRATION_RANGE = (0.05, 1e4)  # the concentration searched (the upper end: all prompts alike)
MAX_CORRELATION = 0.95


@dataclass(frozen=True)
class GroupsFit:
    model: str  # the model chosen: batch or groups
    reference_group_size: int
    batch: int
    measured: dict[int, float]  # per G: the seeds' median samples-to-target (inf: half or more never reached it)
    runs: dict[int, int]  # per G: runs
    predicted: dict[str, dict[int, float]]  # per model, per G (spread: each G from a fit without its runs)
    rms_log: dict[str, float]  # per model, over the G other than the reference that reached the target
    concentration: float | None = None  # spread: fitted to every run (None: no step in the fitting range)
    correlation: float = 0.0  # spread: fitted to every G
    never: dict[int, int] | None = None  # per G: runs that never reach the target (stalls; counted latest above)


@dataclass(frozen=True)
class ShareSteps:
    """The steps that fit the concentration: mean pass rate, G, prompts and the share of informative groups."""

    pass_rate: np.ndarray
    group_size: np.ndarray
    prompts: np.ndarray
    informative: np.ndarray


def share_steps(runs: Sequence[Sequence[Mapping[str, Any]]], gs: Sequence[int]) -> ShareSteps:
    """Every logged step with a train accuracy in TRAIN_RANGE and a ``zero_variance_groups`` share (rlsim-real logs
    both; the accuracy read as the mean pass rate of the step's prompts)."""
    rows = [
        (rec["accuracy_train"], g, rec.get("prompts") or rec["responses"] / g, 1.0 - rec["zero_variance_groups"])
        for run, g in zip(runs, gs)
        for rec in run
        if rec.get("zero_variance_groups") is not None
        and rec.get("accuracy_train") is not None
        and TRAIN_RANGE[0] < rec["accuracy_train"] < TRAIN_RANGE[1]
    ]
    cols = np.array(rows, dtype=float).reshape(-1, 4).T
    return ShareSteps(*cols)


def fit_concentration(steps: ShareSteps) -> float | None:
    """The concentration k whose beta-binomial informative share fits the steps' measured shares best (least squares
    weighted by the step's prompts, the groups the share counts); None without steps."""
    if steps.pass_rate.size == 0:
        return None

    def loss(log_k: float) -> float:
        w = informative_share(steps.pass_rate, steps.group_size, math.exp(log_k))
        return float(np.sum(steps.prompts * (w - steps.informative) ** 2))

    lo, hi = map(math.log, CONCENTRATION_RANGE)
    return math.exp(minimize_scalar(loss, bounds=(lo, hi), method="bounded", options={"xatol": 1e-3}).x)


def run_group_size(run: Sequence[Mapping[str, Any]], index: int) -> int:
    """The ``group_size`` a run log records (rlsim-real writes it on every line)."""
    values = {rec.get("group_size") for rec in run} - {None}
    if len(values) != 1:
        raise CalibrateError(
            f"run {index} records group_size {sorted(values) if values else 'nowhere'}: give runs that log one "
            "group size (rlsim-real train does; for an imported log, one group size per run)"
        )
    return int(values.pop())


def seeds_reaching(runs: Sequence[Sequence[Mapping[str, Any]]], target: float) -> list[float | None]:
    """Each run's samples to ``target`` (the first crossing; None: never within the run)."""
    return [first_crossing(*run_points(run, i), target) for i, run in enumerate(runs)]


def median_reached(values: Sequence[float | None]) -> float:
    """The median over seeds with a seed that never reached counted as latest (inf when half or more never did)."""
    return float(np.median([math.inf if v is None else v for v in values]))


def reference_curve(runs: Sequence[Sequence[Mapping[str, Any]]]) -> MetricCurve:
    """The sigmoid on the pooled evaluations of ``runs`` (one setup's seeds), from their logged initial metric (else
    their mean first evaluation), capped at 1 (a pass rate)."""
    points = [run_points(run, i) for i, run in enumerate(runs)]
    s = np.concatenate([p[0] for p in points])
    m = np.concatenate([p[1] for p in points])
    order = np.argsort(s, kind="stable")
    logged = [v for v in map(run_initial, runs) if v is not None]
    r0 = float(np.mean(logged)) if logged else float(np.mean([p[1][0] for p in points]))
    return fit_sigmoid_checked(s[order], m[order], r0, 0.0, 1.0).to_metric_curve()


def group_multipliers(
    reference_runs: Sequence[Sequence[Mapping[str, Any]]],
    target: float,
    reference_group_size: int,
    groups: Sequence[int],
    concentration: float | None = None,
    correlation: float = 0.0,
) -> dict[int, float]:
    """The group term's samples multiplier at each G against the reference runs' (rlsim.learning.groups, along
    :func:`reference_curve` up to ``target``)."""
    curve, n_model = reference_point(reference_runs, target, reference_group_size)
    return {g: group_multiplier(curve, n_model, g, reference_group_size, concentration, correlation) for g in groups}


def reference_point(
    runs: Sequence[Sequence[Mapping[str, Any]]], target: float, g_ref: int
) -> tuple[MetricCurve, float]:
    """The reference runs' curve (:func:`reference_curve`) and its samples to ``target``."""
    curve = reference_curve(runs)
    try:
        return curve, reference_samples_to_target(curve, target)
    except LearningModelError as exc:
        raise CalibrateError(f"the reference runs' curve (G = {g_ref}): {exc}") from None


def fit_correlation(
    curve: MetricCurve, n_model: float, g_ref: int, measured: Mapping[int, float], concentration: float | None
) -> float:
    """The correlation rho in [0, MAX_CORRELATION] whose multipliers fit ``measured`` (per G: samples-to-target over
    the reference's) best in log; 0 without a G to fit."""
    if not measured:
        return 0.0

    def loss(rho: float) -> float:
        return sum(
            math.log(group_multiplier(curve, n_model, g, g_ref, concentration, rho) / m) ** 2
            for g, m in measured.items()
        )

    return float(minimize_scalar(loss, bounds=(0.0, MAX_CORRELATION), method="bounded", options={"xatol": 1e-4}).x)


def fit_spread(
    steps: ShareSteps,
    reference: tuple[MetricCurve, float],
    g_ref: int,
    measured: Mapping[int, float],
    leave_out: int | None = None,
) -> tuple[float | None, float]:
    """The spread model's concentration (from the logged shares, :func:`share_steps`) and correlation (from the
    ``measured`` multipliers at the G other than the reference, along ``reference``: :func:`reference_point`), both
    without the G ``leave_out``."""
    keep = steps.group_size != leave_out
    k = fit_concentration(ShareSteps(*(col[keep] for col in dataclasses.astuple(steps))))
    fit_on = {g: m for g, m in measured.items() if g not in (g_ref, leave_out) and math.isfinite(m)}
    return k, fit_correlation(*reference, g_ref, fit_on, k)


def fit_groups(
    runs: Sequence[Sequence[Mapping[str, Any]]], target: float, reference_group_size: int | None = None
) -> GroupsFit:
    """Which model the runs (one batch, two or more group sizes) follow (module docstring)."""
    target = check_target(target)
    batches = {run_batch(run, i) for i, run in enumerate(runs)}
    if len(batches) != 1:
        raise CalibrateError(
            f"the runs have batches {sorted(batches)}: give runs at one batch B = P x G (fit-learning compares batches)"
        )
    gs = [run_group_size(run, i) for i, run in enumerate(runs)]
    counts = {g: gs.count(g) for g in sorted(set(gs))}
    if len(counts) < 2:
        raise CalibrateError(f"every run has G = {gs[0]}: give runs at two or more group sizes of one batch")
    g_ref = reference_group_size or max(counts, key=lambda g: (counts[g], g))
    if g_ref not in counts:
        raise CalibrateError(f"--reference-group-size {g_ref} is not among the runs' G ({', '.join(map(str, counts))})")
    reached = {g: seeds_reaching([r for r, gg in zip(runs, gs) if gg == g], target) for g in counts}
    measured = {g: median_reached(v) for g, v in reached.items()}
    never = {g: sum(x is None for x in v) for g, v in reached.items()}
    if math.isinf(measured[g_ref]):
        raise CalibrateError(f"the runs at the reference G = {g_ref} mostly never reach {target:g}: lower the target")
    reference = reference_point([run for run, g in zip(runs, gs) if g == g_ref], target, g_ref)
    steps = share_steps(runs, gs)
    others = [g for g in counts if g != g_ref and math.isfinite(measured[g])]
    ratio = {g: measured[g] / measured[g_ref] for g in others}
    spread = {}
    for g in counts:
        k, rho = fit_spread(steps, reference, g_ref, ratio, leave_out=g) if g != g_ref else (None, 0.0)
        spread[g] = measured[g_ref] * group_multiplier(*reference, g, g_ref, k, rho)
    predicted = {
        "batch": {g: measured[g_ref] for g in counts},
        "groups": {g: measured[g_ref] * group_multiplier(*reference, g, g_ref) for g in counts},
        "spread": spread,
    }
    rms = {}
    for model in MODELS:
        errors = [math.log(predicted[model][g] / measured[g]) for g in others]
        rms[model] = math.sqrt(float(np.mean(np.square(errors)))) if errors else math.nan
    model = min(MODELS, key=lambda m: rms[m]) if others else "batch"
    k, rho = fit_spread(steps, reference, g_ref, ratio)
    return GroupsFit(model, g_ref, batches.pop(), measured, counts, predicted, rms, k, rho, never)
