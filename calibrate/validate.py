"""Validation: run rlsim on the configuration of each measured run and compare prediction with measurement.

A run directory holds ``runlog.jsonl`` (the shared schema) and either

* ``config.json`` + ``environment.json`` from ``rlsim-real train`` (the scenario is built from them: the model
  folder's architecture, the catalog entry of the device, P, G, mini-batches, epochs, KL, and the mean prompt
  and response lengths the log measured), or
* ``scenario.yaml``: an rlsim scenario describing the run (for logs imported from verl, OpenRLHF, TRL, NeMo RL);
  P, G and the mean lengths are taken from the log when it has them.

Measured: mean step time (gaps between consecutive ``wall_s``; the first step, which pays warm-ups, is
excluded), mean seconds per phase, samples/s, and time-to-target (``wall_s`` of the first step whose
``eval_metric`` reaches the target). Predicted: the same from ``rlsim.simulate`` with the profile, simulating as
many steps as the run logged; time-to-target uses the learning model fitted on the reference run (the metric
curve in samples; batch multiplier invariant unless the profile's learning part says otherwise).
"""

from __future__ import annotations

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
from rlsim.scenario import Scenario, from_dict


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
    prompt_len = max(1, round(sum(r["prompt_tokens"] for r in records) / sum(r["responses"] for r in records)))
    resp_len = max(1, round(sum(r["response_tokens"] for r in records) / sum(r["responses"] for r in records)))
    prompts, responses = int(records[0]["prompts"]), int(records[0]["responses"])
    group = max(1, responses // max(1, prompts))
    workload = {
        "prompts_per_step": prompts,
        "group_size": group,
        "prompt_length": {"dist": "fixed", "tokens": prompt_len},
        "response_length": {"dist": "fixed", "tokens": resp_len},
        "max_prompt_tokens": max(prompt_len, 1),
        "max_response_tokens": max(resp_len, 1),
    }
    if (p / "scenario.yaml").is_file():
        raw = yaml.safe_load((p / "scenario.yaml").read_text())
        raw.setdefault("workload", {}).update(workload)
        raw.setdefault("run", {})["steps"] = len(records)
        return Run(p, records, from_dict(raw), "imported")
    if (p / "config.json").is_file() and (p / "environment.json").is_file():
        cfg = json.loads((p / "config.json").read_text())
        env = json.loads((p / "environment.json").read_text())
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
        for r in recs:
            if r["eval_metric"] is not None and r["eval_metric"] >= target:
                out["time_to_target_s"] = float(r["wall_s"])
                out["samples_to_target"] = float(r["cumulative_samples"])
                break
    return out


def learning_from_run(run: Run, target: float) -> dict[str, Any]:
    """A learning section fitted on one run: the ScaleRL sigmoid of its eval metric in samples."""
    from calibrate.learning_fit import fit_sigmoid

    pts = [(r["cumulative_samples"], r["eval_metric"]) for r in run.records if r["eval_metric"] is not None]
    initial = run.records[0].get("eval_metric_initial")
    if initial is not None:
        pts = [(0.0, float(initial)), *pts]
    samples = np.array([s for s, _ in pts], dtype=float)
    metric = np.array([m for _, m in pts], dtype=float)
    keep = samples > 0
    fit = fit_sigmoid(samples[keep], metric[keep], r0=float(metric[0]) if initial is not None else None)
    curve = fit.to_metric_curve()
    asymptote = max(curve.asymptote, target + 1e-3)
    return {
        "metric": {
            "initial": curve.initial,
            "asymptote": asymptote,
            "mid_samples": curve.mid_samples,
            "exponent": curve.exponent,
        },
        "target": target,
        "reference_batch": run.batch,
        "batch_multiplier": {"form": "invariant"},
    }


def predicted(run: Run, profile: Profile | None, learning: dict[str, Any] | None) -> dict[str, Any]:
    from rlsim.simulation import simulate

    scn = run.scenario
    if learning is not None:
        lr = {**scn.learning.__dict__}
        lr.pop("metric", None)
        over = {
            "learning.metric": learning["metric"],
            "learning.target": learning["target"],
            "learning.reference_batch": learning["reference_batch"],
            "learning.lr_rule": scn.learning.lr_rule,
            "learning.invariant_rule": scn.learning.lr_rule,
            "learning.batch_multiplier": learning["batch_multiplier"],
            "run.until_target": True,
        }
        scn = scn.with_overrides(over)
    res = simulate(scn, profile=profile)
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
    learning_from: str | Path | None = None,
    gpu: str | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Compare each run with its prediction; returns a table (one row per run) and the details."""
    runs = [load_run(d, gpu) for d in run_dirs]
    learning = None
    ref_name = None
    if target is not None:
        ref = next((r for r in runs if Path(learning_from or runs[0].path).resolve() == r.path.resolve()), None)
        if ref is None:
            ref = load_run(learning_from, gpu)  # type: ignore[arg-type]
        learning = learning_from_run(ref, target)
        ref_name = ref.path.name
    rows, details = [], {"learning": learning, "reference_run": ref_name, "runs": {}}
    for run in runs:
        m, p = measured(run, target), predicted(run, profile, learning)
        row = {
            "run": run.path.name,
            "kind": run.kind,
            "prompts_per_step": run.records[0]["prompts"],
            "responses_per_step": run.batch,
            "held_out": run.path.name != ref_name,
            "measured_step_time_s": m["step_time_s"],
            "predicted_step_time_s": p["step_time_s"],
            "step_time_error": _err(p["step_time_s"], m["step_time_s"]),
            "measured_samples_per_s": m["samples_per_s"],
            "predicted_samples_per_s": p["samples_per_s"],
            "throughput_error": _err(p["samples_per_s"], m["samples_per_s"]),
            "measured_time_to_target_s": m["time_to_target_s"],
            "predicted_time_to_target_s": p["time_to_target_s"],
            "time_to_target_error": _err(p["time_to_target_s"], m["time_to_target_s"]),
        }
        for phase in TIMED_PHASES:
            mv, pv = m["phase_time_s"][phase.value], p["phase_time_s"][phase.value]
            if mv > 0 or pv > 0:
                row[f"measured_s/{phase.value}"] = mv
                row[f"predicted_s/{phase.value}"] = pv
        rows.append(row)
        details["runs"][run.path.name] = {"measured": m, "predicted": p}
    table = pd.DataFrame(rows)
    held = table[table["held_out"]] if table["held_out"].any() else table
    details["summary"] = {
        "mean_abs_step_time_error_held_out": float(held["step_time_error"].abs().mean()),
        "max_abs_step_time_error_held_out": float(held["step_time_error"].abs().max()),
        "mean_abs_time_to_target_error_held_out": (
            float(held["time_to_target_error"].abs().mean()) if held["time_to_target_error"].notna().any() else None
        ),
        "max_abs_time_to_target_error_held_out": (
            float(held["time_to_target_error"].abs().max()) if held["time_to_target_error"].notna().any() else None
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
