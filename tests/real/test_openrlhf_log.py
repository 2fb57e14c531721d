"""real.openrlhf_log: a real run's record as the line OpenRLHF v0.11.0's wandb logger writes (the project's own run in
OpenRLHF's format, not an OpenRLHF run). Expected values are the record's numbers summed by hand per OpenRLHF timer."""

from __future__ import annotations

import json

import pytest

from real.openrlhf_log import openrlhf_row, write_openrlhf_log
from rlsim.frameworks.logs.read import import_log

PPO_RECORD = {
    "step": 3,
    "responses": 8,
    "response_tokens": 40,
    "reward_mean": 0.25,
    "lr": 1e-3,
    "value_loss": 0.5,
    "timing_s": {
        "rollout": 1.0,
        "reward": 0.25,
        "old_logprob": 0.5,
        "ref_logprob": 0.25,
        "values": 0.75,
        "train_actor": 2.0,
        "train_critic": 1.5,
        "weight_sync": 0.125,
        "eval": 9.0,  # not a step timer in OpenRLHF
    },
}


def test_a_ppo_record_in_openrlhf_terms():
    row = openrlhf_row(PPO_RECORD)
    assert row["train/timing/generation"] == pytest.approx(1.0 + 0.25)  # the reward function answers with the sample
    assert row["train/timing/make_experience"] == pytest.approx(0.5 + 0.25 + 0.75)  # actor, reference, critic forwards
    assert row["train/timing/ppo_train"] == pytest.approx(2.0 + 1.5)
    assert row["train/timing/broadcast"] == pytest.approx(0.125)
    assert row["train/timing/step_total"] == pytest.approx(1.25 + 1.5 + 3.5 + 0.125)  # 6.375, eval left out
    assert row["train/rollout/response_length_mean"] == pytest.approx(40 / 8)
    assert row["train/rollout/num_samples"] == 8.0
    assert row["train/critic_loss"] == 0.5 and row["train/actor_lr"] == 1e-3
    assert row["train/global_step"] == 3


def test_the_written_log_reads_back_through_rlsims_openrlhf_importer(tmp_path):
    runlog = tmp_path / "runlog.jsonl"
    runlog.write_text(json.dumps(PPO_RECORD) + "\n")
    out = tmp_path / "openrlhf.jsonl"
    assert write_openrlhf_log(runlog, out) == 1
    rec = import_log(out, "openrlhf", group_size=2).records[0]
    assert rec["step"] == 3 and rec["responses"] == 8
    assert rec["step_time_s"] == pytest.approx(6.375)
    assert rec["timing_s"]["rollout"] == pytest.approx(1.25)
    # make_experience in equal shares over the three forwards a critic run has (rlsim.frameworks.logs.openrlhf)
    assert rec["timing_s"]["values"] == pytest.approx(1.5 / 3)
    assert rec["timing_s"]["weight_sync"] == pytest.approx(0.125)


def test_rlsim_real_train_writes_the_openrlhf_log_beside_its_run_log(tmp_path, capsys):
    from real.cli import main

    out = tmp_path / "openrlhf.jsonl"
    args = ["train", "--task", "parity", "--algo", "grpo", "--engine", "hf", "--prompts-per-step", "4"]
    args += ["--group-size", "2", "--max-steps", "2", "--threads", "1", "-o", str(tmp_path / "run")]
    assert main([*args, "--openrlhf-log", str(out)]) == 0
    runlog = [json.loads(x) for x in (tmp_path / "run" / "runlog.jsonl").read_text().splitlines()]
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["train/global_step"] for r in rows] == [1, 2]
    for rec, row in zip(runlog, rows):
        t = rec["timing_s"]
        assert row["train/timing/generation"] == pytest.approx(t["rollout"] + t["reward"])
        assert row["train/rollout/num_samples"] == 8.0  # 4 prompts x 2
