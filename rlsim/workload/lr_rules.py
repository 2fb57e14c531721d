"""The learning-rate rules, defined once: how the learning rate follows the batch (``learning.lr_rule``, also
``learning.invariant_rule``). ``sqrt`` scales eta0 by (B / B_ref) ** 0.5 (Adam's square-root rule, the paper's
retuning), ``linear`` by B / B_ref (SGD's), ``none`` keeps eta0."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from rlsim.schema.sections import Learning

LrRule = Literal["sqrt", "linear", "none"]
LR_RULES: tuple[str, ...] = get_args(LrRule)


def lr_scale(rule: str, batch: float, reference_batch: float) -> float:
    """Multiplier on eta0 for a batch of ``batch`` responses under ``rule``."""
    ratio = batch / reference_batch
    if rule == "sqrt":
        return math.sqrt(ratio)
    if rule == "linear":
        return ratio
    if rule == "none":
        return 1.0
    raise ValueError(f"lr_rule {rule!r} is not one of {', '.join(LR_RULES)}")


def lr_for_batch(learning: Learning, batch: int) -> float:
    """The learning rate used at ``batch`` responses per step."""
    return learning.lr0 * lr_scale(learning.lr_rule, batch, learning.reference_batch)
