"""One-step anchoring: fit a scenario's few global cost coefficients on one measured step of the user's own job.

A coefficient here is one number ``s`` that scales a fixed set of ``Costs`` fields from what the scenario resolves
to (its ``costs`` section over rlsim's defaults), each clipped to its bounds (``rlsim.schema.Costs``): the profile
then holds the fields' fitted values. Never a factor per phase of one row: each coefficient is a mechanism that
holds for every configuration of that cluster and release.

* Step time alone fits ONE coefficient, the **cluster speed** (:data:`SPEED_FIELDS`): the compute and HBM
  efficiencies of decode, prefill, training and the log-prob passes, scaled together. What a user's cluster and
  release change that rlsim's catalog cannot know (clocks and power caps, kernel and library versions, CUDA graphs)
  moves every GPU-bound phase in the same direction; the links (NVLink, NICs, the host link) are other hardware and
  are left to a sync phase's measurement. Chosen by mechanism; docs/results/published.md has the anchored figures.
* Measured phase times fit one coefficient per measured phase (:func:`phase_coefficients`): rollout -> the
  rollout speed (decode and prefill efficiencies together: a step's decode can be bound by memory or compute),
  train_actor -> the training GEMM efficiency (the FP8 one under FP8 training), old_logprob / ref_logprob -> the
  forward efficiency (one coefficient, fitted on their sum), weight_sync -> the host link's efficiency for a
  colocated engine that sleeps (its copies to host memory dominate), else the interconnect's, reward -> the
  per-sample reward time, values / train_critic -> the critic's time scales. A step time given beside phases is
  checked, not fitted.

Each coefficient is found by root finding on log(predicted / measured) over its range (the step's steady-state
mean from ``rlsim.simulate``, 4 + 2k steps); a measurement no value reaches leaves it at the nearer bound, and says
so. Phases are fitted one after another, twice over, as the coefficients barely interact. Times in seconds.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from scipy.optimize import brentq

import rlsim
from calibrate import CalibrateError
from rlsim import catalog
from rlsim.errors import RlsimError
from rlsim.phases import Phase
from rlsim.run.costs import ENGINE_KEYS, engine_coefficients
from rlsim.run.profile import PhaseFit, Profile
from rlsim.scenario import engine_behaviour, with_overrides
from rlsim.schema import Costs, Scenario

SPEED_FIELDS = (
    "decode_memory_efficiency",
    "decode_compute_efficiency",
    "prefill_compute_efficiency",
    "train_compute_efficiency",
    "forward_compute_efficiency",
    "fp8_train_compute_efficiency",
)
ROLLOUT_FIELDS = ("decode_memory_efficiency", "decode_compute_efficiency", "prefill_compute_efficiency")
# the phase a fitted field belongs to in the profile (rlsim.run.profile: parameters are grouped by phase)
FIELD_PHASE = {
    **dict.fromkeys(ROLLOUT_FIELDS, Phase.ROLLOUT.value),
    "train_compute_efficiency": Phase.TRAIN_ACTOR.value,
    "fp8_train_compute_efficiency": Phase.TRAIN_ACTOR.value,
    "forward_compute_efficiency": Phase.OLD_LOGPROB.value,
    "host_link_efficiency": Phase.WEIGHT_SYNC.value,
    "link_efficiency": Phase.WEIGHT_SYNC.value,
    "reward_s_per_sample": Phase.REWARD.value,
    "critic_forward_time_scale": Phase.VALUES.value,
    "critic_train_time_scale": Phase.TRAIN_CRITIC.value,
}
STEP = "step"  # what the cluster speed is fitted on
SCALE_RANGE = (1e-3, 1e3)  # the widest a coefficient moves its fields from the scenario's values
TOLERANCE = 1e-3  # log(predicted / measured) at which a root is taken as found


@dataclass(frozen=True)
class Measured:
    """One step of the user's job: its time and the phases it timed, in seconds, and where they came from."""

    step_time_s: float | None
    phases_s: dict[str, float] = field(default_factory=dict)
    source: str = "typed"


@dataclass(frozen=True)
class Coefficient:
    """One fitted coefficient: its name, the ``Costs`` fields it scales, what it was fitted on (``step`` or phase
    names, their measured time summed), the scale found and whether it sits at the end of its range."""

    name: str
    fields: tuple[str, ...]
    fitted_on: tuple[str, ...]
    scale: float = 1.0
    at_bound: bool = False
    measured_s: float = 0.0
    before_s: float = 0.0
    after_s: float = 0.0


