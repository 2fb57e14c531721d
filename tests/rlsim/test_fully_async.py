"""Oracles of the fully-async schedule (rlsim.run.fully_async; verl@v0.7.0 recipe/fully_async_policy): a window of
updates with require_batches mini-batches each and a sync trigger, a fractional staleness gate, and a partial
rollout carried across a weight update, on a small trace whose phases have fixed lengths; every expected time is
worked out by hand below."""

import dataclasses

import pytest

import rlsim
from rlsim.engine.iteration import PrefillCoefficients
from rlsim.errors import ScenarioError
from rlsim.run import fully_async, pipeline
from rlsim.run.costs import RooflineCostModel
from tests.conftest import SCENARIOS

ROLLOUT_S = 30.0  # every batch's engine time
TRAIN_PER_MINI_BATCH_S = 10.0  # one optimizer step
SYNC_S = 3.0
RESUME_PREFILL_S = 1.0  # the fake prefill: 1 s an admission round, nothing per token


class _FixedCosts(RooflineCostModel):
    """Phases of known length: a training pass is 10 s per optimizer step, the weight sync 3 s, scoring free."""

    def train_s(self, model, tokens, sq_tokens, optimizer_steps, epochs=1, num_sequences=0):
        return TRAIN_PER_MINI_BATCH_S * optimizer_steps * epochs

    def forward_s(self, model, tokens, sq_tokens, num_sequences=0):
        return 0.0

    def weight_sync_s(self):
        return SYNC_S

    def reward_s(self, num_samples, tokens=0.0, sq_tokens=0.0):
        return 0.0

    def prefill_coefficients(self):
        return PrefillCoefficients(overhead_s=RESUME_PREFILL_S, per_token_s=0.0, per_token_sq_s=0.0)


def _run(monkeypatch, **over):
    """dense8b_h100_async as verl's fully-async: 64 prompts an update in require_batches = 2 mini-batches (2
    optimizer steps: 20 s of training), 4 rollout replicas (TP 1 on 4 GPUs: 16 x 4 = 64 prompts in flight, one
    batch), no reference or old log-prob pass; every batch's rollout 30 s."""
    real = pipeline._generations

    def fixed(st):
        for prompts, responses, res, scored in real(st):
            yield prompts, responses, dataclasses.replace(res, rollout_s=ROLLOUT_S), scored

    monkeypatch.setattr(pipeline, "_generations", fixed)
    s = rlsim.load_scenario(
        SCENARIOS / "dense8b_h100_async.yaml",
        {
            "run.steps": 6,
            "schedule.mode": "fully-async",
            "schedule.max_staleness": 0,
            "algorithm.mini_batches_per_step": 2,
            "algorithm.kl_reference": False,
            "algorithm.recompute_old_logprob": False,
            **over,
        },
    )
    assert s.workload.prompts_per_step == 64 and s.num_replicas == 4 and fully_async.wave_prompts(s) == 64
    records, _ = pipeline.run_pipeline(s, cost=_FixedCosts(s))
    return records


def test_a_sync_window_of_two_updates_waits_for_the_batch_in_flight(monkeypatch):
    """sync_every 2, staleness_threshold 0.5: the gate is int(64 x 1.5 x 2) = 192 prompts, 3 batches past the
    weights the rollout pool holds. Rollouts: B1 0-30, B2 30-60, B3 60-90 on weights 0; B4 needs weights 2
    (2 x 64 + 192 - 3 x 64 = 64 prompts of it).
    Trainer: step 1 30-50 (no sync: 1 is not a multiple of 2). Step 2 takes B2 at 60, trains 60-80, then syncs: the
    sync waits for the prompts in flight (B3, to 90), 90-93; weights 2. Rollouts B4 93-123, B5 123-153 (B6 needs
    weights 4). Step 3: B3 (ready 90) 93-113. Step 4: B4 at 123, 123-143, sync waits for B5 (to 153), 153-156.
    Rollouts B6 156-186 (a six-step run generates no B7). Step 5: B5 156-176. Step 6: B6 at 186, 186-206, sync
    206-209 (nothing in flight); a seven-step run's B7 (186-216) would hold it to 216-219."""
    recs = _run(monkeypatch, **{"schedule.sync_every": 2, "schedule.staleness_threshold": 0.5})
    assert [r["wall_s"] for r in recs] == pytest.approx([50, 93, 113, 156, 176, 209])
    assert [r["step_time_s"] for r in recs] == pytest.approx([50, 43, 20, 43, 20, 33])
    longer = _run(monkeypatch, **{"schedule.sync_every": 2, "schedule.staleness_threshold": 0.5, "run.steps": 7})
    assert longer[5]["wall_s"] == pytest.approx(219)
    # step n - 1 - the weights its batch started on: B1-B3 on 0, B4-B5 on 2, B6 on 4
    assert [r["staleness"] for r in recs] == [0, 1, 2, 1, 2, 1]
    assert [r["timing_s"]["train_actor"] for r in recs] == pytest.approx([20.0] * 6)  # two mini-batches of 10 s
    assert [r["timing_s"]["weight_sync"] for r in recs] == pytest.approx([0, SYNC_S] * 3)


