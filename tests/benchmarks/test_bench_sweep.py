"""The seed paper's sweep, 8 batch sizes x 2 LR rules, each to its target with a band (target: < 60 s here).

python -m pytest tests/benchmarks/test_bench_sweep.py --benchmark-only --benchmark-enable
"""

import pytest

import rlsim
from rlsim.sweep import sweep
from tests.conftest import SCENARIOS


@pytest.mark.benchmark(group="sweep")
def test_paper_sweep_16_configurations(benchmark):
    scenario = rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml")
    assert len(scenario.sweep.grid["workload.prompts_per_step"]) == 8
    assert list(scenario.sweep.grid["learning.lr_rule"]) == ["sqrt", "none"]
    result = benchmark.pedantic(sweep, args=(scenario,), rounds=1, iterations=1)
    assert len(result.table) == 16 and result.table["error"].isna().all()
    benchmark.extra_info["configurations"] = 16
    assert benchmark.stats.stats.max < 60.0, f"the paper sweep took {benchmark.stats.stats.max:.1f} s"
