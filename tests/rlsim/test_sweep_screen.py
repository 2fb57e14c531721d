"""A sweep's screen (issue 32, the paper sweep's speed): rows to the target run their band's window and are
extrapolated at the steady step time, the best are simulated in full (rlsim.answers.sweep)."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import rlsim
from rlsim.answers.report import build_report
from rlsim.answers.sweep import sweep
from rlsim.run.simulation import BAND_STEPS
from rlsim.scenario import with_overrides
from tests.conftest import ROOT, SCENARIOS
from tests.rlsim.test_sweep import _small, count_pipeline_runs

# small_1gpu (sync) with a learning model: at P = 8 and 16 the runs take 198-1,042 steps, at P = 64 66-111
GRID = {"workload.prompts_per_step": [8, 16, 64], "learning.lr_rule": ["sqrt", "none"]}


@pytest.fixture(scope="module")
def both():
    return sweep(_small(), GRID, workers=1, finalists=2), sweep(_small(), GRID, workers=1, screen=False)


def test_screened_rows_run_their_band_window_and_are_extrapolated_within_half_a_percent(both):
    screened, full = both
    s, f = screened.table, full.table
    assert screened.screened and not full.screened and not f["extrapolated"].any()
    out = s["extrapolated"].to_numpy()
    assert out.sum() == 4  # rows 0, 1, 3, 5; the two best (2, 4) were simulated in full
    assert (s.loc[out, "simulated_steps"] == BAND_STEPS).all()  # sync: the band's window, no drain
    assert (s["steps"] == f["steps"]).all()  # the run's length to the target, simulated or not
    for col in ("time_to_target_s", "time_to_target_low_s", "time_to_target_high_s", "samples_per_s"):
        err = (s.loc[out, col] / f.loc[out, col] - 1).abs()
        assert (err < 0.005).all(), (col, err.to_list())
        assert (s.loc[out, col] != f.loc[out, col]).all()  # extrapolated, not the full run's number
    assert (s["samples_to_target"] == f["samples_to_target"]).all()  # the learning side does not change


def test_the_best_rows_are_simulated_in_full_and_equal_the_full_sweeps(both):
    screened, full = both
    s, f = screened.table, full.table
    best = list(f.sort_values("time_to_target_s")["config"].iloc[:2])
    assert screened.resimulated == tuple(sorted(best)) and full.resimulated == ()
    cols = ["steps", "simulated_steps", "step_time_s", "time_to_target_s", "time_to_target_low_s"]
    pd.testing.assert_frame_equal(s.loc[best, cols], f.loc[best, cols], check_exact=True)
    assert not s.loc[best, "extrapolated"].any()


def test_an_extrapolated_curve_runs_on_to_the_target_at_the_steady_step_time(both):
    screened, full = both
    s, c, fc = screened.table, screened.curves, full.curves
    row = s.iloc[1]  # P = 8 without retuning: 40 steps simulated of 1,042
    mine = c[c["config"] == 1]
    assert len(mine) == row["steps"] and list(mine["step"]) == list(range(1, row["steps"] + 1))
    assert (~mine["extrapolated"].iloc[:BAND_STEPS]).all() and mine["extrapolated"].iloc[BAND_STEPS:].all()
    later = mine[mine["extrapolated"]]
    steady = np.diff(later["wall_s"])
    assert np.allclose(steady, steady[0]) and steady[0] > 0  # one steady step time
    # the curve ends where the row's answer is (sync: no drain step), samples and metric as the full run's
    end = mine.iloc[-1]
    assert end["wall_s"] == pytest.approx(row["time_to_target_s"], rel=1e-12)
    ref = fc[fc["config"] == 1]
    assert np.array_equal(mine["cumulative_samples"], ref["cumulative_samples"])
    assert np.allclose(mine["eval_metric"], ref["eval_metric"], rtol=1e-12)
    assert np.allclose(mine["wall_s"], ref["wall_s"], rtol=0.01)


def test_screened_rows_carry_no_extrapolation_warning_and_a_capped_run_says_how_to_lift_it():
    scn = with_overrides(_small(), {"workload.prompts_per_step": 8})
    screened = rlsim.run.simulation.predict(
        rlsim.run.simulation.configure(scn, None, {}), to_target=True, screen_steps=BAND_STEPS
    )
    assert screened.time_to_target.extrapolated and len(screened.records) == BAND_STEPS
    assert not any("extrapolated" in w for w in screened.warnings)
    assert len(screened.continued) == screened.time_to_target.steps_to_target - BAND_STEPS
    capped = rlsim.simulate(with_overrides(scn, {"run.until_target": True, "run.max_steps": 50}))
    assert any("raise run.max_steps to simulate them" in w for w in capped.warnings)
    short = rlsim.simulate(with_overrides(scn, {"run.until_target": False, "run.steps": 5}))
    assert any("set run.until_target: true to simulate them" in w for w in short.warnings)


def test_a_sweep_without_a_target_is_not_screened():
    plain = rlsim.load_scenario(SCENARIOS / "small_1gpu.yaml", {"run.steps": 50})
    t = sweep(plain, {"workload.prompts_per_step": [8, 16]}, workers=1).table
    assert not t["extrapolated"].any() and (t["simulated_steps"] == 50).all() and (t["steps"] == 50).all()


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "rlsim.cli", *map(str, args)], cwd=ROOT, capture_output=True, text=True
    )


def test_the_sweep_command_says_what_it_extrapolated_and_full_turns_it_off(tmp_path):
    scn = tmp_path / "small.yaml"
    scn.write_text(rlsim.scenario.dump_yaml(_small()))
    grid = ["--grid", "workload.prompts_per_step=8,64", "--finalists", "1"]
    proc = _cli("sweep", scn, *grid, "-o", tmp_path / "screened")
    assert proc.returncode == 0, proc.stderr
    assert "Screened: config(s) 0 simulated for their first 40 steps and extrapolated to their target" in proc.stdout
    assert "of the best 1, config(s) 1 simulated in full. --full simulates every row" in proc.stdout
    header, first, second = proc.stdout.splitlines()[:3]
    assert header.split()[-1] == "extrapolated" and first.split()[-1] == "yes" and second.split()[-1] == "no"
    meta = json.loads((tmp_path / "screened" / "sweep.json").read_text())
    assert meta["screened"] is True and meta["resimulated"] == [1]
    curves = pd.read_csv(tmp_path / "screened" / "curves.csv")
    assert curves["extrapolated"].dtype == bool and curves["extrapolated"].any()
    html, _ = build_report(tmp_path / "screened")
    assert "simulated for their first 40 steps, the rest to the target extrapolated" in html
    assert '"dash":"dash"' in html.replace(" ", "")  # the extrapolated part of the curve
    full = _cli("sweep", scn, *grid, "--full", "-o", tmp_path / "full")
    assert full.returncode == 0, full.stderr
    assert "Screened" not in full.stdout and "extrapolated" not in full.stdout.splitlines()[0]
    assert json.loads((tmp_path / "full" / "sweep.json").read_text())["screened"] is False
    assert not pd.read_csv(tmp_path / "full" / "curves.csv")["extrapolated"].any()
    typo = _cli("sweep", scn, *grid, "--fulll")
    assert (
        typo.returncode == 2
        and "rlsim sweep: error: unrecognized arguments: --fulll (did you mean --full" in typo.stderr
    )


def test_a_screened_lr_rule_sweep_still_simulates_each_systems_configuration_once(monkeypatch):
    """The screen keeps issue 31's promise: the LR rules of one batch size share one window's run and its band
    runs (the nominal run is the band's base), whatever their steps to the target."""
    calls = count_pipeline_runs(monkeypatch)
    paper = rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml")
    grid = {"workload.prompts_per_step": [64, 256], "learning.lr_rule": ["sqrt", "none", "linear"]}
    res = sweep(paper, grid, workers=1, finalists=0)
    window = BAND_STEPS + 2 * paper.schedule.staleness
    assert sorted(calls) == [(p, seed, window) for p in (64, 256) for seed in range(paper.run.band_seeds)]
    assert res.table["extrapolated"].all() and len(set(res.table["time_to_target_s"])) >= 4


def test_a_row_cut_by_run_max_steps_says_it_is_extrapolated_and_is_not_simulated_again():
    capped = with_overrides(_small(), {"run.max_steps": 30})
    res = sweep(capped, {"workload.prompts_per_step": [8]}, workers=1, explicit=["run.max_steps"])
    row = res.table.iloc[0]
    assert row["extrapolated"] and row["simulated_steps"] == row["steps"] == 30
    assert res.resimulated == ()  # a full run would stop at run.max_steps too
    assert any("raise run.max_steps" in w for w in row["warnings"].split(" | "))
