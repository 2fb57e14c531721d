"""Token-length distributions for prompts and responses, sampled with an explicit numpy Generator.

Forms (``LengthDist.dist``): ``fixed`` (tokens), ``uniform`` (low..high inclusive), ``lognormal`` (mean_tokens is
the mean *before* clipping, sigma the standard deviation of log length: mu = ln(mean) - sigma^2 / 2), and
``empirical`` (a histogram: bin chosen by weight, length uniform inside the bin). Samples are integers clipped to
[minimum, maximum]. An optional drift scales responses so that their mean moves linearly from the distribution's
mean to a final mean over a number of cumulative samples; or the responses follow a sequence of distributions by
cumulative samples (``response_length_by_samples``: a policy's lengths change as it learns), or by cumulative
learning rate (``workload.length_progress``, :func:`progress`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from rlsim.workload.lr_rules import lr_scale

if TYPE_CHECKING:
    from rlsim.schema import Drift, Learning, LengthDist, Workload


def dist_mean(d: LengthDist) -> float:
    """Mean of the distribution before clipping, in tokens."""
    if d.dist == "fixed":
        return float(d.tokens)  # type: ignore[arg-type]
    if d.dist == "uniform":
        return (d.low + d.high) / 2.0  # type: ignore[operator]
    if d.dist == "lognormal":
        return float(d.mean_tokens)  # type: ignore[arg-type]
    edges = np.asarray(d.bin_edges, dtype=float)
    w = np.asarray(d.weights, dtype=float)
    return float(np.sum(w / w.sum() * (edges[:-1] + edges[1:]) / 2.0))


def sample_lengths(
    d: LengthDist, n: int, rng: np.random.Generator, minimum: int, maximum: int, scale: float = 1.0
) -> np.ndarray:
    """Draw ``n`` integer lengths, multiplied by ``scale`` and clipped to [minimum, maximum]."""
    if d.dist == "fixed":
        x = np.full(n, float(d.tokens))
    elif d.dist == "uniform":
        x = rng.integers(d.low, d.high + 1, size=n).astype(float)  # type: ignore[operator]
    elif d.dist == "lognormal":
        mu = math.log(d.mean_tokens) - d.sigma**2 / 2.0  # type: ignore[arg-type, operator]
        x = rng.lognormal(mu, d.sigma, size=n)
    else:
        edges = np.asarray(d.bin_edges, dtype=float)
        w = np.asarray(d.weights, dtype=float)
        bins = rng.choice(len(w), size=n, p=w / w.sum())
        x = edges[bins] + rng.random(n) * (edges[bins + 1] - edges[bins])
    if scale != 1.0:
        x = x * scale
    # np.clip(np.rint(x), ...) in place: no temporaries (at 65,536 lengths 0.52 ms instead of 0.76 ms)
    np.rint(x, out=x)
    x.clip(minimum, maximum, out=x)
    return x.astype(np.int64)


def drift_scale(d: LengthDist, drift: Drift | None, cumulative_samples: float) -> float:
    """Multiplier on response lengths after ``cumulative_samples`` samples (1.0 without drift)."""
    if drift is None:
        return 1.0
    share = min(1.0, max(0.0, cumulative_samples / drift.over_samples))
    return 1.0 + (drift.final_mean_tokens / dist_mean(d) - 1.0) * share


def progress(w: Workload, learning: Learning, steps_done: int) -> float:
    """How far a run has come after ``steps_done`` steps, as ``response_length_by_samples`` and the drift count it
    (``workload.length_progress``): its cumulative samples, or its cumulative learning rate in samples at
    ``learning.reference_batch`` (each step adds that batch times the step's LR over lr0). Adam moves every weight
    by about the learning rate per step whatever the batch, so what the policy's answers have become (their
    lengths) follows the summed LR more closely than the samples seen (docs/results/validation_loops.md, issue 28)."""
    batch = w.responses_per_step
    if w.length_progress == "samples":
        return float(steps_done * batch)
    return steps_done * learning.reference_batch * lr_scale(learning.lr_rule, batch, learning.reference_batch)


def response_dist(w: Workload, cumulative_samples: float) -> LengthDist:
    """The response-length distribution of a step that starts after ``cumulative_samples`` samples (the run's
    :func:`progress`, which is its samples unless ``workload.length_progress`` says otherwise)."""
    for phase in w.response_length_by_samples:
        if phase.until_samples is None or cumulative_samples < phase.until_samples:
            return phase.length
    return w.response_length


def sample_step(w: Workload, rng: np.random.Generator, cumulative_samples: float) -> tuple[np.ndarray, np.ndarray]:
    """Prompt and response lengths for one step's B = P x G requests, group by group.

    The G responses of a prompt share its prompt length and are consecutive.
    """
    prompts = sample_lengths(w.prompt_length, w.prompts_per_step, rng, 0, w.max_prompt_tokens)
    dist = response_dist(w, cumulative_samples)
    scale = drift_scale(w.response_length, w.response_length_drift, cumulative_samples)
    responses = sample_lengths(dist, w.responses_per_step, rng, 1, w.max_response_tokens, scale)
    return prompts.repeat(w.group_size), responses


def lognormal_mean_for_clipped_mean(clipped_mean: float, sigma: float, cap: float) -> float:
    """The lognormal ``mean_tokens`` (before clipping) whose samples clipped at ``cap`` average ``clipped_mean``.

    E[min(X, c)] = m Phi((ln c - mu - s^2) / s) + c (1 - Phi((ln c - mu) / s)), mu = ln m - s^2 / 2; it rises
    monotonically in m toward c, so a clipped mean at or above the cap has no solution (ValueError).
    """
    # here, not at the top: it loads scipy (start-up time)
    from scipy.optimize import brentq
    from scipy.stats import norm

    if not 0 < clipped_mean < cap:
        raise ValueError(f"clipped mean {clipped_mean} must lie strictly between 0 and the cap {cap}")

    def clipped(m: float) -> float:
        mu = math.log(m) - sigma * sigma / 2.0
        z = (math.log(cap) - mu) / sigma
        return m * norm.cdf(z - sigma) + cap * norm.sf(z) - clipped_mean

    return float(brentq(clipped, clipped_mean, clipped_mean * 1e3, xtol=1e-6))


def clipped_mean(d: LengthDist, cap: float) -> float:
    """Mean of ``fixed`` or ``lognormal`` lengths clipped at ``cap`` (tokens; rounding to whole tokens aside):
    E[min(X, c)] = m Phi((ln c - mu - s^2) / s) + c (1 - Phi((ln c - mu) / s)); other forms: their mean, at most c."""
    if d.dist != "lognormal":
        return min(dist_mean(d), cap)
    from scipy.stats import norm  # here, not at the top: scipy is slow to load

    m, s = float(d.mean_tokens), float(d.sigma)  # type: ignore[arg-type]
    z = (math.log(cap) - math.log(m) + s * s / 2.0) / s
    return float(m * norm.cdf(z - s) + cap * norm.sf(z))


def with_clipped_mean(d: LengthDist, cap: float, mean: float) -> LengthDist:
    """``d`` (fixed or lognormal) moved so that its lengths clipped at ``cap`` average ``mean`` tokens."""
    if d.dist == "fixed":
        return dataclasses.replace(d, tokens=max(1, round(min(mean, cap))))
    if d.dist != "lognormal":
        raise ValueError(f"a {d.dist} length distribution has no single mean to move; give fixed or lognormal")
    return dataclasses.replace(d, mean_tokens=lognormal_mean_for_clipped_mean(mean, float(d.sigma), cap))  # type: ignore[arg-type]
