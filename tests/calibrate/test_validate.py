"""Validation: an imported verl log goes through `validate` (must-show 4), and validation of real-run directories
compares rlsim's predictions with what was measured."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from calibrate import CalibrateError
from calibrate.runs.run import Run, measured
from calibrate.runs.validate import validate

FIXTURES = Path(__file__).with_name("fixtures")
# what the verl fixture's run is assumed to have run on (the log does not say): one 8 x H100 node, colocated
VERL_SCENARIO = {
    "name": "verl_grpo_fixture",
    "model": "Qwen2.5-7B",
    "hardware": {"gpu": "H100-SXM", "num_gpus": 8, "placement": "colocated"},
    "engine": {"tensor_parallel_size": 1, "max_num_seqs": 256, "gpu_memory_utilization": 0.6},
    "algorithm": {"name": "grpo", "kl_reference": True},
    "schedule": {"mode": "sync-colocated"},
}


def _import_verl(tmp_path):
    run = tmp_path / "verl_run"
    run.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "calibrate.cli",
            "import",
            "--format",
            "verl",
            str(FIXTURES / "verl_grpo.jsonl"),
            "--prompts-per-step",
            "64",
            "--group-size",
            "8",
            "-o",
            str(run / "runlog.jsonl"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "line 9" in proc.stderr and "line 14" in proc.stderr  # the broken lines, reported with reasons
    (run / "scenario.yaml").write_text(yaml.safe_dump(VERL_SCENARIO))
    return run


def test_verl_log_imports_and_goes_through_validate(tmp_path):
    """An imported log with its scenario.yaml and no profile: the scenario's roofline predicts the step time, the
    measured side of time-to-target is reported, and nothing predicts samples-to-target (no learning model)."""
    run = _import_verl(tmp_path)
    out = tmp_path / "val"
    proc = subprocess.run(
        [sys.executable, "-m", "calibrate.cli", "validate", str(run), "--target", "0.6", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out / "validation.csv")
    row = table.iloc[0]
    log = [json.loads(x) for x in (run / "runlog.jsonl").read_text().splitlines()]
    walls = [r["wall_s"] for r in log]
    measured = (walls[-1] - walls[0]) / (len(walls) - 1)
    assert row["measured_step_time_s"] == pytest.approx(measured)
    assert row["predicted_step_time_s"] > 0 and row["measured_s/rollout"] > 0 and row["predicted_s/rollout"] > 0
    assert row["measured_time_to_target_s"] > 0 and pd.isna(row["predicted_time_to_target_s"])
    html = (out / "report.html").read_text()
    assert "Predicted vs measured" in html and "Error summary" in html and "By batch size" in html
    details = json.loads((out / "validation.json").read_text())
    assert details["target"] == 0.6 and "nothing is held out" not in " ".join(details["notes"])


def test_measured_time_to_target_is_interpolated_between_evaluations(tmp_path):
    """The crossing is interpolated in samples between the evaluations around it (as the learning model is
    anchored), and the wall clock at those samples between the steps around them."""
    evals = {2: 0.2, 4: 0.6, 6: 0.9}
    recs = [
        {
            "step": t,
            "responses": 10,
            "cumulative_samples": 10 * t,
            "wall_s": 1.5 * t,
            "eval_metric": evals.get(t),
            "timing_s": {"rollout": 1.0},
        }
        for t in range(1, 7)
    ]
    run = Run(tmp_path, recs, {}, {}, None)
    m = measured(run, 0.5)
    assert m["samples_to_target"] == pytest.approx(35.0)  # 20 + (0.5 - 0.2) / (0.6 - 0.2) x 20
    assert m["time_to_target_s"] == pytest.approx(5.25)  # 1.5 s per 10 samples
    assert m["step_time_s"] == pytest.approx(1.5)
    never = measured(run, 0.95)
    assert never["samples_to_target"] is None and never["time_to_target_s"] is None


def test_validate_refuses_a_directory_without_a_run(tmp_path):
    with pytest.raises(CalibrateError, match="no runlog.jsonl"):
        validate([tmp_path], None)
    (tmp_path / "runlog.jsonl").write_text("")
    with pytest.raises(CalibrateError, match="a run needs at least 3"):
        validate([tmp_path], None)


@pytest.mark.slow
def test_real_runs_validate_against_a_profile(tmp_path):
    """Short real GRPO runs at two batch sizes, a profile from a short bench and the reference runs, validate:
    every number present."""
    pytest.importorskip("torch")
    real = [sys.executable, "-m", "real.cli"]
    runs = []
    for p, seed in ((16, 0), (16, 1), (8, 0)):  # the reference, two seeds, then the held-out batch (the loop's)
        run = tmp_path / f"P{p}_seed{seed}"
        subprocess.run(
            [*real, "train", "--task", "parity:length=3", "--prompts-per-step", str(p), "--group-size", "8"]
            + ["--lr0", "1e-3", "--micro-batches", "2", "--max-steps", "120", "--eval-every", "2"]
            + ["--eval-size", "128", "--target", "0.9", "--seed", str(seed), "--threads", "1", "-o", str(run)],
            check=True,
            capture_output=True,
            timeout=600,
        )
        runs.append(run)
    bench = tmp_path / "bench"
    subprocess.run(
        [
            *real,
            "bench",
            "generation",
            "--concurrency",
            "1,4,16,32",
            "--prompt-tokens",
            "5,9",
            "--response-tokens",
            "2,6",
            "--repeats",
            "2",
            "--threads",  # one count for the bench and the runs, whatever the load (fit refuses a mismatch)
            "1",
            "-o",
            str(bench / "g"),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    subprocess.run(
        [
            *real,
            "bench",
            "train",
            "--tokens",
            "64,128,256,512",
            "--seq-len",
            "8",
            "--repeats",
            "2",
            "--threads",
            "1",
            "-o",
            str(bench / "t"),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    sync = [*real, "bench", "sync", "--repeats", "3", "--threads", "1", "-o", str(bench / "s")]
    subprocess.run(sync, check=True, capture_output=True, timeout=600)
    me = [sys.executable, "-m", "calibrate.cli"]
    prof, scen = tmp_path / "profile.json", tmp_path / "scenario.yaml"
    tables = [str(bench / k / "bench.csv") for k in ("g", "t", "s")]
    # the model is found from the bench table (its provenance names the folder); the reference runs: P = 4
    fit = subprocess.run(
        [*me, "fit", *tables, "--runs", str(runs[0]), str(runs[1]), "--target", "0.9", "-o", str(prof)]
        + ["--scenario-out", str(scen)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert fit.returncode == 0, fit.stderr
    proc = subprocess.run(
        [*me, "validate", "--profile", str(prof), *map(str, runs), "-o", str(tmp_path / "val")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "val" / "validation.csv")
    assert list(table["responses_per_step"]) == [128, 128, 64]
    assert table["held_out"].tolist() == [False, False, True]
    assert table["predicted_step_time_s"].gt(0).all() and table["measured_step_time_s"].gt(0).all()
    # the errors are what the table says they are; how small they are is the CPU loop's business (its numbers
    # are in the README): 40-step runs of a tiny model are too short and noisy to bound them here
    ratio = table["predicted_step_time_s"] / table["measured_step_time_s"] - 1
    assert (table["step_time_error"] - ratio).abs().max() < 1e-9 and table["step_time_error"].abs().lt(10).all()
    details = json.loads((tmp_path / "val" / "validation.json").read_text())
    assert {"samples_to_target_error", "runs_reaching_target", "predicted_probability_reaching_target"} <= set(
        details["by_batch"][0]
    )
    profile = json.loads(prof.read_text())
    # two micro-batches: the runs logged their gradients at two batch sizes, so B_simple sets the batch term,
    # to Adam's power under the sqrt rule
    learning = profile["learning"]
    assert learning["b_simple"] > 0 and learning["batch_multiplier"]["critical_power"] == 0.5
    # the in-loop factors come from the reference run, one per bench-fitted phase
    factors = profile["provenance"]["in_loop_factors"]
    assert set(factors) == {"rollout", "train_actor", "old_logprob", "weight_sync"}
    assert all(0.05 < f < 20 for f in factors.values())
    assert yaml.safe_load(scen.read_text())["workload"]["prompts_per_step"] == 16


def test_scaled_profile_scales_each_phase_time_by_its_factor():
    """The in-loop factor read off the reference runs multiplies the phase's predicted seconds."""
    from calibrate.bench.fit import base_scenario
    from calibrate.runs.fit import scaled_profile
    from rlsim.run.costs import RooflineCostModel
    from rlsim.run.profile import PhaseFit, Profile
    from tests.calibrate.test_costfit import TINY

    scn = base_scenario(TINY, "CPU-2core", 64, 64)
    profile = Profile(
        {"device": "cpu"},
        {
            "train_actor": PhaseFit("roofline", {"train_compute_efficiency": 0.3, "train_step_overhead_s": 0.02}),
            "old_logprob": PhaseFit("roofline", {"forward_compute_efficiency": 0.3, "forward_overhead_s": 0.004}),
            "rollout": PhaseFit(
                "roofline",
                {
                    "decode_iteration_overhead_s": 0.004,
                    "decode_per_seq_overhead_s": 2e-5,
                    "decode_memory_efficiency": 0.5,
                    "prefill_overhead_s": 0.006,
                    "prefill_compute_efficiency": 0.3,
                },
            ),
        },
    )

    def rollout_seconds(prof):
        import numpy as np

        from rlsim.engine.replica import simulate_replica

        cost = RooflineCostModel(dataclasses.replace(scn, costs=prof.apply(scn.costs)))
        n = 64
        res = simulate_replica(
            np.full(n, 5),
            np.full(n, 8),
            n,
            scn.kv_capacity_tokens,
            cost.decode_coefficients(),
            cost.prefill_coefficients(),
        )
        return res.makespan_s

    def seconds(prof):
        cost = RooflineCostModel(dataclasses.replace(scn, costs=prof.apply(scn.costs)))
        # the optimizer's memory term is not scaled: take it out to compare the scaled part
        adam = cost.train_s(scn.model, 0.0, 0.0, 1, 1) - prof.phases["train_actor"].parameters["train_step_overhead_s"]
        return cost.train_s(scn.model, 3072, 3072 * 12, 1, 1) - adam, cost.forward_s(scn.model, 3072, 3072 * 12)

    train, fwd = seconds(profile)
    scaled = scaled_profile(profile, {"train_actor": 1.25, "old_logprob": 2.0}, scn.costs)
    train2, fwd2 = seconds(scaled)
    assert train2 == pytest.approx(1.25 * train) and fwd2 == pytest.approx(2.0 * fwd)
    # the rollout: decode and prefill overheads and efficiencies together scale the engine's seconds
    roll = rollout_seconds(profile)
    assert rollout_seconds(scaled_profile(profile, {"rollout": 0.75}, scn.costs)) == pytest.approx(0.75 * roll)
    # an efficiency never exceeds 1: a factor below the efficiency's headroom is capped
    capped = scaled_profile(profile, {"old_logprob": 0.1}, scn.costs)
    assert capped.phases["old_logprob"].parameters["forward_compute_efficiency"] == 1.0


