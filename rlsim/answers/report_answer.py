"""The Answer sections of the run and sweep reports (rlsim.answers.report): the answer in a sentence and a small table
in human units (rlsim.answers.answer), and the placement of point labels that would otherwise overprint."""

from __future__ import annotations

import html
import math
from typing import Any

import pandas as pd

from rlsim.answers.answer import Answer, gpu_hours, hours, reference_row, samples


def run_answer_html(summary: dict[str, Any]) -> str:
    """The run's answer first: one sentence, then a small table in human units (rlsim.answers.answer)."""
    a = Answer.of(summary)
    rows = [
        ("batch", f"P={summary.get('prompts_per_step')} x G={summary.get('group_size')} = "
                  f"{summary.get('responses_per_step')} responses per step"),
        ("hardware", f"{summary.get('num_gpus')} x {summary.get('gpu')}, {summary.get('schedule')}"),
    ]  # fmt: skip
    if a.time_to_target_s is not None:
        rows += [
            ("time to target", a.time_text),
            ("target", f"{summary.get('target'):g}" if isinstance(summary.get("target"), (int, float)) else "-"),
            ("samples to target", f"{samples(a.samples_to_target)} (median over seeds)"),
            ("GPU-hours to target", gpu_hours(a.gpu_hours_to_target)),
        ]
        if isinstance(summary.get("probability_reaching_target"), (int, float)):
            rows.append(("seeds reaching it", f"{summary['probability_reaching_target']:.0%} within the run's budget"))
    o = summary.get("run_overheads")
    if o:  # beside the time to target, not in it (rlsim.run.overheads)
        rows.append(
            (
                "run overheads (not in the time to target)",
                f"{hours(o['total_s'])} over {o['steps']} steps: evaluation {hours(o['eval_s'])} "
                f"({o['evaluations']} runs), checkpoints {hours(o['checkpoint_s'])} ({o['checkpoints']} saves), "
                f"start-up {hours(o['startup_s'])}",
            )
        )
    rows += [
        ("throughput", f"{a.samples_per_s:,.2f} samples/s"),
        ("step time", f"{summary.get('step_time_s', float('nan')):,.1f} s (steady state)"),
        ("steps simulated", f"{summary.get('steps')}"),
    ]
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<p class='answer'>{html.escape(a.sentence())}</p><table>{body}</table>"


def sweep_answer_html(table: pd.DataFrame, scenario: dict[str, Any], sensitivity: dict[str, Any] | None = None) -> str:
    """The sweep's answer first: the fastest configuration against the scenario's own, in a sentence (its band
    with the learning presets' spread of ``sensitivity``, rlsim.answers.sensitivity, whose winner it is)."""
    ok = table[table["error"].isna() & table["time_to_target_s"].notna()] if "time_to_target_s" in table else None
    if ok is None or ok.empty:
        best = table[table["error"].isna()].sort_values("samples_per_s", ascending=False)
        if best.empty:
            return "<p class='answer'>Every configuration failed; see the error column.</p>"
        return f"<p class='answer'>Highest throughput: {html.escape(_config_text(best.iloc[0]))}.</p>"
    best = ok.sort_values("time_to_target_s").iloc[0]

    ref = reference_row(table, scenario)
    text = f"Fastest to the target: {_config_text(best)}: {Answer.of(best).with_learning(sensitivity).sentence()}."
    if ref is not None and ref["config"] != best["config"] and pd.notna(ref.get("time_to_target_s")):
        q = best["samples_per_s"] / ref["samples_per_s"]
        n = best["samples_to_target"] / ref["samples_to_target"]
        text += (
            f" The scenario's own configuration ({_config_text(ref)}) needs {hours(ref['time_to_target_s'])}: "
            f"the faster one's throughput gain {q:.2f}x over its samples penalty {n:.2f}x."
        )
    return f"<p class='answer'>{html.escape(text)}</p>"


