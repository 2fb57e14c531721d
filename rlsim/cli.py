"""The ``rlsim`` command line. Files are written here (and in the report layer), never by the library.

``rlsim run SCENARIO [--set key=value ...] [--profile FILE] [-o DIR] [--json]``
    prints a summary table; with -o writes DIR/scenario.resolved.yaml, steps.csv, steps.parquet, runlog.jsonl,
    trace.json (Chrome trace, opens in Perfetto) and summary.json; --json prints the summary JSON on stdout.

Bad input (scenario, profile, overrides) prints one line ``rlsim: error: ...`` to stderr and exits with 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXIT_USAGE = 2


def _fmt_table(summary: dict[str, Any]) -> str:
    rows = [
        ("scenario", f"{summary['scenario']} ({summary['scenario_hash']})"),
        (
            "model / hardware",
            f"{summary['model']} on {summary['num_gpus']} x {summary['gpu']}, {summary['schedule']}"
            + (f" k={summary['max_staleness']}" if summary["max_staleness"] else ""),
        ),
        (
            "batch",
            f"P={summary['prompts_per_step']} x G={summary['group_size']} = {summary['responses_per_step']} "
            "responses/step",
        ),
        ("steps simulated", f"{summary['steps']} ({summary['steady_state_steps']} steady state)"),
        (
            "step time",
            f"{summary['step_time_s']:.2f} s (p10 {summary['step_time_p10_s']:.2f}, "
            f"p90 {summary['step_time_p90_s']:.2f})",
        ),
        ("samples/s", f"{summary['samples_per_s']:.2f}"),
        ("generation tokens/s", f"{summary['generation_tokens_per_s']:.0f}"),
        ("tokens/s/GPU", f"{summary['tokens_per_s_per_gpu']:.0f}"),
        ("mean response", f"{summary['mean_response_tokens']:.0f} tokens"),
        (
            "decode batch (mean)",
            f"{summary['mean_decode_batch']:.1f} seqs/iteration/replica, "
            f"{summary['preemptions_per_step']:.0f} preemptions/step",
        ),
    ]
    for pool, u in summary["utilization"].items():
        rows.append((f"utilization {pool}", f"{u * 100:.1f}% of {summary['gpus_per_pool'][pool]} GPUs"))
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    step = summary["step_time_s"]
    lines.append("")
    lines.append(f"{'phase':<{width}}  {'s/step':>9}  {'share':>6}")
    for phase, sec in summary["phase_time_s"].items():
        if sec > 0:
            lines.append(f"{phase:<{width}}  {sec:9.2f}  {sec / step * 100:5.1f}%")
    for w in summary.get("warnings") or []:
        lines.append(f"warning: {w}")
    return "\n".join(lines)


def _atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Write through a temporary file in the same folder, then rename: no half-written outputs."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_outputs(result: Any, out: Path) -> list[Path]:
    """Write the run's files into ``out`` (created if needed); returns their paths."""
    from rlsim import runlog
    from rlsim.scenario import dump_yaml

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
        _atomic_write(out / name, write)
        written.append(out / name)
    return written


def _progress_bar(total: int, enabled: bool) -> tuple[Callable[[int], None] | None, Callable[[], None]]:
    if not enabled or total < 50:
        return None, lambda: None
    from tqdm import tqdm

    bar = tqdm(total=total, unit="step", desc="simulating", file=sys.stderr, leave=False)
    return (lambda n: bar.update(1)), bar.close


def cmd_run(args: argparse.Namespace) -> int:
    from rlsim.scenario import load_scenario
    from rlsim.simulate import simulate

    scenario = load_scenario(args.scenario, args.set)
    if args.output is not None and args.output.exists() and not args.output.is_dir():
        raise _Usage(f"-o {args.output}: exists and is not a directory; give a directory path")
    progress, close = _progress_bar(scenario.run.steps, sys.stderr.isatty() and not args.json)
    try:
        result = simulate(scenario, profile=args.profile, progress=progress)
    finally:
        close()
    summary = result.summary()
    for w in result.warnings:
        print(f"rlsim: warning: {w}", file=sys.stderr)
    if args.output is not None:
        write_outputs(result, args.output)
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
    else:
        print(_fmt_table(summary))
        if args.output is not None:
            print(
                f"\nwrote {args.output}/: scenario.resolved.yaml steps.csv steps.parquet runlog.jsonl trace.json "
                "summary.json"
            )
    return 0


class _Usage(Exception):
    """A usage error found after parsing (reported like the others, exit 2)."""


def build_parser() -> argparse.ArgumentParser:
    from rlsim import __version__

    parser = argparse.ArgumentParser(prog="rlsim", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"rlsim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
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
    return parser


def main(argv: list[str] | None = None) -> int:
    from rlsim.engine import EngineCapacityError
    from rlsim.errors import RlsimError, one_line

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (RlsimError, EngineCapacityError, _Usage) as exc:
        print(f"rlsim: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("rlsim: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
