"""`rlsim decide`: the decision rule on cases whose samples penalty is computed by hand."""

import json
import subprocess
import sys

import pytest

import rlsim
from rlsim.answers.decide import decide, parse_side
from tests.conftest import SCENARIOS

PAPER = SCENARIOS / "paper_grpo.yaml"


def _q(p, rule="sqrt"):
    return rlsim.simulate(
        PAPER, overrides={"workload.prompts_per_step": p, "learning.lr_rule": rule, "run.until_target": True}
    ).summary()["samples_per_s"]


def test_no_when_gain_is_below_penalty():
    # by hand: P 128 -> 256 at a fixed LR is one doubling of B untuned: samples x 1.67 (the paper's control)
    scn = rlsim.load_scenario(PAPER)
    d = decide(
        scn,
        {"workload.prompts_per_step": 128},
        {"workload.prompts_per_step": 256, "learning.lr_rule": "none"},
        with_band=False,
    )
    assert d.samples_ratio == pytest.approx(1.67)
    gain = _q(256, "none") / _q(128)
    assert d.throughput_ratio == pytest.approx(gain)
    assert 1.0 < gain < 1.67  # faster hardware use, not enough to pay for the extra samples
    assert d.verdict is False and d.speedup == pytest.approx(gain / 1.67)
    assert d.candidate["time_to_target_s"] > d.baseline["time_to_target_s"]


def test_yes_when_gain_exceeds_penalty():
    # by hand: P 128 -> 1024 with sqrt retuning stays inside the invariant range B = 512..8192: samples x 1.0
    scn = rlsim.load_scenario(PAPER)
    d = decide(scn, {"workload.prompts_per_step": 128}, {"workload.prompts_per_step": 1024}, with_band=False)
    assert d.samples_ratio == pytest.approx(1.0)
    assert d.throughput_ratio > 1.0 and d.verdict is True
    assert d.candidate["time_to_target_s"] < d.baseline["time_to_target_s"]


def test_no_beyond_the_invariant_range():
    # by hand: B = 32768 is two doublings above 8192: samples x 1.73^2
    scn = rlsim.load_scenario(PAPER)
    d = decide(scn, {"workload.prompts_per_step": 128}, {"workload.prompts_per_step": 4096}, with_band=False)
    assert d.samples_ratio == pytest.approx(1.73**2)
    assert d.verdict is (d.throughput_ratio > 1.73**2)
    assert d.verdict is False


def test_cli_decide_json_and_text():
    cmd = [
        sys.executable,
        "-m",
        "rlsim.cli",
        "decide",
        str(PAPER),
        "--baseline",
        "workload.prompts_per_step=128",
        "--candidate",
        "workload.prompts_per_step=256,learning.lr_rule=none",
    ]
    proc = subprocess.run([*cmd, "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["verdict"] == "no"
    assert data["samples_ratio"] == pytest.approx(1.67)
    assert data["speedup"] == pytest.approx(data["throughput_ratio"] / data["samples_ratio"])
    for side in ("baseline", "candidate"):
        assert data[side]["time_to_target_s"] > 0
    text = subprocess.run(cmd, capture_output=True, text=True).stdout
    assert "verdict: no" in text and "samples penalty" in text and "throughput gain" in text


def test_bad_sides_are_refused():
    with pytest.raises(rlsim.ScenarioError, match="--baseline"):
        parse_side("workload.prompts_per_step", "--baseline")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlsim.cli",
            "decide",
            str(SCENARIOS / "small_1gpu.yaml"),
            "--baseline",
            "run.seed=0",
            "--candidate",
            "run.seed=1",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "learning model" in proc.stderr and "Traceback" not in proc.stderr