def test_learning_model_takes_adams_power_for_sqrt_rule_runs(tmp_path):
    """Runs trained with the sqrt LR rule get samples ~ (1 + B / B_simple) ** 0.5 (Adam's first-order cost);
    the linear rule McCandlish's power 1. Both use B_simple from the runs' gradient norms."""
    from calibrate.runs.learning import learning_model
    from calibrate.runs.run import load_run
    from rlsim.learning.model import batch_multiplier
    from rlsim.scenario import BatchMultiplier
    from tests.calibrate.test_predict_before_run import _model_dir, _write_run

    model = _model_dir(tmp_path)
    runs = {}
    for rule in ("sqrt", "linear"):
        (tmp_path / rule).mkdir()
        dirs = [_write_run(tmp_path / rule, 16, s, model, n_star=5000 * (1 + 0.1 * s)) for s in range(3)]
        for d in dirs:
            cfg = json.loads((d / "config.json").read_text())
            (d / "config.json").write_text(json.dumps({**cfg, "lr_rule": rule}))
        runs[rule] = learning_model([load_run(d) for d in dirs], 0.9)
    # the logged norms: |G|^2 = 2, tr(Sigma) = 60, so B_simple = 30
    sqrt, linear = runs["sqrt"], runs["linear"]
    assert sqrt["b_simple"] == pytest.approx(30) and linear["b_simple"] == pytest.approx(30)
    expected = {"form": "critical_batch", "critical_batch": pytest.approx(30), "critical_power": 0.5}
    assert sqrt["batch_multiplier"] == expected
    assert linear["batch_multiplier"]["critical_power"] == 1.0 and linear["invariant_rule"] == "linear"
    assert "sqrt" in sqrt["batch_form"] and "McCandlish" in linear["batch_form"]
    m_sqrt = batch_multiplier(BatchMultiplier(**sqrt["batch_multiplier"]), 64, 16)[0]
    m_lin = batch_multiplier(BatchMultiplier(**linear["batch_multiplier"]), 64, 16)[0]
    assert m_lin == pytest.approx((1 + 64 / 30) / (1 + 16 / 30)) and m_sqrt == pytest.approx(m_lin**0.5)


