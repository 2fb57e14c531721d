"""The ``rlsim`` command line. Files are written here (and in the report layer), never by the library.

``rlsim run SCENARIO [--set key=value ...] [--profile FILE] [-o DIR] [--json]``
    prints a summary table; with -o writes DIR/scenario.resolved.yaml, steps.csv, steps.parquet, runlog.jsonl,
    trace.json (Chrome trace, opens in Perfetto) and summary.json; --json prints the summary JSON on stdout.
``rlsim decide SCENARIO --baseline k=v[,k=v] --candidate k=v[,k=v] [--json]``
    the decision rule: throughput gain, samples penalty, speedup, verdict, each side's time-to-target.
``rlsim sweep SCENARIO [--grid key=v1,v2 ...] [--executor local|ray] [--address ADDR] [-o DIR]``
    every combination (default: the scenario's sweep.grid), one row each; DIR gets sweep.csv/.parquet,
    curves.csv, engine_curves.csv, sweep.json and the resolved scenario.
``rlsim import-config [--format FMT] FILE [--set KEY=VALUE ...] [--scenario-set KEY=VALUE ...] -o SCENARIO``
    a scenario from a framework's own training config (FMT verl, trl, openrlhf or nemo-rl; without it, the
    framework the file's entry point or keys name: rlsim.frameworks.detect); --set overrides framework
    keys before mapping, --scenario-set scenario fields after it; unused framework keys are listed on stderr.
``rlsim plan SCENARIO [--objective time|cost|gpu-hours] [--gpus N | --max-gpus N] [--gpu-types A,B] ... [-o DIR]``
    the configuration that reaches the target first or cheapest, the Pareto front and why (rlsim.plan.cli);
    DIR gets plan.csv, plan.json, report.html, winner.yaml; --emit FMT the winner in a framework's keys.
``rlsim check LOG (--config FILE | --scenario S) [--format FMT] [--gpu G] [--set k=v] [--steps N] [--json] [-o DIR]``
    a framework's metrics log against rlsim's prediction for its configuration, phase by phase, naming the phases
    out of line and what would explain them (rlsim.answers.check); DIR gets the run's files and check.json.
``rlsim report DIR [-o report.html] [--png]``
    one self-contained HTML file from a sweep or run directory; --png also writes each figure as PNG.

Bad input (scenario, profile, overrides) prints one line ``rlsim: error: ...`` to stderr and exits with 2.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from rlsim import __version__
from rlsim.answers.text import extrapolation_note, run_table, sweep_table, thrash_screen_note
from rlsim.answers.thrash import thrash_free
from rlsim.errors import RlsimError, one_line, suggest
from rlsim.host.footprint import LONG_S, Footprint
from rlsim.host.progress import Progress
from rlsim.io import runlog
from rlsim.io.files import atomic_write
from rlsim.run.profile import load_profile
from rlsim.scenario import dump_yaml, load_scenario, parse_overrides


def _non_finite(obj: Any, path: str = "") -> tuple[str, float] | None:
    """The first NaN or infinite number in a summary (its dotted key and value), or None."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return path, obj
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, (list, tuple)) else ()
    for k, v in items:
        found = _non_finite(v, f"{path}.{k}" if path else str(k))
        if found is not None:
            return found
    return None


