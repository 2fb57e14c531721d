"""Why the plan's winner wins, in the paper's terms (docs/reference.md section 1).

Time-to-target T = N* / q, so against the user's own configuration (the baseline b) a configuration c is faster
exactly when its throughput gain q_c / q_b exceeds its samples penalty N*_c / N*_b; under the cost objective the
gain is per dollar (q / (GPUs x price)). The explanation gives:

* the baseline and the winner (full simulations), the gain, the penalty and the speedup between them;
* what bounds each one's step: the largest phase and, with separate pools, the busier pool;
* per batch size and LR rule, the best screened configuration against the winner (screened numbers on both
  sides), and for each one that loses, why: its samples penalty exceeds its throughput gain (or it is slower and
  needs no fewer samples).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from rlsim.answers.answer import Answer
from rlsim.answers.sensitivity import lines as sensitivity_lines
from rlsim.learning.model import LearningModelError, ceiling_at, clearing_batches, samples_to_target
from rlsim.learning.staleness import retained_gain
from rlsim.plan.search import PlanResult
from rlsim.plan.space import schedule_overrides

OBJECTIVE_WORD = {
    "time": "time-to-target",
    "cost": "time-to-target (ranked by cost)",
    "gpu-hours": "time-to-target (ranked by GPU-hours)",
}
TIE = 0.01  # speedups and gains within 1% of 1 are a tie (the screen is good to about 2%)
# what a gain below 1 means under each objective
TOO = {
    "time": "it is slower too",
    "cost": "each sample costs more too",
    "gpu-hours": "each sample takes more GPU-hours too",
}


def describe(row: pd.Series) -> str:
    parts = [
        f"P={row['prompts_per_step']}",
        f"G={row['group_size']}",
        f"LR {row['lr_rule']}",
        str(row["schedule"]),
    ]
    if row["split"] != "shared":
        parts.append(f"rollout/train GPUs {row['split']}")
    parts.append(f"engine TP{row['engine_tp']}")
    if "train_tp" in row and isinstance(row["train_tp"], (int, float)) and not pd.isna(row["train_tp"]):
        parts.append(f"train TP{int(row['train_tp'])}")
    parts.append(f"{row['num_gpus']} x {row['gpu']}")
    return ", ".join(parts)


def _numbers(row: pd.Series) -> str:
    return Answer.of(row).sentence()


def _bound(row: pd.Series) -> str:
    phase = row["bounding_phase"]
    sec = row.get(f"phase_time_s/{phase}")
    text = f"{phase} is its largest phase ({sec:.1f} s of a {row['step_time_s']:.1f} s step)"
    if row["split"] != "shared" and isinstance(row.get("busiest_pool"), str):
        pool = row["busiest_pool"].removesuffix("_pool")
        text += f"; the {pool} pool is the busier one ({row['busiest_pool_utilization']:.0%} busy)"
    return text


def _screen(row: pd.Series, key: str) -> float:
    """A row's screened value (a finalist keeps its screened numbers beside the full ones)."""
    alt = row.get(f"screen_{key}")
    return float(alt) if isinstance(alt, (int, float)) and not pd.isna(alt) else float(row[key])


def ratios(row: pd.Series, base: pd.Series, objective: str, screened: bool = False) -> dict[str, float]:
    """Gain, penalty and speedup of ``row`` over ``base``; under the cost objective the gain is throughput per
    dollar-hour (q / (GPUs x price)), under gpu-hours per GPU."""
    q = (lambda r: _screen(r, "samples_per_s")) if screened else (lambda r: float(r["samples_per_s"]))
    gain = q(row) / q(base)
    if objective == "cost":
        gain *= (base["num_gpus"] * base["usd_per_gpu_hour"]) / (row["num_gpus"] * row["usd_per_gpu_hour"])
    elif objective == "gpu-hours":
        gain *= base["num_gpus"] / row["num_gpus"]
    penalty = float(row["samples_to_target"]) / float(base["samples_to_target"])
    return {"gain": gain, "penalty": penalty, "speedup": gain / penalty}


