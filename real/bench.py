"""Microbenchmarks that feed calibrate: generation, training and weight sync, on the ``hf`` or ``vllm`` engine.

Each returns a tidy table, one row per measured repeat (warm-up repeats are run and dropped), with the
configuration, the seconds and the derived throughput, plus a ``provenance`` column (JSON) naming the device,
engine and version, torch version, model, dtype, date and command. ``write_table`` writes bench.csv,
bench.parquet and provenance.json.

* generation: ``concurrency`` sequences of exactly ``prompt_tokens`` random prompt tokens, each generating
  exactly ``response_tokens`` tokens (EOS ignored), in one batch; time of the whole batch.
* train: one optimizer step (forward, backward, Adam) on ``tokens`` tokens in sequences of ``seq_len``, the
  gradient accumulated over ``micro_batches`` like the training loop does (phase ``train_actor``), and one
  forward-only log-prob pass over the same tokens (phase ``old_logprob``).
* sync: the engine loading the trainer's weights (phase ``weight_sync``), with the bytes moved.

``read_vllm_bench`` turns ``vllm bench latency`` (fixed batch, ``avg_latency``/``latencies``) and ``vllm bench
throughput`` (``elapsed_time``, ``num_requests``, ``total_num_tokens``, ``tokens_per_second``) JSON into rows of
the same table; the batch and lengths they do not record can be given in the file name (``bs8_in32_out128``).
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from real.errors import RealError
from rlsim.phases import Phase

COLUMNS = [
    "phase",
    "engine",
    "model",
    "device",
    "concurrency",
    "prompt_tokens",
    "response_tokens",
    "tokens",
    "sequences",
    "repeat",
    "time_s",
    "tokens_per_s",
    "bytes",
    "provenance",
]


def provenance(engine: str, model: str, dtype: str = "float32") -> dict[str, Any]:
    import torch

    from real.train import environment

    env = environment()
    version = env.get("vllm") if engine == "vllm" else env.get("transformers")
    return {
        "device": env["device"],
        "engine": engine,
        "engine_version": version,
        "torch_version": torch.__version__,
        "model": model,
        "dtype": dtype,
        "date": _dt.date.today().isoformat(),
        "command": " ".join(sys.argv),
    }


def _timed(fn, repeats: int, warmup: int) -> list[float]:
    from real.timing import synchronize

    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        synchronize()
        t0 = time.perf_counter()
        fn()
        synchronize()
        out.append(time.perf_counter() - t0)
    return out


def _model(spec: str | None) -> tuple[Path, str]:
    from real.models import resolve_model
    from real.train import model_cache_dir

    path = resolve_model(spec, model_cache_dir())
    return path, spec or "tiny"


def bench_generation(
    engine_name: str,
    model: str | None,
    concurrency: list[int],
    prompt_tokens: list[int],
    response_tokens: list[int],
    repeats: int = 3,
    warmup: int = 1,
) -> pd.DataFrame:
    import random

    from transformers import AutoConfig

    from real.engines import make_engine

    path, name = _model(model)
    vocab = AutoConfig.from_pretrained(path).vocab_size
    max_len = max(prompt_tokens) + max(response_tokens) + 8
    engine = make_engine(engine_name, path, max_model_len=max_len)
    prov = provenance(engine_name, name)
    rng = random.Random(0)
    rows = []
    try:
        for p in prompt_tokens:
            for r in response_tokens:
                for c in concurrency:
                    prompts = [[rng.randrange(4, vocab) for _ in range(p)] for _ in range(c)]

                    def run(prompts=prompts, r=r) -> None:
                        out = engine.generate(prompts, 1, r, 1.0, seed=0, ignore_eos=True)
                        got = sum(len(g[0]) for g in out)
                        if got != len(prompts) * r:  # the benchmark must generate exactly what it claims
                            raise RuntimeError(f"engine generated {got} tokens, expected {len(prompts) * r}")

                    for i, t in enumerate(_timed(run, repeats, warmup)):
                        rows.append(
                            {
                                "phase": Phase.ROLLOUT.value,
                                "engine": engine_name,
                                "model": name,
                                "device": prov["device"],
                                "concurrency": c,
                                "prompt_tokens": p,
                                "response_tokens": r,
                                "tokens": c * r,
                                "sequences": c,
                                "repeat": i,
                                "time_s": t,
                                "tokens_per_s": c * r / t,
                                "bytes": None,
                            }
                        )
    finally:
        engine.close()
    return _frame(rows, prov)


def bench_train(
    model: str | None, tokens: list[int], seq_len: int, repeats: int = 3, warmup: int = 1, micro_batches: int = 1
) -> pd.DataFrame:
    import torch

    from real.models import load_policy

    path, name = _model(model)
    policy, _ = load_policy(path)
    vocab = policy.config.vocab_size
    opt = torch.optim.Adam(policy.parameters(), lr=1e-5)
    prov = provenance("torch", name)
    rows = []
    gen = torch.Generator().manual_seed(0)
    for n_tokens in tokens:
        n_seq = max(1, n_tokens // seq_len)
        ids = torch.randint(4, vocab, (n_seq, seq_len), generator=gen)

        def step(ids=ids) -> None:  # one optimizer step, gradients accumulated over micro-batches like the loop
            opt.zero_grad(set_to_none=True)
            for part in ids.chunk(micro_batches):
                logits = policy(input_ids=part).logits
                loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, vocab), part[:, 1:].reshape(-1))
                (loss / micro_batches).backward()
            opt.step()

        def forward(ids=ids) -> None:
            with torch.no_grad():
                policy(input_ids=ids)

        for phase, fn in ((Phase.TRAIN_ACTOR, step), (Phase.OLD_LOGPROB, forward)):
            for i, t in enumerate(_timed(fn, repeats, warmup)):
                rows.append(
                    {
                        "phase": phase.value,
                        "engine": "torch",
                        "model": name,
                        "device": prov["device"],
                        "concurrency": n_seq,
                        "prompt_tokens": None,
                        "response_tokens": None,
                        "tokens": n_seq * seq_len,
                        "sequences": n_seq,
                        "repeat": i,
                        "time_s": t,
                        "tokens_per_s": n_seq * seq_len / t,
                        "bytes": None,
                    }
                )
    return _frame(rows, prov)


def bench_sync(engine_name: str, model: str | None, repeats: int = 3, warmup: int = 1) -> pd.DataFrame:
    from real.engines import make_engine
    from real.models import load_policy

    path, name = _model(model)
    policy, _ = load_policy(path)
    nbytes = sum(t.numel() * t.element_size() for t in policy.state_dict().values())
    engine = make_engine(engine_name, path)
    prov = provenance(engine_name, name)
    try:
        times = _timed(lambda: engine.load_weights(policy), repeats, warmup)
    finally:
        engine.close()
    rows = [
        {
            "phase": Phase.WEIGHT_SYNC.value,
            "engine": engine_name,
            "model": name,
            "device": prov["device"],
            "concurrency": None,
            "prompt_tokens": None,
            "response_tokens": None,
            "tokens": None,
            "sequences": None,
            "repeat": i,
            "time_s": t,
            "tokens_per_s": None,
            "bytes": nbytes,
        }
        for i, t in enumerate(times)
    ]
    return _frame(rows, prov)


def _frame(rows: list[dict[str, Any]], prov: dict[str, Any]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=COLUMNS[:-1])
    df["provenance"] = json.dumps(prov, sort_keys=True)
    return df


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard deviation and count over repeats of each configuration."""
    keys = [
        c for c in ("phase", "engine", "model", "concurrency", "prompt_tokens", "response_tokens", "tokens") if c in df
    ]
    g = df.groupby(keys, dropna=False)
    out = (
        g["time_s"]
        .agg(["mean", "std", "count"])
        .rename(columns={"mean": "time_s", "std": "time_s_std", "count": "repeats"})
    )
    out["tokens_per_s"] = g["tokens_per_s"].mean()
    return out.reset_index()


