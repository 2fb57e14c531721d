"""``rlsim plan SCENARIO``: the command line of the planner (rlsim.plan).

``rlsim plan SCENARIO [--objective time|cost|gpu-hours] [--gpus N | --max-gpus N] [--gpu-types A,B]
[--schedules colocated,separate,async-1,...] [--deadline-h H] [--budget-usd X] [--price GPU=USD ...]
[--grid key=v1,v2 ...] [--set key=value ...] [--profile FILE] [--assume-learning paper] [--finalists K]
[--exhaustive] [--executor local|ray]
[--address ADDR] [--workers N] [-o DIR] [--emit verl|trl|openrlhf|nemo-rl [--original FILE]] [--json]``

Prints the answer (the user's configuration, the winner, why it wins, and per batch size and LR rule why the
others lose), the Pareto front and what was pruned or not screened (its lower bounds already lose:
rlsim.plan.bound; ``--exhaustive`` screens it); ``-o DIR`` writes plan.csv, plan.json, report.html,
scenario.resolved.yaml and winner.yaml (rlsim.plan.output); ``--emit FMT`` writes the winner in that framework's
keys (a patch file and the equivalent command-line overrides), over ``--original`` (the framework config the
scenario was imported from) when given; ``--original`` alone emits in the framework its entry point or keys name.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from rlsim.errors import RlsimError
from rlsim.host.progress import Progress
from rlsim.plan import plan
from rlsim.plan.assume import assumed_learning
from rlsim.plan.prices import parse_price_overrides
from rlsim.run.profile import load_profile
from rlsim.scenario import from_dict, load_scenario, parse_overrides
from rlsim.scenario.build import check_key_path


def add_plan_parser(sub: Any) -> None:
    p = sub.add_parser("plan", help="search batch, LR rule, schedule, split, parallelism and GPUs for the best plan")
    p.add_argument("scenario", type=Path, help="scenario YAML file with a learning model (your configuration)")
    p.add_argument("--objective", choices=("time", "cost", "gpu-hours"), default="time", help="what to minimize")
    p.add_argument("--gpus", type=int, help="a fixed number of GPUs (default: the scenario's)")
    p.add_argument("--max-gpus", type=int, help="search GPU counts in powers of two up to this many")
    p.add_argument("--gpu-types", help="GPU types to search, comma-separated catalog names (default: the scenario's)")
    p.add_argument("--schedules", help="schedules to search: colocated, separate, async-K (default: all four)")
    p.add_argument("--deadline-h", type=float, help="only configurations reaching the target within H hours")
    p.add_argument("--budget-usd", type=float, help="only configurations costing at most this much to the target")
    p.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="GPU=USD",
        help="US dollars per GPU-hour for a GPU type, over the catalog and the scenario's plan.prices (repeatable)",
    )
    p.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="replace an axis (e.g. workload.prompts_per_step=64,128) or add a key to search (repeatable)",
    )
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override for every configuration")
    p.add_argument("--profile", type=Path, help="calibrated profile JSON")
    p.add_argument(
        "--assume-learning",
        choices=("paper",),
        help="plan with the seed paper's learning model anchored at your batch (for a scenario without one, e.g. "
        "from rlsim import-config); printed as an assumption",
    )
    p.add_argument("--finalists", type=int, default=5, help="best configurations simulated in full (default 5)")
    p.add_argument(
        "--screen-thrash",
        choices=("fast", "exact"),
        default="fast",
        help="how the screen simulates a KV-cache thrash (engine.thrash_model; default fast: about 1.5x faster "
        "where engines preempt, step time within 0.5%%); finalists use the scenario's own",
    )
    p.add_argument(
        "--exhaustive",
        action="store_true",
        help="screen every configuration (default: not those whose lower bounds, generation free, already lose: "
        "the same answer, fewer simulations; rlsim.plan.bound)",
    )
    p.add_argument("--executor", choices=("local", "ray"), default="local", help="local processes or Ray")
    p.add_argument("--address", help="address of an existing Ray cluster (with --executor ray)")
    p.add_argument("--workers", type=int, help="local processes (default: one per two CPUs)")
    p.add_argument("-o", "--output", type=Path, help="directory for plan.csv, plan.json, report.html, winner.yaml")
    p.add_argument(
        "--emit",
        metavar="FRAMEWORK",
        help="write the winner in this framework's keys (verl, trl, openrlhf, nemo-rl or another registered adapter; "
        "needs -o)",
    )
    p.add_argument(
        "--original",
        type=Path,
        help="the framework config the scenario was imported from, patched by --emit (without --emit: in its own "
        "framework, as its entry point or keys name it)",
    )
    p.add_argument("--json", action="store_true", help="print plan.json on stdout instead of the text answer")
    p.set_defaults(func=cmd_plan)


def _names(text: str | None, flag: str) -> list[str] | None:
    if text is None:
        return None
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise RlsimError(f"{flag} {text!r} lists nothing; give comma-separated names")
    return names


def cmd_plan(args: argparse.Namespace) -> int:
    # here, not at the top: it loads pandas (start-up time)
    from rlsim.answers.sweep import parse_grid
    from rlsim.plan.explain import explain
    from rlsim.plan.output import plan_json

    _check_args(args)
    overrides = parse_overrides(args.set or [])
    scenario = load_scenario(args.scenario, overrides)
    assumed = None
    if args.assume_learning:
        learning, assumed = assumed_learning(scenario, args.assume_learning)
        scenario = load_scenario(args.scenario, {**learning, **overrides})  # --set keys still win
    grid = parse_grid(args.grid) if args.grid else None
    if grid:  # a misspelt axis would prune every candidate as an unknown key: refuse it before any work
        for key, values in grid.items():
            check_key_path(key, values)
    prices = parse_price_overrides(args.price)
    profile = load_profile(args.profile) if args.profile else None
    if args.assume_learning and profile is not None and profile.learning_overrides():
        raise RlsimError(
            f"--assume-learning {args.assume_learning} and --profile {args.profile} (which has a fitted learning "
            "model) both give the learning model; drop one"
        )
    bar, progress = _progress(args.json, "screen" if args.exhaustive else "bounds")
    try:
        result = plan(
            scenario,
            objective=args.objective,
            grid=grid,
            gpu_types=_names(args.gpu_types, "--gpu-types"),
            gpus=args.gpus,
            max_gpus=args.max_gpus,
            schedules=_names(args.schedules, "--schedules"),
            deadline_h=args.deadline_h,
            budget_usd=args.budget_usd,
            prices=prices,
            profile=profile,
            executor=args.executor,
            address=args.address,
            workers=args.workers,
            progress=progress,
            explicit=overrides,
            finalists=args.finalists,
            screen_thrash=args.screen_thrash,
            prune=not args.exhaustive,
        )
    finally:
        if bar is not None:
            bar.close()
    if assumed:
        result.notes.insert(0, assumed)
    lines = explain(result)
    command = "rlsim " + " ".join(sys.argv[1:])  # how the plan was asked for (plan.json, the report)
    if args.json:
        print(json.dumps(plan_json(result, lines, command), indent=2, allow_nan=False, default=str))
    else:
        _print_text(result, lines)
    if args.output is not None:
        _write(result, args, lines, command)
    return 0


def _check_args(args: argparse.Namespace) -> None:
    """Flags that contradict each other or name what does not exist, refused before any work."""
    if args.original is not None and not args.emit:  # the original's own framework (its entry point or keys)
        if not args.original.is_file():
            raise RlsimError(f"--original {args.original}: no such file; give the framework config you imported")
        # here, not at the top: it loads rlsim.frameworks (start-up time)
        from rlsim.frameworks import registry

        args.emit = registry.choose(args.original, None)[0]
    if args.emit and args.output is None:
        raise RlsimError("--emit writes a patch file: give -o DIR")
    if args.emit:
        # here, not at the top: it loads rlsim.frameworks (start-up time)
        from rlsim.frameworks import registry

        if args.emit not in registry.names():
            near = difflib.get_close_matches(args.emit, registry.names(), n=1)
            hint = f"did you mean {near[0]}? " if near else ""
            raise RlsimError(
                f"--emit {args.emit!r} is not a framework rlsim writes; {hint}use one of: {', '.join(registry.names())}"
            )
    if args.original is not None and not args.original.is_file():
        raise RlsimError(f"--original {args.original}: no such file; give the framework config you imported")
    if args.finalists < 0:
        raise RlsimError(f"--finalists {args.finalists}: give 0 or more")
    if args.output is not None and args.output.exists() and not args.output.is_dir():
        raise RlsimError(f"-o {args.output}: exists and is not a directory; give a directory path")


def _progress(quiet: bool, first: str = "screen") -> tuple[Any, Any]:
    """The progress bar (None with --json) and its callback: the bounds (generation free), screening, then the
    finalists simulated in full, each stage its own count (rlsim.host.progress)."""
    titles = {
        "bounds": "plan: lower bounds (generation free)",
        "screen": "plan: screening",
        "finalists": "plan: finalists simulated in full",
    }
    bar = None if quiet else Progress(titles[first], "configuration")

    def progress(done: int, total: int, stage: str = "screen") -> None:
        if bar is None:
            return
        if bar.desc != titles[stage]:
            bar.stage(titles[stage], total)
        bar.update(done, total)

    return bar, progress


def _write(result: Any, args: argparse.Namespace, lines: list[str], command: str) -> None:
    """The plan's files in -o DIR (and the --emit patch), then one line naming them."""
    # here, not at the top: it loads pandas (start-up time)
    from rlsim.plan.output import write_plan

    out = sys.stderr if args.json else sys.stdout  # with --json, stdout holds the JSON only
    emitted: list[Path] = []
    patch = None
    if args.emit and result.winner is not None:
        emitted, patch = _emit(result, args, out)
    written = write_plan(result, args.output, lines, command, patch) + emitted
    if args.emit and result.winner is None:
        print(f"\nnothing to emit for {args.emit}: no configuration meets the constraints", file=out)
    print(f"\nwrote {', '.join(str(p) for p in written)}", file=out)


