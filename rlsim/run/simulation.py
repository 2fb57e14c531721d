"""The entry point: scenario (+ optional profile) -> SimResult, with the learning model applied on top.

The systems side (step times) comes from the SimPy pipeline; the algorithm side (samples-to-target and the
predicted metric per step, stored as ``eval_metric``) from rlsim.learning.model. Under an async schedule the staleness
multiplier uses k = ``schedule.max_staleness``, the lag of every steady-state batch.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeGuard

from rlsim.errors import ScenarioError
from rlsim.host.footprint import Footprint, check, estimate
from rlsim.learning.curve import metric_at
from rlsim.learning.model import (
    LearningModelError,
    SamplesToTarget,
    ceiling_spread,
    scenario_samples_to_target,
)
from rlsim.learning.target import band, learning_spread, steps_for_samples, time_to_target
from rlsim.run.batches import window
from rlsim.run.keep_range import keep_range
from rlsim.run.length_range import length_range
from rlsim.run.overheads import run_overheads
from rlsim.run.probe import PROBE_ABOVE_S, probe, search_steps
from rlsim.run.profile import Profile, fitted_error, load_profile, operating_point
from rlsim.run.result import SimResult
from rlsim.run.systems_error import systems_error
from rlsim.run.timeline import Timeline, Timelines, prefix_exact
from rlsim.scenario import (
    apply_overrides,
    as_overrides,
    from_dict,
    load_scenario,
    read_scenario,
    software,
    with_overrides,
)
from rlsim.schema import Scenario
from rlsim.workload.lr_rules import lr_for_batch


def configure(
    scenario: Scenario | str | Path | dict[str, Any],
    profile: Profile | None = None,
    overrides: dict[str, Any] | list[str] | None = None,
    explicit: Iterable[str] = (),
) -> Scenario:
    """The scenario a simulation runs: ``scenario`` (a Scenario, a YAML path or a dict), the profile's fitted
    learning and length models in place of its own (:meth:`Profile.fitted_overrides`: the keys of ``overrides``
    and ``explicit`` win), then ``overrides`` on top. The plain data is built once and validated once.

    When the combination is invalid, a dict's (or, under a profile, a file's) own error is reported if it has one,
    as when it was validated alone before the rest was added; an error only the profile's sections cause is a
    ProfileError. A file with overrides and no profile is validated as :func:`load_scenario` does it."""
    over = as_overrides(overrides)
    if isinstance(scenario, Scenario):  # already valid: one more validation, with everything added at once
        if profile is not None:
            return profile.with_fitted(scenario, over, keep=explicit)
        return with_overrides(scenario, over) if over else scenario
    if profile is None and not isinstance(scenario, dict):
        return load_scenario(scenario, over)  # a file and --set: validated together, as rlsim run always did
    raw = scenario if isinstance(scenario, dict) else read_scenario(scenario)
    mine = profile.fitted_overrides(over, keep=explicit) if profile is not None else {}
    try:
        return from_dict(apply_overrides(raw, {**mine, **over}) if mine or over else raw)
    except ScenarioError as exc:
        if mine or over:  # the scenario's own error, if it has one, is reported first
            try:
                from_dict(raw)
            except ScenarioError as own:
                raise own from None
        if over or not mine:
            raise
        raise fitted_error(exc) from None


def simulate(
    scenario: Scenario | str | Path | dict[str, Any],
    profile: Profile | str | Path | None = None,
    overrides: dict[str, Any] | list[str] | None = None,
    progress: Callable[[int], None] | None = None,
    with_band: bool = False,
    explicit: Iterable[str] = (),
    to_target: bool = False,
    before: Callable[[Footprint], None] | None = None,
    timelines: Timelines | None = None,
) -> SimResult:
    """Simulate a run. ``scenario`` is a Scenario, a YAML path or a dict; ``profile`` a Profile or JSON path.

    ``overrides`` are dotted keys (``{"workload.prompts_per_step": 256}`` or ``["run.steps=5"]``);
    ``progress(step)`` is called after each simulated step. With a learning model (``learning.metric`` and
    ``learning.target``, from the scenario or from the profile's learning section, which replaces the scenario's)
    the result carries time-to-target; ``with_band`` adds its band (extra runs). The profile is applied here and
    only here (:func:`configure`, then :func:`predict`); the keys of ``overrides`` and ``explicit`` (dotted keys a
    caller already set on ``scenario``, e.g. from ``--set``) win over its learning section. With a learning model
    the run goes to the target unless ``run.until_target`` is false (:func:`resolve_until_target`); ``to_target``
    forces it, as a sweep does. Before anything is simulated, the run's memory and time are estimated
    (rlsim.host.footprint): a run larger than the machine's available memory is refused (FootprintError), and
    ``before(footprint)`` is called with the estimate (the CLI says when it is long). ``timelines`` (a cache a
    caller keeps across calls) serves the systems side where it was simulated before (rlsim.run.timeline).
    """
    prof = load_profile(profile) if isinstance(profile, (str, Path)) else profile
    scn = configure(scenario, prof, overrides, explicit)
    return predict(scn, prof, progress, with_band, to_target, before, timelines)


def predict(
    scn: Scenario,
    profile: Profile | None = None,
    progress: Callable[[int], None] | None = None,
    with_band: bool = False,
    to_target: bool = False,
    before: Callable[[Footprint], None] | None = None,
    timelines: Timelines | None = None,
    screen_steps: int | None = None,
) -> SimResult:
    """The answer for a scenario as :func:`configure` built it (the profile's learning and length models already
    in; nothing is validated again): the systems timeline of the scenario with the profile's fitted costs folded in
    (:func:`systems_scenario`), from ``timelines`` or simulated (rlsim.run.timeline), and the learning model and the
    profile's range warnings applied to it (:func:`answer`). The result's scenario, and with it the run id and the
    summary's scenario_hash, is ``scn``'s, without the profile's costs. With ``screen_steps`` a run to the target
    simulates at most that many steps and extrapolates the rest at the steady step time (a sweep's screen,
    rlsim.answers.sweep); the result's time_to_target then says it was extrapolated, without a warning."""
    timelines = timelines if timelines is not None else Timelines()
    scn = resolve_until_target(scn, to_target)
    n_star = scenario_samples_to_target(scn)
    run_scn = _with_steps_to_target(scn, n_star)
    screened = False
    if screen_steps and scn.run.until_target and run_scn.run.steps > screen_steps:
        screened = True
        run_scn = dataclasses.replace(run_scn, run=dataclasses.replace(run_scn.run, steps=screen_steps))
    systems = systems_scenario(run_scn, profile)
    if before is not None or not timelines.holds(systems):  # a run answered from the cache was checked before
        fp = footprint(run_scn, with_band and n_star is not None, profile)
        if before is not None:
            before(fp)
    result = answer(run_scn, timelines.get(systems, progress), profile, n_star, screened)
    result.systems_error = systems_error(scn, anchored=profile is not None and "anchor" in profile.provenance)
    if with_band and n_star is not None and result.time_to_target is not None:  # a time-to-target needs n_star
        result.band_s = _band(systems, profile, n_star, result, timelines)
    ttt = result.time_to_target
    result.overheads = run_overheads(systems, ttt.steps_to_target if ttt is not None else len(result.records))
    if with_band and scn.workload.length_source == "assumed":  # the answer over the assumed lengths' range
        result.length_range = length_range(systems, result, timelines, BAND_STEPS + 2 * scn.schedule.staleness)
    if with_band and _keep_assumed(scn):  # the answer over the assumed keep rate's range (rlsim.run.keep_range)
        result.keep_range = keep_range(systems, result, timelines, BAND_STEPS + 2 * scn.schedule.staleness)
    return result


