"""``rlsim-calibrate loop``: predict before you run, on this machine, as a user would do it by hand.

1. bench: generation, training and weight sync on the run's engine, over the range the runs will use;
2. the reference runs: ``seeds`` real GRPO (or PPO) runs at the reference batch (P x G = ``reference_batch``);
3. ``rlsim-calibrate fit`` on the bench tables and the reference runs: the profile (costs, in-loop factors,
   reward and glue, the response-length model, the learning model) and the measured setup as a scenario;
4. ``rlsim sweep SCENARIO --profile PROFILE`` over the held-out batch sizes (0.5x and 4x the reference by
   default): the predictions, written (with the time they were made) before any held-out run starts;
5. the held-out runs;
6. ``rlsim-calibrate validate --profile PROFILE`` on every run: it predicts each batch again from the profile alone
   and compares with what was measured (its predictions equal step 4's).

Every step is printed as the command a user would paste (``rlsim-real ...``, ``rlsim-calibrate ...``,
``rlsim ...``) and runs in a subprocess, so this package never imports torch. A step whose output already exists
is skipped and a run that finished is not re-run, so the loop resumes where it stopped.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from calibrate import CalibrateError

REFERENCE_BATCH = 128  # responses per step of the reference runs (--reference-batch)
HELD_OUT = (0.5, 4.0)  # held-out batch sizes, as multiples of the reference (--held-out)
LR0 = 1e-3  # Adam learning rate at 128 responses per step, sqrt-scaled to the others
MAX_STEPS = 300
THREADS_SAMPLE_S = 2.0  # how long --threads auto watches the machine, once, at the loop's start
TASK = "parity:length=3"
PROGRAMS = {"real.cli": "rlsim-real", "calibrate.cli": "rlsim-calibrate", "rlsim.cli": "rlsim"}


def _command(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def _run(cmd: list[str]) -> None:
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
        _command("real.cli", "bench", "generation", "--engine", engine, *gen, *reps, "-o", str(out / "generation")),
        _command("real.cli", "bench", "train", *train, *reps, "-o", str(out / "train")),
        _command("real.cli", "bench", "sync", "--engine", engine, *sync, "-o", str(out / "sync")),
    ]


def train_command(args: argparse.Namespace, prompts: int, seed: int, run_dir: Path) -> list[str]:
    return _command(
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
    from rlsim.host.machine_load import free_cores
    from rlsim.host.threads import count_of

    if spec != "auto":
        n = count_of(spec)
        if n is None:
            raise CalibrateError(f"--threads {spec!r}: give auto or a number of threads >= 1")
        return str(n), f"--threads {n}"
    cores, free, busy = free_cores(sample_s)
    if busy is None:
        return str(cores), f"auto: {cores} (the machine's load cannot be read)"
    return str(free), f"auto at the loop's start: other processes kept {busy:.1f} of {cores} cores busy"


def loop(args: argparse.Namespace) -> int:
    out: Path = args.output
    g, ref_b = args.group_size, args.reference_batch
    if args.seeds < 1:
        raise CalibrateError(f"--seeds {args.seeds} must be at least 1")
    if args.first_seed < 0:
        raise CalibrateError(f"--first-seed {args.first_seed} must be 0 or more")
    if args.max_steps < 2:
        raise CalibrateError(f"--max-steps {args.max_steps} must be at least 2")
    if g < 2 or ref_b % g:
        raise CalibrateError(f"--group-size {g} must be at least 2 and divide --reference-batch {ref_b}")
    try:
        multiples = [float(m) for m in str(args.held_out).split(",") if m.strip()]
    except ValueError:
        raise CalibrateError(f"--held-out {args.held_out!r}: give multiples of the reference, e.g. 0.25,4") from None
    if not multiples or any(m <= 0 for m in multiples):
        raise CalibrateError(f"--held-out {args.held_out!r}: give positive multiples of the reference, e.g. 0.25,4")
    ref_p = ref_b // g
    held_p = sorted({max(1, round(ref_p * m)) for m in multiples} - {ref_p})
    args.threads, why = resolve_threads(args.threads)
    out.mkdir(parents=True, exist_ok=True)  # only once the arguments are good: a typo leaves nothing behind
    print(f"torch threads for every bench and run: {args.threads} ({why})", flush=True)
    t0 = time.perf_counter()
    for cmd in bench_commands(out / "bench", args.engine, [ref_b, *(p * g for p in held_p)], args.threads):
        if (Path(cmd[-1]) / "bench.csv").is_file():
            print(f"(kept {cmd[-1]}/bench.csv)")
            continue
        _run(cmd)
    runs = out / "runs"

    seeds = range(args.first_seed, args.first_seed + args.seeds)

    def runs_at(p: int) -> list[Path]:
        return [runs / f"P{p}_G{g}_seed{s}" for s in seeds]

    for seed, run_dir in zip(seeds, runs_at(ref_p)):
        _run(train_command(args, ref_p, seed, run_dir))
    profile, scenario = out / "profile.json", out / "scenario.yaml"
    tables = [str(out / "bench" / k / "bench.csv") for k in ("generation", "train", "sync")]
    refs = [str(r) for r in runs_at(ref_p)]
    _run(
        _command(
            "calibrate.cli",
            "fit",
            *tables,
            "--runs",
            *refs,
            "--target",
            str(args.target),
            "-o",
            str(profile),
            "--scenario-out",
            str(scenario),
        )
    )
    predictions = out / "predictions"
    grid = ",".join(str(p) for p in [ref_p, *held_p])
    _run(
        _command(
            "rlsim.cli",
            "sweep",
            str(scenario),
            "--profile",
            str(profile),
            "--grid",
            f"workload.prompts_per_step={grid}",
            "-o",
            str(predictions),
        )
    )
    (predictions / "made_at.txt").write_text(time.strftime("%Y-%m-%dT%H:%M:%S%z") + " (before the held-out runs)\n")
    for p in held_p:
        for seed, run_dir in zip(seeds, runs_at(p)):
            _run(train_command(args, p, seed, run_dir))
    every = [str(r) for p in [ref_p, *held_p] for r in runs_at(p)]
    _run(_command("calibrate.cli", "validate", "--profile", str(profile), *every, "-o", str(out / "validation")))
    print(f"\nthe loop took {time.perf_counter() - t0:.0f} s; report: {out / 'validation' / 'report.html'}")
    return 0


def add_arguments(loop_parser: argparse.ArgumentParser) -> None:
    loop_parser.add_argument("--engine", default="hf", choices=("hf", "vllm"), help="the runs' and benches' engine")
    loop_parser.add_argument(
        "--algo", default="grpo", choices=("grpo", "ppo"), help="the runs' algorithm (ppo: with a critic)"
    )
    loop_parser.add_argument("--group-size", type=int, default=8, help="G (P = reference batch / G at the reference)")
    loop_parser.add_argument(
        "--reference-batch", type=int, default=REFERENCE_BATCH, help="responses per step of the reference runs"
    )
    loop_parser.add_argument(
        "--held-out",
        default=",".join(f"{m:g}" for m in HELD_OUT),
        help="held-out batch sizes as multiples of the reference, comma-separated (e.g. 0.25,4)",
    )
    loop_parser.add_argument("--max-steps", type=int, default=MAX_STEPS, help="step budget of every run")
    loop_parser.add_argument("--task", default=TASK)
    loop_parser.add_argument("--target", type=float, default=0.9)
    loop_parser.add_argument(
        "--seeds", type=int, default=8, help="runs per batch size (steps-to-target varies from seed to seed)"
    )
    loop_parser.add_argument(
        "--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1 (a fresh set of seeds)"
    )
    loop_parser.add_argument(
        "--threads",
        default="auto",
        help="torch threads of every bench and run (rlsim-real --threads): a number, or auto: one per core other "
        "processes leave free, measured once at the loop's start and used for every command",
    )
    loop_parser.add_argument("-o", "--output", type=Path, required=True)
    loop_parser.set_defaults(func=loop)
