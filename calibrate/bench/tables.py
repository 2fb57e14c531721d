"""Reading measurements: benchmark tables (from ``rlsim-real bench``) and model folders, with input checks.

A bench table is tidy: one row per measured repeat with at least ``phase``, ``device``, ``time_s`` and the
configuration columns of that phase (``concurrency``, ``prompt_tokens``, ``response_tokens`` for rollout;
``tokens``, ``sequences`` for train_actor / old_logprob; ``bytes`` for weight_sync) and a ``provenance`` JSON
column; these columns are defined once, in ``rlsim.io.records``. Fitting refuses tables it cannot trust: NaN,
infinite, zero or negative times, rows of several devices mixed in one fit, and phases with too few distinct
configurations.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calibrate import CalibrateError
from rlsim import catalog
from rlsim.io.records import BENCH_PHASE_COLUMNS, BENCH_REQUIRED_COLUMNS


def load_bench_tables(paths: list[str | Path]) -> pd.DataFrame:
    """Concatenate CSV/Parquet bench tables and check them (CalibrateError naming file and row on bad input)."""
    frames = []
    for p in map(Path, paths):
        if not p.is_file():
            raise CalibrateError(f"{p}: no such file; give bench.csv or bench.parquet from rlsim-real bench -o DIR")
        try:
            df = pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
        except Exception as exc:  # noqa: BLE001 - any reader failure is the user's file
            raise CalibrateError(f"{p}: cannot be read as a table ({type(exc).__name__}: {exc})") from None
        missing = [c for c in BENCH_REQUIRED_COLUMNS if c not in df]
        if missing:
            raise CalibrateError(f"{p}: missing column(s) {', '.join(missing)}; is it a table from rlsim-real bench?")
        if df.empty:
            raise CalibrateError(f"{p}: has a header but no rows; rerun the benchmark (rlsim-real bench ... -o DIR)")
        df = df.copy()
        df["source_file"] = str(p)
        df["source_row"] = np.arange(len(df)) + 2  # 1-based, after the header line
        frames.append(df)
    if not frames:
        raise CalibrateError("no bench table given; pass one or more bench.csv files")
    table = pd.concat(frames, ignore_index=True)
    check_table(table)
    return table


def check_table(table: pd.DataFrame) -> None:
    t = pd.to_numeric(table["time_s"], errors="coerce")
    bad = table[~np.isfinite(t) | (t <= 0)]
    if len(bad):
        row = bad.iloc[0]
        raise CalibrateError(
            f"{row.get('source_file', 'table')}:{row.get('source_row', '?')}: time_s {str(row['time_s'])!r} is NaN, "
            f"infinite or not positive ({len(bad)} such row(s)); remove them or rerun the benchmark"
        )
    devices = sorted(set(table["device"].astype(str)))
    if len(devices) > 1:
        raise CalibrateError(f"the tables mix devices ({'; '.join(devices)}); fit one device at a time")
    unknown = sorted(set(table["phase"]) - set(BENCH_PHASE_COLUMNS))
    if unknown:
        raise CalibrateError(
            f"unknown phase(s) {', '.join(map(str, unknown))}; bench phases are {', '.join(BENCH_PHASE_COLUMNS)}"
        )
    for phase, cols in BENCH_PHASE_COLUMNS.items():
        rows = table[table["phase"] == phase]
        for c in cols:
            if not len(rows):
                continue
            values = pd.to_numeric(rows[c], errors="coerce") if c in rows else None
            bad = rows if values is None else rows[~np.isfinite(values) | (values < 0)]
            if len(bad):
                row = bad.iloc[0]
                shown = str(row[c]) if c in rows else "(no column)"
                raise CalibrateError(
                    f"{row.get('source_file', 'table')}:{row.get('source_row', '?')}: phase {phase}: {c} {shown!r} "
                    f"is missing, not a number, infinite or negative ({len(bad)} such row(s)); fix or remove those "
                    "rows, or rerun the benchmark"
                )


def provenance(table: pd.DataFrame) -> dict[str, Any]:
    """The provenance of the table's first row that has one (device, engine, versions, model, dtype, date)."""
    if "provenance" in table:
        for value in table["provenance"].dropna():
            try:
                return json.loads(value)
            except (TypeError, json.JSONDecodeError):
                continue
    return {"device": str(table["device"].iloc[0])}


def bench_threads(table: pd.DataFrame) -> dict[str, int]:
    """The torch threads each phase was benched with (``rlsim-real bench`` records them in each row's provenance);
    phases whose rows do not record them (older tables, imported ``vllm bench`` JSON) are left out."""
    found: dict[str, int] = {}
    if "provenance" not in table:
        return found
    for phase, value in table[["phase", "provenance"]].dropna().drop_duplicates().itertuples(index=False):
        try:
            n = json.loads(value).get("torch_threads")
        except (TypeError, AttributeError, json.JSONDecodeError):
            continue
        if isinstance(n, int) and not isinstance(n, bool):
            found.setdefault(str(phase), n)
    return found