def test_glue_outside_the_timed_phases_is_read_per_sample(tmp_path):
    """The wall time no phase timer saw is host work over every response: read off the reference runs per
    sample, so a held-out batch twice as large pays twice the glue."""
    from calibrate.runs.fit import reward_and_glue

    recs, wall = [], 0.0
    for t in range(1, 6):
        timing = {"rollout": 0.02, "reward": 0.0005 * 32, "train_actor": 0.03}
        wall += sum(timing.values()) + 0.0002 * 32  # 0.2 ms of glue per response
        recs.append({"step": t, "responses": 32, "wall_s": wall, "timing_s": timing})
    costs = reward_and_glue([Run(tmp_path, recs, {}, {}, None)])
    assert costs["rollout_s_per_sample"] == pytest.approx(0.0002)
    assert costs["reward_s_per_sample"] == pytest.approx(0.0005)


def test_in_loop_factors_make_the_reference_runs_phases_come_out_as_measured(tmp_path):
    """Scaled by the in-loop factors read off the reference runs, the profile predicts each bench-fitted phase
    of those runs as measured (under the fitted length model); the rollout's factor leaves out the per-sample glue
    the runs' timer did not see."""
    from calibrate.runs.fit import fit_runs, predict_run
    from calibrate.runs.run import load_run
    from tests.calibrate.test_predict_before_run import _bench_profile, _model_dir, _write_run

    model = _model_dir(tmp_path)
    run = load_run(_write_run(tmp_path, 16, 0, model))
    profile, report = fit_runs(_bench_profile(), [run], None)
    assert set(report["in_loop_factors"]) == {"rollout", "train_actor", "old_logprob", "weight_sync"}
    pred = predict_run(run, profile)["phase_time_s"]
    meas = measured(run, None)["phase_time_s"]
    glue = report["costs"]["rollout_s_per_sample"] * run.batch
    assert pred["rollout"] - glue == pytest.approx(meas["rollout"], rel=0.02)  # static batching: seeds differ
    assert pred["old_logprob"] == pytest.approx(meas["old_logprob"], rel=0.02)
    assert pred["train_actor"] == pytest.approx(meas["train_actor"], rel=0.05)  # Adam's update is not scaled
    # the sync's copy into the engine has no coefficient to scale: the rounds of scaling absorb it
    assert pred["weight_sync"] == pytest.approx(meas["weight_sync"], rel=0.02)