@dataclass(frozen=True)
class AnchorFit:
    """What :func:`anchor` found: the coefficients, the fields' values before and after (the profile writes the
    after values), the step and phases predicted before and after, and notes (fields left out, and why)."""

    coefficients: list[Coefficient]
    before: dict[str, float]
    after: dict[str, float]
    measured: Measured
    step_before_s: float
    step_after_s: float
    phases_before_s: dict[str, float]
    phases_after_s: dict[str, float]
    notes: list[str] = field(default_factory=list)


def steps_for(scenario: Scenario) -> int:
    """Steps the fit simulates: the scenario's own ``run.steps`` (so ``rlsim run --profile`` gives back the anchor
    step), at least 4 plus the k of fill and k of drain of an async schedule for a steady-state mean."""
    return max(scenario.run.steps, 4 + 2 * scenario.schedule.staleness)


def short_run(scenario: Scenario) -> Scenario:
    """The scenario as the fit simulates it: ``steps_for`` steps, never to a target (only step and phase times
    count)."""
    return with_overrides(scenario, {"run.steps": steps_for(scenario), "run.until_target": False})


def predict(scenario: Scenario, values: dict[str, float]) -> tuple[float, dict[str, float]]:
    """Steady-state mean step time and phase times of ``scenario`` with ``values`` in its costs."""
    scn = dataclasses.replace(scenario, costs=dataclasses.replace(scenario.costs, **away_from_default(values)))
    summary = rlsim.simulate(scn).summary()
    return float(summary["step_time_s"]), {k: float(v) for k, v in summary["phase_time_s"].items()}


def field_range(name: str) -> tuple[float, float]:
    """The values a ``Costs`` field may take (an open lower bound nudged inside)."""
    meta = {f.name: f.metadata for f in dataclasses.fields(Costs)}[name]
    lo = float(meta.get("ge", meta.get("gt", 0.0)))
    if "gt" in meta:
        lo = max(lo * (1 + 1e-9), 1e-12)
    return lo, float(meta.get("le", meta.get("lt", math.inf)))


def scaled(base: dict[str, float], fields: tuple[str, ...], s: float) -> dict[str, float]:
    """``fields`` at ``s`` times their ``base`` values, each clipped to its bounds."""
    out = {}
    for name in fields:
        lo, hi = field_range(name)
        out[name] = min(hi, max(lo, base[name] * s))
    return out


def held_by_behaviour(scenario: Scenario) -> dict[str, str]:
    """Costs fields the scenario's named engine behaviour sets (rlsim/catalog/engines.yaml): the scenario resolves
    them to the behaviour's value unless its costs set them away from the schema default."""
    name = engine_behaviour(scenario)
    if name is None:
        return {}
    entry = catalog.engine(name)
    return {k: name for k in ENGINE_KEYS if k in entry}


def resolved_costs(scenario: Scenario) -> dict[str, float]:
    """Every ``Costs`` field at the value the scenario's run uses: its costs section, except the fields its engine
    behaviour sets where the section leaves them at the default (``rlsim.run.costs.engine_coefficients``). The
    anchor scales these, so a scale of 1 is the scenario as it runs."""
    values = {f.name: float(getattr(scenario.costs, f.name)) for f in dataclasses.fields(Costs)}
    resolved = engine_coefficients(scenario)
    values.update({k: float(resolved[k]) for k in held_by_behaviour(scenario)})
    return values


def away_from_default(values: dict[str, float]) -> dict[str, float]:
    """``values`` with any that equal the schema default nudged off it by one part in 10^9: a costs value at the
    default is overridden by an engine behaviour's own, so a fitted value must never sit exactly on it."""
    defaults = Costs()
    return {k: (v * (1 + 1e-9) if v == getattr(defaults, k) else v) for k, v in values.items()}