def _print_text(result: Any, lines: list[str]) -> None:
    t = result.table
    pruned = t[t["status"] == "pruned"]
    bounded = int((t["status"] == "bounded").sum())
    print(
        f"rlsim plan: {result.scenario.name}, objective {result.objective}: {len(t)} configurations, "
        f"{len(pruned)} pruned, {bounded} not screened (their lower bounds lose; --exhaustive screens them), "
        f"{int(t['feasible'].sum())} feasible of those screened, {int((t.get('fidelity') == 'full').sum())} "
        "simulated in full"
    )
    for line in result.space.describe():
        print(f"  searched {line}")
    print()
    print("\n".join(lines))
    if len(pruned):
        reasons = Counter(str(r).split(";")[0] for r in pruned["reason"])
        print(f"\npruned ({len(pruned)}), by reason:")
        for reason, n in reasons.most_common(5):
            print(f"  {n:>5} x {reason[:150]}")
        if len(reasons) > 5:
            print(f"  ... {len(reasons) - 5} other reasons (plan.csv has every row's)")
    front = t[t["pareto"]].sort_values("time_to_target_s")
    if len(front):
        ycol = "cost_usd" if front["cost_usd"].notna().all() else "gpu_hours_to_target"
        print(f"\nPareto front (time-to-target vs {'cost' if ycol == 'cost_usd' else 'GPU-hours'}):")
        for r in front.itertuples():
            y = getattr(r, ycol)
            y_text = f"${y:,.0f}" if ycol == "cost_usd" else f"{y:,.0f} GPU-h"
            print(
                f"  config {r.config:>5}: {r.time_to_target_s / 3600:7.2f} h  {y_text:>12}  P={r.prompts_per_step} "
                f"LR {r.lr_rule} {r.schedule} {r.split} TP{r.engine_tp} {r.num_gpus} x {r.gpu} ({r.fidelity})"
            )
    for note in result.notes:
        print(f"note: {note}")