def test_the_critics_passes_get_their_own_factors_from_ppo_runs(tmp_path):
    """A PPO run times the critic's passes apart: priced as the policy's passes of the same shape, each is scaled
    by its own in-loop factor (here half the log-prob pass and 0.6 of the actor's training), said in one line each;
    a GRPO run's fit has no such factor and no such line."""
    from calibrate.runs.fit import fit_runs, predict_run
    from calibrate.runs.run import load_run
    from tests.calibrate.test_predict_before_run import _bench_profile, _model_dir, _write_run

    model = _model_dir(tmp_path)
    run = load_run(_write_run(tmp_path, 16, 0, model, ppo=True))
    profile, report = fit_runs(_bench_profile(), [run], None)
    factors = report["in_loop_factors"]
    assert factors["values"] == pytest.approx(0.5 * factors["old_logprob"], rel=0.05)
    pred, meas = predict_run(run, profile)["phase_time_s"], measured(run, None)["phase_time_s"]
    assert pred["values"] == pytest.approx(meas["values"], rel=0.02)
    assert pred["train_critic"] == pytest.approx(meas["train_critic"], rel=0.05)
    assert sum("the critic's passes" in w for w in report["warnings"]) == 2
    grpo = load_run(_write_run(tmp_path, 8, 1, model))
    _, report = fit_runs(_bench_profile(), [grpo], None)
    assert "values" not in report["in_loop_factors"] and not any("critic" in w for w in report["warnings"])