def per_batch(result: PlanResult, against: int) -> pd.DataFrame:
    """For each (P, G, LR rule): the best feasible configuration by the objective and its gain, penalty and speedup
    over configuration ``against``, screened numbers on both sides."""
    t = result.table
    base = result.row(against)
    ok = t[t["feasible"]].copy()
    # every row on its screened numbers (a finalist's objective scaled back by its screened time-to-target: cost
    # and GPU-hours are proportional to it), so that the comparison is screen against screen
    if "screen_time_to_target_s" in ok:
        scale = (ok["screen_time_to_target_s"] / ok["time_to_target_s"]).fillna(1.0)
        ok["objective"] = ok["objective"] * scale
    rows: list[dict[str, Any]] = []
    for (p, g, rule), group in ok.groupby(["prompts_per_step", "group_size", "lr_rule"], sort=True):
        best = group.sort_values(["objective", "config"]).iloc[0]
        r = ratios(best, base, result.objective, screened=True)
        rows.append(
            {
                "prompts_per_step": p,
                "group_size": g,
                "lr_rule": rule,
                "config": int(best["config"]),
                "configuration": describe(best),
                "throughput_gain": r["gain"],
                "samples_penalty": r["penalty"],
                "speedup": r["speedup"],
            }
        )
    return pd.DataFrame(rows)


def explain(result: PlanResult) -> list[str]:
    """The explanation as lines of text (module docstring)."""
    base = result.row(result.baseline)
    gain_word = {"time": "throughput gain", "cost": "throughput gain per dollar", "gpu-hours": "gain per GPU"}
    word = gain_word[result.objective]
    lines = []
    if base["status"] != "ok" or not base["feasible"]:
        why = base.get("infeasible_reason") or base.get("reason")
        lines.append(f"your configuration ({describe(base)}) is not feasible: {why}")
    else:
        lines.append(f"your configuration: {describe(base)}")
        own = Answer.of(base).with_learning(result.sensitivity) if result.winner == result.baseline else None
        lines.append(f"  {own.sentence() if own else _numbers(base)} ({base['fidelity']} simulation)")
        lines.append(f"  {_bound(base)}")
    if result.winner is None:
        lines.append("no configuration meets the constraints; loosen --deadline-h / --budget-usd or widen the search")
        return lines
    win = result.row(result.winner)
    if result.winner == result.baseline:
        lines.append("the winner is your configuration: no configuration searched beats it")
    else:
        lines.append(f"winner: {describe(win)}")
        lines.append(f"  {Answer.of(win).with_learning(result.sensitivity).sentence()} ({win['fidelity']} simulation)")
        lines.append(f"  {_bound(win)}")
        if base["status"] == "ok" and base["feasible"]:
            r = ratios(win, base, result.objective)
            change = f"{base['time_to_target_s'] / 3600:.2f} h -> {win['time_to_target_s'] / 3600:.2f} h"
            if result.objective == "cost":
                change = f"${base['cost_usd']:,.0f} -> ${win['cost_usd']:,.0f}; {change}"
            elif result.objective == "gpu-hours":
                change = f"{base['gpu_hours_to_target']:,.0f} -> {win['gpu_hours_to_target']:,.0f} GPU-h; {change}"
            better = {"time": "faster", "cost": "cheaper", "gpu-hours": "fewer GPU-hours"}[result.objective]
            lines.append(
                f"why it wins: {word} {r['gain']:.2f}x > samples penalty {r['penalty']:.2f}x, so it is "
                f"{r['speedup']:.2f}x {better} ({change})"
            )
    lines_for = (_staleness_line, _groups_line, _ceiling_line, _filter_line)
    for extra in (fn(result, win) for fn in lines_for):
        if extra:
            lines.append(extra)
    table = per_batch(result, result.winner)
    lines.append(
        f"against the winner, the best configuration at each batch size and LR rule (screened; {word} and "
        "samples penalty over the winner's):"
    )
    for r in table.itertuples():
        batch = f"P={r.prompts_per_step:<6}" + (f" G={r.group_size:<3}" if len(result.space.groups) > 1 else "")
        head = f"  {batch} LR {r.lr_rule:<6} gain {r.throughput_gain:5.2f}x  penalty {r.samples_penalty:5.2f}x"
        if r.config == result.winner:
            lines.append(f"{head}  -> the winner")
        elif r.speedup > 1.0 - TIE:
            lines.append(f"{head}  -> ties (speedup {r.speedup:.2f}; the screen is good to about 2%)")
        else:
            slower = r.throughput_gain < 1.0 - TIE
            lines.append(
                f"{head}  -> loses (speedup {r.speedup:.2f}): its samples penalty exceeds its {word}"
                + (f" ({TOO[result.objective]})" if slower and r.samples_penalty >= 1.0 else "")
            )
    if result.sensitivity is not None:  # how much the answer rests on the learning side
        lines += sensitivity_lines(result.sensitivity, OBJECTIVE_WORD[result.objective])
    return lines


