"""The curve family (rlsim.learning.family, issue 59): a batch table that moves the midpoint S_mid, the exponent b and
the ceiling A. Oracle tests: the expected numbers are worked out by hand below from the sigmoid
R(S) = R0 + (A - R0) / (1 + (S_mid / S)^b) and its inverse S = S_mid (gain / (t - R0) - 1)^(-1/b), gain = A - R0.

The table of these tests: reference batch 1,024 (knob 1) on R0 0.2, A 0.7 (gain 0.5), S_mid 1e5, b 1; at 4,096
(knob 4) S_mid x2, b x2, gain share x1.2, i.e. the curve R0 0.2, A 0.8 (gain 0.6), S_mid 2e5, b 2: the larger batch
slower early and higher at the end (ScaleRL's shape, arXiv 2510.13786).
"""

from __future__ import annotations

import math

import pytest

import rlsim
from rlsim.learning.curve import metric_at
from rlsim.learning.model import LearningModelError, samples_to_target
from tests.conftest import SCENARIOS

TABLE = {"values": [1, 4], "mid_samples": [1, 2], "exponent": [1, 2], "gain": [1, 1.2], "source": "test"}


def scenario(target: float = 0.4, table: dict | None = None, **learning) -> rlsim.Scenario:
    over = {
        "learning.metric": {"initial": 0.2, "asymptote": 0.7, "mid_samples": 1e5, "exponent": 1.0},
        "learning.target": target,
        "learning.reference_batch": 1024,
        "learning.family.batch": table or TABLE,
        **{f"learning.{k}": v for k, v in learning.items()},
    }
    return rlsim.load_scenario(SCENARIOS / "small_1gpu.yaml", over)


def n_star(target: float, batch: int, table: dict | None = None) -> float:
    s = scenario(target, table)
    return samples_to_target(s.learning, batch).samples


def test_the_larger_batch_is_slower_to_a_low_target_and_faster_to_a_high_one():
    # target 0.4: B 1,024: share (0.4 - 0.2) / 0.5 = 0.4, S = 1e5 (1 / 0.4 - 1)^-1 = 1e5 / 1.5 = 66,666.7
    #             B 4,096: share 0.2 / 0.6 = 1/3,     S = 2e5 (3 - 1)^(-1/2) = 2e5 / sqrt(2) = 141,421.4
    small_low, large_low = 1e5 / 1.5, 2e5 / math.sqrt(2.0)
    # target 0.65: B 1,024: share 0.45 / 0.5 = 0.9, S = 1e5 (1 / 0.9 - 1)^-1 = 9e5
    #              B 4,096: share 0.45 / 0.6 = 0.75, S = 2e5 (4 / 3 - 1)^(-1/2) = 2e5 sqrt(3) = 346,410.2
    small_high, large_high = 9e5, 2e5 * math.sqrt(3.0)
    assert (small_low, large_low, large_high) == pytest.approx((66_666.67, 141_421.36, 346_410.16), rel=1e-6)
    assert n_star(0.4, 1024) == pytest.approx(small_low, rel=1e-9)
    assert n_star(0.4, 4096) == pytest.approx(large_low, rel=1e-9)
    assert n_star(0.65, 1024) == pytest.approx(small_high, rel=1e-9)
    assert n_star(0.65, 4096) == pytest.approx(large_high, rel=1e-9)
    # the samples ratio of the large batch to the small: 2.1213 at 0.4 (slower), 0.3849 at 0.65 (faster)
    assert n_star(0.4, 4096) / n_star(0.4, 1024) == pytest.approx(1.5 * 2.0 / math.sqrt(2.0), rel=1e-9)
    assert n_star(0.65, 4096) / n_star(0.65, 1024) == pytest.approx(2.0 * math.sqrt(3.0) / 9.0, rel=1e-9)
    assert n_star(0.4, 4096) > n_star(0.4, 1024) and n_star(0.65, 4096) < n_star(0.65, 1024)


