"""The curve family: how the batch, responses per prompt, the learning-rate rule and staleness move the metric curve
``R(S) = R0 + (A - R0) / (1 + (S_mid / S)^b)`` (rlsim.learning.curve), not only stretch it along samples
(``learning.family``; docs/learning.md).

Each knob has a table (rlsim.schema.family.FamilyTable): at knob values x (B / B_ref for the batch, G / G_ref for
responses per prompt at the same batch, eta / eta* for the LR rule, the staleness k itself) the multiplier of S_mid,
the multiplier of b, and the share of the gain A - R0 kept. Between the values a column is read in the knob's log
(log x; log(1 + k) for staleness, so k = 0 is a point of it): S_mid's and b's multipliers geometrically (linear in
their logs), the gain share linearly; beyond the ends it is held at the nearest end, with a warning. Every column is
divided by its value at the reference (x = 1, k = 0), so at the scenario's reference point the curve is the
scenario's own whatever the table says. The knobs compose: S_mid and b multiply, the gain shares multiply.

Why a table per knob and not one form: the published evidence is per-value fits. ScaleRL (arXiv 2510.13786) fits
its sigmoid separately at each batch of its batch ablation, and the larger batch comes out slower early (larger
midpoint) and higher at the end (larger asymptote); AReaL (arXiv 2505.24298) reports the score per maximum
staleness and loss. A table carries such fits as they are, and ``rlsim-calibrate fit-learning`` writes one from a
user's runs at several values of a knob (calibrate.learning.family).

The members this holds:

* the seed paper's (arXiv 2608.29296), the default: no table; the batch stretches samples alone
  (learning.batch_multiplier, i.e. S_mid alone moves), b and A shared by every batch. It is that paper's
  assumption over its bounded batch range with the LR retuned, not a measurement of b or A at other batches;
* S_mid alone moving (a table with only ``mid_samples``) is the same member as a batch_multiplier table;
* the ceiling alone moving (only ``gain``) is learning.ceilings in relative form;
* all three moving: ScaleRL's per-batch fits, and the staleness losses (a loss that keeps less of the gain at k).

With a batch table the batch's moved ceiling may not clear the target: that batch never reaches it, and the error
names the batches whose ceiling does (:func:`clearing_words`). A group table replaces the informative-share term
(rlsim.learning.groups) and an LR table the untuned-LR penalty (rlsim.learning.model.lr_multiplier): each says how
its knob moves the curve on its own terms. learning.batch_multiplier still stretches samples on top of a batch
table (it multiplies S_mid), and the staleness stretch on top of a staleness table.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from rlsim.schema import Learning, MetricCurve
from rlsim.schema.family import FamilyTable
from rlsim.workload.lr_rules import lr_scale

__all__ = ["KNOBS", "Moved", "at_value", "clearing_words", "knob_values", "moved_curve"]

KNOBS = ("batch", "group", "lr", "staleness")
# what a knob value is, in words (for the edge warning and the clearing range)
KNOB_WORDS = {
    "batch": "B / reference_batch",
    "group": "G / reference_group_size",
    "lr": "eta / eta* (the LR rule's over the invariant rule's)",
    "staleness": "staleness k",
}

UNITS = {"batch": " responses per step", "group": " responses per prompt", "staleness": " steps", "lr": " (eta / eta*)"}


@dataclass(frozen=True)
class Moved:
    """A table read at one knob value: the S_mid and b multipliers and the share of the gain kept (1, 1, 1 at the
    reference), and the warning when the value lies beyond the table."""

    mid_samples: float = 1.0
    exponent: float = 1.0
    gain: float = 1.0
    warning: str | None = None


def _coordinate(knob: str, x: float | np.ndarray) -> np.ndarray:
    """Where a table interpolates: log x, or log(1 + k) for staleness."""
    arr = np.asarray(x, dtype=float)
    return np.log1p(arr) if knob == "staleness" else np.log(arr)


def _column(us: np.ndarray, ys: tuple[float, ...] | None, u: float, geometric: bool) -> float:
    """One column at coordinate ``u`` over its value at the reference (coordinate 0), held at the ends."""
    if ys is None:
        return 1.0
    y = np.log(np.asarray(ys, dtype=float)) if geometric else np.asarray(ys, dtype=float)
    at, ref = float(np.interp(u, us, y)), float(np.interp(0.0, us, y))
    return math.exp(at - ref) if geometric else at / ref


def at_value(table: FamilyTable, knob: str, x: float) -> Moved:
    """``table`` (the ``knob``'s) at knob value ``x`` (module docstring)."""
    us = _coordinate(knob, table.values)
    u = float(_coordinate(knob, x))
    warning = None
    if u < us[0] - 1e-12 or u > us[-1] + 1e-12:
        lo, hi = table.values[0], table.values[-1]
        warning = (
            f"learning.family.{knob}: {KNOB_WORDS[knob]} {x:.4g} is outside the table's [{lo:g}, {hi:g}]; the curve "
            "is held at the nearest end's (add a measured point there to predict it)"
        )
    return Moved(
        _column(us, table.mid_samples, u, True),
        _column(us, table.exponent, u, True),
        _column(us, table.gain, u, False),
        warning,
    )


def knob_values(learning: Learning, batch: float, staleness: float, group_size: float | None) -> dict[str, float]:
    """The knob values of a configuration: B / B_ref, G / G_ref (1 without a group size or reference), eta / eta*
    at the batch, the staleness k."""
    g_ref = learning.reference_group_size
    used = lr_scale(learning.lr_rule, batch, learning.reference_batch)
    ideal = lr_scale(learning.invariant_rule, batch, learning.reference_batch)
    return {
        "batch": batch / learning.reference_batch,
        "group": group_size / g_ref if group_size is not None and g_ref else 1.0,
        "lr": used / ideal,
        "staleness": float(staleness),
    }


def moved_curve(
    learning: Learning, curve: MetricCurve, batch: float, staleness: float = 0.0, group_size: float | None = None
) -> tuple[MetricCurve, tuple[str, ...]]:
    """``curve`` moved by every table of learning.family at this configuration (S_mid and b multiplied, the gain
    A - R0 scaled by the product of the shares kept) and the tables' edge warnings; ``curve`` itself when no table
    is set."""
    fam = learning.family
    if fam.batch is None and fam.group is None and fam.lr is None and fam.staleness is None:
        return curve, ()  # the default, and a plan's thousands of calls: nothing to read
    xs = knob_values(learning, batch, staleness, group_size)
    mid = exp = gain = 1.0
    warnings = []
    for knob in KNOBS:
        table = getattr(fam, knob)
        if table is None:
            continue
        m = at_value(table, knob, xs[knob])
        mid, exp, gain = mid * m.mid_samples, exp * m.exponent, gain * m.gain
        if m.warning:
            warnings.append(m.warning)
    if mid == exp == gain == 1.0:
        return curve, tuple(warnings)
    moved = dataclasses.replace(
        curve,
        mid_samples=curve.mid_samples * mid,
        exponent=min(curve.exponent * exp, 100.0),
        asymptote=curve.initial + gain * (curve.asymptote - curve.initial),
    )
    return moved, tuple(warnings)


def clearing_words(
    learning: Learning, curve: MetricCurve, target: float, batch: float, staleness: float, group_size: float | None
) -> str:
    """Why the moved curve misses ``target`` and where it does not, in words: for each knob with a gain column that
    keeps less than needed, the range of that knob (the others as they are) over which the moved ceiling clears
    the target, e.g. "the batch table's ceiling clears it from about 2,048 responses per step"."""
    need = (target - curve.initial) / (curve.asymptote - curve.initial)  # the share of the gain the target needs
    xs = knob_values(learning, batch, staleness, group_size)
    kept = {}
    for knob in KNOBS:
        table = getattr(learning.family, knob)
        if table is not None and table.gain is not None:
            kept[knob] = at_value(table, knob, xs[knob]).gain
    words = []
    for knob in kept:
        others = math.prod(v for k, v in kept.items() if k != knob)
        where = _spans(getattr(learning.family, knob), knob, need / others)
        scale = {"batch": learning.reference_batch, "group": learning.reference_group_size or 1}.get(knob, 1)
        words.append(f"the {knob} table's ceiling clears it {_span_words(where, scale, knob)}")
    return "; ".join(words) or "no table moves the ceiling"


def _spans(table: FamilyTable, knob: str, need: float) -> list[tuple[float | None, float | None]]:
    """The knob values (None: open end) between which the table's normalized gain exceeds ``need``, read linearly
    in the knob's coordinate as :func:`at_value` reads it."""
    us = _coordinate(knob, table.values)
    g = np.asarray(table.gain, dtype=float)
    g = g / float(np.interp(0.0, us, g))
    gap = g - need  # > 0: clears
    spans: list[tuple[float | None, float | None]] = []
    start: float | None = None if gap[0] > 0 else math.nan
    for i in range(1, len(us)):
        if (gap[i] > 0) != (gap[i - 1] > 0):  # a crossing inside (us[i-1], us[i])
            t = gap[i - 1] / (gap[i - 1] - gap[i])
            at = float(us[i - 1] + t * (us[i] - us[i - 1]))
            x = math.expm1(at) if knob == "staleness" else math.exp(at)
            if gap[i] > 0:
                start = x
            else:
                spans.append((start, x))
                start = math.nan
    if start is None or not math.isnan(start):
        spans.append((start, None))
    return spans


def _span_words(spans: list[tuple[float | None, float | None]], scale: float, knob: str) -> str:
    unit = {
        "batch": " responses per step",
        "group": " responses per prompt",
        "staleness": " steps",
        "lr": " (eta / eta*)",
    }[knob]
    words = []
    for lo, hi in spans:
        if lo is None and hi is None:
            words.append("at every value")
        elif hi is None:
            words.append(f"from about {lo * scale:,.4g}{unit}")  # type: ignore[operator]
        elif lo is None:
            words.append(f"up to about {hi * scale:,.4g}{unit}")
        else:
            words.append(f"between about {lo * scale:,.4g} and {hi * scale:,.4g}{unit}")
    return " and ".join(words) or "at no value in the table"
