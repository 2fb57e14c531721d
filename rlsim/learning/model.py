"""Learning model: how many samples a configuration needs to reach the target metric. Pure functions.

Pieces (docs/reference.md sections 3-5):

* **Metric curve in samples** (ScaleRL's sigmoid, arXiv 2510.13786, with cumulative samples S in place of
  compute): ``R(S) = R0 + (A - R0) / (1 + (S_mid / S)^b)``. ``metric`` holds R0 (``initial``), A
  (``asymptote``), S_mid (``mid_samples``, at the reference batch with a trajectory-preserving LR) and b
  (``exponent``).
* **Samples multiplier** m >= 0 stretches the curve along samples: a configuration follows R(S / m), so its
  samples-to-target is m x N*_ref. m is the product of:
  - the batch term ``batch_multiplier`` in one of three forms: ``invariant`` (1 inside [batch_low, batch_high], an
    omitted bound leaving that side open,
    ``penalty_per_doubling`` per doubling outside), ``critical_batch`` (E = E_min (1 + B / B_crit) ** p,
    normalized to 1 at the reference batch; see below for p), or ``table`` (measured samples-to-target per batch,
    interpolated in log-log; it refuses to extrapolate unless ``allow_extrapolation`` is set, and then it warns);
  - the LR term: a rule that does not keep the trajectory of the trajectory-preserving rule (``invariant_rule``,
    sqrt for Adam: Malladi et al. 2022) pays ``untuned_lr_penalty`` per doubling-equivalent of LR mismatch,
    ``m_lr = untuned_lr_penalty ** (2 |log2(eta / eta*)|)``: with sqrt as the invariant rule, doubling the batch
    at a fixed LR costs exactly ``untuned_lr_penalty`` (default 1.67: the seed paper's fixed-LR control, P 128 ->
    256 untuned needs 1.67x the samples);
  - the staleness term for async schedules: ``(1 + staleness_penalty_per_step) ** (k - staleness_free_steps)``
    beyond the free steps (the ``stretch`` form), or by the loss trained with (``staleness_loss``,
    rlsim.learning.staleness): a lower ceiling, threshold-like in the maximum staleness.
* ``family``: tables per knob (batch, responses per prompt, LR rule, staleness) that move S_mid, b and A
  (rlsim.learning.family); N* is the moved sigmoid's inverse at the target, the multipliers above stretching it.
* ``ceiling_batches`` / ``ceilings``: the ceiling that moves with the batch. ScaleRL (arXiv 2510.13786) finds
  larger batches slower early and higher at the end, small batches stagnating: the batch moves the asymptote A,
  not only the samples axis. Measured at several batches (``rlsim-calibrate fit-learning``, where the batches'
  fitted asymptotes differ beyond their errors), A(B) is read in log batch between them (the nearest end beyond)
  and replaces ``metric.asymptote`` at the batch run; the ceiling term is the ratio of N* on that curve to N* on
  the reference curve, the other terms stretch it along samples, and a batch whose ceiling does not get past the
  target never reaches it (LearningModelError saying from which batch on the ceiling clears it). Unset (the
  default) every batch shares ``metric.asymptote``. ScaleRL's per-batch fits move C_mid and b with A (its Table 1);
  ``family`` carries all three, this table the ceiling alone.
* ``filtered_signal_power``: DAPO's dynamic sampling (``algorithm.dynamic_sampling``, its ``keep_rate`` the share of
  groups whose rewards differ) trains each step on groups that all carry a signal, where an unfiltered step's
  batch carries it in keep_rate x B of its B responses (the rest get zero advantage). With Adam at a fixed LR in
  the noise-dominated regime a step's progress grows as the square root of that batch (the derivation of p = 1/2
  below), so the trained samples to target scale by keep_rate ** 0.5 (and the generated ones, B / keep_rate per
  step, by keep_rate ** -0.5): filtering pays in steps and costs generation. The exponent is
  ``filtered_signal_power`` (default 0.5; 0: filtering changes nothing per trained sample, 1: nothing per
  generated sample); this CPU's GRPO runs gave 0.53-0.57 (docs/learning.md, "Filtering"), and
  ``rlsim-calibrate fit-filtering`` fits it from a user's runs with and without the filter.
* ``samples_spread``: the spread of samples-to-target across training seeds, as the standard deviation of its log
  (samples-to-target is lognormal over seeds, its median the model's N*; for a small spread this is the relative
  standard deviation). It sets the bands and the chance of reaching the target within a budget
  (:func:`reach_within`): a seed whose N* exceeds the run's budget (``run.max_steps`` x B samples) never gets
  there, so a prediction says how many seeds reach the target and how many samples those that do need.
* ``stall_probability``: the share of seeds that never reach the target whatever the budget (a GRPO run whose
  groups all score alike gets zero advantage and stops learning); the chance of reaching it within a budget is
  (1 - stall_probability) x P(N* <= budget). Measured at several batches (``stall_batches`` / ``stall_shares``,
  from ``rlsim-calibrate fit-learning``) it moves with the batch (:func:`stall_at`): PPO stalls more at both ends
  of its invariant range (docs/results/validation_loops.md). Measured at the reference batch alone it is carried to
  other batches by ``stall_form``: ``constant``, or ``signal_free_steps`` for PPO, whose advantages are whitened over
  the batch: a step that holds no correct answer still updates the policy at full size, along the critic's
  errors, and each such step is a small independent chance h that the seed drifts into a constant wrong answer
  it never leaves. Early on a response is correct with probability p0 (``initial_success``), a step of B holds
  none with probability (1 - p0) ** B, and the early phase spans about the same samples S at every batch in the
  invariant range, so a seed meets S (1 - p0) ** B / B such steps and stalls with 1 - exp(-h S (1 - p0) ** B / B);
  h S is fitted from the reference share, so q(B) = 1 - (1 - q_ref) ** r with r the ratio of those counts
  (:func:`signal_free_ratio`). Small batches meet many more (r = 5 at a quarter of B = 64 with p0 = 0.0045),
  large ones fewer. GRPO's signal-free groups get zero advantage and no update, so this hazard is PPO's.

The power p of the critical-batch form (``critical_power``):

* p = 1 is McCandlish et al. 2018 (arXiv 1812.06162): E = E_min (1 + B / B_noise) with the learning rate tuned
  for each batch, derived for SGD.
* p = 1/2 is Adam under the sqrt rule, eta = eta0 sqrt(B / B0), to first order in eta. Per coordinate, Adam's
  second moment tracks E[g_hat^2] = g^2 + sigma^2 / B, so one step lowers the loss by about
  eta g^2 / sqrt(g^2 + sigma^2 / B). Per sample that is eta0 / sqrt(B0) * g^2 / sqrt(B g^2 + sigma^2), so the
  samples for a given progress grow as sqrt(1 + B / B_noise) with B_noise = sigma^2 / g^2: invariance while the
  noise dominates (B << B_noise, the regime where the sqrt rule preserves the trajectory, Malladi et al. 2022),
  then sqrt(B) growth once Adam's normalized step is signal-dominated (each step moves about eta, and eta grows
  only as sqrt(B)). It assumes eta below the curvature limit (second-order term dropped) and one aggregate
  noise scale; calibrate.runs.fit uses it, with B_noise = B_simple, for runs trained with the sqrt rule.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from rlsim.errors import RlsimError
from rlsim.learning.family import clearing_words, moved_curve
from rlsim.learning.groups import group_multiplier
from rlsim.learning.staleness import retained_gain, with_staleness
from rlsim.schema import BatchMultiplier, Learning, MetricCurve, Scenario
from rlsim.workload.lr_rules import lr_scale


class LearningModelError(RlsimError, ValueError):
    """The learning model cannot answer (target out of reach, a table asked to extrapolate)."""


def lr_multiplier(learning: Learning, batch: float) -> float:
    """Samples multiplier for using ``learning.lr_rule`` instead of the trajectory-preserving rule."""
    used = lr_scale(learning.lr_rule, batch, learning.reference_batch)
    ideal = lr_scale(learning.invariant_rule, batch, learning.reference_batch)
    mismatch = abs(math.log2(used / ideal))
    return learning.untuned_lr_penalty ** (2.0 * mismatch)


# ---------------------------------------------------------------------------------------------- curve


def mid_samples_through(initial: float, asymptote: float, exponent: float, samples: float, target: float) -> float:
    """The S_mid that puts ``target`` at ``samples`` on the curve from ``initial`` to ``asymptote`` with
    ``exponent``: R(samples) = target solved for S_mid (``initial < target < asymptote``)."""
    gain = (target - initial) / (asymptote - initial)
    return samples * (1.0 / gain - 1.0) ** (1.0 / exponent)


def reference_samples_to_target(curve: MetricCurve, target: float) -> float:
    """N*_ref: samples at which R(S) first reaches ``target`` (inverse of the sigmoid)."""
    lo, hi = sorted((curve.initial, curve.asymptote))
    if not lo < target < hi:
        raise LearningModelError(
            f"learning.target {target} is out of reach: the metric curve runs from {curve.initial} to "
            f"{curve.asymptote}; choose a target strictly between them"
        )
    gain = (target - curve.initial) / (curve.asymptote - curve.initial)
    # in logs: a small exponent makes the power overflow
    log_samples = math.log(curve.mid_samples) - math.log(1.0 / gain - 1.0) / curve.exponent
    if log_samples > math.log(1e30):
        raise LearningModelError(
            f"learning.metric: reaching the target {target} needs more than 1e30 samples (exponent "
            f"{curve.exponent}, mid_samples {curve.mid_samples}); check the metric curve"
        )
    return math.exp(log_samples)


# ---------------------------------------------------------------------------------------------- batch


def batch_multiplier(bm: BatchMultiplier, batch: float, reference_batch: float) -> tuple[float, list[str]]:
    """Samples multiplier of the batch term (1 at the reference batch for every form) and any warnings."""
    if bm.form == "invariant":
        return _invariant(bm, batch) / _invariant(bm, reference_batch), []
    if bm.form == "critical_batch":
        ratio = (1.0 + batch / bm.critical_batch) / (1.0 + reference_batch / bm.critical_batch)  # type: ignore[operator]
        return ratio**bm.critical_power, []
    value, warnings = _table(bm, batch)
    ref, ref_warnings = _table(bm, reference_batch)
    return value / ref, warnings + ref_warnings


MAX_LOG_MULTIPLIER = math.log(1e30)  # a samples multiplier beyond 1e30 is a broken model, not a prediction


def _invariant(bm: BatchMultiplier, batch: float) -> float:
    log_m = 0.0  # in logs: a large penalty over many doublings overflows a float
    if bm.batch_high is not None and batch > bm.batch_high:
        log_m = math.log(bm.penalty_per_doubling) * math.log2(batch / bm.batch_high)
    elif bm.batch_low is not None and batch < bm.batch_low:
        log_m = math.log(bm.penalty_per_doubling_below) * math.log2(bm.batch_low / batch)
    if log_m > MAX_LOG_MULTIPLIER:
        raise LearningModelError(
            f"learning.batch_multiplier: at batch {batch:g} the samples multiplier exceeds 1e30 (penalty per "
            "doubling over that many doublings); check batch_low, batch_high and the penalties"
        )
    return math.exp(log_m)


def _table(bm: BatchMultiplier, batch: float) -> tuple[float, list[str]]:
    xs = np.log(np.asarray(bm.batches, dtype=float))
    ys = np.log(np.asarray(bm.samples_to_target, dtype=float))
    x = math.log(batch)
    if xs[0] <= x <= xs[-1]:
        return float(math.exp(np.interp(x, xs, ys))), []
    lo, hi = bm.batches[0], bm.batches[-1]  # type: ignore[index]
    msg = f"batch {batch:g} is outside the samples-to-target table's batches [{lo:g}, {hi:g}]"
    if not bm.allow_extrapolation:
        raise LearningModelError(
            f"learning.batch_multiplier: {msg}; add a measured point or set "
            "learning.batch_multiplier.allow_extrapolation: true to extrapolate the end slopes in log-log"
        )
    i, j = (0, 1) if x < xs[0] else (-2, -1)
    slope = (ys[j] - ys[i]) / (xs[j] - xs[i])
    return float(math.exp(ys[i] + slope * (x - xs[i]))), [f"{msg}; extrapolated in log-log"]


# ---------------------------------------------------------------------------------------------- together


@dataclass(frozen=True)
class SamplesToTarget:
    samples: float  # N* for this configuration
    reference_samples: float  # N*_ref at the reference batch with the trajectory-preserving rule
    batch_multiplier: float
    lr_multiplier: float
    staleness_multiplier: float
    warnings: tuple[str, ...] = ()
    # the curve the run follows and its samples multiplier along it: learning.metric and ``multiplier``, except
    # under a staleness loss (rlsim.learning.staleness), whose curve tops out lower and is stretched by the batch
    # and LR terms alone (its staleness_multiplier is then the ratio of the two curves' N*)
    curve: MetricCurve | None = None
    curve_multiplier: float | None = None
    group_multiplier: float = 1.0  # responses per prompt against the reference runs' (rlsim.learning.groups)
    # N* on the batch's ceiling (learning.ceilings) against the reference curve's; None: no ceiling table
    ceiling_multiplier: float | None = None
    # DAPO's dynamic sampling: keep_rate ** learning.filtered_signal_power; None: no filter
    filter_multiplier: float | None = None
    # N* on the curve learning.family moves (rlsim.learning.family) over N* on the curve before; None: no table
    family_multiplier: float | None = None

    @property
    def multiplier(self) -> float:
        return (
            self.batch_multiplier
            * self.lr_multiplier
            * self.staleness_multiplier
            * self.group_multiplier
            * (1.0 if self.ceiling_multiplier is None else self.ceiling_multiplier)
            * (1.0 if self.filter_multiplier is None else self.filter_multiplier)
            * (1.0 if self.family_multiplier is None else self.family_multiplier)
        )


def samples_to_target(
    learning: Learning,
    batch: int,
    mean_staleness: float = 0.0,
    group_size: int | None = None,
    keep_rate: float | None = None,
) -> SamplesToTarget:
    """N* (trained samples) for ``batch`` responses per step under ``learning`` (raises LearningModelError when it
    cannot); ``group_size``: responses per prompt, which counts apart from the batch when
    learning.reference_group_size is set (rlsim.learning.groups); ``keep_rate``: the share of groups DAPO's dynamic
    sampling keeps, when it filters (module docstring, ``filtered_signal_power``)."""
    if learning.metric is None or learning.target is None:
        raise LearningModelError("learning.metric and learning.target are needed for samples-to-target")
    ref = reference_samples_to_target(learning.metric, learning.target)
    base, cmul = ceiling_curve(learning, batch, ref)
    bmul, warnings = batch_multiplier(learning.batch_multiplier, batch, learning.reference_batch)
    # the curve family (rlsim.learning.family) moves S_mid, b and A; an LR table replaces the untuned-LR penalty
    moved, family_warnings = moved_curve(learning, base, batch, mean_staleness, group_size)
    warnings = warnings + list(family_warnings)
    famul = None if moved is base else family_samples(learning, base, moved, batch, mean_staleness, group_size)
    n_moved = ref * cmul * (famul or 1.0)  # N* on the moved curve
    base = moved
    lmul = 1.0 if learning.family.lr is not None else lr_multiplier(learning, batch)
    if learning.staleness_loss == "stretch":
        beyond = max(0.0, mean_staleness - learning.staleness_free_steps)
        smul = (1.0 + learning.staleness_penalty_per_step) ** beyond
        curve, curve_mul = base, bmul * lmul * smul
    else:  # threshold-like, by the loss (rlsim.learning.staleness): the curve's ceiling moves
        curve = with_staleness(base, learning.staleness_loss, mean_staleness, learning.staleness_form)
        try:
            smul = reference_samples_to_target(curve, learning.target) / n_moved
        except LearningModelError:
            kept = retained_gain(learning.staleness_loss, mean_staleness, learning.staleness_form)
            raise LearningModelError(
                f"learning.staleness_loss {learning.staleness_loss} at max staleness {mean_staleness:g} keeps "
                f"{kept:.0%} of the metric's gain, so the curve "
                f"tops out at {curve.asymptote:.4g}, short of the target {learning.target:g}: lower "
                "schedule.max_staleness or train with a loss that tolerates it (decoupled_ppo loses nothing up to 4)"
            ) from None
        curve_mul = bmul * lmul
    gmul = 1.0  # a group table (learning.family.group) replaces the informative-share term
    if learning.reference_group_size is not None and group_size is not None and learning.family.group is None:
        gmul = group_multiplier(
            learning.metric,
            ref,
            group_size,
            learning.reference_group_size,
            learning.prompt_concentration,
            learning.group_correlation,
        )
    fmul = None if keep_rate is None else float(keep_rate) ** learning.filtered_signal_power
    return SamplesToTarget(
        n_moved * bmul * lmul * smul * gmul * (fmul or 1.0),
        ref,
        bmul,
        lmul,
        smul,
        tuple(warnings),
        curve,
        curve_mul * gmul * (fmul or 1.0),
        gmul,
        None if learning.ceilings is None else cmul,  # (ceiling_at is None exactly when no table is set)
        fmul,
        famul,
    )


def family_samples(
    learning: Learning,
    base: MetricCurve,
    moved: MetricCurve,
    batch: float,
    mean_staleness: float,
    group_size: int | None,
) -> float:
    """N* on ``moved`` (``base`` moved by learning.family) over N* on ``base``; where the moved ceiling does not
    clear the target, LearningModelError naming the knob values at which it does."""
    target = learning.target
    assert target is not None  # samples_to_target checked it
    lo, hi = sorted((moved.initial, moved.asymptote))
    if not lo < target < hi:
        where = clearing_words(learning, base, target, batch, mean_staleness, group_size)
        at = f"a batch of {batch:g} responses" + (f", staleness {mean_staleness:g}" if mean_staleness else "")
        raise LearningModelError(
            f"learning.family moves the curve's ceiling to {moved.asymptote:.4g} at {at}, short of the target "
            f"{target:g}, so this configuration never reaches it; {where}"
        )
    return reference_samples_to_target(moved, target) / reference_samples_to_target(base, target)


def scenario_samples_to_target(scenario: Scenario) -> SamplesToTarget | None:
    """N* of a whole scenario: its batch, staleness, responses per prompt and dynamic sampling's keep rate; None
    without a metric curve."""
    if scenario.learning.metric is None:
        return None
    ds = scenario.algorithm.dynamic_sampling
    return samples_to_target(
        scenario.learning,
        scenario.workload.responses_per_step,
        scenario.schedule.staleness,
        scenario.workload.group_size,
        ds.keep_rate if ds is not None else None,
    )


def ceiling_at(learning: Learning, batch: float) -> float | None:
    """The curve's ceiling at ``batch`` (learning.ceilings read in log batch between learning.ceiling_batches, the
    nearest end beyond them); None where no table is set (metric.asymptote at every batch)."""
    if learning.ceiling_batches is None or learning.ceilings is None:
        return None
    xs = np.log(np.asarray(learning.ceiling_batches, dtype=float))
    return float(np.interp(math.log(batch), xs, np.asarray(learning.ceilings, dtype=float)))


MAX_CEILING_SPREAD = 2.0  # the log-sd a ceiling's error may add to the band (a ceiling within its error of the target)


def ceiling_spread(learning: Learning, batch: float) -> float:
    """The log standard deviation of N* at ``batch`` that the ceiling's one-sigma error (learning.ceiling_errors,
    read in log batch as the ceilings are) moves it by: half the log ratio of N* with the ceiling one error lower
    and one higher, at most MAX_CEILING_SPREAD (where the lower ceiling misses the target); 0 without errors."""
    top = ceiling_at(learning, batch)
    if top is None or learning.ceiling_errors is None or learning.metric is None or learning.target is None:
        return 0.0
    xs = np.log(np.asarray(learning.ceiling_batches, dtype=float))
    err = float(np.interp(math.log(batch), xs, np.asarray(learning.ceiling_errors, dtype=float)))
    if err <= 0:
        return 0.0
    sign = 1.0 if learning.metric.asymptote > learning.metric.initial else -1.0
    try:
        n = [
            reference_samples_to_target(dataclasses.replace(learning.metric, asymptote=top + d), learning.target)
            for d in (-sign * err, sign * err)
        ]
    except LearningModelError:
        return MAX_CEILING_SPREAD
    return min(0.5 * abs(math.log(n[0] / n[1])), MAX_CEILING_SPREAD)


def ceiling_curve(learning: Learning, batch: float, ref: float) -> tuple[MetricCurve, float]:
    """The metric curve at ``batch`` with its ceiling there (:func:`ceiling_at`) and the ceiling term: N* on it over
    ``ref`` (N* on learning.metric). Where that ceiling does not clear the target, raises LearningModelError
    saying at which batches it does (:func:`clearing_batches`)."""
    top = ceiling_at(learning, batch)
    if top is None or learning.metric is None or learning.target is None:
        return learning.metric, 1.0  # type: ignore[return-value]
    curve = dataclasses.replace(learning.metric, asymptote=top)
    try:
        return curve, reference_samples_to_target(curve, learning.target) / ref
    except LearningModelError:
        where = clearing_batches(learning)
        raise LearningModelError(
            f"learning.ceilings put the curve's ceiling at {top:.4g} at a batch of {batch:g} responses, short of the "
            f"target {learning.target:g}; the ceiling clears it {where}: use such a batch or lower the target"
        ) from None


def clearing_batches(learning: Learning) -> str:
    """Where learning.ceilings get past the target, in words: the batches (responses per step) between which the
    ceiling read in log batch clears it, e.g. "from about 2,896 responses per step"."""
    xs, cs = learning.ceiling_batches or (), learning.ceilings or ()
    up = learning.metric is not None and learning.metric.asymptote > learning.metric.initial
    gap = [(c - learning.target) * (1 if up else -1) for c in cs]  # > 0: clears
    spans, start = [], None
    for i, (x, g) in enumerate(zip(xs, gap)):
        if i > 0 and (g > 0) != (gap[i - 1] > 0):  # a crossing inside (xs[i-1], x), linear in log batch
            t = gap[i - 1] / (gap[i - 1] - g)
            at = math.exp(math.log(xs[i - 1]) + t * (math.log(x) - math.log(xs[i - 1])))
            if g > 0:
                start = at
            else:
                spans.append((start, at))
                start = None
        elif i == 0 and g > 0:
            start = 0.0
    if start is not None:
        spans.append((start, None))
    words = []
    for lo, hi in spans:
        if not lo and hi is None:
            words.append("at every batch")
        elif hi is None:
            words.append(f"from about {lo:,.0f} responses per step")
        elif not lo:
            words.append(f"up to about {hi:,.0f} responses per step")
        else:
            words.append(f"between about {lo:,.0f} and {hi:,.0f} responses per step")
    return " and ".join(words) or "at no batch"


def signal_free_ratio(batch: float, reference_batch: float, initial_success: float) -> float:
    """How many more steps without a correct answer a run at ``batch`` takes than one at ``reference_batch`` over
    the same early samples, while its responses are correct with probability ``initial_success`` (p0): a step of
    B responses holds none with probability (1 - p0) ** B, and S samples are S / B steps, so the count per sample
    is (1 - p0) ** B / B and the ratio (B_ref / B) (1 - p0) ** (B - B_ref)."""
    return (reference_batch / batch) * math.exp((batch - reference_batch) * math.log1p(-initial_success))


def carried_stall(share: float, ratio: float) -> float:
    """A stall share measured where a seed meets some number of hazards, carried to ``ratio`` times as many:
    1 - (1 - q) ** ratio (each hazard independently stalls the seed with the same small chance)."""
    return 1.0 - (1.0 - share) ** ratio


def stall_at(learning: Learning, batch: float) -> float:
    """The share of seeds that stall at ``batch``: ``stall_shares`` read in log batch between ``stall_batches`` (the
    nearest end beyond them) where fit-learning measured it at several batches; else ``stall_probability`` at
    the reference batch, carried to ``batch`` by ``stall_form``: the same share (``constant``), or as a hazard
    per step that holds no correct answer (``signal_free_steps``, PPO: module docstring)."""
    if learning.stall_batches is not None and learning.stall_shares is not None:
        xs = np.log(np.asarray(learning.stall_batches, dtype=float))
        return float(np.interp(math.log(batch), xs, np.asarray(learning.stall_shares, dtype=float)))
    if learning.stall_form == "signal_free_steps" and learning.initial_success is not None:
        ratio = signal_free_ratio(batch, learning.reference_batch, learning.initial_success)
        return min(carried_stall(learning.stall_probability, ratio), 0.999)
    return learning.stall_probability


@dataclass(frozen=True)
class Reach:
    """Seeds against a budget: N* over seeds is lognormal(log median, sigma) (module docstring)."""

    probability: float  # P(N* <= budget): the share of seeds that reach the target within the budget
    samples_if_reached: float  # median N* over the seeds that do (the lognormal truncated at the budget)
    budget_samples: float


def reach_within(median_samples: float, log_sigma: float, budget_samples: float, stall: float = 0.0) -> Reach:
    """The chance that a seed reaches the target within ``budget_samples`` (a share ``stall`` of seeds never does)
    and the median samples-to-target of the seeds that do. With no spread every seed that does not stall needs
    ``median_samples``."""
    if median_samples <= 0 or budget_samples <= 0:
        raise LearningModelError("reach_within needs positive median and budget samples")
    if log_sigma <= 0:
        hit = median_samples <= budget_samples
        return Reach((1.0 - stall) if hit else 0.0, median_samples, budget_samples)
    # the standard normal's CDF and quantile from the standard library: scipy.special's ndtr / ndtri agree to
    # 1e-12 relative (tests/rlsim/test_learning.py), and importing scipy.special took a third of `rlsim run`

    z = (math.log(budget_samples) - math.log(median_samples)) / log_sigma
    p = 0.5 * math.erfc(-z / math.sqrt(2.0))
    if p <= 1e-300:  # no seed gets there: the conditional median is the budget itself
        return Reach(0.0, budget_samples, budget_samples)
    cond = math.exp(math.log(median_samples) + log_sigma * NormalDist().inv_cdf(p / 2.0))
    return Reach((1.0 - stall) * p, cond, budget_samples)
