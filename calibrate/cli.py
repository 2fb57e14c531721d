"""``rlsim-calibrate``: turn measurements into profiles and check predictions against real runs.

``rlsim-calibrate fit BENCH_TABLE... [--runs RUN_DIR... [--target X]] -o profile.json [--scenario-out S.yaml]
[--model-dir DIR | --model NAME] [--gpu NAME]``: every fitted number into the profile (bench costs; with the
reference runs also lengths, reward and glue, in-loop factors and the learning model), the runs' setup into S.yaml
``rlsim-calibrate fit-learning RUN... --target X --profile P -o profile.json [--reference-batch B]``: the
learning model from run logs at two or more batch sizes, written into the profile's ``learning``
``rlsim-calibrate fit-staleness RUN... [--initial X] [--profile P -o profile.json]``: which staleness form
(stretch, naive_ppo, decoupled_ppo, or the threshold form with fitted constants) async runs at two or more max
stalenesses follow, into ``learning.staleness_loss`` (and ``staleness_form`` / ``staleness_penalty_per_step``)
``rlsim-calibrate fit-groups RUN... --target X [--profile P -o profile.json]``: whether runs at one batch and two
or more group sizes follow B = P x G alone or the informative-group term, into ``learning.reference_group_size``
``rlsim-calibrate fit-filtering RUN... --target X [--profile P -o profile.json]``: how much DAPO's dynamic sampling
saves per trained sample, from runs at one batch with and without it, into ``learning.filtered_signal_power``
``rlsim-calibrate import --format verl|openrlhf|trl|nemo-rl LOG -o runlog.jsonl [--prompts-per-step P
--group-size G]``
``rlsim-calibrate validate [--profile P] RUN_DIR... -o DIR [--target X]``: predict each run's batch from the
profile alone and compare (never fits)
``rlsim-calibrate published [CSV ...] -o DIR [--costs fitted|catalog] [--set costs.X=V ...] [--cv KEY]``: predict
published RL step times (default: the project's copy of the NeMo RL development set) and print the accuracy;
DIR gets published.csv and summary.json
``rlsim-calibrate vllm-check -o DIR [--model tiny|smollm2] [--quick]``: vLLM's own benchmark on this machine at
points off the project's bench grid, predicted by the engine model under a profile fitted from that bench alone
``rlsim-calibrate loop -o DIR [--engine hf|vllm] [--group-size G] [--seeds N]``: predict before you run on this
CPU (calibrate/loop.py); it calls ``rlsim-real`` and ``rlsim`` in subprocesses, so this package never imports
torch.

Bad input prints one line ``rlsim-calibrate: error: ...`` and exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from calibrate import CalibrateError, published_cli
from calibrate.learning import cli as learning_cli
from rlsim.io.files import atomic_write, atomic_write_text, make_output_dir


def cmd_fit(args: argparse.Namespace) -> int:
    import yaml

    from calibrate.bench.fit import fit_profile
    from calibrate.bench.tables import load_bench_tables, model_spec_from_folder, table_model
    from rlsim.host.machine_load import load_summary, load_warning

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
        from calibrate.runfit import fit_runs, scenario_out
        from calibrate.runs import load_run

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


def cmd_import(args: argparse.Namespace) -> int:
    from calibrate.importers import format_problems, import_log, write_runlog

    result = import_log(args.log, args.format, prompts_per_step=args.prompts_per_step, group_size=args.group_size)
    write_runlog(result, args.output)
    print(f"imported {len(result.records)} step(s) from {args.log} into {args.output}")
    if result.problems:
        print(format_problems(result), file=sys.stderr)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    import pandas as pd

    from calibrate.validate import report_html, validate
    from rlsim.run.profile import load_profile

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


def build_parser() -> argparse.ArgumentParser:
    from calibrate.runfit import LENGTH_PHASES, LENGTH_PROGRESS

    parser = argparse.ArgumentParser(prog="rlsim-calibrate", description="fit profiles and validate predictions")
    sub = parser.add_subparsers(dest="command", required=True)
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
        "see calibrate.runfit)",
    )
    fit.add_argument(
        "--length-progress",
        choices=("learning_rate", "samples"),
        default=LENGTH_PROGRESS,
        help="what the length phases follow at another batch size: the cumulative learning rate (default) or the "
        "samples seen (see calibrate.runfit)",
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

    learning_cli.add_parsers(sub)

    imp = sub.add_parser("import", help="read a framework's per-step metrics into the run-log schema")
    imp.add_argument("log", type=Path)
    imp.add_argument(
        "--format",
        required=True,
        help="the framework that wrote the log: verl, openrlhf, trl, nemo-rl or another adapter",
    )
    imp.add_argument("--prompts-per-step", type=int)
    imp.add_argument("--group-size", type=int)
    imp.add_argument("-o", "--output", type=Path, required=True, help="runlog.jsonl to write")
    imp.set_defaults(func=cmd_import)

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

    pub = sub.add_parser(
        "published",
        help="predict published RL step times and generation throughput and print the accuracy "
        "(DIR gets published.csv, generation.csv, summary.json)",
    )
    pub.add_argument("csv", nargs="*", help="CSVs of published runs (default: the project's development set)")
    pub.add_argument("-o", "--output", required=True, help="directory for published.csv and summary.json")
    pub.add_argument(
        "--costs",
        default=None,
        help="cost coefficients for every row: fitted (fitted on the development set, see its file; the default) "
        "or catalog (rlsim's defaults; the default, and the only choice, with --cv)",
    )
    pub.add_argument("--set", action="append", metavar="costs.FIELD=VALUE", help="one cost override for every row")
    pub.add_argument(
        "--fit",
        metavar="FIELD,FIELD",
        help="fit these coefficients, one set for every row of every table: costs fields, or BEHAVIOUR.FIELD for "
        "a named engine behaviour (rlsim/catalog/engines.yaml; a behaviour's own value takes precedence over the "
        "costs field, so fit it under its name); writes DIR/fitted_costs.yaml (its engines section is to be "
        "copied into engines.yaml)",
    )
    pub.add_argument(
        "--cv",
        metavar="KEY",
        help="cross-validate: for each group of KEY (gpu, version, model, family, tp, or any column) fit on the "
        "other groups and predict it; prints and writes (summary.json cv, DIR/cv.csv) the held-out accuracy beside "
        "the in-sample and catalog-default figures. Fits --fit's names if given, else the default set's",
    )
    pub.set_defaults(func=published_cli.cmd_published)

    from calibrate import loop as loop_mod

    loop_mod.add_arguments(
        sub.add_parser(
            "loop",
            help="predict before you run on this CPU: bench, reference runs, fit, predictions, held-out runs, validate",
        )
    )
    from calibrate.vllm_check.command import add_arguments  # light: numpy, pandas, rlsim load when the check runs

    add_arguments(
        sub.add_parser("vllm-check", help="vLLM's own benchmark off the bench grid against the engine model (~6 min)")
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    from rlsim.cli import parse, run_command

    return run_command("rlsim-calibrate", parse(build_parser(), sys.argv[1:] if argv is None else list(argv)))


if __name__ == "__main__":
    sys.exit(main())
