"""calibrate.learning: certified-value tests (data generated from known parameters, then recovered)."""

from __future__ import annotations

import copy
import json
import math
import sys

import numpy as np
import pytest

from calibrate import CalibrateError
from calibrate.learning.batch import CriticalBatchFit, fit_critical_batch, table_multiplier
from calibrate.learning.curve import SigmoidFit, fit_sigmoid, samples_to_target, samples_to_target_from_fit
from calibrate.learning.fit import fit_learning
from calibrate.learning.invariance import invariance_score
from calibrate.learning.noise import b_simple_pooled
from rlsim.learning import model as rl
from rlsim.learning.curve import metric_at
from rlsim.scenario import BatchMultiplier, Learning, MetricCurve

R0, A, S_MID, B = 0.2, 0.8, 5e4, 1.5


def sigmoid(s, r0=R0, a=A, s_mid=S_MID, b=B):
    s = np.asarray(s, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(s > 0, r0 + (a - r0) / (1 + (s_mid / np.where(s > 0, s, 1.0)) ** b), r0)


def curve_points(n=60, s_max=4 * S_MID, noise=0.0, seed=0, **kw):
    s = np.linspace(0.0, s_max, n)
    m = sigmoid(s, **kw)
    if noise:
        m = m + np.random.default_rng(seed).normal(0.0, noise, m.size)
        m[0] = kw.get("r0", R0)
    return s, m


def rel(x, y):
    return abs(x - y) / abs(y)


# ---------------------------------------------------------------------------------------------- sigmoid


def test_sigmoid_exact_recovery():
    s, m = curve_points()
    fit = fit_sigmoid(s, m)
    assert isinstance(fit, SigmoidFit)
    assert fit.R0 == R0
    assert rel(fit.A, A) < 1e-6 and rel(fit.S_mid, S_MID) < 1e-6 and rel(fit.b, B) < 1e-6
    assert fit.rmse < 1e-8 and fit.num_points == 60 and fit.samples_range == (0.0, 4 * S_MID)
    assert fit.asymptote_err < 1e-6 and fit.mid_samples_err < 1e-6 * S_MID and fit.exponent_err < 1e-6


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sigmoid_noisy_recovery_within_a_few_percent(seed):
    s, m = curve_points(noise=0.005, seed=seed)
    fit = fit_sigmoid(s, m)
    assert rel(fit.A, A) < 0.02 and rel(fit.S_mid, S_MID) < 0.05 and rel(fit.b, B) < 0.05
    assert 0.003 < fit.rmse < 0.007
    # one-sigma uncertainties are finite, positive and cover the truth at 4 sigma
    for est, err, true in (
        (fit.A, fit.asymptote_err, A),
        (fit.S_mid, fit.mid_samples_err, S_MID),
        (fit.b, fit.exponent_err, B),
    ):
        assert 0 < err < math.inf
        assert abs(est - true) < 4 * err


def test_sigmoid_other_shape_and_given_r0():
    # steep curve observed only up to 1.5 x S_mid, no point at S = 0: R0 given
    kw = dict(r0=0.05, a=0.6, s_mid=2e6, b=4.0)
    s = np.linspace(2e5, 3e6, 40)
    fit = fit_sigmoid(s, sigmoid(s, **kw), r0=0.05)
    assert rel(fit.A, 0.6) < 1e-4 and rel(fit.S_mid, 2e6) < 1e-4 and rel(fit.b, 4.0) < 1e-4


def test_sigmoid_exclude_fraction_drops_early_points():
    s, m = curve_points(n=61)
    fit = fit_sigmoid(s, m, exclude_fraction=0.25)
    assert fit.num_points == 46 and fit.samples_range[0] == pytest.approx(S_MID)
    assert fit.R0 == R0  # R0 still the first observed metric
    assert rel(fit.A, A) < 1e-5 and rel(fit.S_mid, S_MID) < 1e-5


def test_sigmoid_asymptote_bounded_by_upper():
    s = np.linspace(0.0, 7e4, 30)
    m = sigmoid(s, a=1.3)  # a metric that would saturate above 1, observed below 1
    assert m.max() < 1.0
    capped = fit_sigmoid(s, m)
    assert capped.A == pytest.approx(1.0) and "asymptote" in capped.at_bound
    free = fit_sigmoid(s, m, upper=None)
    assert rel(free.A, 1.3) < 1e-4 and free.at_bound == ()


def test_sigmoid_three_points_has_infinite_uncertainty():
    s = np.array([0.0, 5e4, 1e5])
    fit = fit_sigmoid(s, sigmoid(s))
    assert fit.num_points == 3 and math.isinf(fit.asymptote_err)
    assert fit.to_dict()["uncertainty"]["asymptote"] is None


def test_metric_curve_matches_rlsim():
    s, m = curve_points(noise=0.005)
    fit = fit_sigmoid(s, m)
    curve = fit.to_metric_curve()
    assert isinstance(curve, MetricCurve)
    assert (curve.initial, curve.asymptote, curve.mid_samples, curve.exponent) == (fit.R0, fit.A, fit.S_mid, fit.b)
    np.testing.assert_allclose(metric_at(curve, s[1:]), fit.predict(s[1:]), rtol=1e-12)
    json.dumps(fit.to_dict(), allow_nan=False)


@pytest.mark.parametrize("noise, exponent", [(0.0, B), (0.01, B), (0.0, 0.02)])
def test_fitted_curve_is_rlsims_formula(noise, exponent):
    """One sigmoid: the curve calibrate fits and evaluates is rlsim.learning.model's, to the last bit. The points here
    come from rlsim's formula (not the test's own), the fit's residuals are measured with it, and a flat exponent
    keeps R(0) = R0 (a power form that clamps S = 0 to a tiny number does not)."""
    truth = MetricCurve(initial=R0, asymptote=A, mid_samples=S_MID, exponent=exponent)
    s = np.linspace(0.0, 4 * S_MID, 60)
    m = metric_at(truth, s) + np.random.default_rng(3).normal(0.0, noise, s.size)
    fit = fit_sigmoid(s, m, r0=R0)
    curve = fit.to_metric_curve()
    np.testing.assert_array_equal(fit.predict(s), metric_at(curve, s))
    assert fit.predict(0.0) == R0 and metric_at(curve, 0.0) == R0
    assert fit.rmse == pytest.approx(math.sqrt(np.mean((metric_at(curve, s) - m) ** 2)), rel=1e-12, abs=1e-15)
    if noise == 0.0 and exponent == B:  # exact points: the fit recovers rlsim's curve
        assert rel(fit.A, A) < 1e-6 and rel(fit.S_mid, S_MID) < 1e-6 and rel(fit.b, B) < 1e-6


# ---------------------------------------------------------------------------------------------- samples-to-target


def test_samples_to_target_by_hand():
    s, m = [0, 100, 200, 300], [0.1, 0.3, 0.5, 0.7]
    assert samples_to_target(s, m, 0.4) == pytest.approx(150.0)
    assert samples_to_target(s, m, 0.5) == pytest.approx(200.0)  # a point on the target
    assert samples_to_target(s, m, 0.65) == pytest.approx(275.0)
    assert samples_to_target(s, m, 0.05) == 0.0  # the first point already meets it
    assert samples_to_target(s, m, 0.8) is None  # never reached
    # first crossing, not the last: 0.1 -> 0.5 crosses 0.4 at 75, the dip and second crossing do not count
    assert samples_to_target([0, 100, 200, 300], [0.1, 0.5, 0.3, 0.6], 0.4) == pytest.approx(75.0)


def test_samples_to_target_from_fit():
    s, m = curve_points()
    fit = fit_sigmoid(s, m)
    n = samples_to_target_from_fit(fit, 0.6)
    # R = 0.6: gain 2/3, (S_mid / N)^b = 1/2
    assert n == pytest.approx(S_MID * 2 ** (1 / B), rel=1e-6)
    assert float(fit.predict(n)) == pytest.approx(0.6, abs=1e-9)
    assert samples_to_target_from_fit(fit, 0.1) == 0.0
    assert samples_to_target_from_fit(fit, 0.9) is None
    # measured first crossing on dense points agrees with the inverse
    assert samples_to_target(s, m, 0.6) == pytest.approx(n, rel=0.01)


# ---------------------------------------------------------------------------------------------- critical batch


BATCHES = [64, 128, 256, 512, 1024, 2048, 4096]


def test_critical_batch_exact_recovery():
    e = [1e5 * (1 + b / 512) for b in BATCHES]
    fit = fit_critical_batch(BATCHES, e)
    assert isinstance(fit, CriticalBatchFit)
    assert rel(fit.B_crit, 512) < 1e-6 and rel(fit.E_min, 1e5) < 1e-6
    assert fit.min_steps == pytest.approx(512 * 1e5, rel=1e-6)
    assert fit.at_bound == "" and fit.rms_log_residual < 1e-9
    bm = fit.to_batch_multiplier()
    assert bm == BatchMultiplier(form="critical_batch", critical_batch=fit.critical_batch)
    # rlsim's multiplier reproduces the measured ratios
    m, _ = rl.batch_multiplier(bm, 2048, 256)
    assert m == pytest.approx(e[5] / e[2], rel=1e-6)


def test_critical_batch_noisy_recovery_and_uncertainty():
    rng = np.random.default_rng(3)
    e = [1e5 * (1 + b / 512) * math.exp(rng.normal(0, 0.03)) for b in BATCHES for _ in range(3)]
    bb = [b for b in BATCHES for _ in range(3)]
    fit = fit_critical_batch(bb, e)
    assert rel(fit.B_crit, 512) < 0.15 and rel(fit.E_min, 1e5) < 0.1
    assert 0 < fit.critical_batch_err < math.inf and abs(fit.B_crit - 512) < 4 * fit.critical_batch_err
    assert fit.num_points == 21 and fit.batch_range == (64.0, 4096.0)


def test_critical_batch_invariant_samples_hits_upper_bound():
    fit = fit_critical_batch([128, 256, 512], [1e5, 1e5, 1e5])
    assert fit.at_bound == "upper" and fit.B_crit >= 512 * 999


def test_critical_batch_two_points_exact_with_infinite_uncertainty():
    fit = fit_critical_batch([256, 1024], [1e5 * (1 + 256 / 300), 1e5 * (1 + 1024 / 300)])
    assert rel(fit.B_crit, 300) < 1e-6 and math.isinf(fit.critical_batch_err)
    assert fit.to_dict()["uncertainty"]["critical_batch"] is None


def test_table_multiplier_sorts_and_merges_seeds():
    bm = table_multiplier([512, 128, 512], [4e5, 1e5, 9e5])
    assert bm.form == "table" and bm.batches == (128.0, 512.0)
    assert bm.samples_to_target == pytest.approx((1e5, 6e5))  # geometric mean of 4e5 and 9e5
    m, _ = rl.batch_multiplier(bm, 512, 128)
    assert m == pytest.approx(6.0)


# ---------------------------------------------------------------------------------------------- invariance


def test_invariance_identical_curves_score_one():
    s, m = curve_points()
    score = invariance_score({256: (s, m), 512: (s.copy(), m.copy())})
    for key in ("mean_ratio", "max_ratio", "mean_gstd", "max_gstd"):
        assert score[key] == pytest.approx(1.0)
    assert score["stretch"] == {"256": pytest.approx(1.0), "512": pytest.approx(1.0)}


def test_invariance_stretch_by_two_gives_ratio_two():
    s, m = curve_points()
    score = invariance_score({256: (s, m), 512: (2 * s, m)}, target=0.6)
    assert score["mean_ratio"] == pytest.approx(2.0) and score["max_ratio"] == pytest.approx(2.0)
    assert score["mean_gstd"] == pytest.approx(math.sqrt(2.0))
    assert score["stretch"]["512"] == pytest.approx(2.0)
    assert score["at_target"]["ratio"] == pytest.approx(2.0)
    assert score["at_target"]["samples"]["256"] == pytest.approx(samples_to_target(s, m, 0.6))
    assert len(score["levels"]) == 50 and score["level_range"] == [pytest.approx(R0), pytest.approx(m.max())]


def test_invariance_orders_stretches():
    s, m = curve_points()
    one_and_half = invariance_score({1: (s, m), 2: (1.5 * s, m)})
    three = invariance_score({1: (s, m), 2: (1.5 * s, m), 4: (3 * s, m)})
    assert 1.0 < one_and_half["mean_ratio"] < three["mean_ratio"]
    assert three["max_ratio"] == pytest.approx(3.0)
    assert three["stretch"] == {"1": pytest.approx(1.0), "2": pytest.approx(1.5), "4": pytest.approx(3.0)}
    assert 1.0 < one_and_half["mean_gstd"] < three["mean_gstd"]


def test_invariance_common_range_only():
    s, m = curve_points()
    short = s[:20], m[:20]  # this curve stops early: levels stop at its maximum
    score = invariance_score({1: (s, m), 2: short})
    assert score["level_range"][1] == pytest.approx(m[19])
    assert score["mean_ratio"] == pytest.approx(1.0)
    assert score["at_target"] is None


# ---------------------------------------------------------------------------------------------- B_simple


def grad_records(g2=0.5, tr=200.0, bs=64, bb=512, steps=400, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    recs = []
    for t in range(1, steps + 1):
        small = (g2 + tr / bs) * (1 + noise * rng.normal())
        big = (g2 + tr / bb) * (1 + noise * rng.normal())
        recs.append(
            {
                "step": t,
                "grad_norm_sq_small": small,
                "grad_norm_sq_big": big,
                "grad_batch_small": bs,
                "grad_batch_big": bb,
            }
        )
    return recs


def test_b_simple_exact():
    out = b_simple_pooled([grad_records(steps=10)])
    assert out["b_simple"] == pytest.approx(400.0)
    assert out["grad_sq"] == pytest.approx(0.5) and out["trace_sigma"] == pytest.approx(200.0)
    assert out["num_steps"] == 10 and out["num_runs"] == 1 and out["unusable"] == []
    json.dumps(out, allow_nan=False)


def test_b_simple_skips_records_without_keys_and_accepts_swapped_batches():
    recs = grad_records(steps=5, bs=512, bb=64)
    recs.insert(2, {"step": 99, "eval_metric": None})
    out = b_simple_pooled([recs])
    assert out["num_steps"] == 5 and out["b_simple"] == pytest.approx(400.0)


def test_b_simple_pooled_names_or_skips_a_run_that_cannot_give_it():
    good, one_batch = grad_records(steps=5), grad_records(steps=5, bs=64, bb=64)
    with pytest.raises(CalibrateError, match=r"^seed7: step 1: grad_batch_small == grad_batch_big"):
        b_simple_pooled([good, one_batch], names=["seed3", "seed7"])
    out = b_simple_pooled([good, one_batch], names=["seed3", "seed7"], skip_unusable=True)
    assert out["b_simple"] == pytest.approx(400.0) and out["num_runs"] == 1
    assert len(out["unusable"]) == 1 and out["unusable"][0].startswith("seed7: ")
    none = b_simple_pooled([one_batch], skip_unusable=True)
    assert none["b_simple"] is None and none["num_steps"] == 0 and none["unusable"][0].startswith("run 0: ")


def test_b_simple_pooled_is_the_ratio_of_pooled_means():
    """Pooled over runs: mean tr(Sigma) / mean |G|^2 over every step, not the mean of per-run ratios."""
    a = grad_records(g2=0.5, tr=200.0, steps=10)  # B_noise 400
    b = grad_records(g2=1.5, tr=200.0, steps=30)  # B_noise 133
    out = b_simple_pooled([a, b])
    assert out["b_simple"] == pytest.approx(200.0 / ((10 * 0.5 + 30 * 1.5) / 40))
    assert out["num_steps"] == 40 and out["num_runs"] == 2
    lo, hi = out["interval"]
    assert lo <= out["b_simple"] <= hi


def test_b_simple_pooled_recovers_noisy_truth_with_an_honest_interval():
    runs = [grad_records(noise=0.3, seed=s, steps=60) for s in range(4)]
    out = b_simple_pooled(runs)
    lo, hi = out["interval"]
    assert lo < 400.0 < hi and hi - lo < 400.0  # the 16-84% bootstrap interval covers the truth and is finite
    assert rel(out["b_simple"], 400.0) < 0.25
    assert b_simple_pooled(runs)["interval"] == out["interval"]  # seeded


def test_b_simple_pooled_refuses_runs_logged_at_one_batch():
    with pytest.raises(CalibrateError, match=r"two different batch sizes"):
        b_simple_pooled([grad_records(steps=3, bs=64, bb=64)])


# ---------------------------------------------------------------------------------------------- fit_learning


def run_log(batch, ref_batch=512, b_crit=1024.0, steps=None, eval_every=1, noise=0.0, seed=0, grads=False):
    """A run at ``batch`` whose curve is the reference curve stretched by E(B)/E(ref), E = E_min (1 + B/B_crit)."""
    mult = (1 + batch / b_crit) / (1 + ref_batch / b_crit)
    steps = steps or int(math.ceil(4 * S_MID * mult / batch))
    rng = np.random.default_rng(seed)
    recs = []
    for t in range(1, steps + 1):
        s = t * batch
        rec = {
            "step": t,
            "cumulative_samples": s,
            "responses": batch,
            "eval_metric": None,
            "wall_s": 10.0 * t,
            "lr": 1e-6 * math.sqrt(batch / ref_batch),
        }
        if t == 1 or t % eval_every == 0:
            rec["eval_metric"] = float(sigmoid(s / mult)) + (noise * rng.normal() if noise else 0.0)
        if grads:
            rec.update(grad_records(steps=1)[0] | {"step": t})
        recs.append(rec)
    return recs


def test_fit_learning_recovers_curve_and_critical_batch():
    runs = [run_log(b, grads=(b == 512)) for b in (256, 512, 1024, 2048)]
    fit = fit_learning(runs, target=0.6, reference_batch=512)
    assert fit.reference_batch == 512
    ref = fit.curves[512]
    # first eval is after one step, so R0 is slightly above the true 0.2: A, S_mid, b still within a few %
    assert rel(ref.A, A) < 0.02 and rel(ref.S_mid, S_MID) < 0.03 and rel(ref.b, B) < 0.05
    assert rel(fit.critical_batch.B_crit, 1024) < 0.05
    assert set(fit.samples_source.values()) == {"measured"}
    assert len(fit.runs) == 4 and all(r.samples_to_target is not None for r in fit.runs)
    # curves are stretched by E(2048)/E(256) = 3 / 1.25 = 2.4 end to end
    assert fit.invariance["max_ratio"] == pytest.approx(2.4, rel=0.05)
    assert fit.b_simple[512]["b_simple"] == pytest.approx(400.0)

    prof = fit.to_profile_learning()
    text = json.dumps(prof, allow_nan=False)
    assert json.loads(text) == prof
    assert prof["batch_multiplier"]["form"] == "critical_batch"
    assert prof["target"] == 0.6 and prof["reference_batch"] == 512
    assert set(prof["samples_to_target"]) == {"256", "512", "1024", "2048"}
    assert prof["b_simple"] == {"512": pytest.approx(400.0)}
    assert "levels" not in prof["invariance"] and prof["invariance"]["mean_ratio"] > 1

    # the fitted model predicts the measured samples-to-target at every batch through rlsim
    learning = fit.to_learning(Learning(lr0=1e-6))
    assert learning.reference_batch == 512 and learning.target == 0.6
    for b, n in fit.samples_to_target.items():
        assert rl.samples_to_target(learning, b).samples == pytest.approx(n, rel=0.05)


def test_fit_learning_noisy_seeds_and_fallback_to_fit():
    runs = [run_log(b, eval_every=5, noise=0.005, seed=s) for b in (256, 1024) for s in (0, 1)]
    runs.append(run_log(4096, steps=60, eval_every=5, noise=0.005, seed=7))  # stops before the target
    fit = fit_learning(runs, target=0.6)
    assert fit.reference_batch == 256  # default: the smallest batch reaching the target
    assert fit.samples_source == {256: "measured", 1024: "measured", 4096: "fit"}
    assert any("B=4096" in note for note in fit.notes)
    assert 0 < fit.samples_spread < 0.2
    assert rel(fit.critical_batch.B_crit, 1024) < 0.3


def test_fit_learning_leaves_out_a_batch_that_never_gets_there():
    runs = [run_log(256), run_log(512), run_log(1024, steps=3)]
    # B=1024 barely starts: its fitted curve flattens below the target, so the batch fits leave it out
    fit = fit_learning(runs, target=0.6)
    assert set(fit.samples_to_target) == {256, 512} and 1024 in fit.curves
    assert fit.notes == ("B=1024: the target 0.6 is not reached, measured or by the fit; left out",)
    assert fit.critical_batch.batch_range == (256.0, 512.0)


def _flat(batch, steps=40):
    """A seed that never learns: its metric stays at R0 (docs/results/validation_loops.md, the PPO seeds at B = 16)."""
    return [
        {"step": t, "cumulative_samples": t * batch, "responses": batch, "eval_metric": R0, "wall_s": 1.0 * t}
        for t in range(1, steps + 1)
    ]


def test_fit_learning_measures_the_stall_share_at_each_batch():
    """Issue 28: seeds that never learn are counted per batch, not fitted: at 256 every seed learns (share 0), at
    512 one of four stalls and the other three give samples-to-target, at 128 none learns (Jeffreys' mean
    4.5 / 5). The profile carries the table, rlsim reads it in log batch, and P(reach) moves with it."""
    n512 = len(run_log(512))
    runs = [run_log(256, seed=s) for s in range(4)]
    runs += [run_log(512, noise=0.01, seed=s) for s in range(3)] + [_flat(512, n512)]
    runs += [_flat(128) for _ in range(4)]
    fit = fit_learning(runs, target=0.6, reference_batch=256)
    assert fit.stall_by_batch[256] == 0.0 and fit.stall_by_batch[128] == pytest.approx(4.5 / 5)
    assert 0.1 < fit.stall_by_batch[512] < 0.5  # one censored of four: a stall (its budget is the others')
    # the three that learn cross where the curve does: R(S) = 0.6 at S = S_mid x 2 ** (2 / 3)
    assert fit.samples_to_target[512] == pytest.approx(S_MID * 2 ** (2 / 3), rel=0.1)
    assert fit.seeds_by_batch == {128: (4, 0), 256: (4, 4), 512: (4, 3)}
    assert 128 not in fit.samples_to_target and any("run 11 (B=128)" in n for n in fit.notes)
    prof = fit.to_profile_learning()
    assert prof["stall_batches"] == [128.0, 256.0, 512.0] and prof["fitted_range"]["batch"] == [128, 512]
    learning = fit.to_learning(Learning(lr0=1e-6))
    assert rl.stall_at(learning, 256) == 0.0 and rl.stall_at(learning, 128) == pytest.approx(0.9)
    assert rl.stall_at(learning, 181) == pytest.approx(0.45, rel=0.01)  # halfway in log batch
    assert rl.stall_at(learning, 64) == rl.stall_at(learning, 128)  # the nearest end beyond


def test_a_stall_table_must_be_whole():
    from rlsim.errors import ScenarioError
    from rlsim.scenario import from_dict

    base = {"model": "Qwen2.5-1.5B", "hardware": {"gpu": "H100-SXM", "num_gpus": 1}}
    with pytest.raises(ScenarioError, match="stall_shares come together"):
        from_dict({**base, "learning": {"stall_batches": [16, 64]}})
    with pytest.raises(ScenarioError, match="increasing"):
        from_dict({**base, "learning": {"stall_batches": [64, 16], "stall_shares": [0.1, 0.2]}})
    with pytest.raises(ScenarioError, match=r"\[0, 1\)"):
        from_dict({**base, "learning": {"stall_batches": [16, 64], "stall_shares": [1.0, 0.2]}})


# ---------------------------------------------------------------------------------------------- inputs untouched


def test_fit_functions_do_not_mutate_inputs():
    s, m = curve_points(noise=0.005)
    s_list, m_list = list(s), list(m)
    s_copy, m_copy, sl_copy = s.copy(), m.copy(), list(s_list)
    fit_sigmoid(s, m, exclude_fraction=0.1)
    fit_sigmoid(s_list, m_list)
    samples_to_target(s, m, 0.5)
    invariance_score({1: (s, m), 2: (s_list, m_list)})
    np.testing.assert_array_equal(s, s_copy)
    np.testing.assert_array_equal(m, m_copy)
    assert s_list == sl_copy and m_list == list(m_copy)

    bb, e = [512, 128, 256], [3e5, 1e5, 2e5]
    bb0, e0 = list(bb), list(e)
    fit_critical_batch(bb, e)
    table_multiplier(bb, e)
    assert bb == bb0 and e == e0

    recs = grad_records(steps=5)
    recs0 = copy.deepcopy(recs)
    b_simple_pooled([recs])
    assert recs == recs0

    runs = [run_log(256, grads=True), run_log(512)]
    runs0 = copy.deepcopy(runs)
    fit_learning(runs, target=0.6)
    assert runs == runs0


def test_calibrate_never_imports_torch_or_vllm():
    assert "calibrate.learning.fit" in sys.modules
    import subprocess

    code = "import sys, calibrate.learning.fit; print(any(m in sys.modules for m in ('torch', 'vllm')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------------------------- bad input


S4, M4 = [0.0, 1e4, 2e4, 3e4], [0.2, 0.3, 0.4, 0.5]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(samples=S4, metric=[0.2, float("nan"), 0.4, 0.5]), r"metric holds a non-finite value .* index 1"),
        (dict(samples=S4, metric=[0.2, None, 0.4, 0.5]), r"non-finite value"),
        (dict(samples=S4[:2], metric=M4[:2]), r"at least 3 evaluated points; got 2"),
        (dict(samples=[0.0, 2e4, 1e4, 3e4], metric=M4), r"strictly increasing"),
        (dict(samples=[0.0, 1e4, 1e4, 3e4], metric=M4), r"strictly increasing"),
        (dict(samples=[-1.0, 1e4, 2e4, 3e4], metric=M4), r"negative"),
        (dict(samples=S4, metric=M4[:3]), r"4 values but metric has 3"),
        (dict(samples=S4, metric=M4, exclude_fraction=1.0), r"exclude_fraction .* must be in \[0, 1\)"),
        (dict(samples=S4, metric=M4, exclude_fraction=0.5), r"after excluding .* 2 remain"),
        (dict(samples=S4, metric=[0.2, 0.6, 1.2, 1.3]), r"above upper = 1"),
        (dict(samples=S4, metric=[0.5, 0.4, 0.3, 0.2]), r"never rises above R0"),
        (dict(samples=S4, metric=M4, r0=float("nan")), r"r0 .* finite"),
        (dict(samples=[[0, 1], [2, 3]], metric=M4), r"samples must be one-dimensional; got shape \(2, 2\)"),
        (dict(samples=5.0, metric=M4), r"samples must be one-dimensional"),
        (dict(samples="abc", metric=M4), r"sequence of numbers"),
    ],
)
def test_fit_sigmoid_refuses(kwargs, match):
    with pytest.raises(CalibrateError, match=match):
        fit_sigmoid(**kwargs)