def write_outputs(result: Any, out: Path) -> list[Path]:
    """Write the run's files into ``out`` (created if needed); returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    df = result.steps
    files = {
        "scenario.resolved.yaml": lambda p: p.write_text(dump_yaml(result.scenario)),
        "steps.csv": lambda p: df.to_csv(p, index=False),
        "steps.parquet": lambda p: df.to_parquet(p, index=False),
        "runlog.jsonl": lambda p: runlog.write_jsonl(p, result.records),
        "trace.json": lambda p: p.write_text(json.dumps(result.chrome_trace())),
        "summary.json": lambda p: p.write_text(result.summary_json() + "\n"),
    }
    written = []
    for name, write in files.items():
        atomic_write(out / name, write)
        written.append(out / name)
    return written


def _progress_bar(total: int, enabled: bool) -> tuple[Callable[[int], None] | None, Callable[[], None]]:
    """Steps on stderr (rlsim.host.progress): a bar on a terminal, a line every 30 s off one; none with --json's
    silence asked for or for a run under 50 steps."""
    if not enabled or total < 50:
        return None, lambda: None

    bar = Progress("simulating", "step", total)
    return bar.step, bar.close


def _say_if_long(fp: Footprint) -> None:
    """Before a long simulation starts, one line on stderr with its estimated size and time (rlsim.host.footprint)."""
    if fp.seconds > LONG_S:
        print(f"rlsim: note: {fp.describe()} (estimated; Ctrl-C stops it)", file=sys.stderr)


def cmd_run(args: argparse.Namespace) -> int:
    # here, not at the top: it loads numpy, simpy (start-up time)
    from rlsim.answers.sensitivity import run_loss_warning
    from rlsim.run.simulation import configure, planned_steps, predict

    overrides = parse_overrides(args.set or [])
    profile = load_profile(args.profile) if args.profile else None
    # the file, the profile's learning and length models and then --set (which wins), validated once: --set
    # learning.target works for a file without a learning model of its own
    scenario = configure(args.scenario, profile, overrides)
    if args.output is not None and args.output.exists() and not args.output.is_dir():
        raise _Usage(f"-o {args.output}: exists and is not a directory; give a directory path")
    progress, close = _progress_bar(planned_steps(scenario), not args.json)
    try:
        # the band costs extra runs only when there is a learning model (the scenario's or the profile's)
        result = predict(scenario, profile, progress=progress, with_band=True, before=_say_if_long)
    finally:
        close()
    summary = result.summary()
    if summary["thrash"] is not None:  # what stops the preemptions, and what that costs
        summary["thrash"].update(thrash_free(scenario, profile))
    bad = _non_finite(summary)
    if bad is not None:  # strict JSON and a readable table have no NaN or Infinity: say which number broke
        raise RlsimError(
            f"the simulation gave {bad[1]} for {bad[0]}; a cost coefficient, hardware number or length is too "
            "extreme for it: check the values you set"
        )
    for w in result.warnings:
        print(f"rlsim: warning: {w}", file=sys.stderr)
    if (loss := run_loss_warning(scenario, summary, profile)) is not None:  # async, no loss named
        print(f"rlsim: warning: {loss}", file=sys.stderr)
    if args.output is not None:
        write_outputs(result, args.output)
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
    else:
        print(run_table(summary))
        if args.output is not None:
            print(
                f"\nwrote {args.output}/: scenario.resolved.yaml steps.csv steps.parquet runlog.jsonl trace.json "
                "summary.json"
            )
    return 0


def cmd_decide(args: argparse.Namespace) -> int:
    # here, not at the top: it loads numpy (start-up time)
    from rlsim.answers.decide import decide, parse_side

    overrides = parse_overrides(args.set or [])
    scenario = load_scenario(args.scenario, overrides)
    baseline = parse_side(args.baseline, "--baseline")
    candidate = parse_side(args.candidate, "--candidate")
    profile = load_profile(args.profile) if args.profile else None
    decision = decide(scenario, baseline, candidate, profile, explicit=overrides)
    print(json.dumps(decision.as_dict(), indent=2, sort_keys=True) if args.json else decision.text())
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    # here, not at the top: it loads numpy, pandas (start-up time)
    from rlsim.answers.sensitivity import lines as sensitivity_lines
    from rlsim.answers.sweep import parse_grid, sweep

    overrides = parse_overrides(args.set or [])
    scenario = load_scenario(args.scenario, overrides)
    grid = parse_grid(args.grid) if args.grid else dict(scenario.sweep.grid)
    if not grid:
        raise _Usage(f"{args.scenario}: no --grid given and the scenario has no sweep.grid; add --grid key=v1,v2")
    if args.output is not None and args.output.exists() and not args.output.is_dir():
        raise _Usage(f"-o {args.output}: exists and is not a directory; give a directory path")
    profile = load_profile(args.profile) if args.profile else None
    total = 1
    for values in grid.values():
        total *= len(values)
    bar = None
    if sys.stderr.isatty():
        # here, not at the top: it loads tqdm (start-up time)
        from tqdm import tqdm

        bar = tqdm(total=total, unit="config", desc="sweep", file=sys.stderr)
    progress = (lambda done, n: bar.update(done - bar.n)) if bar is not None else None  # done: configurations
    try:
        result = sweep(
            scenario,
            grid,
            profile,
            args.executor,
            args.address,
            args.workers,
            progress,
            overrides,
            screen_thrash=args.screen_thrash,
            finalists=args.finalists,
            screen=not args.full,
        )
    finally:
        if bar is not None:
            bar.close()
    table = result.table
    print(sweep_table(table, grid))
    notes = (
        extrapolation_note(table, result.resimulated, args.finalists),
        thrash_screen_note(table, result.screen_thrash, result.resimulated, args.finalists),
    )
    for note in notes:
        if note:
            print("\n" + note)
    if result.sensitivity is not None:  # how much the answer rests on the learning side
        print("\n" + "\n".join(sensitivity_lines(result.sensitivity)))
    if args.output is not None:
        _write_sweep(args.output, scenario, grid, args.executor, result)
    failed = table["error"].notna().sum() if "error" in table else 0
    if failed:
        print(f"rlsim: warning: {failed} configuration(s) failed; see the error column", file=sys.stderr)
    return 0


def _write_sweep(out: Path, scenario: Any, grid: dict[str, list[Any]], executor: str, result: Any) -> None:
    """A sweep's files in ``out`` (each written atomically), then one line naming them."""
    out.mkdir(parents=True, exist_ok=True)
    table = result.table
    meta = {
        "rlsim_version": __import__("rlsim").__version__,
        "scenario": scenario.name,
        "scenario_hash": scenario.digest(),
        "seed": scenario.run.seed,
        "grid": grid,
        "executor": executor,
        "profile": result.profile_info,
        "configurations": len(table),
        "screen_thrash": result.screen_thrash,  # None: every row with the scenario's own thrash model
        "screened": result.screened,  # rows to the target ran at most their band's window (column extrapolated)
        "resimulated": list(result.resimulated),
        "learning_sensitivity": result.sensitivity,  # rlsim.answers.sensitivity
    }
    files = {
        "scenario.resolved.yaml": lambda p: p.write_text(dump_yaml(scenario)),
        "sweep.csv": lambda p: table.to_csv(p, index=False),
        "sweep.parquet": lambda p: table.to_parquet(p, index=False),
        "curves.csv": lambda p: result.curves.to_csv(p, index=False),
        "engine_curves.csv": lambda p: result.engine_curves.to_csv(p, index=False),
        "sweep.json": lambda p: p.write_text(json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n"),
    }
    for name, write in files.items():
        atomic_write(out / name, write)
    print(f"\nwrote {out}/: {' '.join(files)}")


def cmd_report(args: argparse.Namespace) -> int:
    # here, not at the top: it loads pandas (start-up time)
    from rlsim.answers.figures import ReportError
    from rlsim.answers.report import build_report, export_pngs

    if not args.directory.is_dir():
        raise _Usage(f"{args.directory}: not a directory; give the -o directory of rlsim sweep or rlsim run")
    page, figures = build_report(args.directory)
    out = args.output or args.directory / "report.html"
    if out.exists() and out.is_dir():
        raise _Usage(f"-o {out}: is a directory; give a file name such as report.html")
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, lambda p: p.write_text(page))
    print(f"wrote {out}")
    if args.png:
        try:
            for path in export_pngs(figures, out.parent):
                print(f"wrote {path}")
        except ReportError as exc:
            print(f"rlsim: warning: {exc}", file=sys.stderr)
            return 1
    return 0


