"""The report of ``rlsim-calibrate validate``: a self-contained HTML page of what
:func:`calibrate.runs.validate.validate` returns (predicted vs measured plots, the error summary, the per-phase
table, the runs, the profile)."""

from __future__ import annotations

import html
import json
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from rlsim.run.profile import Profile


def _phase_table(by_batch: list[dict[str, Any]]) -> str:
    """One row per batch, one column per phase: predicted / measured milliseconds and the error, so a reader sees
    which phase misses without scrolling the wide by-batch table."""
    phases = [k.split("/", 1)[1] for k in (by_batch[0] if by_batch else {}) if k.startswith("error/")]
    if not phases:
        return "<p>no phase timings</p>"
    head = "".join(f"<th>{html.escape(ph)}</th>" for ph in phases)
    rows = []
    for r in by_batch:
        cells = []
        for ph in phases:
            err, pred, meas = r.get(f"error/{ph}"), r.get(f"predicted_s/{ph}"), r.get(f"measured_s/{ph}")
            text = "-" if err is None else f"{pred * 1e3:.3g} / {meas * 1e3:.3g} ms, <b>{err:+.1%}</b>"
            cells.append(f"<td>{text}</td>")
        role = "held out" if r["held_out"] else "reference"
        rows.append(f"<tr><td>B = {r['responses_per_step']} ({role})</td>{''.join(cells)}</tr>")
    return f"<table><tr><th>batch</th>{head}</tr>{''.join(rows)}</table>"


def report_html(table: pd.DataFrame, details: dict[str, Any], profile: Profile | None) -> str:
    """A self-contained HTML report: predicted vs measured plots and the error summary."""
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
        for held, name in ((True, "held-out runs"), (False, "reference runs")):
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
        "<h2>Per phase (medians over seeds: predicted / measured ms, error)</h2>" + _phase_table(details["by_batch"]),
        "<h2>By batch size (medians over seeds; samples- and time-to-target over the seeds that reached the target, "
        "against the prediction for those; time-to-target error = samples error x step-time error)</h2>"
        + pd.DataFrame(details["by_batch"]).to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="-"),
        "<h2>Runs</h2>" + table.to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="-"),
    ]
    for i, fig in enumerate(figs):
        parts.append(fig.to_html(full_html=False, include_plotlyjs=(i == 0)))
    parts.append(
        "<h2>Warnings and notes</h2><pre>"
        + html.escape("\n".join(details["warnings"] + details["notes"]) or "none")
        + "</pre>"
    )
    parts.append(
        "<h2>Learning model (the profile's, fitted on the reference runs)</h2><pre>"
        + html.escape(json.dumps(profile.learning if profile else None, indent=2, default=str))
        + "</pre>"
    )
    parts.append(
        "<h2>Profile</h2><pre>"
        + html.escape(profile.dumps() if profile else "none: roofline defaults")
        + "</pre></body></html>"
    )
    return "\n".join(parts)
