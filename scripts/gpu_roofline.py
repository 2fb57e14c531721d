"""A catalog model's decode and prefill on one GPU in plain torch, against rlsim's roofline for the same shapes.

rlsim prices a decode iteration of batch b over K cached tokens as
``max((W + K kv) / (e_mem BW), (2 N_a b + 4 L H d K) / (e_dec F))`` (rlsim.run.costs), and a prefill of c tokens
as ``(2 N_a c + 2 L H d c^2) / (e_pre F)``, with the GPU's peaks and efficiency factors from
rlsim/catalog/gpus.yaml. This script measures what one GPU does with those bytes and FLOPs, in two parts:

``measure`` (torch and a CUDA GPU only; nothing from rlsim, so it runs on a bare GPU machine): the machine's
ceilings (a device copy, a read-only reduction, a large bf16 matrix product), then, for each model shape (read from
the model's config.json in rlsim/catalog/hf_configs), the decode step of the whole layer stack in bf16 with random
weights, replayed as a CUDA graph (as vLLM replays its decode steps): every layer's fused QKV, output, gate-up and
down projections, RMS norms, SiLU, grouped-query attention of each sequence's one new token against its cached K
and V, and the LM head, at batch sizes x context lengths, with attention as batched products and, where the torch
there has it, as one flash varlen call over a paged cache of 16-token pages (the kernel family vLLM's
FlashAttention backend runs; mixed steps then attend in that one call too; torch 2.11's kernel has neither
grouped-query attention nor paging, so there decode rows are folded over packed keys and mixed steps refused);
the same stack without attention;
the prefill of one sequence (causal attention through ``scaled_dot_product_attention``, graphed too); and a forward and
backward pass of the stack (the training side's matrix products). Each time is the median of interleaved
repeats timed with CUDA events. Writes ``gpu_roofline.json``.

``compare`` (rlsim): reads that file and prints, per measured case, what rlsim's roofline predicts for the same
model on the same GPU (its GPU term: the CPU overheads of an engine are not in a graph replay), the ratio, and the
efficiency the measurement implies (bytes or FLOPs over time over the catalog's peak) beside the one rlsim uses.

    python scripts/gpu_roofline.py measure -o out/          # on the GPU machine (68-85 s for the three models, H200)
    python scripts/gpu_roofline.py measure --device cpu --tiny -o out/   # the same code on a CPU, tiny shapes
    python scripts/gpu_roofline.py compare out/gpu_roofline.json --gpu H200 [--markdown]
    python scripts/gpu_roofline.py compare research/gpu_roofline/h200_run*.json --write

``compare --write`` writes docs/results/gpu_roofline.md whole (scripts/results_page.py): per recorded file its device,
torch and date, its ceilings, the ratio rlsim / measured by phase and every case.

No model is downloaded: the shapes come from the repository's config.json files and the weights are random
(their values do not change the time of a matrix product, except zeros, which are avoided).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import inspect
import itertools
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
CONFIGS = ROOT / "rlsim" / "catalog" / "hf_configs"
MODELS = ("Qwen3-8B", "Llama-3.1-8B", "Qwen2.5-7B")
BATCHES = (1, 8, 32, 64, 128, 256, 512, 1024)
CONTEXTS = (1024, 4096)
MAX_CACHED = 512 * 1024  # tokens of K and V held at once: 77 GB for Qwen3-8B (147,456 bytes a token)
MIXED = ((32, 1024, 512), (32, 1024, 2048), (256, 1024, 512), (256, 1024, 2048))  # batch, context, prefill chunk
PREFILL = (512, 2048, 8192)
TRAIN_TOKENS = (8192,)
STEP_MODEL = "Qwen2.5-3B"  # a whole training step with AdamW on one GPU: 3B x 16 bytes of weights, grads and states
STEP_TOKENS = (16384,)
TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "intermediate_size": 128, "vocab_size": 256}  # fmt: skip


PAGE = 16  # tokens a KV page holds (vLLM's default block size)


def flash_api(torch, device: str):
    """torch's flash variable-length attention (``torch.nn.attention.varlen.varlen_attn``, the kernel family vLLM's
    FlashAttention backend runs) and the keywords this torch's version takes; None off CUDA or without it."""
    if device != "cuda":
        return None
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError:
        return None
    return varlen_attn, set(inspect.signature(varlen_attn).parameters)


