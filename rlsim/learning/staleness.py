"""Staleness by loss: how much of its learning an asynchronous run keeps at a bounded staleness, by the loss it
trains with (``learning.staleness_loss``; docs/learning.md, "Staleness").

rlsim's smooth stretch (the seed paper reports no staleness result), ``(1 + staleness_penalty_per_step) ** k`` on
the samples, stays the ``stretch`` form. The published evidence (AReaL, Fu et al., NeurIPS 2025, arXiv 2505.24298;
its repository's blog/AReaL_v0_3.md, Table 3: R1-Distill-Qwen-1.5B, math, 1,000 PPO steps, AIME24 mean of 32
samples) says staleness acts on what the run reaches, not only on how fast, that it depends on the loss, and that it
is threshold-like: up to some staleness nothing is lost, beyond it the loss grows and levels off. Read off that
table at 1,000 steps, AIME24 for maximum staleness 0 / 1 / 2 / 4 / 8 / 16 / unbounded:

* naive PPO (importance ratio against the behaviour policy): 42.0 / 41.8 / 40.0 / 23.3 / 35.7 / 35.8 / 34.0;
* the decoupled objective (a proximal policy as the clipping centre): - / 42.1 / 41.8 / 42.2 / 41.0 / 38.7 / 36.9.

The form: a loss keeps the share ``c(k) = 1 - L (1 - 2 ** (-max(0, k - k_free) / tau))`` of the gain from the
curve's initial value to its asymptote, at maximum staleness k: nothing lost up to ``k_free``, half of the most
it can lose (``L``) ``tau`` steps beyond, ``1 - L`` as k grows without bound. The curve's asymptote becomes
``R0 + c (A - R0)``; at a fixed number of samples the gain already made shrinks by the same c, so a published
score at k follows from the score at staleness 0 alone. The constants are fitted by hand to the table above (so
the check against it is in-sample): naive PPO loses half its gain (L = 0.5) with half of that gone one step past
k = 1 (its 23.3 at k = 4 is a dip the fit leaves out, as the later points recover); the decoupled objective
loses nothing up to k = 4 and 45% as k grows without bound, half of that 14.3 steps past k = 4. Where the forms
stop holding: one model, one task, one budget of steps; robust losses are not in the table: M2PO (arXiv
2510.01161) matches on-policy at a lag of 256 updates, VCPO (arXiv 2602.17616) up to 128, OAPL (arXiv 2602.19362)
past 400 (the ``m2po`` preset, rlsim.learning.presets).
`rlsim import-config` sets the form where it imports an async mode (NeMo RL's async GRPO and OpenRLHF's async
with its importance-sampling correction: decoupled_ppo), and ``rlsim-calibrate fit-staleness`` picks it from a
user's runs at several stalenesses (calibrate/learning/staleness.py), with the constants fitted to them when
the runs say so (``learning.staleness_form``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from rlsim.schema import MetricCurve

__all__ = ["StalenessLoss", "LOSSES", "form_of", "retained_gain", "with_staleness"]


@dataclass(frozen=True)
class StalenessLoss:
    """What a loss keeps at maximum staleness k: ``c(k) = 1 - ceiling_loss (1 - 2 ** (-(k - free_steps) / half_steps))``
    beyond ``free_steps``, 1 up to it (module docstring)."""

    free_steps: float
    ceiling_loss: float
    half_steps: float
    source: str


AREAL_TABLE3 = "AReaL (arXiv 2505.24298), blog/AReaL_v0_3.md Table 3: R1-Distill-Qwen-1.5B, math, 1,000 PPO steps"

LOSSES = {
    "naive_ppo": StalenessLoss(free_steps=1, ceiling_loss=0.5, half_steps=1.0, source=AREAL_TABLE3),
    "decoupled_ppo": StalenessLoss(free_steps=4, ceiling_loss=0.45, half_steps=14.3, source=AREAL_TABLE3),
}


def form_of(loss: str, constants: tuple[float, ...] | None = None) -> StalenessLoss:
    """The threshold form of ``loss``: its published constants, or ``constants`` (free steps, ceiling loss, half
    steps; ``learning.staleness_form``, fitted by rlsim-calibrate fit-staleness) in their place."""
    if constants is None:
        return LOSSES[loss]
    free, ceiling, half = (float(x) for x in constants)
    return StalenessLoss(free, ceiling, half, "learning.staleness_form (fitted to the user's runs)")


def retained_gain(loss: str, max_staleness: float, constants: tuple[float, ...] | None = None) -> float:
    """The share of the curve's gain a run with ``loss`` keeps at ``max_staleness`` (math.inf: unbounded);
    ``constants``: see :func:`form_of`."""
    form = form_of(loss, constants)
    beyond = max_staleness - form.free_steps
    if beyond <= 0:
        return 1.0
    if math.isinf(beyond):
        return 1.0 - form.ceiling_loss
    return 1.0 - form.ceiling_loss * (1.0 - 2.0 ** (-beyond / form.half_steps))


def with_staleness(
    curve: MetricCurve, loss: str, max_staleness: float, constants: tuple[float, ...] | None = None
) -> MetricCurve:
    """The metric curve a run with ``loss`` follows at ``max_staleness``: its asymptote moved to R0 + c (A - R0)."""
    c = retained_gain(loss, max_staleness, constants)
    return dataclasses.replace(curve, asymptote=curve.initial + c * (curve.asymptote - curve.initial))
