"""The learning presets (rlsim.learning.presets, issue 59): each preset's values from its source, anchored at the
scenario's own curve, applying where its knob does. Oracle tests: expected numbers worked out by hand from the
published values and the sigmoid's inverse S = S_mid (gain / (t - R0) - 1)^(-1/b)."""

from __future__ import annotations

import math

import pytest

import rlsim
from rlsim.errors import ScenarioError
from rlsim.learning.model import LearningModelError, samples_to_target
from rlsim.learning.presets import REGISTRY, applicable, preset_overrides
from rlsim.scenario import with_overrides
from tests.conftest import SCENARIOS

# reference batch 768 (ScaleRL's 48 x 16), so the knob values are ScaleRL's batches; b 1.92 as ScaleRL's reference
CURVE = {"initial": 0.2, "asymptote": 0.7, "mid_samples": 1e5, "exponent": 1.92}


def toy(base: str = "small_1gpu", **over) -> rlsim.Scenario:
    """The toy curve on a scenario (small_1gpu: synchronous; paper_grpo: asynchronous, max staleness 1)."""
    return rlsim.load_scenario(
        SCENARIOS / f"{base}.yaml",
        {"learning.metric": CURVE, "learning.target": 0.4, "learning.reference_batch": 768, **over},
    )


def under(scenario: rlsim.Scenario, name: str, target: float | None = None) -> rlsim.Scenario:
    over = preset_overrides(scenario, name)
    if target is not None:
        over["learning.target"] = target
    return with_overrides(scenario, over)


def test_scalerl_batch_by_hand_slower_to_a_low_target_and_faster_to_a_high_one():
    # ScaleRL Table 1: 2048 against 768 has C_mid 10909 / 2542 = 4.29150, B 1.70 / 1.92, A +0.035. On the toy curve
    # at B = 2048: S_mid 1e5 x 4.29150 = 429,150.3, b 1.92 x 1.70 / 1.92 = 1.70, A 0.735 (gain 0.535).
    mid = 1e5 * 10909 / 2542
    assert mid == pytest.approx(429_150.3, abs=0.1)
    # target 0.4:   768: share 0.2 / 0.5 = 0.4,     S = 1e5 x 1.5^(-1/1.92)              = 80,962.9
    #              2048: share 0.2 / 0.535,         S = 429,150.3 x 1.675^(-1/1.70)       = 316,837.1  (3.913x)
    # target 0.699: 768: share 0.499 / 0.5 = 0.998, S = 1e5 x (1/0.998 - 1)^(-1/1.92)     = 2,542,498
    #              2048: share 0.499 / 0.535,       S = 429,150.3 x (0.535/0.499 - 1)^(-1/1.70) = 2,014,908 (0.7925x)
    low = (1e5 * 1.5 ** (-1 / 1.92), mid * 1.675 ** (-1 / 1.70))
    high = (1e5 * (1 / 0.998 - 1) ** (-1 / 1.92), mid * (0.535 / 0.499 - 1) ** (-1 / 1.70))
    assert low == pytest.approx((80_962.9, 316_837.1), rel=1e-6)
    assert high == pytest.approx((2_542_498, 2_014_908), rel=1e-6)
    for target, (small, large) in ((0.4, low), (0.699, high)):
        s = under(toy(), "scalerl_batch", target)
        assert samples_to_target(s.learning, 768).samples == pytest.approx(small, rel=1e-9)
        assert samples_to_target(s.learning, 2048).samples == pytest.approx(large, rel=1e-9)
    assert low[1] / low[0] == pytest.approx(3.9134, rel=1e-4) and high[1] / high[0] == pytest.approx(0.7925, rel=1e-4)


def test_scalerl_batch_curves_cross_where_the_hand_bisection_says():
    def r(samples: float, mid: float, b: float, gain: float) -> float:  # the sigmoid, written out
        return 0.2 + gain / (1 + (mid / samples) ** b)

    mid = 1e5 * 10909 / 2542
    lo, hi = 1e5, 1e8  # 2048 below 768 at 1e5 samples, above at 1e8
    for _ in range(200):
        x = math.sqrt(lo * hi)
        lo, hi = (x, hi) if r(x, mid, 1.70, 0.535) < r(x, 1e5, 1.92, 0.5) else (lo, x)
    crossing, level = lo, r(lo, 1e5, 1.92, 0.5)
    assert crossing == pytest.approx(1_994_268, rel=1e-5) and level == pytest.approx(0.698408, abs=1e-6)
    below, above = under(toy(), "scalerl_batch", level - 1e-4), under(toy(), "scalerl_batch", level + 1e-4)
    assert samples_to_target(below.learning, 768).samples < samples_to_target(below.learning, 2048).samples
    assert samples_to_target(above.learning, 768).samples > samples_to_target(above.learning, 2048).samples


def test_scalerl_batch_at_512_and_between():
    # 512: S_mid x 2818 / 2542 = 1.10858, b 1.77, A 0.7 - 0.005 = 0.695; N* to 0.4: share 0.2 / 0.495,
    # S = 110,857.6 x (0.495 / 0.2 - 1)^(-1/1.77) = 110,857.6 x 1.475^-0.564972
    # = 110,857.6 x 0.802864 = 89,002.6
    by_hand = 1e5 * 2818 / 2542 * 1.475 ** (-1 / 1.77)
    assert by_hand == pytest.approx(89_002.6, rel=1e-6)
    s = under(toy(), "scalerl_batch")
    n = samples_to_target(s.learning, 512)
    assert n.samples == pytest.approx(by_hand, rel=1e-9) and not n.warnings
    # 1,024: 768 x 4/3, log(4/3) / log(8/3) = 0.29330 of the way to 2048: S_mid x 4.29150^0.29330 = 1.53317
    t = math.log(4 / 3) / math.log(8 / 3)
    assert t == pytest.approx(0.29330, abs=1e-5)
    assert samples_to_target(s.learning, 1024).curve.mid_samples == pytest.approx(1e5 * (10909 / 2542) ** t)
    # beyond 2048: held there, with the warning
    assert samples_to_target(s.learning, 4096).samples == samples_to_target(s.learning, 2048).samples
    assert "outside the table's" in samples_to_target(s.learning, 4096).warnings[0]


