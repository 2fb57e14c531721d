"""Pipeline oracles: schedules, staleness, utilization, determinism (must-show 2 and 3 of the core issue)."""

import math

import numpy as np
import pytest

import rlsim
from rlsim.phases import TIMED_PHASES
from rlsim.scenario import with_overrides
from tests.conftest import SCENARIOS


def _load(name, **over):
    return rlsim.load_scenario(SCENARIOS / f"{name}.yaml", {"run.steps": 6, **over})


def test_sync_colocated_step_time_is_sum_of_phases():
    res = rlsim.simulate(_load("dense8b_h100_colocated"))
    for rec in res.records:
        total = sum(rec["timing_s"][p.value] for p in TIMED_PHASES)
        assert rec["step_time_s"] == pytest.approx(total, rel=1e-12)
        assert rec["staleness"] == 0
    # and the phases that must be there are there
    t = res.records[0]["timing_s"]
    assert t["rollout"] > 0 and t["train_actor"] > 0 and t["ref_logprob"] > 0 and t["weight_sync"] > 0
    assert t["values"] == 0 and t["train_critic"] == 0  # grpo: no critic


def test_sync_separate_step_time_is_sum_of_phases():
    s = _load("dense8b_h100_async", **{"schedule.mode": "sync-separate", "schedule.max_staleness": 0})
    res = rlsim.simulate(s)
    for rec in res.records:
        assert rec["step_time_s"] == pytest.approx(sum(rec["timing_s"].values()), rel=1e-12)


@pytest.mark.parametrize("name", ["dense8b_h100_async", "paper_grpo"])
@pytest.mark.parametrize("k", [1, 2])
def test_async_is_no_slower_than_sync_separate(name, k):
    sync = rlsim.simulate(_load(name, **{"schedule.mode": "sync-separate", "schedule.max_staleness": 0}))
    asy = rlsim.simulate(_load(name, **{"schedule.mode": "async", "schedule.max_staleness": k}))
    # same seed -> same batches, so the comparison is of the schedule alone
    assert asy.records[-1]["wall_s"] <= sync.records[-1]["wall_s"] + 1e-9
    assert asy.summary()["step_time_s"] <= sync.summary()["step_time_s"] + 1e-9
    assert max(r["staleness"] for r in asy.records) <= k
    assert max(r["staleness"] for r in asy.records) >= 1  # overlap really happened
    assert all(r["staleness"] == 0 for r in sync.records)


def test_async_overlaps_rollout_with_training():
    res = rlsim.simulate(_load("dense8b_h100_async"))
    rollouts = [sp for sp in res.spans if sp.phase.value == "rollout"]
    trains = [sp for sp in res.spans if sp.phase.value == "train_actor"]
    overlap = sum(max(0.0, min(r.end_s, t.end_s) - max(r.start_s, t.start_s)) for r in rollouts for t in trains)
    assert overlap > 0


def test_pools_never_run_two_phases_at_once():
    for name in ("dense8b_h100_colocated", "dense8b_h100_async"):
        res = rlsim.simulate(_load(name))
        by_track = {}
        for sp in res.spans:
            by_track.setdefault(sp.track, []).append(sp)
        for track, spans in by_track.items():
            spans.sort(key=lambda sp: sp.start_s)
            for a, b in zip(spans, spans[1:]):
                assert b.start_s >= a.end_s - 1e-9, (track, a, b)


def test_utilization_is_a_fraction_and_colocated_is_busy():
    res = rlsim.simulate(_load("dense8b_h100_colocated"))
    util = res.summary()["utilization"]
    assert set(util) == {"gpus"}
    # colocated GPUs are idle only while the CPU scores rewards
    for rec in res.records:
        expected = 1 - rec["timing_s"]["reward"] / rec["step_time_s"]
        assert rec["utilization"]["gpus"] == pytest.approx(expected, rel=1e-9)
    sep = rlsim.simulate(_load("dense8b_h100_async")).summary()["utilization"]
    assert set(sep) == {"rollout_pool", "train_pool"}
    assert all(0 <= u <= 1 for u in sep.values())


