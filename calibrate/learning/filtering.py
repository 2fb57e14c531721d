"""``fit-filtering``: how much DAPO's dynamic sampling saves per trained sample, from runs with and without it at one
batch (rlsim's ``learning.filtered_signal_power``; docs/learning.md "Filtering").

A filtered run (its steps log ``generated_responses``, as ``rlsim-real train --dynamic-sampling`` writes them)
trains each step on groups that all carry a signal; rlsim scales the trained samples to target by keep ** a, keep
the filtered runs' share of generated responses that were trained on up to the target. Per run: the trained
samples at the first evaluation at or past the target, linearly interpolated (calibrate.learning.curve's
first crossing), and for a filtered run the generated responses there. Across runs: medians (a run that never
gets there counts as the latest), and a = ln(N_filtered / N_plain) / ln(keep), clipped to [0, 1] with a note.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibrate import CalibrateError
from calibrate.learning.checks import check_target
from calibrate.learning.curve import first_crossing


@dataclass(frozen=True)
class RunReach:
    filtered: bool
    trained: float  # trained samples at the target (inf: never)
    generated: float  # generated responses there (the trained ones for an unfiltered run)


@dataclass(frozen=True)
class FilteringFit:
    target: float
    batch: int
    runs: tuple[RunReach, ...]
    plain_samples: float  # median trained (= generated) samples to the target without the filter
    filtered_samples: float  # median trained samples with it
    filtered_generated: float  # median generated responses with it
    keep_rate: float  # median of the filtered runs' trained / generated at the target
    power: float  # learning.filtered_signal_power
    notes: tuple[str, ...] = field(default_factory=tuple)

    def predicted(self, power: float) -> tuple[float, float]:
        """(trained, generated) samples to the target a filtered run needs under ``power``."""
        trained = self.plain_samples * self.keep_rate**power
        return trained, trained / self.keep_rate

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "batch": self.batch,
            "plain_samples": self.plain_samples,
            "filtered_samples": self.filtered_samples,
            "filtered_generated": self.filtered_generated,
            "keep_rate": self.keep_rate,
            "filtered_signal_power": self.power,
            "runs": {"plain": sum(not r.filtered for r in self.runs), "filtered": sum(r.filtered for r in self.runs)},
            "notes": list(self.notes),
        }


def _reach(run: Sequence[Mapping[str, Any]], index: int, target: float) -> RunReach:
    filtered = any("generated_responses" in rec for rec in run)
    pts = [
        (float(rec["cumulative_samples"]), float(rec["eval_metric"]), float(rec.get("cumulative_generated", 0)))
        for rec in run
        if rec.get("eval_metric") is not None
    ]
    if len(pts) < 2:
        raise CalibrateError(f"run {index} has {len(pts)} evaluated steps; evaluate at least twice")
    s, m, gen = (np.array(x) for x in zip(*pts))
    at = first_crossing(s, m, target)
    if at is None:
        return RunReach(filtered, math.inf, math.inf)
    if not filtered:
        return RunReach(False, float(at), float(at))
    if np.any(np.diff(gen) < 0) or gen[0] <= 0:
        raise CalibrateError(f"run {index}: cumulative_generated must be positive and never fall")
    return RunReach(True, float(at), float(np.interp(at, s, gen)))


def fit_filtering(runs: Sequence[Sequence[Mapping[str, Any]]], target: float) -> FilteringFit:
    """The filter's power from runs at one batch with and without dynamic sampling (module docstring)."""
    target = check_target(target)
    if not runs:
        raise CalibrateError("no runs given; pass run logs with and without --dynamic-sampling at one batch")
    batches = {int(rec["responses"]) for run in runs for rec in run}
    if len(batches) != 1:
        raise CalibrateError(
            f"the runs train {', '.join(map(str, sorted(batches)))} responses per step; give runs at one batch"
        )
    reach = [_reach(run, i, target) for i, run in enumerate(runs)]
    plain = [r for r in reach if not r.filtered]
    filt = [r for r in reach if r.filtered]
    if not plain or not filt:
        which = "without" if not plain else "with"
        raise CalibrateError(f"no run {which} dynamic sampling among the runs; give both kinds at one batch")
    n_plain = float(np.median([r.trained for r in plain]))
    n_filt = float(np.median([r.trained for r in filt]))
    gen = float(np.median([r.generated for r in filt]))
    reached = [r for r in filt if math.isfinite(r.trained)]
    if not math.isfinite(n_plain) or not math.isfinite(n_filt) or not reached:
        raise CalibrateError(f"the median run of a kind never reaches {target:g}; lower the target or run longer")
    keep = float(np.median([r.trained / r.generated for r in reached]))
    notes = []
    if not 0 < keep < 1:
        raise CalibrateError(f"the filtered runs kept {keep:.3g} of what they generated; nothing was filtered")
    power = math.log(n_filt / n_plain) / math.log(keep)
    if not 0.0 <= power <= 1.0:
        notes.append(f"the runs give a power of {power:.3g}; clipped to [0, 1] (outside, filtering would gain or "
                     "lose more than its two readings allow: check the runs' seeds and LR)")  # fmt: skip
        power = min(max(power, 0.0), 1.0)
    return FilteringFit(target, batches.pop(), tuple(reach), n_plain, n_filt, gen, keep, power, tuple(notes))
