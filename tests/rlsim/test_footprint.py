"""A simulation's memory and time are estimated before it starts (rlsim.host.footprint): one the machine cannot hold is
refused in one line, a long one is announced."""

import subprocess
import sys
from pathlib import Path

import pytest

from rlsim import cli
from rlsim.host import footprint
from rlsim.host.footprint import FootprintError, check, estimate
from rlsim.run.simulation import simulate

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "paper_grpo.yaml"


def test_the_estimate_grows_with_responses_and_steps():
    small, wide, long = estimate(1_000, 10), estimate(1_000_000, 10), estimate(1_000, 1_000)
    # memory follows the largest step's responses, not the steps; time follows both
    assert wide.memory_bytes - small.memory_bytes == pytest.approx(footprint.BYTES_PER_RESPONSE * 999_000)
    assert long.memory_bytes == small.memory_bytes
    per_run, per_step = footprint.SECONDS_PER_RUN, footprint.SECONDS_PER_STEP
    assert wide.seconds - per_run - 10 * per_step == pytest.approx(1000 * (small.seconds - per_run - 10 * per_step))
    assert long.seconds - per_run == pytest.approx(100 * (small.seconds - per_run))


def test_a_streaming_window_multiplies_the_memory_not_the_work():
    """Under a streaming async schedule the engines hold k + 1 batches at once (the memory), and each window of
    k + 1 steps is simulated once (the time: a step's responses, as a synchronous step's)."""
    one, window = estimate(1_000, 10), estimate(1_000, 10, window=65)
    assert window.seconds == one.seconds
    assert window.memory_bytes - footprint.BASE_BYTES == pytest.approx(65 * (one.memory_bytes - footprint.BASE_BYTES))
    paper = simulate(SCENARIO, overrides=["schedule.max_staleness=64", "run.steps=3", "run.until_target=false"])
    seen = []
    simulate(SCENARIO, overrides=["schedule.max_staleness=64", "run.steps=3", "run.until_target=false"],
             before=seen.append)  # fmt: skip
    assert seen[0].window == 65 and paper.scenario.schedule.staleness == 64
    assert seen[0].steps == 65  # a run ending inside a window simulates the whole window


def test_a_run_larger_than_the_available_memory_is_refused_with_the_sizes():
    fp = estimate(10_000_000, 1)
    assert check(fp, available=fp.memory_bytes * 1.01) is fp
    with pytest.raises(FootprintError) as err:
        check(fp, available=fp.memory_bytes * 0.5)
    text = str(err.value)
    assert "10,000,000 responses generated per step" in text and "prompts_per_step" in text and "group_size" in text
    # the largest size it names does fit
    named = int(text.split("at most about ")[1].split(" ")[0].replace(",", ""))
    assert check(estimate(named, 1), available=fp.memory_bytes * 0.5)


def test_p_1e7_with_g_1e5_is_one_line_and_exit_2_before_any_allocation():
    """The issue's case: P = 1e7 with G = 1e5 asked numpy for 7 TiB; now the estimate refuses it."""
    proc = subprocess.run(
        [sys.executable, "-m", "rlsim.cli", "run", str(SCENARIO), "--set", "workload.prompts_per_step=10000000",
         "--set", "workload.group_size=100000"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlsim: error: ") and "TiB" in lines[0]
    assert "Traceback" not in proc.stderr and not proc.stdout


def test_simulate_hands_the_estimate_over_before_it_runs(monkeypatch, capsys):
    seen = []
    result = simulate(SCENARIO, overrides=["run.steps=3", "run.until_target=false"], before=seen.append)
    assert len(seen) == 1 and seen[0].steps == 4  # 3 steps in windows of two batches: two windows simulated
    assert seen[0].responses_per_step == result.scenario.workload.responses_per_step
    # the CLI announces a run whose estimate is long (here: any run, with the threshold at zero) on stderr
    monkeypatch.setattr(cli, "LONG_S", 0.0)
    assert cli.main(["run", str(SCENARIO), "--set", "run.steps=3", "--set", "run.until_target=false", "--json"]) == 0
    captured = capsys.readouterr()
    assert "rlsim: note:" in captured.err and "responses per step" in captured.err
    assert captured.out.lstrip().startswith("{")  # the note stays out of the JSON
