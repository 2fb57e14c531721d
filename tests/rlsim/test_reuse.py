"""What pipeline runs share (rlsim.run.reuse.Reuse: a plan screen's runs in one worker): sampled lengths by the
generator's state and rollouts by their inputs (rlsim.engine.rollout.RolloutMemo), and the screen's tasks of groups
that roll out alike. Each gives the bits of the runs alone; a memo answers only a call whose inputs are equal."""

import dataclasses
import json

import numpy as np
import pytest

import rlsim
from rlsim.engine import rollout
from rlsim.engine.rollout import RolloutMemo, launch_rollouts
from rlsim.plan import evaluate
from rlsim.plan.evaluate import evaluate_group, evaluate_groups
from rlsim.plan.search import _rollout_key
from rlsim.run.costs import RooflineCostModel
from rlsim.run.pipeline import run_pipeline
from rlsim.run.reuse import Reuse
from rlsim.run.tasks import ConfigTask, GroupsTask
from rlsim.scenario import scheduler_rules
from rlsim.workload.lengths import sample_step
from tests.conftest import SCENARIOS

PAPER = SCENARIOS / "paper_grpo.yaml"


@pytest.fixture(scope="module")
def paper():
    return rlsim.load_scenario(PAPER, {"workload.prompts_per_step": 64})


def engine_args(s):
    cost = RooflineCostModel.from_scenario(s)
    return dict(
        group_size=s.workload.group_size,
        replicas=s.num_replicas,
        max_num_seqs=s.engine.max_num_seqs,
        kv_capacity_tokens=s.kv_capacity_tokens,
        decode=cost.decode_coefficients(),
        prefill=cost.prefill_coefficients(),
        overhead_s=[0.5],
        rules=scheduler_rules(s),
    )


def draw(s, seed):
    return sample_step(s.workload, np.random.default_rng(seed), 0.0)


