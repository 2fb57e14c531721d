"""How an answer moves over assumed response lengths (``workload.length_source: assumed``).

A config that gives only the cap gets a prior on the mean response length (rlsim.workload.priors); the answer then
says so and prices the range the prior allows: the scenario again with its response lengths moved so that their
clipped mean is the range's low and high end (rlsim.workload.lengths.with_clipped_mean), each a short run like the
band's (at most the band's window of steps), its steady step time read against the nominal seed over the same
window. Each end's step time is the nominal step time scaled by that ratio, its time to target the nominal time to
target scaled by it (the samples to target do not depend on the lengths here). Seconds and tokens.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rlsim.errors import ScenarioError
from rlsim.run.result import SimResult
from rlsim.run.timeline import Timelines
from rlsim.schema import Scenario
from rlsim.workload.lengths import clipped_mean, with_clipped_mean
from rlsim.workload.priors import response_prior


def length_bounds(scenario: Scenario) -> tuple[float, float]:
    """The (low, high) clipped mean response tokens of assumed lengths: ``workload.length_range_tokens``, else the
    reasoning prior's at the cap."""
    w = scenario.workload
    if w.length_range_tokens is not None:
        return float(w.length_range_tokens[0]), float(w.length_range_tokens[1])
    prior = response_prior(w.max_response_tokens)
    return prior.low_tokens, prior.high_tokens


def at_mean(scenario: Scenario, mean_tokens: float) -> Scenario:
    """``scenario`` with its response lengths moved to a clipped mean of ``mean_tokens`` (nothing validated again:
    only the lengths change)."""
    w = scenario.workload
    dist = with_clipped_mean(w.response_length, w.max_response_tokens, mean_tokens)
    return dataclasses.replace(scenario, workload=dataclasses.replace(w, response_length=dist))


def length_range(scenario: Scenario, nominal: SimResult, timelines: Timelines, steps: int) -> dict[str, Any]:
    """The summary's ``length_assumption``: the nominal step time (and time to target) at the assumed clipped mean,
    and at the range's low and high end (None for an end whose run is refused, a layout that no longer fits).
    ``scenario`` is the systems side's (rlsim.run.simulation.systems_scenario); ``steps`` the short runs' length."""
    w = scenario.workload
    low, high = length_bounds(scenario)
    short = dataclasses.replace(scenario, run=dataclasses.replace(scenario.run, steps=min(scenario.run.steps, steps)))

    def steady(scn: Scenario) -> float:
        return SimResult(scn, timelines.get(scn).records, []).steady_step_time_s

    step0, step = steady(short), nominal.steady_step_time_s
    ratios: list[float | None] = []
    for end in (low, high):
        try:
            ratios.append(steady(at_mean(short, end)) / step0)
        except ScenarioError:
            ratios.append(None)
    t = nominal.time_to_target.time_to_target_s if nominal.time_to_target is not None else None
    return {
        "source": w.length_source,
        "note": w.length_note,
        "mean_tokens": clipped_mean(w.response_length, w.max_response_tokens),
        "low_tokens": low,
        "high_tokens": high,
        "step_time_s": step,
        "step_time_low_s": step * ratios[0] if ratios[0] is not None else None,
        "step_time_high_s": step * ratios[1] if ratios[1] is not None else None,
        "time_to_target_s": t,
        "time_to_target_low_s": t * ratios[0] if t is not None and ratios[0] is not None else None,
        "time_to_target_high_s": t * ratios[1] if t is not None and ratios[1] is not None else None,
    }