def test_samples_to_target_refuses():
    with pytest.raises(CalibrateError, match=r"target nan must be a finite number"):
        samples_to_target(S4, M4, float("nan"))
    with pytest.raises(CalibrateError, match=r"strictly increasing"):
        samples_to_target([0, 2, 1], [0.1, 0.2, 0.3], 0.15)
    with pytest.raises(CalibrateError, match=r"non-finite"):
        samples_to_target([0, 1, 2], [0.1, float("nan"), 0.3], 0.15)
    fit = fit_sigmoid(*curve_points())
    with pytest.raises(CalibrateError, match=r"target 'x' must be a finite number"):
        samples_to_target_from_fit(fit, "x")


@pytest.mark.parametrize(
    ("batches", "samples", "match"),
    [
        ([256, 256], [1e5, 2e5], r"two or more distinct batch sizes; got 1"),
        ([256], [1e5], r"two or more distinct batch sizes"),
        ([256, 512], [1e5], r"batches has 2 values but samples_to_target has 1"),
        ([256, 0], [1e5, 2e5], r"must be > 0"),
        ([256, 512], [1e5, -2e5], r"must be > 0"),
        ([256, 512], [1e5, float("nan")], r"samples_to_target holds a non-finite value"),
    ],
)
def test_batch_fits_refuse(batches, samples, match):
    with pytest.raises(CalibrateError, match=match):
        fit_critical_batch(batches, samples)
    with pytest.raises(CalibrateError, match=match):
        table_multiplier(batches, samples)


