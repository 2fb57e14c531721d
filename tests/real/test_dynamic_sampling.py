"""DAPO's dynamic sampling in real runs (``rlsim-real train --dynamic-sampling ROUNDS``, real/train.py): rounds of P
prompts until P groups whose rewards differ are kept, trained on those P, and the log says what was generated
(issue 33: filtering as an effect on the effective batch, measured)."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from real import train as train_module  # noqa: E402
from real.errors import RealError  # noqa: E402
from real.train import TrainConfig, train  # noqa: E402
from rlsim.io.runlog import read_jsonl  # noqa: E402


def _config(**kw) -> TrainConfig:
    base = dict(task="last", prompts_per_step=4, group_size=4, max_steps=3, eval_every=3, eval_size=8, lr0=3e-3)
    return TrainConfig(**{**base, "max_new_tokens": 2, **kw})


def test_a_step_trains_on_the_groups_with_a_signal_and_logs_what_it_generated(tmp_path, monkeypatch):
    """The trained batch is P groups: those with unequal rewards first, in generation order, then (when the rounds
    run out) equal-reward groups of the last round, as many as ``groups_short`` says; every round generated is
    counted in ``generated_responses`` and ``cumulative_generated``, the trained ones in ``cumulative_samples``."""
    trained = []
    batch_of = train_module._batch_of

    def spy(rounds, cfg):
        out = batch_of(rounds, cfg)
        trained.append((len(rounds), out[4].view(-1, cfg.group_size), out[5]))
        return out

    monkeypatch.setattr(train_module, "_batch_of", spy)
    cfg = _config(dynamic_sampling=4)
    train(cfg, tmp_path / "run", threads="1")
    log = list(read_jsonl(tmp_path / "run" / "runlog.jsonl"))
    total = 0
    for rec, (rounds, rewards, short) in zip(log, trained):
        signal = int((rewards.max(dim=1).values > rewards.min(dim=1).values).sum())
        assert rewards.shape[0] == cfg.prompts_per_step and signal == cfg.prompts_per_step - short
        assert rec["generation_rounds"] == rounds and rec["groups_short"] == short
        assert rec["generated_responses"] == rounds * cfg.batch and rec["responses"] == cfg.batch
        assert short == 0 or rounds == cfg.dynamic_sampling  # short only once every round is spent
        total += rec["generated_responses"]
        assert rec["cumulative_generated"] == total
    assert [r["cumulative_samples"] for r in log] == [cfg.batch * s for s in (1, 2, 3)]


def test_without_dynamic_sampling_a_run_logs_as_before(tmp_path):
    train(_config(), tmp_path / "run", threads="1")
    log = list(read_jsonl(tmp_path / "run" / "runlog.jsonl"))
    assert all("generated_responses" not in r and "generation_rounds" not in r for r in log)


def test_a_resumed_dynamic_sampling_run_counts_its_generated_responses_on(tmp_path):
    """Extended from 2 to 3 steps: the count of generated responses carries on from the log's kept steps, and the
    log equals one run of 3 steps."""
    train(_config(dynamic_sampling=3, max_steps=2, checkpoint_every=1), tmp_path / "run", threads="1")
    train(_config(dynamic_sampling=3, max_steps=3, checkpoint_every=1), tmp_path / "run", threads="1")
    train(_config(dynamic_sampling=3, max_steps=3, checkpoint_every=1), tmp_path / "ref", threads="1")
    keys = ("cumulative_generated", "generated_responses", "generation_rounds", "groups_short", "reward_mean")
    run = [[r[k] for k in keys] for r in read_jsonl(tmp_path / "run" / "runlog.jsonl")]
    ref = [[r[k] for k in keys] for r in read_jsonl(tmp_path / "ref" / "runlog.jsonl")]
    assert run == ref and len(run) == 3


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"dynamic_sampling": -1}, r"--dynamic-sampling \(-1\) must be 0"),
        ({"dynamic_sampling": 2, "algo": "ppo"}, "use it with --algo grpo"),
    ],
)
def test_bad_dynamic_sampling_settings_are_refused(kw, match):
    with pytest.raises(RealError, match=match):
        _config(**kw).validate()
