"""The learning model from the reference runs (``rlsim-calibrate fit --runs ... --target``), for
calibrate.runs.fit.fit_runs: the ScaleRL sigmoid of the curve of the seeds that reached the target, anchored at their
median samples-to-target; the seeds' spread and stall share (a lognormal with the seeds that never reached the
target as right-censored, the stall share's Clopper-Pearson bound: calibrate.learning.seeds); the batch term whose
form follows the LR rule (B_simple from the logged gradient norms); and what the fit could not settle, each said in
one line (a plateau not clearly above the target, a mid-point inside the first step, runs that stop at the target,
stalled seeds). calibrate.runs.fit fits everything else the runs give."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from calibrate import CalibrateError
from calibrate.learning.curve import fit_sigmoid
from calibrate.learning.noise import b_simple_pooled
from calibrate.learning.seeds import seed_model, stall_upper
from calibrate.runs.run import Run, eval_points, measured
from rlsim.learning.model import mid_samples_through
from rlsim.run.profile import LEARNING_VERSION

ADAM_SQRT_POWER = 0.5  # samples-to-target ~ (1 + B / B_noise) ** power for Adam under the sqrt LR rule


PLATEAU_SEEN = 1.5  # the learners' evaluations must run this far past their crossing to show the curve's plateau


def degenerate_reasons(
    initial: float,
    fitted_asymptote: float,
    asymptote_err: float,
    target: float,
    mid_samples: float,
    batch: int,
    plateau_seen: bool = True,
) -> list[str]:
    """Why a fitted reference curve cannot be trusted to place the target, one reason per line (empty: it can):
    a plateau the runs show (``plateau_seen``) not clearly above the target (within 2% of the climb from the
    initial value, or two standard errors of the fitted plateau; at or below it the fit lifts it to target + 1e-3
    to cross at all, and samples-to-target rides on that lift), or its mid-point below one step's samples (the
    curve rises inside the first step, so nothing says how it scales)."""
    out = []
    err = asymptote_err if math.isfinite(asymptote_err) else 0.0
    if plateau_seen and fitted_asymptote - target <= max(0.02 * abs(target - initial), 2.0 * err):
        out.append(
            f"the reference curve levels off at {fitted_asymptote:.3g}, not clearly above the target {target:g}: "
            "where it crosses the target is an extrapolation (lower --target, or run the seeds longer)"
        )
    if mid_samples < batch:
        out.append(
            f"the reference curve's mid-point, {mid_samples:.3g} samples, is below one step ({batch} samples): it "
            "rises within the first step, so samples-to-target at other targets and batches is not resolved "
            "(evaluate more often early, --eval-every, or lower the learning rate)"
        )
    return out


EARLY_SHARE = 0.1  # the first steps, up to this share of the median samples-to-target, measure the initial success


def initial_success(runs: list[Run], n_star: float) -> tuple[float | None, int]:
    """The share of responses exactly correct before the policy has learned: ``accuracy_train`` (a producer's
    metric, rlsim-real logs it) over the steps of every reference run, stalled ones included, up to
    :data:`EARLY_SHARE` of the median samples-to-target (at least each run's first step), and how many steps that
    is. None where the runs did not log it."""
    limit = EARLY_SHARE * n_star
    values = [
        float(r["accuracy_train"])
        for run in runs
        for i, r in enumerate(run.records)
        if r.get("accuracy_train") is not None and (i == 0 or r["cumulative_samples"] <= limit)
    ]
    return (float(np.mean(values)), len(values)) if values else (None, 0)


def stall_form(runs: list[Run], n_star: float) -> dict[str, Any]:
    """How the stall share carries to other batches (rlsim.learning.model.stall_at): ``signal_free_steps`` for
    PPO (whitened advantages: a step with no correct answer still moves the policy) with the initial success
    measured, else ``constant`` (GRPO's signal-free groups get zero advantage; or the success was not logged)."""
    algos = {run.setup.get("algo") or "grpo" for run in runs}  # (one setup: check_same_setup)
    p0, steps = initial_success(runs, n_star)
    if algos == {"ppo"} and p0 is not None:
        return {
            "stall_form": "signal_free_steps",
            "initial_success": p0,
            "initial_success_steps": steps,
            "stall_model": "a hazard per step without a correct answer, (1 - p0) ** B per step (PPO)",
        }
    why = "GRPO: signal-free groups get no update" if "ppo" not in algos else "the runs logged no accuracy_train"
    return {
        "stall_form": "constant",
        "initial_success": p0,
        "initial_success_steps": steps,
        "stall_model": f"constant across batch sizes (fitted at one reference batch; {why})",
    }


def learning_model(runs: list[Run], target: float) -> dict[str, Any]:
    """The profile's ``learning`` section from the reference runs (module docstring)."""
    per_run = [measured(run, target) for run in runs]
    hits = [m["samples_to_target"] for m in per_run if m["samples_to_target"] is not None]
    censored = [m["budget_samples"] for m in per_run if m["samples_to_target"] is None]
    if not hits:
        raise CalibrateError(
            f"none of the {len(runs)} reference runs reached the target {target:g}; lower --target, run longer "
            "(--max-steps) or add seeds"
        )
    # the curve of the seeds that learn: a stalled seed (a constant answer) is the stall share's business, and
    # averaged in it flattens the curve onto the target (3 of 5 seeds stalled near 0.5 gave an asymptote of 0.901
    # for a target of 0.9 and a mid-point of 0.018 samples)
    learners = [run for run, m in zip(runs, per_run) if m["samples_to_target"] is not None]
    points: dict[float, list[float]] = {}
    for run in learners:
        for x, y in zip(*eval_points(run)):
            points.setdefault(float(x), []).append(float(y))
    if len(points) < 3:
        raise CalibrateError("the reference runs logged fewer than 3 evaluations; evaluate more often (--eval-every)")
    xs = np.array(sorted(points))
    ys = np.array([np.mean(points[x]) for x in xs])
    initial = [r.records[0].get("eval_metric_initial") for r in learners]
    known = [v for v in initial if v is not None]
    fit = fit_sigmoid(xs, ys, r0=float(np.mean(known)) if known else None)
    curve = fit.to_metric_curve()
    mu, sigma, stall = seed_model(hits, censored)
    n_star = math.exp(mu)  # the median over seeds
    asymptote = max(curve.asymptote, target + 1e-3)
    if not curve.initial < target < asymptote:
        raise CalibrateError(f"the reference curve starts at {curve.initial:.3g}, above the target {target:g}")
    mid = mid_samples_through(curve.initial, asymptote, curve.exponent, n_star, target)  # R(n_star) = target
    # runs that stop at the target (rlsim-real train --target) never show the plateau: then it is not judged
    past = max(float(eval_points(run)[0].max()) / n for run, n in zip(learners, hits))
    plateau_seen = past >= PLATEAU_SEEN
    degenerate = degenerate_reasons(
        curve.initial, curve.asymptote, fit.asymptote_err, target, mid, runs[0].batch, plateau_seen
    )
    noise = b_simple_pooled([r.records for r in runs], names=[r.name for r in runs], skip_unusable=True)
    rule = runs[0].config.get("lr_rule") or (runs[0].scenario_file or {}).get("learning", {}).get("lr_rule", "sqrt")
    if noise["b_simple"] is not None and noise["b_simple"] > 0:
        power = 1.0 if rule == "linear" else ADAM_SQRT_POWER
        batch_multiplier: dict[str, Any] = {
            "form": "critical_batch",
            "critical_batch": float(noise["b_simple"]),
            "critical_power": power,
        }
        form = (
            "E ~ (1 + B / B_simple) ** 0.5: Adam under the sqrt LR rule (rlsim.learning.model derives it)"
            if power == ADAM_SQRT_POWER
            else "E ~ 1 + B / B_simple: McCandlish et al. 2018 (LR tuned per batch)"
        )
    else:
        batch_multiplier = {"form": "invariant"}
        form = "invariant: the reference runs logged no usable two-batch gradient norms"
    return {
        "version": LEARNING_VERSION,
        "reference_batch": runs[0].batch,
        "metric": {"initial": curve.initial, "asymptote": asymptote, "mid_samples": mid, "exponent": curve.exponent},
        "target": float(target),
        "batch_multiplier": batch_multiplier,
        "invariant_rule": "linear" if rule == "linear" else "sqrt",
        "samples_spread": float(min(sigma, 2.0)),
        "stall_probability": float(min(stall, 0.99)),
        "stall_probability_upper_90": stall_upper(len(censored), len(runs)),
        # fitted at one batch size (fit --runs takes one): carried to others by the form
        **stall_form(runs, n_star),
        "curve_from_runs": [run.name for run in learners],
        "degenerate": degenerate,
        "plateau_seen": plateau_seen,  # the learners evaluated at least PLATEAU_SEEN x past their crossing
        # what the fit saw (documentation; not rlsim Learning fields)
        "batch_form": form,
        "lr_rule": rule,
        "median_samples_to_target": n_star,
        "runs": len(runs),
        "runs_reaching_target": len(hits),
        "measured_samples_to_target": hits,
        "budget_samples": censored,
        "b_simple": noise["b_simple"],
        "b_simple_interval": [v if v is not None and np.isfinite(v) else None for v in noise["interval"]],
        "b_simple_steps": noise["num_steps"],
        "sigmoid_rmse": fit.rmse,
    }


# ---------------------------------------------------------------------------------------------- together


def learning_warnings(learning: dict[str, Any]) -> list[str]:
    """One line per thing the learning model could not settle: a degenerate reference curve, and seeds that
    stalled (their share is assumed the same at every batch size)."""
    out = [f"learning: {reason}" for reason in learning.get("degenerate") or []]
    if learning.get("plateau_seen") is False:
        out.append(
            f"learning: the reference runs stop near the target, so the curve's plateau "
            f"({learning['metric']['asymptote']:.3g}) is not observed: samples-to-target at {learning['target']:g} "
            "rests on the seeds' crossings, at any other target (learning.target) it is an extrapolation"
        )
    stalled = learning["runs"] - learning["runs_reaching_target"]
    if stalled:
        carried = (
            f"is carried to other batches as a hazard per step without a correct answer (initial success "
            f"{learning['initial_success']:.4f}: more stalls at smaller batches, fewer at larger)"
            if learning.get("stall_form") == "signal_free_steps"
            else "is assumed the same at every batch size (seeds at one batch cannot say more; validate seeds at "
            "other batches)"
        )
        out.append(
            f"learning: {stalled} of {learning['runs']} reference seeds never reached the target: the curve is the "
            f"other seeds', the stall share {learning['stall_probability']:.2f} (90% upper bound "
            f"{learning['stall_probability_upper_90']:.2f}) {carried}"
        )
    return out