def test_invariance_refuses():
    s, m = curve_points()
    with pytest.raises(CalibrateError, match=r"two or more curves; got 1"):
        invariance_score({1: (s, m)})
    with pytest.raises(CalibrateError, match=r"do not overlap in metric"):
        invariance_score({1: (s, m), 2: (s, m + 1.0)})
    with pytest.raises(CalibrateError, match=r"must be a \(samples, metric\) pair"):
        invariance_score({1: (s, m), 2: s})
    with pytest.raises(CalibrateError, match=r"curve 2 needs at least 2 evaluated points"):
        invariance_score({1: (s, m), 2: (s[:1], m[:1])})
    with pytest.raises(CalibrateError, match=r"n_levels"):
        invariance_score({1: (s, m), 2: (s, m)}, n_levels=0)


def test_b_simple_refuses():
    with pytest.raises(CalibrateError, match=r"no record has grad_norm_sq_small"):
        b_simple_pooled([[{"step": 1, "eval_metric": 0.3}]])
    with pytest.raises(CalibrateError, match=r"grad_batch_small == grad_batch_big == 64"):
        b_simple_pooled([grad_records(steps=3, bs=64, bb=64)])
    partial = grad_records(steps=3)
    del partial[1]["grad_norm_sq_big"]
    with pytest.raises(CalibrateError, match=r"step 2 logs .* but not grad_norm_sq_big"):
        b_simple_pooled([partial])
    bad = grad_records(steps=3)
    bad[2]["grad_norm_sq_small"] = float("nan")
    with pytest.raises(CalibrateError, match=r"step 3: grad_norm_sq_small = nan must be a finite number"):
        b_simple_pooled([bad])
    with pytest.raises(CalibrateError, match=r"grad batches .* must be > 0"):
        b_simple_pooled([[r | {"grad_batch_small": 0} for r in grad_records(steps=3)]])


