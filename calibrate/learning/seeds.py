"""Samples-to-target over seeds: the spread and the stall share of seeds at one batch.

:func:`seed_model`: a lognormal of samples-to-target with the seeds that never reached the target within their
budget as right-censored, and the share of seeds that stall, by maximum likelihood; :func:`stall_upper`: the stall
share's one-sided Clopper-Pearson bound. ``fit-learning`` (:mod:`calibrate.learning.fit`) and ``fit --runs``
(:mod:`calibrate.runs.learning`) fit them.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit
from scipy.stats import beta, norm

MIN_SPREAD = 0.01  # the least log-spread of samples-to-target over seeds seed_model fits


def seed_model(hits: list[float], censored: list[float]) -> tuple[float, float, float]:
    """Maximum-likelihood (mu, sigma, stall) of samples-to-target over seeds: a share ``stall`` of seeds never
    reaches the target, the others at lognormal(mu, sigma) samples. ``hits`` reached it at those samples,
    ``censored`` had not within those budgets (each either stalled or would have needed more: right-censored).
    With none censored, stall is 0 and (mu, sigma) the plain log mean and std; with one hit there is no spread to
    fit (sigma 0) and the stall share is the censored seeds' share."""
    x = np.log(np.asarray(hits, float))
    c = np.log(np.asarray(censored, float)) if censored else np.zeros(0)
    if x.size < 2:
        return float(x[0]), 0.0, c.size / (c.size + 1.0)
    mu0, s0 = float(x.mean()), float(max(x.std(ddof=1), 1e-3))
    if not c.size:
        return mu0, s0, 0.0

    def nll(p: np.ndarray) -> float:
        mu, log_s, logit_q = p
        # a floor on the spread: seeds that crossed at the same sample would otherwise drive it to 0, where the
        # density of their crossings is infinite and the stall share goes wherever the optimizer left it
        s, q = max(math.exp(log_s), MIN_SPREAD), float(expit(logit_q))
        hit = np.log1p(-q) + norm.logpdf(x, mu, s)
        cens = np.logaddexp(math.log(max(q, 1e-300)), np.log1p(-q) + norm.logsf(c, mu, s))
        return -(hit.sum() + cens.sum())

    best = None
    for q0 in (0.05, 0.3):  # a stall and a wide spread explain a censored seed alike: start from both
        sol = minimize(
            nll,
            np.array([mu0, math.log(s0), math.log(q0 / (1 - q0))]),
            method="Nelder-Mead",
            options={"xatol": 1e-7, "fatol": 1e-10, "maxiter": 4000},
        )
        best = sol if best is None or sol.fun < best.fun else best
    return float(best.x[0]), max(float(math.exp(best.x[1])), MIN_SPREAD), float(expit(best.x[2]))


def stall_upper(censored: int, runs: int, level: float = 0.9) -> float:
    """One-sided upper bound (Clopper-Pearson, ``level``) on the stall share: ``censored`` of ``runs`` seeds did
    not reach the target. With 0 of 6 it is 0.32: six seeds cannot rule out that a third stall."""
    return 1.0 if censored >= runs else float(beta.ppf(level, censored + 1, runs - censored))
