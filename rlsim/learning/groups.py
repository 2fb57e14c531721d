"""Responses per prompt apart from the batch: groups whose rewards all agree train nothing
(``learning.reference_group_size``; docs/learning.md, "Responses per prompt").

GRPO normalizes each response's reward within its group of G responses to one prompt; a group whose G rewards are
equal has zero advantage everywhere and adds nothing to the gradient (DAPO's dynamic sampling, arXiv 2503.14476,
filters such groups out for that reason; with filtering they cost generation instead of a slot in the batch, the
same in generated samples). With a pass rate p a group is informative with probability ``1 - p ** G - (1 - p) ** G``,
so at a fixed batch B = P x G a smaller G spends more of its samples on groups that teach nothing, most at the
start and the end of the curve, where p is near 0 or 1.

The model: learning advances with informative samples, so at the pass rate the curve reaches after u samples of
the reference runs (group size G_ref), one sample at G is worth ``w(p, G) / w(p, G_ref)`` of one there, and

    N*(G) = integral over u from 0 to N*_ref of  w(p(u), G_ref) / w(p(u), G)  du,

with p(u) the metric curve itself read as the pass rate (so the metric must be a fraction). Where both group
sizes are almost always informative (p from 0.4 to 0.6: G = 8 against 32 within 2% per sample) it reduces to
B = P x G alone. It is off unless ``learning.reference_group_size`` is set, because its magnitude is not settled:
on the paper scenario's curve (p from 0.62 to 0.77) it makes G = 32 need 7.3% fewer samples than G = 8 (G = 2:
2.29x more), where ScaleRL (arXiv 2510.13786) finds responses per prompt 8-32 at a fixed batch leaving its fitted
curve essentially unchanged, while the IsoCompute playbook (arXiv 2603.12151) finds responses per prompt the
primary driver and prompts per batch marginal. What it leaves out: every prompt is given the curve's pass rate (a
spread of difficulties makes some groups uninformative at any G), and prompt diversity (the same B with fewer
distinct prompts), which the IsoCompute playbook finds marginal over 32-1,024 prompts per batch but which must
matter at a handful. Against real runs on this CPU (``scripts/group_loop.py``, docs/learning.md) it did not
predict: at a fixed batch they were U-shaped in G (G = 2 1.5x slower than G = 8, as the term says in direction;
G = 16-32 with 8-4 prompts a step 1.4-1.9x slower, where it says faster), so ``rlsim-calibrate fit-groups`` kept
B = P x G there.
"""

from __future__ import annotations

import numpy as np

from rlsim.scenario import MetricCurve

__all__ = ["informative_share", "group_multiplier"]

POINTS = 400  # midpoint rule over the reference curve's samples to target


def informative_share(pass_rate: np.ndarray | float, group_size: float) -> np.ndarray:
    """``1 - p ** G - (1 - p) ** G``: the chance that a group of G responses at pass rate p holds unequal rewards
    (computed so that p near 0 keeps its precision: about G p there)."""
    p = np.clip(np.asarray(pass_rate, dtype=float), 1e-12, 1.0 - 1e-12)
    return -np.expm1(group_size * np.log1p(-p)) - np.exp(group_size * np.log(p))


def group_multiplier(
    curve: MetricCurve, reference_samples: float, group_size: float, reference_group_size: float
) -> float:
    """N*(G) / N*(G_ref) along ``curve`` up to ``reference_samples`` (module docstring)."""
    if group_size == reference_group_size:
        return 1.0
    from rlsim.learning.model import metric_at

    u = (np.arange(POINTS) + 0.5) * (reference_samples / POINTS)
    p = metric_at(curve, u)
    return float(np.mean(informative_share(p, reference_group_size) / informative_share(p, group_size)))