def test_fit_learning_refuses():
    r256, r512 = run_log(256, steps=60), run_log(512, steps=60)
    with pytest.raises(
        CalibrateError, match=r"^need run logs at two or more batch sizes for a learning fit; got one \(B=256\)$"
    ):
        fit_learning([r256, run_log(256, steps=60, seed=1)], target=0.4)
    with pytest.raises(CalibrateError, match=r"reference_batch 1024 is not among the run batches \(256, 512\)"):
        fit_learning([r256, r512], target=0.4, reference_batch=1024)
    with pytest.raises(CalibrateError, match=r"non-empty list of run logs"):
        fit_learning([], target=0.4)
    with pytest.raises(CalibrateError, match=r"run 1 has no records"):
        fit_learning([r256, []], target=0.4)
    with pytest.raises(CalibrateError, match=r"target nan must be a finite number"):
        fit_learning([r256, r512], target=float("nan"))

    mixed = copy.deepcopy(r512)
    mixed[5]["responses"] = 1024
    with pytest.raises(CalibrateError, match=r"run 1 changes its batch \(512, 1024"):
        fit_learning([r256, mixed], target=0.4)

    nan_eval = copy.deepcopy(r512)
    nan_eval[3]["eval_metric"] = float("nan")
    with pytest.raises(CalibrateError, match=r"run 1 step 4: eval_metric = nan is not a finite number"):
        fit_learning([r256, nan_eval], target=0.4)

    few = run_log(512, steps=60, eval_every=1000)  # only step 1 evaluated
    few[10]["eval_metric"] = 0.3
    with pytest.raises(CalibrateError, match=r"run 1 has 2 evaluated points; a sigmoid fit needs at least 3"):
        fit_learning([r256, few], target=0.4)

    backwards = copy.deepcopy(r512)
    backwards[7]["cumulative_samples"] = 10
    with pytest.raises(CalibrateError, match=r"run 1: samples must be strictly increasing"):
        fit_learning([r256, backwards], target=0.4)

    with pytest.raises(CalibrateError, match=r"reached \(measured or by the fit\) at fewer than two batch sizes"):
        fit_learning([r256, r512], target=0.99)

    grads = copy.deepcopy(r512)
    grads[0].update(grad_records(steps=1, bs=64, bb=64)[0])
    with pytest.raises(CalibrateError, match=r"run 1 \(B=512\): step 1: grad_batch_small == grad_batch_big"):
        fit_learning([r256, grads], target=0.4)