def _emit(result: Any, args: argparse.Namespace, out: Any) -> tuple[list[Path], list[str]]:
    """Write the winner in the framework's format; returns the files and the patch's lines for the report."""
    # here, not at the top: it loads pandas, rlsim.frameworks (start-up time)
    from rlsim.frameworks.config_import import framework_sets
    from rlsim.frameworks.emit import emit, write_emitted
    from rlsim.plan.output import winner_scenario

    data = winner_scenario(result)
    assert data is not None  # _write emits only when the plan has a winner
    scn = from_dict(data)
    # the original needs the --set items it was imported with (a model name, a GPU count): read back from the
    # imported scenario's assumptions, so --emit works for any import
    sets = framework_sets(list(scn.assumptions)) if args.original is not None else []
    emitted = emit(args.emit, scn, args.original, sets)
    written = write_emitted(emitted, args.emit, args.output)
    shown = " ".join(emitted.overrides) or "(none: your config is the plan)"
    print(f"\n{args.emit} overrides for the winner: {shown}", file=out)
    for line in emitted.launch:
        print(f"launch: {line}", file=out)
    for note in emitted.notes:
        print(f"note: {note}", file=out)
    patch = [f"# {args.emit} overrides for the winner", *emitted.overrides, *(f"# launch: {x}" for x in emitted.launch)]
    return written, patch