def test_every_preset_is_anchored_at_the_scenarios_own_curve():
    """At the reference batch, G and staleness 0 each applicable preset gives the scenario's own N*."""
    plain = rlsim.load_scenario(
        SCENARIOS / "paper_grpo.yaml",
        {"learning.reference_group_size": 8, "schedule.mode": "async", "schedule.max_staleness": 2},
    )
    own = samples_to_target(plain.learning, plain.learning.reference_batch, 0, 8).samples
    names = [p.name for p in applicable(plain)]
    assert names == list(REGISTRY)  # every preset applies to this scenario
    for name in names:
        s = under(plain, name)
        assert samples_to_target(s.learning, s.learning.reference_batch, 0, 8).samples == pytest.approx(own, rel=1e-12)


def test_the_staleness_presets_by_hand():
    # AReaL Table 3 (AIME24): share kept = (score - 29.3) / (42.0 - 29.3). naive PPO at k = 2: 40.0 -> 10.7 / 12.7 =
    # 0.84252. On the toy curve: A = 0.2 + 0.84252 x 0.5 = 0.62126; N* to 0.4: S = 1e5 (0.42126 / 0.2 - 1)^(-1/1.92)
    share = (40.0 - 29.3) / (42.0 - 29.3)
    assert share == pytest.approx(0.84252, abs=1e-5)
    async_toy = toy("paper_grpo")
    s = under(async_toy, "naive_ppo")
    by_hand = 1e5 * (share * 0.5 / 0.2 - 1) ** (-1 / 1.92)
    assert samples_to_target(s.learning, 768, 2).samples == pytest.approx(by_hand, rel=1e-9)
    # decoupled PPO at k = 8: 41.0 -> 11.7 / 12.7 = 0.92126; at k = 4 42.2 (1.016) is read as 1
    d = under(async_toy, "decoupled_ppo")
    assert samples_to_target(d.learning, 768, 4).samples == pytest.approx(1e5 * 1.5 ** (-1 / 1.92), rel=1e-12)
    dec8 = 1e5 * ((41.0 - 29.3) / 12.7 * 0.5 / 0.2 - 1) ** (-1 / 1.92)
    assert samples_to_target(d.learning, 768, 8).samples == pytest.approx(dec8, rel=1e-9)
    # naive PPO at k = 8 keeps 6.4 / 12.7 = 0.504 of the gain: A = 0.452, short of 0.5; it clears 0.5 (a share of
    # 0.6) up to a k read in log(1 + k) between 2 (0.84252) and 8 (0.50394)
    high = under(async_toy, "naive_ppo", 0.5)
    with pytest.raises(LearningModelError, match="staleness table's ceiling clears it up to about"):
        samples_to_target(high.learning, 768, 8)
    # M2PO holds the gain at every k the schema allows; truncated IS is naive PPO's
    m = under(async_toy, "m2po")
    assert samples_to_target(m.learning, 768, 64).samples == pytest.approx(1e5 * 1.5 ** (-1 / 1.92), rel=1e-12)
    t = under(async_toy, "truncated_is")
    assert samples_to_target(t.learning, 768, 2).samples == samples_to_target(s.learning, 768, 2).samples


def test_scalerl_group_by_hand():
    # G 8 against 16 at 768 completions: C_mid 2542 / 2542, B 2.44 / 1.92, A 0.585 - 0.610 = -0.025. Toy scenario
    # at G_ref 16 run at G 8: b 2.44, A 0.675 (gain 0.475); N* to 0.4: S = 1e5 (0.475 / 0.2 - 1)^(-1/2.44)
    s = under(toy(**{"learning.reference_group_size": 16}), "scalerl_group")
    by_hand = 1e5 * (0.475 / 0.2 - 1) ** (-1 / 2.44)
    n = samples_to_target(s.learning, 768, 0, 8)
    assert n.samples == pytest.approx(by_hand, rel=1e-9) and n.group_multiplier == 1.0


def test_the_presets_apply_only_where_their_knob_does():
    sync = toy()
    assert [p.name for p in applicable(sync)] == ["seed", "scalerl_batch"]
    grid = toy(**{"sweep.grid": {"workload.group_size": [4, 8, 16]}})
    assert "scalerl_group" in [p.name for p in applicable(grid)]
    # a metric that is not a pass rate: ScaleRL's asymptote shifts (pass rate) do not carry
    reward = toy(**{"learning.metric": {**CURVE, "initial": -1.0, "asymptote": 3.0}, "learning.target": 1.0})
    assert [p.name for p in applicable(reward)] == ["seed"]
    no_curve = rlsim.load_scenario(SCENARIOS / "small_1gpu.yaml")
    assert applicable(no_curve) == []


def test_every_preset_names_its_source_and_an_unknown_name_is_refused():
    for p in REGISTRY.values():
        assert p.source and p.summary and p.knob in ("batch", "group", "lr", "staleness")
    assert REGISTRY["seed"].seed_assumption and not REGISTRY["scalerl_batch"].seed_assumption
    assert "GPU-hours" in REGISTRY["scalerl_batch"].source  # the unit it is carried over from, said
    with pytest.raises(ScenarioError, match="scalerl_bach.*not a learning preset.*scalerl_batch"):
        preset_overrides(toy(), "scalerl_bach")
