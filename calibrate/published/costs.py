"""The cost coefficients every published row gets, and fitting them over both tables.

Every row gets the same cost coefficients, never a factor per row: by default (``shipped``) what a scenario
resolves to, the values ``rlsim run`` uses (the constants fitted on published rows are in the catalog with their
provenance: rlsim/catalog/fitted.yaml); ``prior`` puts each of those constants at its prior; ``--set costs.X=V``
overrides either for all rows at once.

:func:`fit_costs` fits named coefficients (``costs`` fields or ``BEHAVIOUR.FIELD`` of an engine behaviour) on
log(predicted / measured) over every expressed row of both tables (``--fit``; ``--cv`` fits them per fold).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from calibrate import CalibrateError
from calibrate.published import generation as gen
from calibrate.published import steps
from rlsim import catalog
from rlsim.errors import RlsimError
from rlsim.scenario import Costs, check_bounds

COST_SETS = ("shipped", "prior")


def costs_set(name: str) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """(costs fields, engine-behaviour values) every row gets: ``shipped`` is nothing on top of what a scenario
    resolves to (the catalog's fitted values: what ``rlsim run`` uses); ``prior`` puts every constant of
    rlsim/catalog/fitted.yaml at its prior (the baseline that saw no published row)."""
    if name == "shipped":
        return {}, {}
    if name == "prior":
        return catalog.prior_values()
    raise CalibrateError(
        f"--costs {name!r}: use shipped (what rlsim run resolves to, the default) or prior (every constant fitted "
        "on published rows at its prior: rlsim/catalog/fitted.yaml)"
    )


def prior_of(name: str) -> Any:
    """The prior of a fitted name (``FIELD`` for costs, ``BEHAVIOUR.FIELD``), or None if fitted.yaml lacks it."""
    entries = catalog.fitted_constants()
    entry = entries.get(f"costs.{name}") or entries.get(f"engines.{name}")
    return None if entry is None else entry["prior"]


def check_costs(costs: dict[str, float]) -> None:
    """Every key a ``Costs`` field and every value inside its bounds, or a CalibrateError naming it."""
    fields = {f.name: f for f in dataclasses.fields(Costs)}
    for key, value in costs.items():
        if key not in fields:
            raise CalibrateError(f"costs.{key} is not a costs field (one of: {', '.join(fields)})")
        try:
            check_bounds(value, f"costs.{key}", fields[key].metadata)
        except RlsimError as exc:
            raise CalibrateError(str(exc)) from None


def log_residuals(step_df: pd.DataFrame | None, gen_df: pd.DataFrame | None, costs: dict[str, float]) -> np.ndarray:
    """log(predicted / measured) of every expressed row of both tables (what a default-set fit minimizes)."""
    res = []
    if step_df is not None and len(step_df):
        res += [math.log(r.predicted_s / r.measured_s) for r in steps.evaluate(step_df, costs) if r.expressed]
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


GRID_POINTS = 5  # per fitted name, for up to GRID_NAMES names: the start of the local fit (:func:`_grid_start`)
GRID_NAMES = 2


def _soft_l1(r: np.ndarray) -> float:
    """The loss ``least_squares(loss="soft_l1", f_scale=0.1)`` minimizes, up to its constant factor."""
    z = (r / 0.1) ** 2
    return float(np.sum(2.0 * (np.sqrt(1.0 + z) - 1.0)))


def _grid_start(residual, x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The best point of a geometric grid (GRID_POINTS per name, from a tenth to ten times the start, within the
    bounds) as the local fit's start: the step-time loss is rough (simulated batches are whole numbers), so a local
    fit from one start can stop in a dip near it, and folds started at the priors would then score a worse fit
    than the same data allows. More than GRID_NAMES names: the start as given."""
    if len(x) > GRID_NAMES:
        return x
    axes = []
    for v, a, b in zip(x, lo, hi):
        low, high = max(a, v / 10.0, 1e-12), min(b, v * 10.0) if np.isfinite(b) else v * 10.0
        axes.append(np.geomspace(low, high, GRID_POINTS) if high > low else np.array([v]))
    points = [x] + [np.array(p) for p in itertools.product(*axes)]
    return min(points, key=lambda p: _soft_l1(residual(p)))


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
    x0 = _grid_start(residual, np.array(start) / scales, np.array(lo) / scales, np.array(hi) / scales)
    fit = least_squares(
        residual,
        x0,
        bounds=(np.array(lo) / scales, np.array(hi) / scales),
        diff_step=0.05,
        loss="soft_l1",  # robust: a few rows far off should not drag the rest
        f_scale=0.1,
        max_nfev=40,
    )
    return {**base, **{n: float(v) for n, v in zip(names, fit.x * scales)}}
