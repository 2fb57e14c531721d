"""The tables of published runs: the project's copies (``data/``), reading CSVs of published rows, telling the
step-time tables from the generation tables, and the accuracy keys both report.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calibrate import CalibrateError

STEP_DEV_SET = "rl_step_times_dev.csv"  # the development set of RL step times (calibrate.published.steps)
GENERATION_DEV_SET = "gen_throughput_dev.csv"  # the development set of generation throughput (.generation)


def data_path(name: str) -> Path:
    """The project's copy of a published-run file, ``calibrate/published/data/NAME`` (its README says what each is)."""
    return Path(str(resources.files("calibrate.published") / "data" / name))


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


def split_inputs(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """Step-time CSVs and generation CSVs among ``paths``, told apart by their columns."""
    steps, gens = [], []
    for path in paths:
        if not Path(path).is_file():
            raise CalibrateError(f"{path}: no such file (give a CSV with the columns of {STEP_DEV_SET})")
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
                f"{path}: neither a step-time table (column step_time_s, see {STEP_DEV_SET}) nor a "
                f"generation table (column output_tok_per_s, see {GENERATION_DEV_SET})"
            )
    return steps, gens


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
