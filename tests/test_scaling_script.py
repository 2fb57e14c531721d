"""scripts/scaling.py's table of the kernel's work per step: its per-replica counts are those of the steps as
rlsim simulates them (rlsim.engine.rollout deals the same requests to the same replicas)."""

import numpy as np
import pytest

from rlsim.engine.rollout import simulate_rollout
from rlsim.run.costs import RooflineCostModel
from rlsim.scenario import scheduler_rules, with_overrides
from tests.conftest import load_script


@pytest.fixture(scope="module")
def scaling():
    return load_script("scaling")


def _scenario(scaling, prompts):
    import rlsim

    return rlsim.load_scenario(scaling.SCENARIO, {**scaling.BASE, "workload.prompts_per_step": prompts})


def test_the_windows_are_the_pipelines_steps(scaling, monkeypatch):
    """The script's windows 2 and 3 are the requests rlsim.run.pipeline hands the kernel for steps 3-4 and 5-6
    (streaming, staleness 1: two steps' batches a window, oldest first, drawn in order; responses drifting with
    the cumulative samples, so a step drawn as another shows)."""
    import rlsim
    from rlsim.run import pipeline

    handed = []
    launch = pipeline.launch_rollouts

    def recording(steps, *args, **kwargs):
        handed.extend((p.copy(), r.copy()) for p, r in steps)
        return launch(steps, *args, **kwargs)

    monkeypatch.setattr(pipeline, "launch_rollouts", recording)
    drift = {"workload.response_length_drift": {"final_mean_tokens": 12000, "over_samples": 256}}
    scn = rlsim.load_scenario(scaling.SCENARIO, {**scaling.BASE, "workload.prompts_per_step": 16, **drift})
    rlsim.simulate(with_overrides(scn, {"run.steps": 6}))  # three windows of two steps' batches
    assert len(handed) == 3 and handed[1][0].size == 2 * scn.workload.responses_per_step
    windows = scaling.step_windows(scn, 2)
    assert len(windows) == 2
    for (prompt, response), (want_p, want_r) in zip(windows, handed[1:]):
        assert np.array_equal(prompt, want_p) and np.array_equal(response, want_r)


def test_step_work_counts_what_the_rollouts_count(scaling):
    """P = 1024 preempts (about 1.7 times per request): the table's means per replica are the rollouts' sums over
    the same steps' replicas, so a request dealt to another replica, or a step cut wrong, shows."""
    windows = 2
    work = scaling.step_work(1024, repeats=1, windows=windows)
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
            rules=scheduler_rules(scn),
        )
        for prompt, response in scaling.step_windows(scn, windows)
    ]
    replicas = windows * scn.num_replicas
    assert work["preemptions"] > 0
    assert work["preemptions"] == pytest.approx(sum(r.num_preemptions for r in rollouts) / replicas, rel=1e-12)
    assert work["iterations"] == pytest.approx(sum(r.num_iterations for r in rollouts) / replicas, rel=1e-12)
    assert work["requests_per_replica"] == 2 * scn.workload.responses_per_step / scn.num_replicas
    assert 0 < work["prefill_share_of_time"] < 1 and 0 < work["recomputed_share_of_prefill"] <= 1
    assert work["kernel_s"] > 0


def test_the_two_scripts_rewrite_their_own_parts_of_the_document_and_keep_the_rest(scaling):
    """docs/scaling.md is scripts/scaling.py's tables, then sections written by hand, then scripts/estimates.py's
    table: each script rewrites its part only (an estimate table written over the hand-written sections lost
    them once)."""
    from tests.conftest import load_script

    estimates = load_script("estimates")
    doc = "\n".join(["# old tables", scaling.BY_HAND, "## by hand", estimates.START, "## old estimates", ""])
    doc = scaling.merged(doc, ["# new tables"])
    doc = estimates.merged(doc, "\n".join([estimates.START, "## new estimates", ""]))
    assert doc == "\n".join(
        ["# new tables", "", scaling.BY_HAND, "## by hand", estimates.START, "## new estimates", ""]
    )
    assert estimates.START == scaling.ESTIMATES_START
