"""Learning model: learning-rate rules (and, later, the sample-indexed metric curve and samples-to-target).

``lr_for_batch`` applies the rule relative to the reference batch B0 (responses per step):
``sqrt``: eta0 * sqrt(B / B0) (Adam, Malladi et al. 2022, arXiv 2205.10287; the seed paper's retuning rule),
``linear``: eta0 * B / B0 (the SGD rule), ``none``: eta0 whatever the batch.
"""

from __future__ import annotations

import math

from rlsim.scenario import Learning

LR_RULES = ("sqrt", "linear", "none")


def lr_scale(rule: str, batch: int, reference_batch: int) -> float:
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
