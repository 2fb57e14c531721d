"""Microbenchmarks that feed calibrate: generation, training and weight sync, on the ``hf`` or ``vllm`` engine.

Each returns a tidy table, one row per measured repeat (warm-up repeats are run and dropped; the repeats of
a table's configurations are interleaved, round by round, so drifts of the machine do not bias one of them), with the
configuration, the seconds and the derived throughput, plus a ``provenance`` column (JSON) naming the device,
engine and version, torch version, model, dtype, date and command; the columns are ``rlsim.io.records.BENCH_COLUMNS``
(defined there once, with their units). ``write_table`` writes bench.csv,
bench.parquet and provenance.json.

* generation: ``concurrency`` sequences of exactly ``prompt_tokens`` random prompt tokens, each generating
  exactly ``response_tokens`` tokens (EOS ignored), in one batch; time of the whole batch.
* train: the training loop's own functions (``real.update``) on a synthetic batch of ``tokens`` tokens in sequences of
  ``seq_len`` (the second half of each sequence the scored completion, random advantages): one GRPO update
  (clipped policy loss, gradient accumulated over ``micro_batches``, gradient norms, clipping, Adam; phase
  ``train_actor``) and one log-prob pass (phase ``old_logprob``).
* sync: the engine loading the trainer's weights (phase ``weight_sync``), with the bytes moved, for one model or
  several sizes (``--model tiny --model tiny:hidden_size=256``); a repeat is the mean of ``number`` consecutive loads
  (a tiny model's sync takes under a millisecond).

``read_vllm_bench`` turns ``vllm bench latency`` (fixed batch, ``avg_latency``/``latencies``) and ``vllm bench
throughput`` (``elapsed_time``, ``num_requests``, ``total_num_tokens``, ``tokens_per_second``) JSON into rows of
the same table; the batch and lengths they do not record can be given in the file name (``bs8_in32_out128``).
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import math
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

import real.engines  # called as real.engines.make_engine: a test swaps it for a shared engine
from real.config import TrainConfig
from real.errors import RealError
from real.models import load_policy, model_cache_dir, resolve_model
from real.timing import synchronize
from real.update import batch_tensors, completion_logprobs, update_actor
from rlsim.host.machine_load import LoadMeter
from rlsim.io.files import atomic_write, atomic_write_text, read_text
from rlsim.io.records import BENCH_COLUMNS
from rlsim.phases import Phase


def provenance(
    engine: str, model: str, dtype: str = "float32", model_dir: Path | None = None, max_num_seqs: int | None = None
) -> dict[str, Any]:
    """What a bench row was measured with; ``model_dir`` is the folder the model was loaded from, where
    ``rlsim-calibrate fit`` reads the architecture (so a user need not locate the built or converted model), and
    ``max_num_seqs`` the engine's limit on running sequences (vLLM's), which the fit schedules with."""
    # here, not at the top: it loads numpy, torch (start-up time)
    import torch

    from real.environment import environment

    env = environment()
    version = env.get("vllm") if engine == "vllm" else env.get("transformers")
    return {
        "device": env["device"],
        "engine": engine,
        "engine_version": version,
        "torch_version": torch.__version__,
        "torch_threads": env["torch_threads"],  # rlsim-calibrate fit compares it with the runs'
        "threads_rule": env["threads_rule"],
        "model": model,
        "dtype": dtype,
        "date": _dt.date.today().isoformat(),
        "command": " ".join(sys.argv),
        "model_dir": str(model_dir) if model_dir is not None else None,
        "max_num_seqs": max_num_seqs,
    }


def _timed_rounds(fns: list, repeats: int, warmup: int) -> list[list[tuple[float, dict[str, Any]]]]:
    """Seconds of each function per repeat with the machine's load over it (``rlsim.host.machine_load``), the
    repeats interleaved: round i times every function once.

    Slow drifts of the machine (clock, cache, other tenants) then spread over every configuration as noise
    that the median of repeats removes, instead of biasing whichever configurations ran during the drift.
    Each function runs ``warmup`` untimed times first.
    """
    for fn in fns:
        for _ in range(warmup):
            fn()
    out: list[list[tuple[float, dict[str, Any]]]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, times in zip(fns, out):
            synchronize()
            meter = LoadMeter().start()
            t0 = time.perf_counter()
            fn()
            synchronize()
            t = time.perf_counter() - t0
            times.append((t, meter.stop()))
    return out


def _model(spec: str | None) -> tuple[Path, str]:
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
    # here, not at the top: it loads transformers (start-up time)
    from transformers import AutoConfig

    path, name = _model(model)
    vocab = AutoConfig.from_pretrained(path).vocab_size
    max_len = max(prompt_tokens) + max(response_tokens) + 8
    engine = real.engines.make_engine(engine_name, path, max_model_len=max_len)
    prov = provenance(engine_name, name, model_dir=path, max_num_seqs=getattr(engine, "max_num_seqs", None))
    rng = random.Random(0)
    configs = [(p, r, c) for p in prompt_tokens for r in response_tokens for c in concurrency]
    fns = []
    for p, r, c in configs:
        prompts = [[rng.randrange(4, vocab) for _ in range(p)] for _ in range(c)]

        def run(prompts=prompts, r=r) -> None:
            out = engine.generate(prompts, 1, r, 1.0, seed=0, ignore_eos=True)
            got = sum(len(g[0]) for g in out)
            if got != len(prompts) * r:  # the benchmark must generate exactly what it claims
                raise RuntimeError(f"engine generated {got} tokens, expected {len(prompts) * r}")

        fns.append(run)
    try:
        times = _timed_rounds(fns, repeats, warmup)
    finally:
        engine.close()
    rows = [
        _row(
            Phase.ROLLOUT,
            engine_name,
            name,
            prov,
            i,
            t,
            c * r,
            concurrency=c,
            sequences=c,
            prompt_tokens=p,
            response_tokens=r,
            **load,
        )
        for (p, r, c), ts in zip(configs, times)
        for i, (t, load) in enumerate(ts)
    ]
    return _frame(rows, prov)


def bench_train(
    model: str | None, tokens: list[int], seq_len: int, repeats: int = 3, warmup: int = 1, micro_batches: int = 1
) -> pd.DataFrame:
    # here, not at the top: it loads torch (start-up time)
    import torch

    path, name = _model(model)
    policy, _ = load_policy(path)
    vocab = policy.config.vocab_size
    opt = torch.optim.Adam(policy.parameters(), lr=1e-5)
    prov = provenance("torch", name, model_dir=path)
    gen = torch.Generator().manual_seed(0)
    cfg = TrainConfig(micro_batches=micro_batches, mini_batches=1, epochs=1)
    completion_len = max(1, seq_len // 2)  # the second half of each sequence is the scored completion
    configs, fns = [], []
    for n_tokens in tokens:
        n_seq = max(1, n_tokens // seq_len)
        if n_seq % micro_batches:
            raise RealError(
                f"--tokens {n_tokens} gives {n_seq} sequences of {seq_len}, not divisible into --micro-batches "
                f"{micro_batches}; choose token counts that are multiples of {seq_len * micro_batches}"
            )
        seqs = torch.randint(4, vocab, (n_seq, seq_len), generator=gen).tolist()
        prompts = [row[: seq_len - completion_len] for row in seqs]
        completions = [row[seq_len - completion_len :] for row in seqs]
        ids, attn, targets, mask, positions = batch_tensors(prompts, completions, pad_id=0)
        old_lp = torch.zeros(mask.shape)
        adv = torch.randn(mask.shape, generator=gen) * mask

        def step(ids=ids, attn=attn, targets=targets, mask=mask, positions=positions, old_lp=old_lp, adv=adv) -> None:
            # the training loop's own update: clipped policy loss, micro-batches, gradient norms, clipping, Adam
            update_actor(cfg, policy, opt, ids, attn, targets, mask, positions, old_lp, None, adv)

        def forward(ids=ids, attn=attn, targets=targets, positions=positions) -> None:
            with torch.no_grad():  # the loop's log-prob pass
                completion_logprobs(policy, ids, attn, targets, positions)

        for phase, fn in ((Phase.TRAIN_ACTOR, step), (Phase.OLD_LOGPROB, forward)):
            configs.append((phase, n_seq))
            fns.append(fn)
    rows = [
        _row(phase, "torch", name, prov, i, t, n_seq * seq_len, concurrency=n_seq, sequences=n_seq, **load)
        for (phase, n_seq), ts in zip(configs, _timed_rounds(fns, repeats, warmup))
        for i, (t, load) in enumerate(ts)
    ]
    return _frame(rows, prov)


def bench_sync(
    engine_name: str, model: str | None | list[str | None], repeats: int = 3, warmup: int = 1, number: int = 1
) -> pd.DataFrame:
    """Weight-sync rows, for one model or several (sizes), their repeats interleaved in one process.

    Each repeat is the mean of ``number`` consecutive loads (as ``timeit`` does). Models of several sizes give a
    table with several ``bytes`` values, from which calibrate fits the fixed latency and the bandwidth apart.
    """
    models = model if isinstance(model, list) else [model]
    loaded, engines = [], []
    try:
        for spec in models:
            path, name = _model(spec)
            policy, _ = load_policy(path)
            nbytes = sum(t.numel() * t.element_size() for t in policy.state_dict().values())
            engines.append(real.engines.make_engine(engine_name, path))
            loaded.append((name, policy, nbytes))

        def loads(engine: Any, policy: Any) -> None:
            for _ in range(number):
                engine.load_weights(policy)

        fns = [functools.partial(loads, engine, policy) for engine, (_, policy, _) in zip(engines, loaded)]
        times = _timed_rounds(fns, repeats, warmup)
    finally:
        for engine in engines:
            engine.close()
    prov = provenance(engine_name, ",".join(name for name, _, _ in loaded))
    rows = [
        _row(Phase.WEIGHT_SYNC, engine_name, name, prov, i, t / number, bytes=nbytes, **load)
        for (name, _, nbytes), ts in zip(loaded, times)
        for i, (t, load) in enumerate(ts)
    ]
    return _frame(rows, prov)


def _row(
    phase: Phase,
    engine: str,
    model: str,
    prov: dict[str, Any],
    repeat: int,
    time_s: float,
    tokens: int | None = None,
    **config: Any,
) -> dict[str, Any]:
    """One measured repeat of an in-process bench; the columns it does not name stay empty in the table."""
    return {
        "phase": getattr(phase, "value", phase),  # a Phase, or an optimizer bench phase (real.offload)
        "engine": engine,
        "model": model,
        "device": prov["device"],
        "repeat": repeat,
        "time_s": time_s,
        "tokens": tokens,
        "tokens_per_s": tokens / time_s if tokens else None,
        **config,
    }


def _frame(rows: list[dict[str, Any]], prov: dict[str, Any]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=list(BENCH_COLUMNS))
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
    atomic_write(out / "bench.csv", lambda p: df.to_csv(p, index=False))
    atomic_write(out / "bench.parquet", lambda p: df.to_parquet(p, index=False))
    provs = sorted(set(df["provenance"]))
    atomic_write_text(out / "provenance.json", json.dumps([json.loads(p) for p in provs], indent=2) + "\n")


def _positive(f: Path, key: str, value: Any) -> float:
    """A vllm bench JSON value that must be a positive finite number (seconds, tokens, requests)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1e300
    if not ok or not math.isfinite(float(value)) or float(value) <= 0:
        raise RealError(f"{f}: {key} is {value!r:.40}, not a positive number; give the JSON vllm bench wrote")
    return float(value)