def test_summary_metrics_are_consistent():
    res = rlsim.simulate(_load("small_1gpu"))
    s = res.summary()
    assert s["samples_per_s"] == pytest.approx(s["responses_per_step"] / s["step_time_s"])
    df = res.steps
    assert s["generation_tokens_per_s"] == pytest.approx(df["response_tokens"].sum() / df["timing_s/rollout"].sum())
    assert list(df["step"]) == list(range(1, 7))
    assert list(df["cumulative_samples"]) == [256 * i for i in range(1, 7)]
    assert (df["wall_s"].diff().dropna() > 0).all()


def test_ppo_adds_critic_phases():
    s = _load("small_1gpu", **{"algorithm.name": "ppo"})
    t = rlsim.simulate(s).records[0]["timing_s"]
    assert t["values"] > 0 and t["train_critic"] > 0
    # the critic is priced as the policy's architecture (the same passes), scaled by its own fitted factors
    assert t["values"] == pytest.approx(t["old_logprob"]) and t["train_critic"] == pytest.approx(t["train_actor"])
    scaled = with_overrides(s, {"costs.critic_forward_time_scale": 0.5, "costs.critic_train_time_scale": 0.8})
    u = rlsim.simulate(scaled).records[0]["timing_s"]
    assert u["values"] == pytest.approx(0.5 * t["values"])
    assert u["train_critic"] == pytest.approx(0.8 * t["train_critic"])
    assert u["train_actor"] == pytest.approx(t["train_actor"])


def test_more_epochs_and_minibatches_cost_more_training():
    base = rlsim.simulate(_load("small_1gpu")).summary()["phase_time_s"]["train_actor"]
    more = rlsim.simulate(_load("small_1gpu", **{"algorithm.epochs_per_step": 2, "algorithm.mini_batches_per_step": 4}))
    assert more.summary()["phase_time_s"]["train_actor"] > 1.9 * base


def test_response_length_drift_lengthens_rollouts():
    s = _load("small_1gpu", **{"run.steps": 10})
    drift = with_overrides(s, {"workload.response_length_drift": {"final_mean_tokens": 1000, "over_samples": 2560}})
    a, b = rlsim.simulate(s).steps, rlsim.simulate(drift).steps
    # mean of uniform 64..1024 is 544; drifting to 1000 over 10 steps of 256 samples (clipped at 1024)
    assert b["response_tokens"].iloc[-1] > 1.4 * a["response_tokens"].iloc[-1]
    assert b["response_tokens"].iloc[0] == pytest.approx(a["response_tokens"].iloc[0], rel=0.1)


def test_lr_follows_rule():
    for rule, factor in (("sqrt", math.sqrt(2)), ("linear", 2.0), ("none", 1.0)):
        s = _load("small_1gpu", **{"learning.lr_rule": rule, "workload.prompts_per_step": 64})
        assert rlsim.simulate(s).records[0]["lr"] == pytest.approx(1e-6 * factor)


def test_same_seed_same_records_different_seed_different():
    a = rlsim.simulate(_load("paper_grpo")).steps
    b = rlsim.simulate(_load("paper_grpo")).steps
    c = rlsim.simulate(_load("paper_grpo", **{"run.seed": 1})).steps
    assert a.equals(b)
    assert not np.allclose(a["timing_s/rollout"], c["timing_s/rollout"])


@pytest.mark.parametrize(
    "name, over",
    [
        ("paper_grpo", {}),  # async, streaming: a window of two batches
        ("paper_grpo", {"schedule.max_staleness": 2, "run.steps": 7}),  # a window of three
        ("dense8b_h100_colocated", {}),  # synchronous: one batch per rollout
        ("dense8b_h100_async", {"engine.static_batching": True}),
    ],
)
def test_rollouts_simulated_several_steps_at_a_time_give_the_records_of_one_step_at_a_time(monkeypatch, name, over):
    """rlsim.run.pipeline simulates up to CHUNK_REQUESTS requests of consecutive steps in one compiled call: whatever
    the chunk (one step, a few that do not divide the run, all of them) the records and spans are the same bits."""
    from rlsim.run import pipeline

    scenario = _load(name, **over)
    window = scenario.workload.responses_per_step * (scenario.schedule.staleness + 1)
    runs = []
    for chunk in (1, 3 * window, 1 << 40):
        monkeypatch.setattr(pipeline, "CHUNK_REQUESTS", chunk)
        records, spans = pipeline.run_pipeline(scenario)
        runs.append((repr(records), spans))
    assert runs[0] == runs[1] == runs[2]