@pytest.fixture
def kernel_calls(monkeypatch):
    calls = []
    real = rollout.launch_replicas
    monkeypatch.setattr(rollout, "launch_replicas", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def test_an_equal_call_is_answered_without_the_kernel(paper, kernel_calls):
    memo, args = RolloutMemo(), engine_args(paper)
    first = launch_rollouts([draw(paper, 1)], **args, memo=memo).result()
    again = launch_rollouts([tuple(a.copy() for a in draw(paper, 1))], **args, memo=memo).result()
    assert again == first and len(kernel_calls) == 1 and (memo.calls, memo.hits) == (2, 1)
    alone = launch_rollouts([draw(paper, 1)], **args).result()
    assert alone == first


def test_a_call_that_differs_in_its_overheads_only_gets_its_own_added(paper, kernel_calls):
    """A synchronous step pays a dispatch overhead and a streaming window none: the kernel's work is the same."""
    memo, args = RolloutMemo(), engine_args(paper)
    launch_rollouts([draw(paper, 1)], **args, memo=memo).result()
    args["overhead_s"] = [0.0]
    answered = launch_rollouts([draw(paper, 1)], **args, memo=memo).result()
    assert memo.hits == 1 and len(kernel_calls) == 1
    assert answered == launch_rollouts([draw(paper, 1)], **args).result()


@pytest.mark.parametrize("change", ["lengths", "capacity", "rules"])
def test_a_call_that_differs_in_anything_else_is_simulated(paper, kernel_calls, change):
    memo, args = RolloutMemo(), engine_args(paper)
    launch_rollouts([draw(paper, 1)], **args, memo=memo).result()
    prompts, responses = (a.copy() for a in draw(paper, 1))
    if change == "lengths":
        responses[7] += 1
    elif change == "capacity":
        args["kv_capacity_tokens"] -= 16
    else:
        args["rules"] = dataclasses.replace(args["rules"], fast_thrash=not args["rules"].fast_thrash)
    other = launch_rollouts([(prompts, responses)], **args, memo=memo).result()
    assert memo.hits == 0 and len(kernel_calls) == 2
    assert other == launch_rollouts([(prompts, responses)], **args).result()


def test_a_fingerprint_collision_is_not_a_hit(paper, kernel_calls, monkeypatch):
    monkeypatch.setattr(rollout, "_fingerprint", lambda a: 0)  # every array looks alike to the lookup
    memo, args = RolloutMemo(), engine_args(paper)
    first = launch_rollouts([draw(paper, 1)], **args, memo=memo).result()
    other = launch_rollouts([draw(paper, 2)], **args, memo=memo).result()
    assert memo.hits == 0 and len(kernel_calls) == 2 and other != first
    assert other == launch_rollouts([draw(paper, 2)], **args).result()


def test_the_memo_keeps_at_most_its_bytes_and_drops_the_least_recently_used(paper, kernel_calls):
    one_call = 2 * paper.workload.responses_per_step * 8  # prompt and response lengths, int64
    memo, args = RolloutMemo(max_bytes=2 * one_call), engine_args(paper)
    for seed in (1, 2, 1, 3, 2, 1):  # 1 is used again before 3 comes, so 2 goes first
        launch_rollouts([draw(paper, seed)], **args, memo=memo).result()
    assert memo.hits == 1 and len(kernel_calls) == 5 and memo._bytes <= memo.max_bytes


def test_a_kept_draw_gives_the_lengths_and_generator_state_of_a_draw(paper):
    reuse, w = Reuse(), paper.workload
    fresh = np.random.default_rng(5)
    expect = sample_step(w, fresh, 0.0)
    for _ in range(2):  # drawn, then found
        rng = np.random.default_rng(5)
        got = reuse.sample_step(w, rng, 0.0)
        assert all(np.array_equal(a, b) for a, b in zip(got, expect))
        assert rng.bit_generator.state == fresh.bit_generator.state
        assert not got[1].flags.writeable  # shared between runs: a write would raise
    assert reuse.sample_step(w, np.random.default_rng(5), 4096.0) is not None  # another progress: another draw
    assert len(reuse._draws) == 2


def records(scn, reuse=None):
    recs, _ = run_pipeline(scn, RooflineCostModel(scn), None, reuse)
    return json.dumps(recs, sort_keys=True, default=str)


def test_runs_sharing_a_reuse_give_the_records_of_each_alone(paper):
    """A sync and an async schedule (their first batch alike) and colocated / separate pools with as many rollout
    GPUs (every rollout alike): one Reuse for all gives each run's records byte for byte, and answers rollouts."""
    variants = [
        {"schedule.mode": "sync-separate", "schedule.max_staleness": 0},
        {"schedule.mode": "async", "schedule.max_staleness": 1},
        {"hardware.num_gpus": 48, "hardware.placement": "colocated", "hardware.rollout_gpus": None,
         "hardware.train_gpus": None, "schedule.mode": "sync-colocated", "schedule.max_staleness": 0},
        {"hardware.num_gpus": 96, "hardware.rollout_gpus": 48, "hardware.train_gpus": 48,
         "schedule.mode": "sync-separate", "schedule.max_staleness": 0},
    ]  # fmt: skip
    reuse = Reuse()
    for v in variants:
        scn = rlsim.load_scenario(PAPER, {"workload.prompts_per_step": 64, "run.steps": 4, **v})
        assert records(scn, reuse) == records(scn)
    assert reuse.rollouts.hits >= 5


def test_the_rollout_key_puts_together_what_rolls_out_alike():
    base = {"workload.prompts_per_step": 1024, "hardware.gpu": "H100-SXM", "engine.tensor_parallel_size": 2}
    colocated = {**base, "hardware.num_gpus": 16, "hardware.placement": "colocated", "schedule.mode": "sync-colocated"}
    separate = {**base, "hardware.num_gpus": 32, "hardware.placement": "separate", "hardware.rollout_gpus": 16,
                "hardware.train_gpus": 16, "schedule.mode": "async", "schedule.max_staleness": 1}  # fmt: skip
    assert _rollout_key(colocated) == _rollout_key(separate)
    assert _rollout_key(colocated) != _rollout_key({**colocated, "workload.prompts_per_step": 2048})
    assert _rollout_key(separate) != _rollout_key({**separate, "hardware.rollout_gpus": 24})
    assert _rollout_key(separate) != _rollout_key({**separate, "engine.max_num_seqs": 256})


def test_a_task_of_groups_screens_each_as_alone():
    base = rlsim.load_scenario(PAPER).to_dict()
    groups = [
        [(0, {"workload.prompts_per_step": 128, "schedule.mode": "sync-separate", "schedule.max_staleness": 0})],
        [(1, {"workload.prompts_per_step": 128, "schedule.mode": "async", "schedule.max_staleness": 1}),
         (2, {"workload.prompts_per_step": 128, "schedule.mode": "async", "schedule.max_staleness": 1,
              "learning.lr_rule": "none"})],
    ]  # fmt: skip
    together = evaluate_groups(GroupsTask([ConfigTask(base, g) for g in groups], "plan a"))
    kept = evaluate._REUSE["plan a"]
    again = evaluate_groups(
        GroupsTask([ConfigTask(base, g) for g in groups[::-1]], "plan a")
    )  # a later task of the plan finds its rollouts
    alone = [row for g in groups for row in evaluate_group(ConfigTask(base, g))]
    as_text = lambda rows: json.dumps(sorted(rows, key=lambda r: r[0]), sort_keys=True, default=str)  # noqa: E731
    assert as_text(together) == as_text(alone) == as_text(again)
    assert [i for i, _ in together] == [0, 1, 2] and all(r["status"] == "ok" for _, r in together)
    assert kept.rollouts.hits >= 1 and evaluate._REUSE["plan a"] is kept
    calls = kept.rollouts.calls
    evaluate_groups(GroupsTask([ConfigTask(base, groups[0])], "plan b"))  # another plan: a Reuse of its own
    assert list(evaluate._REUSE) == ["plan b"] and kept.rollouts.calls == calls
    evaluate.forget_reuse()
    assert not evaluate._REUSE
