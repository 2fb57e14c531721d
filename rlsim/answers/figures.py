"""The figures of the HTML reports (rlsim.answers.report): plotly figures, each as (title, caption, figure), for
a sweep directory (time-to-target vs batch, the decision, the invariance picture, phases, generation throughput)
and a run directory (phases per step with the step time, the metric vs wall-clock). plotly is imported when a
figure is made, not before."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from rlsim.answers.answer import hours, reference_row
from rlsim.answers.report_answer import label_clusters, place_labels
from rlsim.errors import RlsimError
from rlsim.phases import TIMED_PHASES, Phase

PHASE_COLORS = {
    Phase.ROLLOUT.value: "#4C78A8",
    Phase.REWARD.value: "#F58518",
    Phase.OLD_LOGPROB.value: "#E45756",
    Phase.REF_LOGPROB.value: "#72B7B2",
    Phase.VALUES.value: "#54A24B",
    Phase.TRAIN_ACTOR.value: "#EECA3B",
    Phase.TRAIN_CRITIC.value: "#B279A2",
    Phase.WEIGHT_SYNC.value: "#FF9DA6",
}
# series colours (plotly's default sequence): the same series keeps its colour on every figure of a page
SERIES_COLORS = ("#636EFA", "#EF553B", "#00CC96", "#AB63FA", "#FFA15A", "#19D3F3", "#FF6692", "#B6E880")
# one per curve of the invariance picture (a batch in a series): plotly's Dark24, so that 16-24 curves differ
CURVE_COLORS = (
    "#2E91E5", "#E15F99", "#1CA71C", "#FB0D0D", "#DA16FF", "#222A2A", "#B68100", "#750D86", "#EB663B", "#511CFB",
    "#00A08B", "#FB00D1", "#FC0080", "#B2828D", "#6C7C32", "#778AAE", "#862A16", "#A777F1", "#620042", "#1616A7",
    "#DA60CA", "#6C4516", "#0D2A63", "#AF0038",
)  # fmt: skip


class ReportError(RlsimError):
    """The directory holds no sweep or run outputs to report on."""


def plotly_modules():
    """plotly's graph objects and make_subplots, or a ReportError saying how to install them (an optional extra)."""
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError:
        raise ReportError("reports need plotly: pip install 'rlsim[report]'") from None
    return go, make_subplots


# ---------------------------------------------------------------------------------------------- figures


def _label(row: pd.Series, keys: list[str]) -> str:
    return ", ".join(f"{k.split('.')[-1]}={row[k]}" for k in keys if k in row)


def sweep_figures(
    table: pd.DataFrame,
    curves: pd.DataFrame,
    engines: pd.DataFrame,
    scenario: dict[str, Any],
    grid: dict[str, list[Any]],
) -> list[tuple[str, str, Any]]:
    """(title, caption, figure) for each figure of a sweep report."""
    ok = table[table["error"].isna()].copy()
    if ok.empty:
        raise ReportError("every configuration of the sweep failed; see the error column of sweep.csv")
    group_keys = [k for k in grid if k not in ("workload.prompts_per_step", "workload.group_size")]
    ok["series"] = ok.apply(lambda r: _label(r, group_keys) or "all", axis=1)
    # one colour per series (LR rule, GPU, ...) on every figure of the page
    colour = {name: SERIES_COLORS[i % len(SERIES_COLORS)] for i, name in enumerate(dict.fromkeys(ok["series"]))}
    figs = []
    if ok["time_to_target_s"].notna().any():
        figs.append(_time_to_target_figure(ok, colour))
        figs.append(_decision_figure(ok, colour, scenario, grid))
    if not curves.empty and curves["eval_metric"].notna().any():
        figs.append(_invariance_figure(ok, curves, scenario))
    figs.append(_phases_figure(ok))
    figs.append(_engine_figure(ok, engines))
    return figs


def _time_to_target_figure(ok: pd.DataFrame, colour: dict[str, str]) -> tuple[str, str, Any]:
    """Time-to-target vs batch, one line per series, the band as error bars; a row whose time to target was
    extrapolated (a screened sweep's, column extrapolated) as an open marker."""
    go, _ = plotly_modules()
    fig = go.Figure()
    for name, g in ok.groupby("series", sort=False):
        g = g.sort_values("responses_per_step")
        ttt_h = g["time_to_target_s"] / 3600
        later = g["extrapolated"].eq(True) if "extrapolated" in g else pd.Series(False, index=g.index)
        fig.add_trace(
            go.Scatter(
                x=g["responses_per_step"],
                y=ttt_h,
                mode="lines+markers",
                name=name,
                line={"color": colour[name]},
                marker={"symbol": ["circle-open" if x else "circle" for x in later], "size": 8},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": (g["time_to_target_high_s"] / 3600 - ttt_h).fillna(0),
                    "arrayminus": (ttt_h - g["time_to_target_low_s"] / 3600).fillna(0),
                },
                text=[f"P={p}" for p in g["prompts_per_step"]],
                hovertemplate="B=%{x} (%{text})<br>%{y:.2f} h<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_layout(
        xaxis={"type": "log", "title": "responses per step B = P x G"},
        yaxis={"title": "time-to-target (hours)", "type": "log"},
        title="Time-to-target vs batch",
    )
    return (
        "Time-to-target vs batch",
        "Error bars: the band over simulation seeds, the learning "
        "model's seed spread and profile uncertainty (rlsim.learning.target). Open markers: extrapolated from the "
        "steps a screened sweep simulated.",
        fig,
    )


