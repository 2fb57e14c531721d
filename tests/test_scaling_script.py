"""scripts/scaling.py's table of the kernel's work per step: its per-replica counts are those of the steps as
rlsim simulates them (rlsim.rollout deals the same requests to the same replicas)."""

import importlib.util

import numpy as np
import pytest

from rlsim.costs import RooflineCostModel
from rlsim.rollout import simulate_rollout
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def scaling():
    spec = importlib.util.spec_from_file_location("scaling_script", ROOT / "scripts" / "scaling.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _scenario(scaling, prompts):
    import rlsim

    return rlsim.load_scenario(scaling.SCENARIO, {**scaling.BASE, "workload.prompts_per_step": prompts})


def test_the_windows_are_the_pipelines_steps(scaling):
    """Step n's window: batch n and, streaming with staleness k = 1, batch n - 1 before it, as drawn in order."""
    scn = _scenario(scaling, 16)
    from rlsim.lengths import sample_step

    rng = np.random.default_rng(scn.run.seed)
    batches = [sample_step(scn.workload, rng, n * scn.workload.responses_per_step) for n in range(3)]
    windows = scaling.step_windows(scn, 2)
    assert len(windows) == 2
    for (prompt, response), (a, b) in zip(windows, [(0, 1), (1, 2)]):
        assert np.array_equal(prompt, np.concatenate([batches[a][0], batches[b][0]]))
        assert np.array_equal(response, np.concatenate([batches[a][1], batches[b][1]]))


def test_step_work_counts_what_the_rollouts_count(scaling):
    """P = 1024 preempts (about 1.7 times per request): the table's means per replica are the rollouts' sums over
    the same steps' replicas, so a request dealt to another replica, or a step cut wrong, shows."""
    steps = 2
    work = scaling.step_work(1024, repeats=1, steps=steps)
    scn = _scenario(scaling, 1024)
    cost = RooflineCostModel.from_scenario(scn)
    rollouts = [
        simulate_rollout(
            prompt,
            response,
            scn.workload.group_size,
            scn.num_replicas,
            scn.engine.max_num_seqs,
            scn.kv_capacity_tokens,
            cost.decode_coefficients(),
            cost.prefill_coefficients(),
            rules=scn.scheduler_rules,
        )
        for prompt, response in scaling.step_windows(scn, steps)
    ]
    replicas = steps * scn.num_replicas
    assert work["preemptions"] > 0
    assert work["preemptions"] == pytest.approx(sum(r.num_preemptions for r in rollouts) / replicas, rel=1e-12)
    assert work["iterations"] == pytest.approx(sum(r.num_iterations for r in rollouts) / replicas, rel=1e-12)
    assert work["requests_per_replica"] == 2 * scn.workload.responses_per_step / scn.num_replicas
    assert 0 < work["prefill_share_of_time"] < 1 and 0 < work["recomputed_share_of_prefill"] <= 1
    assert work["kernel_s"] > 0
