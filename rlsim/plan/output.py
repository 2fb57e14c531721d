"""What ``rlsim plan -o DIR`` writes (the CLI and this module write files; the search does not):

* ``plan.csv``: one row per configuration tried: its axes, status (ok / pruned / bounded: not screened, its lower
  bounds lose, rlsim.plan.bound) and reason, feasibility and why
  not, the screened or full numbers (``fidelity``), cost, the bounding phase, baseline / winner / Pareto flags
  and the overrides as JSON (``overrides``: dotted scenario keys, what ``rlsim run --set`` takes);
* ``plan.json``: the objective, constraints, prices with their sources, the axes, the baseline, the winner, the
  Pareto front, the explanation, notes and provenance (rlsim version, scenario name and hash, command);
* ``scenario.resolved.yaml`` (the scenario as given) and ``winner.yaml`` (the winner as a scenario to run);
* ``report.html``: one offline page (plotly embedded): the Pareto front of time-to-target vs cost, the winner's
  and the baseline's phase breakdown, the explanation and provenance.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from rlsim import __version__
from rlsim.answers.answer import Answer, gpu_hours, samples
from rlsim.answers.figures import PHASE_COLORS, plotly_modules
from rlsim.answers.report import CSS
from rlsim.answers.sensitivity import table_html
from rlsim.io.files import atomic_write, atomic_write_text
from rlsim.phases import TIMED_PHASES
from rlsim.plan.explain import describe
from rlsim.plan.search import PlanResult
from rlsim.scenario import apply_overrides, from_dict

PLAN_COLUMNS = ("config", "status", "feasible", "objective", "time_to_target_s", "overrides")


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):  # numpy scalars
        return _plain(value.item())
    return value


def plan_table(result: PlanResult) -> pd.DataFrame:
    """``result.table`` with the overrides as a JSON column (what plan.csv holds)."""
    t = result.table.copy()
    t["overrides"] = [json.dumps(o, sort_keys=True) for o in result.config_overrides]
    t["objective"] = t["objective"].map(lambda v: None if not math.isfinite(v) else v)
    return t


def winner_scenario(result: PlanResult) -> dict[str, Any] | None:
    """The winner as a scenario (plain data), or None when nothing is feasible."""
    if result.winner is None:
        return None

    raw = apply_overrides(result.scenario.to_dict(), result.overrides(result.winner))
    scn = from_dict(raw)
    data = scn.to_dict()
    data["name"] = f"{result.scenario.name}_planned"
    data["description"] = f"rlsim plan's winner for {result.scenario.name} (objective {result.objective})"
    return data


def plan_json(result: PlanResult, explanation: list[str], command: str) -> dict[str, Any]:
    t = result.table

    def brief(i: int | None) -> dict[str, Any] | None:
        if i is None:
            return None
        row = t.loc[t["config"] == i].iloc[0]
        keys = ("samples_per_s", "samples_to_target", "time_to_target_s", "gpu_hours_to_target", "cost_usd")
        return {
            "config": i,
            "overrides": result.overrides(i),
            "fidelity": row.get("fidelity"),
            **{k: _plain(row.get(k)) for k in keys},
        }

    return {
        "rlsim_version": __version__,
        "scenario": result.scenario.name,
        "scenario_hash": result.scenario.digest(),
        "command": command,
        "objective": result.objective,
        "constraints": result.constraints,
        "prices": result.prices,
        "space": result.space.describe(),
        "configurations": len(t),
        "pruned": int((t["status"] == "pruned").sum()),
        "not_screened": int((t["status"] == "bounded").sum()),  # lower bounds lose (rlsim.plan.bound)
        "feasible": int(t["feasible"].sum()),
        "full_simulations": int((t.get("fidelity") == "full").sum()) if "fidelity" in t else 0,
        "baseline": brief(result.baseline),
        "winner": brief(result.winner),
        "pareto": [brief(i) for i in result.pareto],
        "explanation": explanation,
        "notes": result.notes,
        "learning_sensitivity": result.sensitivity,  # rlsim.plan.sensitivity
    }


def _front_caption(result: PlanResult, ylabel: str) -> str:
    """What the Pareto figure plots, and what it leaves out: the configurations not screened (rlsim.plan.bound)."""
    bounded = int((result.table["status"] == "bounded").sum())
    unseen = (
        f"; {bounded:,} configurations were not screened: a screened one beats their lower bounds (generation free) "
        "on both axes, or those bounds break a constraint, so none of them is on the front (--exhaustive screens "
        "them)"
        if bounded
        else ""
    )
    return (
        f"every feasible configuration screened (finalists simulated in full): time-to-target against {ylabel}; "
        f"the front holds those no other configuration beats on both{unseen}"
    )


def _figures(result: PlanResult) -> list[tuple[str, str, Any]]:
    go, _ = plotly_modules()
    t = result.table[result.table["feasible"]].copy()
    ycol = "cost_usd" if t["cost_usd"].notna().any() else "gpu_hours_to_target"
    ylabel = "cost to target (US$)" if ycol == "cost_usd" else "GPU-hours to target"
    t["ttt_h"] = t["time_to_target_s"] / 3600
    figs: list[tuple[str, str, Any]] = []
    fig = go.Figure()
    text = [
        f"config {r.config}: P={r.prompts_per_step} {r.lr_rule} {r.schedule} TP{r.engine_tp} {r.num_gpus}x{r.gpu}"
        for r in t.itertuples()
    ]
    fig.add_trace(
        go.Scatter(
            x=t["ttt_h"], y=t[ycol], mode="markers", name="feasible", text=text, marker={"color": "#bbb", "size": 5}
        )
    )
    front = t[t["pareto"]].sort_values("ttt_h")
    fig.add_trace(
        go.Scatter(
            x=front["ttt_h"],
            y=front[ycol],
            mode="lines+markers",
            name="Pareto front",
            marker={"color": "#4C78A8", "size": 8},
        )
    )
    for flag, name, color in (("baseline", "your configuration", "#E45756"), ("winner", "winner", "#54A24B")):
        sel = t[t[flag]]
        if len(sel):
            fig.add_trace(
                go.Scatter(
                    x=sel["ttt_h"],
                    y=sel[ycol],
                    mode="markers",
                    name=name,
                    marker={"color": color, "size": 14, "symbol": "star"},
                )
            )
    # log axes: a plan's times and costs span orders of magnitude, and the front sits at the low end
    fig.update_layout(xaxis_title="time-to-target (h)", yaxis_title=ylabel, height=480)
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    figs.append(("Pareto front", _front_caption(result, ylabel), fig))
    bars = go.Figure()
    shown = [(result.baseline, "your configuration")]
    if result.winner is not None and result.winner != result.baseline:
        shown.append((result.winner, "winner"))
    for phase in TIMED_PHASES:
        col = f"phase_time_s/{phase.value}"
        if col not in result.table:
            continue
        ys = [result.row(i).get(col) for i, _ in shown]
        if all(not isinstance(y, (int, float)) or pd.isna(y) or y == 0 for y in ys):
            continue
        bars.add_trace(
            go.Bar(x=[name for _, name in shown], y=ys, name=phase.value, marker_color=PHASE_COLORS[phase.value])
        )
    bars.update_layout(barmode="group", yaxis_title="seconds per step", height=420)
    figs.append(
        (
            "Phase breakdown",
            "mean seconds per step in each phase (phases overlap under async schedules and separate pools)",
            bars,
        )
    )
    return figs


def answer_html(result: PlanResult, patch: list[str] | None = None) -> str:
    """The plan's answer first: a sentence, yours against the recommendation in a small table, and the change to
    make (the keys that differ, as --set flags, and the framework patch when --emit wrote one)."""
    if result.winner is None:
        return "<p class='answer'>No configuration meets the constraints; plan.csv says why each was refused.</p>"
    base, win = result.row(result.baseline), result.row(result.winner)
    # the winner's band with the learning presets' spread (rlsim.answers.sensitivity), as the text says it
    ab, aw = Answer.of(base), Answer.of(win).with_learning(result.sensitivity)
    if result.winner == result.baseline:
        ab = aw
    if result.winner == result.baseline:
        text = f"Keep your configuration: no configuration searched beats it. {ab.sentence()}."
    else:
        faster = base["time_to_target_s"] / win["time_to_target_s"]
        text = (
            f"Run {describe(win)}: time-to-target {aw.time_text} against your {ab.time_text}, "
            f"{faster:.2f}x sooner"
            + (f", ${win['cost_usd']:,.0f} against ${base['cost_usd']:,.0f}" if ab.cost_usd and aw.cost_usd else "")
            + "."
        )
    rows = [
        ("time to target", ab.time_text, aw.time_text),
        ("throughput", f"{ab.samples_per_s:,.2f} samples/s", f"{aw.samples_per_s:,.2f} samples/s"),
        ("samples to target", samples(ab.samples_to_target), samples(aw.samples_to_target)),
        ("GPU-hours", gpu_hours(ab.gpu_hours_to_target), gpu_hours(aw.gpu_hours_to_target)),
        ("cost", *(f"${a.cost_usd:,.0f}" if a.cost_usd is not None else "-" for a in (ab, aw))),
    ]
    table = "<table><tr><th></th><th>yours</th><th>recommended</th></tr>" + "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(y)}</td><td>{html.escape(w)}</td></tr>" for k, y, w in rows
    )
    table += "</table>"
    yours, theirs = result.overrides(result.baseline), result.overrides(result.winner)
    changed = [k for k in theirs if theirs[k] != yours.get(k) and theirs[k] is not None]
    out = f"<p class='answer'>{html.escape(text)}</p>{table}"
    if changed:
        out += "<h3>The change to make</h3><table><tr><th>key</th><th>yours</th><th>recommended</th></tr>"
        out += "".join(
            f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(yours.get(k, '-')))}</td>"
            f"<td>{html.escape(str(theirs[k]))}</td></tr>"
            for k in changed
        )
        flags = " ".join(f"--set {k}={_plain_text(theirs[k])}" for k in changed)
        out += (
            f"</table><p class='note'>To simulate it: <code>rlsim run SCENARIO.yaml {html.escape(flags)}</code> "
            "with your scenario file, or <code>rlsim run winner.yaml</code> (written beside this page).</p>"
        )
    if patch:
        out += "<h3>The patch for your framework</h3><pre>" + html.escape("\n".join(patch)) + "</pre>"
    return out


def _plain_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def plan_report(
    result: PlanResult, explanation: list[str], command: str, patch: list[str] | None = None
) -> tuple[str, list[tuple[str, Any]]]:
    """The HTML page of a plan and its (name, figure) pairs; ``patch``: the framework overrides --emit wrote."""
    figs = _figures(result)
    meta = plan_json(result, explanation, command)
    title = f"rlsim plan: {result.scenario.name} (objective {result.objective})"
    prices = "".join(
        f"<tr><th>{html.escape(g)}</th><td>{html.escape(str(p.get('usd_per_gpu_hour')))}</td>"
        f"<td>{html.escape(str(p.get('offer', '-')))}</td><td>{html.escape(str(p.get('source', '-')))}</td>"
        f"<td>{html.escape(str(p.get('date', '-')))}</td></tr>"
        for g, p in result.prices.items()
    )
    prov = [
        ("rlsim version", __version__),
        ("scenario", f"{result.scenario.name} ({result.scenario.digest()})"),
        ("command", command),
        ("constraints", json.dumps(result.constraints)),
        (
            "configurations",
            f"{meta['configurations']} ({meta['pruned']} pruned, {meta['not_screened']} not screened: their lower "
            f"bounds lose, {meta['feasible']} feasible of those screened)",
        ),
        ("searched", "; ".join(result.space.describe())),
    ]
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>",
        "<h2>Answer</h2>" + answer_html(result, patch),
        *(["<h2>The learning side</h2>" + table_html(result.sensitivity)] if result.sensitivity is not None else []),
        "<h2>Why</h2><details><summary>the whole explanation, as the terminal printed it</summary><pre>"
        + html.escape("\n".join(explanation))
        + "</pre></details>",
    ]
    for i, (name, caption, fig) in enumerate(figs):
        parts.append(f"<h2>{html.escape(name)}</h2><p class='note'>{html.escape(caption)}</p>")
        parts.append(fig.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False}))
    parts.append(
        "<h2>Prices</h2><table><tr><th>GPU</th><th>US$/GPU-hour</th><th>offer</th><th>source</th><th>date</th></tr>"
        + prices
        + "</table>"
    )
    parts.append(
        "<h2>Provenance</h2><table>"
        + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in prov)
        + "</table>"
        + "".join(f"<p class='note'>{html.escape(n)}</p>" for n in result.notes)
        + "</body></html>"
    )
    return "\n".join(parts), [(name, fig) for name, _, fig in figs]


def write_plan(
    result: PlanResult, out: Path, explanation: list[str], command: str, patch: list[str] | None = None
) -> list[Path]:
    """Write the plan's files into ``out`` (module docstring); returns their paths."""
    out.mkdir(parents=True, exist_ok=True)

    table = plan_table(result)
    atomic_write(out / "plan.csv", lambda p: table.to_csv(p, index=False))
    meta = plan_json(result, explanation, command)
    files = {
        "plan.json": json.dumps(meta, indent=2, allow_nan=False, default=_plain) + "\n",
        "scenario.resolved.yaml": yaml.safe_dump(result.scenario.to_dict(), sort_keys=False),
    }
    win = winner_scenario(result)
    if win is not None:
        files["winner.yaml"] = yaml.safe_dump(win, sort_keys=False)
    files["report.html"] = plan_report(result, explanation, command, patch)[0]
    for name, text in files.items():
        atomic_write_text(out / name, text)
    return [out / "plan.csv", *(out / name for name in files)]
