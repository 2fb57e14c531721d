"""The learning model against hand-computed values (rlsim.learning.model)."""

import math

import numpy as np
import pytest

from rlsim.learning.curve import metric_at, sigmoid_fraction
from rlsim.learning.model import (
    LearningModelError,
    batch_multiplier,
    lr_multiplier,
    mid_samples_through,
    reference_samples_to_target,
    samples_to_target,
)
from rlsim.scenario import BatchMultiplier, Learning, MetricCurve

CURVE = MetricCurve(initial=0.2, asymptote=0.8, mid_samples=1000.0, exponent=2.0)


def test_sigmoid_midpoint_and_inverse():
    assert metric_at(CURVE, 1000.0) == pytest.approx(0.5)  # half the gain at mid_samples
    assert metric_at(CURVE, 2000.0) == pytest.approx(0.2 + 0.6 / (1 + 0.25))
    n = reference_samples_to_target(CURVE, 0.7)
    # (1000 / n)^2 = 1/gain - 1 = 0.6/0.5 - 1 = 0.2  ->  n = 1000 / sqrt(0.2)
    assert n == pytest.approx(1000 / math.sqrt(0.2))
    assert metric_at(CURVE, n) == pytest.approx(0.7)
    # a multiplier m stretches the curve: m times the samples for the same metric
    assert metric_at(CURVE, 3 * n, multiplier=3.0) == pytest.approx(0.7)
    assert np.all(np.diff(metric_at(CURVE, np.linspace(1, 1e5, 50))) > 0)


def test_sigmoid_fraction_by_hand():
    """The curve's shape, defined once: 1 / (1 + (S_mid / S)^b), 0 at S = 0 whatever the exponent."""
    assert sigmoid_fraction(1000.0, 1000.0, 2.0) == 0.5
    assert sigmoid_fraction(2000.0, 1000.0, 2.0) == pytest.approx(1 / (1 + 0.25))
    assert sigmoid_fraction(0.0, 1000.0, 1e-3) == 0.0 and metric_at(CURVE, 0.0) == CURVE.initial
    assert sigmoid_fraction(1e-9, 1e12, 50.0) == 0.0 and sigmoid_fraction(1e12, 1e-9, 50.0) == 1.0  # overflow: limits
    grid = sigmoid_fraction(np.array([[500.0, 1000.0, 4000.0]]), 1000.0, np.array([[1.0], [2.0]]))  # broadcasts
    np.testing.assert_allclose(grid, [[1 / 3, 0.5, 0.8], [0.2, 0.5, 16 / 17]])


def test_mid_samples_through_puts_the_target_there():
    """S_mid such that the curve reaches the target at given samples: the inverse finds those samples back."""
    mid = mid_samples_through(0.2, 0.8, 2.0, 5000.0, 0.7)
    assert mid == pytest.approx(5000.0 * math.sqrt(0.2))  # (S_mid / 5000)^2 = 1/gain - 1 = 0.2
    curve = MetricCurve(initial=0.2, asymptote=0.8, mid_samples=mid, exponent=2.0)
    assert reference_samples_to_target(curve, 0.7) == pytest.approx(5000.0, rel=1e-12)


@pytest.mark.parametrize("target", [0.2, 0.8, 0.9, 0.1])
def test_target_out_of_reach(target):
    with pytest.raises(LearningModelError, match="out of reach"):
        reference_samples_to_target(CURVE, target)


@pytest.mark.parametrize(
    "rule, batch, expected",
    [
        ("sqrt", 4096, 1.0),  # the trajectory-preserving rule costs nothing anywhere
        ("sqrt", 64, 1.0),
        ("none", 2048, 1.67),  # the paper's fixed-LR control: doubling the batch untuned
        ("none", 512, 1.67),  # halving untuned: the same LR mismatch
        ("none", 4096, 1.67**2),
        ("linear", 2048, 1.67),  # linear overshoots sqrt by sqrt(2) at 2x, as none undershoots it
    ],
)
def test_lr_multiplier(rule, batch, expected):
    learning = Learning(lr_rule=rule, reference_batch=1024, untuned_lr_penalty=1.67)
    assert lr_multiplier(learning, batch) == pytest.approx(expected)


