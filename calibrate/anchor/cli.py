"""``rlsim-calibrate anchor``: fit the few global cost coefficients on one measured step of the user's own job and
write them as a profile for ``rlsim run/sweep/plan --profile`` (the work is :mod:`calibrate.anchor.fit`'s and
:mod:`calibrate.anchor.source`'s, imported when the command runs: they load scipy and every framework adapter).
:func:`add_parsers` puts the command on ``rlsim-calibrate``'s subcommands."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from calibrate import CalibrateError
from rlsim.errors import RlsimError
from rlsim.io.files import atomic_write_text
from rlsim.scenario import apply_overrides, as_overrides, from_dict, load_scenario


def _scenario(args: argparse.Namespace) -> Any:
    """The job's scenario: ``--scenario`` YAML or ``--config`` (a framework config through import-config), each
    with ``--set`` on top."""
    # loaded when the command runs: rlsim-calibrate starts without every framework adapter (rlsim.frameworks)
    from rlsim.frameworks.config_import import import_config

    if (args.scenario is None) == (args.config is None):
        raise CalibrateError("describe the job with --scenario S.yaml or with --config CONFIG --format F (one)")
    if args.config is not None:
        if args.format in (None, "auto"):
            raise CalibrateError("--config needs --format (verl, openrlhf, trl or nemo-rl): the config's framework")
        try:
            raw = import_config(Path(args.config), args.format).raw
            return from_dict(apply_overrides(raw, as_overrides(args.set or [])))
        except RlsimError as exc:
            raise CalibrateError(f"--config {args.config}: {exc}") from None
    return load_scenario(args.scenario, args.set or None)


def cmd_anchor(args: argparse.Namespace) -> int:
    # loaded when the command runs: rlsim-calibrate starts without scipy and every framework adapter
    from calibrate.anchor import source
    from calibrate.anchor.fit import anchor, describe, to_profile

    if args.log is not None and (args.step_time is not None or args.phase):
        raise CalibrateError("give the step as LOG or typed (--step-time, --phase), not both")
    if args.output.exists() and args.output.is_dir():
        raise CalibrateError(f"-o {args.output}: is a directory; name the profile JSON to write")
    scenario = _scenario(args)
    if args.log is not None:
        fmt = args.format or "auto"
        w = scenario.workload
        measured = source.from_log(Path(args.log), fmt, w.prompts_per_step, w.group_size, args.step)
    else:
        if args.step is not None:
            raise CalibrateError("--step picks a step of LOG; with a typed step leave it out")
        measured = source.typed(args.step_time, args.phase or [])
    fit = anchor(scenario, measured)
    argv = sys.argv[1:] if sys.argv[1:2] == ["anchor"] else ["anchor"]  # called in-process (tests): the command
    command = shlex.join(["rlsim-calibrate", *argv])
    profile = to_profile(fit, scenario, command, time.strftime("%Y-%m-%d"))
    print(f"anchored on {measured.source}")
    print("\n".join(describe(fit)))
    atomic_write_text(args.output, profile.dumps() + "\n")
    print(f"wrote {args.output} (use it: rlsim run|sweep|plan SCENARIO --profile {args.output})")
    return 0


def add_parsers(sub: Any) -> None:
    """``anchor`` on ``sub`` (rlsim-calibrate's subparsers)."""
    p = sub.add_parser(
        "anchor",
        help="fit the global cost coefficients on one measured step of your job (a framework log or typed times) "
        "and write a profile",
        description="Step time alone fits one coefficient, the cluster speed (every compute and HBM efficiency "
        "scaled together); each measured phase fits its own (rollout: decode and prefill efficiencies; "
        "train_actor: training efficiency; old_logprob/ref_logprob: forward efficiency; weight_sync: host link "
        "or interconnect efficiency). docs/calibrate.md, 'One-step anchoring'.",
    )
    p.add_argument("log", nargs="?", help="a verl, OpenRLHF, TRL or NeMo RL metrics log (JSON Lines or CSV)")
    p.add_argument("--scenario", help="the job's scenario YAML")
    p.add_argument("--config", help="the job's framework config instead of --scenario (as rlsim import-config)")
    p.add_argument("--format", help="the framework of LOG and --config: verl, openrlhf, trl, nemo-rl (LOG: auto)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="a scenario override (repeatable)")
    p.add_argument("--step", type=int, help="anchor on this step of LOG (default: the median of steps 2..N)")
    p.add_argument("--step-time", type=float, metavar="S", help="a measured step time in seconds (typed)")
    p.add_argument("--phase", action="append", metavar="NAME=S", help="a measured phase time (typed, repeatable)")
    p.add_argument("-o", "--output", type=Path, required=True, help="profile JSON to write")
    p.set_defaults(func=cmd_anchor)