def _count(f: Path, key: str, value: Any) -> int | None:
    """A vllm bench JSON count (requests, tokens): None when absent, else a whole number of at least 1."""
    if value is None:
        return None
    number = _positive(f, key, value)
    if number != int(number) or number > 1e15:
        raise RealError(f"{f}: {key} is {value!r:.40}, not a whole number of at most 1e15")
    return int(number)


def read_vllm_bench(files: list[Path]) -> pd.DataFrame:
    """Rows from ``vllm bench latency`` / ``vllm bench throughput`` JSON outputs. A value of the wrong type or out
    of range names the file and the key (RealError), as does a file that is not such a JSON object."""
    rows = []
    for f in files:
        if not f.is_file():
            raise RealError(f"{f}: no such file; give JSON files written by vllm bench --output-json")
        try:
            data = json.loads(read_text(f, "vllm bench JSON"))
        except json.JSONDecodeError as exc:
            raise RealError(f"{f}: not JSON ({exc.msg} at line {exc.lineno})") from None
        except RecursionError:
            raise RealError(f"{f}: nested too deeply to be vllm bench JSON") from None
        if not isinstance(data, dict):
            raise RealError(f"{f}: a JSON {type(data).__name__}, not the object vllm bench writes")
        hint = {k: int(v) for k, v in re.findall(r"(bs|in|out)(\d+)", f.stem)}
        bs, p, r = (hint.get(k) or None for k in ("bs", "in", "out"))
        # vllm bench writes the model it ran as model_id (vllm/benchmarks/throughput.py, latency.py); it records no
        # device, so that stays unknown
        model, device = data.get("model") or data.get("model_id") or "unknown", data.get("device", "unknown")
        for key, value in (("model_id", model), ("device", device)):
            if not isinstance(value, str):
                raise RealError(f"{f}: {key} is {value!r:.40}, not a name")
        prov = json.dumps(
            {
                "device": device,
                "engine": "vllm",
                "engine_version": str(data.get("vllm_version")) if data.get("vllm_version") is not None else None,
                "torch_version": None,
                "model": model,
                "dtype": str(data.get("dtype")) if data.get("dtype") is not None else None,
                "date": None,
                "command": f"vllm bench ({f.name})",
            }
        )
        if "latencies" in data or "avg_latency" in data:
            times = data.get("latencies") or [data.get("avg_latency")]
            if not isinstance(times, list):
                raise RealError(f"{f}: latencies is {times!r:.40}, not a list of seconds")
            for i, t in enumerate(_positive(f, "latencies", t) for t in times):
                rows.append(
                    {
                        "phase": Phase.ROLLOUT.value,
                        "engine": "vllm",
                        "model": model,
                        "device": device,
                        "concurrency": bs,
                        "prompt_tokens": p,
                        "response_tokens": r,
                        "tokens": bs * r if bs and r else None,
                        "sequences": bs,
                        "repeat": i,
                        "time_s": t,
                        "tokens_per_s": bs * r / t if bs and r else None,
                        "bytes": None,
                        "provenance": prov,
                    }
                )
        elif "elapsed_time" in data:
            n = _count(f, "num_requests", data.get("num_requests"))
            rate = data.get("tokens_per_second")
            rows.append(
                {
                    "phase": Phase.ROLLOUT.value,
                    "engine": "vllm",
                    "model": model,
                    "device": device,
                    "concurrency": bs or n,
                    "prompt_tokens": p,
                    "response_tokens": r,
                    "tokens": _count(f, "total_num_tokens", data.get("total_num_tokens")),
                    "sequences": n,
                    "repeat": 0,
                    "time_s": _positive(f, "elapsed_time", data["elapsed_time"]),
                    "tokens_per_s": None if rate is None else _positive(f, "tokens_per_second", rate),
                    "bytes": None,
                    "provenance": prov,
                }
            )
        else:
            raise RealError(
                f"{f}: neither vllm bench latency (latencies, avg_latency) nor throughput (elapsed_time) JSON"
            )
    return pd.DataFrame(rows, columns=list(BENCH_COLUMNS))
