"""What only real runs show, fitted from the reference runs into the profile (``rlsim-calibrate fit --runs``).

The bench fit (calibrate.bench.fit) times each phase alone. The runs at the reference batch (one batch size, any
number of seeds, one setup) then give, once and for every later prediction (with a target, from each run's steps
up to the median crossing: the span a run's step time is defined over, docs/calibrate.md; a stalled seed's later
steps would otherwise set the lengths of steps that never see them):

* **the response-length model** (``lengths``): :mod:`calibrate.runs.lengths`;
* **reward and glue** (``reward`` phase, ``rollout_s_per_sample``): the reward's seconds per sample and the work
  outside the timed phases (batch assembly, detokenizing, logging) per sample, as means over the runs' steps
  after the first (measured on the CPU loop: 0.09 ms per response at 64, 128 and 256 responses).
* **in-loop factors**: per bench-fitted phase, the median over runs of measured / predicted seconds at the
  reference batch, which scales that phase's coefficients (overheads multiply, efficiencies divide, capped at 1).
  A microbenchmark times a phase alone with warm caches; inside the loop the same code runs between other phases
  (train and log-prob passes measured 10-26% slower than the bench predicted). Predicted with the fitted length
  model, never with the runs' own measured lengths.
* **the learning model** (``learning``): the ScaleRL sigmoid of the reference runs' mean eval curve in samples,
  anchored so that it crosses the target at the median samples-to-target over seeds; the seeds' spread
  (``samples_spread``: the log standard deviation of samples-to-target, a lognormal fitted by maximum likelihood
  with the seeds that never reached the target within their budget as right-censored); and the batch term, whose
  form follows the LR rule: the critical-batch form with B_crit = B_simple pooled over every step of the
  reference runs' logged gradient norms, to the power 1/2 for Adam under the sqrt rule (rlsim.learning.model derives
  it) and 1 under the linear rule (McCandlish et al. 2018, LR tuned per batch); invariant when no norms were
  logged. A fixed LR (rule ``none``) keeps the power 1/2 with sqrt as the trajectory-preserving rule, so the
  scenario's untuned-LR penalty applies on top.

The profile then predicts any batch size from the setup alone (``rlsim run|sweep SCENARIO --profile``), and
``rlsim-calibrate validate`` only predicts and compares.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from calibrate import CalibrateError
from calibrate.bench.tables import check_threads
from calibrate.runs.learning import learning_model, learning_warnings
from calibrate.runs.lengths import LENGTH_PHASES, LENGTH_PROGRESS, length_model
from calibrate.runs.run import Run, check_same_setup, measured, setup_scenario, step_times
from rlsim.host.machine_load import load_summary, load_warning
from rlsim.phases import Phase
from rlsim.run.profile import PhaseFit, Profile
from rlsim.run.simulation import simulate
from rlsim.scenario import from_dict

# per phase, the coefficients that scale its time: overheads multiply, efficiencies divide
SCALED = {
    Phase.ROLLOUT.value: (
        ("decode_iteration_overhead_s", "decode_per_seq_overhead_s", "prefill_overhead_s"),
        ("decode_memory_efficiency", "decode_compute_efficiency", "prefill_compute_efficiency"),
    ),
    Phase.TRAIN_ACTOR.value: (("train_step_overhead_s",), ("train_compute_efficiency",)),
    Phase.OLD_LOGPROB.value: (("forward_overhead_s",), ("forward_compute_efficiency",)),
    Phase.WEIGHT_SYNC.value: (("weight_sync_latency_s",), ("link_efficiency",)),
    # PPO's critic: priced as the policy's passes, scaled by its own timings (a value head, a value loss)
    Phase.VALUES.value: (("critic_forward_time_scale",), ()),
    Phase.TRAIN_CRITIC.value: (("critic_train_time_scale",), ()),
}
CRITIC_PHASES = (Phase.VALUES.value, Phase.TRAIN_CRITIC.value)  # runs without a critic do not time them


# ---------------------------------------------------------------------------------------------- costs


def reward_and_glue(runs: list[Run]) -> dict[str, float]:
    """Reward seconds per sample and the untimed work per sample (module docstring)."""
    reward, glue = [], []
    for run in runs:
        recs = run.records[1:]
        reward += [r["timing_s"].get(Phase.REWARD.value, 0.0) / r["responses"] for r in recs]
        timed = np.array([sum(v for k, v in r["timing_s"].items() if k != Phase.EVAL) for r in recs])
        glue += list(np.maximum(0.0, step_times(run) - timed) / np.array([r["responses"] for r in recs]))
    return {"reward_s_per_sample": float(np.mean(reward)), "rollout_s_per_sample": float(np.mean(glue))}


def _with_run_costs(profile: Profile, costs: dict[str, float]) -> Profile:
    phases = dict(profile.phases)
    rollout = Phase.ROLLOUT.value
    if rollout in phases:
        roll = phases[rollout]
        params = {**roll.parameters, "rollout_overhead_s": 0.0, "rollout_s_per_sample": costs["rollout_s_per_sample"]}
        phases[rollout] = dataclasses.replace(roll, parameters=params)
    phases[Phase.REWARD.value] = PhaseFit(
        "per-sample, from the reference runs",
        {"reward_s_per_sample": costs["reward_s_per_sample"], "reward_overhead_s": 0.0},
    )
    return dataclasses.replace(profile, phases=phases)


IN_LOOP_ROUNDS = 4  # rounds of in-loop scaling at most (fit_runs)
FROM_RUNS = "rlsim's defaults scaled by the reference runs' own timings (the bench did not time this phase)"


def scaled_profile(profile: Profile, factors: dict[str, float], base: Any) -> Profile:
    """The profile with each phase's time scaled by its factor (efficiencies capped at 1). A coefficient the phase
    did not fit (the rollout's decode compute efficiency, when the bench never reached the compute bound) is taken
    from ``base`` (the scenario's costs) and scaled too; a phase the bench did not time at all gets ``base``'s
    coefficients scaled by its factor (``FROM_RUNS``)."""
    phases = dict(profile.phases)
    for phase, f in factors.items():
        fit = phases.get(phase) or PhaseFit(FROM_RUNS, {})
        overheads, efficiencies = SCALED[phase]
        params = {**{k: getattr(base, k) for k in overheads + efficiencies}, **fit.parameters}
        for k in overheads:
            params[k] = params[k] * f
        for k in efficiencies:
            params[k] = min(1.0, params[k] / f)
        phases[phase] = dataclasses.replace(fit, parameters=params)
    return dataclasses.replace(profile, phases=phases)


def predict_run(run: Run, profile: Profile, gpu: str | None = None) -> dict[str, Any]:
    """rlsim's summary for the run's setup at its own P, under the profile (its lengths, not the run's)."""
    scn = from_dict(setup_scenario(run, gpu))
    return simulate(scn, profile=dataclasses.replace(profile, learning=None)).summary()


def in_loop_factors(runs: list[Run], profile: Profile, gpu: str | None = None) -> dict[str, float]:
    """Median over the reference runs of measured / predicted seconds per phase (module docstring), against one
    prediction: the runs share a setup and a batch (fit_runs checks), and the simulated run is the longest of them.
    A bench-fitted phase is predicted with its fit, one the bench did not time with rlsim's defaults: either way
    the runs' own timings set its time. The rollout compares the engine's part: the runs' rollout timer does not
    see the glue."""
    predicted = predict_run(max(runs, key=lambda r: len(r.records)), profile, gpu)["phase_time_s"]
    meas = [measured(run, None)["phase_time_s"] for run in runs]
    roll = profile.phases.get(Phase.ROLLOUT.value)
    glue = roll.parameters.get("rollout_s_per_sample", 0.0) if roll is not None else 0
    factors = {}
    for phase in SCALED:
        pred = predicted.get(phase, 0.0) - (glue * runs[0].batch if phase == Phase.ROLLOUT else 0.0)
        ratios = [m[phase] / pred for m in meas if m.get(phase, 0.0) > 0 and pred > 0]
        if ratios:
            factors[phase] = float(np.median(ratios))
    return factors


def fit_runs(
    profile: Profile,
    runs: list[Run],
    target: float | None,
    gpu: str | None = None,
    length_phases: int = LENGTH_PHASES,
    length_progress: str = LENGTH_PROGRESS,
    allow_thread_mismatch: bool = False,
    allow_load_mismatch: bool = False,
) -> tuple[Profile, dict[str, Any]]:
    """The profile with everything the reference runs give (module docstring), and a report of the fit. Runs
    that ran with other torch thread counts than the bench, or under a load that differs from the bench's by more
    than ``LOAD_MISMATCH`` of the machine, are refused unless allowed."""
    if not runs:
        raise CalibrateError("--runs: give the reference runs (run directories of rlsim-real train)")
    check_same_setup(runs, "--runs")
    batches = sorted({r.batch for r in runs})
    if len(batches) > 1:
        raise CalibrateError(
            f"--runs holds batches {', '.join(map(str, batches))}; give the runs of one reference batch (the others "
            "are for rlsim-calibrate validate to compare with)"
        )
    if any(run.kind != "real" for run in runs):
        raise CalibrateError("--runs: imported logs have no bench to scale; give runs of rlsim-real train")
    threads = check_threads(  # refused before any work when the runs ran with other threads than the bench
        profile.provenance.get("bench_torch_threads") or {}, runs, "the reference runs", allow_thread_mismatch
    )
    load = load_summary(r for run in runs for r in run.records)
    load_note = check_load(profile.provenance.get("bench_load") or {}, load, allow_load_mismatch)
    learning = learning_model(runs, target) if target is not None else None
    # one definition of a run's step time (docs/calibrate.md): the steps to the predicted target. The lengths, the
    # glue and the in-loop factors come from the same steps of every reference run; a stalled seed's hundreds of
    # later steps of 2-token answers would otherwise set the lengths of steps that never see them
    span = max(2, math.ceil(learning["median_samples_to_target"] / runs[0].batch)) if learning else None
    timed = [dataclasses.replace(run, records=run.records[:span]) for run in runs] if span else runs
    lengths = length_model(timed, length_phases, length_progress)
    costs = reward_and_glue(timed)
    prof = _with_run_costs(dataclasses.replace(profile, lengths=lengths, learning=None), costs)
    base = from_dict(setup_scenario(runs[0], gpu)).costs
    factors: dict[str, float] = {}
    # a factor scales a phase's overheads and efficiencies, not the terms without one (a colocated sync's copy, an
    # efficiency at its cap of 1): scale again until the runs' phases come out as measured (within 1%)
    for _ in range(IN_LOOP_ROUNDS):
        step = in_loop_factors(timed, prof, gpu)
        prof = scaled_profile(prof, step, base)
        factors = {k: factors.get(k, 1.0) * step.get(k, 1.0) for k in {*factors, *step}}
        if all(abs(f - 1.0) < 0.01 for f in step.values()):
            break
    defaulted = phase_warnings(profile, factors)
    learning_notes = learning_warnings(learning) if learning is not None else []
    warnings = [w for w in [load_warning("the reference runs", load), threads, load_note] if w]
    warnings += defaulted + learning_notes
    provenance = {
        **prof.provenance,
        "runs": [str(run.path.resolve()) for run in runs],  # validate tells in-sample runs by these
        "in_loop_factors": factors,
        # the steps of each reference run the lengths, glue and in-loop factors come from (None: all of them)
        "fit_span_steps": span,
        "runs_load": load,
    }
    report = {"lengths": lengths, "costs": costs, "in_loop_factors": factors, "learning": learning, "load": load}
    return dataclasses.replace(prof, provenance=provenance, learning=learning), {**report, "warnings": warnings}


LOAD_MISMATCH = 0.25  # bench and reference runs whose median load differs by more than this share are refused


def check_load(bench: dict[str, Any], runs: dict[str, Any], allow: bool) -> str | None:
    """Refuse a bench and reference runs measured under different loads (median share of the machine other
    processes took, rlsim.host.machine_load): the in-loop factors would carry that difference into every prediction.
    With ``allow`` the mismatch is a warning (returned); None when they agree or either side did not record it."""
    b, r = bench.get("median_other_cpu_fraction"), runs.get("median_other_cpu_fraction")
    if b is None or r is None or abs(b - r) <= LOAD_MISMATCH:
        return None
    msg = (
        f"the bench ran with other processes taking a median {b:.0%} of the machine and the reference runs {r:.0%}: "
        "the in-loop factors would carry that difference into every prediction; bench and run under the same load "
        "(rlsim-calibrate loop runs them back to back)"
    )
    if not allow:
        raise CalibrateError(f"{msg}, or pass --allow-load-mismatch to go on anyway")
    return msg


def phase_warnings(bench: Profile, factors: dict[str, float]) -> list[str]:
    """One line per phase whose time does not come from the bench: taken from the reference runs' own timings
    (``factors`` has it), or neither benched nor timed by the runs, so rlsim's defaults stand."""
    out = []
    for phase in SCALED:
        if phase in bench.phases or (phase in CRITIC_PHASES and phase not in factors):
            continue
        overheads, efficiencies = SCALED[phase]
        if phase in CRITIC_PHASES:
            out.append(
                f"phase {phase}: the critic's passes are the policy's of the same shape scaled by the reference runs' "
                f"own timings (x {factors[phase]:.3g}: a value head and a value loss)"
            )
        elif phase in factors:
            out.append(
                f"phase {phase}: not benched; its time comes from the reference runs' own timings (rlsim's defaults "
                f"x {factors[phase]:.3g}); bench it (rlsim-real bench) for a fit that follows the batch size"
            )
        else:
            out.append(
                f"phase {phase}: neither benched nor timed by the reference runs; it takes rlsim's defaults "
                f"({', '.join(overheads + efficiencies)})"
            )
    return out


def scenario_out(runs: list[Run], profile: Profile, gpu: str | None = None) -> dict[str, Any]:
    """The measured setup as a scenario file: predicting another batch is ``--set workload.prompts_per_step=P``
    (or a sweep grid) under the profile, which brings the costs, the lengths and the learning model."""
    raw = setup_scenario(runs[0], gpu)
    if profile.lengths:
        for key in ("prompt_length", "response_length", "response_length_by_samples"):
            if profile.lengths.get(key) is not None:
                raw["workload"][key] = profile.lengths[key]
    raw["run"].update(steps=len(runs[0].records), until_target=profile.learning is not None)
    if profile.learning is not None:  # the same model the profile brings (it replaces these under --profile)
        raw["learning"].update({k.removeprefix("learning."): v for k, v in profile.learning_overrides().items()})
    raw["assumptions"] = [
        f"the setup of {len(runs)} reference run(s) ({', '.join(r.name for r in runs)}): model, device, engine, "
        "P, G, algorithm, LR rule and step budget as they ran; lengths, costs and the learning model come from "
        "the profile fitted with them (rlsim-calibrate fit --runs)",
    ]
    return raw