def _keep_assumed(scenario: Scenario) -> bool:
    ds = scenario.algorithm.dynamic_sampling
    return ds is not None and ds.keep_rate_source == "assumed"


def systems_scenario(scenario: Scenario, profile: Profile | None) -> Scenario:
    """What the systems side (cost model, pipeline, timeline key) sees: ``scenario`` with the profile's fitted costs
    folded in (not validated again: the profile's coefficients were validated where it was loaded). The answer's
    scenario stays ``scenario``: its digest is the run id and the summary's scenario_hash."""
    if profile is None:
        return scenario
    return dataclasses.replace(scenario, costs=profile.apply(scenario.costs))


def resolve_until_target(scenario: Scenario, to_target: bool = False) -> Scenario:
    """``run.until_target`` made a bool: true with ``to_target`` (sweep, decide, plan) or when unset (None) and the
    scenario has a learning model, so every command answers from the same simulated steps; an explicit false
    keeps ``run.steps`` (the rest extrapolated, and the result says so)."""
    has_model = scenario.learning.metric is not None
    until = scenario.run.until_target
    until = True if to_target and has_model else (has_model if until is None else until)
    if until == scenario.run.until_target:
        return scenario
    return dataclasses.replace(scenario, run=dataclasses.replace(scenario.run, until_target=until))


def planned_steps(scn: Scenario, to_target: bool = False) -> int:
    """The steps :func:`predict` will run for ``scn`` (to the target where it goes there)."""
    scn = resolve_until_target(scn, to_target)
    return _with_steps_to_target(scn, scenario_samples_to_target(scn)).run.steps