def cmd_import_config(args: argparse.Namespace) -> int:
    # here, not at the top: it loads rlsim.frameworks (start-up time)
    from rlsim.frameworks.config_import import import_config

    framework_set = parse_overrides(args.set or [])
    scenario_set = parse_overrides(args.scenario_set or [], flag="--scenario-set")
    if args.output.exists() and args.output.is_dir():
        raise _Usage(f"-o {args.output}: is a directory; give a file name such as scenario.yaml")
    imported = import_config(args.config, args.format, framework_set, scenario_set)
    for warning in imported.warnings:
        print(f"rlsim: note: {warning}", file=sys.stderr)
    if imported.unused:
        print(
            f"rlsim: note: {len(imported.unused)} {imported.fmt} key(s) of {args.config} not used (no rlsim field; "
            f"listed under assumptions): {', '.join(imported.unused)}",
            file=sys.stderr,
        )

    args.output.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(imported.scenario, sort_keys=False, width=120)
    atomic_write(args.output, lambda p: p.write_text(text))
    print(f"wrote {args.output}")
    return 0


def _check_log(args: argparse.Namespace) -> tuple[str, dict[str, int]]:
    """The log's format (--format, else the one whose step timer its rows hold), refused with the fix when the
    file is missing or is not that format's log."""
    # here, not at the top: it loads rlsim.frameworks (start-up time)
    from rlsim.frameworks.logs.read import FORMAT_SPECS, FORMATS, timer_counts

    if not args.log.is_file():
        raise _Usage(
            f"{args.log}: no such log file; give the path of the framework's metrics log (JSON Lines, CSV or its"
            " console output)"
        )
    if args.format is not None and args.format not in FORMATS:
        raise _Usage(f"--format {args.format}: unknown log format; {suggest(args.format, FORMATS)}")
    counts = timer_counts(args.log)
    found = max(counts, key=lambda f: counts[f]) if any(counts.values()) else None
    fmt = args.format or found
    if fmt is None:
        hints = ", ".join(f"{f} {FORMAT_SPECS[f].timer_hint}" for f in FORMATS)
        raise _Usage(f"{args.log}: no row holds a step timer of any format ({hints}); is it a metrics log?")
    if counts[fmt] == 0 and found is not None:
        raise _Usage(
            f"{args.log}: no {fmt} step timer ({FORMAT_SPECS[fmt].timer_hint}) but {counts[found]} row(s) of a "
            f"{found} log; pass --format {found}"
        )
    return fmt, counts


