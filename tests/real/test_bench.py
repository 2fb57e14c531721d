"""Microbenchmarks: the generation, train and sync benches produce tidy tables with provenance (hf here; vllm in
test_vllm.py, in its own process), their timings positive and finite. How their measured times compare
(throughput rising with concurrency, a train step costing more than a forward) is wall-clock and lives in
tests/benchmarks/test_bench_real.py, outside the default run."""

import json
import math
import subprocess
import sys

import pandas as pd
import pytest

pytest.importorskip("torch")

from calibrate import CalibrateError  # noqa: E402
from calibrate.bench.tables import load_bench_tables  # noqa: E402
from real import bench  # noqa: E402
from real.errors import RealError  # noqa: E402
from rlsim.io.records import BENCH_COLUMNS, BENCH_REQUIRED_COLUMNS  # noqa: E402


def _positive_finite(values) -> bool:
    return all(v > 0 and math.isfinite(v) for v in values)


def test_generation_bench_table_hf():
    df = bench.bench_generation("hf", None, [1, 4, 16], [8], [16], repeats=2, warmup=1)
    assert len(df) == 6 and set(df["repeat"]) == {0, 1}
    assert (df["tokens"] == df["concurrency"] * 16).all()
    tput = bench.summarize(df).set_index("concurrency")["tokens_per_s"]
    assert list(tput.index) == [1, 4, 16] and _positive_finite(tput) and _positive_finite(df["time_s"])
    prov = json.loads(df["provenance"].iloc[0])
    for key in ("device", "engine", "engine_version", "torch_version", "model", "dtype", "date", "command"):
        assert key in prov


def test_train_and_sync_benches():
    df = bench.bench_train(None, [256, 1024], seq_len=32, repeats=2, warmup=1)
    s = bench.summarize(df)
    assert set(s["phase"]) == {"train_actor", "old_logprob"}
    train = s[s["phase"] == "train_actor"].set_index("tokens")["time_s"]
    fwd = s[s["phase"] == "old_logprob"].set_index("tokens")["time_s"]
    assert list(train.index) == [256, 1024] and list(fwd.index) == [256, 1024]
    assert _positive_finite(train) and _positive_finite(fwd)
    sync = bench.bench_sync("hf", None, repeats=2, warmup=1)
    assert (sync["bytes"] > 0).all() and _positive_finite(sync["time_s"]) and (sync["phase"] == "weight_sync").all()