def phase_coefficients(scenario: Scenario, phases: list[str]) -> list[Coefficient]:
    """One coefficient per measured phase group (the module docstring says which and why)."""
    train = "fp8_train_compute_efficiency" if scenario.training.precision == "fp8" else "train_compute_efficiency"
    sleeps = scenario.hardware.placement == "colocated" and scenario.weight_sync.engine_sleeps
    table = [
        ("rollout speed", ROLLOUT_FIELDS, (Phase.ROLLOUT,)),
        (train, (train,), (Phase.TRAIN_ACTOR,)),
        ("forward_compute_efficiency", ("forward_compute_efficiency",), (Phase.OLD_LOGPROB, Phase.REF_LOGPROB)),
        (
            "host_link_efficiency" if sleeps else "link_efficiency",
            ("host_link_efficiency" if sleeps else "link_efficiency",),
            (Phase.WEIGHT_SYNC,),
        ),
        ("reward_s_per_sample", ("reward_s_per_sample",), (Phase.REWARD,)),
        ("critic_forward_time_scale", ("critic_forward_time_scale",), (Phase.VALUES,)),
        ("critic_train_time_scale", ("critic_train_time_scale",), (Phase.TRAIN_CRITIC,)),
    ]
    out = []
    for name, fields, group in table:
        on = tuple(p.value for p in group if p.value in phases)
        if on:
            out.append(Coefficient(name, fields, on))
    return out


def solve(residual: Callable[[float], float], lo: float, hi: float) -> tuple[float, bool]:
    """The scale in [lo, hi] where ``residual`` (log predicted / measured) is zero, found in log space; without a
    sign change the end with the smaller |residual| and True (at a bound)."""
    a, b = math.log(lo), math.log(hi)
    fa, fb = residual(math.exp(a)), residual(math.exp(b))
    if fa * fb > 0 or (fa == fb):
        return (math.exp(a), True) if abs(fa) < abs(fb) else (math.exp(b), True)
    x = brentq(lambda u: residual(math.exp(u)), a, b, xtol=TOLERANCE, rtol=TOLERANCE)
    return math.exp(x), False


def scale_range(base: dict[str, float], fields: tuple[str, ...]) -> tuple[float, float]:
    """The scales over which some field of ``fields`` still moves (beyond them every one is clipped)."""
    lo = max(SCALE_RANGE[0], min(field_range(f)[0] / base[f] for f in fields))
    hi = min(SCALE_RANGE[1], max(field_range(f)[1] / base[f] for f in fields))
    return lo, hi


def _fit_one(
    scenario: Scenario, coef: Coefficient, values: dict[str, float], base: dict[str, float], measured: float
) -> tuple[Coefficient, dict[str, float]]:
    """``coef`` fitted with the other fields at ``values``: the coefficient found and the values with it in."""

    def time_of(v: dict[str, float]) -> float:
        step, phases = predict(scenario, v)
        return step if coef.fitted_on == (STEP,) else sum(phases.get(p, 0.0) for p in coef.fitted_on)

    before = time_of(values)
    if before <= 0:
        names = " + ".join(coef.fitted_on)
        raise CalibrateError(
            f"{names} measured {measured:g} s but the scenario has none (predicted 0 s): give a scenario with "
            f"that phase, or leave the phase out of the measurement"
        )
    lo, hi = scale_range(base, coef.fields)
    s, at_bound = solve(lambda x: math.log(time_of({**values, **scaled(base, coef.fields, x)}) / measured), lo, hi)
    values = {**values, **scaled(base, coef.fields, s)}
    after = time_of(values)
    found = dataclasses.replace(coef, scale=s, at_bound=at_bound, measured_s=measured, before_s=before, after_s=after)
    return found, values


STEP_COEFFICIENT = ("cluster speed", SPEED_FIELDS)  # what a step time alone fits: (name, Costs fields)