def test_a_fractional_staleness_lets_half_a_batch_run_ahead(monkeypatch):
    """staleness_threshold 0.25 of sync_every 2: the gate is int(64 x 1.25 x 2) = 160 prompts, 2.5 batches. B1 0-30,
    B2 30-60, the first 32 prompts of B3 60-75 (half of 30 s), then the pool waits for weights 2.
    Step 1 30-50; step 2 60-80, sync 80-83 (the pool is idle: nothing in flight). B3's rest 83-98, B4 98-128, B5's
    first half 128-143 (2 x 64 + 160 - 4 x 64 = 32 prompts). Step 3: B3 98-118. Step 4: B4 128-148, sync 148-151.
    B5's rest 151-166, B6 166-196. Step 5: B5 166-186. Step 6: B6 196-216, sync 216-219."""
    recs = _run(monkeypatch, **{"schedule.sync_every": 2, "schedule.staleness_threshold": 0.25})
    assert [r["wall_s"] for r in recs] == pytest.approx([50, 83, 118, 151, 186, 219])
    assert [r["staleness"] for r in recs] == [0, 1, 2, 1, 2, 1]  # B3 started on weights 0, B5 on 2
    assert [r["timing_s"]["rollout"] for r in recs] == pytest.approx([ROLLOUT_S] * 6)  # halves add up to 30 s


def test_a_partial_rollout_is_carried_across_the_weight_update(monkeypatch):
    """As the first test with partial_rollout: the sync does not wait for B3; the engines stall for it (80-83) and
    prefill the interrupted responses again (1 s), so B3, started on weights 0, ends at 90 + 3 + 1 = 94 and its
    rollout took 34 s. Step 2 ends 83. B4 94-124, B5 124-154 + 4 = 158 (the sync at 144-147 lands in it).
    Step 3: B3 94-114. Step 4: B4 124-144, sync 144-147. Step 5: B5 158-178. B6 158-188, B7 188-218 + 4.
    Step 6: B6 188-208, sync 208-211."""
    recs = _run(
        monkeypatch,
        **{"schedule.sync_every": 2, "schedule.staleness_threshold": 0.5, "schedule.partial_rollout": True},
    )
    assert [r["wall_s"] for r in recs] == pytest.approx([50, 83, 114, 147, 178, 211])
    assert [r["staleness"] for r in recs] == [0, 1, 2, 1, 2, 1]  # B3 keeps the oldest weights it saw
    stall = SYNC_S + RESUME_PREFILL_S
    assert [r["timing_s"]["rollout"] for r in recs] == pytest.approx([30, 30, 30 + stall, 30, 30 + stall, 30])


def test_one_update_a_sync_and_no_staleness_is_sync_separate():
    """sync_every 1, staleness_threshold 0, no partial rollout: each batch waits for the last step's weights, as
    sync-separate runs it; the same records with the roofline costs."""
    over = {"run.steps": 4, "schedule.max_staleness": 0}
    sep = rlsim.simulate(
        rlsim.load_scenario(SCENARIOS / "dense8b_h100_async.yaml", {**over, "schedule.mode": "sync-separate"})
    )
    fa = rlsim.simulate(
        rlsim.load_scenario(SCENARIOS / "dense8b_h100_async.yaml", {**over, "schedule.mode": "fully-async"})
    )
    assert [r["wall_s"] for r in fa.records] == pytest.approx([r["wall_s"] for r in sep.records], rel=1e-12)
    assert all(r["staleness"] == 0 for r in fa.records)


def test_the_gate_and_the_lag_follow_verls_arithmetic():
    """verl's max_required_samples = int(32 x (0.1 + 1) x 4) = int(140.8) = 140 prompts (its dapo_7b_math_fsdp2
    scripts: mini-batch 32, staleness 0.1, trigger 4); the lag: 4.4 batches ahead, a started one counting whole,
    less one = 4 steps."""
    sched = dataclasses.replace(
        rlsim.load_scenario(SCENARIOS / "dense8b_h100_async.yaml").schedule,
        mode="fully-async",
        max_staleness=0,
        staleness_threshold=0.1,
        sync_every=4,
    )
    assert fully_async.gate_prompts(sched, 32) == 140
    assert sched.staleness == 4
    # prompts of batch 5 admitted on weights 0: 0 + 140 - 4 x 32 = 12; on weights 4 the whole batch
    assert fully_async.admitted(0, 5, 32, 140) == 12
    assert fully_async.admitted(4, 5, 32, 140) == 32
    assert fully_async.admitted(0, 6, 32, 140) == 0


@pytest.mark.parametrize(
    "key, value",
    [("schedule.sync_every", 2), ("schedule.staleness_threshold", 0.5), ("schedule.partial_rollout", True)],
)
def test_fully_async_fields_are_refused_under_other_modes(key, value):
    with pytest.raises(ScenarioError, match=key.replace(".", r"\.")):
        rlsim.load_scenario(SCENARIOS / "dense8b_h100_async.yaml", {key: value})