def label_clusters(ok: pd.DataFrame, tol: float = 0.1) -> list[tuple[tuple[float, float], str]]:
    """Points of the decision figure grouped where they would overprint (within ``tol`` in log10 on both axes,
    after sorting by penalty): each group's first point and the P values of all its points."""
    pts = ok.sort_values(["penalty", "gain"])[["penalty", "gain", "prompts_per_step"]].to_numpy()
    groups: list[list] = []
    for x, y, p in pts:
        for g in groups:
            gx, gy = g[0][0], g[0][1]
            if abs(math.log10(x / gx)) < tol and abs(math.log10(y / gy)) < tol:
                g.append((x, y, p))
                break
        else:
            groups.append([(x, y, p)])
    out = []
    for g in groups:
        ps = sorted({int(p) for _, _, p in g})
        out.append(((g[0][0], g[0][1]), "P=" + ", ".join(str(p) for p in ps)))
    return out


def place_labels(clusters: list[tuple[tuple[float, float], str]]) -> list[tuple[tuple[float, float], str, int]]:
    """Each cluster's label above its point, or below, or further above, whichever first keeps clear of the
    labels and points already placed (in decades of the log axes: a label is about 0.35 wide and 0.1 high)."""
    points = [(math.log10(x), math.log10(y)) for (x, y), _ in clusters]
    placed: list[tuple[float, float]] = []  # label centres
    out = []
    for ((x, y), names), (lx, ly) in sorted(zip(clusters, points), key=lambda c: (-c[1][1], c[1][0])):
        width = 0.02 * len(names)
        options = ((12, 0.07), (-14, -0.08), (26, 0.15), (-28, -0.16))
        chosen = options[0]
        for option in options:
            cy = ly + option[1]
            clear = all(abs(cx - lx) > (width + 0.1) or abs(py - cy) > 0.09 for cx, py in placed)
            clear = clear and all(abs(px - lx) > width / 2 or abs(py - cy) > 0.05 for px, py in points)
            if clear:
                chosen = option
                break
        placed.append((lx, ly + chosen[1]))
        out.append(((x, y), names, chosen[0]))
    return out


def _config_text(row: pd.Series) -> str:
    parts = [f"P={int(row['prompts_per_step'])}"] if "prompts_per_step" in row else []
    for key, name in (("lr_rule", "LR"), ("gpu", "on")):
        if key in row and pd.notna(row[key]):
            parts.append(f"{name} {row[key]}")
    return ", ".join(parts) or f"config {row['config']}"


def check_html(check: dict[str, Any]) -> str:
    """The section of ``rlsim check -o DIR``'s run report (its check.json, rlsim.answers.check): a framework log's
    phases measured against the prediction, the verdicts, and the candidate explanations of those out of line."""
    head = "".join(f"<th>{h}</th>" for h in ("phase", "measured s", "predicted s", "ratio", "verdict"))
    body = []
    for r in check.get("rows", []):
        ratio = f"{r['ratio']:.2f}" if isinstance(r.get("ratio"), (int, float)) else "-"
        out = r.get("verdict") in ("slower", "faster")
        style = " style='background:#fde8e8;font-weight:bold'" if out else ""
        cells = (r["phase"], f"{r['measured_s']:,.2f}", f"{r['predicted_s']:,.2f}", ratio, r["verdict"])
        body.append(f"<tr{style}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    low, high = check.get("band", [0, 0])
    steps = check.get("steps") or [0]
    flagged = ", ".join(check.get("out_of_line", [])) or "none"
    parts = [
        f"<p class='answer'>{html.escape(str(check.get('source')))} ({html.escape(str(check.get('format')))}, median "
        f"of {len(steps)} logged steps, {steps[0]}-{steps[-1]}): out of line: {html.escape(flagged)}</p>",
        f"<table><tr>{head}</tr>{''.join(body)}</table>",
        f"<p class='note'>Out of line beyond {low:.2f}-{high:.2f}x predicted and "
        f"{check.get('small_share', 0):.0%} of the step: well past rlsim's held-out error on published runs "
        "(docs/results/published.md).</p>",
    ]
    for r in check.get("rows", []):
        if r.get("explanations"):
            items = "".join(f"<li>{html.escape(e)}</li>" for e in r["explanations"])
            parts.append(f"<h3>{html.escape(r['phase'])}</h3><ul>{items}</ul>")
    notes = check.get("notes", []) + (
        [f"not timed in the log: {', '.join(check['untimed'])}"] if check.get("untimed") else []
    )
    if notes:
        parts.append("<ul class='note'>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    return "".join(parts)