def threads_warning(bench: dict[str, int], runs: list[Any], what: str) -> str | None:
    """A warning when runs ran with other torch thread counts than the bench they are predicted from (each count
    is a different machine to the cost model: beside a CPU-bound process 2 threads were 2.6-4.5x slower than 1,
    see real.environment); None when they agree or either side does not record them."""
    benched = set(bench.values())
    ran = {run.environment.get("torch_threads") for run in runs} - {None}
    if not benched or not ran or ran == benched:
        return None
    phases = ", ".join(f"{k} {v}" for k, v in sorted(bench.items()))
    return (
        f"{what} ran with {', '.join(map(str, sorted(ran)))} torch thread(s) but the bench with {phases}: the "
        "prediction is for the bench's threads; bench and run under the same load (rlsim-real --threads auto picks "
        "the same count then) or pass the same --threads to both"
    )


def check_threads(bench: dict[str, int], runs: list[Any], what: str, allow: bool) -> str | None:
    """Refuse runs whose torch thread counts differ from the bench's (each count is a different machine to the
    cost model) unless ``allow`` (``--allow-thread-mismatch``): then the mismatch is a warning (returned)."""
    msg = threads_warning(bench, runs, what)
    if msg is not None and not allow:
        raise CalibrateError(f"{msg}; or pass --allow-thread-mismatch to go on anyway")
    return msg


# ---------------------------------------------------------------------------------------------- models


def _safetensors_param_count(path: Path) -> int:
    """Parameters in a safetensors file, read from its JSON header (no torch needed)."""
    with open(path, "rb") as fh:
        (size,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(size))
    return sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")


def model_spec_from_folder(folder: str | Path) -> dict[str, Any]:
    """An rlsim model spec (mapping) from a Hugging Face folder: config.json plus parameter counts."""
    folder = Path(folder)
    cfg_path = folder / "config.json"
    if not cfg_path.is_file():
        raise CalibrateError(f"model folder {folder} has no config.json")
    try:
        cfg = json.loads(cfg_path.read_text())
    except json.JSONDecodeError as exc:
        raise CalibrateError(f"{cfg_path}: not valid JSON ({exc.msg})") from None
    missing = [k for k in ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size") if k not in cfg]
    if missing:
        raise CalibrateError(
            f"{cfg_path}: lacks {', '.join(missing)}; only Llama-style configs are read, give the "
            "architecture as a scenario model spec instead"
        )
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise CalibrateError(f"model folder {folder} has no .safetensors weights to count parameters from")
    try:
        params = sum(_safetensors_param_count(f) for f in files)
    except (struct.error, json.JSONDecodeError, UnicodeDecodeError, KeyError):
        raise CalibrateError(f"model folder {folder}: a .safetensors file has a corrupt header") from None
    heads = cfg["num_attention_heads"]
    dtype = str(cfg.get("dtype") or cfg.get("torch_dtype") or "float32")
    return {
        "name": folder.name,
        "num_layers": cfg["num_hidden_layers"],
        "hidden_size": cfg["hidden_size"],
        "num_attention_heads": heads,
        "num_kv_heads": cfg.get("num_key_value_heads", heads),
        "head_dim": cfg.get("head_dim") or cfg["hidden_size"] // heads,
        "vocab_size": cfg["vocab_size"],
        "intermediate_size": cfg.get("intermediate_size", 0),
        "num_params": float(params),
        "num_active_params": float(params),
        "dtype": dtype,
        "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", False)),
    }


def table_model(table: pd.DataFrame) -> dict[str, Any] | str:
    """The benchmarked model, found from the table: the folder its provenance names (``model_dir``, which
    ``rlsim-real bench`` records), else the model column when it names a catalog entry."""
    for value in table["provenance"].dropna() if "provenance" in table else []:
        try:
            folder = json.loads(value).get("model_dir")
        except (TypeError, AttributeError, json.JSONDecodeError):
            continue
        if folder and Path(folder, "config.json").is_file():
            return model_spec_from_folder(folder)
    names = sorted(set(table["model"].dropna().astype(str))) if "model" in table else []
    for name in names:
        if name in catalog.model_names():
            return name
    raise CalibrateError(
        f"the bench table names no model folder that exists here (model {', '.join(names) or 'unknown'}); give "
        "--model-dir FOLDER (the benchmarked Hugging Face folder) or --model CATALOG_NAME"
    )
