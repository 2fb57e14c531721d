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


def test_the_page_is_written_whole_with_its_command_date_and_machine(scaling, tmp_path):
    """scripts/scaling.py writes docs/results/scaling.md whole: the header names the command, the date and the
    machine, then the time table and the kernel's work table; a page written before (hand edits included) is gone."""
    from tests.conftest import ROOT

    work = {
        128: [
            {
                "requests_per_replica": 85,
                "iterations": 15955,
                "preemptions": 0,
                "preemptions_per_request": 0.0,
                "prefill_share_of_time": 0.0001,
                "recomputed_share_of_prefill": 0.0,
                "kernel_s": 0.002,
                "replicas": 24,
                "responses_per_step": 1024,
            }  # fmt: skip
        ]
    }
    rows = [("steps", 10, [0.02, 0.01, 0.03], 10240)]
    lines = scaling.page("python scripts/scaling.py --repeats 3", rows, [0.05], work, 2, "2026-01-02", "A CPU, 2 cores")
    assert lines[0] == f"# {scaling.TITLE}"
    assert lines[2].startswith(
        "Written by `python scripts/scaling.py --repeats 3` on 2026-01-02 (A CPU, 2 cores; rlsim "
    )
    assert "| steps | 10 | 0.0200 | 3.00 | 512,000 |" in lines
    assert "## The kernel's work per step" in lines
    assert "5% of the machine" in "\n".join(lines)
    assert scaling.OUTPUT == ROOT / "docs" / "results" / "scaling.md"
    page = tmp_path / "scaling.md"
    page.write_text("# old tables\n\nwritten by hand\n")
    scaling.write(page, lines)
    assert page.read_text() == "\n".join(lines) + "\n"


def test_the_estimates_page_is_written_whole(tmp_path):
    """scripts/estimates.py's page: header, then one row per case with the estimate over the measured median."""
    from tests.conftest import ROOT, load_script

    estimates = load_script("estimates")
    rows = [("paper_grpo (as shipped)", 346, 0.06, [0.05, 0.04, 0.06])]
    lines = estimates.page("python scripts/estimates.py --write", rows, [0.0], "2026-01-02", "A CPU, 2 cores")
    assert lines[0] == f"# {estimates.TITLE}" and "on 2026-01-02 (A CPU, 2 cores)" in lines[2]
    assert lines[-1] == "| paper_grpo (as shipped) | 346 | 0.06 s | 0.05 s | 1.50 | 1.20 |"
    assert estimates.OUTPUT == ROOT / "docs" / "results" / "estimates.md"
