"""``rlsim plan`` over >= 2,000 configurations (the paper scenario, its default axes on two GPU types: 2,496
configurations) in under 60 s on this 2-core machine.

python -m pytest tests/benchmarks/test_bench_plan.py --benchmark-only --benchmark-enable
"""

import pytest

import rlsim
from rlsim.plan import plan
from tests.conftest import SCENARIOS


@pytest.mark.benchmark(group="plan")
def test_paper_plan_over_2496_configurations(benchmark):
    scenario = rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml")
    result = benchmark.pedantic(
        plan, args=(scenario,), kwargs={"gpu_types": ["H100-SXM", "H200"]}, rounds=1, iterations=1
    )
    t = result.table
    assert len(t) >= 2000 and result.winner is not None
    benchmark.extra_info["configurations"] = len(t)
    benchmark.extra_info["pruned"] = int((t["status"] == "pruned").sum())
    benchmark.extra_info["full_simulations"] = int((t["fidelity"] == "full").sum())
    assert benchmark.stats.stats.max < 60.0, f"the plan took {benchmark.stats.stats.max:.1f} s"