def test_the_two_batches_curves_cross_where_the_hand_worked_quadratic_says():
    # 0.5 / (1 + x) = 0.6 / (1 + 4 x^2) with x = 1e5 / S (so (2e5 / S)^2 = 4 x^2):
    # 0.5 + 2 x^2 = 0.6 + 0.6 x  ->  2 x^2 - 0.6 x - 0.1 = 0  ->  x = (0.6 + sqrt(0.36 + 0.8)) / 4 = 0.419258
    x = (0.6 + math.sqrt(0.36 + 0.8)) / 4.0
    crossing = 1e5 / x  # 238,517 samples, at the metric 0.2 + 0.5 / (1 + x) = 0.55230
    assert crossing == pytest.approx(238_517, rel=1e-5)
    s = scenario()
    small, large = (samples_to_target(s.learning, b) for b in (1024, 4096))
    assert large.curve.mid_samples == 2e5 and large.curve.exponent == 2.0
    assert large.curve.asymptote == pytest.approx(0.8)

    def gap(samples: float) -> float:
        return float(metric_at(large.curve, samples) - metric_at(small.curve, samples))

    lo, hi = 1e4, 1e7  # the large batch below early, above late: bisect the sign change
    assert gap(lo) < 0 < gap(hi)
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if gap(mid) < 0 else (lo, mid)
    assert lo == pytest.approx(crossing, rel=1e-9)
    assert float(metric_at(small.curve, crossing)) == pytest.approx(0.2 + 0.5 / (1 + x), rel=1e-12)
    # a target below the crossing's metric: the small batch first; above it: the large one
    assert n_star(0.55, 1024) < n_star(0.55, 4096) and n_star(0.555, 1024) > n_star(0.555, 4096)


def test_between_the_values_the_table_is_read_in_log_batch():
    # B 2,048: knob 2, halfway between log 1 and log 4. S_mid x exp(0.5 ln 2) = sqrt(2), b x sqrt(2), the gain share
    # linear: (1 + 1.2) / 2 = 1.1, so S_mid 141,421, b 1.41421, A 0.2 + 1.1 x 0.5 = 0.75.
    # N* to 0.4: share 0.2 / 0.55 = 4/11, S = 141,421 (11/4 - 1)^(-1/1.41421) = 141,421 x 1.75^-0.707107
    # = 141,421 x 0.673203 = 95,205.3
    by_hand = 1e5 * math.sqrt(2.0) * 1.75 ** (-1.0 / math.sqrt(2.0))
    assert by_hand == pytest.approx(95_205.3, rel=1e-5)
    s = scenario()
    n = samples_to_target(s.learning, 2048)
    assert n.samples == pytest.approx(by_hand, rel=1e-9) and not n.warnings
    assert n.curve.asymptote == pytest.approx(0.75) and n.curve.exponent == pytest.approx(math.sqrt(2.0))
    # the family multiplier: N* on the moved curve over N* on the reference (66,666.7)
    assert n.family_multiplier == pytest.approx(by_hand / (1e5 / 1.5), rel=1e-9)


def test_each_column_is_normalized_at_the_reference():
    # values 0.5 and 2 around the reference 1 (halfway in log): S_mid multipliers 2 and 4 read sqrt(2 x 4) = 2.828 at
    # 1, so at 2 the curve's S_mid is 1e5 x 4 / 2.828 = 141,421 and at the reference it is the scenario's own 1e5
    table = {"values": [0.5, 2], "mid_samples": [2, 4]}
    s = scenario(table=table)
    assert samples_to_target(s.learning, 1024).samples == pytest.approx(1e5 / 1.5, rel=1e-12)
    assert samples_to_target(s.learning, 2048).curve.mid_samples == pytest.approx(1e5 * 4 / math.sqrt(8.0))


