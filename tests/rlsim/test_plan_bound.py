"""rlsim.plan.bound: the free-generation lower bound (no engine, each step at most the real one's) and the plan that
prunes by it (the same winner, finalists, Pareto front and screened rows as the exhaustive screen, fewer
simulations)."""

import math

import numpy as np
import pytest

import rlsim
from rlsim.engine import rollout
from rlsim.plan import plan
from rlsim.plan.bound import Bound, Screened, first_round
from rlsim.plan.explain import explain
from rlsim.run import pipeline
from rlsim.run.pipeline import run_pipeline
from rlsim.scenario import from_dict
from tests.conftest import SCENARIOS
from tests.rlsim.test_critic_pool import BASE

PAPER = SCENARIOS / "paper_grpo.yaml"
STEPS = {"run.steps": 6, "run.until_target": False}


def _scenarios():
    """Steps of each kind the trainer takes: sync colocated, sync on separate pools (PPO with a reference, its
    critic on a pool of its own), async (streaming, with in-flight updates and without), a thrashing engine, one
    GPU."""
    load = rlsim.load_scenario
    return {
        "paper async-1": load(PAPER, STEPS),
        "paper async-2, no in-flight updates": load(
            PAPER, {**STEPS, "schedule.max_staleness": 2, "schedule.in_flight_weight_updates": False}
        ),
        "paper P=4096 thrashing": load(PAPER, {**STEPS, "workload.prompts_per_step": 4096, "run.steps": 4}),
        "dense colocated": load(SCENARIOS / "dense8b_h100_colocated.yaml", STEPS),
        "dense async": load(SCENARIOS / "dense8b_h100_async.yaml", STEPS),
        "small 1 GPU": load(SCENARIOS / "small_1gpu.yaml", STEPS),
        "ppo, critic on its own pool": from_dict({**BASE, "algorithm": {**BASE["algorithm"], "critic_gpus": 2}}),
    }


@pytest.mark.parametrize("name", list(_scenarios()))
def test_free_generation_bounds_every_step_from_below(name, monkeypatch):
    s = _scenarios()[name]
    real, _ = run_pipeline(s)
    monkeypatch.setattr(pipeline, "launch_rollouts", lambda *a, **k: pytest.fail("an engine ran"))
    free, _ = run_pipeline(s, free_generation=True)
    assert len(free) == len(real)
    for f, r in zip(free, real, strict=True):
        assert f["timing_s"]["rollout"] == 0.0
        # equal where the trainer bounds the step, up to the rounding of wall-clock differences (bound.SLACK)
        assert f["step_time_s"] <= r["step_time_s"] * (1 + 1e-12) and f["wall_s"] <= r["wall_s"] * (1 + 1e-12)
        # the trainer's own work is the same; only generation is free
        for phase in ("old_logprob", "train_actor", "weight_sync"):
            assert f["timing_s"][phase] == r["timing_s"][phase]
    assert sum(r["step_time_s"] for r in real) > sum(f["step_time_s"] for f in free)  # generation is not free


def test_free_rollouts_keep_the_tokens():
    arrays = [(np.array([3, 4]), np.array([10, 20])), (np.array([5]), np.array([7]))]
    out = rollout.free_rollouts(arrays, 3).result()
    assert [(r.prompt_tokens, r.response_tokens, r.rollout_s) for r in out] == [(7, 30, 0.0), (5, 7, 0.0)]
    assert out[0].replica_makespan_s == (0.0, 0.0, 0.0)


def test_the_rule_needs_finalists_beaten_and_the_front_held():
    screened = Screened(objectives=[1.0, 2.0, 3.0], points=[(7, 10.0, 5.0), (8, 20.0, 1.0)])
    assert screened.beaten_by(Bound(11.0, 6.0, 4.0), finalists=3) is not None  # 3 below, point 7 under both
    assert screened.beaten_by(Bound(11.0, 6.0, 4.0), finalists=4) is None  # it could be a finalist
    assert screened.beaten_by(Bound(9.0, 6.0, 4.0), finalists=3) is None  # faster than any: could be on the front
    assert screened.beaten_by(Bound(10.0, 5.0, 4.0), finalists=3) is None  # a tie with 7 on both: kept
    assert screened.beaten_by(Bound(10.0, 5.5, 4.0), finalists=3) is not None  # 7 ties its time, is cheaper
    assert screened.beaten_by(Bound(math.inf, None, math.inf, "over the deadline"), finalists=9) == "over the deadline"


