"""Generation benchmarks as load patterns (issue 27): a burst, sustained concurrency and a request rate, each
priced on a small trace whose makespan is counted by hand; and how the ``concurrency`` column is read."""

import numpy as np
import pytest

from calibrate.published import generation as gen
from rlsim.engine.iteration import DecodeCoefficients, PrefillCoefficients
from rlsim.engine.replica import SchedulerRules
from rlsim.frameworks.nemo_rl.recipe import NotExpressible

A, C = 1e-3, 1e-4  # a decode iteration of b sequences costs A + C b; prefill is free
MAX_SEQS = 4
PROMPT = np.array([8, 8, 8, 8], dtype=np.int64)
OUTPUT = np.array([4, 1, 1, 4], dtype=np.int64)  # 10 tokens; vLLM 0.5 rounds: every token one iteration


def coefficients(a: float = A, c: float = C) -> tuple[DecodeCoefficients, PrefillCoefficients]:
    b = np.arange(MAX_SEQS + 1, dtype=float)
    decode = DecodeCoefficients(
        mem_intercept_s=a + c * b,
        mem_slope_s_per_token=0.0,
        compute_intercept_s=np.zeros_like(b),
        compute_slope_s_per_token=0.0,
        overhead_s=np.zeros_like(b),
    )
    return decode, PrefillCoefficients(0.0, 0.0, 0.0)


def throughput(load, prompt=PROMPT, output=OUTPUT, a=A, c=C):
    decode, prefill = coefficients(a, c)
    return gen.bench_throughput(load, prompt, output, MAX_SEQS, 10_000, decode, prefill, SchedulerRules())


def test_sustained_concurrency_is_not_one_batch_nor_a_burst():
    # burst: all four admitted; iteration 1 runs b=4 (requests 1, 2 end), then b=2 for three iterations
    burst = 10 / ((A + 4 * C) + 3 * (A + 2 * C))
    # two in flight: (0, 1) -> 1 ends, 2 joins -> 2 ends, 3 joins -> two more of (0, 3): 0 ends -> 3 alone twice
    sustained = 10 / (4 * (A + 2 * C) + 2 * (A + C))
    # the old reading of "concurrency 2": one batch of two requests (0, 1): b=2 once, then request 0 alone thrice
    one_batch = 5 / ((A + 2 * C) + 3 * (A + C))
    assert throughput(gen.BenchLoad("burst", 4)) == pytest.approx(burst, rel=1e-12)
    assert throughput(gen.BenchLoad("sustained", 4, concurrency=2)) == pytest.approx(sustained, rel=1e-12)
    assert throughput(gen.BenchLoad("burst", 2), PROMPT[:2], OUTPUT[:2]) == pytest.approx(one_batch, rel=1e-12)
    assert sustained < burst and abs(sustained / one_batch - 1) > 0.2
    # a concurrency above max_num_seqs is capped by the engine: the burst again
    assert throughput(gen.BenchLoad("sustained", 4, concurrency=64)) == pytest.approx(burst, rel=1e-12)


def test_a_request_rate_holds_the_little_law_concurrency():
    # C = 0: makespans at 1, 2, 3, 4 in flight are 10, 6, 5, 4 iterations -> 400, 667, 800, 1000 requests/s
    served = {1: 4 / 10e-3, 2: 4 / 6e-3}
    rate = 500.0
    in_flight = 1 + (rate - served[1]) / (served[2] - served[1])  # 1.375
    expected = 10 / ((4 + in_flight) / rate)
    assert throughput(gen.BenchLoad("rate", 4, rate=rate), c=0.0) == pytest.approx(expected, rel=1e-12)
    # beyond what max_num_seqs sustains (1000/s) the engine is saturated: the burst's 10 tokens in 4 iterations
    assert throughput(gen.BenchLoad("rate", 4, rate=2000.0), c=0.0) == pytest.approx(10 / 4e-3, rel=1e-12)
    # below R(1) the engine idles between requests: fewer than one in flight, throughput set by the arrivals
    slow = throughput(gen.BenchLoad("rate", 4, rate=100.0), c=0.0)
    assert slow == pytest.approx(10 / ((4 + 100.0 / 400.0) / 100.0), rel=1e-12)


@pytest.mark.parametrize(
    "text, load",
    [
        ("num-prompts=320, request-rate inf", gen.BenchLoad("burst", 320)),
        ("max-concurrency=64, num-prompts=500", gen.BenchLoad("sustained", 500, concurrency=64)),
        ("num_prompts=500 max_concurrency=64 request-rate inf", gen.BenchLoad("sustained", 500, concurrency=64)),
        ("64", gen.BenchLoad("sustained", 1000, concurrency=64)),
        ("request-rate 4, num-prompts=200", gen.BenchLoad("rate", 200, rate=4.0)),
        ("qps=2.5", gen.BenchLoad("rate", 1000, rate=2.5)),
    ],
)
def test_the_concurrency_column_reads_as_a_load(text, load):
    assert gen.bench_load(text) == load


@pytest.mark.parametrize(
    "text, words",
    [
        ("lots", "names no load"),
        ("0", "whole number >= 1"),
        ("12.5", "whole number >= 1"),
        ("max-concurrency=8, request-rate 3", "one of them"),
        ("request-rate 0", "must be > 0"),
    ],
)
def test_a_load_rlsim_cannot_read_is_refused_with_the_fix(text, words):
    with pytest.raises(NotExpressible, match=words):
        gen.bench_load(text)


def test_fixed_lengths_come_from_numeric_columns():
    p, o = gen.request_lengths({"input_len": 512, "output_len": "128"}, 3, 0)
    assert p.tolist() == [512] * 3 and o.tolist() == [128] * 3
    with pytest.raises(NotExpressible, match="both as numbers"):
        gen.request_lengths({"input_len": 512, "output_len": "ShareGPT (variable)"}, 3, 0)
    raw = gen.scenario_for_row(
        {
            "model": "Meta-Llama-3.1-8B-Instruct",
            "gpu": "H100-SXM",
            "tp": 1,
            "engine_version": "0.5.4",
            "input_len": 4096,
            "output_len": 64,
        }
    )
    assert raw["workload"]["max_prompt_tokens"] == 4096 and raw["workload"]["max_response_tokens"] == 2044


def test_a_row_of_another_engine_is_refused_naming_it():
    row = {"engine": "SGLang", "engine_version": "0.4.1", "model": "Qwen2.5-7B", "gpu": "H100-SXM", "tp": 1}
    with pytest.raises(NotExpressible, match="engine 'SGLang' is not modelled"):
        gen.scenario_for_row(row)
