"""Which staleness form a user's own asynchronous runs follow, and its constants (``rlsim-calibrate
fit-staleness``; issue 33).

The forms are rlsim.learning.staleness's, each a statement about the whole learning curve at maximum staleness k
against the curve f of the runs at the smallest staleness k0 (a sigmoid fitted to their pooled evaluations from
the initial metric R0):

* ``stretch`` (the seed paper's, with a threshold): the same curve, slower: ``f(S / (1 + p) ** (k' - k0'))`` with
  ``k' = max(k, free)``, so nothing is lost up to ``free`` steps; p and free fitted (free on a half-step grid);
* ``naive_ppo`` and ``decoupled_ppo``: AReaL's constants (no fit): the gain kept shrinks to ``c(k) / c(k0)``,
  ``R0 + c(k) / c(k0) (f(S) - R0)``;
* ``fitted``: that threshold form with its three constants (free steps, ceiling loss, half steps) fitted to the
  runs: a grid over free steps and half steps with the ceiling loss profiled out.

Every evaluated point of the runs beyond k0 is scored; the form with the lowest Bayesian information criterion
(n ln(RSS / n) + params ln n, so that the fitted form's three constants must earn their place) is chosen, and
every form's RMS error is printed so that a near tie is seen. Also reported, model-free: the gain at the largest
sample count every run reached (the mean of each run's evaluations in its last fifth up to there, runs of one
staleness averaged) over the k0 runs' gain; and the chosen form's error in samples (``spread``: the RMS over
stalenesses of log measured / predicted samples to R0 + 3/4 of the k0 gain), which the profile carries into an
async run's time-to-target band (``learning.staleness_spread``). A run's staleness is the largest
``staleness`` its run log records (the policy versions between a rollout's weights and the update that trains on
it).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibrate import CalibrateError
from calibrate.learning.checks import run_points
from calibrate.learning.curve import first_crossing, fit_sigmoid_checked
from rlsim.learning.curve import metric_at
from rlsim.learning.staleness import LOSSES, StalenessLoss
from rlsim.scenario import MetricCurve

FORMS = ("stretch", *LOSSES, "fitted")
PARAMS = {"stretch": 2, "naive_ppo": 0, "decoupled_ppo": 0, "fitted": 3}
LEVEL = 0.75  # the level the form's error in samples is read at: R0 + LEVEL x the k0 runs' gain
WINDOW = 0.2  # the share of the common samples, ending there, whose evaluations give a run's gain
FITTED_SOURCE = "fitted by rlsim-calibrate fit-staleness to the user's runs"


@dataclass(frozen=True)
class StalenessFit:
    loss: str  # the form chosen (one of FORMS)
    retained: dict[int, float]  # measured gain at each staleness over the smallest staleness's
    runs: dict[int, int]  # runs per staleness
    rms: dict[str, float]  # each form's root-mean-square error over the points of the runs beyond k0
    bic: dict[str, float]  # each form's information criterion (the lowest is chosen)
    at_samples: float  # the common sample count ``retained`` is read at
    base_gain: float  # the k0 runs' gain there, over ``initial``
    initial: float  # the initial metric R0
    reference: MetricCurve  # the sigmoid of the runs at the smallest staleness
    base_staleness: int  # k0
    penalty_per_step: float  # stretch: the fitted p
    free_steps: float  # stretch: the staleness that costs nothing
    constants: StalenessLoss  # fitted: the threshold form's constants
    spread: float = 0.0  # the chosen form's error: RMS over stalenesses of log(measured / predicted samples to a level)
    level: float | None = None  # that level: R0 + 3/4 of the k0 runs' gain at ``at_samples``

    def predict(self, form: str, staleness: float, samples: Any) -> np.ndarray:
        """The eval metric ``form`` predicts at ``samples`` for runs at max staleness ``staleness``."""
        s = np.asarray(samples, dtype=float)
        staleness = np.asarray(staleness, dtype=float)
        if form == "stretch":
            beyond = np.maximum(staleness, self.free_steps) - max(self.base_staleness, self.free_steps)
            return metric_at(self.reference, s / (1.0 + self.penalty_per_step) ** beyond)
        kept = _kept(self.constants if form == "fitted" else LOSSES[form], staleness, self.base_staleness)
        return self.initial + kept * (metric_at(self.reference, s) - self.initial)


def run_staleness(run: Sequence[Mapping[str, Any]]) -> int:
    """The largest ``staleness`` a run log records (0 when none does: a synchronous run)."""
    values = [rec.get("staleness") for rec in run if rec.get("staleness") is not None]
    return int(max(values)) if values else 0


def run_initial(run: Sequence[Mapping[str, Any]]) -> float | None:
    """The metric before training, when the run log records it (``eval_metric_initial``, rlsim-real)."""
    for rec in run:
        v = rec.get("eval_metric_initial")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            return float(v)
    return None


def _kept(form: StalenessLoss, k: Any, k0: float) -> Any:
    """c(k) / c(k0) of a threshold form (k may be an array)."""
    return _share(form, np.asarray(k, dtype=float)) / _share(form, np.asarray(float(k0)))


def _share(form: StalenessLoss, k: np.ndarray) -> np.ndarray:
    beyond = np.maximum(k - form.free_steps, 0.0)
    return 1.0 - form.ceiling_loss * (1.0 - 2.0 ** (-beyond / form.half_steps))


def fit_staleness(runs: Sequence[Sequence[Mapping[str, Any]]], initial: float | None = None) -> StalenessFit:
    """The staleness form ``runs`` (run logs of one setup at two or more maximum stalenesses) follow (module
    docstring). ``initial``: the metric before training (default: the runs' ``eval_metric_initial``, else their
    mean first evaluation)."""
    points = [run_points(run, i) for i, run in enumerate(runs)]  # fit-learning's checks and messages
    ks = [run_staleness(run) for run in runs]
    if len(set(ks)) < 2:
        raise CalibrateError(
            f"all {len(runs)} runs have maximum staleness {ks[0] if ks else '?'}: give runs at two or more "
            "stalenesses (schedule.max_staleness, or rlsim-real train --staleness) of one setup"
        )
    if initial is None:
        logged = [v for v in map(run_initial, runs) if v is not None]
        initial = float(np.mean(logged)) if logged else float(np.mean([m[0] for _, m in points]))
    r0 = float(initial)
    k0 = min(ks)
    base = [p for p, k in zip(points, ks) if k == k0]
    s0 = np.concatenate([s for s, _ in base])
    order = np.argsort(s0, kind="stable")
    try:
        ref = fit_sigmoid_checked(s0[order], np.concatenate([m for _, m in base])[order], r0, 0.0, None)
    except CalibrateError as exc:
        raise CalibrateError(f"the runs at staleness {k0} (the reference curve): {exc}") from None
    reference = ref.to_metric_curve()
    retained, at, base_gain = _retained(points, ks, r0)
    others = [(s, m, k) for (s, m), k in zip(points, ks) if k != k0]
    s_all = np.concatenate([s for s, _, _ in others])
    m_all = np.concatenate([m for _, m, _ in others])
    k_all = np.concatenate([np.full(s.size, k, dtype=float) for s, _, k in others])
    gain = metric_at(reference, s_all) - r0
    p, free = _fit_stretch(reference, s_all, m_all, k_all, k0)
    constants = _fit_threshold(gain, m_all - r0, k_all, k0)
    counts = {k: ks.count(k) for k in sorted(set(ks))}
    fit = StalenessFit(
        "", retained, counts, {}, {}, at, base_gain, r0, reference, k0, p, free, constants
    )  # no form yet
    n = m_all.size
    rms, bic = {}, {}
    for form in FORMS:
        rss = float(np.sum((fit.predict(form, k_all, s_all) - m_all) ** 2))
        rms[form] = math.sqrt(rss / n)
        bic[form] = n * math.log(max(rss, 1e-300) / n) + PARAMS[form] * math.log(n)
    loss = min(FORMS, key=lambda f: (bic[f], FORMS.index(f)))
    level = r0 + LEVEL * base_gain
    return dataclasses.replace(fit, loss=loss, rms=rms, bic=bic, spread=_spread(fit, loss, others, level), level=level)


def _spread(fit: StalenessFit, form: str, runs: list[tuple[np.ndarray, np.ndarray, int]], level: float) -> float:
    """RMS over stalenesses of log(measured / predicted samples to ``level``): the measured one the geometric mean
    of the runs at that staleness that reach it, the predicted one where the form's curve first does (on a grid to
    ten times the runs' samples). Stalenesses whose runs or prediction never reach it are left out."""
    errors = []
    for k in sorted({k for _, _, k in runs}):
        hits = [first_crossing(s, m, level) for s, m, kk in runs if kk == k]
        hits = [h for h in hits if h is not None and h > 0]
        top = max(float(s[-1]) for s, _, kk in runs if kk == k)
        grid = np.linspace(top / 2000.0, 10.0 * top, 20_000)
        curve = fit.predict(form, k, grid)
        reach = np.flatnonzero(curve >= level)
        if hits and reach.size:
            errors.append(float(np.mean(np.log(hits))) - math.log(float(grid[reach[0]])))
    return math.sqrt(float(np.mean(np.square(errors)))) if errors else 0.0


