"""Oracles for the run overheads (rlsim.run.overheads): evaluation, checkpoint saves and start-up over a run, counted
and priced by hand, reported beside time-to-target and not in it; and the frameworks' keys that set them.

The toy of tests/rlsim/test_training.py (1e9 parameters, W = 2e9 bf16 bytes, 8 GPUs of one NVLink domain at 1e11
B/s, HBM 1e12 B/s, fixed 512-token prompts and responses, 16 prompts x 8 per step), 20 steps, storage at 2e9 B/s.
"""

from __future__ import annotations

import pytest

from rlsim.frameworks import run_keys
from rlsim.frameworks.adapter import Source
from rlsim.frameworks.nemo_rl.mapping import TABLE as NEMO_TABLE
from rlsim.frameworks.openrlhf.mapping import TABLE as OPENRLHF_TABLE
from rlsim.frameworks.trl.mapping import TABLE as TRL_TABLE
from rlsim.frameworks.verl.mapping import TABLE as VERL_TABLE
from rlsim.run.overheads import occurrences, run_overheads
from rlsim.run.simulation import simulate
from tests.rlsim.test_training import N, W, _raw

STORAGE = 2e9
OVERHEADS = {
    "run.steps": 20,
    "run.eval_every_steps": 6,
    "run.eval_at_start": True,
    "run.eval_at_end": True,
    "run.eval_group_size": 8,  # the eval set is one step's 16 prompts x 8: the same requests as a training step
    "run.checkpoint_every_steps": 8,
    "run.checkpoint_at_end": True,
    "run.engine_start_s": 30.0,
    "run.storage_bytes_per_s": STORAGE,
    "weight_sync.engine_sleeps": False,
}


def test_evaluation_and_checkpoints_over_a_run_are_counted_and_priced_by_hand():
    result = simulate(_raw(OVERHEADS))
    o = result.overheads
    assert o is not None and o.steps == 20
    # evaluations: at steps 6, 12, 18 (20 // 6 = 3), after the last (20 is not a multiple of 6), before the first
    assert o.evaluations == 3 + 1 + 1
    # one evaluation generates the same 128 fixed-length requests on the same engine as a training step's rollout
    rollout_s = result.records[0]["timing_s"]["rollout"]
    assert o.eval_each_s == pytest.approx(rollout_s)
    # checkpoints: at steps 8 and 16, and after the last (20 is not a multiple of 8)
    assert o.checkpoints == 2 + 1
    # FSDP: fp32 parameters + Adam's two fp32 moments, 12 bytes per parameter, at the storage's 2e9 B/s
    assert o.checkpoint_bytes == pytest.approx(12 * N)
    assert o.checkpoint_each_s == pytest.approx(12 * N / STORAGE)  # 6 s
    # start-up: 30 s of engine start, W read from storage (1 s), one sync: W over NVLink (0.02 s) and the engine's
    # copy of its TP-1 shard, read and written once at HBM speed (0.004 s)
    assert o.startup_s == pytest.approx(30 + W / STORAGE + W / 1e11 + 2 * W / 1e12)
    assert o.total_s == pytest.approx(5 * rollout_s + 3 * 6.0 + 31.024)
    # beside the answer, not in it: the run's wall-clock is its steps' own
    summary = result.summary()
    assert summary["run_overheads"]["total_s"] == pytest.approx(o.total_s)
    assert summary["wall_s"] == pytest.approx(sum(r["step_time_s"] for r in result.records))


def test_a_megatron_checkpoint_writes_bf16_weights_and_its_optimizer_state():
    over = {**OVERHEADS, "training.backend": "megatron"}
    o = run_overheads(simulate(_raw(over)).scenario, 20)
    assert o is not None
    # bf16 weights 2 + fp32 master 4 + two fp32 moments 8 = 14 bytes per parameter
    assert o.checkpoint_bytes == pytest.approx(14 * N)
    precise = run_overheads(simulate(_raw({**over, "training.precision_aware_optimizer": True})).scenario, 20)
    assert precise is not None and precise.checkpoint_bytes == pytest.approx(12 * N)  # master as a 2-byte remainder


