"""Validation: an imported verl log goes through `validate` (must-show 4), and validation of real-run directories
compares rlsim's predictions with what was measured."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from calibrate.errors import CalibrateError
from calibrate.validate import Run, measured, validate

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
    assert row["measured_time_to_target_s"] > 0 and row["predicted_time_to_target_s"] > 0
    html = (out / "report.html").read_text()
    assert "Predicted vs measured" in html and "Error summary" in html and "By batch size" in html
    details = json.loads((out / "validation.json").read_text())
    assert details["reference_batch"] == 512 and details["learning"]["target"] == 0.6


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
    run = Run(tmp_path, recs, None, "real")
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
    with pytest.raises(CalibrateError, match="validation needs at least 3"):
        validate([tmp_path], None)


@pytest.mark.slow
def test_real_runs_validate_against_a_profile(tmp_path):
    """Two short real GRPO runs at two batch sizes, a profile from a short bench, validate: every number present."""
    pytest.importorskip("torch")
    real = [sys.executable, "-m", "real.cli"]
    runs = []
    for p in (4, 8):
        run = tmp_path / f"P{p}"
        subprocess.run(
            [
                *real,
                "train",
                "--task",
                "parity:length=3",
                "--prompts-per-step",
                str(p),
                "--group-size",
                "4",
                "--micro-batches",
                "1",
                "--max-steps",
                "40",
                "--eval-every",
                "2",
                "--target",
                "0.8",
                "-o",
                str(run),
            ],
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
            "-o",
            str(bench / "t"),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    sync = [*real, "bench", "sync", "--repeats", "3", "-o", str(bench / "s")]
    subprocess.run(sync, check=True, capture_output=True, timeout=600)
    model_dir = json.loads((runs[0] / "environment.json").read_text())["model_dir"]
    me = [sys.executable, "-m", "calibrate.cli"]
    subprocess.run(
        [
            *me,
            "fit",
            str(bench / "g" / "bench.csv"),
            str(bench / "t" / "bench.csv"),
            str(bench / "s" / "bench.csv"),
            "--model-dir",
            model_dir,
            "-o",
            str(tmp_path / "profile.json"),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    proc = subprocess.run(
        [
            *me,
            "validate",
            "--profile",
            str(tmp_path / "profile.json"),
            *map(str, runs),
            "--target",
            "0.8",
            "--reference-batch",
            "16",
            "-o",
            str(tmp_path / "val"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "val" / "validation.csv")
    assert list(table["responses_per_step"]) == [16, 32]
    assert table["held_out"].tolist() == [False, True]
    assert table["predicted_step_time_s"].gt(0).all() and table["measured_step_time_s"].gt(0).all()
    # the errors are what the table says they are; how small they are is the CPU loop's business (its numbers
    # are in the issue notes): two 40-step runs of a tiny model are too short and noisy to bound them here
    ratio = table["predicted_step_time_s"] / table["measured_step_time_s"] - 1
    assert (table["step_time_error"] - ratio).abs().max() < 1e-9 and table["step_time_error"].abs().lt(10).all()
    details = json.loads((tmp_path / "val" / "validation.json").read_text())
    assert details["uncovered_phases"] == []  # every phase the runs time came from the bench or the logs
    # one micro-batch: the reference run logged its gradient at one batch size, so no noise scale: invariant
    learning = details["learning"]
    assert learning["b_simple"] is None and learning["batch_multiplier"] == {"form": "invariant"}
    assert len(learning["b_simple_unusable_runs"]) == 1 and "two different batch sizes" in str(learning)
    assert {"samples_to_target_error", "runs_reaching_target"} <= set(details["by_batch"][0])
    # the in-loop factors come from the reference runs, one per bench-fitted phase
    assert set(details["in_loop_factors"]) == {"rollout", "train_actor", "old_logprob", "weight_sync"}
    assert all(0.1 < f < 10 for f in details["in_loop_factors"].values())


def test_scaled_profile_scales_each_phase_time_by_its_factor():
    """The in-loop factor read off the reference runs multiplies the phase's predicted seconds."""
    from calibrate.costfit import base_scenario
    from calibrate.validate import scaled_profile
    from rlsim.costs import RooflineCostModel
    from rlsim.profile import PhaseFit, Profile
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

        from rlsim.engine import simulate_replica

        cost = RooflineCostModel.from_scenario(scn, prof.apply(scn.costs))
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
        cost = RooflineCostModel.from_scenario(scn, prof.apply(scn.costs))
        # the optimizer's memory term is not scaled: take it out to compare the scaled part
        adam = cost.train_s(scn.model, 0.0, 0.0, 1, 1) - prof.phases["train_actor"].parameters["train_step_overhead_s"]
        return cost.train_s(scn.model, 3072, 3072 * 12, 1, 1) - adam, cost.forward_s(scn.model, 3072, 3072 * 12)

    train, fwd = seconds(profile)
    scaled = scaled_profile(profile, {"train_actor": 1.25, "old_logprob": 2.0})
    train2, fwd2 = seconds(scaled)
    assert train2 == pytest.approx(1.25 * train) and fwd2 == pytest.approx(2.0 * fwd)
    # the rollout: decode and prefill overheads and efficiencies together scale the engine's seconds
    roll = rollout_seconds(profile)
    assert rollout_seconds(scaled_profile(profile, {"rollout": 0.75}, scn.costs)) == pytest.approx(0.75 * roll)
    # without the base costs the unfitted decode compute efficiency stays as it was: the compute-bound
    # iterations do not scale
    assert rollout_seconds(scaled_profile(profile, {"rollout": 0.75})) > 0.75 * roll * 1.001
    # an efficiency never exceeds 1: a factor below the efficiency's headroom is capped
    capped = scaled_profile(profile, {"old_logprob": 0.1})
    assert capped.phases["old_logprob"].parameters["forward_compute_efficiency"] == 1.0


