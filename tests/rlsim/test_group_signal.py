"""Responses per prompt apart from the batch (rlsim.learning.groups, learning.reference_group_size; issue 33): a
group whose rewards all agree trains nothing, so N* follows the share of informative groups along the curve."""

from __future__ import annotations

import dataclasses

import pytest

import rlsim
from rlsim.learning.groups import group_multiplier, informative_share
from rlsim.learning.model import samples_to_target
from rlsim.scenario import MetricCurve
from tests.conftest import SCENARIOS


def paper(**overrides) -> rlsim.Scenario:
    return rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", overrides)


def test_informative_share_by_hand_and_near_zero():
    assert float(informative_share(0.5, 2)) == pytest.approx(0.5)
    assert float(informative_share(0.3, 4)) == pytest.approx(1 - 0.3**4 - 0.7**4)
    assert float(informative_share(1e-9, 8)) == pytest.approx(8e-9, rel=1e-6)  # G p: precision kept near 0


def test_spread_prompts_leave_fewer_groups_informative_by_hand():
    """Pass rates Beta(p k, (1 - p) k): with k = 1 at p = 0.5 (Beta(0.5, 0.5)) E[q^2] = 0.5 x 1.5 / (1 x 2), so a pair
    is informative with probability 1 - 2 x 0.375 = 0.25 (0.5 with every prompt at p); a very large k is no spread."""
    assert float(informative_share(0.5, 2, 1.0)) == pytest.approx(0.25)
    assert float(informative_share(0.3, 4, 1e8)) == pytest.approx(float(informative_share(0.3, 4)), rel=1e-6)
    shares = [float(informative_share(0.3, 8, k)) for k in (0.5, 2.0, 10.0, None)]
    assert shares == sorted(shares)


def test_correlated_responses_make_a_large_group_cost_more():
    """A group correlation rho prices G responses to one prompt as G / (1 + (G - 1) rho) independent ones: on a
    mid curve, where every group is informative, G = 32 against G = 8 costs (1 + 31 rho) / (1 + 7 rho)."""
    curve = MetricCurve(initial=0.4, asymptote=0.6, mid_samples=10_000.0, exponent=1.5)
    assert group_multiplier(curve, 20_000.0, 32, 8, None, 0.2) == pytest.approx(7.2 / 2.4, rel=0.02)
    spread = group_multiplier(curve, 20_000.0, 2, 8, 2.0, 0.0)
    assert spread > group_multiplier(curve, 20_000.0, 2, 8) > 1.0  # spread prompts: more empty pairs


def test_the_shape_of_the_group_term_needs_the_term_on():
    with pytest.raises(rlsim.ScenarioError, match="learning.group_correlation.*reference_group_size"):
        paper(**{"learning.group_correlation": 0.3})
    on = paper(**{"learning.reference_group_size": 8, "learning.prompt_concentration": 2.0})
    off = paper(**{"learning.reference_group_size": 8})
    assert samples_to_target(on.learning, 1024, 1, 2).samples > samples_to_target(off.learning, 1024, 1, 2).samples


def test_mid_curve_groups_are_all_informative_so_the_batch_alone_counts():
    """On a curve from pass rate 0.4 to 0.6, G = 8 and 32 differ by under 2%: B = P x G holds there."""
    curve = MetricCurve(initial=0.4, asymptote=0.6, mid_samples=10_000.0, exponent=1.5)
    assert group_multiplier(curve, 20_000.0, 32, 8) == pytest.approx(1.0, abs=0.02)
    assert group_multiplier(curve, 20_000.0, 8, 8) == 1.0


def test_from_zero_a_small_group_pays_its_share_of_empty_groups():
    """A curve that starts at pass rate 0: early on a group of G is informative with probability ~ G p, so G = 2
    needs nearly 8 / 2 = 4x the samples of G = 8 while p is small; over the whole curve less (2-4x)."""
    curve = MetricCurve(initial=0.0, asymptote=0.95, mid_samples=10_000.0, exponent=4.0)
    m = group_multiplier(curve, 12_000.0, 2, 8)
    assert 2.0 < m < 4.0
    assert group_multiplier(curve, 12_000.0, 32, 8) < 1.0 < group_multiplier(curve, 12_000.0, 4, 8) < m


def test_off_unless_the_reference_group_size_is_set():
    """Unset (the default): the seed paper's B = P x G, any G; set: G counts, and the simulated run follows."""
    plain = paper()
    assert (
        samples_to_target(plain.learning, 1024, 1, 2).samples == samples_to_target(plain.learning, 1024, 1, 8).samples
    )
    on = paper(**{"learning.reference_group_size": 8})
    at8 = samples_to_target(on.learning, 1024, 1, 8)
    assert at8.samples == samples_to_target(plain.learning, 1024, 1, 8).samples
    at2 = samples_to_target(on.learning, 1024, 1, 2)
    assert at2.group_multiplier == pytest.approx(2.29, abs=0.01) and at2.samples > 2 * at8.samples
    n = {}
    for g in (2, 8):
        s = paper(
            **{
                "learning.reference_group_size": 8,
                "workload.group_size": g,
                "workload.prompts_per_step": 1024 // g,
                "run.until_target": False,
                "run.steps": 2,
            }
        )
        n[g] = rlsim.simulate(s).summary()["samples_to_target"]
    assert n[2] / n[8] == pytest.approx(at2.samples / at8.samples)


def test_a_metric_that_is_not_a_pass_rate_is_refused():
    with pytest.raises(rlsim.ScenarioError, match="learning.reference_group_size.*pass rate"):
        paper(
            **{
                "learning.reference_group_size": 8,
                "learning.metric": {"initial": 29.3, "asymptote": 60, "mid_samples": 1e5, "exponent": 1.5},
                "learning.target": 42,
            }
        )


def test_the_plan_searches_g_where_it_counts_and_says_what_each_costs():
    """Unset: G stays the scenario's (with the note saying how to search it). Set: G / 2, G, 2 G are searched and
    the explanation prints each one's samples against the reference runs' G."""
    from rlsim.plan.explain import explain
    from rlsim.plan.search import plan
    from rlsim.plan.space import default_groups

    assert default_groups(paper()) == (8,)
    on = paper(**{"learning.reference_group_size": 8})
    assert default_groups(on) == (4, 8, 16)
    grid = {"workload.prompts_per_step": [64], "learning.lr_rule": ["sqrt"], "engine.tensor_parallel_size": [8]}
    result = plan(on, grid=grid, gpus=64, finalists=1, workers=1, schedules=["async-1"])
    assert sorted(set(result.table["group_size"])) == [4, 8, 16]
    line = next(x for x in explain(result) if x.startswith("responses per prompt:"))
    assert "G=4 1.2" in line and "G=8 1.00x" in line and "G=16 0.9" in line
    shaped = paper(**{"learning.reference_group_size": 8, "learning.prompt_concentration": 2.0,
                      "learning.group_correlation": 0.3})  # fmt: skip
    line = next(x for x in explain(dataclasses.replace(result, scenario=shaped)) if x.startswith("responses per"))
    assert "concentration 2" in line and "correlation 0.3" in line and "G=16 1.5" in line and "G=4 0.8" in line
    assert not any("G kept at" in n for n in result.notes)