def write_table(df: pd.DataFrame, out: Path) -> None:
    from rlsim.files import atomic_write, atomic_write_text

    atomic_write(out / "bench.csv", lambda p: df.to_csv(p, index=False))
    atomic_write(out / "bench.parquet", lambda p: df.to_parquet(p, index=False))
    provs = sorted(set(df["provenance"]))
    atomic_write_text(out / "provenance.json", json.dumps([json.loads(p) for p in provs], indent=2) + "\n")


def read_vllm_bench(files: list[Path]) -> pd.DataFrame:
    """Rows from ``vllm bench latency`` / ``vllm bench throughput`` JSON outputs."""
    rows = []
    for f in files:
        if not f.is_file():
            raise RealError(f"{f}: no such file; give JSON files written by vllm bench --output-json")
        try:
            data = json.loads(f.read_text())
        except json.JSONDecodeError as exc:
            raise RealError(f"{f}: not JSON ({exc.msg} at line {exc.lineno})") from None
        hint = {k: int(v) for k, v in re.findall(r"(bs|in|out)(\d+)", f.stem)}
        bs, p, r = hint.get("bs"), hint.get("in"), hint.get("out")
        prov = json.dumps(
            {
                "device": data.get("device", "unknown"),
                "engine": "vllm",
                "engine_version": data.get("vllm_version"),
                "torch_version": None,
                "model": data.get("model", "unknown"),
                "dtype": data.get("dtype"),
                "date": None,
                "command": f"vllm bench ({f.name})",
            }
        )
        if "latencies" in data or "avg_latency" in data:
            for i, t in enumerate(data.get("latencies") or [data["avg_latency"]]):
                rows.append(
                    {
                        "phase": Phase.ROLLOUT.value,
                        "engine": "vllm",
                        "model": data.get("model", "unknown"),
                        "device": data.get("device", "unknown"),
                        "concurrency": bs,
                        "prompt_tokens": p,
                        "response_tokens": r,
                        "tokens": bs * r if bs and r else None,
                        "sequences": bs,
                        "repeat": i,
                        "time_s": float(t),
                        "tokens_per_s": bs * r / float(t) if bs and r else None,
                        "bytes": None,
                        "provenance": prov,
                    }
                )
        elif "elapsed_time" in data:
            n = data.get("num_requests")
            rows.append(
                {
                    "phase": Phase.ROLLOUT.value,
                    "engine": "vllm",
                    "model": data.get("model", "unknown"),
                    "device": data.get("device", "unknown"),
                    "concurrency": bs or n,
                    "prompt_tokens": p,
                    "response_tokens": r,
                    "tokens": data.get("total_num_tokens"),
                    "sequences": n,
                    "repeat": 0,
                    "time_s": float(data["elapsed_time"]),
                    "tokens_per_s": data.get("tokens_per_second"),
                    "bytes": None,
                    "provenance": prov,
                }
            )
        else:
            raise RealError(
                f"{f}: neither vllm bench latency (latencies, avg_latency) nor throughput (elapsed_time) JSON"
            )
    return pd.DataFrame(rows, columns=COLUMNS)
