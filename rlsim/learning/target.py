"""Time-to-target: T(B) = N*(B) / q(B), read off the simulated timeline, with a band.

``time_to_target_s`` is the simulated wall-clock (evaluation excluded; the simulator has none) at the end of the
first step whose cumulative samples reach N*. When the run stops earlier, the remaining steps are extrapolated at
the steady-state step time and the result says so.

The band spans (a) simulation seeds (``run.band_seeds`` runs with seeds seed, seed+1, ...: response lengths and
stragglers; each extra run simulates at most 40 steps and scales the nominal time by its steady-state step time),
(b) the learning model's seed spread (``learning.samples_spread``, the standard deviation of log N* over seeds,
N* lognormal; the band uses its 10th and 90th percentiles, exp(-/+1.2816 sigma)), for an async run with the
staleness form's error in quadrature (``learning.staleness_spread``, :func:`learning_spread`), and with a ceiling
table its fitted error's (``learning.ceiling_errors``: rlsim.learning.model.ceiling_spread), and (c) when a calibrated
profile gives uncertainties, the coefficients moved one standard deviation towards faster and slower hardware (in
log space, at most 2x: rlsim.run.simulation._shift). Lower end: fastest seed x low N* x fast coefficients; upper
end: the opposite.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlsim.learning.model import SamplesToTarget

Z90 = 1.2815515655446004  # standard normal 90th percentile


@dataclass(frozen=True)
class TimeToTarget:
    samples_to_target: float
    steps_to_target: int
    time_to_target_s: float
    extrapolated: bool
    multipliers: dict[str, float]
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "samples_to_target": self.samples_to_target,
            "steps_to_target": self.steps_to_target,
            "time_to_target_s": self.time_to_target_s,
            "time_to_target_extrapolated": self.extrapolated,
            "samples_multiplier": self.multipliers,
        }


def steps_for_samples(samples: float, batch: int) -> int:
    return max(1, math.ceil(samples / batch - 1e-9))


def time_to_target(
    n_star: SamplesToTarget, records: Sequence[Mapping[str, Any]], batch: int, steady_step_time_s: float
) -> TimeToTarget:
    """Wall-clock at the end of the step that reaches N* samples (extrapolated past the last simulated step)."""
    steps = steps_for_samples(n_star.samples, batch)
    multipliers = {
        "batch": n_star.batch_multiplier,
        "lr": n_star.lr_multiplier,
        "staleness": n_star.staleness_multiplier,
    }
    if n_star.ceiling_multiplier is not None:  # learning.ceilings: the batch's ceiling against the reference curve's
        multipliers["ceiling"] = n_star.ceiling_multiplier
    if n_star.family_multiplier is not None:  # learning.family: the moved curve's N* against the curve before
        multipliers["family"] = n_star.family_multiplier
    if n_star.filter_multiplier is not None:  # DAPO's dynamic sampling: trained samples per unfiltered ones
        multipliers["filter"] = n_star.filter_multiplier
    t, extrapolated = time_at_samples(records, batch, n_star.samples, steady_step_time_s)
    return TimeToTarget(n_star.samples, steps, t, extrapolated, multipliers, n_star.warnings)


def time_at_samples(
    records: Sequence[Mapping[str, Any]], batch: int, samples: float, steady_step_time_s: float
) -> tuple[float, bool]:
    """Wall-clock at the end of the step that reaches ``samples`` and whether it was extrapolated past the last
    simulated step at the steady-state step time."""
    steps = steps_for_samples(samples, batch)
    if steps <= len(records):
        return float(records[steps - 1]["wall_s"]), False
    return float(records[-1]["wall_s"] + (steps - len(records)) * steady_step_time_s), True


def learning_spread(
    samples_spread: float, staleness_spread: float, max_staleness: int, ceiling_spread: float = 0.0
) -> float:
    """The log-sd of N* the band uses: the seeds' spread and, for an async run (max_staleness > 0), the staleness
    form's own error against the runs it was fitted to (learning.staleness_spread), and the N* the batch's ceiling
    error moves (rlsim.learning.model.ceiling_spread), in quadrature."""
    extra = staleness_spread if max_staleness > 0 else 0.0
    return math.sqrt(samples_spread**2 + extra**2 + ceiling_spread**2)


def band(
    times_by_seed_s: list[float], samples_spread: float, profile_factors: tuple[float, float] = (1.0, 1.0)
) -> tuple[float, float]:
    """(low, high) time-to-target over seeds, the learning spread and profile uncertainty (module docstring)."""
    spread = math.exp(Z90 * samples_spread)
    low = min(times_by_seed_s) / spread * profile_factors[0]
    high = max(times_by_seed_s) * spread * profile_factors[1]
    return float(low), float(high)
