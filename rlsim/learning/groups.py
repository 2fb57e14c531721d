"""Responses per prompt apart from the batch: groups whose rewards all agree train nothing, and responses to one
prompt teach less than as many to different prompts (``learning.reference_group_size``,
``learning.prompt_concentration``, ``learning.group_correlation``; docs/learning.md, "Responses per prompt").

GRPO normalizes each response's reward within its group of G responses to one prompt; a group whose G rewards are
equal has zero advantage everywhere and adds nothing to the gradient (DAPO's dynamic sampling, arXiv 2503.14476,
filters such groups out for that reason; with filtering they cost generation instead of a slot in the batch, the
same in generated samples). With every prompt at pass rate p a group is informative with probability
``1 - p ** G - (1 - p) ** G``. Prompts differ in difficulty: with their pass rates spread as Beta(p k, (1 - p) k)
around the mean p (concentration k, ``learning.prompt_concentration``; the beta-binomial model of per-item success
rates) a group is informative with probability ``1 - E[q ** G] - E[(1 - q) ** G]``, E[q ** G] = the product over
i < G of (p k + i) / (k + i): lower at every G, most at small G, where many prompts are all but always solved or
always failed. k is measured directly: ``rlsim-real`` logs the share of each step's groups whose rewards all agree
(``zero_variance_groups``), which ``rlsim-calibrate fit-groups`` fits.

The G responses to one prompt are a cluster: their gradients share the prompt, so they are worth fewer independent
samples than G responses to G prompts. Survey sampling's design effect (Kish) puts that at ``1 + (G - 1) rho`` for
an intra-cluster correlation rho (``learning.group_correlation``, fitted to runs at several G), which makes a large
G with few prompts a step slower at a fixed batch.

The model: learning advances with effective samples, so at the pass rate the curve reaches after u samples of the
reference runs (group size G_ref), one sample at G is worth v(p, G) / v(p, G_ref) of one there, with
v(p, G) = w(p, G) / (1 + (G - 1) rho), w the informative share, and

    N*(G) = integral over u from 0 to N*_ref of  v(p(u), G_ref) / v(p(u), G)  du,

with p(u) the metric curve itself read as the pass rate (so the metric must be a fraction). With no spread and no
correlation (the defaults once reference_group_size is set) it is the informative share alone; where both group
sizes are almost always informative and rho is small it reduces to B = P x G alone. It is off unless
``learning.reference_group_size`` is set, because its magnitude is not settled: ScaleRL (arXiv 2510.13786) finds
responses per prompt 8-32 at a fixed batch leaving its fitted curve essentially unchanged, the IsoCompute playbook
(arXiv 2603.12151) finds responses per prompt the primary driver and prompts per batch marginal over 32-1,024. On
this CPU (``scripts/group_loop.py``, ``scripts/group_form_loop.py``, docs/learning.md) the informative share alone
did not predict: at a fixed batch runs were U-shaped in G, slow at G = 2 (the empty groups) and at 4-8 prompts a
step, which the spread and the correlation are there to describe. Fitted at B = 128 they predicted that batch's
held-out G (RMS log error 0.040) and not B = 64's (0.370, B = P x G alone 0.218), so they are fitted per setup.
"""

from __future__ import annotations

import numpy as np

from rlsim.learning.curve import metric_at
from rlsim.schema import MetricCurve

__all__ = ["informative_share", "sample_value", "group_multiplier"]

POINTS = 400  # midpoint rule over the reference curve's samples to target


def informative_share(
    pass_rate: np.ndarray | float, group_size: float, concentration: float | None = None
) -> np.ndarray:
    """The chance that a group of G responses holds unequal rewards at mean pass rate p: ``1 - p ** G - (1 - p) ** G``
    with every prompt at p (``concentration`` None; computed so that p near 0 keeps its precision: about G p there),
    else with the prompts' pass rates spread as Beta(p k, (1 - p) k), k the concentration (module docstring)."""
    p = np.clip(np.asarray(pass_rate, dtype=float), 1e-12, 1.0 - 1e-12)
    if concentration is None:
        return -np.expm1(group_size * np.log1p(-p)) - np.exp(group_size * np.log(p))
    from scipy.special import gammaln  # here: `rlsim run` loads no scipy unless the spread is set

    k = float(concentration)
    base = gammaln(k + group_size) - gammaln(k)

    def all_alike(a: np.ndarray) -> np.ndarray:  # E[q ** G], q ~ Beta(a, k - a)
        return np.exp(gammaln(a + group_size) - gammaln(a) - base)

    return np.clip(1.0 - all_alike(p * k) - all_alike((1.0 - p) * k), 0.0, 1.0)


def sample_value(
    pass_rate: np.ndarray | float, group_size: float, concentration: float | None = None, correlation: float = 0.0
) -> np.ndarray:
    """What one response in a group of G is worth at mean pass rate p: the informative share over the design effect
    ``1 + (G - 1) rho`` (module docstring)."""
    return informative_share(pass_rate, group_size, concentration) / (1.0 + (group_size - 1.0) * correlation)


def group_multiplier(
    curve: MetricCurve,
    reference_samples: float,
    group_size: float,
    reference_group_size: float,
    concentration: float | None = None,
    correlation: float = 0.0,
) -> float:
    """N*(G) / N*(G_ref) along ``curve`` up to ``reference_samples`` (module docstring)."""
    if group_size == reference_group_size:
        return 1.0

    u = (np.arange(POINTS) + 0.5) * (reference_samples / POINTS)
    p = metric_at(curve, u)
    ref = sample_value(p, reference_group_size, concentration, correlation)
    return float(np.mean(ref / sample_value(p, group_size, concentration, correlation)))