def metric_near(s: np.ndarray, m: np.ndarray, at: float) -> float:
    """A run's metric at ``at`` samples: the mean of its evaluations over the last fifth up to there (interpolated
    when none falls in it)."""
    window = (s >= (1.0 - WINDOW) * at) & (s <= at)
    return float(np.mean(m[window])) if window.any() else float(np.interp(at, s, m))


def _retained(points, ks, r0: float) -> tuple[dict[int, float], float, float]:
    """The model-free summary: each staleness's gain at the common samples over the smallest staleness's."""
    at = min(float(s[-1]) for s, _ in points)
    gains: dict[int, list[float]] = {}
    for (s, m), k in zip(points, ks):
        gains.setdefault(k, []).append(metric_near(s, m, at) - r0)
    k0 = min(gains)
    base = float(np.mean(gains[k0]))
    if not base > 0:
        raise CalibrateError(
            f"the runs at staleness {k0} gained {base:.4g} over the initial metric {r0:.4g} by {at:.0f} samples: "
            "no gain to compare the others with (run longer, or give --initial)"
        )
    return {k: float(np.mean(v)) / base for k, v in sorted(gains.items())}, at, base


def _fit_stretch(reference: MetricCurve, s: np.ndarray, m: np.ndarray, k: np.ndarray, k0: int) -> tuple[float, float]:
    """The stretch's p and free steps: free on a half-step grid up to the largest staleness; for each, p on a grid in
    log p from 1e-4 to 10 refined once around the best."""

    def sse(p: float, free: float) -> float:
        beyond = np.maximum(k, free) - max(k0, free)
        return float(np.sum((metric_at(reference, s / (1.0 + p) ** beyond) - m) ** 2))

    best = (math.inf, 0.0, 0.0)
    coarse = np.concatenate([[0.0], np.geomspace(1e-4, 10.0, 41)])
    for free in np.arange(0.0, float(k.max()) + 0.25, 0.5):
        p = min(coarse, key=lambda x: sse(x, free))
        fine = np.geomspace(p / 1.26, p * 1.26, 11) if p > 0 else np.linspace(0.0, 1e-4, 3)
        p = min(fine, key=lambda x: sse(x, free))
        err = sse(p, free)
        if err < best[0] - 1e-12:
            best = (err, float(p), float(free))
    return best[1], best[2]