def anchor(
    scenario: Scenario, measured: Measured, step_coefficient: tuple[str, tuple[str, ...]] = STEP_COEFFICIENT
) -> AnchorFit:
    """Fit the coefficients that ``measured`` supports (the module docstring) on ``scenario``'s step;
    ``step_coefficient`` is what a step time alone fits (another one only to compare them)."""
    scn = short_run(scenario)
    base = resolved_costs(scn)
    if measured.phases_s:
        coefs = phase_coefficients(scn, list(measured.phases_s))
        sweeps = 2
    elif measured.step_time_s is not None:
        coefs, sweeps = [Coefficient(step_coefficient[0], step_coefficient[1], (STEP,))], 1
    else:
        raise CalibrateError("nothing measured: give a step time (--step-time S) or phases (--phase NAME=S)")
    notes = []
    for i, c in enumerate(coefs):
        why = {f: "0 in the scenario, which no scale moves" for f in c.fields if base[f] <= 0}
        if why:
            notes.append(f"{c.name}: leaves out " + ", ".join(f"{f} ({w})" for f, w in why.items()))
        coefs[i] = dataclasses.replace(c, fields=tuple(f for f in c.fields if f not in why))
    coefs = [c for c in coefs if c.fields]
    if not coefs:
        raise CalibrateError("no measured time has a coefficient a profile can move: " + "; ".join(notes))
    try:
        step_before, phases_before = predict(scn, {})
        values: dict[str, float] = {}
        for _ in range(sweeps):
            for i, c in enumerate(coefs):
                m = measured.step_time_s if c.fitted_on == (STEP,) else sum(measured.phases_s[p] for p in c.fitted_on)
                coefs[i], values = _fit_one(scn, c, values, base, float(m or 0.0))
        step_after, phases_after = predict(scn, values)
    except CalibrateError:
        raise
    except RlsimError as exc:
        raise CalibrateError(f"the scenario cannot be simulated: {exc}") from None
    fitted = sorted({f for c in coefs for f in c.fields})
    return AnchorFit(
        coefficients=coefs,
        before={f: base[f] for f in fitted},
        after=away_from_default({f: values.get(f, base[f]) for f in fitted}),
        measured=measured,
        step_before_s=step_before,
        step_after_s=step_after,
        phases_before_s=phases_before,
        phases_after_s=phases_after,
        notes=notes,
    )


def to_profile(fit: AnchorFit, scenario: Scenario, command: str, date: str) -> Profile:
    """The profile that puts the fitted fields' values into a scenario (``rlsim run/sweep/plan --profile``), with
    the anchor step, what was fitted and the residual in its provenance."""
    phases: dict[str, dict[str, float]] = {}
    for name, value in fit.after.items():
        phases.setdefault(FIELD_PHASE[name], {})[name] = value
    held_out = {"method": "one-step anchor (fitted on the anchor step; no held-out error)", "num_points": 1}
    m = fit.measured
    provenance = {
        "device": scenario.hardware.gpu.name,
        "engine": scenario.software.engine,
        "engine_version": scenario.software.engine_version or "",
        "torch_version": "",
        "model": scenario.model.name,
        "dtype": scenario.training.precision,
        "date": date,
        "command": command,
        "anchor": {
            "source": m.source,
            "measured": {"step_time_s": m.step_time_s, "phases_s": dict(m.phases_s)},
            "fitted": [
                {
                    "coefficient": c.name,
                    "fitted_on": list(c.fitted_on),
                    "scale": c.scale,
                    "at_bound": c.at_bound,
                    "fields": {f: [fit.before[f], fit.after[f]] for f in c.fields},
                    "measured_s": c.measured_s,
                    "predicted_before_s": c.before_s,
                    "predicted_after_s": c.after_s,
                    "residual_pct": (c.after_s / c.measured_s - 1) * 100,
                }
                for c in fit.coefficients
            ],
            "step_time_s": {"predicted_before": fit.step_before_s, "predicted_after": fit.step_after_s},
            "notes": list(fit.notes),
        },
    }
    return Profile(
        provenance=provenance,
        phases={p: PhaseFit(form="roofline", parameters=v, held_out=dict(held_out)) for p, v in phases.items()},
    )


def describe(fit: AnchorFit) -> list[str]:
    """What a person reads: each fitted coefficient with before -> after, the fit's residual, the step time."""
    lines = []
    for c in fit.coefficients:
        where = "step time" if c.fitted_on == (STEP,) else " + ".join(c.fitted_on)
        bound = " (AT ITS BOUND: no value reaches the measurement; something else sets this time)" if c.at_bound else ""
        lines.append(
            f"{c.name} x{c.scale:.3g} on {where}: measured {c.measured_s:.3g} s, predicted {c.before_s:.3g} -> "
            f"{c.after_s:.3g} s ({(c.after_s / c.measured_s - 1) * 100:+.1f}%){bound}"
        )
        lines += [f"  {f}: {fit.before[f]:.4g} -> {fit.after[f]:.4g}" for f in c.fields]
        if not 0.2 <= c.scale <= 5:
            lines.append(f"  x{c.scale:.3g} is far from the scenario's values: does the scenario describe this job?")
    m = fit.measured.step_time_s
    vs = f"; measured {m:.3g} s ({(fit.step_after_s / m - 1) * 100:+.1f}%)" if m else ""
    lines.append(f"step time predicted {fit.step_before_s:.3g} -> {fit.step_after_s:.3g} s{vs}")
    return lines + [f"note: {n}" for n in fit.notes]
