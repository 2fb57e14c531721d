"""How an answer moves over an assumed keep rate (``algorithm.dynamic_sampling.keep_rate_source: assumed``).

A config that enables DAPO's filter without a keep rate gets rlsim.workload.keep_prior's (1/3, with its source); the
answer then says so and prices the range that module gives: the scenario again at the range's low and high keep
rate, each a short run like the band's (at most the band's window of steps), its steady step time read against the
nominal keep rate's over the same window. Each end's step time is the nominal step time scaled by that ratio; its
time to target the nominal one scaled by that ratio and by the samples to target at that keep rate over the nominal's
(rlsim.learning.model: the trained samples to target scale by keep ** learning.filtered_signal_power). An end whose
rounds exceed max_gen_batches is refused (None), as the framework stops there. Seconds.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rlsim.errors import RlsimError, ScenarioError
from rlsim.learning.model import samples_to_target
from rlsim.run.result import SimResult
from rlsim.run.timeline import Timelines
from rlsim.scenario.validation import validate
from rlsim.schema import Scenario
from rlsim.workload.keep_prior import KEEP_RANGE, SOURCE


def at_keep(scenario: Scenario, keep: float) -> Scenario:
    """``scenario`` with its filter's keep rate set to ``keep`` (validated: its rounds must fit max_gen_batches)."""
    ds = scenario.algorithm.dynamic_sampling
    assert ds is not None
    alg = dataclasses.replace(scenario.algorithm, dynamic_sampling=dataclasses.replace(ds, keep_rate=keep))
    moved = dataclasses.replace(scenario, algorithm=alg)
    validate(moved)
    return moved


def _samples(scenario: Scenario, keep: float) -> float | None:
    if scenario.learning.metric is None:
        return None
    w = scenario.workload
    try:
        return samples_to_target(
            scenario.learning, w.responses_per_step, scenario.schedule.staleness, w.group_size, keep
        ).samples
    except RlsimError:  # the target out of reach at this keep rate
        return None


def keep_range(scenario: Scenario, nominal: SimResult, timelines: Timelines, steps: int) -> dict[str, Any]:
    """The summary's ``keep_assumption``: the nominal step time (and time to target) at the assumed keep rate, and
    at the range's low and high end (None for an end that is refused). ``scenario`` is the systems side's
    (rlsim.run.simulation.systems_scenario); ``steps`` the short runs' length."""
    ds = scenario.algorithm.dynamic_sampling
    assert ds is not None
    short = dataclasses.replace(scenario, run=dataclasses.replace(scenario.run, steps=min(scenario.run.steps, steps)))

    def steady(scn: Scenario) -> float:
        return SimResult(scn, timelines.get(scn).records, []).steady_step_time_s

    step0, step = steady(short), nominal.steady_step_time_s
    t = nominal.time_to_target.time_to_target_s if nominal.time_to_target is not None else None
    n0 = _samples(scenario, ds.keep_rate)
    ends: list[tuple[float | None, float | None]] = []
    for keep in KEEP_RANGE:
        try:
            ratio = steady(at_keep(short, keep)) / step0
        except ScenarioError:
            ends.append((None, None))
            continue
        n = _samples(scenario, keep)
        ttt = t * ratio * n / n0 if t is not None and n is not None and n0 else None
        ends.append((step * ratio, ttt))
    return {
        "keep_rate": ds.keep_rate,
        "source": SOURCE,
        "low_keep": KEEP_RANGE[0],
        "high_keep": KEEP_RANGE[1],
        "step_time_s": step,
        "step_time_low_s": ends[0][0],
        "step_time_high_s": ends[1][0],
        "time_to_target_s": t,
        "time_to_target_low_s": ends[0][1],
        "time_to_target_high_s": ends[1][1],
    }