def test_batch_multiplier_forms():
    inv = BatchMultiplier(form="invariant", batch_low=512, batch_high=8192, penalty_per_doubling=1.5)
    assert batch_multiplier(inv, 1024, 1024)[0] == 1.0
    assert batch_multiplier(inv, 8192, 1024)[0] == 1.0
    assert batch_multiplier(inv, 16384, 1024)[0] == pytest.approx(1.5)
    assert batch_multiplier(inv, 65536, 1024)[0] == pytest.approx(1.5**3)
    assert batch_multiplier(inv, 256, 1024)[0] == 1.0  # no penalty below unless asked
    crit = BatchMultiplier(form="critical_batch", critical_batch=2048)
    # E = E_min (1 + B / B_crit), relative to the reference batch 1024
    assert batch_multiplier(crit, 4096, 1024)[0] == pytest.approx((1 + 2) / (1 + 0.5))
    adam = BatchMultiplier(form="critical_batch", critical_batch=2048, critical_power=0.5)
    assert batch_multiplier(adam, 4096, 1024)[0] == pytest.approx(math.sqrt(3 / 1.5))
    assert batch_multiplier(adam, 1024, 1024)[0] == 1.0
    # far above B_crit each doubling costs sqrt(2) under Adam's power 1/2, 2 under McCandlish's power 1
    big = 2048 * 1e6
    assert batch_multiplier(adam, 2 * big, big)[0] == pytest.approx(math.sqrt(2), rel=1e-5)
    assert batch_multiplier(crit, 2 * big, big)[0] == pytest.approx(2, rel=1e-5)
    table = BatchMultiplier(form="table", batches=(512, 2048, 8192), samples_to_target=(1e5, 1e5, 4e5))
    assert batch_multiplier(table, 2048, 512)[0] == pytest.approx(1.0)
    assert batch_multiplier(table, 4096, 512)[0] == pytest.approx(2.0)  # log-log midpoint of 1e5 and 4e5
    with pytest.raises(LearningModelError, match=r"outside .* \[512, 8192\].*allow_extrapolation"):
        batch_multiplier(table, 16384, 512)
    loose = BatchMultiplier(
        form="table", batches=(512, 2048, 8192), samples_to_target=(1e5, 1e5, 4e5), allow_extrapolation=True
    )
    value, warnings = batch_multiplier(loose, 16384, 512)
    assert value == pytest.approx(8.0) and "extrapolated" in warnings[0]


def test_samples_to_target_combines_the_terms():
    learning = Learning(
        lr_rule="none",
        reference_batch=1024,
        metric=CURVE,
        target=0.7,
        untuned_lr_penalty=2.0,
        batch_multiplier=BatchMultiplier(form="critical_batch", critical_batch=1024),
        staleness_penalty_per_step=0.1,
    )
    n = samples_to_target(learning, 2048, mean_staleness=2)
    ref = 1000 / math.sqrt(0.2)
    assert n.batch_multiplier == pytest.approx(3 / 2)
    assert n.lr_multiplier == pytest.approx(2.0)
    assert n.staleness_multiplier == pytest.approx(1.21)
    assert n.samples == pytest.approx(ref * 1.5 * 2.0 * 1.21)


def test_reach_within_agrees_with_scipy_to_the_last_digits():
    """reach_within takes the normal CDF and quantile from the standard library (math.erfc, statistics.NormalDist),
    not scipy.special (whose import took a third of `rlsim run`): the same values to 1e-12 relative."""
    from scipy.special import ndtr, ndtri

    from rlsim.learning.model import reach_within

    for budget in np.geomspace(1e2, 1e9, 301):
        for sigma in (0.05, 0.1, 0.3, 1.0, 2.5):
            r = reach_within(20000.0, sigma, float(budget))
            z = (math.log(budget) - math.log(20000.0)) / sigma
            p = float(ndtr(z))
            if p <= 1e-300:
                continue
            assert r.probability == pytest.approx(p, rel=1e-12, abs=1e-300)
            cond = math.exp(math.log(20000.0) + sigma * float(ndtri(p / 2.0)))
            assert r.samples_if_reached == pytest.approx(cond, rel=1e-12)


def test_reach_within_is_the_truncated_lognormal():
    """P(reach) = (1 - stall) Phi(ln(budget / median) / sigma); the median of the seeds that reach the target is
    the lognormal's quantile at half that probability (hand values from scipy.stats.norm)."""
    import math

    from scipy.stats import norm

    from rlsim.learning.model import reach_within

    r = reach_within(20000.0, 0.3, 19200.0)
    p = norm.cdf(math.log(19200 / 20000) / 0.3)
    assert r.probability == pytest.approx(p) and 0.44 < p < 0.45
    assert r.samples_if_reached == pytest.approx(20000 * math.exp(0.3 * norm.ppf(p / 2)))
    assert r.samples_if_reached < 19200
    assert reach_within(20000.0, 0.3, 19200.0, stall=0.25).probability == pytest.approx(0.75 * p)
    assert reach_within(20000.0, 0.3, 1e12).probability == pytest.approx(1.0)
    assert reach_within(20000.0, 0.0, 10000.0).probability == 0.0  # no spread: every seed needs the median
