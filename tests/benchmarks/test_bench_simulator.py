"""Speed of the simulator (pytest-benchmark; deselected from the default run):

    python -m pytest tests/benchmarks/test_bench_simulator.py --benchmark-only --benchmark-enable

In-process ``rlsim.simulate`` of the paper scenario (G = 8, lognormal responses of mean 4,000 and at most 16,384 tokens,
async with staleness 1, so the steps are simulated two at a time, each window of two batches once) at P = 128, 1024 and
8192 for 300 steps, at >= 5,000,000 simulated responses per wall-second, and at P = 8192 with the fast thrash model; the
floor of >= 1,000,000 at P = 1024 is checked too. Last measured: docs/results/benchmarks.md. The rate, the machine's
load and the kernel (with the numba that compiled it) are in extra_info; threads are rlsim.host.threads' default
(RLSIM_THREADS, auto: every core).
"""

import pytest

import rlsim
from rlsim.engine import replica as engine
from rlsim.host.machine_load import LoadMeter
from tests.conftest import SCENARIOS

STEPS = 300
TARGET = 5_000_000  # simulated responses per wall-second
ROUNDS = {128: 5, 1024: 3, 8192: 1}  # 300 steps at P = 8192 take tens of seconds


def paper(prompts: int, steps: int = STEPS, thrash_model: str = "exact") -> rlsim.Scenario:
    return rlsim.load_scenario(
        SCENARIOS / "paper_grpo.yaml",
        {
            "workload.prompts_per_step": prompts,
            "workload.group_size": 8,
            "run.steps": steps,
            "run.until_target": False,
            "engine.thrash_model": thrash_model,
        },
    )


@pytest.mark.benchmark(group="simulator")
@pytest.mark.parametrize("prompts", [128, 1024, 8192])
def test_paper_scenario_responses_per_second(benchmark, prompts):
    scenario = paper(prompts)
    rlsim.simulate(paper(prompts, 2))  # load the kernel and its workspace outside the timing
    meter = LoadMeter().start()
    result = benchmark.pedantic(rlsim.simulate, args=(scenario,), rounds=ROUNDS[prompts], iterations=1)
    load = meter.stop()["other_cpu_fraction"]
    responses = STEPS * scenario.workload.responses_per_step
    rate = responses / benchmark.stats.stats.median
    benchmark.extra_info.update(
        responses=responses, responses_per_wall_s=rate, other_cpu_fraction=load, kernel=engine.kernel_description()
    )
    assert len(result.records) == STEPS
    if prompts == 1024:
        assert rate >= 1_000_000, f"{rate:,.0f} responses per wall-second at P = 1024, below the core 1,000,000"
    assert rate >= TARGET, f"{rate:,.0f} responses per wall-second at P = {prompts}, below the {TARGET:,} target"


@pytest.mark.benchmark(group="simulator")
def test_paper_scenario_responses_per_second_fast_thrash_model(benchmark):
    """The same at P = 8192 (every replica thrashing) with engine.thrash_model: fast."""
    scenario = paper(8192, thrash_model="fast")
    rlsim.simulate(paper(8192, 2, "fast"))
    meter = LoadMeter().start()
    benchmark.pedantic(rlsim.simulate, args=(scenario,), rounds=1, iterations=1)
    load = meter.stop()["other_cpu_fraction"]
    rate = STEPS * scenario.workload.responses_per_step / benchmark.stats.stats.median
    benchmark.extra_info.update(responses_per_wall_s=rate, other_cpu_fraction=load, kernel=engine.kernel_description())
    assert rate >= TARGET, f"{rate:,.0f} responses per wall-second at P = 8192 (fast thrash model), below {TARGET:,}"


@pytest.mark.benchmark(group="engine")
def test_engine_kernel_one_replica(benchmark):
    """One replica, 1,024 requests with heavy preemption (KV cache far smaller than the batch needs)."""
    import numpy as np

    from rlsim.run.costs import RooflineCostModel

    s = rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", {"engine.max_num_seqs": 1024})
    cost = RooflineCostModel.from_scenario(s)
    rng = np.random.default_rng(0)
    prompts = rng.integers(100, 1000, 1024)
    responses = np.clip(rng.lognormal(np.log(4000) - 0.32, 0.8, 1024), 1, 16384).astype(np.int64)
    from rlsim.engine.replica import simulate_replica

    args = (prompts, responses, 1024, s.kv_capacity_tokens, cost.decode_coefficients(), cost.prefill_coefficients())
    simulate_replica(*args)
    res = benchmark(simulate_replica, *args)
    benchmark.extra_info["preemptions"] = res.num_preemptions
