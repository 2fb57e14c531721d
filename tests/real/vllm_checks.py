"""Checks of the vLLM engine, run in a fresh process by test_vllm.py (vLLM scans every loaded module when it
starts, and modules loaded by other tests in the pytest process break that scan). Prints one JSON object."""

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def per_tensor_sync(engine, model_dir: Path) -> dict:
    """Every trained tensor reaches the engine: change one tensor of the trainer at a time, reload, and compare the
    engine's log-probs of a fixed sequence with the trainer's (a tensor dropped by the reload leaves the engine's
    log-probs where they were). Also whether the rotary caches, which the reload does not load, keep their values."""
    import torch
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    from real.models import load_policy

    policy, tok = load_policy(model_dir)
    ids = tok("12+34=46")["input_ids"]
    params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False)

    def engine_logprobs() -> torch.Tensor:
        res = engine.llm.generate([TokensPrompt(prompt_token_ids=ids)], params, use_tqdm=False)[0]
        return torch.tensor([d[t].logprob for d, t in zip(res.prompt_logprobs[1:], ids[1:])])

    def trainer_logprobs() -> torch.Tensor:
        with torch.no_grad():
            lp = torch.log_softmax(policy(torch.tensor([ids])).logits[0].float(), -1)
        return lp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]

    engine.load_weights(policy)
    engine0, trainer0 = engine_logprobs(), trainer_logprobs()
    gen = torch.Generator().manual_seed(0)
    per_tensor = {}
    for name, tensor in policy.state_dict().items():  # state_dict: what load_weights sends
        saved = tensor.clone()
        with torch.no_grad():
            tensor.add_(torch.randn(tensor.shape, generator=gen) * 0.5)
        engine.load_weights(policy)
        e, t = engine_logprobs(), trainer_logprobs()
        per_tensor[name] = {
            "trainer_moved": float((t - trainer0).abs().max()),
            "engine_moved": float((e - engine0).abs().max()),
            "engine_vs_trainer": float((e - t).abs().max()),
        }
        with torch.no_grad():
            tensor.copy_(saved)
    engine.load_weights(policy)
    out = {"per_tensor": per_tensor, "restored_logprobs": float((engine_logprobs() - engine0).abs().max())}

    def rotary_caches(model) -> list[bool]:
        return [
            bool(torch.equal(m.cos_sin_cache, m._compute_cos_sin_cache().to(m.cos_sin_cache.dtype)))
            for m in model.modules()
            if hasattr(m, "cos_sin_cache") and hasattr(m, "_compute_cos_sin_cache")
        ]

    out["rotary_caches_intact"] = engine.llm.apply_model(rotary_caches)[0]
    return out


def main() -> None:
    import torch

    import real.engines as engines
    from real.engines.hf import HFEngine
    from real.models import load_policy, resolve_model
    from real.train import TrainConfig, train
    from rlsim.io.runlog import read_jsonl

    cache = Path(os.environ.get("RLSIM_CACHE_DIR") or tempfile.mkdtemp())
    tiny = resolve_model("tiny", cache)
    engine = engines.make_engine("vllm", tiny, max_model_len=64)
    out = {}
    policy, tok = load_policy(tiny)
    prompts = [tok(p)["input_ids"] for p in ("12+34=", "r123=", "s321=", "7+8=")]
    engine.load_weights(policy)
    before = engine.generate(prompts, 1, 6, 1.0, seed=0, greedy=True)
    hf = HFEngine(tiny)
    out["same_as_hf_before"] = before == hf.generate(prompts, 1, 6, 1.0, seed=0, greedy=True)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    engine.load_weights(policy)
    after = engine.generate(prompts, 1, 6, 1.0, seed=0, greedy=True)
    out["changed_after_load"] = after != before
    hf.load_weights(policy)
    out["same_as_hf_after"] = after == hf.generate(prompts, 1, 6, 1.0, seed=0, greedy=True)
    engine.load_weights(load_policy(tiny)[0])
    out["restored"] = engine.generate(prompts, 1, 6, 1.0, seed=0, greedy=True) == before

    out.update(per_tensor_sync(engine, tiny))

    one = [tok("12+34=")["input_ids"]]
    a, b = engine.generate(one, 8, 6, 1.0, seed=1), engine.generate(one, 8, 6, 1.0, seed=1)
    out["seeded"] = a == b
    out["n_samples"] = len(a[0])
    out["distinct_samples"] = len({tuple(x) for x in a[0]})
    out["fixed_lengths"] = [len(x) for x in engine.generate(one, 2, 5, 1.0, seed=2, ignore_eos=True)[0]]

    class Shared:  # the loop closes its engine; keep this one
        name = "vllm"

        def __getattr__(self, attr):
            return getattr(engine, attr)

        def close(self):
            pass

    make_engine = engines.make_engine
    engines.make_engine = lambda name, path, **kw: Shared()
    os.environ["RLSIM_CACHE_DIR"] = str(cache)
    run = Path(tempfile.mkdtemp()) / "run"
    train(
        TrainConfig(
            task="parity:length=3",
            engine="vllm",
            prompts_per_step=4,
            group_size=4,
            max_steps=3,
            eval_every=3,
            max_new_tokens=2,
            eval_size=16,
        ),
        run,
    )
    log = list(read_jsonl(run / "runlog.jsonl"))
    out["loop_steps"] = [r["step"] for r in log]
    out["loop_engine"] = sorted({r["engine"] for r in log})
    out["loop_sync_timed"] = all(r["timing_s"]["weight_sync"] > 0 for r in log)

    if "--bench" in sys.argv:
        from real import bench

        df = bench.bench_generation("vllm", None, [1, 4, 16], [8], [16], repeats=2, warmup=1)
        s = bench.summarize(df).set_index("concurrency")["tokens_per_s"]
        out["bench_tokens_per_s"] = {int(k): float(v) for k, v in s.items()}
        # a fresh engine at its default max_model_len on the tiny model (128 positions): it used to ask for 256
        engines.make_engine = make_engine
        sync = bench.bench_sync("vllm", None, repeats=1, warmup=0)
        out["sync_rows"] = len(sync)
        out["sync_bytes"] = float(sync["bytes"].iloc[0])
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
