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
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from calibrate import published_cli
from calibrate.errors import CalibrateError
from rlsim.io.files import atomic_write, atomic_write_text, make_output_dir

if TYPE_CHECKING:
    from rlsim.run.profile import Profile


def cmd_fit(args: argparse.Namespace) -> int:
    import yaml

    from calibrate.costfit import fit_profile
    from calibrate.tables import load_bench_tables, model_spec_from_folder, table_model
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


def _read_run(path: Path) -> list[dict]:
    """A run's step records from a run directory (its runlog.jsonl) or a run-log file."""
    from rlsim.io.runlog import RunLogError, read_jsonl

    log = path / "runlog.jsonl" if path.is_dir() else path
    if not log.is_file():
        raise CalibrateError(f"{path}: no run log; give run directories (with runlog.jsonl) or runlog.jsonl files")
    try:
        return list(read_jsonl(log))
    except RunLogError as exc:
        raise CalibrateError(str(exc)) from None


def _run_config(path: Path) -> dict:
    """The config.json of a run directory, or beside a run log (rlsim-real train); {} when there is none."""
    from rlsim.io.files import read_json

    cfg = path / "config.json" if path.is_dir() else path.parent / "config.json"
    return read_json(cfg, "rerun the run or restore the file") if cfg.is_file() else {}


def _run_lr_rule(path: Path) -> str | None:
    """The LR rule in a run's config.json (rlsim-real train), or None for a bare run log."""
    return _run_config(path).get("lr_rule")


def cmd_fit_learning(args: argparse.Namespace) -> int:
    import dataclasses

    from calibrate.learning_fit.fit import fit_learning
    from rlsim.run.profile import load_profile

    profile = load_profile(args.profile)  # before the fit: a bad profile fails fast
    runs = [_read_run(p) for p in args.runs]
    rules = {_run_lr_rule(p) for p in args.runs} - {None}
    if len(rules) > 1:
        raise CalibrateError(f"the runs used LR rules {', '.join(sorted(rules))}; fit the runs of one rule")
    fit = fit_learning(runs, args.target, args.reference_batch, lr_rule=rules.pop() if rules else None)
    learning = fit.to_profile_learning()
    prov = {**profile.provenance, "learning_runs": [str(p) for p in args.runs], "learning_command": " ".join(sys.argv)}
    atomic_write_text(args.output, dataclasses.replace(profile, provenance=prov, learning=learning).dumps() + "\n")
    cb = fit.critical_batch
    sigma = cb.to_dict()["uncertainty"]["critical_batch"]
    print(f"{'batch':>7} {'runs':>5} {'samples to target':>18}  source")
    for b, info in learning["samples_to_target"].items():
        print(f"{b:>7} {info['runs']:>5} {info['samples']:>18.0f}  {info['source']}")
    print(
        f"critical batch {cb.critical_batch:.0f}"
        + (f" +- {sigma:.0f}" if sigma is not None else "")
        + (f" (at its {cb.at_bound} bound)" if cb.at_bound else "")
        + f" (E = E_min (1 + B / B_crit) ** {cb.power:g}, E_min {cb.min_samples:.0f}); invariance: curves up to "
        f"{fit.invariance['max_ratio']:.2f}x apart in samples (mean {fit.invariance['mean_ratio']:.2f}x)"
    )
    for b, v in (learning["b_simple"] or {}).items():
        print(f"B_simple at {b}: {v:.0f}" if v is not None else f"B_simple at {b}: not positive")
    if fit.ceiling is not None:
        each = ", ".join(f"B={b} {a:.4g} +- {e:.2g}" for b, (a, e) in sorted(fit.ceiling.asymptotes.items()))
        print(f"ceiling: {fit.ceiling.reason}" + (f" (asymptotes {each})" if each else ""))
        for b, why in sorted(fit.ceiling.left_out.items()):
            print(f"  B={b} left out: {why}")
    for note in fit.notes:
        print(f"note: {note}")
    print(f"\nwrote {args.output} (learning fitted on {len(runs)} runs at reference batch {fit.reference_batch})")
    return 0


def _learning_profile(args: argparse.Namespace, what: str) -> Profile | None:
    """The --profile of a fit that adds ``what`` to a learning model (None without --profile): it must hold one
    (fit-learning's), and -o must say where the result goes."""
    from rlsim.run.profile import load_profile

    profile = load_profile(args.profile) if args.profile else None
    if profile is not None and not (profile.learning or {}).get("metric"):
        raise CalibrateError(f"{args.profile}: no learning model to add {what} to; run fit-learning first")
    if profile is not None and args.output is None:
        raise CalibrateError("--profile needs -o/--output: the profile JSON to write (may be --profile)")
    return profile