def cmd_check(args: argparse.Namespace) -> int:
    # here, not at the top: they load rlsim.frameworks, numpy, simpy (start-up time)
    from rlsim.answers.check import check, check_text
    from rlsim.frameworks.config_import import import_config
    from rlsim.frameworks.logs.read import FORMAT_SPECS, format_problems, import_log
    from rlsim.run.simulation import configure

    fmt, _ = _check_log(args)
    if args.steps is not None and args.steps < 1:
        raise _Usage(f"--steps {args.steps}: must be >= 1 (the last N logged steps are compared)")
    if args.output is not None and args.output.exists() and not args.output.is_dir():
        raise _Usage(f"-o {args.output}: exists and is not a directory; give a directory path")
    overrides = parse_overrides(args.set or [])
    if args.gpu:
        overrides["hardware.gpu"] = args.gpu
    profile = load_profile(args.profile) if args.profile else None
    gpu_note = None
    if args.config is not None:
        framework_set = parse_overrides(args.config_set or [], flag="--config-set")
        imported = import_config(args.config, fmt, framework_set, overrides)
        scenario = configure(imported.scenario, profile)
        if "hardware.gpu" not in overrides:  # said once the check has run
            gpu_note = f"rlsim: note: GPU {scenario.hardware.gpu.name} assumed; pass --gpu to name yours"
    else:
        scenario = configure(args.scenario, profile, overrides)
    w = scenario.workload
    imported_log = import_log(args.log, fmt, prompts_per_step=w.prompts_per_step, group_size=w.group_size)
    if imported_log.problems:
        print(f"rlsim: warning: {format_problems(imported_log)}", file=sys.stderr)
    together = FORMAT_SPECS[fmt].together
    result, res = check(
        scenario,
        imported_log.records,
        together=together,
        profile=profile,
        last=args.steps,
        source=str(args.log),
        fmt=fmt,
    )
    if args.output is not None:
        write_outputs(res, args.output)
        text = json.dumps(result.as_dict(), indent=2, sort_keys=True) + "\n"
        atomic_write(args.output / "check.json", lambda p: p.write_text(text))
    print(json.dumps(result.as_dict(), indent=2, sort_keys=True) if args.json else check_text(result))
    if args.output is not None and not args.json:
        print(f"\nwrote {args.output}/: the predicted run's files and check.json (rlsim report {args.output})")
    if gpu_note:
        print(gpu_note, file=sys.stderr)
    return 0


class _Usage(RlsimError):
    """A usage error found after parsing (reported like the others, exit 2)."""


