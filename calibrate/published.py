"""Accuracy on published runs: predict each published RL step time with rlsim and compare.

Input: CSVs with the columns of ``calibrate/data/published/rl_step_times_dev.csv`` (the NeMo RL performance-table
rows, read its README): one row per published run, its recipe's fields and the measured ``step_time_s``. Each row
becomes a scenario through ``rlsim.frameworks.nemo_rl.scenario_from_recipe`` (the documented mapping); rows the
mapping cannot express are reported with the reason, not dropped silently.

A row's prediction is the steady-state mean step time of a short simulation: 4 steps for synchronous rows, 2k + 4
for async ones (the first and last k fill and drain the pipeline and are excluded, as rlsim's summary does).
Error = predicted / measured - 1. Summary: median |error|, median signed error (bias), share within 10% and 25%.

Every row gets the same cost coefficients, never a factor per row: by default the fitted set
``calibrate/data/published/fitted_costs.yaml`` (a few global coefficients fitted on this development set, with
its provenance in the file); ``costs_set="catalog"`` uses rlsim's plain defaults (``rlsim.scenario.Costs``, the
published-source values); ``--set costs.X=V`` overrides either for all rows at once.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

import rlsim
from calibrate import CalibrateError
from rlsim.errors import RlsimError
from rlsim.frameworks.nemo_rl import NotExpressible, scenario_from_recipe
from rlsim.phases import TIMED_PHASES
from rlsim.scenario import from_dict

REQUIRED_COLUMNS = ("model", "gpu", "num_gpus", "policy_mode", "step_time_s")


def fitted_costs_path() -> Path:
    return Path(str(resources.files("calibrate").joinpath("data/published/fitted_costs.yaml")))


def costs_set(name: str) -> dict[str, float]:
    """The cost coefficients every row gets: ``fitted`` (fitted_costs.yaml) or ``catalog`` (rlsim's defaults)."""
    if name == "catalog":
        return {}
    if name != "fitted":
        raise CalibrateError(f"--costs {name!r}: use fitted or catalog")
    data = yaml.safe_load(fitted_costs_path().read_text())
    return {k: float(v) for k, v in data["costs"].items()}


def check_costs(costs: dict[str, float]) -> None:
    """Every key a ``Costs`` field and every value inside its bounds, or a CalibrateError naming it."""
    import dataclasses

    from rlsim.scenario import Costs, check_bounds

    fields = {f.name: f for f in dataclasses.fields(Costs)}
    for key, value in costs.items():
        if key not in fields:
            raise CalibrateError(f"costs.{key} is not a costs field (one of: {', '.join(fields)})")
        try:
            check_bounds(value, f"costs.{key}", fields[key].metadata)
        except RlsimError as exc:
            raise CalibrateError(str(exc)) from None


def dev_set_path() -> Path:
    """The project's copy of the development set."""
    return Path(str(resources.files("calibrate").joinpath("data/published/rl_step_times_dev.csv")))


def read_csvs(paths: list[Path], required: tuple[str, ...], example: str) -> pd.DataFrame:
    """The rows of ``paths`` with ``file`` and ``row`` columns in front; a missing file or column is an error
    naming it and ``example`` (the development set whose columns to follow)."""
    frames = []
    for path in paths:
        if not Path(path).is_file():
            raise CalibrateError(f"{path}: no such file (give a CSV with the columns of {example})")
        try:
            df = pd.read_csv(path)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise CalibrateError(f"{path}: not a readable CSV ({str(exc).splitlines()[0]})") from None
        missing = [c for c in required if c not in df.columns]
        if missing:
            raise CalibrateError(f"{path}: missing column(s) {', '.join(missing)} (see {example} for the columns)")
        df = df.copy()
        df.insert(0, "file", Path(path).name)
        df.insert(1, "row", range(len(df)))
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def read_rows(paths: list[Path]) -> pd.DataFrame:
    return read_csvs(paths, REQUIRED_COLUMNS, dev_set_path().name)


def error_summary(errors_pct: list[float], n_rows: int) -> dict[str, Any]:
    """The accuracy keys both tables report, from the expressed rows' errors in percent."""
    errs = np.asarray(errors_pct, dtype=float)
    n = len(errs)
    return {
        "n_rows": n_rows,
        "n_expressed": n,
        "median_abs_error_pct": float(np.median(np.abs(errs))) if n else None,
        "bias_pct": float(np.median(errs)) if n else None,
        "mean_abs_error_pct": float(np.mean(np.abs(errs))) if n else None,
        "max_abs_error_pct": float(np.max(np.abs(errs))) if n else None,
        "within_10_pct": float(np.mean(np.abs(errs) <= 10)) if n else None,
        "within_25_pct": float(np.mean(np.abs(errs) <= 25)) if n else None,
    }


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
    (rlsim/frameworks/nemo_rl.py) gives NeMo RL's semantics (its refit, offload, engine defaults) to every row, so
    such a row is predicted with them and says so ("" for a NeMo RL row or one naming none)."""
    text = " ".join(str(fields.get(k) or "") for k in ("source", "source_version", "recipe", "framework")).lower()
    if "nemo" in text:
        return ""
    for name in OTHER_FRAMEWORKS:
        if re.search(rf"(?<![a-z]){re.escape(name)}(?![a-z])", text):
            return (
                f"the row names framework {name!r}, predicted with NeMo RL's mapping (rlsim/frameworks/nemo_rl.py: "
                "its weight refit, offload and engine defaults); its own config through rlsim import-config is closer"
            )
    return ""


def predict_row(fields: dict[str, Any], costs: dict[str, float] | None = None) -> tuple[float, dict[str, float]]:
    """Predicted steady-state step time and mean phase times of one published row."""
    raw = scenario_from_recipe(fields, steps=steps_for(fields))
    if costs:
        raw["costs"] = dict(costs)
    summary = rlsim.simulate(from_dict(raw)).summary()
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


# ---------------------------------------------------------------------------------------------------- both tables


def split_inputs(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """Step-time CSVs and generation CSVs among ``paths``, told apart by their columns."""
    from calibrate import published_generation as gen

    steps, gens = [], []
    for path in paths:
        if not Path(path).is_file():
            raise CalibrateError(f"{path}: no such file (give a CSV with the columns of {dev_set_path().name})")
        try:
            cols = set(pd.read_csv(path, nrows=0).columns)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise CalibrateError(f"{path}: not a readable CSV ({str(exc).splitlines()[0]})") from None
        if "output_tok_per_s" in cols:
            gens.append(Path(path))
        elif "step_time_s" in cols:
            steps.append(Path(path))
        else:
            raise CalibrateError(
                f"{path}: neither a step-time table (column step_time_s, see {dev_set_path().name}) nor a "
                f"generation table (column output_tok_per_s, see {gen.dev_set_path().name})"
            )
    return steps, gens


def log_residuals(step_df: pd.DataFrame | None, gen_df: pd.DataFrame | None, costs: dict[str, float]) -> np.ndarray:
    """log(predicted / measured) of every expressed row of both tables (what a default-set fit minimizes)."""
    from calibrate import published_generation as gen

    res = []
    if step_df is not None and len(step_df):
        res += [math.log(r.predicted_s / r.measured_s) for r in evaluate(step_df, costs) if r.expressed]
    if gen_df is not None and len(gen_df):
        res += [math.log(r.predicted / r.measured) for r in gen.evaluate(gen_df, costs) if r.expressed]
    return np.array(res)


def split_fitted(values: dict[str, float]) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """(costs fields, {behaviour: {field: value}}) of a fitted set whose keys are costs fields or BEHAVIOUR.FIELD
    (what fit_costs returns; engine behaviours go to ``rlsim.catalog.engine_overrides``)."""
    costs: dict[str, float] = {}
    engines: dict[str, dict[str, float]] = {}
    for name, value in values.items():
        beh, _, key = name.rpartition(".")
        if beh:
            engines.setdefault(beh, {})[key] = value
        else:
            costs[key] = value
    return costs, engines


def fit_costs(
    step_df: pd.DataFrame | None,
    gen_df: pd.DataFrame | None,
    names: list[str],
    base: dict[str, float],
) -> dict[str, float]:
    """One set of the named coefficients for every row: least squares on log(predicted / measured) over both
    tables, starting from ``base`` (or rlsim's defaults), within each field's bounds. A name is a ``costs`` field
    or ``BEHAVIOUR.FIELD`` for a named engine behaviour's coefficient (rlsim/catalog/engines.yaml); the result
    holds both kinds under their names."""
    import dataclasses

    from scipy.optimize import least_squares

    from rlsim import catalog
    from rlsim.scenario import Costs

    fields = {f.name: f for f in dataclasses.fields(Costs)}
    start, lo, hi = [], [], []
    for n in names:
        beh, _, key = n.rpartition(".")
        if key not in fields or (beh and beh not in catalog.engine_names()):
            raise CalibrateError(
                f"--fit {n!r} is neither a costs field nor BEHAVIOUR.FIELD with a behaviour of engines.yaml "
                f"({', '.join(catalog.engine_names())})"
            )
        meta = fields[key].metadata
        value = base.get(n)
        if value is None:  # where the behaviour has no value of its own, it takes the costs field's
            value = base.get(key, getattr(Costs(), key))
            if beh:
                value = catalog.engine(beh).get(key, value)
        start.append(float(value))
        lo.append(float(meta.get("ge", meta.get("gt", 0.0))) + (1e-12 if "gt" in meta else 0.0))
        hi.append(float(meta.get("le", meta.get("lt", math.inf))))
    scales = np.array([max(abs(v), 1e-4) for v in start])  # a field at 0 still moves by a useful step

    def residual(x: np.ndarray) -> np.ndarray:
        costs, engines = split_fitted({**base, **{n: float(v) for n, v in zip(names, x * scales)}})
        with catalog.engine_overrides(engines):
            return log_residuals(step_df, gen_df, costs)

    if not len(residual(np.array(start) / scales)):
        raise CalibrateError("--fit: no row of the inputs is expressible, so nothing constrains the fit")
    fit = least_squares(
        residual,
        np.array(start) / scales,
        bounds=(np.array(lo) / scales, np.array(hi) / scales),
        diff_step=0.05,
        loss="soft_l1",  # robust: a few rows far off should not drag the rest
        f_scale=0.1,
        max_nfev=40,
    )
    return {**base, **{n: float(v) for n, v in zip(names, fit.x * scales)}}
