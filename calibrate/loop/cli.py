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

The command lines are calibrate.loop.commands'; :func:`add_parsers` puts ``loop`` on ``rlsim-calibrate``'s
subcommands.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from calibrate import CalibrateError
from calibrate.loop.commands import bench_commands, command, resolve_threads, run_step, train_command

REFERENCE_BATCH = 128  # responses per step of the reference runs (--reference-batch)
HELD_OUT = (0.5, 4.0)  # held-out batch sizes, as multiples of the reference (--held-out)
MAX_STEPS = 300
TASK = "parity:length=3"


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
        run_step(cmd)
    runs = out / "runs"

    seeds = range(args.first_seed, args.first_seed + args.seeds)

    def runs_at(p: int) -> list[Path]:
        return [runs / f"P{p}_G{g}_seed{s}" for s in seeds]

    for seed, run_dir in zip(seeds, runs_at(ref_p)):
        run_step(train_command(args, ref_p, seed, run_dir))
    profile, scenario = out / "profile.json", out / "scenario.yaml"
    tables = [str(out / "bench" / k / "bench.csv") for k in ("generation", "train", "sync")]
    refs = [str(r) for r in runs_at(ref_p)]
    run_step(
        command(
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
    run_step(
        command(
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
            run_step(train_command(args, p, seed, run_dir))
    every = [str(r) for p in [ref_p, *held_p] for r in runs_at(p)]
    run_step(command("calibrate.cli", "validate", "--profile", str(profile), *every, "-o", str(out / "validation")))
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


def add_parsers(sub: Any) -> None:
    """``loop`` on ``sub`` (rlsim-calibrate's subparsers)."""
    add_arguments(
        sub.add_parser(
            "loop",
            help="predict before you run on this CPU: bench, reference runs, fit, predictions, held-out runs, validate",
        )
    )