def test_beyond_the_table_the_curve_is_held_at_the_nearest_end_with_a_warning():
    s = scenario()
    beyond, end = samples_to_target(s.learning, 8192), samples_to_target(s.learning, 4096)
    assert beyond.samples == end.samples and beyond.curve == end.curve and not end.warnings
    assert len(beyond.warnings) == 1
    assert "learning.family.batch: B / reference_batch 8 is outside the table's [1, 4]" in beyond.warnings[0]
    assert "held at the nearest end" in beyond.warnings[0]


def test_a_batch_whose_ceiling_misses_the_target_is_refused_naming_the_batches_that_clear_it():
    # gain shares 0.5 / 1 / 1.2 at knobs 0.25 / 1 / 4; the target 0.5 needs (0.5 - 0.2) / 0.5 = 0.6 of the gain.
    # Between 0.25 and 1 the share is linear in log knob: 0.5 + 0.5 t reaches 0.6 at t = 0.2, the knob
    # 0.25^(1 - 0.2) = 0.25^0.8 = 0.329877, i.e. 0.329877 x 1,024 = 337.8 responses per step
    table = {"values": [0.25, 1, 4], "gain": [0.5, 1, 1.2]}
    assert 0.25**0.8 * 1024 == pytest.approx(337.8, abs=0.05)
    s = scenario(0.5, table)
    with pytest.raises(LearningModelError) as err:
        samples_to_target(s.learning, 256)
    msg = str(err.value)
    assert "ceiling to 0.45 at a batch of 256 responses" in msg and "short of the target 0.5" in msg
    assert "the batch table's ceiling clears it from about 337.8 responses per step" in msg
    assert samples_to_target(s.learning, 512).samples > 0  # 512 > 337.8: it clears


def test_the_run_logs_metric_follows_the_moved_curve():
    s = rlsim.load_scenario(
        SCENARIOS / "small_1gpu.yaml",
        {
            "learning.metric": {"initial": 0.2, "asymptote": 0.7, "mid_samples": 2e3, "exponent": 1.0},
            "learning.target": 0.4,
            "learning.family.batch": {"values": [0.25, 1], "mid_samples": [0.5, 1], "gain": [1.2, 1]},
            "learning.reference_batch": 1024,
            "run.steps": 4,
            "run.until_target": False,
        },
    )
    n = samples_to_target(s.learning, s.workload.responses_per_step)  # 256: knob 0.25, the table's end
    assert n.curve.mid_samples == 1e3 and n.curve.asymptote == pytest.approx(0.8)
    records = rlsim.simulate(s).records
    by_hand = [0.2 + 0.6 / (1 + 1e3 / r["cumulative_samples"]) for r in records]
    assert [r["eval_metric"] for r in records] == pytest.approx(by_hand, rel=1e-12)


def test_the_default_is_the_seed_papers_member_and_unchanged():
    s = rlsim.load_scenario(
        SCENARIOS / "small_1gpu.yaml",
        {
            "learning.metric": {"initial": 0.2, "asymptote": 0.7, "mid_samples": 1e5, "exponent": 1.0},
            "learning.target": 0.4,
        },
    )
    for b in (64, 256, 4096):
        n = samples_to_target(s.learning, b)
        assert n.family_multiplier is None and n.curve == s.learning.metric and n.samples == pytest.approx(1e5 / 1.5)


@pytest.mark.parametrize(
    ("table", "match"),
    [
        ({"values": [1]}, "values.*at least 2"),
        ({"values": [4, 1], "gain": [1, 1]}, "values.*increasing"),
        ({"values": [0, 1], "gain": [1, 1]}, "values.*> 0"),
        ({"values": [1, 4]}, "no column"),
        ({"values": [1, 4], "gain": [1]}, "gain.*one entry per knob value"),
        ({"values": [1, 4], "exponent": [1, -2]}, "exponent.*positive multiplier"),
        ({"values": [1, 4], "gian": [1, 1]}, "gian.*not a known key.*gain"),
    ],
)
def test_bad_tables_are_refused_with_the_field_and_the_fix(table, match):
    with pytest.raises(rlsim.ScenarioError, match=match):
        scenario(table=table)


