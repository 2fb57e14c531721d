"""Speed of the simulator (pytest-benchmark; deselected from the default run, run with --benchmark-only).

Target (core issue, must-show 5): the paper scenario at P=1024, G=8, lognormal responses (mean 4,000, max 16,384
tokens), 300 steps, at >= 1,000,000 responses per wall-second on one core.

    python -m pytest tests/benchmarks --benchmark-only --benchmark-enable
"""

import pytest

import rlsim
from tests.conftest import SCENARIOS

STEPS = 300


@pytest.fixture(scope="module")
def paper_1024():
    s = rlsim.load_scenario(
        SCENARIOS / "paper_grpo.yaml",
        {
            "workload.prompts_per_step": 1024,
            "workload.group_size": 8,
            "run.steps": STEPS,
            "workload.response_length": {"dist": "lognormal", "mean_tokens": 4000, "sigma": 0.8},
            "workload.max_response_tokens": 16384,
        },
    )
    rlsim.simulate(s.with_overrides({"run.steps": 2}))  # compile the engine kernel outside the timing
    return s


@pytest.mark.benchmark(group="simulator")
def test_paper_scenario_responses_per_second(benchmark, paper_1024):
    result = benchmark.pedantic(rlsim.simulate, args=(paper_1024,), rounds=5, iterations=1, warmup_rounds=1)
    responses = STEPS * paper_1024.workload.responses_per_step
    rate = responses / benchmark.stats.stats.median
    benchmark.extra_info["responses"] = responses
    benchmark.extra_info["responses_per_wall_s"] = rate
    assert len(result.records) == STEPS
    assert rate >= 1_000_000, f"{rate:,.0f} responses per wall-second, below the 1,000,000 target"


@pytest.mark.benchmark(group="engine")
def test_engine_kernel_one_replica(benchmark):
    """One replica, 1,024 requests with heavy preemption (KV cache far smaller than the batch needs)."""
    import numpy as np

    from rlsim.costs import RooflineCostModel

    s = rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", {"engine.max_num_seqs": 1024})
    cost = RooflineCostModel.from_scenario(s)
    rng = np.random.default_rng(0)
    prompts = rng.integers(100, 1000, 1024)
    responses = np.clip(rng.lognormal(np.log(4000) - 0.32, 0.8, 1024), 1, 16384).astype(np.int64)
    from rlsim.engine import simulate_replica

    args = (prompts, responses, 1024, s.kv_capacity_tokens, cost.decode_coefficients(), cost.prefill_coefficients())
    simulate_replica(*args)
    res = benchmark(simulate_replica, *args)
    benchmark.extra_info["preemptions"] = res.num_preemptions
