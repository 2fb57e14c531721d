"""Validation: run rlsim on the configuration of each measured run and compare prediction with measurement.

A run directory holds ``runlog.jsonl`` (the shared schema) and either

* ``config.json`` + ``environment.json`` from ``rlsim-real train`` (the scenario is built from them: the model
  folder's architecture, the catalog entry of the device, P, G, mini-batches, epochs, KL, and the mean prompt
  and response lengths the log measured), or
* ``scenario.yaml``: an rlsim scenario describing the run (for logs imported from verl, OpenRLHF, TRL, NeMo RL);
  P, G and the mean lengths are taken from the log when it has them.

Measured: mean step time (gaps between consecutive ``wall_s``; the first step, which pays warm-ups, is
excluded), mean seconds per phase, samples/s, and time-to-target: the samples at which the evaluated metric
first reaches the target (linear interpolation between the two evaluations around the crossing, as the learning
model is anchored) and the ``wall_s`` interpolated at those samples. Predicted: the same from ``rlsim.simulate``
with the profile, simulating as many steps as the run logged; time-to-target uses the learning model fitted on
the reference runs: the ScaleRL sigmoid of their metric in samples, and for the other batch sizes the
critical-batch form with B_crit = B_simple pooled over every step the reference runs logged at two batch sizes,
to the power 1/2 for runs trained with Adam's sqrt LR rule (1 otherwise; :func:`learning_from_runs`), or
invariant when they logged none. The reference runs also supply what no microbenchmark sees: the reward
and per-sample glue costs, and per bench-fitted phase the in-loop factor (measured / predicted seconds), which
scales that phase in every prediction (:func:`in_loop_factors`). Time-to-target error = samples-to-target error
(learning model) times throughput error (cost model), and both factors are reported.
For ``hf``-engine runs the response length is the mean of each step's longest response: transformers'
``generate`` keeps every sequence of the batch until the longest ends.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from calibrate.errors import CalibrateError
from calibrate.tables import model_spec_from_folder
from rlsim.phases import TIMED_PHASES
from rlsim.profile import Profile
from rlsim.runlog import RunLogError, read_jsonl
from rlsim.scenario import Costs, Scenario, from_dict


@dataclass
class Run:
    path: Path
    records: list[dict[str, Any]]
    scenario: Scenario
    kind: str  # "real" or "imported"

    @property
    def batch(self) -> int:
        return int(self.records[0]["responses"])


def load_run(path: str | Path, gpu: str | None = None) -> Run:
    p = Path(path)
    log = p / "runlog.jsonl"
    if not log.is_file():
        raise CalibrateError(f"{p}: no runlog.jsonl; give run directories of rlsim-real train or imported logs")
    try:
        records = list(read_jsonl(log))
    except RunLogError as exc:
        raise CalibrateError(str(exc)) from None
    if len(records) < 3:
        raise CalibrateError(f"{log}: {len(records)} step(s); validation needs at least 3")
    prompts, responses = int(records[0]["prompts"]), int(records[0]["responses"])
    workload: dict[str, Any] = {"prompts_per_step": prompts, "group_size": max(1, responses // max(1, prompts))}
    counted = all(isinstance(r.get(k), (int, float)) for r in records for k in ("prompt_tokens", "response_tokens"))
    if counted:  # the log's mean lengths; an imported log without token counts keeps its scenario's lengths
        prompt_len = max(1, round(sum(r["prompt_tokens"] for r in records) / sum(r["responses"] for r in records)))
        resp_len = max(1, round(sum(r["response_tokens"] for r in records) / sum(r["responses"] for r in records)))
        engine = None
        if (p / "config.json").is_file():
            engine = _read_json(p / "config.json").get("engine")
        if engine == "hf" and all("response_tokens_max" in r for r in records):
            # transformers' generate keeps the whole batch until its longest response ends (static batching):
            # every sequence costs as many decode iterations as the longest one
            resp_len = max(1, round(float(np.mean([r["response_tokens_max"] for r in records]))))
        workload.update(
            {
                "prompt_length": {"dist": "fixed", "tokens": prompt_len},
                "response_length": {"dist": "fixed", "tokens": resp_len},
                "max_prompt_tokens": max(prompt_len, 1),
                "max_response_tokens": max(resp_len, 1),
            }
        )
    if (p / "scenario.yaml").is_file():
        try:
            raw = yaml.safe_load((p / "scenario.yaml").read_text())
        except yaml.YAMLError:
            raise CalibrateError(f"{p}/scenario.yaml is not valid YAML; fix it") from None
        if not isinstance(raw, dict):
            raise CalibrateError(f"{p}/scenario.yaml must be a mapping of scenario sections")
        raw.setdefault("workload", {}).update(workload)
        raw.setdefault("run", {})["steps"] = len(records)
        return Run(p, records, from_dict(raw), "imported")
    if (p / "config.json").is_file() and (p / "environment.json").is_file():
        cfg = _read_json(p / "config.json")
        env = _read_json(p / "environment.json")
        missing = [
            k
            for k in ("algo", "mini_batches", "epochs", "kl_coef", "lr0", "reference_batch", "lr_rule", "seed")
            if k not in cfg
        ]
        if missing:
            raise CalibrateError(f"{p}/config.json lacks {', '.join(missing)}; is it from rlsim-real train?")
        if "model_dir" not in env:
            raise CalibrateError(f"{p}/environment.json has no model_dir; rerun with this version of rlsim-real")
        from calibrate.costfit import guess_gpu

        raw = {
            "name": p.name,
            "model": model_spec_from_folder(env["model_dir"]),
            "hardware": {"gpu": gpu or guess_gpu(env.get("device", "cpu")), "num_gpus": 1, "placement": "colocated"},
            "engine": {"max_num_seqs": responses, "gpu_memory_utilization": 0.9},
            "workload": workload,
            "algorithm": {
                "name": cfg["algo"],
                "mini_batches_per_step": cfg["mini_batches"],
                "epochs_per_step": cfg["epochs"],
                "kl_reference": cfg["kl_coef"] > 0,
            },
            "schedule": {"mode": "sync-colocated"},
            "learning": {"lr0": cfg["lr0"], "reference_batch": cfg["reference_batch"], "lr_rule": cfg["lr_rule"]},
            "run": {"steps": len(records), "seed": cfg["seed"]},
        }
        return Run(p, records, from_dict(raw), "real")
    raise CalibrateError(
        f"{p}: needs config.json and environment.json (from rlsim-real train) or a scenario.yaml describing the run"
    )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise CalibrateError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise CalibrateError(f"{path}: expected a JSON object")
    return data


def measured(run: Run, target: float | None) -> dict[str, Any]:
    recs = run.records
    walls = np.array([r["wall_s"] for r in recs])
    steps = np.diff(walls)
    out: dict[str, Any] = {
        "step_time_s": float(steps.mean()),
        "samples_per_s": run.batch / float(steps.mean()),
        "phase_time_s": {
            p.value: float(np.mean([r["timing_s"].get(p.value, 0.0) for r in recs[1:]])) for p in TIMED_PHASES
        },
        "time_to_target_s": None,
        "samples_to_target": None,
    }
    if target is not None:
        from calibrate.learning_fit import samples_to_target

        evals = [(r["cumulative_samples"], r["eval_metric"]) for r in recs if r["eval_metric"] is not None]
        if evals:
            xs, ys = (np.array(v, float) for v in zip(*evals))
            n = samples_to_target(xs, ys, target)
            if n is not None:
                # the crossing between two evaluations, in samples (as the learning model is anchored), and the
                # wall clock at those samples, interpolated between the steps around it
                cum = np.array([r["cumulative_samples"] for r in recs], float)
                out["samples_to_target"] = float(n)
                out["time_to_target_s"] = float(np.interp(n, cum, walls))
    return out


def _curve(runs: list[Run]) -> tuple[np.ndarray, np.ndarray, float | None]:
    """The mean eval curve of runs of one batch size (metric averaged over runs at each evaluated sample count)
    and the mean metric before training when logged."""
    points: dict[float, list[float]] = {}
    initial = [r.records[0].get("eval_metric_initial") for r in runs]
    for run in runs:
        for rec in run.records:
            if rec["eval_metric"] is not None:
                points.setdefault(float(rec["cumulative_samples"]), []).append(float(rec["eval_metric"]))
    xs = np.array(sorted(points))
    ys = np.array([np.mean(points[x]) for x in xs])
    known = [v for v in initial if v is not None]
    return xs, ys, float(np.mean(known)) if known else None


ADAM_SQRT_POWER = 0.5  # samples-to-target ~ (1 + B / B_noise) ** power for Adam under the sqrt LR rule


def _batch_form(bm: dict[str, Any]) -> str:
    """The batch term in words, for the report."""
    if bm["form"] != "critical_batch":
        return "invariant: the reference runs logged no usable two-batch gradient norms"
    if bm["critical_power"] == ADAM_SQRT_POWER:
        return "E ~ (1 + B / B_simple) ** 0.5: Adam under the sqrt LR rule (rlsim.learning derives it)"
    return "E ~ 1 + B / B_simple: McCandlish et al. 2018 (LR tuned per batch; the runs did not use the sqrt rule)"


def learning_from_runs(runs: list[Run], target: float) -> dict[str, Any]:
    """A learning section from the runs of the reference batch size.

    The ScaleRL sigmoid is fitted to their mean eval curve in samples, then its scale (mid_samples) is anchored so
    that it crosses the target at the samples the runs measured (the mean of their interpolated crossings). For
    other batch sizes: the critical-batch form with B_crit = B_simple from the gradient norms the runs logged at
    two batch sizes, pooled over every step of every reference run (:func:`calibrate.learning_fit.b_simple_pooled`),
    or invariance when they logged none. Its power is 1/2 for runs trained with the sqrt LR rule (Adam's
    first-order samples cost, E ~ sqrt(1 + B / B_noise), derived in rlsim.learning) and 1 otherwise (McCandlish
    et al. 2018, E ~ 1 + B / B_noise, LR tuned per batch). ``batch_form`` says which, in words.
    """
    from calibrate.learning_fit import b_simple_pooled, fit_sigmoid, samples_to_target

    xs, ys, initial = _curve(runs)
    fit = fit_sigmoid(xs, ys, r0=initial)
    curve = fit.to_metric_curve()
    crossings = []
    for run in runs:
        pts = [(r["cumulative_samples"], r["eval_metric"]) for r in run.records if r["eval_metric"] is not None]
        n = samples_to_target(np.array([p[0] for p in pts], float), np.array([p[1] for p in pts], float), target)
        if n is not None:
            crossings.append(float(n))
    asymptote = max(curve.asymptote, target + 1e-3)
    mid = curve.mid_samples
    if crossings:
        n_star = float(np.mean(crossings))
        gain = (target - curve.initial) / (asymptote - curve.initial)
        mid = n_star * (1.0 / gain - 1.0) ** (1.0 / curve.exponent)  # R(n_star) = target exactly
    batch_multiplier: dict[str, Any] = {"form": "invariant"}
    # a run logged at one batch size only (no micro-batches) cannot give the estimator: listed, not fatal
    noise = b_simple_pooled([r.records for r in runs], names=[r.path.name for r in runs], skip_unusable=True)
    rule = runs[0].scenario.learning.lr_rule
    if noise["b_simple"] is not None and noise["b_simple"] > 0:
        batch_multiplier = {
            "form": "critical_batch",
            "critical_batch": float(noise["b_simple"]),
            "critical_power": ADAM_SQRT_POWER if rule == "sqrt" else 1.0,
        }
    return {
        "metric": {"initial": curve.initial, "asymptote": asymptote, "mid_samples": mid, "exponent": curve.exponent},
        "target": target,
        "reference_batch": runs[0].batch,
        "batch_multiplier": batch_multiplier,
        "b_simple": noise["b_simple"],
        "b_simple_interval": [v if v is not None and np.isfinite(v) else None for v in noise["interval"]],
        "b_simple_steps": noise["num_steps"],
        "b_simple_unusable_runs": noise["unusable"],
        "batch_form": _batch_form(batch_multiplier),
        "measured_samples_to_target": crossings,
        "sigmoid_rmse": fit.rmse,
    }


def costs_from_runs(runs: list[Run]) -> dict[str, float]:
    """Cost coefficients no microbenchmark measures, read off the reference runs' logs: the reward per sample
    and the work outside the timed phases (batch assembly, detokenizing, train accuracy, logging), per sample as
    ``rollout_s_per_sample``: it is host work over every response (measured on the CPU loop: 6.0 / 11.3 /
    25.0 ms per step at 64 / 128 / 256 responses, 0.09 ms per response at each)."""
    reward, glue = [], []
    for run in runs:
        recs = run.records[1:]
        reward += [r["timing_s"].get("reward", 0.0) / r["responses"] for r in recs]
        steps = np.diff([r["wall_s"] for r in run.records])
        timed = [sum(v for k, v in r["timing_s"].items() if k != "eval") for r in recs]
        glue += list(np.maximum(0.0, steps - np.array(timed)) / np.array([r["responses"] for r in recs]))
    return {
        "reward_s_per_sample": float(np.mean(reward)),
        "reward_overhead_s": 0.0,
        "rollout_s_per_sample": float(np.mean(glue)),
        "rollout_overhead_s": 0.0,
    }


# per phase, the coefficients that scale its time: overheads multiply, efficiencies divide
SCALED = {
    "rollout": (
        ("decode_iteration_overhead_s", "decode_per_seq_overhead_s", "prefill_overhead_s"),
        ("decode_memory_efficiency", "decode_compute_efficiency", "prefill_compute_efficiency"),
    ),
    "train_actor": (("train_step_overhead_s",), ("train_compute_efficiency",)),
    "old_logprob": (("forward_overhead_s",), ("forward_compute_efficiency",)),
    "weight_sync": (("weight_sync_latency_s",), ("link_efficiency",)),
}


def in_loop_factors(
    refs: list[Run], meas_phases: list[dict[str, float]], profile: Profile, costs: dict[str, float]
) -> dict[str, float]:
    """Measured / predicted seconds of each bench-fitted phase on the reference runs.

    A microbenchmark times a phase alone, back to back with warm caches; inside the loop the same code runs after
    generation and between other phases (measured on the CPU loop: train and log-prob passes 10-26% slower than
    the bench predicted at the reference batch), and a bench run minutes apart from the runs sees the machine in
    another state (the generation bench's prediction of the same in-loop rollout ranged 0.88-1.36x over three
    loops). Like the reward and glue costs, that factor is read off the reference runs only; the held-out batch
    sizes then test how the bench-fitted costs scale with the batch. The rollout's factor compares the engine's
    part only: the predicted rollout also holds the per-step glue (``rollout_s_per_sample``), which the runs'
    rollout timer does not see. ``meas_phases``: each reference run's measured seconds per phase.
    """
    factors = {}
    pred_phases = [predicted(r, profile, None, costs)["phase_time_s"] for r in refs]
    for phase in SCALED:
        if phase not in profile.phases:
            continue
        meas = np.mean([m.get(phase, 0.0) for m in meas_phases])
        pred = np.mean([p.get(phase, 0.0) for p in pred_phases])
        if phase == "rollout":  # the engine's part: the runs' rollout timer does not see the glue
            pred -= np.mean([costs["rollout_overhead_s"] + costs["rollout_s_per_sample"] * r.batch for r in refs])
        if meas > 0 and pred > 0:
            factors[phase] = float(meas / pred)
    return factors


def scaled_profile(profile: Profile, factors: dict[str, float], base: Costs | None = None) -> Profile:
    """The profile with each phase's time scaled by its factor (efficiencies capped at 1). A coefficient the phase
    did not fit (the rollout's decode compute efficiency, when the bench never reached the compute bound) is
    taken from ``base``, the costs the predictions start from, and scaled too; without ``base`` it is left out."""
    phases = dict(profile.phases)
    for phase, f in factors.items():
        fit = phases[phase]
        overheads, efficiencies = SCALED[phase]
        params = dict(fit.parameters)
        if base is not None:
            params = {**{k: getattr(base, k) for k in overheads + efficiencies}, **params}
        for k in overheads:
            if k in params:
                params[k] = params[k] * f
        for k in efficiencies:
            if k in params:
                params[k] = min(1.0, params[k] / f)
        phases[phase] = dataclasses.replace(fit, parameters=params)
    return dataclasses.replace(profile, phases=phases)


def _with_costs(profile: Profile | None, costs: dict[str, float]) -> Profile | None:
    if profile is None:
        return None
    from rlsim.profile import PhaseFit

    phases = dict(profile.phases)
    roll = phases.get("rollout")
    if roll is not None:
        phases["rollout"] = dataclasses.replace(
            roll,
            parameters={
                **roll.parameters,
                "rollout_overhead_s": costs["rollout_overhead_s"],
                "rollout_s_per_sample": costs["rollout_s_per_sample"],
            },
        )
    phases["reward"] = PhaseFit(
        "per-sample, from the reference runs",
        {"reward_s_per_sample": costs["reward_s_per_sample"], "reward_overhead_s": costs["reward_overhead_s"]},
    )
    return dataclasses.replace(profile, phases=phases)


def predicted(
    run: Run, profile: Profile | None, learning: dict[str, Any] | None, costs: dict[str, float] | None = None
) -> dict[str, Any]:
    from rlsim.simulation import simulate

    scn = run.scenario
    over: dict[str, Any] = {}
    if profile is None and costs:
        over.update({f"costs.{k}": v for k, v in costs.items()})
    if learning is not None:
        over.update(
            {
                "learning.metric": learning["metric"],
                "learning.target": learning["target"],
                "learning.reference_batch": learning["reference_batch"],
                "learning.lr_rule": scn.learning.lr_rule,
                "learning.invariant_rule": scn.learning.lr_rule,
                "learning.batch_multiplier": learning["batch_multiplier"],
                "run.until_target": True,
            }
        )
    if over:
        scn = scn.with_overrides(over)
    res = simulate(scn, profile=_with_costs(profile, costs) if costs else profile)
    s = res.summary()
    return {
        "step_time_s": s["step_time_s"],
        "samples_per_s": s["samples_per_s"],
        "phase_time_s": s["phase_time_s"],
        "time_to_target_s": s.get("time_to_target_s"),
        "samples_to_target": s.get("samples_to_target"),
        "warnings": s["warnings"],
    }


def _err(pred: float | None, meas: float | None) -> float | None:
    if pred is None or meas is None or meas == 0:
        return None
    return pred / meas - 1.0


def validate(
    run_dirs: list[str | Path],
    profile: Profile | None,
    target: float | None = None,
    reference_batch: int | None = None,
    gpu: str | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Compare each run with its prediction; returns a table (one row per run) and the details.

    The runs at ``reference_batch`` responses per step (default: the middle batch size) provide what the
    microbenchmarks cannot: the learning model and the reward and untimed per-step costs. The other batch sizes
    are held out. Time-to-target is compared per batch size, as the mean over its runs (seeds).
    """
    runs = [load_run(d, gpu) for d in run_dirs]
    ignored_learning = bool(profile is not None and profile.learning)
    if ignored_learning:
        # validation fits its own learning model on the reference runs: a profile's (fitted on every batch size,
        # held-out ones included) would replace it in rlsim.simulate
        profile = dataclasses.replace(profile, learning=None)
    batches = sorted({r.batch for r in runs})
    ref_batch = reference_batch if reference_batch is not None else batches[len(batches) // 2]
    refs = [r for r in runs if r.batch == ref_batch]
    if not refs:
        raise CalibrateError(f"no run has the reference batch {ref_batch}; batches are {batches}")
    costs = costs_from_runs(refs) if all(r.kind == "real" for r in refs) else None
    learning = learning_from_runs(refs, target) if target is not None else None
    meas = [measured(run, target) for run in runs]
    in_loop: dict[str, float] = {}
    if profile is not None and costs:
        ref_phases = [m["phase_time_s"] for run, m in zip(runs, meas) if run.batch == ref_batch]
        in_loop = in_loop_factors(refs, ref_phases, profile, costs)
        profile = scaled_profile(profile, in_loop, refs[0].scenario.costs)
    covered = set(profile.phases) if profile is not None else set()
    if costs:
        covered.add("reward")
    timed = {k for r in runs for rec in r.records for k, v in rec["timing_s"].items() if v > 0 and k != "eval"}
    rows, details = (
        [],
        {
            "learning": learning,
            "reference_batch": ref_batch,
            "costs_from_runs": costs,
            "in_loop_factors": in_loop,
            "profile_learning_ignored": ignored_learning,
            "runs": {},
            "uncovered_phases": sorted(timed - covered) if profile is not None else None,
        },
    )
    for run, m in zip(runs, meas):  # each run predicted with its own seed and measured lengths
        p = predicted(run, profile, learning, costs)
        row = {
            "run": run.path.name,
            "kind": run.kind,
            "prompts_per_step": run.records[0]["prompts"],
            "responses_per_step": run.batch,
            "held_out": run.batch != ref_batch,
            "measured_step_time_s": m["step_time_s"],
            "predicted_step_time_s": p["step_time_s"],
            "step_time_error": _err(p["step_time_s"], m["step_time_s"]),
            "measured_samples_per_s": m["samples_per_s"],
            "predicted_samples_per_s": p["samples_per_s"],
            "throughput_error": _err(p["samples_per_s"], m["samples_per_s"]),
            "measured_samples_to_target": m["samples_to_target"],
            "predicted_samples_to_target": p["samples_to_target"],
            "measured_time_to_target_s": m["time_to_target_s"],
            "predicted_time_to_target_s": p["time_to_target_s"],
        }
        for phase in TIMED_PHASES:
            mv, pv = m["phase_time_s"][phase.value], p["phase_time_s"][phase.value]
            if mv > 0 or pv > 0:
                row[f"measured_s/{phase.value}"] = mv
                row[f"predicted_s/{phase.value}"] = pv
        rows.append(row)
        details["runs"][run.path.name] = {"measured": m, "predicted": p}
    table = pd.DataFrame(rows)
    by_batch = (
        table.groupby("responses_per_step")
        .agg(
            runs=("run", "count"),
            held_out=("held_out", "first"),
            measured_step_time_s=("measured_step_time_s", "mean"),
            predicted_step_time_s=("predicted_step_time_s", "mean"),
            runs_reaching_target=("measured_time_to_target_s", "count"),
            measured_samples_to_target=("measured_samples_to_target", "mean"),
            predicted_samples_to_target=("predicted_samples_to_target", "mean"),
            measured_time_to_target_s=("measured_time_to_target_s", "mean"),
            predicted_time_to_target_s=("predicted_time_to_target_s", "mean"),
        )
        .reset_index()
    )
    by_batch["step_time_error"] = by_batch["predicted_step_time_s"] / by_batch["measured_step_time_s"] - 1
    # time-to-target error = samples-to-target error (the learning model) x throughput error (the cost model)
    stt_ratio = by_batch["predicted_samples_to_target"] / by_batch["measured_samples_to_target"]
    by_batch["samples_to_target_error"] = stt_ratio - 1
    ttt_ratio = by_batch["predicted_time_to_target_s"] / by_batch["measured_time_to_target_s"]
    by_batch["time_to_target_error"] = ttt_ratio - 1
    details["by_batch"] = by_batch.to_dict(orient="records")
    held = by_batch[by_batch["held_out"]] if by_batch["held_out"].any() else by_batch
    ttt = held["time_to_target_error"].dropna()
    details["summary"] = {
        "held_out_batches": [int(b) for b in held["responses_per_step"]],
        "mean_abs_step_time_error_held_out": float(held["step_time_error"].abs().mean()),
        "max_abs_step_time_error_held_out": float(held["step_time_error"].abs().max()),
        "mean_abs_time_to_target_error_held_out": float(ttt.abs().mean()) if len(ttt) else None,
        "max_abs_time_to_target_error_held_out": float(ttt.abs().max()) if len(ttt) else None,
        "max_abs_samples_to_target_error_held_out": (
            float(stt.abs().max()) if (stt := held["samples_to_target_error"].dropna()).size else None
        ),
        # a run that never reached the target is left out of its batch's mean time-to-target: listed here
        "runs_not_reaching_target": (
            sorted(table.loc[table["measured_time_to_target_s"].isna(), "run"]) if target is not None else []
        ),
    }
    return table, details


def report_html(table: pd.DataFrame, details: dict[str, Any], profile: Profile | None) -> str:
    """A self-contained HTML report: predicted vs measured plots and the error summary."""
    import html

    import plotly.graph_objects as go

    figs = []
    for what, label in (
        ("step_time_s", "mean step time (s)"),
        ("samples_per_s", "samples/s"),
        ("time_to_target_s", "time-to-target (s)"),
    ):
        m, p = table[f"measured_{what}"], table[f"predicted_{what}"]
        ok = m.notna() & p.notna()
        if not ok.any():
            continue
        hi = float(max(m[ok].max(), p[ok].max())) * 1.1
        fig = go.Figure()
        fig.add_trace(
            go.Scatter(
                x=[0, hi],
                y=[0, hi],
                mode="lines",
                name="prediction = measurement",
                line={"dash": "dash", "color": "#888"},
            )
        )
        for held, name in ((True, "held-out runs"), (False, "reference run")):
            sel = ok & (table["held_out"] == held)
            fig.add_trace(
                go.Scatter(
                    x=m[sel],
                    y=p[sel],
                    mode="markers+text",
                    name=name,
                    text=[f"B={b}" for b in table["responses_per_step"][sel]],
                    textposition="top center",
                )
            )
        fig.update_layout(
            title=f"Predicted vs measured: {label}", xaxis={"title": "measured"}, yaxis={"title": "predicted"}
        )
        figs.append(fig)
    phase_cols = [c for c in table if c.startswith("measured_s/")]
    if phase_cols:
        fig = go.Figure()
        for c in phase_cols:
            phase = c.split("/", 1)[1]
            fig.add_trace(go.Bar(name=f"{phase} measured", x=table["run"], y=table[c]))
            fig.add_trace(go.Bar(name=f"{phase} predicted", x=table["run"], y=table[f"predicted_s/{phase}"]))
        fig.update_layout(barmode="group", title="Seconds per step by phase", yaxis={"title": "s"})
        figs.append(fig)
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>rlsim validation</title><style>"
        "body{font-family:Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto}"
        "table{border-collapse:collapse;font-size:.8em}td,th{border:1px solid #ddd;padding:2px 6px}"
        "</style></head><body><h1>rlsim validation: predicted vs measured</h1>",
        "<h2>Error summary (held-out runs)</h2><pre>"
        + html.escape(json.dumps(details["summary"], indent=2))
        + "</pre>",
        "<h2>By batch size (means over runs; time-to-target error = samples error x step-time error)</h2>"
        + pd.DataFrame(details["by_batch"]).to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="-"),
        "<h2>Runs</h2>" + table.to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="-"),
    ]
    for i, fig in enumerate(figs):
        parts.append(fig.to_html(full_html=False, include_plotlyjs=(i == 0)))
    parts.append(
        "<h2>Learning model (fitted on the reference run)</h2><pre>"
        + html.escape(json.dumps(details.get("learning"), indent=2, default=str))
        + "</pre>"
    )
    parts.append(
        "<h2>Profile</h2><pre>"
        + html.escape(profile.dumps() if profile else "none: roofline defaults")
        + "</pre></body></html>"
    )
    return "\n".join(parts)