def _staleness_line(result: PlanResult, win: pd.Series) -> str | None:
    """Under a staleness loss (learning.staleness_loss), what it keeps at the searched async depths: why a deeper
    pipeline does or does not pay (rlsim.learning.staleness)."""
    loss = result.scenario.learning.staleness_loss
    over = [schedule_overrides(x) for x in result.space.schedules]
    depths = sorted({o["schedule.max_staleness"] for o in over if o["schedule.mode"] == "async"})
    if loss == "stretch" or not depths:
        return None
    form = result.scenario.learning.staleness_form
    kept = ", ".join(f"k={k} {retained_gain(loss, k, form):.0%}" for k in depths)
    return (
        f"staleness: {loss} keeps this share of the metric's gain at the async depths searched ({kept}); a deeper "
        f"pipeline hides more generation but needs more samples once the share falls (winner: {win['schedule']})"
    )


def _groups_line(result: PlanResult, win: pd.Series) -> str | None:
    """Where G counts apart from the batch (learning.reference_group_size), what each searched G costs in samples at
    the winner's batch: why responses per prompt were searched (rlsim.learning.groups)."""
    learning = result.scenario.learning
    if learning.reference_group_size is None or len(result.space.groups) < 2 or learning.metric is None:
        return None
    batch = int(win["prompts_per_step"]) * int(win["group_size"])
    try:
        n = {g: samples_to_target(learning, batch, 0, g).group_multiplier for g in result.space.groups}
    except LearningModelError:
        return None
    each = ", ".join(f"G={g} {m:.2f}x" for g, m in n.items())
    why = "a group whose rewards all agree trains nothing"
    if learning.prompt_concentration is not None:
        why += f", more so with prompts' pass rates spread (concentration {learning.prompt_concentration:.3g})"
    if learning.group_correlation > 0:
        why += f"; responses to one prompt count as fewer (correlation {learning.group_correlation:.3g})"
    return (
        f"responses per prompt: at B = {batch}, samples against G = {learning.reference_group_size} of the reference "
        f"runs: {each} ({why}; rlsim.learning.groups)"
    )


def _ceiling_line(result: PlanResult, win: pd.Series) -> str | None:
    """Where the ceiling moves with the batch (learning.ceilings): the winner's ceiling and the batches at which the
    ceiling clears the target, which is why smaller batches may be pruned (rlsim.learning.model.ceiling_at)."""
    learning = result.scenario.learning
    batch = int(win["prompts_per_step"]) * int(win["group_size"])
    top = ceiling_at(learning, batch)
    if top is None or learning.metric is None:
        return None
    return (
        f"ceiling: the metric tops out at {top:.4g} at the winner's B = {batch} (learning.ceilings; "
        f"{learning.metric.asymptote:.4g} on the reference curve); it clears the target {learning.target:g} "
        f"{clearing_batches(learning)}, and smaller ceilings need more samples near the target (larger batches end "
        "higher: ScaleRL, arXiv 2510.13786)"
    )


def _filter_line(result: PlanResult, win: pd.Series) -> str | None:
    """Under DAPO's dynamic sampling (algorithm.dynamic_sampling), what the filter does on each side: fewer trained
    samples to the target, more generation per step (rlsim.learning.model, ``filtered_signal_power``)."""
    ds = result.scenario.algorithm.dynamic_sampling
    if ds is None or result.scenario.learning.metric is None:
        return None
    power = result.scenario.learning.filtered_signal_power
    trained = ds.keep_rate**power
    return (
        f"filter: dynamic sampling keeps {ds.keep_rate:.3g} of the groups, so a step trains on groups that all carry "
        f"a signal: {trained:.2f}x the trained samples to the target, each step generating {1 / ds.keep_rate:.2f}x "
        f"as many responses ({trained / ds.keep_rate:.2f}x the generated samples; learning.filtered_signal_power "
        f'{power:g}, docs/learning.md "Filtering")'
    )