def test_the_first_failing_chunk_is_reported_though_the_next_is_launched_before_it_finishes(monkeypatch):
    """Two chunks are under way at once: the next is launched before this one's result is asked, so an error its
    launch raises (a request that can never fit, say) waits until the steps before it are through; the run
    reports the earlier chunk's error."""
    from rlsim.errors import RlsimError
    from rlsim.run import pipeline

    launches = []

    class Failing:
        def result(self):
            raise RlsimError("the first chunk's error")

    def launch(requests, *args):
        launches.append(len(requests))
        if len(launches) == 1:
            return Failing()
        raise RlsimError("the second chunk's error")

    monkeypatch.setattr(pipeline, "launch_rollouts", launch)
    with pytest.raises(RlsimError, match="the first chunk's error"):
        pipeline.run_pipeline(_load("paper_grpo"))
    assert len(launches) == 2  # the second chunk was launched before the first's result was asked


@pytest.mark.parametrize("k, steps, windows", [(1, 5, [(1, 2), (3, 4), (5, 6)]), (2, 7, [(1, 3), (4, 6), (7, 9)])])
def test_a_streaming_run_simulates_each_window_of_k_plus_1_batches_once(monkeypatch, k, steps, windows):
    """Streaming, steps 1 .. k + 1 are one window, k + 2 .. 2k + 2 the next: the kernel is handed each window once,
    its batches oldest first, the last one with batches past run.steps (drawn, not trained on). Every step's
    rollout is its window's makespan over k + 1 (plus the step's own host overhead), so the steps of one window
    take the same time."""
    from rlsim.run import batches, pipeline

    handed, shares = [], []
    launch, per_batch = pipeline.launch_rollouts, pipeline.per_batch
    monkeypatch.setattr(pipeline, "launch_rollouts", lambda c, *a: handed.extend(c) or launch(c, *a))
    monkeypatch.setattr(pipeline, "per_batch", lambda r, b, *a: shares.append((r.rollout_s, b)) or per_batch(r, b, *a))
    over = {"schedule.max_staleness": k, "run.steps": steps, "workload.prompts_per_step": 16}
    scenario = _load("paper_grpo", **over)
    records, _ = pipeline.run_pipeline(scenario)
    drawn = batches.step_requests(scenario, np.random.default_rng(scenario.run.seed))
    drawn_steps = [next(drawn)[:2] for _ in range(windows[-1][1])]  # each step's own (trained) lengths, in order
    assert [r["prompt_tokens"] for r in records] == [int(p.sum()) for p, _ in drawn_steps[:steps]]
    assert len(handed) == len(windows)
    for (prompt, response), (first, last) in zip(handed, windows):
        assert np.array_equal(prompt, np.concatenate([drawn_steps[n - 1][0] for n in range(first, last + 1)]))
        assert np.array_equal(response, np.concatenate([drawn_steps[n - 1][1] for n in range(first, last + 1)]))
    made = [s for s, _ in shares]
    assert all(b == k + 1 for _, b in shares) and len(made) == steps
    # the steps of a window share its makespan
    assert made == [made[(n - 1) // (k + 1) * (k + 1)] for n in range(1, steps + 1)] and len(set(made)) == len(windows)


def test_a_streaming_steps_recompute_share_is_its_windows(monkeypatch):
    """A step's share of its window divides the recomputes' seconds and the replicas' makespans alike, so its
    recompute_share (the thrash line's "share of engine time") is the window's, not k + 1 times smaller."""
    from rlsim.run import pipeline

    windows = []
    merge = pipeline.merge_rounds  # what the pipeline makes of each kernel call's results: the window's
    monkeypatch.setattr(pipeline, "merge_rounds", lambda results: windows.append(merge(results)) or windows[-1])
    scenario = _load("paper_grpo", **{"workload.prompts_per_step": 2048, "run.steps": 2})
    records, _ = pipeline.run_pipeline(scenario)
    assert len(windows) == 1 and windows[0].recompute_share > 0
    for rec in records:
        assert rec["recompute_share"] == pytest.approx(windows[0].recompute_share, rel=1e-12)