def _fit_threshold(gain: np.ndarray, y: np.ndarray, k: np.ndarray, k0: int) -> StalenessLoss:
    """The threshold form's constants: free steps on a half-step grid up to the largest staleness, half steps on a
    log grid, the ceiling loss L in [0, 1) on a fine grid (the prediction R0 + c(k) / c(k0) gain(S))."""
    k_max = float(k.max())
    losses = np.linspace(0.0, 0.99, 100)[:, None]
    best = (math.inf, StalenessLoss(k_max, 0.0, 1.0, FITTED_SOURCE))
    for free in np.arange(0.0, k_max + 0.25, 0.5):
        for half in np.geomspace(0.25, 64.0, 25):
            h = 1.0 - 2.0 ** (-np.maximum(k - free, 0.0) / half)
            h0 = 1.0 - 2.0 ** (-max(k0 - free, 0.0) / half)
            kept = (1.0 - losses * h[None, :]) / (1.0 - losses * h0)
            sse = np.sum((kept * gain[None, :] - y[None, :]) ** 2, axis=1)
            i = int(np.argmin(sse))
            if sse[i] < best[0] - 1e-12:
                best = (float(sse[i]), StalenessLoss(float(free), float(losses[i, 0]), float(half), FITTED_SOURCE))
    return best[1]


def profile_learning(fit: StalenessFit, loss: str | None = None) -> dict[str, Any]:
    """The profile's learning keys for the chosen form. ``loss``: the loss the runs trained with (their
    config.json's ``staleness_loss``), which names the fitted constants; without it they go under the published
    loss whose constants fit the runs better."""
    spread = {"staleness_spread": fit.spread}
    if fit.loss == "stretch":
        return {"staleness_loss": "stretch", "staleness_penalty_per_step": fit.penalty_per_step,
                "staleness_free_steps": fit.free_steps, "staleness_form": None, **spread}  # fmt: skip
    if fit.loss in LOSSES:
        return {"staleness_loss": fit.loss, "staleness_form": None, **spread}
    name = loss if loss in LOSSES else min(LOSSES, key=lambda f: fit.rms[f])
    c = fit.constants
    return {"staleness_loss": name, "staleness_form": [c.free_steps, c.ceiling_loss, c.half_steps], **spread}
