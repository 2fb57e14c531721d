"""Reports: one self-contained HTML file (plotly JS embedded, no external URL) from a sweep or run directory.

Figures for a sweep directory (written by ``rlsim sweep -o DIR``):

1. time-to-target vs batch, one line per LR rule (and per GPU when swept), with the band as error bars;
2. the decomposition: throughput gain q/q_ref against samples penalty N*/N*_ref per configuration, with the
   break-even line gain = penalty (above it a configuration reaches the target sooner than the reference);
3. the predicted metric vs cumulative samples and vs wall-clock per batch (the invariance picture);
4. per-phase time per step for each configuration;
5. generation throughput vs concurrency: the engine model's tokens/s per replica and the sweep's operating points;
6. a provenance block: rlsim version, scenario name and hash, seed, grid, profile, the scenario's assumptions.

Both open with an Answer section (rlsim.answers.answer: time-to-target in hours with its band, throughput, samples,
GPU-hours; a sweep's fastest configuration against the scenario's own). A run directory (``rlsim run -o DIR``)
gets the phase breakdown per step with the step time over it, the metric curve with its target, and provenance.
This module is the only one besides the CLI that writes files, and it imports plotly only when called.
"""

from __future__ import annotations

import html
import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from rlsim import __version__
from rlsim.answers.answer import Answer, hours, samples
from rlsim.answers.report_answer import label_clusters, place_labels, run_answer_html, sweep_answer_html
from rlsim.errors import RlsimError
from rlsim.io.files import read_json, read_text, read_yaml_mapping
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

CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1100px;
       color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85em; } td, th { border: 1px solid #ddd; padding: 3px 8px; }
th { background: #f5f5f5; text-align: left; } .note { color: #555; font-size: 0.9em; }
pre { background: #f7f7f7; padding: 0.8em; font-size: 0.8em; overflow-x: auto; }
.answer { font-size: 1.1em; background: #eef5fb; border-left: 4px solid #4C78A8; padding: 0.6em 0.9em; }
.wide { overflow-x: auto; max-width: 100%; }
"""


class ReportError(RlsimError):
    """The directory holds no sweep or run outputs to report on."""


def _plotly():
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError:
        raise ReportError("reports need plotly: pip install 'rlsim[report]'") from None
    return go, make_subplots


# ---------------------------------------------------------------------------------------------- figures


def _label(row: pd.Series, keys: list[str]) -> str:
    return ", ".join(f"{k.split('.')[-1]}={row[k]}" for k in keys if k in row)


def _reference_row(table: pd.DataFrame, scenario: dict[str, Any]) -> pd.Series:
    """The configuration at the reference batch with the trajectory-preserving rule, else the first row."""
    learning = scenario.get("learning", {})
    ok = table[table["error"].isna()]
    ref = ok[
        (ok["responses_per_step"] == learning.get("reference_batch"))
        & (ok["lr_rule"] == learning.get("invariant_rule", "sqrt"))
    ]
    return (ref if len(ref) else ok).iloc[0]


def sweep_figures(
    table: pd.DataFrame,
    curves: pd.DataFrame,
    engines: pd.DataFrame,
    scenario: dict[str, Any],
    grid: dict[str, list[Any]],
) -> list[tuple[str, str, Any]]:
    """(title, caption, figure) for each figure of a sweep report."""
    go, make_subplots = _plotly()
    ok = table[table["error"].isna()].copy()
    if ok.empty:
        raise ReportError("every configuration of the sweep failed; see the error column of sweep.csv")
    figs = []
    group_keys = [k for k in grid if k not in ("workload.prompts_per_step", "workload.group_size")]
    ok["series"] = ok.apply(lambda r: _label(r, group_keys) or "all", axis=1)
    # one colour per series (LR rule, GPU, ...) on every figure of the page
    colour = {name: SERIES_COLORS[i % len(SERIES_COLORS)] for i, name in enumerate(dict.fromkeys(ok["series"]))}
    has_target = ok["time_to_target_s"].notna().any()

    if has_target:
        fig = go.Figure()
        for name, g in ok.groupby("series", sort=False):
            g = g.sort_values("responses_per_step")
            ttt_h = g["time_to_target_s"] / 3600
            fig.add_trace(
                go.Scatter(
                    x=g["responses_per_step"],
                    y=ttt_h,
                    mode="lines+markers",
                    name=name,
                    line={"color": colour[name]},
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
        figs.append(
            (
                "Time-to-target vs batch",
                "Error bars: the band over simulation seeds, the learning "
                "model's seed spread and profile uncertainty (rlsim.learning.target).",
                fig,
            )
        )

        ref = _reference_row(ok, scenario)
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
        figs.append(
            (
                "The decision: throughput gain vs samples penalty",
                "A configuration above the dashed line reaches the target sooner than the reference; below "
                "it, its extra samples cost more time than its throughput saves.",
                fig,
            )
        )

    if not curves.empty and curves["eval_metric"].notna().any():
        fig = make_subplots(rows=1, cols=2, subplot_titles=("metric vs cumulative samples", "metric vs wall-clock"))
        merged = curves.merge(ok[["config", "series", "prompts_per_step"]], on="config")
        for (series, p), g in merged.groupby(["series", "prompts_per_step"], sort=True):
            name = f"P={p} {series}"
            fig.add_trace(
                go.Scatter(x=g["cumulative_samples"], y=g["eval_metric"], mode="lines", name=name, legendgroup=name),
                row=1,
                col=1,
            )
            fig.add_trace(
                go.Scatter(
                    x=g["wall_s"] / 3600,
                    y=g["eval_metric"],
                    mode="lines",
                    name=name,
                    legendgroup=name,
                    showlegend=False,
                ),
                row=1,
                col=2,
            )
        target = scenario.get("learning", {}).get("target")
        if target is not None:
            for col in (1, 2):
                fig.add_hline(y=target, line_dash="dot", line_color="#888", row=1, col=col)
        fig.update_xaxes(title_text="cumulative samples", row=1, col=1)
        fig.update_xaxes(title_text="hours", row=1, col=2)
        fig.update_yaxes(title_text="predicted metric", row=1, col=1)
        fig.update_layout(title="The invariance picture", height=500)
        figs.append(
            (
                "Metric vs samples and vs wall-clock",
                "Curves that coincide in samples (left) differ in wall-clock (right) by their throughput.",
                fig,
            )
        )

    fig = go.Figure()
    labels = [f"P={r.prompts_per_step} {r.series}" for r in ok.itertuples()]
    for phase in TIMED_PHASES:
        col = f"phase_time_s/{phase.value}"
        if col in ok and ok[col].fillna(0).gt(0).any():
            fig.add_trace(go.Bar(x=labels, y=ok[col], name=phase.value, marker_color=PHASE_COLORS.get(phase.value)))
    fig.update_layout(barmode="stack", title="Seconds per step by phase", yaxis={"title": "seconds per step"})
    figs.append(
        (
            "Phase breakdown per configuration",
            "Under an async schedule phases overlap, so their sum exceeds the step time.",
            fig,
        )
    )

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
    figs.append(
        (
            "Generation throughput vs concurrency",
            "Lines: one decode iteration at the workload's mean context. Points: each configuration's whole "
            "rollout, stragglers and prefill included.",
            fig,
        )
    )
    return figs


def run_figures(steps: pd.DataFrame, summary: dict[str, Any] | None = None) -> list[tuple[str, str, Any]]:
    go, _ = _plotly()
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


# ---------------------------------------------------------------------------------------------- page


def _provenance(meta: dict[str, Any], scenario: dict[str, Any]) -> str:
    rows = [
        ("rlsim version", meta.get("rlsim_version", __version__)),
        ("scenario", scenario.get("name")),
        ("scenario hash", meta.get("scenario_hash")),
        ("seed", scenario.get("run", {}).get("seed")),
        ("grid", json.dumps(meta.get("grid")) if meta.get("grid") else "-"),
        (
            "profile",
            json.dumps(meta["profile"]["provenance"])
            if meta.get("profile")
            else "none: roofline defaults from the scenario's costs section",
        ),
        ("model", scenario.get("model", {}).get("name")),
        ("GPU", scenario.get("hardware", {}).get("gpu", {}).get("name")),
    ]
    body = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows)
    assumptions = "".join(f"<li>{html.escape(a)}</li>" for a in scenario.get("assumptions", []))
    return (
        f"<table>{body}</table><h3>Assumptions of the scenario</h3><ul>{assumptions or '<li>none listed</li>'}"
        f"</ul><h3>Resolved scenario</h3><pre>{html.escape(yaml.safe_dump(scenario, sort_keys=False))}</pre>"
    )


def _table_html(table: pd.DataFrame) -> str:
    cols = [
        c
        for c in (
            "prompts_per_step",
            "responses_per_step",
            "lr_rule",
            "gpu",
            "step_time_s",
            "samples_per_s",
            "generation_tokens_per_s",
            "samples_to_target",
            "time_to_target_s",
            "gpu_hours_to_target",
            "error",
        )
        if c in table
    ]
    if "error" in cols and table["error"].isna().all():
        cols.remove("error")  # a column of nothing says nothing
    view = table[cols].copy()
    if "time_to_target_s" in view:
        view["time_to_target_s"] = [Answer.of(r).time_text for _, r in table.iterrows()]
        view = view.rename(columns={"time_to_target_s": "time to target (band)"})
    for col in ("samples_to_target", "gpu_hours_to_target", "generation_tokens_per_s"):
        if col in view:
            view[col] = [samples(x) if pd.notna(x) else "-" for x in view[col]]
    view = view.rename(columns={c: c.replace("_", " ") for c in view.columns})
    return (
        "<div class='wide'>"
        + view.to_html(index=False, float_format=lambda x: f"{x:,.2f}", na_rep="-", border=0)
        + "</div>"
    )


# the columns the report reads from each table (what rlsim sweep / run -o write)
TABLE_COLUMNS = {
    "sweep.csv": ("config", "error"),
    "curves.csv": ("config", "step", "cumulative_samples", "wall_s", "eval_metric"),
    "engine_curves.csv": ("engine", "concurrency", "tokens_per_s_per_replica"),
    "steps.csv": ("step", "cumulative_samples", "wall_s"),
}


_RERUN = "rerun the command that wrote it"


def _read_table(path: Path, rows: int | None = None) -> pd.DataFrame:
    """A CSV the report reads: UTF-8, with the columns it uses, every row complete (a truncated file loses its last
    row's fields) and, when ``rows`` is given, that many rows."""
    import io

    text = read_text(path, "file")
    try:
        table = pd.read_csv(io.StringIO(text))
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        raise ReportError(f"{path}: not a readable table ({str(exc).splitlines()[0]}); rerun the command") from None
    missing = [c for c in TABLE_COLUMNS.get(path.name, ()) if c not in table]
    if missing:
        raise ReportError(f"{path}: lacks column(s) {', '.join(missing)}; is it a table rlsim wrote? rerun the command")
    complete = [c for c in TABLE_COLUMNS.get(path.name, ()) if c not in ("error", "eval_metric")]
    if complete and table[complete].isna().any(axis=None):
        raise ReportError(f"{path}: a row misses values (a truncated file?); rerun the command that wrote it")
    if rows is not None and len(table) != rows:
        raise ReportError(
            f"{path}: {len(table)} row(s) where the summary says {rows} steps (a truncated file?); rerun the command"
        )
    return table


def build_report(directory: str | Path) -> tuple[str, list[tuple[str, Any]]]:
    """The HTML page for a sweep or run directory, and its (name, figure) pairs for PNG export."""
    d = Path(directory)
    needed = (
        ["sweep.json", "scenario.resolved.yaml"]
        if (d / "sweep.csv").is_file()
        else (["scenario.resolved.yaml"] if (d / "summary.json").is_file() else [])
    )
    missing = [n for n in needed if not (d / n).is_file()]
    if missing:
        raise ReportError(
            f"{d}: {', '.join(missing)} missing; point rlsim report at a complete -o directory of "
            "rlsim sweep or rlsim run"
        )
    if (d / "sweep.csv").is_file():
        meta = read_json(d / "sweep.json", _RERUN)
        scenario = read_yaml_mapping(d / "scenario.resolved.yaml", _RERUN)
        table = _read_table(d / "sweep.csv")
        curves = _read_table(d / "curves.csv") if (d / "curves.csv").is_file() else pd.DataFrame()
        engines = _read_table(d / "engine_curves.csv") if (d / "engine_curves.csv").is_file() else pd.DataFrame()
        figs = sweep_figures(table, curves, engines, scenario, meta.get("grid", {}))
        title = f"rlsim sweep: {scenario.get('name')}"
        summary_html = sweep_answer_html(table, scenario) + _table_html(table)
    elif (d / "summary.json").is_file() and (d / "steps.csv").is_file():
        meta = read_json(d / "summary.json", _RERUN)
        scenario = read_yaml_mapping(d / "scenario.resolved.yaml", _RERUN)
        steps = meta.get("steps")
        figs = run_figures(_read_table(d / "steps.csv", steps if isinstance(steps, int) else None), meta)
        title = f"rlsim run: {scenario.get('name')}"
        summary_html = run_answer_html(meta)
    else:
        raise ReportError(
            f"{d}: holds neither sweep.csv (from rlsim sweep -o) nor summary.json and steps.csv "
            "(from rlsim run -o); point rlsim report at one of those directories"
        )
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>",
        f"<p class='note'>{html.escape(scenario.get('description', '') or '')}</p>",
        "<h2>Answer</h2>",
        summary_html,
    ]
    for i, (name, caption, fig) in enumerate(figs):
        parts.append(f"<h2>{html.escape(name)}</h2><p class='note'>{html.escape(caption)}</p>")
        parts.append(fig.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False}))
    parts.append("<h2>Provenance</h2>" + _provenance(meta, scenario) + "</body></html>")
    return "\n".join(parts), [(name, fig) for name, _, fig in figs]


def find_chrome() -> str | None:
    """A Chrome or Chromium for kaleido's PNG export: $BROWSER_PATH, then the usual names on PATH."""
    env = os.environ.get("BROWSER_PATH")
    if env and Path(env).is_file():
        return env
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def export_pngs(figures: list[tuple[str, Any]], out_dir: Path) -> list[Path]:
    """Write one PNG per figure with kaleido; ReportError with a clear message when no Chrome is available."""
    chrome = find_chrome()
    if chrome is None:
        raise ReportError(
            "PNG export needs Chrome or Chromium for kaleido: install it (Debian: apt-get install "
            "chromium) or set BROWSER_PATH to its executable; the HTML report was written"
        )
    os.environ.setdefault("BROWSER_PATH", chrome)
    try:
        import kaleido  # noqa: F401
    except ImportError:
        raise ReportError(
            "PNG export needs kaleido: pip install 'rlsim[report]'; the HTML report was written"
        ) from None
    paths = []
    for i, (name, fig) in enumerate(figures, 1):
        slug = "".join(ch if ch.isalnum() else "_" for ch in name.lower()).strip("_")
        path = out_dir / f"fig{i}_{slug}.png"
        fig.write_image(str(path), width=1100, height=550)
        paths.append(path)
    return paths