def test_tables_that_clash_with_other_learning_fields_are_refused():
    base = {"learning.metric": {"initial": 0.2, "asymptote": 0.7, "mid_samples": 1e5}, "learning.target": 0.4}
    path = SCENARIOS / "small_1gpu.yaml"
    with pytest.raises(rlsim.ScenarioError, match="family.group.*reference_group_size"):
        rlsim.load_scenario(path, {**base, "learning.family.group": {"values": [0.5, 1], "gain": [0.9, 1]}})
    with pytest.raises(rlsim.ScenarioError, match="family.staleness.*staleness_loss naive_ppo"):
        rlsim.load_scenario(
            path,
            {
                **base,
                "learning.staleness_loss": "naive_ppo",
                "learning.family.staleness": {"values": [0, 4], "gain": [1, 0.8]},
            },
        )
    with pytest.raises(rlsim.ScenarioError, match="family.batch.gain.*learning.ceilings"):
        rlsim.load_scenario(
            path,
            {
                **base,
                "learning.ceiling_batches": [256, 1024],
                "learning.ceilings": [0.6, 0.7],
                "learning.family.batch": {"values": [1, 4], "gain": [1, 1.1]},
            },
        )


def test_staleness_and_group_tables_move_the_curve_by_their_knobs():
    # staleness: knob k read in log(1 + k); values 0 and 3 with gain 1 and 0.8: at k = 1, log 2 / log 4 = 1/2 of
    # the way, the share 0.9: A = 0.2 + 0.9 x 0.5 = 0.65; N* to 0.4: share 0.2 / 0.45, S = 1e5 / (2.25 - 1) = 80,000
    s = scenario(**{"family.staleness": {"values": [0, 3], "gain": [1, 0.8]}})
    assert samples_to_target(s.learning, 1024, 1).samples == pytest.approx(8e4, rel=1e-9)
    # group: G / G_ref 2 with S_mid x 0.8 (knob 1 and 2): N* 0.8 x 66,666.7; the informative-share term is off
    g = scenario(reference_group_size=8, **{"family.group": {"values": [1, 2], "mid_samples": [1, 0.8]}})
    n = samples_to_target(g.learning, 1024, 0, 16)
    assert n.samples == pytest.approx(0.8 * 1e5 / 1.5, rel=1e-9) and n.group_multiplier == 1.0


def test_an_lr_table_replaces_the_untuned_penalty():
    # lr_rule none against the sqrt rule at B 4,096 (4x the reference): eta / eta* = 1 / sqrt(4) = 0.5. Without a
    # table: 1.67 ** (2 |log2 0.5|) = 1.67^2 = 2.7889 x 66,666.7; with S_mid x1.5 at 0.5: N* = 1.5 x 66,666.7 = 1e5
    plain = scenario(table={"values": [1, 4], "mid_samples": [1, 1]}, lr_rule="none")
    assert samples_to_target(plain.learning, 4096).samples == pytest.approx(1.67**2 * 1e5 / 1.5, rel=1e-9)
    s = rlsim.load_scenario(
        SCENARIOS / "small_1gpu.yaml",
        {
            "learning.metric": {"initial": 0.2, "asymptote": 0.7, "mid_samples": 1e5, "exponent": 1.0},
            "learning.target": 0.4,
            "learning.reference_batch": 1024,
            "learning.lr_rule": "none",
            "learning.family.lr": {"values": [0.5, 1], "mid_samples": [1.5, 1]},
        },
    )
    n = samples_to_target(s.learning, 4096)
    assert n.samples == pytest.approx(1e5, rel=1e-9) and n.lr_multiplier == 1.0
