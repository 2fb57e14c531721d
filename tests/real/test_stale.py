"""Stale-policy runs (``rlsim-real train --staleness K``, real/stale.py): the engine generates with the weights
``K`` versions behind the trainer, the log says the lag, and a killed run resumes lagging the same (issue 33,
must-show 4's runs)."""

import json
import os
import signal
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from real.engines.hf import HFEngine  # noqa: E402
from real.errors import RealError  # noqa: E402
from real.stale import StalePolicy  # noqa: E402
from real.train import STOP_AFTER_STEP_ENV, TrainConfig, train  # noqa: E402
from rlsim.io.runlog import read_jsonl  # noqa: E402

CLI = [sys.executable, "-m", "real.cli"]


def _fingerprint(model) -> float:
    return float(sum(p.detach().double().sum() for p in model.parameters()))


@pytest.mark.parametrize("loss", ["naive_ppo", "decoupled_ppo"])
def test_the_engine_generates_with_the_weights_k_versions_back(tmp_path, monkeypatch, loss):
    """Versions pushed: v0 (initial), v1 .. v6 (after each update). With K = 2 the engine holds v0 at steps 1-3
    (its lag 0, 1, 2) and v(s - 3) from then on, and every step's log line records that lag."""
    pushed, loaded = [], []
    push = StalePolicy.push

    def spy_push(self, policy):
        pushed.append(_fingerprint(policy))
        push(self, policy)

    load = HFEngine.load_weights

    def spy_load(self, model):
        loaded.append(_fingerprint(model))
        load(self, model)

    monkeypatch.setattr(StalePolicy, "push", spy_push)
    monkeypatch.setattr(HFEngine, "load_weights", spy_load)
    cfg = TrainConfig(
        task="last", prompts_per_step=4, group_size=4, max_steps=6, eval_every=6, eval_size=8, lr0=3e-3,
        staleness=2, staleness_loss=loss, max_new_tokens=2,
    )  # fmt: skip
    train(cfg, tmp_path / "run", threads="1")
    assert len(set(pushed)) == 7  # every update changed the weights
    # the load at the start, then one after each step's update: the version the next step generates with
    assert loaded == [pushed[0], pushed[0], pushed[0], pushed[1], pushed[2], pushed[3], pushed[4]]
    log = list(read_jsonl(tmp_path / "run" / "runlog.jsonl"))
    assert [r["staleness"] for r in log] == [0, 1, 2, 2, 2, 2]
    filtered = [r.get("behav_weight_filtered") for r in log]
    assert all(f is None for f in filtered) if loss == "naive_ppo" else all(0 <= f <= 1 for f in filtered)


def test_a_synchronous_run_logs_no_staleness(tmp_path):
    cfg = TrainConfig(task="last", prompts_per_step=4, group_size=4, max_steps=2, eval_every=2, eval_size=8)
    train(cfg, tmp_path / "run", threads="1")
    log = list(read_jsonl(tmp_path / "run" / "runlog.jsonl"))
    assert all("staleness" not in r for r in log)
    assert all(0.0 <= r["zero_variance_groups"] <= 1.0 for r in log)


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("staleness", -1, "--staleness (-1) must be 0"),
        ("staleness_loss", "vtrace", "--staleness-loss 'vtrace' is not one of naive_ppo, decoupled_ppo"),
        ("behav_weight_cap", 1.0, "--behav-weight-cap (1) must be above 1"),
    ],
)
def test_bad_staleness_settings_are_refused(field, value, match):
    with pytest.raises(RealError, match=match.replace("(", r"\(").replace(")", r"\)")):
        TrainConfig(**{field: value}).validate()


@pytest.mark.slow
def test_a_killed_stale_run_resumes_lagging_the_same(tmp_path):
    """Killed after step 5 (checkpoint at step 3), resumed: the versions the engine lags by come back from the
    checkpoint, so the log equals an uninterrupted run's."""
    args = [
        *CLI, "train", "--task", "last", "--prompts-per-step", "4", "--group-size", "4", "--max-steps", "8",
        "--checkpoint-every", "3", "--eval-every", "4", "--max-new-tokens", "2", "--eval-size", "8",
        "--staleness", "3", "--threads", "1", "-o",
    ]  # fmt: skip
    run, ref = tmp_path / "run", tmp_path / "ref"
    killed = subprocess.run(
        [*args, str(run)], env={**os.environ, STOP_AFTER_STEP_ENV: "5"}, capture_output=True, text=True, timeout=600
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    done = subprocess.run([*args, str(run)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stopped"] == "max_steps"
    subprocess.run([*args, str(ref)], capture_output=True, check=True, timeout=600)
    keys = ("staleness", "reward_mean", "policy_loss", "behav_weight_filtered", "eval_metric")
    resumed = [[r.get(k) for k in keys] for r in read_jsonl(run / "runlog.jsonl")]
    assert resumed == [[r.get(k) for k in keys] for r in read_jsonl(ref / "runlog.jsonl")]