def test_the_first_round_takes_the_best_bounds_and_the_baseline():
    # config 1 has no bound (the scenario's rules refused it): its group is ranked by config 0's
    bounds = {0: Bound(5.0, 1.0, 5.0), 2: Bound(1.0, 1.0, 1.0), 3: Bound(9.0, 1.0, 9.0)}
    assert first_round([[0, 1], [2], [3]], bounds, baseline=3, finalists=1) == [1, 2]
    assert first_round([[0, 1], [2], [3]], bounds, baseline=2, finalists=2) == [1, 0]


def _grid():
    return {"workload.prompts_per_step": [128, 1024, 4096], "engine.tensor_parallel_size": [2, 8]}


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"objective": "cost", "deadline_h": 30.0}, {"objective": "gpu-hours", "budget_usd": 2500.0}],
    ids=["time", "cost-deadline", "gpu-hours-budget"],
)
def test_pruning_gives_the_exhaustive_plans_answer(kwargs):
    """541 configurations (two GPU types, 8-32 GPUs, P = 128, 1024, 4096): the same winner, finalists, Pareto front
    and screened rows as screening every configuration, with at least a tenth of them not screened (189, 177 and
    108 of them here, in the order of the cases)."""
    s = rlsim.load_scenario(PAPER)
    kw = {"grid": _grid(), "gpu_types": ["H100-SXM", "H200"], "max_gpus": 32, "finalists": 2, **kwargs}
    pruned, every = plan(s, **kw), plan(s, prune=False, **kw)
    a, b = pruned.table, every.table
    bounded = a["status"] == "bounded"
    assert bounded.sum() >= len(a) / 10 and not (b["status"] == "bounded").any()
    assert pruned.winner == every.winner and pruned.pareto == every.pareto
    assert list(a.index[a["fidelity"] == "full"]) == list(b.index[b["fidelity"] == "full"])
    kept = a[~bounded]
    assert kept.drop(columns="time_to_target_bound_s").equals(
        b.loc[kept.index, kept.columns.drop("time_to_target_bound_s")]
    )
    # a bounded row: its bound under the screened time-to-target, on no front, no finalist, and it says why
    rows = b.loc[bounded]
    assert not rows["pareto"].any() and not (rows["fidelity"] == "full").any()
    has = rows["time_to_target_s"].notna()
    assert (
        a.loc[bounded & has.reindex(a.index, fill_value=False), "time_to_target_bound_s"]
        <= rows.loc[has, "time_to_target_s"]
    ).all()
    assert a.loc[bounded, "reason"].str.startswith("not screened: ").all() and not a.loc[bounded, "feasible"].any()


def test_the_explanation_is_the_exhaustive_plans():
    """The explanation compares the best of each (P, LR rule) with the winner: pruning screens every configuration
    that could be its cell's best, so the lines are the same."""
    s = rlsim.load_scenario(PAPER)
    kw = {"grid": _grid(), "gpu_types": ["H100-SXM", "H200"], "max_gpus": 32, "finalists": 1}
    seen = []
    pruned = plan(s, **kw, progress=lambda done, total, stage="screen": seen.append((stage, done, total)))
    every = plan(s, prune=False, **kw)
    assert (pruned.table["status"] == "bounded").any()
    assert explain(pruned) == explain(every)
    # the screen's several calls count on, one progress: never back, up to the configurations screened
    screen = [done for stage, done, _ in seen if stage == "screen"]
    assert screen == sorted(screen) and screen[-1] == pruned.table["fidelity"].notna().sum()


def test_the_cli_says_what_it_did_not_screen_and_exhaustive_screens_it(tmp_path):
    import json
    import subprocess
    import sys

    args = [sys.executable, "-m", "rlsim.cli", "plan", str(PAPER), "--grid", "workload.prompts_per_step=128,4096"]
    args += ["--schedules", "async-1,colocated", "--finalists", "1"]
    out = subprocess.run([*args, "-o", str(tmp_path / "a")], capture_output=True, text=True)
    every = subprocess.run([*args, "--exhaustive", "-o", str(tmp_path / "b")], capture_output=True, text=True)
    assert out.returncode == every.returncode == 0, out.stderr + every.stderr
    a, b = (json.loads((tmp_path / x / "plan.json").read_text()) for x in "ab")
    assert a["not_screened"] > 0 and b["not_screened"] == 0 and a["configurations"] == b["configurations"]
    assert f"{a['not_screened']} not screened (their lower bounds lose; --exhaustive screens them)" in out.stdout
    assert a["winner"] == b["winner"] and a["pareto"] == b["pareto"] and a["explanation"] == b["explanation"]
    assert f"{a['not_screened']:,} configurations were not screened" in (tmp_path / "a" / "report.html").read_text()
