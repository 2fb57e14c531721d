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
gets the phase breakdown per step with the step time over it, the metric curve with its target, and provenance;
one from ``rlsim check -o DIR`` also its log's phases measured against predicted (check.json, rlsim.answers.check).
The figures are rlsim.answers.figures'; this module reads the directory, builds the page and writes it (and
PNGs through a headless Chromium); plotly is imported only when a figure is made.
"""

from __future__ import annotations

import html
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from rlsim import __version__
from rlsim.answers.answer import Answer, samples
from rlsim.answers.figures import ReportError, run_figures, sweep_figures
from rlsim.answers.report_answer import check_html, run_answer_html, sweep_answer_html
from rlsim.answers.sensitivity import table_html
from rlsim.answers.text import any_set, extrapolated_rows, thrashed_again, yes_no
from rlsim.io.files import read_json, read_text, read_yaml_mapping

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


# ---------------------------------------------------------------------------------------------- page


def _provenance(meta: dict[str, Any], scenario: dict[str, Any], table: pd.DataFrame | None = None) -> str:
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
    if meta.get("screen_thrash"):  # a sweep whose thrashing rows the fast thrash model simulated (rlsim.answers.sweep)
        again = meta.get("resimulated") or []  # of those, the ones that thrash
        again = ", ".join(map(str, thrashed_again(table, again) if table is not None else again)) or "none"
        rows.append(
            (
                "KV-cache thrash",
                f"rows that preempt simulated with the {meta['screen_thrash']} thrash model (column thrash_model in "
                f"sweep.csv); simulated again with the scenario's own: config {again}",
            )
        )
    rows += _screen_rows(meta, table)
    body = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows)
    assumptions = "".join(f"<li>{html.escape(a)}</li>" for a in scenario.get("assumptions", []))
    return (
        f"<table>{body}</table><h3>Assumptions of the scenario</h3><ul>{assumptions or '<li>none listed</li>'}"
        f"</ul><h3>Resolved scenario</h3><pre>{html.escape(yaml.safe_dump(scenario, sort_keys=False))}</pre>"
    )


def _screen_rows(meta: dict[str, Any], table: pd.DataFrame | None) -> list[tuple[str, str]]:
    """The provenance row of a screened sweep (rlsim.answers.sweep) whose table has extrapolated rows."""
    configs, steps = extrapolated_rows(table) if table is not None and meta.get("screened") else ([], "")
    if not configs:
        return []
    again = ", ".join(map(str, meta.get("resimulated") or [])) or "none"
    return [
        (
            "screen",
            f"config {', '.join(map(str, configs))} simulated for their first {steps} steps, the "
            "rest to the target extrapolated at the steady step time (column extrapolated; dashed curves); "
            f"simulated in full as the best: config {again}",
        )
    ]


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
        )
        if c in table
    ] + [c for c in ("extrapolated", "error") if any_set(table, c)]  # a column of nothing says nothing
    view = table[cols].copy()
    if "time_to_target_s" in view:
        view["time_to_target_s"] = [Answer.of(r).time_text for _, r in table.iterrows()]
        view = view.rename(columns={"time_to_target_s": "time to target (band)"})
    if "extrapolated" in view:
        view["extrapolated"] = yes_no(view["extrapolated"])
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
    table = None  # a sweep's
    if (d / "sweep.csv").is_file():
        meta = read_json(d / "sweep.json", _RERUN)
        scenario = read_yaml_mapping(d / "scenario.resolved.yaml", _RERUN)
        table = _read_table(d / "sweep.csv")
        curves = _read_table(d / "curves.csv") if (d / "curves.csv").is_file() else pd.DataFrame()
        engines = _read_table(d / "engine_curves.csv") if (d / "engine_curves.csv").is_file() else pd.DataFrame()
        figs = sweep_figures(table, curves, engines, scenario, meta.get("grid", {}))
        title = f"rlsim sweep: {scenario.get('name')}"
        summary_html = sweep_answer_html(table, scenario, meta.get("learning_sensitivity"))
        if meta.get("learning_sensitivity"):  # how much the answer rests on the learning side
            summary_html += "<h3>The learning side</h3>" + table_html(meta["learning_sensitivity"])
        summary_html += _table_html(table)
    elif (d / "summary.json").is_file() and (d / "steps.csv").is_file():
        meta = read_json(d / "summary.json", _RERUN)
        scenario = read_yaml_mapping(d / "scenario.resolved.yaml", _RERUN)
        steps = meta.get("steps")
        figs = run_figures(_read_table(d / "steps.csv", steps if isinstance(steps, int) else None), meta)
        title = f"rlsim run: {scenario.get('name')}"
        summary_html = run_answer_html(meta)
        if (d / "check.json").is_file():  # rlsim check -o DIR: the framework log against this prediction
            summary_html += "<h2>Measured against predicted</h2>" + check_html(read_json(d / "check.json", _RERUN))
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
    parts.append("<h2>Provenance</h2>" + _provenance(meta, scenario, table) + "</body></html>")
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