def test_fit_learning_command_writes_the_learning_model_into_the_profile(tmp_path):
    """`rlsim-calibrate fit-learning` reads run directories and run-log files, fits the learning model and
    writes it into the profile (the cost phases kept); bad input exits 2 with one line and leaves the profile
    as it was."""
    import subprocess
    import sys

    from rlsim.run.profile import load_profile
    from tests.calibrate.files import write_profile, write_runlog

    prof_path = write_profile(tmp_path / "profile.json")
    paths = []
    for b in (256, 512, 1024, 2048):
        d = tmp_path / f"run{b}"
        d.mkdir()
        log = write_runlog(d / "runlog.jsonl", run_log(b, grads=True), f"run{b}")
        paths.append(str(d) if b != 2048 else log)  # a directory or the log itself
    cmd = [sys.executable, "-m", "calibrate.cli", "fit-learning", "--target", "0.6", "--profile", str(prof_path)]
    proc = subprocess.run(
        [*cmd, *paths, "--reference-batch", "512", "-o", str(prof_path)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "critical batch" in proc.stdout and "B_simple at 512: 400" in proc.stdout
    prof = load_profile(prof_path)
    assert set(prof.phases) == {"train_actor"} and prof.provenance["learning_runs"] == paths
    learning = prof.learning
    assert learning["reference_batch"] == 512 and learning["target"] == 0.6
    assert rel(learning["critical_batch_fit"]["critical_batch"], 1024) < 0.05
    assert set(learning["samples_to_target"]) == {"256", "512", "1024", "2048"}
    before = prof_path.read_text()
    bad = subprocess.run([*cmd, paths[0], "-o", str(prof_path)], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "two or more batch sizes" in bad.stderr
    missing = subprocess.run([*cmd, str(tmp_path / "nope"), "-o", str(prof_path)], capture_output=True, text=True)
    assert missing.returncode == 2 and "no run log" in missing.stderr
    assert prof_path.read_text() == before


def test_critical_batch_power_follows_the_lr_rule():
    """One learning model: fit-learning's cross-batch fit takes the power of the runs' LR rule (Adam's 1/2 under
    sqrt, McCandlish's 1 under linear), as fit --runs does; it recovers B_crit from exact points of that form."""
    from calibrate.learning.batch import critical_power, fit_critical_batch

    assert (critical_power("sqrt"), critical_power("none"), critical_power("linear"), critical_power(None)) == (
        0.5,
        0.5,
        1.0,
        1.0,
    )
    b = np.array([32.0, 64, 128, 256, 512])
    e = 1000.0 * (1 + b / 90.0) ** 0.5
    fit = fit_critical_batch(b, e, power=0.5)
    assert fit.critical_batch == pytest.approx(90.0, rel=1e-6) and fit.power == 0.5
    assert fit.to_batch_multiplier().critical_power == 0.5
    wrong = fit_critical_batch(b, e)  # McCandlish's power on Adam's curve: another B_crit, a worse fit
    assert wrong.rms_log_residual > 10 * fit.rms_log_residual + 1e-9