def _decision_figure(
    ok: pd.DataFrame, colour: dict[str, str], scenario: dict[str, Any], grid: dict[str, list[Any]]
) -> tuple[str, str, Any]:
    """Throughput gain vs samples penalty against the reference configuration, with the break-even line."""
    go, _ = plotly_modules()
    ref = reference_row(ok, scenario)
    ok["gain"] = ok["samples_per_s"] / ref["samples_per_s"]
    ok["penalty"] = ok["samples_to_target"] / ref["samples_to_target"]
    fig = go.Figure()
    lo = min(ok["gain"].min(), ok["penalty"].min()) / 1.2
    hi = max(ok["gain"].max(), ok["penalty"].max()) * 1.2
    fig.add_trace(
        go.Scatter(
            x=[lo, hi],
            y=[lo, hi],
            mode="lines",
            name="break-even: gain = penalty",
            line={"dash": "dash", "color": "#888"},
        )
    )
    for name, g in ok.groupby("series", sort=False):
        fig.add_trace(
            go.Scatter(
                x=g["penalty"],
                y=g["gain"],
                mode="markers",
                name=name,
                marker={"color": colour[name], "size": 9},
                text=[f"P={p}" for p in g["prompts_per_step"]],
                hovertemplate="penalty %{x:.2f}, gain %{y:.2f}<extra>%{fullData.name} %{text}</extra>",
            )
        )
    # one label per cluster of points (within 10% on both axes), naming every P in it, so labels never overlap
    for (x, y), names, shift in place_labels(label_clusters(ok)):
        fig.add_annotation(x=math.log10(x), y=math.log10(y), text=names, showarrow=False, yshift=shift,
                           font={"size": 10})  # fmt: skip
    fig.update_layout(
        title=f"Throughput gain vs samples penalty (reference: {_label(ref, list(grid))})",
        xaxis={"title": "samples penalty N*/N*_ref", "type": "log"},
        yaxis={"title": "throughput gain q/q_ref", "type": "log"},
    )
    return (
        "The decision: throughput gain vs samples penalty",
        "A configuration above the dashed line reaches the target sooner than the reference; below "
        "it, its extra samples cost more time than its throughput saves.",
        fig,
    )


def _invariance_figure(ok: pd.DataFrame, curves: pd.DataFrame, scenario: dict[str, Any]) -> tuple[str, str, Any]:
    """The predicted metric vs cumulative samples and vs wall-clock, per batch and series; a screened row's curve
    past its simulated steps (curves.csv column extrapolated) dashed."""
    go, make_subplots = plotly_modules()
    fig = make_subplots(rows=1, cols=2, subplot_titles=("metric vs cumulative samples", "metric vs wall-clock"))
    merged = curves.merge(ok[["config", "series", "prompts_per_step"]], on="config")
    if "extrapolated" not in merged:  # a sweep written before screens
        merged["extrapolated"] = False
    groups = merged.groupby(["series", "prompts_per_step"], sort=True)
    for n, ((series, p), g) in enumerate(groups):
        name = f"P={p} {series}"
        colour = CURVE_COLORS[n % len(CURVE_COLORS)]
        later = g["extrapolated"].eq(True)
        ran, rest = g[~later], g[later]
        if len(ran) and len(rest):
            rest = pd.concat([ran.iloc[[-1]], rest])  # the dashed part starts where the simulated one ends
        parts = [(part, dash) for part, dash in ((ran, "solid"), (rest, "dash")) if len(part)]
        for col, x, scale in ((1, "cumulative_samples", 1.0), (2, "wall_s", 3600.0)):
            for k, (part, dash) in enumerate(parts):
                fig.add_trace(
                    go.Scatter(
                        x=part[x] / scale,
                        y=part["eval_metric"],
                        mode="lines",
                        name=name,
                        legendgroup=name,
                        showlegend=col == 1 and k == 0,
                        line={"color": colour, "dash": dash},
                    ),
                    row=1,
                    col=col,
                )
    target = scenario.get("learning", {}).get("target")
    if target is not None:
        for col in (1, 2):
            fig.add_hline(y=target, line_dash="dot", line_color="#888", row=1, col=col)
    fig.update_xaxes(title_text="cumulative samples", row=1, col=1)
    fig.update_xaxes(title_text="hours", row=1, col=2)
    fig.update_yaxes(title_text="predicted metric", row=1, col=1)
    fig.update_layout(title="The invariance picture", height=500)
    return (
        "Metric vs samples and vs wall-clock",
        "Curves that coincide in samples (left) differ in wall-clock (right) by their throughput. Dashed: "
        "extrapolated at the row's steady step time past the steps a screened sweep simulated (rlsim sweep --full "
        "simulates them).",
        fig,
    )