def _noise_run(tmp_path, rule: str, name: str) -> Run:
    """A reference run whose logged gradient norms put B_simple at exactly 40: per step |g_small|^2 and
    |g_big|^2 at batches 8 and 16 from |G|^2 = 1 and tr(Sigma) = 40."""
    from rlsim.scenario import load_scenario

    scn = load_scenario(Path(__file__).resolve().parents[2] / "scenarios" / "small_1gpu.yaml")
    scn = scn.with_overrides({"learning.lr_rule": rule})
    recs = [
        {
            "step": t,
            "responses": 16,
            "cumulative_samples": 16 * t,
            "wall_s": 0.1 * t,
            "eval_metric": (t / 40) if t % 2 == 0 else None,
            "timing_s": {"rollout": 0.05},
            "grad_batch_small": 8,
            "grad_batch_big": 16,
            "grad_norm_sq_small": 1 + 40 / 8,
            "grad_norm_sq_big": 1 + 40 / 16,
        }
        for t in range(1, 41)
    ]
    return Run(tmp_path / name, recs, scn, "real")


def test_learning_model_takes_adams_power_for_sqrt_rule_runs(tmp_path):
    """Runs trained with the sqrt LR rule get samples ~ (1 + B / B_simple) ** 0.5 (Adam's first-order cost);
    other rules McCandlish's power 1. Both use B_simple from the runs' gradient norms."""
    from calibrate.validate import learning_from_runs
    from rlsim.learning import batch_multiplier
    from rlsim.scenario import BatchMultiplier

    sqrt = learning_from_runs([_noise_run(tmp_path, "sqrt", "a")], target=0.5)
    linear = learning_from_runs([_noise_run(tmp_path, "linear", "b")], target=0.5)
    assert sqrt["b_simple"] == pytest.approx(40) and linear["b_simple"] == pytest.approx(40)
    assert sqrt["batch_multiplier"] == {
        "form": "critical_batch",
        "critical_batch": pytest.approx(40),
        "critical_power": 0.5,
    }
    assert linear["batch_multiplier"]["critical_power"] == 1.0
    assert "sqrt" in sqrt["batch_form"] and "McCandlish" in linear["batch_form"]
    m_sqrt = batch_multiplier(BatchMultiplier(**sqrt["batch_multiplier"]), 64, 16)[0]
    m_lin = batch_multiplier(BatchMultiplier(**linear["batch_multiplier"]), 64, 16)[0]
    assert m_lin == pytest.approx((1 + 64 / 40) / (1 + 16 / 40)) and m_sqrt == pytest.approx(m_lin**0.5)


