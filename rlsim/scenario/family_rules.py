"""The rules of ``learning.family`` (rlsim.schema.family, read by rlsim.learning.family): each knob's table has two or
more increasing knob values and one entry per value in each column it gives, and reads only where its knob is
defined. rlsim.scenario.section_rules.validate_learning calls :func:`validate_family`; each refusal is a
:class:`ScenarioError` naming the field, the value, the rule and the fix.
"""

from __future__ import annotations

import math

from rlsim.errors import ScenarioError
from rlsim.schema.family import FamilyTable
from rlsim.schema.sections import Learning

COLUMNS = ("mid_samples", "exponent", "gain")
MAX_FACTOR = 1e6  # a multiplier or share beyond this (or below its inverse) is a broken table, not a prediction


def validate_family(lr: Learning) -> None:
    """learning.family's tables, each on its own and against the fields its knob needs."""
    fam = lr.family
    for knob in ("batch", "group", "lr", "staleness"):
        table = getattr(fam, knob)
        if table is not None:
            _validate_table(table, f"learning.family.{knob}", knob == "staleness")
    if not any(getattr(fam, k) is not None for k in ("batch", "group", "lr", "staleness")):
        return
    if lr.metric is None:
        raise ScenarioError(
            "learning.family",
            None,
            "moves the metric curve, but learning.metric is not set",
            "give the curve and target",
        )
    if fam.group is not None and lr.reference_group_size is None:
        raise ScenarioError(
            "learning.family.group",
            fam.group.values,
            "reads G / learning.reference_group_size, which is not set",
            "set learning.reference_group_size to the G of the runs the metric curve was measured at",
        )
    if fam.staleness is not None and lr.staleness_loss != "stretch":
        raise ScenarioError(
            "learning.family.staleness",
            fam.staleness.values,
            f"and learning.staleness_loss {lr.staleness_loss} both move the curve by staleness",
            "give one: drop the table or set learning.staleness_loss: stretch",
        )
    if fam.batch is not None and lr.ceilings is not None and fam.batch.gain is not None:
        raise ScenarioError(
            "learning.family.batch.gain",
            fam.batch.gain,
            "and learning.ceilings both move the ceiling by batch",
            "give one: drop the gain column or learning.ceiling_batches / ceilings",
        )


def _validate_table(table: FamilyTable, at: str, staleness: bool) -> None:
    xs = table.values
    lowest = 0.0 if staleness else math.nextafter(0.0, 1.0)
    what = "the staleness k (0, 1, 2, ...)" if staleness else "knob values relative to the reference (1 = it)"
    if len(xs) < 2:
        raise ScenarioError(f"{at}.values", xs, "needs at least 2 knob values", f"give {what}, increasing")
    if any(not (lowest <= x < math.inf) for x in xs) or any(b <= a for a, b in zip(xs, xs[1:])):
        bound = ">= 0" if staleness else "> 0"
        raise ScenarioError(f"{at}.values", xs, f"must be finite, {bound} and increasing", f"give {what}, sorted")
    if all(getattr(table, c) is None for c in COLUMNS):
        raise ScenarioError(
            at, xs, "gives knob values but no column", "give mid_samples, exponent and/or gain (one entry per value)"
        )
    for c in COLUMNS:
        ys = getattr(table, c)
        if ys is None:
            continue
        if len(ys) != len(xs):
            raise ScenarioError(f"{at}.{c}", ys, f"needs one entry per knob value ({len(xs)})", "one per value")
        if any(not (1.0 / MAX_FACTOR <= y <= MAX_FACTOR) for y in ys):
            kind = "share of the gain kept" if c == "gain" else "multiplier"
            raise ScenarioError(
                f"{at}.{c}", ys, f"must each be a positive {kind} in [1e-6, 1e6]", "check the table's column"
            )
