"""Cross-validated accuracy on published runs: fit on all groups but one, predict that one, for each group.

``rlsim-calibrate published --cv KEY`` splits each table (step times, generation throughput) into groups by KEY
and, for every group in turn, fits the global coefficients (``STEP_FIT`` / ``GENERATION_FIT``, or ``--fit``) on
the other groups' rows with ``calibrate.published.costs.fit_costs`` and predicts the held-out group's rows with them.
Only these predictions are called cross-validated; beside them the same rows are scored in-sample (fitted on
every row, scored on the same rows: labelled so) and with no fit (every constant fitted on published rows at its
prior, rlsim/catalog/fitted.yaml).

KEY names a column or one of the derived keys:

* ``gpu``: the catalog GPU the row's hardware names (H100-SXM, GB200, A100-80GB);
* ``version``: the software version (step rows: ``source_version``, e.g. "NeMo RL v0.5"; generation rows:
  ``engine`` and ``engine_version``);
* ``model``: the row's model; ``family``: dense or MoE (from the model catalog);
* ``tp``: the generation tensor-parallel size (``gen_tp`` for step rows, ``tp`` for generation rows).

A table that lacks the key, or whose rows all fall in one group, gets no cross-validation and says why.

Per group and overall (all held-out predictions pooled) the summary has ``calibrate.published.tables.error_summary``'s
keys: median |error|, median signed error (bias), within 10% / 25%, rows and rows expressed, and the
coefficients the fold fitted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pandas as pd

from calibrate import CalibrateError
from calibrate.published import generation as gen
from calibrate.published import steps
from calibrate.published.costs import fit_costs, split_fitted
from calibrate.published.tables import error_summary
from rlsim import catalog
from rlsim.errors import RlsimError
from rlsim.frameworks.nemo_rl.recipe import gpu_name

# What a fold fits, one set for every row of a table (the step rows' constants of rlsim/catalog/fitted.yaml, and the
# generation rows' vllm-0.5 behaviour and MoE factor; its fixed iteration overhead sits at its bound 0 and is left
# there). Step times: the host copies' share of the host link's peak (priced per GPU on its own link, PCIe or
# NVLink-C2C) and vLLM V1's decode HBM efficiency; the training efficiency and the fixed sleep / wake were dropped
# from the set (fitted on one release alone the training efficiency fell to 0.13-0.17 and sent the other release to
# +22%; with the host link fitted the fixed part is not needed: docs/design.md, "What transfers")
STEP_FIT = (
    "host_link_efficiency",
    "vllm-v1.decode_memory_efficiency",
)
GENERATION_FIT = (
    "vllm-0.5.decode_memory_efficiency",
    "vllm-0.5.decode_per_seq_overhead_s",
    "vllm-0.5.tp_rank_overhead_s",
    "moe_decode_memory_efficiency_factor",
)
DERIVED_KEYS = ("gpu", "version", "model", "family", "tp")


def _gpu(rec: dict[str, Any]) -> str:
    try:
        return gpu_name(rec.get("gpu", ""))
    except RlsimError:
        return str(rec.get("gpu", ""))


def _family(rec: dict[str, Any]) -> str:
    try:
        return "MoE" if catalog.model(str(rec.get("model", "")).strip()).get("num_experts", 0) else "dense"
    except KeyError:
        return "unknown model"


def _version(rec: dict[str, Any], table: str) -> str:
    if table == "step":
        text = str(rec.get("source_version", ""))
        m = re.search(r"(.*?v\d+(?:\.\d+)*)", text)
        return m.group(1) if m else text
    return f"{rec.get('engine', '')} {rec.get('engine_version', '')}".strip()


def group_of(key: str, table: str) -> Callable[[dict[str, Any]], str]:
    """The function giving a row's group under ``key`` for ``table`` ("step" or "generation"); whether the table
    has the column it reads is ``_has_key``'s to say."""
    if key == "gpu":
        return _gpu
    if key == "family":
        return _family
    if key == "version":
        return lambda rec: _version(rec, table)
    if key == "tp":
        col = "gen_tp" if table == "step" else "tp"
        return lambda rec: _as_group(rec.get(col))
    return lambda rec: _as_group(rec.get(key))


def _as_group(value: Any) -> str:
    if isinstance(value, float):
        return "(empty)" if value != value else f"{value:g}"
    return str(value)


def _has_key(df: pd.DataFrame, key: str, table: str) -> bool:
    need = {"gpu": "gpu", "family": "model", "model": "model", "tp": "gen_tp" if table == "step" else "tp"}
    if key == "version":
        return ("source_version" if table == "step" else "engine_version") in df.columns
    return need.get(key, key) in df.columns


def check_key(key: str, step_df: pd.DataFrame | None, gen_df: pd.DataFrame | None) -> None:
    """A CalibrateError unless some input table can be grouped by ``key``."""
    tables = [(df, t) for df, t in ((step_df, "step"), (gen_df, "generation")) if df is not None]
    if not any(_has_key(df, key, t) for df, t in tables):
        cols = sorted({c for df, _ in tables for c in df.columns if c not in ("file", "row")})
        raise CalibrateError(
            f"--cv {key!r}: no input table has it; use one of {', '.join(DERIVED_KEYS)} or a column ({', '.join(cols)})"
        )


def _errors(table: str, df: pd.DataFrame, costs: dict[str, float], engines: dict) -> list[tuple[int, Any]]:
    """(index, result) of every row of ``df`` predicted with ``costs`` and engine-behaviour ``engines``."""
    with catalog.engine_overrides(engines):
        results = (steps.evaluate if table == "step" else gen.evaluate)(df, costs or None)
    return list(zip(df.index, results))


def _summary(results: list[Any]) -> dict[str, Any]:
    errs = [r.error_pct for r in results if r.expressed]
    return error_summary(errs, len(results))