def flash_meta(
    torch, b: int, ctx: int, chunk: int, pages: int, device: str, paged: bool, seed: int = 0, group: int = 1
) -> dict:
    """The varlen call's arguments for ``b`` sequences decoding over ``ctx`` cached tokens each and one prompt chunk
    of ``chunk`` tokens (its own keys, causal): query offsets, and either a block table over a pool of ``pages``
    pages of ``PAGE`` tokens (each sequence's pages drawn at random, disjoint, as a paged cache scatters them) with
    the tokens each uses (``paged``), or key offsets into one packed key array. ``group`` > 1: each decoding
    sequence's query heads folded into ``group`` query rows of the KV heads' count (``Stack.step_flash``)."""
    q_lens = [group] * b + ([chunk] if chunk else [])
    k_lens = [ctx] * b + ([chunk] if chunk else [])
    out = {"cu_q": torch.tensor([0, *itertools.accumulate(q_lens)], dtype=torch.int32, device=device),
           "max_q": max(q_lens), "max_k": max(k_lens)}  # fmt: skip
    if not paged:
        out["cu_k"] = torch.tensor([0, *itertools.accumulate(k_lens)], dtype=torch.int32, device=device)
        return out
    per = [-(-n // PAGE) for n in k_lens]
    if sum(per) > pages:
        raise ValueError(f"{sum(per)} pages needed, {pages} in the pool")
    perm = torch.randperm(pages, generator=torch.Generator().manual_seed(seed))[: sum(per)]
    table = torch.zeros(len(per), max(per), dtype=torch.int32)
    for i, (start, n) in enumerate(zip(itertools.accumulate([0, *per[:-1]]), per)):
        table[i, :n] = perm[start : start + n]
    out.update(table=table.to(device), used=torch.tensor(k_lens, dtype=torch.int32, device=device))
    return out


def shape(name: str) -> dict:
    """The shape fields of a catalog model's config.json (head_dim from hidden / heads where it is absent)."""
    if name == "tiny":
        return dict(TINY)
    path = CONFIGS / name / "config.json"
    if not path.is_file():
        known = ", ".join(sorted(p.name for p in CONFIGS.iterdir() if p.is_dir()))
        raise SystemExit(f"gpu_roofline: no config for model {name!r} in {CONFIGS}; known: {known}")
    c = json.loads(path.read_text())
    keys = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "intermediate_size")
    out = {k: int(c[k]) for k in keys}
    out["head_dim"] = int(c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"])
    out["vocab_size"] = int(c["vocab_size"])
    return out


def counts(s: dict) -> dict:
    """Parameters of the stack as built here: per layer the projections and two norms; the LM head; the
    embedding table (held, never streamed by a decode step, which reads one row per sequence)."""
    h, d, q, kv = s["hidden_size"], s["head_dim"], s["num_attention_heads"], s["num_key_value_heads"]
    inter = s["intermediate_size"]
    layer = h * (q + 2 * kv) * d + q * d * h + h * 2 * inter + inter * h + 2 * h
    head = h * s["vocab_size"] + h
    return {"layer_params": layer, "layers_params": layer * s["num_hidden_layers"], "head_params": head,
            "embedding_params": h * s["vocab_size"]}  # fmt: skip


# -- measure (torch only) --------------------------------------------------------------------------------------


def _timer(torch, device: str):
    """A function that times ``fn`` ``n`` times and returns the seconds of each call."""
    if device == "cuda":

        def run(fn, n: int) -> list[float]:
            out = []
            for _ in range(n):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                b.synchronize()
                out.append(a.elapsed_time(b) / 1e3)
            return out

        return run

    def run_cpu(fn, n: int) -> list[float]:
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
        return out

    return run_cpu


class Stack:
    """The decoder's weights in ``dtype`` on ``device``: random normal values scaled like an initialised model's
    (standard deviation 0.02), norms at one."""

    def __init__(self, torch, s: dict, device: str, dtype, requires_grad: bool = False):
        self.t, self.s, self.device, self.dtype = torch, s, device, dtype
        h, d, q, kv, inter = (s[k] for k in ("hidden_size", "head_dim", "num_attention_heads",
                                               "num_key_value_heads", "intermediate_size"))  # fmt: skip
        g = torch.Generator(device=device).manual_seed(0)

        def w(*size):
            x = torch.empty(*size, device=device, dtype=dtype)
            x.normal_(0.0, 0.02, generator=g)
            return x.requires_grad_(requires_grad)

        self.layers = [
            {"qkv": w(h, (q + 2 * kv) * d), "o": w(q * d, h), "gu": w(h, 2 * inter), "down": w(inter, h),
             "n1": torch.ones(h, device=device, dtype=dtype), "n2": torch.ones(h, device=device, dtype=dtype)}
            for _ in range(s["num_hidden_layers"])
        ]  # fmt: skip
        self.head = w(h, s["vocab_size"])
        self.norm = torch.ones(h, device=device, dtype=dtype)

    def _rms(self, x, weight):
        t = self.t
        return x * t.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * weight

    def _mlp(self, x, p):
        t = self.t
        gate, up = (self._rms(x, p["n2"]) @ p["gu"]).chunk(2, dim=-1)
        return x + (t.nn.functional.silu(gate) * up) @ p["down"]

    def step(self, x, caches, prefill: int = 0):
        """One engine step over the rows of x (tokens, hidden): the first rows each a sequence's new token decoding
        against its cached K and V (``caches``: a (K, V) pair per layer of (batch, kv_heads, context, head_dim);
        None: no attention for them, the weights' share alone), the last ``prefill`` rows one sequence's prompt
        chunk from position 0, attending causally. The projections run over all rows at once, as a
        chunked-prefill engine's step does. Returns the logits."""
        t, s = self.t, self.s
        q_heads, kv, d = s["num_attention_heads"], s["num_key_value_heads"], s["head_dim"]
        b = x.shape[0] - prefill
        for i, p in enumerate(self.layers):
            qkv = self._rms(x, p["n1"]) @ p["qkv"]
            parts = []
            if b:
                q = qkv[:b, : q_heads * d]
                if caches is not None:
                    k, v = caches[i]
                    # grouped-query attention of one query per sequence: (B, kv, group, d) against (B, kv, L, d)
                    w = t.softmax((q.reshape(b, kv, q_heads // kv, d) @ k.transpose(-1, -2)) * d**-0.5, dim=-1)
                    q = (w @ v).reshape(b, q_heads * d)
                parts.append(q)
            if prefill:
                qp, kp, vp = qkv[b:].split([q_heads * d, kv * d, kv * d], dim=-1)
                qp = qp.reshape(prefill, q_heads, d).transpose(0, 1)[None]
                kp = kp.reshape(prefill, kv, d).transpose(0, 1)[None].repeat_interleave(q_heads // kv, dim=1)
                vp = vp.reshape(prefill, kv, d).transpose(0, 1)[None].repeat_interleave(q_heads // kv, dim=1)
                o = t.nn.functional.scaled_dot_product_attention(qp, kp, vp, is_causal=True)
                parts.append(o[0].transpose(0, 1).reshape(prefill, q_heads * d))
            x = x + (parts[0] if len(parts) == 1 else t.cat(parts)) @ p["o"]
            x = self._mlp(x, p)
        return self._rms(x, self.norm) @ self.head

    def step_flash(self, x, pools, meta: dict, api):
        """The same step with every row's attention in one flash varlen call, as vLLM's FlashAttention backend
        runs a batch: ``pools`` a (K, V) pair per layer (pages of ``PAGE`` tokens with ``meta``'s block table, or
        packed keys), the decode rows' queries one token each against their cached keys, a prompt chunk's causal
        (bottom-right aligned: a one-token query sees every key). Where the kernel takes no grouped-query
        attention (torch 2.11's), a decode step folds each sequence's query heads into rows: the ``group`` heads
        that share a KV head become ``group`` query rows against the KV heads, attending to every key (the
        pack-GQA layout of decode kernels: the same keys read once, the same result); mixed steps need it."""
        s = self.s
        q_heads, kv, d = s["num_attention_heads"], s["num_key_value_heads"], s["head_dim"]
        group = q_heads // kv
        fn, params = api
        fold = "enable_gqa" not in params
        kw = {} if fold else {"enable_gqa": True}
        causal = (-1, -1) if fold else (-1, 0)
        if "window_size" in params:
            kw["window_size"] = causal
        elif not fold:
            kw["is_causal"] = True
        if "table" in meta:
            kw.update(seqused_k=meta["used"], block_table=meta["table"])
        b = x.shape[0]
        if fold and meta["cu_q"].shape[0] != b + 1:
            raise ValueError("a mixed step needs a kernel with grouped-query attention (enable_gqa)")
        for i, p in enumerate(self.layers):
            qkv = self._rms(x, p["n1"]) @ p["qkv"]
            q = qkv[:, : q_heads * d]
            if fold:  # query head h * group + j -> row j of the sequence, KV head h
                q = q.reshape(b, kv, group, d).transpose(1, 2).reshape(b * group, kv, d)
            else:
                q = q.reshape(-1, q_heads, d).contiguous()
            k, v = pools[i]
            o = fn(q, k, v, meta["cu_q"], meta.get("cu_k"), meta["max_q"], meta["max_k"], **kw)
            if fold:
                o = o.reshape(b, group, kv, d).transpose(1, 2)
            x = x + o.reshape(-1, q_heads * d) @ p["o"]
            x = self._mlp(x, p)
        return self._rms(x, self.norm) @ self.head

    def decode(self, x, caches):
        """A decode step of the batch x (B, hidden)."""
        return self.step(x, caches)

    def forward(self, x):
        """A causal pass over one sequence x (c, hidden): the prefill, or the training side's forward."""
        return self.step(x, None, prefill=x.shape[0])


def _graphed(torch, fn, device: str):
    """``fn`` captured as a CUDA graph (its replay), or ``fn`` itself off CUDA."""
    if device != "cuda":
        return fn
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()

    def replay(graph=graph, captured=fn):
        # ``captured`` holds fn and so its inputs, which the graph reads at the addresses it captured (without it
        # the first H200 run faulted on a replay, Xid 31: an input freed and its memory unmapped, it seems)
        graph.replay()

    return replay


def _ceilings(torch, device: str, timer, repeats: int, tiny: bool) -> dict:
    n = 2**12 if tiny else 2**30  # bf16 elements: 2 GiB on a GPU
    a = torch.empty(n, device=device, dtype=torch.bfloat16).normal_()
    b = torch.empty_like(a)
    m = 64 if tiny else 8192
    x = torch.randn(m, m, device=device, dtype=torch.bfloat16)
    y = torch.randn(m, m, device=device, dtype=torch.bfloat16)
    cases = {
        "copy": (lambda: b.copy_(a), 2 * 2 * n, 0),
        "read": (lambda: a.sum(dtype=torch.float32), 2 * n, 0),
        "matmul": (lambda: x @ y, 3 * 2 * m * m, 2 * m**3),
    }
    if device == "cuda":  # the host link (weight sync through the host, offloaded optimizers): pinned copies
        host = torch.empty(n // 2, dtype=torch.bfloat16, pin_memory=True).normal_()
        dev = torch.empty(n // 2, device=device, dtype=torch.bfloat16)
        cases["host_to_device"] = (lambda: dev.copy_(host, non_blocking=True), n, 0)
        cases["device_to_host"] = (lambda: host.copy_(dev, non_blocking=True), n, 0)
    times = {k: [] for k in cases}
    for _ in range(2):
        for fn, _b, _f in cases.values():
            fn()
    for _ in range(repeats):  # interleaved rounds
        for k, (fn, _b, _f) in cases.items():
            times[k] += timer(fn, 1)
    out = {}
    for k, (_fn, nbytes, flops) in cases.items():
        sec = statistics.median(times[k])
        out[k] = {"seconds": sec, "bytes": nbytes, "flops": flops, "bytes_per_s": nbytes / sec,
                  "flops_per_s": flops / sec, "spread": max(times[k]) / min(times[k])}  # fmt: skip
    return out


def _time_rounds(torch, rows: list[dict], fns: list, timer, repeats: int, inference: bool = True) -> None:
    """One warm call of each case, then ``repeats`` interleaved rounds over them all (a slow spell of the machine
    hits every case alike), each time appended to its row's ``times``."""
    with torch.inference_mode() if inference else contextlib.nullcontext():
        for fn in fns:
            fn()
        for _ in range(repeats):
            for row, fn in zip(rows, fns):
                row["times"] += timer(fn, 1)


def _decode_cases(torch, stack: Stack, device: str, timer, grid: dict, repeats: int) -> list[dict]:
    """Each batch without attention (the weights' share) and at each context whose cache (batch x context tokens)
    fits ``grid["max_cached"]``, and the mixed steps (a decode batch and one prefill chunk), with attention as
    batched products (``bmm``) and again, where this torch has it, as one flash varlen call over a paged cache
    (``flash-paged``; ``flash-packed`` if the paged kernel refuses); each case a captured graph, all timed in
    interleaved rounds. The flash cases read every key from the cache, the prompt chunk's too (whose values there
    are not the chunk's: the work is the same, the numbers are not a model's)."""
    s = stack.s
    kv, d, layers = s["num_key_value_heads"], s["head_dim"], s["num_hidden_layers"]
    cases = [(b, ctx, 0) for b in grid["batches"] for ctx in (0, *grid["contexts"]) if b * ctx <= grid["max_cached"]]
    cases += list(grid["mixed"])
    api = flash_api(torch, device)
    impl = "flash-paged" if api is not None and "block_table" in api[1] else "flash-packed"
    # the flash variants of every case with attention, after the others (a failure there leaves those measured)
    cases = [(b, ctx, chunk, "bmm") for b, ctx, chunk in cases]
    cases += [(b, ctx, chunk, impl) for b, ctx, chunk, _ in cases if api is not None and ctx > 0]
    most = max(b * ctx for b, ctx, _, _ in cases) + max(chunk for _, _, chunk, _ in cases) + PAGE

    def buffer():  # one flat K and one flat V per layer for the largest case, viewed as (B, kv heads, context, d),
        # as pages of (PAGE, kv heads, d) or as packed (tokens, kv heads, d): random values, any view will do
        return torch.empty(most * kv * d, device=device, dtype=stack.dtype).normal_()

    flat = [(buffer(), buffer()) for _ in range(layers)]
    pages = most // PAGE

    def capture(b: int, ctx: int, chunk: int, how: str):
        x = torch.randn(b + chunk, s["hidden_size"], device=device, dtype=stack.dtype)
        print(f"  capture batch {b} context {ctx} chunk {chunk} {how}", flush=True)
        if how == "bmm":
            n = b * kv * ctx * d
            view = None if ctx == 0 else [(k[:n].view(b, kv, ctx, d), v[:n].view(b, kv, ctx, d)) for k, v in flat]

            def run(x=x, view=view, chunk=chunk):
                return stack.step(x, view, chunk)
        else:
            paged = how == "flash-paged"
            group = 1 if "enable_gqa" in api[1] else s["num_attention_heads"] // kv  # (Stack.step_flash's fold)
            meta = flash_meta(torch, b, ctx, chunk, pages, device, paged, group=group)
            shape_ = (pages, PAGE, kv, d) if paged else (pages * PAGE, kv, d)
            pools = [(k[: pages * PAGE * kv * d].view(shape_), v[: pages * PAGE * kv * d].view(shape_))
                     for k, v in flat]  # fmt: skip

            def run(x=x, pools=pools, meta=meta):
                return stack.step_flash(x, pools, meta, api)

        with torch.inference_mode():
            fn = _graphed(torch, run, device)
            fn()
        if device == "cuda":
            torch.cuda.synchronize()
        return fn

    rows, fns, failed = [], [], []
    for b, ctx, chunk, how in cases:
        kind = {
            "phase": "mixed" if chunk else "decode",
            "batch": b,
            "context": ctx,
            **({"tokens": chunk} if chunk else {}),
        }
        if how == "flash-paged" and failed:
            how = "flash-packed"  # the paged kernel refused (its page size, say): the packed one for the rest
        try:
            fn = capture(b, ctx, chunk, how)
        except Exception as exc:  # a flash variant this torch cannot run: recorded, the rest measured
            if how == "bmm":
                raise
            print(f"  {how} failed: {type(exc).__name__}: {exc}", flush=True)
            failed.append({**kind, "attention_impl": how, "error": f"{type(exc).__name__}: {exc}"[:300]})
            if how != "flash-paged":
                break
            try:
                how = "flash-packed"
                fn = capture(b, ctx, chunk, how)
            except Exception as exc2:
                print(f"  {how} failed: {type(exc2).__name__}: {exc2}", flush=True)
                failed.append({**kind, "attention_impl": how, "error": f"{type(exc2).__name__}: {exc2}"[:300]})
                break
        row = {**kind, "attention": ctx > 0, **({"attention_impl": how} if ctx > 0 or chunk else {})}
        rows.append({**row, "times": []})
        fns.append(fn)
    _time_rounds(torch, rows, fns, timer, repeats)
    return rows + failed


def _prefill_cases(torch, stack: Stack, device: str, timer, lengths, repeats: int) -> list[dict]:
    rows, fns = [], []
    for c in lengths:
        x = torch.randn(c, stack.s["hidden_size"], device=device, dtype=stack.dtype)
        rows.append({"phase": "prefill", "tokens": c, "times": []})
        with torch.inference_mode():
            fns.append(_graphed(torch, lambda x=x: stack.forward(x), device))
    _time_rounds(torch, rows, fns, timer, repeats)
    return rows


def _train_cases(torch, s: dict, device: str, timer, tokens, repeats: int) -> list[dict]:
    """Forward and backward of the stack over sequences of 4,096 tokens (gradients to the weights)."""
    stack = Stack(torch, s, device, torch.bfloat16, requires_grad=True)
    seq = min(4096, min(tokens))
    rows, fns = [], []
    for n in tokens:
        xs = [torch.randn(seq, s["hidden_size"], device=device, dtype=torch.bfloat16) for _ in range(n // seq)]

        def step(xs=xs):
            for x in xs:
                stack.forward(x).float().square().mean().backward()

        rows.append({"phase": "train", "tokens": seq * len(xs), "sequence": seq, "times": []})
        fns.append(step)
    _time_rounds(torch, rows, fns, timer, repeats, inference=False)
    return rows


def _step_cases(torch, s: dict, device: str, timer, tokens, repeats: int) -> list[dict]:
    """A whole training step as one GPU's trainer runs it: fp32 master weights, the forward and backward under bf16
    autocast (the matrix products in bf16, the weights cast for them as FSDP's mixed precision does), one AdamW step
    over every weight (fused on CUDA); and that optimizer step alone."""
    stack = Stack(torch, s, device, torch.float32, requires_grad=True)
    params = [w for layer in stack.layers for w in layer.values() if w.requires_grad] + [stack.head]
    opt = torch.optim.AdamW(params, lr=1e-7, fused=device == "cuda")
    n_params = sum(w.numel() for w in params)
    seq = min(4096, min(tokens))
    rows, fns = [], []
    for n in tokens:
        xs = [torch.randn(seq, s["hidden_size"], device=device) for _ in range(n // seq)]

        def step(xs=xs):
            for x in xs:
                with torch.autocast(device_type=device, dtype=torch.bfloat16):
                    loss = stack.forward(x).float().square().mean()
                loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=False)

        rows.append({"phase": "train_step", "tokens": seq * len(xs), "sequence": seq, "params": n_params, "times": []})
        fns.append(step)
    rows.append({"phase": "optimizer", "params": n_params, "times": []})
    fns.append(opt.step)
    _time_rounds(torch, rows, fns, timer, repeats, inference=False)
    return rows


def _finish(rows: list[dict]) -> list[dict]:
    for row in rows:
        if "times" not in row:  # a case that could not run (its error recorded)
            continue
        times = row.pop("times")
        row.update(seconds=statistics.median(times), spread=max(times) / min(times), repeats=len(times))
    return rows


def measure(args: argparse.Namespace, save) -> dict:
    """Every part in turn; ``save(out)`` after each, so that a part that fails (its error recorded) or a run cut
    short keeps what was measured before it."""
    import torch

    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("gpu_roofline measure: no CUDA device here; run it on a GPU, or with --device cpu --tiny")
    timer = _timer(torch, device)
    models = ["tiny"] if args.tiny else args.model
    grid = (
        {"batches": (1, 4), "contexts": (8, 16), "max_cached": 32, "mixed": ((2, 8, 4), (4, 8, 8))}
        if args.tiny
        else {"batches": BATCHES, "contexts": CONTEXTS, "max_cached": MAX_CACHED, "mixed": MIXED}
    )
    prefill = (8, 32) if args.tiny else PREFILL
    train = (16,) if args.tiny else TRAIN_TOKENS
    out = {
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "cuda": getattr(torch.version, "cuda", None),
        "memory_bytes": torch.cuda.get_device_properties(0).total_memory if device == "cuda" else None,
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "command": " ".join(sys.argv),
        "repeats": args.repeats,
        "ceilings": {},
        "models": {},
        "errors": [],
    }

    def part(label: str, fn):
        t0 = time.perf_counter()
        try:
            result = fn()
        except Exception as exc:  # recorded, and the next part runs: device time is scarce
            out["errors"].append(f"{label}: {type(exc).__name__}: {exc}")
            print(f"{label}: FAILED {type(exc).__name__}: {exc}", flush=True)
            result = None
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        print(f"{label}: {time.perf_counter() - t0:.1f} s", flush=True)
        return result

    out["ceilings"] = part("ceilings", lambda: _ceilings(torch, device, timer, args.repeats, args.tiny)) or {}
    for k, v in out["ceilings"].items():
        print(f"  {k}: {v['bytes_per_s'] / 1e12:.2f} TB/s, {v['flops_per_s'] / 1e12:.0f} TFLOP/s", flush=True)
    save(out)
    for name in models:
        s = shape(name)
        entry = out["models"][name] = {"shape": s, "counts": counts(s), "rows": []}
        stack = part(f"{name} weights", lambda s=s: Stack(torch, s, device, torch.bfloat16))
        if stack is not None:
            for label, fn in (
                ("decode", lambda st=stack: _decode_cases(torch, st, device, timer, grid, args.repeats)),
                ("prefill", lambda st=stack: _prefill_cases(torch, st, device, timer, prefill, args.repeats)),
            ):  # fmt: skip
                entry["rows"] += _finish(part(f"{name} {label}", fn) or [])
                save(out)
        stack = None  # its weights freed before the training pass builds its own
        rows = part(f"{name} train", lambda s=s: _train_cases(torch, s, device, timer, train, 3))
        entry["rows"] += _finish(rows or [])
        save(out)
    if args.step_model != "none":
        name = "tiny" if args.tiny else args.step_model
        s = shape(name)
        entry = out["models"].setdefault(name, {"shape": s, "counts": counts(s), "rows": []})
        tokens = (16,) if args.tiny else args.step_tokens
        entry["rows"] += _finish(part(f"{name} step", lambda: _step_cases(torch, s, device, timer, tokens, 3)) or [])
        save(out)
    return out


# -- compare (rlsim) --------------------------------------------------------------------------------------------


@functools.cache
def _scenario(name: str, gpu: str, trainer: bool = False):
    """One ``gpu`` with model ``name`` (tensor parallelism 1, max_num_seqs covering every batch measured); for
    ``trainer``, FSDP with no activation recompute and the optimizer on the GPU, as the measured step runs (else the
    optimizer offloaded, so that an 8B model's training fits the check of the scenario's memory)."""
    import rlsim

    over = {"model": name, "hardware.gpu": gpu, "hardware.num_gpus": 1, "engine.tensor_parallel_size": 1,
            "engine.max_num_seqs": max(BATCHES), "training.offload_optimizer": not trainer}  # fmt: skip
    if trainer:
        over.update({"training.backend": "fsdp", "training.activation_recompute": "none"})
    return rlsim.load_scenario(ROOT / "scenarios" / "dense8b_h100_colocated.yaml", over)


def _gpu_terms(scenario):
    """The engine kernel's decode and prefill coefficients for ``scenario`` with the CPU overheads taken out: the
    GPU work a graph replay measures."""
    from rlsim.run.costs import RooflineCostModel

    cost = RooflineCostModel.from_scenario(scenario)
    dc, pc = cost.decode_coefficients(), cost.prefill_coefficients()
    zero = np.zeros_like(dc.mem_intercept_s)
    return dataclasses.replace(dc, overhead_s=zero, floor_s=None), dataclasses.replace(pc, overhead_s=0.0)


def _train_flops(m, tokens: float, sequence: float) -> float:
    """Forward and backward FLOPs of ``tokens`` in sequences of ``sequence`` (3 x the forward's matrix products and
    causal attention), rlsim's count (rlsim.run.costs)."""
    from rlsim.run.costs import attention_flops_per_token_context

    return 3.0 * (2.0 * m.num_active_params * tokens + 0.5 * attention_flops_per_token_context(m) * sequence * tokens)


def predictions(data: dict, gpu: str) -> list[dict]:
    """Each measured case beside what rlsim's engine kernel prices it at on ``gpu`` (its iteration cost law,
    rlsim.engine.iteration, the CPU overheads out), or rlsim's training phase; with the efficiency each implies."""
    from rlsim.engine.iteration import decode_iteration_s, mixed_iteration_s, prefill_s
    from rlsim.run.costs import engine_coefficients

    out = []
    for name, model in data["models"].items():
        if not (CONFIGS / name / "config.json").is_file():
            print(f"  {name}: not a catalog model, no prediction (its measured rows only)")
            out += [dict(row, model=name, gpu=gpu) for row in model["rows"]]
            continue
        scenario = _scenario(name, gpu)
        g, c, m = scenario.hardware.gpu, scenario.costs, scenario.model
        e_mem = engine_coefficients(scenario)["decode_memory_efficiency"] * g.memory_efficiency_factor
        peak = g.bf16_flops_per_s
        dc, pc = _gpu_terms(scenario)
        per_kv = scenario.kv_bytes_per_token
        cnt = model["counts"]
        streamed = 2.0 * (cnt["layers_params"] + cnt["head_params"])  # what the graph reads of the weights
        for row in model["rows"]:
            r = dict(row, model=name, gpu=gpu)
            phase = row["phase"]
            if "error" in row:
                pass
            elif phase in ("decode", "mixed"):
                b, k_tokens = row["batch"], row["batch"] * row["context"]
                chunks = [(0, row["tokens"])] if phase == "mixed" else []
                r["rlsim_s"] = mixed_iteration_s(dc, pc, b, k_tokens, chunks)
                memory = dc.mem_intercept_s[b] + dc.mem_slope_s_per_token * k_tokens
                r["rlsim_bound"] = "memory" if r["rlsim_s"] <= memory else "compute"
                if phase == "decode":
                    assert r["rlsim_s"] == decode_iteration_s(dc, b, k_tokens)  # the same law without a chunk
                    # the e_mem that would make rlsim's memory line the measurement (rlsim counts the embedding
                    # table among the bytes read), and the bandwidth the graph reached on the bytes it streams
                    r["implied_memory_efficiency"] = e_mem * memory / row["seconds"]
                    r["achieved_tb_per_s"] = (streamed + k_tokens * per_kv) / row["seconds"] / 1e12
                    r["rlsim_memory_efficiency"] = e_mem
            elif phase == "prefill":
                tok = row["tokens"]
                r["rlsim_s"] = prefill_s(pc, [tok])
                r["implied_compute_efficiency"] = _train_flops(m, tok, tok) / 3.0 / row["seconds"] / peak
                r["rlsim_compute_efficiency"] = c.prefill_compute_efficiency * g.gemm_efficiency_factor
            elif phase in ("train_step", "optimizer"):
                r.update(_step_prediction(row, name, gpu))
            else:  # train: forward and backward only
                r["implied_compute_efficiency"] = (
                    _train_flops(m, row["tokens"], row["sequence"]) / row["seconds"] / peak
                )
                r["rlsim_compute_efficiency"] = c.train_compute_efficiency * g.train_efficiency_factor
            if "rlsim_s" in r:
                r["ratio"] = r["rlsim_s"] / row["seconds"]
            out.append(r)
    return out


def _step_prediction(row: dict, name: str, gpu: str) -> dict:
    """rlsim's training phase (rlsim.trainer.training) for a ``train_step`` row, or its optimizer part for an
    ``optimizer`` row, on the scenario of :func:`_scenario` for a trainer."""
    from rlsim.trainer import training

    scenario = _scenario(name, gpu, trainer=True)
    if row["phase"] == "optimizer":
        return {"rlsim_s": training.phase_time(scenario, scenario.model, 1.0, 1.0).optimizer_s}
    tok, seq = row["tokens"], row["sequence"]
    t = training.phase_time(scenario, scenario.model, tok, float(seq * tok), num_sequences=tok // seq)
    g = scenario.hardware.gpu
    return {
        "rlsim_s": t.total_s,
        "rlsim_compute_s": t.compute_s,
        "rlsim_optimizer_s": t.optimizer_s,
        "implied_compute_efficiency": _train_flops(scenario.model, tok, seq) / row["seconds"] / g.bf16_flops_per_s,
        "rlsim_compute_efficiency": scenario.costs.train_compute_efficiency * g.train_efficiency_factor,
    }


def _fmt(x, digits=3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


COLUMNS = ("model", "phase", "attention_impl", "batch", "context", "tokens", "seconds", "rlsim_s", "ratio",
           "rlsim_compute_s", "rlsim_bound", "achieved_tb_per_s", "implied_memory_efficiency",
           "rlsim_memory_efficiency", "implied_compute_efficiency", "rlsim_compute_efficiency", "spread")  # fmt: skip


def _read(name: str) -> dict:
    path = Path(name)
    if not path.is_file():
        raise SystemExit(f"gpu_roofline compare: no file {path}; write it with `gpu_roofline.py measure -o DIR`")
    return json.loads(path.read_text())


def _table(rows: list[dict]) -> list[str]:
    """Markdown lines of ``rows`` in :data:`COLUMNS`."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    return lines + ["| " + " | ".join(_fmt(r.get(c)) for c in COLUMNS) + " |" for r in rows]


def _ratios(rows: list[dict]) -> list[str]:
    """Markdown lines: per phase and attention kernel, the cases and the ratio rlsim / measured (median, range)."""
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        if r.get("ratio") is not None:
            groups.setdefault((r["phase"], r.get("attention_impl") or ""), []).append(r["ratio"])
    lines = ["| phase | attention | cases | rlsim / measured: median | range |", "|---|---|---|---|---|"]
    for (phase, impl), ratios in groups.items():
        lines.append(f"| {phase} | {impl} | {len(ratios)} | {statistics.median(ratios):.3g} | "
                     f"{min(ratios):.3g}-{max(ratios):.3g} |")  # fmt: skip
    return lines


def page(names: list[str], gpu: str, cmd: str, when: str | None = None, where: str | None = None) -> list[str]:
    """The whole docs/results page for the recorded files ``names``: for each, its device, torch and date, its
    ceilings, the ratios by phase (:func:`_ratios`) and every case (:func:`_table`) against rlsim's roofline for
    ``gpu``."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from results_page import header

    lines = header(f"rlsim's roofline against measured GPU steps ({gpu})", cmd, when, where, "rlsim's side computed")
    lines += [
        "Each file was measured by `python scripts/gpu_roofline.py measure` on the GPU named in its section (torch "
        "only, CUDA graphs, median of interleaved repeats); rlsim's side is its roofline GPU term for the same model "
        "on the same GPU (no CPU overheads). A ratio is rlsim / measured. research/gpu_roofline/README.md "
        "says what the numbers mean for the model.",
    ]
    for name in names:
        data = _read(name)
        rows = predictions(data, gpu)
        lines += ["", f"## {Path(name).name}: {data['device']}, torch {data['torch']}, measured {data['date']}", ""]
        lines += ["| ceiling | TB/s | TFLOP/s | spread |", "|---|---|---|---|"]
        for k, v in data["ceilings"].items():
            tb = f"{v['bytes_per_s'] / 1e12:.2f}" if k != "matmul" else ""
            tf = f"{v['flops_per_s'] / 1e12:.0f}" if k == "matmul" else ""
            lines.append(f"| {k} | {tb} | {tf} | {v['spread']:.2f} |")
        lines += ["", f"Memory CUDA reports: {data['memory_bytes']:,} bytes.", ""] + _ratios(rows) + [""] + _table(rows)
    return lines


def compare(args: argparse.Namespace) -> int:
    if args.write:
        from results_page import command, write

        target = write(RESULTS / "gpu_roofline.md", page(args.file, args.gpu, command("gpu_roofline", args.argv)))
        print(f"wrote {target}")
        return 0
    for name in args.file:
        data = _read(name)
        rows = predictions(data, args.gpu)
        print(f"{data['device']}, torch {data['torch']}, {data['date']}; rlsim's roofline for {args.gpu}")
        for k, v in data["ceilings"].items():
            print(f"  ceiling {k}: {v['bytes_per_s'] / 1e12:.2f} TB/s, {v['flops_per_s'] / 1e12:.0f} TFLOP/s "
                  f"(spread {v['spread']:.2f})")  # fmt: skip
        if args.markdown:
            print("\n".join(_table(rows)))
        else:
            for r in rows:
                print("  " + ", ".join(f"{c}={_fmt(r.get(c))}" for c in COLUMNS if r.get(c) is not None))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="time the shapes on this machine's GPU (torch only)")
    m.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    m.add_argument("--tiny", action="store_true", help="a tiny shape and small cases (to try the code on a CPU)")
    m.add_argument(
        "--model", action="append", help=f"catalog model (repeatable; default {', '.join(MODELS)}; none: only the step)"
    )
    m.add_argument("--repeats", type=int, default=9, help="timed repeats per case, interleaved (median taken)")
    m.add_argument("--step-model", default=STEP_MODEL, help="catalog model of the whole-training-step part, or none")
    m.add_argument(
        "--step-tokens",
        default=",".join(map(str, STEP_TOKENS)),
        help="tokens of each whole training step timed, in sequences of 4,096 (comma list)",
    )
    m.add_argument("-o", "--output", type=Path, required=True, help="directory for gpu_roofline.json")
    c = sub.add_parser("compare", help="the measurement beside rlsim's roofline")
    c.add_argument("file", nargs="+", help="gpu_roofline.json files written by measure")
    c.add_argument("--gpu", default="H200")
    c.add_argument("--markdown", action="store_true")
    c.add_argument("--write", action="store_true", help="write docs/results/gpu_roofline.md from the files")
    args = p.parse_args(argv)
    if args.cmd == "compare":
        args.argv = sys.argv[1:] if argv is None else argv
        sys.path.insert(0, str(ROOT / "scripts"))
        return compare(args)
    args.model = [] if args.model == ["none"] else (args.model or list(MODELS))
    try:
        args.step_tokens = tuple(int(t) for t in args.step_tokens.split(","))
    except ValueError:
        raise SystemExit(
            f"gpu_roofline: --step-tokens {args.step_tokens!r}: give whole numbers, e.g. 8192,32768"
        ) from None
    for name in args.model + ([] if args.step_model == "none" else [args.step_model]):
        shape(name)  # a typo fails before the GPU is touched
    args.output.mkdir(parents=True, exist_ok=True)
    target = args.output / "gpu_roofline.json"
    data = measure(args, lambda out: target.write_text(json.dumps(out, indent=1)))
    print(f"wrote {target}" + (f"; {len(data['errors'])} parts failed" if data["errors"] else ""))
    return 1 if data["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