def test_a_scenario_without_overheads_reports_none():
    result = simulate(_raw({"run.steps": 2}))
    assert result.overheads is None and result.summary()["run_overheads"] is None


@pytest.mark.parametrize(
    ("every", "steps", "start", "end", "expected"),
    [(10, 100, False, True, 10), (10, 95, False, True, 10), (None, 50, True, True, 2), (7, 6, False, False, 0)],
)
def test_occurrences_follow_the_frameworks_rule(every, steps, start, end, expected):
    assert occurrences(every, steps, start, end) == expected


def test_the_frameworks_eval_and_save_keys_set_the_overhead_fields():
    notes: list[str] = []
    verl = Source({"trainer.test_freq": 5, "trainer.save_freq": 20}, VERL_TABLE, "verl")
    assert run_keys.verl(verl, notes) == {
        "eval_every_steps": 5,
        "eval_at_start": True,  # val_before_train, True by default
        "eval_at_end": True,
        "eval_group_size": 1,
        "checkpoint_every_steps": 20,
        "checkpoint_at_end": True,
    }
    assert any("run.eval_prompts" in n for n in notes)  # the validation set's size is assumed, and said
    nemo = Source({"grpo.val_period": 0, "checkpointing.enabled": False}, NEMO_TABLE, "nemo-rl")
    assert run_keys.nemo_rl(nemo, []) == {}
    nemo = Source({"grpo.val_at_start": True}, NEMO_TABLE, "nemo-rl")  # grpo_math_1B.yaml's defaults otherwise
    assert run_keys.nemo_rl(nemo, []) == {
        "eval_every_steps": 10,
        "eval_at_start": True,
        "eval_at_end": False,
        "eval_group_size": 1,
        "eval_prompts": 256,
        "checkpoint_every_steps": 10,
        "checkpoint_at_end": True,
    }
    # OpenRLHF evaluates only with an eval dataset
    assert run_keys.openrlhf(Source({"eval.steps": 10}, OPENRLHF_TABLE, "openrlhf"), []) == {}
    openrlhf = Source({"eval.steps": 10, "eval.dataset": "x", "ckpt.save_steps": 50}, OPENRLHF_TABLE, "openrlhf")
    assert run_keys.openrlhf(openrlhf, []) == {
        "eval_every_steps": 10,
        "eval_at_start": False,
        "eval_at_end": False,
        "eval_group_size": 4,
        "checkpoint_every_steps": 50,
        "checkpoint_at_end": False,
    }


def test_run_prints_the_overheads_beside_the_answer():
    from rlsim.answers.text import run_table

    result = simulate(_raw(OVERHEADS))
    text = run_table(result.summary())
    e = result.overheads.eval_each_s
    assert text.startswith(f"run overheads over 20 steps (not in the time to target): evaluation 5 x {e:.1f} s = ")
    assert "checkpoints 3 x 6.0 s (12 GB each) = 18.0 s; start-up 31 s" in text
    assert "run overheads" not in run_table(simulate(_raw({"run.steps": 2})).summary())


def test_trl_periods_in_optimizer_steps_become_generation_rounds():
    # a round of 4 optimizer steps (steps_per_generation 8 / gradient_accumulation_steps 2, num_iterations 1): the
    # default save every 500 optimizer steps is every 125 rounds; eval every 10 is 2.5 rounds, read as 2 (said)
    notes: list[str] = []
    src = Source({"eval_strategy": "steps", "eval_steps": 10, "eval_on_start": True}, TRL_TABLE, "trl")
    assert run_keys.trl(src, 4, 8, notes) == {
        "eval_every_steps": 2,
        "eval_at_start": True,
        "eval_at_end": False,
        "eval_group_size": 8,
        "checkpoint_every_steps": 125,
        "checkpoint_at_end": False,
    }
    assert any("eval_steps 10 optimizer steps read as every 2 rounds" in n for n in notes)
    assert run_keys.trl(Source({"save_strategy": "no"}, TRL_TABLE, "trl"), 4, 8, []) == {}
