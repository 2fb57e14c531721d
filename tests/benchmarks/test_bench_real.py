"""Wall-clock behaviour of the real microbenchmarks on this machine (deselected by default: shared machines are
noisy, and these compare measured times).

python -m pytest tests/benchmarks/test_bench_real.py --benchmark-only --benchmark-enable
"""

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
