"""DAPO's dynamic sampling on the learning side (learning.filtered_signal_power, rlsim.learning.model; issue 33:
filtering as an effect on the effective batch). A filtered step trains on groups that all carry a signal, so the
trained samples to target scale by keep_rate ** 0.5 and the generated ones by keep_rate ** -0.5; measured on this
CPU's GRPO task (docs/learning.md, "Filtering": 5 seeds each way, B = 128): trained 0.462x, generated 1.815x at a
keep rate of 0.257."""

from __future__ import annotations

import pytest

import rlsim
from rlsim.learning.model import samples_to_target
from rlsim.run.simulation import predict
from tests.conftest import SCENARIOS

KEEP, TRAINED, GENERATED = 0.257, 0.462, 1.815  # the CPU measurement's medians


def paper(**overrides) -> rlsim.Scenario:
    return rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", overrides)


def test_filtering_scales_the_trained_samples_by_the_keep_rate_to_its_power():
    learning = paper().learning
    plain = samples_to_target(learning, 1024, 1, 8)
    kept = samples_to_target(learning, 1024, 1, 8, keep_rate=0.25)
    assert plain.filter_multiplier is None
    assert kept.filter_multiplier == pytest.approx(0.5) and kept.samples == pytest.approx(0.5 * plain.samples)
    assert kept.multiplier == pytest.approx(0.5 * plain.multiplier)


@pytest.mark.parametrize("power, trained", [(0.0, 1.0), (1.0, 0.25)])
def test_the_power_spans_the_two_readings(power, trained):
    """0: a filtered step learns what an unfiltered one does (trained samples unchanged, generation 1 / keep);
    1: progress follows the responses that carry a signal (generated samples unchanged)."""
    learning = paper(**{"learning.filtered_signal_power": power}).learning
    ratio = samples_to_target(learning, 1024, keep_rate=0.25).samples / samples_to_target(learning, 1024).samples
    assert ratio == pytest.approx(trained)


def test_the_default_power_is_within_10_percent_of_the_cpu_measurement():
    learning = paper().learning
    ratio = samples_to_target(learning, 128, keep_rate=KEEP).samples / samples_to_target(learning, 128).samples
    assert ratio == pytest.approx(TRAINED, rel=0.10) and ratio / KEEP == pytest.approx(GENERATED, rel=0.10)


def test_a_filtered_run_reaches_the_target_in_fewer_steps_each_generating_more():
    """The paper scenario with DAPO's streaming replacement at keep rate 0.25: half the steps to the target, each
    generating 1 / 0.25 as many groups (the systems side), and the run's multipliers name the filter."""
    base = {"run.steps": 4}
    plain = predict(paper(**base), to_target=False).summary()
    ds = {"algorithm.dynamic_sampling.keep_rate": 0.25, "algorithm.dynamic_sampling.mode": "replace"}
    filtered = predict(paper(**base, **ds), to_target=False).summary()
    assert filtered["samples_multiplier"]["filter"] == pytest.approx(0.5)
    assert "filter" not in plain["samples_multiplier"]
    assert filtered["samples_to_target"] == pytest.approx(0.5 * plain["samples_to_target"])
    assert filtered["step_time_s"] > plain["step_time_s"]


def test_a_bad_power_is_refused():
    with pytest.raises(rlsim.ScenarioError, match="learning.filtered_signal_power"):
        paper(**{"learning.filtered_signal_power": 1.5})


def test_a_plan_under_dynamic_sampling_says_what_the_filter_does(capsys):
    from rlsim.cli import main

    sets = ["--set=algorithm.dynamic_sampling.keep_rate=0.25", "--set=algorithm.dynamic_sampling.mode=replace"]
    grid = "--grid=workload.prompts_per_step=128,256"
    assert main(["plan", str(SCENARIOS / "paper_grpo.yaml"), *sets, grid, "--gpu-types=H100-SXM"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("filter:"))
    assert "keeps 0.25 of the groups" in line and "0.50x the trained samples" in line and "4.00x as many" in line
    assert "2.00x the generated samples" in line