# the commands whose parsers are cheap to build: the planner's parser lives in rlsim.plan.cli, whose package imports
# the planner (pandas, the sweep machinery), so `rlsim run` leaves it out (build_parser(command))
_LEAN_COMMANDS = ("run", "decide", "sweep", "report", "import-config", "check")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``rlsim`` parser. ``command``: the subcommand about to be parsed, when it is known; for one of
    ``_LEAN_COMMANDS`` the ``plan`` subparser (and the import of the planner) is left out, which changes nothing
    that command parses or prints. Without it (help, a mistyped command, ``plan``) every subcommand is there."""
    parser = argparse.ArgumentParser(prog="rlsim", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"rlsim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_run(sub)
    _add_decide(sub)
    _add_sweep(sub)
    _add_report(sub)
    if command not in _LEAN_COMMANDS:
        # here, not at the top: it loads numpy (start-up time)
        from rlsim.plan.cli import add_plan_parser

        add_plan_parser(sub)
    _add_import_config(sub)
    _add_check(sub)
    return parser


def _add_check(sub: Any) -> None:
    """``rlsim check``."""
    chk = sub.add_parser("check", help="a framework's metrics log against rlsim's prediction, phase by phase")
    chk.add_argument(
        "log",
        type=Path,
        help="the framework's metrics log: JSON Lines or CSV (wandb, file logger) or console output (verl, NeMo RL)",
    )
    src = chk.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", type=Path, help="the run's framework config (as rlsim import-config reads it)")
    src.add_argument("--scenario", type=Path, help="an rlsim scenario YAML instead of a framework config")
    chk.add_argument("--format", help="verl, openrlhf, nemo-rl or trl (default: the one whose step timer the log has)")
    chk.add_argument("--gpu", help="the GPU the run used (catalog name, e.g. H100-SXM, H200); sets hardware.gpu")
    chk.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a scenario field")
    chk.add_argument(
        "--config-set", action="append", default=[], metavar="KEY=VALUE", help="override a framework key (--config)"
    )
    chk.add_argument("--steps", type=int, help="compare the last N logged steps (default: all but step 1)")
    chk.add_argument("--profile", type=Path, help="calibrated profile JSON (from rlsim-calibrate fit)")
    chk.add_argument("--json", action="store_true", help="print the comparison as JSON")
    chk.add_argument("-o", "--output", type=Path, help="directory for the predicted run's files and check.json")
    chk.set_defaults(func=cmd_check)


def _add_run(sub: Any) -> None:
    """``rlsim run``."""
    run = sub.add_parser("run", help="simulate a scenario and print its step time and throughput")
    run.add_argument("scenario", type=Path, help="scenario YAML file (see scenarios/)")
    run.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario field, e.g. --set workload.prompts_per_step=1024 (repeatable)",
    )
    run.add_argument("--profile", type=Path, help="calibrated profile JSON (from rlsim-calibrate fit)")
    run.add_argument("-o", "--output", type=Path, help="directory for the per-step tables, trace and summary")
    run.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    run.set_defaults(func=cmd_run)


def _add_decide(sub: Any) -> None:
    """``rlsim decide``."""
    dec = sub.add_parser("decide", help="does a candidate reach the target sooner than a baseline?")
    dec.add_argument("scenario", type=Path, help="scenario YAML file with a learning model")
    dec.add_argument("--baseline", required=True, metavar="K=V[,K=V]", help="overrides for the baseline")
    dec.add_argument("--candidate", required=True, metavar="K=V[,K=V]", help="overrides for the candidate")
    dec.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override for both sides")
    dec.add_argument("--profile", type=Path, help="calibrated profile JSON")
    dec.add_argument("--json", action="store_true", help="print the decision as JSON")
    dec.set_defaults(func=cmd_decide)


def _add_sweep(sub: Any) -> None:
    """``rlsim sweep``."""
    sw = sub.add_parser("sweep", help="simulate every combination of a grid, one row per configuration")
    sw.add_argument("scenario", type=Path, help="scenario YAML file (its sweep.grid is the default grid)")
    sw.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="a swept key and its values (repeatable); replaces the scenario's grid",
    )
    sw.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override for all configurations")
    sw.add_argument("--profile", type=Path, help="calibrated profile JSON")
    sw.add_argument("--executor", choices=("local", "ray"), default="local", help="local processes or Ray")
    sw.add_argument("--address", help="address of an existing Ray cluster (with --executor ray)")
    sw.add_argument("--workers", type=int, help="local processes (default: one per two CPUs)")
    sw.add_argument(
        "--screen-thrash",
        choices=("fast", "exact"),
        default="fast",
        help="how rows whose KV cache thrashes are simulated (engine.thrash_model; default fast: step time within "
        "1%% of exact); the best --finalists of them again with the scenario's own",
    )
    sw.add_argument(
        "--finalists",
        type=int,
        default=5,
        help="best rows (extrapolated or thrashing) simulated again in full with the scenario's own thrash model",
    )
    sw.add_argument(
        "--full",
        action="store_true",
        help="simulate every row to its target (default: each runs its band's window, about 40 steps, and is "
        "extrapolated at its steady step time; the best --finalists in full)",
    )
    sw.add_argument("-o", "--output", type=Path, help="directory for the sweep table and curves")
    sw.set_defaults(func=cmd_sweep)


def _add_report(sub: Any) -> None:
    """``rlsim report``."""
    rep = sub.add_parser("report", help="one self-contained HTML report from a sweep or run directory")
    rep.add_argument("directory", type=Path, help="the -o directory of rlsim sweep or rlsim run")
    rep.add_argument("-o", "--output", type=Path, help="HTML file to write (default: DIRECTORY/report.html)")
    rep.add_argument("--png", action="store_true", help="also write each figure as PNG (needs Chrome + kaleido)")
    rep.set_defaults(func=cmd_report)


def _add_import_config(sub: Any) -> None:
    """``rlsim import-config``."""
    imp = sub.add_parser(
        "import-config", help="write an rlsim scenario from a verl, TRL, OpenRLHF or NeMo RL training config"
    )
    imp.add_argument(
        "config",
        type=Path,
        help="the framework's config (YAML or JSON; NeMo RL a recipe) or the launch script that runs it",
    )
    imp.add_argument(
        "--format",
        help="the framework the file is for: verl, trl, openrlhf, nemo-rl, or another registered adapter "
        "(python -m rlsim.frameworks.registry lists them); default: the one its entry point or keys name",
    )
    imp.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a framework key before mapping, e.g. --set actor_rollout_ref.rollout.n=8 (repeatable)",
    )
    imp.add_argument(
        "--scenario-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override an rlsim scenario field after mapping, e.g. --scenario-set hardware.gpu=H200 (repeatable)",
    )
    imp.add_argument("-o", "--output", type=Path, required=True, help="scenario YAML file to write")
    imp.set_defaults(func=cmd_import_config)


def run_command(prog: str, args: object, interrupted: str = "interrupted") -> int:
    """Run a parsed command (``args.func(args)``): bad input (an RlsimError) prints one line ``PROG: error: ...``
    on stderr and returns 2; Ctrl-C returns 130. Shared by rlsim, rlsim-real and rlsim-calibrate."""
    try:
        return args.func(args)  # type: ignore[attr-defined]
    except RlsimError as exc:
        print(f"{prog}: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: {interrupted}", file=sys.stderr)
        return 130


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    command = args[0] if args and args[0] in _LEAN_COMMANDS else None
    if command in ("run", "decide"):
        # one process and no linear algebra: numpy's BLAS thread pool would only cost start-up time (50 ms of
        # 0.4 s on a busy 2-core machine); a value the user set wins, and numpy already imported keeps its own
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    return run_command("rlsim", parse(build_parser(command), args))


def parse(parser: argparse.ArgumentParser, args: list[str]) -> argparse.Namespace:
    """``parser.parse_args(args)``, except that an option the subcommand does not know is refused with the nearest
    one it does (``--fulll``: did you mean --full?), on the subcommand's usage line, before a required option that
    the misspelt one meant is reported missing (``--candiate``)."""
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    own = sub.choices.get(args[0]) if sub is not None and args else None
    if own is not None:
        known = _known(own)  # argparse takes a unique prefix of an option too (--cand for --candidate)
        words = [a for a in args[1:] if a.startswith("--") and a != "--"]
        _refuse_unknown(own, [a for a in words if not any(k.startswith(a.split("=")[0]) for k in known)])
    ns, extra = parser.parse_known_args(args)
    if extra:
        _refuse_unknown(own or parser, extra)
    return ns


def _known(parser: argparse.ArgumentParser) -> list[str]:
    return sorted(o for o in parser._option_string_actions if o.startswith("--"))


def _refuse_unknown(own: argparse.ArgumentParser, extra: list[str]) -> None:
    """``own.error`` naming the unknown arguments and the nearest known option of each (exits); none: returns."""
    if not extra:
        return
    hints = []
    for word in extra:
        near = difflib.get_close_matches(word.split("=")[0], _known(own), n=1) if word.startswith("--") else []
        if near:
            hints.append(f"did you mean {near[0]} for {word}?")
    own.error(f"unrecognized arguments: {' '.join(extra)}" + (f" ({' '.join(hints)})" if hints else ""))


if __name__ == "__main__":
    sys.exit(main())
