"""Sweeps: grid expansion, the table, failed configurations, local and Ray executors agreeing."""

import json
import subprocess
import sys

import pandas as pd
import pytest

import rlsim
from rlsim.answers.sweep import expand_grid, parse_grid, sweep
from rlsim.scenario import with_overrides
from tests.conftest import SCENARIOS

LEARNING = {
    "learning.metric": {"initial": 0.1, "asymptote": 0.9, "mid_samples": 20000, "exponent": 1.5},
    "learning.target": 0.6,
    "learning.reference_batch": 256,
    "learning.batch_multiplier": {"form": "critical_batch", "critical_batch": 1024},
}


def _small():
    return rlsim.load_scenario(SCENARIOS / "small_1gpu.yaml", LEARNING)


def test_expand_and_parse_grid():
    grid = parse_grid(["workload.prompts_per_step=16,32", "learning.lr_rule=sqrt,none", "run.seed=1"])
    assert grid == {"workload.prompts_per_step": [16, 32], "learning.lr_rule": ["sqrt", "none"], "run.seed": [1]}
    configs = expand_grid(grid)
    assert len(configs) == 4
    assert configs[1] == {"workload.prompts_per_step": 16, "learning.lr_rule": "none", "run.seed": 1}
    with pytest.raises(rlsim.ScenarioError, match="--grid"):
        parse_grid(["workload.prompts_per_step"])


def test_sweep_rows_and_failed_configuration():
    grid = {
        "workload.prompts_per_step": [16, 64],
        "hardware.gpu": ["H100-SXM", "L40S"],
        "model": ["Qwen2.5-0.5B", "Llama-3.1-70B"],
    }
    res = sweep(_small(), grid, workers=1)
    t = res.table
    assert len(t) == 8
    failed = t[t["model"] == "Llama-3.1-70B"]
    assert failed["error"].str.contains("does not fit|needs", regex=True).all()  # 70B fits no single GPU
    ok = t[t["error"].isna()]
    assert len(ok) == 4
    for col in (
        "samples_per_s",
        "samples_to_target",
        "time_to_target_s",
        "time_to_target_low_s",
        "time_to_target_high_s",
        "gpu_hours_to_target",
        "phase_time_s/rollout",
    ):
        assert ok[col].notna().all(), col
    assert (ok["time_to_target_low_s"] <= ok["time_to_target_s"]).all()
    assert (ok["time_to_target_s"] <= ok["time_to_target_high_s"]).all()
    assert (ok["gpu_hours_to_target"] == ok["time_to_target_s"] * ok["num_gpus"] / 3600).all()
    # the same configuration simulated alone gives the same numbers
    alone = rlsim.simulate(
        with_overrides(_small(), {"workload.prompts_per_step": 64, "hardware.gpu": "L40S", "run.until_target": True})
    ).summary()
    row = ok[(ok["workload.prompts_per_step"] == 64) & (ok["hardware.gpu"] == "L40S")].iloc[0]
    assert row["time_to_target_s"] == alone["time_to_target_s"]
    assert set(res.curves["config"]) == set(ok["config"])
    assert not res.engine_curves.empty


def test_local_processes_match_sequential():
    grid = {"workload.prompts_per_step": [16, 32, 64]}
    seq = sweep(_small(), grid, workers=1).table
    par = sweep(_small(), grid, workers=2).table
    pd.testing.assert_frame_equal(seq, par)


@pytest.mark.slow
def test_ray_executor_gives_the_same_table():
    ray = pytest.importorskip("ray")
    grid = {"workload.prompts_per_step": [16, 64], "learning.lr_rule": ["sqrt", "none"]}
    local = sweep(_small(), grid, workers=2)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)  # a real local Ray instance
    try:
        remote = sweep(_small(), grid, executor="ray")
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(local.table, remote.table)
    pd.testing.assert_frame_equal(local.curves, remote.curves)