def test_glue_outside_the_timed_phases_is_read_per_sample(tmp_path):
    """The wall time no phase timer saw is host work over every response: read off the reference runs per
    sample, so a held-out batch twice as large pays twice the glue."""
    from calibrate.validate import costs_from_runs

    recs, wall = [], 0.0
    for t in range(1, 6):
        timing = {"rollout": 0.02, "reward": 0.0005 * 32, "train_actor": 0.03}
        wall += sum(timing.values()) + 0.0002 * 32  # 0.2 ms of glue per response
        recs.append({"step": t, "responses": 32, "wall_s": wall, "timing_s": timing})
    costs = costs_from_runs([Run(tmp_path, recs, None, "real")])
    assert costs["rollout_s_per_sample"] == pytest.approx(0.0002)
    assert costs["reward_s_per_sample"] == pytest.approx(0.0005)
    assert costs["rollout_overhead_s"] == 0.0


def test_validate_fits_its_own_learning_model_even_when_the_profile_has_one(tmp_path):
    """A profile's learning section (fitted on every batch size) would replace the learning model validate fits
    on the reference runs; validate sets it aside and says so."""
    from rlsim.profile import PhaseFit, Profile

    run = _import_verl(tmp_path)
    prov = {
        k: "x" for k in ("device", "engine", "engine_version", "torch_version", "model", "dtype", "date", "command")
    }
    phases = {"weight_sync": PhaseFit("roofline", {"weight_sync_latency_s": 1.0})}
    learning = {
        "reference_batch": 512,
        "metric": {"initial": 0.0, "asymptote": 0.7, "mid_samples": 1e9, "exponent": 1.0},
        "target": 0.6,
    }
    plain, _ = validate([run], Profile(prov, phases), target=0.6)
    table, details = validate([run], Profile(prov, phases, learning), target=0.6)
    assert details["profile_learning_ignored"] is True
    assert table["predicted_samples_to_target"].tolist() == plain["predicted_samples_to_target"].tolist()
    assert table["predicted_samples_to_target"].iloc[0] < 1e8  # not the profile's curve (mid_samples 1e9)


def test_in_loop_factors_make_the_reference_runs_phases_come_out_as_measured(tmp_path):
    """Scaled by the in-loop factors read off the reference runs, the profile predicts each bench-fitted phase
    of those runs as measured; the rollout's factor leaves out the per-sample glue the runs' timer did not see."""
    from calibrate.validate import costs_from_runs, in_loop_factors, predicted, scaled_profile
    from rlsim.profile import PhaseFit, Profile
    from rlsim.scenario import load_scenario

    scn = load_scenario(Path(__file__).resolve().parents[2] / "scenarios" / "small_1gpu.yaml")
    b = scn.workload.responses_per_step
    timing = {"rollout": 8.0, "reward": 0.001 * b, "old_logprob": 0.5, "train_actor": 1.5}
    recs, wall = [], 0.0
    for t in range(1, 6):
        wall += sum(timing.values()) + 1e-4 * b  # 0.1 ms of glue per response
        recs.append({"step": t, "responses": b, "wall_s": wall, "timing_s": dict(timing), "eval_metric": None})
    run = Run(tmp_path, recs, scn, "real")
    prov = {
        k: "x" for k in ("device", "engine", "engine_version", "torch_version", "model", "dtype", "date", "command")
    }
    profile = Profile(
        prov,
        {
            "rollout": PhaseFit("roofline", {"decode_memory_efficiency": 0.5, "decode_iteration_overhead_s": 0.004}),
            "train_actor": PhaseFit("roofline", {"train_compute_efficiency": 0.3, "train_step_overhead_s": 0.02}),
            "old_logprob": PhaseFit("roofline", {"forward_compute_efficiency": 0.3, "forward_overhead_s": 0.004}),
        },
    )
    costs = costs_from_runs([run])
    meas = measured(run, None)["phase_time_s"]
    factors = in_loop_factors([run], [meas], profile, costs)
    assert set(factors) == {"rollout", "train_actor", "old_logprob"}  # no weight-sync fit, no factor
    pred = predicted(run, scaled_profile(profile, factors, scn.costs), None, costs)["phase_time_s"]
    assert pred["rollout"] - costs["rollout_s_per_sample"] * b == pytest.approx(8.0, rel=1e-3)
    assert pred["old_logprob"] == pytest.approx(0.5, rel=1e-6)
    assert pred["train_actor"] == pytest.approx(1.5, rel=0.01)  # Adam's memory-bound update is not scaled