def test_a_phase_the_bench_did_not_time_comes_from_the_runs_and_says_so(tmp_path):
    """Without a weight-sync bench the reference runs' own sync timings (0.8 ms a step as written) set that phase,
    not rlsim's defaults (1 s of sync latency plus 2 s of sleep / wake, which the hf engine never pays), and the
    report names the phase in one line. A phase neither benched nor timed keeps the defaults, also in one line."""
    import dataclasses

    from calibrate.runs.fit import FROM_RUNS, fit_runs, predict_run
    from calibrate.runs.run import load_run, setup_scenario
    from tests.calibrate.test_predict_before_run import _bench_profile, _model_dir, _write_run

    model = _model_dir(tmp_path)
    run = load_run(_write_run(tmp_path, 16, 0, model))
    # the setup scenario describes the engine that ran: transformers' generate neither sleeps nor wakes
    assert setup_scenario(run)["weight_sync"]["engine_sleeps"] is False
    bench = _bench_profile()
    no_sync = dataclasses.replace(bench, phases={k: v for k, v in bench.phases.items() if k != "weight_sync"})
    profile, report = fit_runs(no_sync, [run], None)
    assert profile.phases["weight_sync"].form == FROM_RUNS
    pred = predict_run(run, profile)["phase_time_s"]["weight_sync"]
    assert pred == pytest.approx(measured(run, None)["phase_time_s"]["weight_sync"], rel=0.05)  # 0.8 ms, not 3 s
    (line,) = [w for w in report["warnings"] if w.startswith("phase weight_sync")]
    assert "not benched" in line and "reference runs' own timings" in line
    # a phase the runs did not time either (their log has no old_logprob seconds) keeps the defaults, and says so
    for rec in run.records:
        rec["timing_s"].pop("old_logprob")
    no_lp = dataclasses.replace(bench, phases={k: v for k, v in bench.phases.items() if k != "old_logprob"})
    _, report = fit_runs(no_lp, [run], None)
    (line,) = [w for w in report["warnings"] if w.startswith("phase old_logprob")]
    assert "neither benched nor timed" in line and "forward_compute_efficiency" in line