def _phases_figure(ok: pd.DataFrame) -> tuple[str, str, Any]:
    """Seconds per step by phase, per configuration."""
    go, _ = plotly_modules()
    fig = go.Figure()
    labels = [f"P={r.prompts_per_step} {r.series}" for r in ok.itertuples()]
    for phase in TIMED_PHASES:
        col = f"phase_time_s/{phase.value}"
        if col in ok and ok[col].fillna(0).gt(0).any():
            fig.add_trace(go.Bar(x=labels, y=ok[col], name=phase.value, marker_color=PHASE_COLORS.get(phase.value)))
    fig.update_layout(barmode="stack", title="Seconds per step by phase", yaxis={"title": "seconds per step"})
    return (
        "Phase breakdown per configuration",
        "Under an async schedule phases overlap, so their sum exceeds the step time.",
        fig,
    )


def _engine_figure(ok: pd.DataFrame, engines: pd.DataFrame) -> tuple[str, str, Any]:
    """Generation tokens/s per replica vs concurrency: the engine model and the sweep's operating points."""
    go, _ = plotly_modules()
    fig = go.Figure()
    if not engines.empty:
        for name, g in engines.groupby("engine", sort=False):
            fig.add_trace(
                go.Scatter(
                    x=g["concurrency"], y=g["tokens_per_s_per_replica"], mode="lines", name=f"engine model: {name}"
                )
            )
    per_replica = ok["generation_tokens_per_s"] / ok["replicas"]
    fig.add_trace(
        go.Scatter(
            x=ok["mean_decode_batch"],
            y=per_replica,
            mode="markers+text",
            name="sweep (mean)",
            text=[f"P={p}" for p in ok["prompts_per_step"]],
            textposition="bottom right",
        )
    )
    fig.update_layout(
        title="Generation throughput vs concurrency",
        xaxis={"type": "log", "title": "sequences per decode iteration (one replica)"},
        yaxis={"title": "generated tokens/s per replica"},
    )
    return (
        "Generation throughput vs concurrency",
        "Lines: one decode iteration at the workload's mean context. Points: each configuration's whole "
        "rollout, stragglers and prefill included.",
        fig,
    )


def run_figures(steps: pd.DataFrame, summary: dict[str, Any] | None = None) -> list[tuple[str, str, Any]]:
    go, _ = plotly_modules()
    summary = summary or {}
    figs = []
    fig = go.Figure()
    for phase in TIMED_PHASES:
        col = f"timing_s/{phase.value}"
        if col in steps and steps[col].fillna(0).gt(0).any():
            fig.add_trace(
                go.Bar(x=steps["step"], y=steps[col], name=phase.value, marker_color=PHASE_COLORS.get(phase.value))
            )
    if "step_time_s" in steps:
        fig.add_trace(
            go.Scatter(x=steps["step"], y=steps["step_time_s"], name="step time", mode="lines",
                       line={"color": "black", "width": 2})
        )  # fmt: skip
    fig.update_layout(
        barmode="stack",
        title="Seconds per phase, per step, and the step time",
        xaxis={"title": "step"},
        yaxis={"title": "seconds"},
    )
    overlap = sum((summary.get("phase_time_s") or {}).values()) > 1.005 * summary.get("step_time_s", float("inf"))
    caption = (
        "Phases that run at the same time (generation and training under an async schedule or on separate GPU "
        "pools) overlap within a step, so the bars stack above the step time (the black line)."
        if overlap
        else "The phases run one after another: the bars add up to the step time (the black line)."
    )
    figs.append(("Phase breakdown per step", caption, fig))
    if "eval_metric" in steps and steps["eval_metric"].notna().any():
        fig = go.Figure(
            go.Scatter(x=steps["wall_s"] / 3600, y=steps["eval_metric"], mode="lines", name="predicted metric")
        )
        target = summary.get("target")
        if isinstance(target, (int, float)):
            fig.add_hline(
                y=target, line_dash="dash", line_color="#E45756", annotation_text=f"target {target:g}",
                annotation_position="top left",
            )  # fmt: skip
        ttt = summary.get("time_to_target_s")
        if isinstance(ttt, (int, float)):
            fig.add_vline(
                x=ttt / 3600, line_dash="dot", line_color="#555", annotation_text=f"reached at {hours(ttt)}",
                annotation_position="bottom left",
            )  # fmt: skip
        fig.update_layout(
            title="Predicted metric vs wall-clock",
            xaxis={"title": "wall-clock (hours)"},
            yaxis={"title": "predicted eval metric"},
        )
        caption = "The learning model's metric along the simulated steps; the dashed line is the target."
        if summary.get("time_to_target_extrapolated"):
            caption += " The run stopped before the target: the time to it is extrapolated at the steady step time."
        figs.append(("Metric vs wall-clock", caption, fig))
    return figs