def _write_learning(args: argparse.Namespace, profile: Profile, learning: dict, runs_key: str) -> None:
    """``profile`` with ``learning`` in place of its learning section and the runs named under ``runs_key`` in its
    provenance, written atomically to -o."""
    import dataclasses

    prov = {**profile.provenance, runs_key: [str(p) for p in args.runs]}
    atomic_write_text(args.output, dataclasses.replace(profile, provenance=prov, learning=learning).dumps() + "\n")


def cmd_fit_staleness(args: argparse.Namespace) -> int:

    from calibrate.learning_fit.staleness import fit_staleness, profile_learning

    profile = _learning_profile(args, "the staleness form")  # before the fit: a bad profile fails fast
    fit = fit_staleness([_read_run(p) for p in args.runs], args.initial)
    print(f"gain over {fit.initial:.4g} at {fit.at_samples:.0f} samples, against the smallest staleness's:")
    print(f"{'staleness':>9} {'runs':>5} {'kept':>6}")
    for k, share in fit.retained.items():
        print(f"{k:>9} {fit.runs[k]:>5} {share:>6.3f}")
    c = fit.constants
    print(
        f"stretch p = {fit.penalty_per_step:.3g} beyond {fit.free_steps:g} free steps; fitted threshold: free "
        f"{c.free_steps:g} steps, ceiling loss {c.ceiling_loss:.2f}, half {c.half_steps:.3g} steps"
    )
    print("forms (rms error): " + ", ".join(f"{f} {e:.3f}" for f, e in fit.rms.items()) + f" -> {fit.loss}")
    print(
        f"{fit.loss} misses the runs' samples to {fit.level:.4g} by {fit.spread:.3f} in log (learning.staleness_spread)"
    )
    if profile is not None:
        losses = {_run_config(p).get("staleness_loss") for p in args.runs} - {None}
        learning = {**profile.learning, **profile_learning(fit, losses.pop() if len(losses) == 1 else None)}
        if learning.get("staleness_form") is None:
            learning.pop("staleness_form", None)
        _write_learning(args, profile, learning, "staleness_runs")
        print(f"wrote {args.output} (learning.staleness_loss {learning['staleness_loss']})")
    return 0


def cmd_fit_groups(args: argparse.Namespace) -> int:

    from calibrate.learning_fit.groups import fit_groups

    profile = _learning_profile(args, "responses per prompt")  # before the fit: a bad profile fails fast
    fit = fit_groups([_read_run(p) for p in args.runs], args.target, args.reference_group_size)
    print(f"B = {fit.batch}; median samples to {args.target:g} per G, measured against each model's prediction:")
    print(f"{'G':>4} {'runs':>5} {'never':>5} {'measured':>10} {'batch':>10} {'groups':>10} {'spread':>10}")
    for g, n in fit.measured.items():
        cells = [
            f"{x:>10,.0f}" if math.isfinite(x) else f"{'never':>10}"
            for x in (n, *(fit.predicted[m][g] for m in ("batch", "groups", "spread")))
        ]
        print(f"{g:>4} {fit.runs[g]:>5} {fit.never[g]:>5} " + " ".join(cells))
    k = "none logged" if fit.concentration is None else f"{fit.concentration:.3g}"
    print(
        f"spread: prompt concentration {k} (from the logged zero_variance_groups), group correlation "
        f"{fit.correlation:.3f}; its predictions above leave each G's runs out of both fits"
    )
    print("rms log error: " + ", ".join(f"{m} {e:.3f}" for m, e in fit.rms_log.items()) + f" -> {fit.model}")
    if any(fit.never.values()):
        print(
            "never: runs that did not reach the target (counted latest in the median); the models above predict "
            "how fast a run learns, not how often it stalls (learning.stall_probability, fit-learning)"
        )
    if profile is not None:
        learning = dict(profile.learning)
        for key in ("reference_group_size", "prompt_concentration", "group_correlation"):
            learning.pop(key, None)
        if fit.model != "batch":
            learning["reference_group_size"] = fit.reference_group_size
        if fit.model == "spread":
            learning["group_correlation"] = fit.correlation
            if fit.concentration is not None:
                learning["prompt_concentration"] = fit.concentration
        _write_learning(args, profile, learning, "group_runs")
        print(f"wrote {args.output} (learning.reference_group_size {learning.get('reference_group_size')})")
    return 0


