"""Fully-async runs (real/fully_async.py) and the offloaded optimizer (real/offload.py) on the tiny model: the
generator really runs in a process of its own and gets the trainer's weights every N updates, the optimizer's
state really lives outside the module, and bad flags are refused in one line (issue 57, must-show 2)."""

import dataclasses
import re
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from real.config import TrainConfig  # noqa: E402
from real.errors import RealError  # noqa: E402
from real.fully_async import SharedWeights  # noqa: E402
from real.models import load_policy, model_cache_dir, resolve_model  # noqa: E402
from real.offload import OffloadedAdam  # noqa: E402
from real.train import train  # noqa: E402
from rlsim.io.runlog import read_jsonl  # noqa: E402

CLI = [sys.executable, "-m", "real.cli"]


def test_the_generator_gets_the_weights_every_n_updates_and_runs_at_most_k_ahead(tmp_path):
    """K = 1, N = 2. Batch b (update b + 1 trains on it) may use weights of version >= b - 1, and the trainer pushes
    versions 2, 4, 6: batches 0 and 1 use version 0 (lags 0, 1), batches 2 and 3 version 2, 4 and 5 version 4. Where
    the lag is 0 the generator held the trainer's weights, so its sampling log-probs equal the trainer's proximal
    ones (up to rounding); where it is 1 an update lies between them and they differ."""
    cfg = TrainConfig(
        task="last", prompts_per_step=4, group_size=4, max_steps=6, eval_every=6, eval_size=8, lr0=3e-2,
        max_new_tokens=2, fully_async=True, staleness=1, sync_every=2,
    )  # fmt: skip
    train(cfg, tmp_path / "run", threads="1")
    log = list(read_jsonl(tmp_path / "run" / "runlog.jsonl"))
    assert [r["weights_pushed"] for r in log] == [False, True, False, True, False, True]
    assert [r["weights_version"] for r in log] == [0, 0, 2, 2, 4, 4]
    assert [r["staleness"] for r in log] == [0, 1, 0, 1, 0, 1]
    for r in log:
        assert ("weight_sync" in r["timing_s"]) == r["weights_pushed"]
        if r["staleness"] == 0:
            assert r["behaviour_max_abs_diff"] < 1e-4, r
        else:
            assert r["behaviour_max_abs_diff"] > 1e-4, r
        assert r["timing_s"]["rollout"] > 0 and r["wait_s"] >= 0 and r["fully_async"]
    assert [r["step"] for r in log] == list(range(1, 7))
    walls = [r["wall_s"] for r in log]
    assert walls == sorted(walls)
    # a second run into the same directory is refused: async runs do not resume
    with pytest.raises(RealError, match="do not resume"):
        train(cfg, tmp_path / "run", threads="1")


def test_shared_weights_carry_the_trainer_weights_to_another_model():
    import torch.multiprocessing as mp

    path = resolve_model(None, model_cache_dir())
    trainer, _ = load_policy(path)
    engine, _ = load_policy(path)
    with torch.no_grad():
        for p in trainer.parameters():
            p.add_(0.5)
    shared = SharedWeights(trainer, mp.get_context("spawn"))
    assert shared.pull(engine, 0) == 0  # version 0 is what it holds: nothing loaded
    assert not torch.equal(next(engine.parameters()), next(trainer.parameters()))
    shared.push(trainer, 3)
    assert shared.pull(engine, 0) == 3
    for a, b in zip(engine.state_dict().values(), trainer.state_dict().values()):
        assert torch.equal(a, b)


def test_the_offloaded_optimizer_holds_its_state_outside_the_module_and_steps_like_adam():
    path = resolve_model(None, model_cache_dir())
    a, _ = load_policy(path)
    b, _ = load_policy(path)
    torch_adam = torch.optim.Adam(a.parameters(), lr=1e-2)
    host = OffloadedAdam(b.parameters(), lr=1e-2)
    # the master weights, their gradient and Adam's moments share no storage with the module's parameters
    module = {p.untyped_storage().data_ptr() for p in b.parameters()}
    assert host.master.untyped_storage().data_ptr() not in module
    assert host.master.grad.untyped_storage().data_ptr() not in module
    assert host.num_params == sum(p.numel() for p in b.parameters())
    gen = torch.Generator().manual_seed(0)
    for _ in range(3):
        grads = [torch.randn(p.shape, generator=gen) for p in a.parameters()]
        for model, opt in ((a, torch_adam), (b, host)):
            opt.zero_grad(set_to_none=True)
            for p, g in zip(model.parameters(), grads):
                p.grad = g.clone()
            opt.step()
    for pa, pb in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(pa, pb, rtol=1e-5, atol=1e-6)
    moments = [s for st in host.adam.state.values() for s in st.values() if torch.is_tensor(s) and s.numel() > 1]
    assert moments and all(m.untyped_storage().data_ptr() not in module for m in moments)
    assert set(host.last_s) == {"copy_out", "host_adam", "copy_back"} and all(v > 0 for v in host.last_s.values())
    # a checkpoint round trip restores the master weights and the moments
    state = host.state_dict()
    other = OffloadedAdam(b.parameters(), lr=1e-2)
    other.load_state_dict(state)
    assert torch.equal(other.master, host.master)


def test_a_run_with_the_offloaded_optimizer_logs_its_parts(tmp_path):
    cfg = TrainConfig(
        task="last", prompts_per_step=4, group_size=4, max_steps=2, eval_every=2, eval_size=8, max_new_tokens=2,
        mini_batches=2, micro_batches=1, offload_optimizer=True,
    )  # fmt: skip
    train(cfg, tmp_path / "run", threads="1")
    # extended by a step: the run resumes from its checkpoint, the offloaded optimizer's state with it
    train(dataclasses.replace(cfg, max_steps=3), tmp_path / "run", threads="1")
    log = list(read_jsonl(tmp_path / "run" / "runlog.jsonl"))
    assert [r["step"] for r in log] == [1, 2, 3]
    for r in log:
        assert set(r["offload_s"]) == {"copy_out", "host_adam", "copy_back"}
        assert all(v > 0 for v in r["offload_s"].values())


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--sync-every", "2"], "--sync-every 2 needs --fully-async"),
        (["--fully-async"], "--fully-async needs --staleness K >= 1"),
        (["--fully-async", "--staleness", "1", "--sync-every", "3"], "--sync-every 3 exceeds --staleness 1 \\+ 1"),
        (["--fully-async", "--staleness", "1", "--algo", "ppo"], "--fully-async supports --algo grpo only"),
        (["--fully-async", "--staleness", "1", "--sync-every", "0"], "--sync-every \\(0\\) must be at least 1"),
    ],
)
def test_bad_async_flags_are_refused_in_one_line(tmp_path, flags, message):
    proc = subprocess.run([*CLI, "train", *flags, "-o", str(tmp_path / "r")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert re.search(message, proc.stderr), proc.stderr
    assert not (tmp_path / "r").exists()
