"""``rlsim-real``: real RL runs and microbenchmarks. Heavy imports (torch, transformers, vllm) happen only inside
the commands, so ``rlsim-real --help`` is instant.

``rlsim-real train --task T --algo grpo|ppo --engine hf|vllm --prompts-per-step P --group-size G --lr-rule R
--target X --max-steps N [--model M] [--openrlhf-log FILE] -o RUN_DIR``
``rlsim-real bench generation|train|sync|optimizer|detokenize --engine hf|vllm [--model M] [-o DIR]``
``rlsim-real import-vllm-bench FILE... -o DIR``: read ``vllm bench latency|throughput`` JSON into the bench table.

Bad input prints one line ``rlsim-real: error: ...`` and exits 2. ``train`` prints its summary as JSON on stdout
and nothing else: progress, vLLM's log lines (``VLLM_LOGGING_STREAM`` defaults to stderr here) and whatever the
libraries print while training go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from real.config import add_train_arguments, config_from_args
from real.detokenize import bench_detokenize, per_token_s, table_vllm_version
from real.engines import route_vllm_logs_to_stderr
from real.errors import RealError
from real.offload import bench_optimizer
from real.openrlhf_log import write_openrlhf_log
from rlsim.cli import parse, run_command


def _add_train(sub: Any) -> None:
    p = sub.add_parser("train", help="a real GRPO or PPO run (writes the run log, checkpoints, config)")
    add_train_arguments(p)
    _add_threads(p)
    p.add_argument(
        "--openrlhf-log",
        type=Path,
        help="also write the step timings to this file as OpenRLHF's metrics log (real.openrlhf_log): this run in "
        "OpenRLHF's format, not an OpenRLHF run",
    )
    p.set_defaults(func=cmd_train)


def _add_threads(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--threads",
        default="auto",
        help="torch threads: auto (one per core other processes leave free at the start, measured) or a number",
    )


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send whatever the libraries write to stdout while the block runs (Python's ``print`` and the C level's
    file descriptor 1: vLLM, torch, oneDNN) to stderr, so that stdout carries only the command's result."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()  # what a library buffered for stdout during the block belongs to stderr too
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)


def cmd_train(args: argparse.Namespace) -> int:
    # here, not at the top: it loads numpy (start-up time)
    from real.train import train

    cfg = config_from_args(args)
    bar = None
    if sys.stderr.isatty():
        # here, not at the top: it loads tqdm (start-up time)
        from tqdm import tqdm

        bar = tqdm(total=cfg.max_steps, unit="step", desc="train", file=sys.stderr)

    def progress(step: int, rec: dict[str, Any]) -> None:
        tokens = rec["response_tokens"] / max(rec["timing_s"].get("rollout", 0.0), 1e-9)
        post = {"reward": f"{rec['reward_mean']:.3f}", "gen tok/s": f"{tokens:.0f}"}
        if rec["eval_metric"] is not None:
            post["eval"] = f"{rec['eval_metric']:.3f}"
        if bar is not None:
            bar.n = step
            bar.set_postfix(post)
        else:
            print(f"step {step}: " + ", ".join(f"{k} {v}" for k, v in post.items()), file=sys.stderr, flush=True)

    try:
        with _stdout_to_stderr():
            summary = train(cfg, args.output, progress, args.threads)
    finally:
        if bar is not None:
            bar.close()
    if args.openrlhf_log is not None:
        write_openrlhf_log(Path(args.output) / "runlog.jsonl", args.openrlhf_log)
    print(json.dumps(summary, indent=2, sort_keys=True))
    return 0


def _add_bench(sub: Any) -> None:
    p = sub.add_parser("bench", help="microbenchmarks: generation, train, sync, optimizer, detokenize")
    p.add_argument("kind", choices=("generation", "train", "sync", "optimizer", "detokenize"))
    p.add_argument("--engine", default="hf", choices=("hf", "vllm"))
    p.add_argument(
        "--model",
        action="append",
        help="'tiny' (default), 'tiny:hidden_size=256', a local HF folder, or 'smollm2'; sync and optimizer take it "
        "several times (model sizes, timed interleaved)",
    )
    # the defaults are a grid that fits well (README: held-out error per phase): two prompt and two response
    # lengths at five batch sizes separate the prefill, decode and per-sequence terms; seven repeats per
    # configuration, interleaved, give the medians the fit uses (with 5, the log-prob fit came out at 10.2%)
    p.add_argument("--concurrency", default="1,4,16,64,256", help="generation: sequences per batch (comma list)")
    p.add_argument("--prompt-tokens", default="8,32", help="generation: prompt lengths (comma list)")
    p.add_argument("--response-tokens", default="8,32", help="generation: response lengths, EOS ignored (comma list)")
    p.add_argument("--tokens", default="512,1024,2048,3072,4096,6144", help="train: tokens per step (comma list)")
    p.add_argument("--seq-len", type=int, default=32, help="train: tokens per sequence")
    p.add_argument("--steps", type=int, default=32, help="detokenize: tokens per sequence (one per step)")
    p.add_argument(
        "--micro-batches", type=int, default=2, help="train: gradient accumulation (rlsim-real train's default)"
    )
    p.add_argument("--repeats", type=int, default=7, help="timed repeats per configuration (the fit takes medians)")
    p.add_argument(
        "--number",
        type=int,
        default=None,
        help="sync: loads per repeat, timed together and averaged (default 10: a sub-millisecond sync is noise "
        "otherwise); 1 for the other benches",
    )
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("-o", "--output", type=Path, help="directory for bench.csv, bench.parquet, provenance.json")
    _add_threads(p)
    p.set_defaults(func=cmd_bench)


def _ints(text: str, flag: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise RealError(f"{flag} {text!r} must be a comma-separated list of integers") from None
    if not values or min(values) < 1:
        raise RealError(f"{flag} {text!r} must list integers >= 1")
    return values


def cmd_bench(args: argparse.Namespace) -> int:
    # here, not at the top: it loads pandas (start-up time)
    from real import bench

    if args.number is None:
        args.number = 10 if args.kind == "sync" else 1
    if args.repeats < 1 or args.warmup < 0 or args.number < 1:
        raise RealError("--repeats and --number must be >= 1 and --warmup >= 0")
    models = args.model or [None]
    if args.kind not in ("sync", "optimizer") and len(models) > 1:
        raise RealError(
            f"--model given {len(models)} times; the {args.kind} bench takes one (sync and optimizer take several)"
        )
    # here, not at the top: it loads numpy (start-up time)
    from real.environment import apply_threads

    if args.kind == "generation":
        grid = [_ints(args.concurrency, "--concurrency"), _ints(args.prompt_tokens, "--prompt-tokens")]
        grid.append(_ints(args.response_tokens, "--response-tokens"))
    elif args.kind == "train":
        tokens = _ints(args.tokens, "--tokens")
    elif args.kind == "detokenize":
        grid = [_ints(args.concurrency, "--concurrency"), _ints(str(args.steps), "--steps")]
    print(f"threads: {apply_threads(args.threads)}", file=sys.stderr)  # after the input is checked
    with _stdout_to_stderr():  # the table below is the result; the engines' output goes to stderr
        if args.kind == "generation":
            table = bench.bench_generation(args.engine, models[0], *grid, args.repeats, args.warmup)
        elif args.kind == "train":
            table = bench.bench_train(models[0], tokens, args.seq_len, args.repeats, args.warmup, args.micro_batches)
        elif args.kind == "optimizer":  # torch's Adam step, and the offloaded step's copies and host Adam
            table = bench_optimizer(models, args.repeats, args.warmup)
        elif args.kind == "detokenize":  # vLLM's output processing with and without a tokenizer (real.detokenize)
            table = bench_detokenize(models[0], grid[0], grid[1][0], args.repeats, args.warmup)
        else:
            table = bench.bench_sync(args.engine, models, args.repeats, args.warmup, args.number)
    print(bench.summarize(table).to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    if args.kind == "detokenize":
        cost = per_token_s(table)
        print(
            f"\nper generated token: vLLM {table_vllm_version(table)} output processing with a tokenizer less "
            f"without {cost['vllm_marginal_s'] * 1e6:.2f} us; the two tokenizer calls of vLLM 0.10.0 "
            f"{cost['tokenizer_calls_s'] * 1e6:.2f} us (costs.detokenize_per_token_s)"
        )
    if args.output is not None:
        bench.write_table(table, args.output)
        print(f"\nwrote {args.output}/bench.csv, bench.parquet, provenance.json")
    return 0


def _add_import(sub: Any) -> None:
    p = sub.add_parser("import-vllm-bench", help="read vllm bench latency/throughput JSON into a bench table")
    p.add_argument("files", type=Path, nargs="+")
    p.add_argument("-o", "--output", type=Path, required=True)
    p.set_defaults(func=cmd_import)


def cmd_import(args: argparse.Namespace) -> int:
    # here, not at the top: it loads pandas (start-up time)
    from real import bench

    table = bench.read_vllm_bench(args.files)
    bench.write_table(table, args.output)
    print(table.to_string(index=False))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlsim-real", description="real RL runs and microbenchmarks")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_train(sub)
    _add_bench(sub)
    _add_import(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    route_vllm_logs_to_stderr()  # before anything imports vllm
    args = parse(build_parser(), sys.argv[1:] if argv is None else list(argv))
    return run_command("rlsim-real", args, "interrupted; run the same command to resume")


if __name__ == "__main__":
    sys.exit(main())
