"""The curve family's schema: how a knob (the batch, responses per prompt, the learning-rate rule, staleness) moves
the metric curve's midpoint S_mid, exponent b and ceiling A, as a table over the knob (``learning.family``; the
model is rlsim.learning.family).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FamilyTable:
    """One knob's table: at each knob value (``values``, increasing: B / B_ref for the batch, G / G_ref for responses
    per prompt, eta / eta* for the LR rule, the staleness k itself), the S_mid multiplier (``mid_samples``), the b
    multiplier (``exponent``) and the share of the gain A - R0 kept (``gain``); a column left out (None) is 1 at
    every value. Each column is normalized to 1 at the reference (knob value 1, staleness 0), so a study's raw
    per-batch values anchor at the scenario's own curve."""

    values: tuple[float, ...]
    mid_samples: tuple[float, ...] | None = None
    exponent: tuple[float, ...] | None = None
    gain: tuple[float, ...] | None = None
    source: str = ""  # where the values come from (a preset's study and table, or the fit that wrote them)


@dataclass(frozen=True)
class CurveFamily:
    """``learning.family``: a table per knob; None (the default) leaves that knob to the other learning fields, the
    seed paper's member (the batch moves S_mid alone, through learning.batch_multiplier)."""

    batch: FamilyTable | None = None  # knob B / learning.reference_batch
    group: FamilyTable | None = None  # knob G / learning.reference_group_size at the same batch
    lr: FamilyTable | None = None  # knob eta / eta*: the LR rule's LR over the invariant rule's, at the batch run
    staleness: FamilyTable | None = None  # knob k, the run's staleness (schedule.max_staleness)
