"""The loop's steps as command lines: the benches, the training runs and one torch thread count for all of them,
each run as the program a user would call (``rlsim-real``, ``rlsim-calibrate``, ``rlsim``) in a subprocess.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from calibrate import CalibrateError
from rlsim.host.machine_load import free_cores
from rlsim.host.threads import count_of

LR0 = 1e-3  # Adam learning rate at 128 responses per step, sqrt-scaled to the others
THREADS_SAMPLE_S = 2.0  # how long --threads auto watches the machine, once, at the loop's start
PROGRAMS = {"real.cli": "rlsim-real", "calibrate.cli": "rlsim-calibrate", "rlsim.cli": "rlsim"}


def command(module: str, *args: str) -> list[str]:
    """A program of this project run as ``python -m MODULE ARGS`` (the interpreter running the loop)."""
    return [sys.executable, "-m", module, *args]


def run_step(cmd: list[str]) -> None:
    """Print the step as a user would paste it (``rlsim-real ...``) and run it; a failed step stops the loop."""
    shown = [PROGRAMS.get(cmd[2], cmd[2]), *cmd[3:]] if cmd[1:2] == ["-m"] else cmd
    print("$ " + " ".join(shown), flush=True)
    proc = subprocess.run(cmd)
    if proc.returncode != 0:
        raise CalibrateError(f"step failed with exit status {proc.returncode}: {' '.join(shown)}")


def bench_commands(out: Path, engine: str, batches: list[int], threads: str = "auto") -> list[list[str]]:
    """The benches over the runs' range: 5-token prompts (3 digits, '=', BOS), 2..8 new tokens, up to the largest
    batch in one generate call; updates on 12-token sequences in 2 micro-batches up to the largest batch."""
    reps = ["--repeats", "7", "--warmup", "2", "--threads", threads]
    top = max(batches)
    conc = sorted({16, 32, 64, 128, 256, top} | {b for b in batches})
    gen = ["--concurrency", ",".join(map(str, conc)), "--prompt-tokens", "5", "--response-tokens", "2,4,8"]
    seqs = sorted({32, 64, 128, 192, 256, top // 2, top} | set(batches))
    train = ["--tokens", ",".join(str(12 * s) for s in seqs if s % 2 == 0), "--seq-len", "12", "--micro-batches", "2"]
    # four model sizes (1.2-4.5 MB of weights) so that the sync's latency and bandwidth are fitted apart
    sizes = ["tiny", "tiny:hidden_size=192", "tiny:hidden_size=256", "tiny:hidden_size=320"]
    sync = [
        *(a for m in sizes for a in ("--model", m)),
        "--repeats",
        "15",
        "--warmup",
        "5",
        "--number",
        "10",
        "--threads",
        threads,
    ]
    return [
        command("real.cli", "bench", "generation", "--engine", engine, *gen, *reps, "-o", str(out / "generation")),
        command("real.cli", "bench", "train", *train, *reps, "-o", str(out / "train")),
        command("real.cli", "bench", "sync", "--engine", engine, *sync, "-o", str(out / "sync")),
    ]


def train_command(args: argparse.Namespace, prompts: int, seed: int, run_dir: Path) -> list[str]:
    return command(
        "real.cli",
        "train",
        "--task",
        args.task,
        "--algo",
        args.algo,
        "--engine",
        args.engine,
        "--prompts-per-step",
        str(prompts),
        "--group-size",
        str(args.group_size),
        "--lr-rule",
        "sqrt",
        "--lr0",
        str(LR0),
        "--reference-batch",
        str(128),  # the batch LR0 is stated at; the run sqrt-scales it to its own
        "--micro-batches",
        "2",
        "--target",
        str(args.target),
        "--max-steps",
        str(args.max_steps),
        "--eval-every",
        "2",
        "--eval-size",
        "128",
        "--checkpoint-every",
        "50",
        "--seed",
        str(seed),
        "--threads",
        args.threads,
        "-o",
        str(run_dir),
    )


def resolve_threads(spec: str, sample_s: float = THREADS_SAMPLE_S) -> tuple[str, str]:
    """One torch thread count for every bench and run of the loop (a count, or ``auto``: the cores other processes
    leave free, measured once at the start): each count is a different machine to the cost model, and ``auto``
    decided per command gave the bench and the runs different counts when the load came and went. Returns the
    count and why."""
    if spec != "auto":
        n = count_of(spec)
        if n is None:
            raise CalibrateError(f"--threads {spec!r}: give auto or a number of threads >= 1")
        return str(n), f"--threads {n}"
    cores, free, busy = free_cores(sample_s)
    if busy is None:
        return str(cores), f"auto: {cores} (the machine's load cannot be read)"
    return str(free), f"auto at the loop's start: other processes kept {busy:.1f} of {cores} cores busy"