def test_cli_sweep_uses_scenario_grid_and_writes_files(tmp_path):
    scn = tmp_path / "s.yaml"
    raw = _small().to_dict()
    raw["sweep"] = {"grid": {"workload.prompts_per_step": [16, 32], "learning.lr_rule": ["sqrt", "none"]}}
    raw["model"], raw["hardware"]["gpu"] = raw["model"]["name"], raw["hardware"]["gpu"]["name"]
    import yaml

    scn.write_text(yaml.safe_dump(raw))
    out = tmp_path / "sw"
    proc = subprocess.run(
        [sys.executable, "-m", "rlsim.cli", "sweep", str(scn), "-o", str(out), "--workers", "1"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in out.iterdir()} == {
        "scenario.resolved.yaml",
        "sweep.csv",
        "sweep.parquet",
        "curves.csv",
        "engine_curves.csv",
        "sweep.json",
    }
    assert len(pd.read_csv(out / "sweep.csv")) == 4
    meta = json.loads((out / "sweep.json").read_text())
    assert meta["grid"]["learning.lr_rule"] == ["sqrt", "none"] and meta["scenario_hash"]
    bad = subprocess.run(
        [sys.executable, "-m", "rlsim.cli", "sweep", str(scn), "--grid", "workload.nope=1,2"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "workload.nope" in bad.stderr and "Traceback" not in bad.stderr


def test_empty_grid_values_are_refused():
    with pytest.raises(rlsim.ScenarioError, match="lists no values"):
        parse_grid(["run.seed=,"])
    with pytest.raises(rlsim.ScenarioError, match="lists no values"):
        sweep(_small(), {"run.seed": []})


def test_each_configuration_is_validated_once(validated):
    """One validation per grid key before the processes start (fail fast), then one per configuration, in
    run_configs: base + the configuration's overrides as plain data (not from_dict(base), then with_overrides,
    then once more in the parent for the engine curves)."""
    scn = _small()
    seen = validated
    seen.clear()  # count from here: _small's own validation is not the sweep's
    grid = {"workload.prompts_per_step": [16, 32], "run.seed": [0, 1]}
    res = sweep(with_overrides(scn, {"run.steps": 2}), grid, workers=1, screen=False)  # (finalists: validated again)
    assert len(seen) == 1 + 2 + 4  # with_overrides above, one per grid key, one per configuration
    configs = [(s.workload.prompts_per_step, s.run.seed) for s in seen[3:]]
    assert configs == [(32, 0), (32, 1), (16, 0), (16, 1)]  # the longest (more responses) first
    assert list(res.table["workload.prompts_per_step"]) == [16, 16, 32, 32]  # rows in configuration order
    assert res.table["error"].isna().all()
    assert len(res.engine_curves) and set(res.engine_curves["engine"]) == {"Qwen2.5-0.5B / H100-SXM / TP1"}


def test_run_tasks_starts_the_longest_first_and_returns_in_task_order():
    from rlsim.host.executor import run_tasks

    started = []

    def fn(t):
        started.append(t)
        return t * 10

    out = run_tasks(fn, [1, 2, 3, 4], workers=1, costs=[5.0, 50.0, 0.0, 50.0])
    assert out == [10, 20, 30, 40]  # the tasks' order
    assert started == [2, 4, 1, 3]  # longest first, ties by position
    started.clear()
    assert run_tasks(fn, [1, 2, 3], workers=1) == [10, 20, 30] and started == [1, 2, 3]


def test_lr_rule_variants_share_runs_and_give_the_rows_of_sweeps_of_one_rule_each(monkeypatch):
    """Configurations that differ only in learning values run as one task (rlsim.answers.sweep.run_configs): their rows
    are those of sweeping each rule alone; a variant with an invalid value fails alone; and a variant whose own run
    fails (say its later steps do not fit) fails in its row while the others keep theirs."""
    import rlsim.run.simulation as simulation
    from rlsim.errors import RlsimError

    grid = {"workload.prompts_per_step": [16, 64], "learning.lr_rule": ["sqrt", "none", "cubic", "linear"]}
    ticks = []
    # unscreened: a screen's finalists, simulated in full, are the best of the rows it is given
    both = sweep(_small(), grid, workers=1, progress=lambda done, total: ticks.append((done, total)), screen=False)
    assert ticks == [(4, 8), (8, 8)]  # progress counts configurations, a group of four at a time
    t = both.table.set_index("config")
    assert t.loc[[2, 6], "error"].str.contains("cubic").all() and t.drop([2, 6])["error"].isna().all()
    for rule in ("sqrt", "none", "linear"):
        alone = sweep(_small(), {**grid, "learning.lr_rule": [rule]}, workers=1, screen=False).table
        mine = both.table[both.table["learning.lr_rule"] == rule].reset_index(drop=True)
        assert mine["error"].isna().all() and alone["error"].isna().all()
        pd.testing.assert_frame_equal(  # the same numbers; the failed rows made the mixed table's ints floats
            mine.drop(columns=["config", "error"]),
            alone.drop(columns=["config", "error"]),
            check_dtype=False,
            check_exact=True,
        )
    real_predict = simulation.predict

    def failing_for_none(scn, *args, **kwargs):
        if scn.learning.lr_rule == "none":
            raise RlsimError("this variant's run failed")
        return real_predict(scn, *args, **kwargs)

    monkeypatch.setattr(simulation, "predict", failing_for_none)
    part = sweep(_small(), grid, workers=1, screen=False).table.set_index("config")
    assert part.loc[[1, 5], "error"].eq("this variant's run failed").all()
    kept = [0, 3, 4, 7]
    pd.testing.assert_frame_equal(part.loc[kept], t.loc[kept], check_exact=True)


def count_pipeline_runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    """From now on, each systems simulation (rlsim.run.timeline's run_pipeline) as (P, seed, steps), in order."""
    import rlsim.run.timeline as timeline

    calls = []
    real = timeline.run_pipeline

    def counting(scn, *args, **kwargs):
        calls.append((scn.workload.prompts_per_step, scn.run.seed, scn.run.steps))
        return real(scn, *args, **kwargs)

    monkeypatch.setattr(timeline, "run_pipeline", counting)
    return calls


def test_an_lr_rule_sweep_simulates_each_systems_configuration_once(monkeypatch):
    """The issue-31 promise: a sweep that varies only the learning-rate rule runs the engine once per systems
    configuration (and band run), as a sweep of one rule does; the answers differ by rule."""
    calls = count_pipeline_runs(monkeypatch)
    paper = rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml")
    one = sweep(paper, {"workload.prompts_per_step": [64, 256], "learning.lr_rule": ["sqrt"]}, workers=1, screen=False)
    alone = list(calls)
    calls.clear()
    three = sweep(
        paper,
        {"workload.prompts_per_step": [64, 256], "learning.lr_rule": ["sqrt", "none", "linear"]},
        workers=1,
        screen=False,
    )
    seeds = paper.run.band_seeds
    # per batch size: the longest rule's run, then the band's other seeds (its nominal short run is the start)
    assert len(calls) == 2 * seeds and len(alone) == 2 * seeds
    assert len(set(three.table["time_to_target_s"])) >= 4 and one.table["error"].isna().all()


def test_lr_variants_whose_lengths_follow_the_learning_rate_do_not_share_a_timeline():
    """With ``workload.length_progress: learning_rate`` the response lengths read the LR rule, so the rules'
    timelines differ (their systems keys do)."""
    from rlsim.run.timeline import systems_key

    paper = rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml")
    keys = {
        systems_key(with_overrides(paper, {"learning.lr_rule": r, **lengths}))
        for r in ("sqrt", "none")
        for lengths in ({}, {"workload.length_progress": "learning_rate"})
    }
    assert len(keys) == 3


def test_a_pool_worker_takes_its_share_of_the_cores_counted_at_each_call(monkeypatch):
    """In a sweep's worker (threads.share_cores) auto threads are the cores over the workers running a task, at
    least one; an explicit RLSIM_THREADS is taken as it is. threads.counted counts a worker busy while it runs one."""
    import multiprocessing as mp

    from rlsim.host import threads

    monkeypatch.setattr(threads, "available_cores", lambda: 4)
    monkeypatch.delenv(threads.ENV, raising=False)
    busy = mp.get_context("spawn").Value("i", 0)
    monkeypatch.setattr(threads, "_BUSY", None)
    assert threads.thread_count() == 4  # not in a pool
    threads.share_cores(busy)
    seen = []
    for others in (0, 1, 2, 3, 5):
        busy.value = others
        seen.append(threads.counted(lambda _: threads.thread_count(), None))
        assert busy.value == others  # counted while it ran, not after
    assert seen == [4, 2, 1, 1, 1]
    monkeypatch.setenv(threads.ENV, "3")
    assert threads.counted(lambda _: threads.thread_count(), None) == 3


def test_by_default_a_local_sweep_runs_one_worker_per_two_cores(monkeypatch):
    from rlsim.host import executor, threads

    for cores, tasks, workers in ((2, 16, 1), (1, 16, 1), (4, 16, 2), (16, 3, 3), (16, 16, 8), (16, 0, 1)):
        monkeypatch.setattr(threads, "available_cores", lambda c=cores: c)
        assert executor.default_workers(tasks) == workers, (cores, tasks)
    # the plan's screen (short runs, mostly Python): one worker per core (rlsim.plan.search.SCREEN_CORES)
    for cores, tasks, workers in ((2, 16, 2), (1, 16, 1), (16, 3, 3), (16, 100, 16)):
        monkeypatch.setattr(threads, "available_cores", lambda c=cores: c)
        assert executor.default_workers(tasks, cores_per_worker=1) == workers, (cores, tasks)
