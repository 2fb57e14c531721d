"""Whether responses per prompt count apart from the batch in a user's own runs (``rlsim-calibrate fit-groups``;
issue 33).

Runs of one setup at one batch B = P x G and two or more group sizes G answer it. The runs at the reference G
(default: the G with the most runs, ties to the larger) give the curve (a sigmoid on their pooled evaluations from
the initial metric) and the measured samples-to-target (the median over seeds, a seed that never reaches the
target counted as latest). At every other G two models predict the median samples-to-target: ``batch`` (B = P x G
alone: the reference's) and ``groups`` (the reference's times rlsim.learning.groups' multiplier along the curve).
The one with the smaller root-mean-square log error wins; with ``groups`` the profile gets
``learning.reference_group_size`` = the reference G.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibrate.errors import CalibrateError
from calibrate.learning_fit.checks import check_target
from calibrate.learning_fit.curve import first_crossing, fit_sigmoid_checked
from calibrate.learning_fit.fit import _run_batch, _run_points
from calibrate.learning_fit.staleness import run_initial
from rlsim.learning.groups import group_multiplier
from rlsim.learning.model import LearningModelError, reference_samples_to_target
from rlsim.scenario import MetricCurve

MODELS = ("batch", "groups")


@dataclass(frozen=True)
class GroupsFit:
    model: str  # the model chosen: batch or groups
    reference_group_size: int
    batch: int
    measured: dict[int, float]  # per G: the seeds' median samples-to-target (inf: half or more never reached it)
    runs: dict[int, int]  # per G: runs
    predicted: dict[str, dict[int, float]]  # per model, per G
    rms_log: dict[str, float]  # per model, over the G other than the reference that reached the target


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
    return [first_crossing(*_run_points(run, i), target) for i, run in enumerate(runs)]


def median_reached(values: Sequence[float | None]) -> float:
    """The median over seeds with a seed that never reached counted as latest (inf when half or more never did)."""
    return float(np.median([math.inf if v is None else v for v in values]))


def reference_curve(runs: Sequence[Sequence[Mapping[str, Any]]]) -> MetricCurve:
    """The sigmoid on the pooled evaluations of ``runs`` (one setup's seeds), from their logged initial metric (else
    their mean first evaluation), capped at 1 (a pass rate)."""
    points = [_run_points(run, i) for i, run in enumerate(runs)]
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
) -> dict[int, float]:
    """The group term's samples multiplier at each G against the reference runs' (rlsim.learning.groups, along
    :func:`reference_curve` up to ``target``)."""
    curve = reference_curve(reference_runs)
    try:
        n_model = reference_samples_to_target(curve, target)
    except LearningModelError as exc:
        raise CalibrateError(f"the reference runs' curve (G = {reference_group_size}): {exc}") from None
    return {g: group_multiplier(curve, n_model, g, reference_group_size) for g in groups}


def fit_groups(
    runs: Sequence[Sequence[Mapping[str, Any]]], target: float, reference_group_size: int | None = None
) -> GroupsFit:
    """Which model the runs (one batch, two or more group sizes) follow (module docstring)."""
    target = check_target(target)
    batches = {_run_batch(run, i) for i, run in enumerate(runs)}
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
    measured = {g: median_reached(seeds_reaching([r for r, gg in zip(runs, gs) if gg == g], target)) for g in counts}
    if math.isinf(measured[g_ref]):
        raise CalibrateError(f"the runs at the reference G = {g_ref} mostly never reach {target:g}: lower the target")
    ref_runs = [run for run, g in zip(runs, gs) if g == g_ref]
    multiplier = group_multipliers(ref_runs, target, g_ref, list(counts))
    predicted = {
        "batch": {g: measured[g_ref] for g in counts},
        "groups": {g: measured[g_ref] * multiplier[g] for g in counts},
    }
    others = [g for g in counts if g != g_ref and math.isfinite(measured[g])]
    rms = {}
    for model in MODELS:
        errors = [math.log(predicted[model][g] / measured[g]) for g in others]
        rms[model] = math.sqrt(float(np.mean(np.square(errors)))) if errors else math.nan
    model = "groups" if others and rms["groups"] < rms["batch"] else "batch"
    return GroupsFit(model, g_ref, batches.pop(), measured, counts, predicted, rms)
