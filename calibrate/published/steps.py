"""Accuracy on published runs: predict each published RL step time with rlsim and compare.

Input: CSVs with the columns of ``calibrate/published/data/rl_step_times_dev.csv`` (the NeMo RL performance-table
rows, read its README): one row per published run, its recipe's fields and the measured ``step_time_s``. Each row
becomes a scenario through ``rlsim.frameworks.nemo_rl.recipe.scenario_from_recipe`` (the documented mapping); rows the
mapping cannot express are reported with the reason, not dropped silently.

A row's prediction is the steady-state mean step time of a short simulation: 4 steps for synchronous rows, 2k + 4
for async ones (the first and last k fill and drain the pipeline and are excluded, as rlsim's summary does).
Error = predicted / measured - 1. Summary: median |error|, median signed error (bias), share within 10% and 25%.
Every row gets the same cost coefficients (calibrate.published.costs).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

import rlsim
from calibrate.published.tables import STEP_DEV_SET, data_path, error_summary, read_csvs
from rlsim.errors import RlsimError
from rlsim.frameworks.nemo_rl.recipe import NotExpressible, scenario_from_recipe
from rlsim.phases import TIMED_PHASES
from rlsim.scenario import Scenario, from_dict

REQUIRED_COLUMNS = ("model", "gpu", "num_gpus", "policy_mode", "step_time_s")


def dev_set_path() -> Path:
    """The project's copy of the development set."""
    return data_path(STEP_DEV_SET)


def read_rows(paths: list[Path]) -> pd.DataFrame:
    return read_csvs(paths, REQUIRED_COLUMNS, dev_set_path().name)


@dataclass
class RowResult:
    file: str
    row: int
    label: str
    measured_s: float
    predicted_s: float | None = None
    phases_s: dict[str, float] = field(default_factory=dict)
    reason: str = ""

    @property
    def expressed(self) -> bool:
        return self.predicted_s is not None

    @property
    def error_pct(self) -> float | None:
        return None if self.predicted_s is None else (self.predicted_s / self.measured_s - 1.0) * 100.0


def steps_for(fields: dict[str, Any]) -> int:
    mode = str(fields.get("policy_mode", "on"))
    k = int(mode[6:-3]) if mode.startswith("async-") and mode[6:-3].isdigit() else 0
    return 4 + 2 * k


OTHER_FRAMEWORKS = ("verl", "openrlhf", "trl", "slime", "areal", "roll", "skyrl", "prime-rl", "deepspeed-chat")


def framework_note(fields: dict[str, Any]) -> str:
    """What to say of a row that names an RL framework other than NeMo RL: this table's mapping
    (rlsim/frameworks/nemo_rl/recipe.py) gives NeMo RL's semantics (its refit, offload, engine defaults) to every
    row, so such a row is predicted with them and says so ("" for a NeMo RL row or one naming none)."""
    text = " ".join(str(fields.get(k) or "") for k in ("source", "source_version", "recipe", "framework")).lower()
    if "nemo" in text:
        return ""
    for name in OTHER_FRAMEWORKS:
        if re.search(rf"(?<![a-z]){re.escape(name)}(?![a-z])", text):
            return (
                f"the row names framework {name!r}, predicted with NeMo RL's mapping "
                "(rlsim/frameworks/nemo_rl/recipe.py: its weight refit, offload and engine defaults); its own config "
                "through rlsim import-config is closer"
            )
    return ""


def row_scenario(fields: dict[str, Any], costs: dict[str, float] | None = None) -> Scenario:
    """The scenario of one published row, simulated for ``steps_for`` steps, with ``costs`` in its costs section."""
    raw = scenario_from_recipe(fields, steps=steps_for(fields))
    if costs:
        raw["costs"] = dict(costs)
    return from_dict(raw)


def predict_row(fields: dict[str, Any], costs: dict[str, float] | None = None) -> tuple[float, dict[str, float]]:
    """Predicted steady-state step time and mean phase times of one published row."""
    summary = rlsim.simulate(row_scenario(fields, costs)).summary()
    return summary["step_time_s"], {p.value: summary["phase_time_s"][p.value] for p in TIMED_PHASES}


def evaluate(df: pd.DataFrame, costs: dict[str, float] | None = None) -> list[RowResult]:
    out = []
    for rec in df.to_dict("records"):
        gpus = rec.get("num_gpus")
        gpus = f"{gpus:g}" if isinstance(gpus, (int, float)) else str(gpus)
        label = f"{rec.get('model')} {gpus}x {rec.get('policy_mode')} ({rec.get('source_version', '')})"
        measured = rec.get("step_time_s")
        res = RowResult(str(rec["file"]), int(rec["row"]), label, float("nan"))
        try:
            measured = float(measured)
        except (TypeError, ValueError):
            measured = float("nan")
        res.measured_s = measured
        if not math.isfinite(measured) or measured <= 0:
            res.reason = f"step_time_s {rec.get('step_time_s')!r} is not a positive number"
            out.append(res)
            continue
        try:
            res.predicted_s, res.phases_s = predict_row(rec, costs)
            res.reason = framework_note(rec)  # an expressed row's reason is a note on how it was mapped
        except NotExpressible as exc:
            res.reason = str(exc)
        except RlsimError as exc:  # a scenario the mapping built but rlsim refuses (memory, layout)
            res.reason = f"refused by rlsim: {exc}"
        out.append(res)
    return out


def summarize(results: list[RowResult]) -> dict[str, Any]:
    step = error_summary([r.error_pct for r in results if r.expressed], len(results))
    step["not_expressed"] = [
        {"file": r.file, "row": r.row, "run": r.label, "reason": r.reason} for r in results if not r.expressed
    ]
    return step


def table(results: list[RowResult]) -> pd.DataFrame:
    rows = []
    for r in results:
        row: dict[str, Any] = {
            "file": r.file,
            "row": r.row,
            "run": r.label,
            "measured_step_s": r.measured_s,
            "predicted_step_s": r.predicted_s,
            "error_pct": r.error_pct,
            "expressed": r.expressed,
            "reason": r.reason,
        }
        for p in TIMED_PHASES:
            row[f"predicted_{p.value}_s"] = r.phases_s.get(p.value)
        rows.append(row)
    return pd.DataFrame(rows)
