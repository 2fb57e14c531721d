"""One configuration, one answer: ``rlsim run``, ``decide``, ``sweep`` and ``plan`` print the same time-to-target
and throughput for the paper scenario at P = 128 and 1024 (issue 30, must-show 2), in their terminal text and
their JSON, because each simulates to the target from the same scenario and formats it with rlsim.answers.answer."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rlsim.answers.answer import Answer, hours
from rlsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAPER = str(ROOT / "scenarios" / "paper_grpo.yaml")


def _json_out(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _text_out(capsys, argv: list[str]) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("prompts", [128, 1024])
def test_run_decide_sweep_plan_agree(prompts, capsys, tmp_path):
    p = f"workload.prompts_per_step={prompts}"
    run = _json_out(capsys, ["run", PAPER, "--set", p, "--json"])
    assert not run["time_to_target_extrapolated"]  # a run goes to the target when there is a learning model
    ttt, q = run["time_to_target_s"], run["samples_per_s"]

    other = "workload.prompts_per_step=256" if prompts != 256 else "workload.prompts_per_step=128"
    dec = _json_out(capsys, ["decide", PAPER, "--baseline", p, "--candidate", other, "--json"])
    assert dec["baseline"]["time_to_target_s"] == pytest.approx(ttt, rel=1e-12)
    assert dec["baseline"]["samples_per_s"] == pytest.approx(q, rel=1e-12)

    assert main(["sweep", PAPER, "--grid", f"{p}", "-o", str(tmp_path / "sw")]) == 0
    sweep_text = capsys.readouterr().out
    (r0,) = pd.read_csv(tmp_path / "sw" / "sweep.csv").to_dict("records")
    assert r0["workload.prompts_per_step"] == prompts
    assert r0["time_to_target_s"] == pytest.approx(ttt, rel=1e-12)
    assert r0["samples_per_s"] == pytest.approx(q, rel=1e-12)

    # the plan's "your configuration": a one-point search keeps it cheap; the baseline is simulated in full
    plan = _json_out(
        capsys,
        [
            "plan", PAPER, "--set", p, "--grid", p, "--grid", "learning.lr_rule=sqrt",
            "--schedules", "async-1", "--grid", "engine.tensor_parallel_size=2", "--finalists", "1", "--json",
        ],
    )  # fmt: skip
    base = plan["baseline"]
    assert base["time_to_target_s"] == pytest.approx(ttt, rel=1e-12)
    assert base["samples_per_s"] == pytest.approx(q, rel=1e-12)

    # the same words on every terminal: the hours and samples/s as rlsim.answers.answer formats them
    answer = Answer.of(run)
    run_text = _text_out(capsys, ["run", PAPER, "--set", p])
    dec_text = _text_out(capsys, ["decide", PAPER, "--baseline", p, "--candidate", other])
    plan_text = _text_out(
        capsys,
        [
            "plan", PAPER, "--set", p, "--grid", p, "--grid", "learning.lr_rule=sqrt",
            "--schedules", "async-1", "--grid", "engine.tensor_parallel_size=2", "--finalists", "1",
        ],
    )  # fmt: skip
    assert run_text.splitlines()[0] == f"answer: {answer.sentence()}"
    # decide's winner carries its band with the learning presets' spread (rlsim.answers.sensitivity); the rest is
    # the run's answer word for word
    sens = dec["learning_sensitivity"]
    mine = answer.with_learning(sens) if sens["winner"] == "baseline" else answer
    assert mine.sentence() in dec_text
    assert hours(ttt) in sweep_text and hours(ttt) in plan_text
    assert f"{q:.2f} samples/s" in plan_text and f"{q:.2f} samples/s" in dec_text


def test_explicit_short_run_names_its_extrapolation(capsys):
    """``run.until_target: false`` keeps a short run; its answer says the rest was extrapolated."""
    out = _text_out(capsys, ["run", PAPER, "--set", "run.until_target=false", "--set", "run.steps=6"])
    assert "extrapolated after 6 simulated steps" in out.splitlines()[0]
    full = _json_out(capsys, ["run", PAPER, "--json"])
    short = _json_out(capsys, ["run", PAPER, "--set", "run.until_target=false", "--set", "run.steps=6", "--json"])
    assert short["time_to_target_extrapolated"] and not full["time_to_target_extrapolated"]
    assert short["steps"] == 6 and full["steps"] > 200


def test_answer_formats_units():
    a = Answer.of(
        {
            "samples_per_s": 6.2743,
            "time_to_target_s": 42816.8,
            "time_to_target_band_s": [37656.0, 49176.0],
            "samples_to_target": 266666.75,
            "gpu_hours_to_target": 761.19,
        }
    )
    assert a.sentence() == (
        "time-to-target 11.89 h (band 10.46 h .. 13.66 h), 6.27 samples/s, N* = 266,667 samples, 761 GPU-h"
    )
    assert hours(95.0) == "2 min" and hours(12.34) == "12.3 s"
    assert Answer.of({"samples_per_s": 3.0}).sentence() == "3.00 samples/s"
