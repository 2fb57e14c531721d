"""``rlsim-calibrate fit`` and ``validate``: the bench tables (calibrate.bench) and, with ``--runs``, the
reference runs fitted into a profile; the profile's predictions compared with real runs. :func:`add_fit_parser` and
:func:`add_validate_parser` put them on ``rlsim-calibrate``'s subcommands; the work is in calibrate.bench and in
this package's other modules, imported when a command runs (rlsim-calibrate starts without pandas or plotly)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from calibrate import CalibrateError
from calibrate.runs.lengths import LENGTH_PHASES, LENGTH_PROGRESS
from rlsim.host.machine_load import load_summary, load_warning
from rlsim.io.files import atomic_write, atomic_write_text, make_output_dir
from rlsim.run.profile import load_profile


def cmd_fit(args: argparse.Namespace) -> int:
    # loaded when the command runs: rlsim-calibrate starts without pandas and scipy
    from calibrate.bench.fit import fit_profile
    from calibrate.bench.tables import load_bench_tables, model_spec_from_folder, table_model

    if args.scenario_out is not None and not args.runs:
        raise CalibrateError("--scenario-out writes the setup of the reference runs; give them with --runs RUN_DIR...")
    if args.target is not None and not args.runs:
        raise CalibrateError("--target fits the learning model of the reference runs; give them with --runs")
    if args.length_phases < 1:
        raise CalibrateError(f"--length-phases {args.length_phases}: give 1 (pooled lengths) or more")
    table = load_bench_tables(args.tables)
    if args.model_dir is not None:
        model = model_spec_from_folder(args.model_dir)
    elif args.model is not None:
        model = args.model
    else:
        model = table_model(table)
    profile, results = fit_profile(table, model, args.gpu, command=" ".join(sys.argv))
    report: dict = {"warnings": []}
    if args.runs:
        # loaded when the command runs: rlsim-calibrate starts without pandas and scipy
        from calibrate.runs.fit import fit_runs, scenario_out
        from calibrate.runs.run import load_run

        runs = [load_run(p) for p in args.runs]
        profile, report = fit_runs(
            profile,
            runs,
            args.target,
            args.gpu,
            length_phases=args.length_phases,
            length_progress=args.length_progress,
            allow_thread_mismatch=args.allow_thread_mismatch,
            allow_load_mismatch=args.allow_load_mismatch,
        )
    print(
        f"{'phase':<12} {'points':>6} {'repeats':>7} {'held-out MAPE':>13} {'max error':>10} {'per repeat':>10}"
        "  coefficients (1 sigma)"
    )
    for r in results:
        coeffs = ", ".join(f"{k}={v:.4g}±{r.uncertainty.get(k, float('nan')):.2g}" for k, v in r.parameters.items())
        h = r.held_out
        print(
            f"{r.phase:<12} {h['num_points']:>6} {h['num_repeats']:>7} {h['mape'] * 100:>12.1f}% "
            f"{h['max_abs_pct_error'] * 100:>9.1f}% {h['repeat_mape'] * 100:>9.1f}%  {coeffs}"
        )
    print("(held-out: k-fold over configurations; a point is the median of its repeats)")
    warnings = [w for r in results for w in r.warnings]
    bench_load = load_warning("the bench tables", load_summary(table.to_dict("records")))
    warnings += [bench_load] if bench_load else []
    warnings += report["warnings"]
    if args.runs:
        _print_run_fit(report)
    atomic_write_text(args.output, profile.dumps() + "\n")
    if args.scenario_out is not None:
        atomic_write_text(args.scenario_out, yaml.safe_dump(scenario_out(runs, profile, args.gpu), sort_keys=False))
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"\nwrote {args.output}" + (f" and {args.scenario_out}" if args.scenario_out is not None else ""))
    return 0


def _print_run_fit(report: dict) -> None:
    lengths, costs, learning = report["lengths"], report["costs"], report["learning"]
    print(f"\nlengths: prompt {lengths['prompt_length']['tokens']} tokens; responses: {lengths['source']}")
    print(
        f"reward {costs['reward_s_per_sample'] * 1e3:.3f} ms/sample, untimed glue "
        f"{costs['rollout_s_per_sample'] * 1e3:.3f} ms/sample; in-loop factors (measured / bench-predicted): "
        + ", ".join(f"{k} {v:.3f}" for k, v in report["in_loop_factors"].items())
    )
    if learning is not None:
        lo, hi = learning["b_simple_interval"] or (None, None)
        b = learning["b_simple"]
        print(
            f"learning: {learning['runs_reaching_target']} of {learning['runs']} runs reached {learning['target']:g}; "
            f"median samples-to-target {learning['median_samples_to_target']:.0f} (log sigma "
            f"{learning['samples_spread']:.3f}); batch term {learning['batch_form']}"
            + (f"; B_simple {b:.0f} [{lo:.0f}, {hi:.0f}] (16-84%)" if None not in (b, lo, hi) else "")
            + f"; seeds that never reach it: {learning['stall_probability']:.0%} (at most "
            f"{learning['stall_probability_upper_90']:.0%} at 90%)"
        )


def cmd_validate(args: argparse.Namespace) -> int:
    # loaded when the command runs: rlsim-calibrate starts without pandas, scipy and plotly
    import pandas as pd

    from calibrate.runs.report import report_html
    from calibrate.runs.validate import validate

    profile = load_profile(args.profile) if args.profile else None
    table, details = validate(args.runs, profile, args.target, args.gpu, args.allow_thread_mismatch)
    out = make_output_dir(args.output, "directory for the validation")
    atomic_write(out / "validation.csv", lambda p: table.to_csv(p, index=False))
    atomic_write_text(out / "validation.json", json.dumps(details, indent=2, default=str) + "\n")
    atomic_write_text(out / "report.html", report_html(table, details, profile))
    cols = [
        "run",
        "responses_per_step",
        "held_out",
        "measured_step_time_s",
        "step_time_error",
        "reached_target",
        "measured_samples_to_target",
        "measured_time_to_target_s",
        "median_other_cpu_fraction",
        "outlier",
    ]
    print(table[cols].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print()
    print(
        pd.DataFrame(details["by_batch"]).drop(columns=["outlier_runs"]).T.to_string(float_format=lambda x: f"{x:.4g}")
    )
    print()
    for row in details["by_batch"]:  # one line per batch: which phase misses, and by how much
        errs = [(k.split("/", 1)[1], v) for k, v in row.items() if k.startswith("error/") and v is not None]
        text = ", ".join(f"{name} {v:+.1%}" for name, v in errs) or "no phase timings"
        print(
            f"phase errors, B = {row['responses_per_step']} ({'held out' if row['held_out'] else 'reference'}): {text}"
        )
    for w in details["warnings"]:
        print(f"warning: {w}", file=sys.stderr)
    for n in details["notes"]:
        print(f"note: {n}")
    print(f"\nwrote {out}/validation.csv, validation.json, report.html")
    return 0


def add_fit_parser(sub: Any) -> None:
    """``fit`` on ``sub`` (rlsim-calibrate's subparsers)."""
    fit = sub.add_parser("fit", help="fit each phase's cost model from bench tables into a profile")
    fit.add_argument("tables", type=Path, nargs="+", help="bench.csv / bench.parquet from rlsim-real bench")
    fit.add_argument(
        "--model-dir", type=Path, help="the benchmarked Hugging Face model folder (default: the one the table names)"
    )
    fit.add_argument("--model", help="or a catalog model name")
    fit.add_argument(
        "--runs",
        type=Path,
        nargs="+",
        help="reference runs (rlsim-real train directories, one batch size): lengths, reward and glue, in-loop "
        "factors and, with --target, the learning model",
    )
    fit.add_argument("--target", type=float, help="eval metric target of the learning model (with --runs)")
    fit.add_argument(
        "--length-phases",
        type=int,
        default=LENGTH_PHASES,
        help=f"response-length histograms by training progress (with --runs; default {LENGTH_PHASES}; 1: pooled; "
        "see calibrate.runs.lengths)",
    )
    fit.add_argument(
        "--length-progress",
        choices=("learning_rate", "samples"),
        default=LENGTH_PROGRESS,
        help="what the length phases follow at another batch size: the cumulative learning rate (default) or the "
        "samples seen (see calibrate.runs.lengths)",
    )
    fit.add_argument(
        "--scenario-out", type=Path, help="write the reference runs' setup as a scenario YAML (with --runs)"
    )
    fit.add_argument("--gpu", help="catalog device the bench ran on (default: guessed from the table's device)")
    fit.add_argument("-o", "--output", type=Path, required=True, help="profile JSON to write")
    fit.add_argument(
        "--allow-thread-mismatch",
        action="store_true",
        help="go on (with a warning) when the runs ran with other torch thread counts than the bench",
    )
    fit.add_argument(
        "--allow-load-mismatch",
        action="store_true",
        help="go on (with a warning) when the bench and the reference runs ran under different machine loads",
    )
    fit.set_defaults(func=cmd_fit)


def add_validate_parser(sub: Any) -> None:
    """``validate`` on ``sub`` (rlsim-calibrate's subparsers)."""
    val = sub.add_parser("validate", help="predict each run's batch from the profile alone and compare (never fits)")
    val.add_argument("runs", type=Path, nargs="+", help="run directories (runlog.jsonl + config or scenario.yaml)")
    val.add_argument("--profile", type=Path, help="profile JSON (default: the scenario's roofline coefficients)")
    val.add_argument(
        "--target", type=float, help="eval metric target, only for a profile without a learning model (measured side)"
    )
    val.add_argument("--gpu", help="catalog device of the runs (default: guessed)")
    val.add_argument(
        "--allow-thread-mismatch",
        action="store_true",
        help="go on (with a warning) when the runs ran with other torch thread counts than the bench",
    )
    val.add_argument("-o", "--output", type=Path, required=True)
    val.set_defaults(func=cmd_validate)