def footprint(scenario: Scenario, with_band: bool = False, profile: Profile | None = None) -> Footprint:
    """The checked estimate (rlsim.host.footprint) of simulating ``scenario``'s steps, and with ``with_band`` the band's
    extra runs (:func:`_band`: one per extra seed; the nominal seed again, a lookup in the run's timeline where
    a shorter run is its start, ``prefix_exact``; two with shifted coefficients where ``profile`` has
    uncertainties; two at the ends of assumed lengths' range, rlsim.run.length_range; two at an assumed keep rate's,
    rlsim.run.keep_range). A run estimated at PROBE_ABOVE_S or more is probed (rlsim.run.probe): its engine's
    measured rate per response where larger, and where it preempts the max_num_seqs search ``rlsim run`` makes then
    (rlsim.answers.thrash)."""
    w = window(scenario)

    def whole(steps: int) -> int:  # streaming, a run simulates whole windows (rlsim.run.batches.step_requests)
        return -(-steps // w) * w

    steps = whole(scenario.run.steps)
    if with_band:
        runs = scenario.run.band_seeds - 1 + (0 if prefix_exact(scenario) else 1)
        runs += 2 if _shifted(profile) else 0
        runs += 2 if scenario.workload.length_source == "assumed" else 0  # rlsim.run.length_range's two ends
        runs += 2 if _keep_assumed(scenario) else 0  # rlsim.run.keep_range's two ends
        steps += runs * whole(min(scenario.run.steps, BAND_STEPS + 2 * scenario.schedule.staleness))
    # every generation round's requests are simulated (streaming: k + 1 steps' batches in one window, once)
    fp = check(estimate(scenario.generated_per_step, steps, w))
    if fp.seconds < PROBE_ABOVE_S:
        return fp
    measured = probe(scenario)  # a thrashing engine costs the kernel far more per response (rlsim.run.probe)
    steps += search_steps(scenario) if measured.preempts else 0  # rlsim run searches after a run that preempts
    return check(estimate(scenario.generated_per_step, steps, w, measured.seconds_per_response))


def _with_steps_to_target(scenario: Scenario, n_star: SamplesToTarget | None) -> Scenario:
    """With ``run.until_target``: as many steps as the target needs (+ k to drain), at most run.max_steps."""
    if not scenario.run.until_target:
        return scenario
    if n_star is None:
        raise LearningModelError("run.until_target needs learning.metric and learning.target")
    steps = steps_for_samples(n_star.samples, scenario.workload.responses_per_step) + scenario.schedule.staleness
    return dataclasses.replace(
        scenario, run=dataclasses.replace(scenario.run, steps=min(steps, scenario.run.max_steps))
    )


def answer(
    scenario: Scenario, timeline: Timeline, prof: Profile | None, n_star: SamplesToTarget | None, screened: bool = False
) -> SimResult:
    """``scenario``'s result from a timeline of its systems (its own copy of the records: this sets their run id,
    learning rate and predicted metric): the warnings, and with a learning model (``n_star``) the metric per
    step and the time-to-target (``screened``: cut short by a sweep's screen, which says so itself). Nothing is
    simulated."""
    records = timeline.records
    run_id, lr = f"sim-{scenario.digest()}", lr_for_batch(scenario.learning, scenario.workload.responses_per_step)
    for rec in records:
        rec["run_id"], rec["lr"] = run_id, lr
    warnings: list[str] = software.warnings(scenario) + scenario.hardware.topology_warnings()
    if prof is not None:
        warnings += prof.range_warnings(operating_point(scenario, records))
        # what the fit said of its learning model (calibrate.runs.learning.degenerate_reasons), where it is in use
        degenerate = (prof.learning or {}).get("degenerate")
        if scenario.learning.metric is not None and degenerate:
            warnings += [f"profile learning model: {r}" for r in degenerate]
    result = SimResult(scenario, records, timeline.spans, prof.info() if prof else None, warnings)
    if n_star is not None:
        _attach_learning(result, n_star, screened)
    return result


def _attach_learning(result: SimResult, n_star: SamplesToTarget, screened: bool = False) -> None:
    """The predicted metric per step and the time-to-target of ``result``, for N* = ``n_star``; a warning when
    the steps simulated fall short of the target (not for a sweep's screen: ``screened``)."""
    scn, records = result.scenario, result.records
    curve = n_star.curve or scn.learning.metric  # a staleness loss lowers the ceiling (rlsim.learning.staleness)
    assert curve is not None  # n_star is learning.metric's (scenario_samples_to_target)
    mul = n_star.curve_multiplier if n_star.curve_multiplier is not None else n_star.multiplier
    metrics = metric_at(curve, [r["cumulative_samples"] for r in records], mul)
    for rec, value in zip(records, metrics):
        rec["eval_metric"] = float(value)
    batch, steady = scn.workload.responses_per_step, result.steady_step_time_s
    result.time_to_target = time_to_target(n_star, records, batch, steady)
    result.warnings += list(n_star.warnings)
    if result.time_to_target.extrapolated and screened:  # the curve on to the target (and the drain), at the
        # steady step time, for the sweep's curves (not built for the plan's thousands of short screen runs)
        last = records[-1]
        more = range(1, result.time_to_target.steps_to_target + scn.schedule.staleness - len(records) + 1)
        samples = [last["cumulative_samples"] + i * batch for i in more]
        result.continued = [
            {"step": last["step"] + i, "cumulative_samples": n, "wall_s": last["wall_s"] + i * steady, "eval_metric": m}
            for i, n, m in zip(more, samples, metric_at(curve, samples, mul).tolist())
        ]
    if result.time_to_target.extrapolated and not screened:
        fix = "raise run.max_steps" if scn.run.until_target else "set run.until_target: true"
        result.warnings.append(
            f"the target needs {result.time_to_target.steps_to_target} steps but {len(records)} were simulated; "
            f"the rest is extrapolated at the steady-state step time ({fix} to simulate them)"
        )


BAND_STEPS = 40  # steps simulated per extra band run: enough for a steady-state step time


def _band(
    scenario: Scenario, prof: Profile | None, n_star: SamplesToTarget, nominal: SimResult, timelines: Timelines
) -> tuple[float, float]:
    """Extra runs (other seeds; coefficients one sigma faster/slower) measure the steady-state step time over at
    most BAND_STEPS steps; each scales the nominal time-to-target by its step-time ratio; the systems side's measured
    error for the setting (rlsim.run.systems_error) widens both ends. ``scenario`` is the systems
    side's scenario (:func:`systems_scenario`: the profile's costs folded in)."""
    assert nominal.time_to_target is not None  # predict bands a result with a time-to-target only
    t0 = nominal.time_to_target.time_to_target_s
    short = dataclasses.replace(
        scenario.run, steps=min(scenario.run.steps, BAND_STEPS + 2 * scenario.schedule.staleness)
    )

    def steady(run_scn: Scenario) -> float:
        return SimResult(run_scn, timelines.get(run_scn).records, []).steady_step_time_s

    base = dataclasses.replace(scenario, run=short)
    step0 = steady(base)  # the nominal seed over the same short window

    def scaled(run_scn: Scenario) -> float:
        return t0 * steady(run_scn) / step0

    times = [t0]
    for i in range(1, scenario.run.band_seeds):
        times.append(scaled(dataclasses.replace(scenario, run=dataclasses.replace(short, seed=scenario.run.seed + i))))
    factors = (1.0, 1.0)
    if _shifted(prof):
        ref = scaled(base)
        fast, slow = scaled(_shift(base, prof, faster=True)), scaled(_shift(base, prof, faster=False))
        factors = (min(fast, slow) / ref, max(fast, slow) / ref)
    if nominal.systems_error is not None:  # the cost model's measured error for this setting (systems_error.py)
        low, high = nominal.systems_error.factors
        factors = (factors[0] * low, factors[1] * high)
    learning = scenario.learning
    at = ceiling_spread(learning, scenario.workload.responses_per_step)
    spread = learning_spread(learning.samples_spread, learning.staleness_spread, scenario.schedule.staleness, at)
    return band(times, spread, factors)


def _shifted(prof: Profile | None) -> TypeGuard[Profile]:
    """Whether the band simulates two runs with the profile's coefficients shifted (it has uncertainties)."""
    return prof is not None and any(fit.uncertainty for fit in prof.phases.values())


MAX_SHIFT = 2.0  # a coefficient moves by at most this factor for the band


def _shift(scenario: Scenario, prof: Profile, faster: bool) -> Scenario:
    """``scenario`` with its coefficients moved one standard deviation towards faster (or slower) hardware, in log
    space: value x exp(+-sigma / value), at most a factor MAX_SHIFT. (A linear shift took a coefficient whose sigma
    exceeds its value, one the bench barely constrains, to its floor: a decode efficiency of 0.17 +- 0.21 became
    1e-6 and a 7-second time-to-target got a 9-hour upper band.)"""
    costs = scenario.costs
    changes: dict[str, float] = {}
    for fit in prof.phases.values():
        for name, sigma in fit.uncertainty.items():
            value = getattr(costs, name)
            if value <= 0:
                continue
            factor = math.exp(min(sigma / value, math.log(MAX_SHIFT)))
            if name.endswith("efficiency"):  # larger is faster
                changes[name] = min(1.0, value * factor) if faster else value / factor
            else:  # overhead seconds: smaller is faster
                changes[name] = value / factor if faster else value * factor
    return dataclasses.replace(scenario, costs=dataclasses.replace(costs, **changes))