def cmd_fit_filtering(args: argparse.Namespace) -> int:

    from calibrate.learning_fit.filtering import fit_filtering

    profile = _learning_profile(args, "the filter's power")  # before the fit: a bad profile fails fast
    fit = fit_filtering([_read_run(p) for p in args.runs], args.target)
    plain = sum(not r.filtered for r in fit.runs)
    print(f"B = {fit.batch}; samples to {args.target:g} (medians):")
    print(f"  without dynamic sampling ({plain} runs): {fit.plain_samples:,.0f}")
    print(
        f"  with it ({len(fit.runs) - plain} runs): trained {fit.filtered_samples:,.0f} "
        f"({fit.filtered_samples / fit.plain_samples:.3f}x), generated {fit.filtered_generated:,.0f} "
        f"({fit.filtered_generated / fit.plain_samples:.3f}x), keep rate {fit.keep_rate:.3f}"
    )
    for label, power in (("fitted", fit.power), ("default", 0.5)):
        trained, generated = fit.predicted(power)
        print(f"  power {power:.3f} ({label}): trained {trained:,.0f}, generated {generated:,.0f}")
    for note in fit.notes:
        print(f"note: {note}")
    if profile is not None:
        learning = {**profile.learning, "filtered_signal_power": fit.power}
        _write_learning(args, profile, learning, "filtering_runs")
        print(f"wrote {args.output} (learning.filtered_signal_power {fit.power:.3f})")
    return 0


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

    fl = sub.add_parser("fit-learning", help="fit the learning model from run logs into a profile")
    fl.add_argument("runs", type=Path, nargs="+", help="run directories (runlog.jsonl) or runlog.jsonl files")
    fl.add_argument("--target", type=float, required=True, help="eval metric target for samples-to-target")
    fl.add_argument("--reference-batch", type=int, help="responses per step of the curve kept (default: smallest)")
    fl.add_argument("--profile", type=Path, required=True, help="profile JSON to add the learning model to")
    fl.add_argument("-o", "--output", type=Path, required=True, help="profile JSON to write (may be --profile)")
    fl.set_defaults(func=cmd_fit_learning)

    fs = sub.add_parser("fit-staleness", help="which staleness form async runs at several stalenesses follow")
    fs.add_argument("runs", type=Path, nargs="+", help="run directories (runlog.jsonl) or runlog.jsonl files")
    fs.add_argument(
        "--initial",
        type=float,
        help="the metric before training (default: the runs' eval_metric_initial, else their first evaluation)",
    )
    fs.add_argument("--profile", type=Path, help="profile JSON (with a learning model) to add the form to")
    fs.add_argument("-o", "--output", type=Path, help="profile JSON to write (with --profile)")
    fs.set_defaults(func=cmd_fit_staleness)

    fg = sub.add_parser("fit-groups", help="whether responses per prompt count apart from the batch in your runs")
    fg.add_argument("runs", type=Path, nargs="+", help="run directories or runlog.jsonl files: one batch, two+ G")
    fg.add_argument("--target", type=float, required=True, help="the eval metric to reach (a pass rate in [0, 1])")
    fg.add_argument("--reference-group-size", type=int, help="the G the others are predicted from (default: most runs)")
    fg.add_argument("--profile", type=Path, help="profile JSON (with a learning model) to write the result into")
    fg.add_argument("-o", "--output", type=Path, help="profile JSON to write (with --profile)")
    fg.set_defaults(func=cmd_fit_groups)

    ff = sub.add_parser("fit-filtering", help="what DAPO's dynamic sampling saves per trained sample in your runs")
    ff.add_argument("runs", type=Path, nargs="+", help="run directories or runlog.jsonl files: one batch, both kinds")
    ff.add_argument("--target", type=float, required=True, help="the eval metric to reach")
    ff.add_argument("--profile", type=Path, help="profile JSON (with a learning model) to write the power into")
    ff.add_argument("-o", "--output", type=Path, help="profile JSON to write (with --profile)")
    ff.set_defaults(func=cmd_fit_filtering)

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
    from rlsim.cli import run_command

    return run_command("rlsim-calibrate", build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
