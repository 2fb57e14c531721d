"""``rlsim-calibrate import``: a framework's metrics log into a run log (the work is
:mod:`calibrate.importers.convert`'s, imported when the command runs: it loads every framework adapter).
:func:`add_parsers` puts the command on ``rlsim-calibrate``'s subcommands."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def cmd_import(args: argparse.Namespace) -> int:
    # loaded when the command runs: rlsim-calibrate starts without every framework adapter (rlsim.frameworks)
    from calibrate.importers.convert import format_problems, import_log, write_runlog

    result = import_log(args.log, args.format, prompts_per_step=args.prompts_per_step, group_size=args.group_size)
    write_runlog(result, args.output)
    print(f"imported {len(result.records)} step(s) from {args.log} into {args.output}")
    if result.problems:
        print(format_problems(result), file=sys.stderr)
    return 0


def add_parsers(sub: Any) -> None:
    """``import`` on ``sub`` (rlsim-calibrate's subparsers)."""
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