@pytest.mark.slow
def test_cli_bench_writes_tidy_tables(tmp_path):
    out = tmp_path / "b"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "real.cli",
            "bench",
            "generation",
            "--concurrency",
            "1,2",
            "--prompt-tokens",
            "16",
            "--response-tokens",
            "8",
            "--repeats",
            "2",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    csv, parquet = pd.read_csv(out / "bench.csv"), pd.read_parquet(out / "bench.parquet")
    assert len(csv) == len(parquet) == 4
    assert list(csv.columns) == list(BENCH_COLUMNS)
    assert json.loads((out / "provenance.json").read_text())[0]["engine"] == "hf"
    # calibrate reads the table with the same column definitions, and refuses it without a required one
    assert len(load_bench_tables([out / "bench.csv"])) == 4
    for column in BENCH_REQUIRED_COLUMNS:
        csv.drop(columns=[column]).to_csv(tmp_path / "cut.csv", index=False)
        with pytest.raises(CalibrateError, match=f"missing column\\(s\\) {column};"):
            load_bench_tables([tmp_path / "cut.csv"])
    bad = subprocess.run(
        [sys.executable, "-m", "real.cli", "bench", "generation", "--concurrency", "0,x"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "--concurrency" in bad.stderr and "Traceback" not in bad.stderr


def test_read_vllm_bench_json(tmp_path):
    lat = tmp_path / "latency_bs8_in32_out128.json"
    lat.write_text(json.dumps({"avg_latency": 1.5, "latencies": [1.4, 1.5, 1.6], "percentiles": {"50": 1.5}}))
    thr = tmp_path / "throughput.json"
    thr.write_text(
        json.dumps(
            {
                "model_id": "HuggingFaceTB/SmolLM2-135M",
                "elapsed_time": 10.0,
                "num_requests": 100,
                "total_num_tokens": 50000,
                "requests_per_second": 10.0,
                "tokens_per_second": 5000.0,
            }
        )
    )
    df = bench.read_vllm_bench([lat, thr])
    assert list(df.columns) == list(BENCH_COLUMNS)
    l_rows = df[df["time_s"] != 10.0]
    assert list(l_rows["time_s"]) == [1.4, 1.5, 1.6]
    assert (l_rows["concurrency"] == 8).all() and (l_rows["tokens"] == 8 * 128).all()
    assert l_rows["tokens_per_s"].iloc[0] == pytest.approx(8 * 128 / 1.4)
    t_row = df[df["time_s"] == 10.0].iloc[0]
    assert t_row["tokens"] == 50000 and t_row["tokens_per_s"] == 5000.0
    # vllm bench names its model as model_id (read in vllm 0.32's benchmarks/throughput.py); no device is written
    assert t_row["model"] == "HuggingFaceTB/SmolLM2-135M" and json.loads(t_row["provenance"])["model"] == t_row["model"]
    assert t_row["device"] == "unknown" and (l_rows["model"] == "unknown").all()
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(Exception, match="neither vllm bench latency"):
        bench.read_vllm_bench([bad])


def test_repeats_are_interleaved_across_configurations():
    """Warm-ups first, then round by round: a drift of the machine reaches every configuration alike."""
    calls = []
    fns = [lambda: calls.append("a"), lambda: calls.append("b"), lambda: calls.append("c")]
    times = bench._timed_rounds(fns, repeats=3, warmup=2)
    assert calls == ["a", "a", "b", "b", "c", "c"] + ["a", "b", "c"] * 3
    assert [len(t) for t in times] == [3, 3, 3] and all(x >= 0 for t in times for x, _ in t)
    # each repeat carries the machine's load over it (rlsim.host.machine_load)
    assert all(set(load) == {"other_cpu_fraction", "cpu_s", "load_avg_1m"} for t in times for _, load in t)


def test_sync_bench_over_model_sizes(tmp_path):
    df = bench.bench_sync("hf", ["tiny", "tiny:hidden_size=192"], repeats=2, warmup=1, number=2)
    by = df.groupby("model")["bytes"].first()
    assert set(by.index) == {"tiny", "tiny:hidden_size=192"} and by["tiny:hidden_size=192"] > by["tiny"]
    assert len(df) == 4 and _positive_finite(df["time_s"])


def test_cli_refuses_several_models_for_a_generation_bench(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "real.cli", "bench", "generation", "--model", "tiny", "--model", "smollm2"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "takes one" in proc.stderr and proc.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "doc, words",
    [
        ({"latencies": 1.5}, "not a list of seconds"),
        ({"latencies": [1.4, "x"]}, "latencies is 'x'"),
        ({"latencies": [0.0]}, "not a positive number"),
        ({"elapsed_time": [10]}, "elapsed_time"),
        ({"elapsed_time": 10.0, "num_requests": 2.5}, "num_requests"),
        ({"elapsed_time": 10.0, "total_num_tokens": 10**400}, "total_num_tokens"),
        ({"elapsed_time": 10.0, "model_id": 7}, "model_id"),
        ([1, 2], "a JSON list"),
    ],
)
def test_read_vllm_bench_names_a_bad_value(tmp_path, doc, words):
    """Wrong types and values in vllm bench JSON name the file and the key (they were float()/pyarrow tracebacks,
    found by the fuzz test)."""
    bad = tmp_path / "throughput.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(RealError, match=words):
        bench.read_vllm_bench([bad])