def _fit(table: str, df: pd.DataFrame, names: list[str], base: dict[str, float]) -> dict[str, float]:
    if table == "step":
        return fit_costs(df, None, names, base)
    return fit_costs(None, df, names, base)


def cross_validate(
    table: str,
    df: pd.DataFrame,
    key: str,
    names: list[str],
    base: dict[str, float],
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Leave-one-group-out accuracy of ``table`` ("step" or "generation") grouped by ``key``: per group the
    coefficients ``names`` fitted on the other groups (starting from ``base``) and the held-out rows' errors;
    ``overall`` pools every held-out prediction; ``in_sample`` fits on every row and scores the same rows;
    ``shipped`` scores every row with the values rlsim uses (the catalog's); ``no_fit`` with each constant
    fitted on published rows at its prior (rlsim/catalog/fitted.yaml). ``rows`` lists each row's held-out prediction."""
    if not _has_key(df, key, table):
        return {"skipped": f"the {table} table has no column for --cv {key}"}
    fn = group_of(key, table)
    groups = pd.Series([fn(rec) for rec in df.to_dict("records")], index=df.index)
    names_set = sorted(set(groups))
    if len(names_set) < 2:
        return {"skipped": f"every {table} row is in one group ({names_set[0] if names_set else 'none'})"}
    held: dict[int, Any] = {}
    per_group: dict[str, Any] = {}
    for g in names_set:
        train, test = df[groups != g], df[groups == g]
        if progress:
            progress(f"{table}: fitting on {len(train)} rows without {key} = {g}")
        try:
            fitted = _fit(table, train, names, base)
        except CalibrateError as exc:  # nothing expressible to fit on: the group is predicted from the start
            fitted = dict(base)
            note = str(exc)
        else:
            note = ""
        costs, engines = split_fitted(fitted)
        results = _errors(table, test, costs, engines)
        held.update(results)
        summary = _summary([r for _, r in results])
        summary["fitted"] = {n: fitted[n] for n in names if n in fitted}
        if note:
            summary["note"] = note
        per_group[g] = summary
    ordered = [held[i] for i in df.index]
    overall = _summary(ordered)
    if progress:
        progress(f"{table}: fitting on all {len(df)} rows (in-sample)")
    try:
        costs, engines = split_fitted(_fit(table, df, names, base))
        in_sample_results = [r for _, r in _errors(table, df, costs, engines)]
    except CalibrateError:
        in_sample_results = [r for _, r in _errors(table, df, base, {})]
    in_sample = _by_group(in_sample_results, groups, df.index)
    shipped_results = [r for _, r in _errors(table, df, {}, {})]
    shipped_scores = _by_group(shipped_results, groups, df.index)
    prior_costs, prior_engines = catalog.prior_values()
    prior_results = [r for _, r in _errors(table, df, prior_costs, prior_engines)]
    prior_scores = _by_group(prior_results, groups, df.index)
    return {
        "key": key,
        "fitted_names": list(names),
        "groups": per_group,
        "overall": overall,
        "in_sample": in_sample,
        "shipped": shipped_scores,
        "no_fit": prior_scores,
        "rows": [
            {
                "file": r.file,
                "row": r.row,
                "run": r.label,
                "group": groups[i],
                "held_out_error_pct": r.error_pct,
                "in_sample_error_pct": s.error_pct,
                "no_fit_error_pct": c.error_pct,
                "reason": r.reason,
            }
            for i, r, s, c in zip(df.index, ordered, in_sample_results, prior_results)
        ],
    }


def _by_group(results: list[Any], groups: pd.Series, index: pd.Index) -> dict[str, Any]:
    out = {"overall": _summary(results), "groups": {}}
    for g in sorted(set(groups)):
        out["groups"][g] = _summary([r for i, r in zip(index, results) if groups[i] == g])
    return out


def format_table(what: str, cv: dict[str, Any]) -> list[str]:
    """Lines a person reads: per held-out group the cross-validated, in-sample and catalog-default figures."""
    if "skipped" in cv:
        return [f"{what}: no cross-validation ({cv['skipped']})"]

    def cell(s: dict[str, Any]) -> str:
        if not s["n_expressed"]:
            return f"{'-':>7} {'-':>7}"
        return f"{s['median_abs_error_pct']:>6.1f}% {s['bias_pct']:>+6.1f}%"

    lines = [
        f"{what}, leave one {cv['key']} out (median |error| and median signed error; in-sample: fitted on "
        "every row and scored on the same rows; no fit: every fitted constant at its prior)",
        f"  {'held out':<28} {'rows':>9}  {'cross-validated':>15}  {'in-sample':>15}  {'no fit':>15}",
    ]
    for g, s in cv["groups"].items():
        lines.append(
            f"  {g[:28]:<28} {s['n_expressed']:>3} of {s['n_rows']:<3}  {cell(s):>15}  "
            f"{cell(cv['in_sample']['groups'][g]):>15}  {cell(cv['no_fit']['groups'][g]):>15}"
        )
    s = cv["overall"]
    lines.append(
        f"  {'all held-out rows':<28} {s['n_expressed']:>3} of {s['n_rows']:<3}  {cell(s):>15}  "
        f"{cell(cv['in_sample']['overall']):>15}  {cell(cv['no_fit']['overall']):>15}"
    )
    # what each fold fitted: a coefficient that swings between folds (or sits at a bound) is compensating for a
    # mechanism the model lacks, which the held-out error then shows
    for g, s in cv["groups"].items():
        fitted = s.get("fitted") or {}
        if fitted:
            values = ", ".join(f"{k} {v:.3g}" for k, v in fitted.items())
            lines.append(f"  fitted without {g[:28]}: {values}")
    return lines
