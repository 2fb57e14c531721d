"""Progress off a terminal: silent for short work, then a line now and then naming the stage and the count; a
plan's finalists are their own stage (issue 30)."""

from __future__ import annotations

import io
from pathlib import Path

from rlsim.host.progress import Progress
from rlsim.plan.cli import cmd_plan  # noqa: F401  (the plan CLI imports cleanly with rlsim.host.progress)
from rlsim.run.simulation import simulate

PAPER = Path(__file__).resolve().parents[2] / "scenarios" / "paper_grpo.yaml"


def test_off_a_terminal_short_work_prints_nothing():
    out = io.StringIO()
    p = Progress("simulating", "step", 100, tty=False, stream=out)
    for i in range(100):
        p.update(i + 1)
    p.close()
    assert out.getvalue() == ""


def test_off_a_terminal_long_work_prints_stage_count_and_time():
    out = io.StringIO()
    p = Progress("plan: screening", "group", 10, tty=False, every_s=0.0, stream=out)
    p.update(4, 10)
    p.stage("plan: finalists simulated in full", 3)
    p.update(1)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("rlsim: plan: screening: 4/10 groups, ") and lines[0].endswith(" s so far")
    assert lines[1].startswith("rlsim: plan: finalists simulated in full: 1/3 groups")


def test_a_run_reports_each_simulated_step():
    out = io.StringIO()
    p = Progress("simulating", "step", None, tty=False, every_s=1e9, stream=out)
    res = simulate(PAPER, overrides=["run.steps=5", "run.until_target=false"], progress=p.step)
    assert p.done == len(res.records) == 5


def test_the_plan_reports_its_finalists_as_a_stage(monkeypatch):
    from rlsim.plan import search
    from rlsim.scenario import load_scenario

    seen = []
    result = search.plan(
        load_scenario(PAPER),
        grid={
            "workload.prompts_per_step": [128, 256],
            "learning.lr_rule": ["sqrt"],
            "engine.tensor_parallel_size": [2],
        },
        schedules=["async-1"],
        finalists=1,
        progress=lambda done, total, stage="screen": seen.append((stage, done, total)),
    )
    stages = [s for s, _, _ in seen]
    # the lower bounds first (rlsim.plan.bound), then the screen, then the finalists
    assert list(dict.fromkeys(stages)) == ["bounds", "screen", "finalists"]
    assert seen[-1][1] == seen[-1][2]  # the finalists' own count reaches its own total
    bounds = [(d, t) for s, d, t in seen if s == "bounds"]
    assert bounds[-1][0] == bounds[-1][1] == len(result.table)  # one count per configuration
