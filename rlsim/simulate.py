"""The entry point: scenario (+ optional profile) -> SimResult."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlsim.costs import RooflineCostModel
from rlsim.pipeline import run_pipeline
from rlsim.profile import Profile, load_profile, operating_point
from rlsim.result import SimResult
from rlsim.scenario import Scenario, from_dict, load_scenario


def simulate(
    scenario: Scenario | str | Path | dict[str, Any],
    profile: Profile | str | Path | None = None,
    overrides: dict[str, Any] | list[str] | None = None,
    progress: Callable[[int], None] | None = None,
) -> SimResult:
    """Simulate a run. ``scenario`` is a Scenario, a YAML path or a dict; ``profile`` a Profile or JSON path.

    ``overrides`` are dotted keys (``{"workload.prompts_per_step": 256}`` or ``["run.steps=5"]``);
    ``progress(step)`` is called after each simulated step.
    """
    if isinstance(scenario, (str, Path)):
        scn = load_scenario(scenario, overrides)
    elif isinstance(scenario, dict):
        scn = from_dict(scenario)
        if overrides:
            scn = scn.with_overrides(overrides)
    else:
        scn = scenario.with_overrides(overrides) if overrides else scenario
    prof = load_profile(profile) if isinstance(profile, (str, Path)) else profile
    costs = prof.apply(scn.costs) if prof is not None else scn.costs
    records, spans = run_pipeline(scn, RooflineCostModel.from_scenario(scn, costs), progress)
    warnings: list[str] = []
    if prof is not None:
        warnings = prof.range_warnings(operating_point(scn, records))
    return SimResult(scn, records, spans, prof.info() if prof else None, warnings)
