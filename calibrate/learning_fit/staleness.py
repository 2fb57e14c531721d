"""Which staleness form a user's own asynchronous runs follow (``rlsim-calibrate fit-staleness``; issue 33).

The forms are rlsim.learning.staleness's: ``stretch`` leaves the curve's ceiling where it is (the seed paper's
form moves only the samples axis), ``naive_ppo`` and ``decoupled_ppo`` keep the share c(k) of the gain at maximum
staleness k. At a fixed number of samples the gain a run has made shrinks by that share, so runs that differ only
in their maximum staleness measure it directly: the gain over the initial metric at the largest sample count every
run reached (the mean of each run's evaluations in its last fifth up to there, runs of one staleness averaged),
over the gain of the runs at the smallest staleness. Each form predicts those ratios (c(k) / c(k_min)); the form
with the smallest root-mean-square error is chosen, and every form's error is reported so that a near tie is
seen. A run's staleness is the largest ``staleness`` its run log records (the policy versions between a rollout's
weights and the update that trains on it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibrate.errors import CalibrateError
from calibrate.learning_fit.fit import _run_points
from rlsim.learning.staleness import LOSSES, retained_gain

FORMS = ("stretch", *LOSSES)
WINDOW = 0.2  # the share of the common samples, ending there, whose evaluations give a run's gain


@dataclass(frozen=True)
class StalenessFit:
    loss: str  # the form chosen
    retained: dict[int, float]  # measured gain at each staleness over the smallest staleness's
    runs: dict[int, int]  # runs per staleness
    rms: dict[str, float]  # each form's root-mean-square error against ``retained``
    at_samples: float  # the common sample count the gains are read at
    initial: float  # the initial metric the gains are measured from


def run_staleness(run: Sequence[Mapping[str, Any]]) -> int:
    """The largest ``staleness`` a run log records (0 when none does: a synchronous run)."""
    values = [rec.get("staleness") for rec in run if rec.get("staleness") is not None]
    return int(max(values)) if values else 0


def fit_staleness(runs: Sequence[Sequence[Mapping[str, Any]]], initial: float | None = None) -> StalenessFit:
    """The staleness form ``runs`` (run logs of one setup at two or more maximum stalenesses) follow (module
    docstring). ``initial``: the metric before training (default: the mean first evaluation over the runs)."""
    points = [_run_points(run, i) for i, run in enumerate(runs)]  # fit-learning's checks and messages
    ks = [run_staleness(run) for run in runs]
    if len(set(ks)) < 2:
        raise CalibrateError(
            f"all {len(runs)} runs have maximum staleness {ks[0] if ks else '?'}: give runs at two or more "
            "stalenesses (schedule.max_staleness) of one setup"
        )
    r0 = float(np.mean([m[0] for _, m in points])) if initial is None else float(initial)
    at = min(float(s[-1]) for s, _ in points)
    gains: dict[int, list[float]] = {}
    for (s, m), k in zip(points, ks):
        window = (s >= (1.0 - WINDOW) * at) & (s <= at)
        value = float(np.mean(m[window])) if window.any() else float(np.interp(at, s, m))
        gains.setdefault(k, []).append(value - r0)
    k_min = min(gains)
    base = float(np.mean(gains[k_min]))
    if not base > 0:
        raise CalibrateError(
            f"the runs at staleness {k_min} gained {base:.4g} over the initial metric {r0:.4g} by {at:.0f} samples: "
            "no gain to compare the others with (run longer, or give --initial)"
        )
    retained = {k: float(np.mean(v)) / base for k, v in sorted(gains.items())}
    rms = {}
    for form in FORMS:
        errors = [retained[k] - _predicted(form, k, k_min) for k in retained if k != k_min]
        rms[form] = math.sqrt(float(np.mean(np.square(errors))))
    loss = min(FORMS, key=lambda f: (rms[f], FORMS.index(f)))
    return StalenessFit(loss, retained, {k: len(v) for k, v in sorted(gains.items())}, rms, at, r0)


def _predicted(form: str, k: int, k_min: int) -> float:
    if form == "stretch":
        return 1.0
    return retained_gain(form, k) / retained_gain(form, k_min)
