"""``rlsim-calibrate published``: predict published RL step times and generation throughput, print the accuracy,
with ``--cv KEY`` the cross-validated accuracy and with ``--anchor`` the anchored one (the package's other modules
hold the work: steps, generation, costs, cv, anchored; this module prints and writes what they return).
:func:`add_parsers` puts the command on ``rlsim-calibrate``'s subcommands."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from calibrate import CalibrateError
from rlsim import catalog
from rlsim.errors import ScenarioError
from rlsim.io.files import atomic_write_text, make_output_dir
from rlsim.phases import Phase
from rlsim.scenario import parse_scalar, split_assignment


def _print_summary(what: str, st: dict) -> None:
    if st["n_expressed"]:
        print(
            f"{what} over {st['n_expressed']} of {st['n_rows']} rows: median |error| "
            f"{st['median_abs_error_pct']:.1f}%, median signed error {st['bias_pct']:+.1f}%, within 10%: "
            f"{st['within_10_pct']:.0%}, within 25%: {st['within_25_pct']:.0%}, "
            f"max |error| {st['max_abs_error_pct']:.1f}%"
        )
    for r in st["not_expressed"]:
        print(f"not expressed: {r['run']} ({r['file']} row {r['row']}): {r['reason']}")


def cmd_published(args: argparse.Namespace) -> int:
    # loaded when the command runs: rlsim-calibrate starts without pandas and scipy
    from calibrate.published import generation as gen
    from calibrate.published import steps
    from calibrate.published.costs import check_costs, costs_set, fit_costs, split_fitted
    from calibrate.published.tables import split_inputs

    if args.cv is not None and not args.cv.strip():
        raise CalibrateError("--cv: name a key to hold out by (gpu, version, model, family, tp or a column)")
    if args.cv is not None and args.costs == "prior":
        raise CalibrateError("--cv prints its own no-fit column (every fitted constant at its prior): drop --costs")
    args.costs = args.costs or "shipped"
    costs, base_engines = costs_set(args.costs)
    for item in args.set or []:  # rlsim's key=value grammar (rlsim.scenario.overrides), keys costs.FIELD only
        usage = f"--set {item!r}: write costs.FIELD=VALUE (one set of costs for every row)"
        try:
            key, text = split_assignment(item)
        except ScenarioError:
            raise CalibrateError(usage) from None
        if not key.startswith("costs.") or "." in key[6:]:
            raise CalibrateError(usage)
        value = parse_scalar(text)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CalibrateError(f"--set {item!r}: {text!r} is not a number")
        costs[key[6:]] = float(value)
    check_costs(costs)
    base = dict(costs)  # what a cross-validation fold starts from (with its fitted names at their priors)
    if args.csv:
        step_paths, gen_paths = split_inputs([Path(p) for p in args.csv])
    else:
        step_paths, gen_paths = [steps.dev_set_path()], [gen.dev_set_path()]
    step_df = steps.read_rows(step_paths) if step_paths else None
    gen_df = gen.read_rows(gen_paths) if gen_paths else None
    if args.cv is not None:
        # loaded when the command runs: rlsim-calibrate starts without pandas and scipy
        from calibrate.published import cv as pcv

        pcv.check_key(args.cv.strip(), step_df, gen_df)
    out = make_output_dir(args.output, "directory for the outputs")
    engines: dict[str, dict[str, Any]] = {b: dict(v) for b, v in base_engines.items()}
    if args.fit is not None:
        names = [n.strip() for n in args.fit.split(",") if n.strip()]
        if not names:
            raise CalibrateError("--fit: name at least one costs field or BEHAVIOUR.FIELD, comma-separated")
        with catalog.engine_overrides(base_engines):
            fitted_all = fit_costs(step_df, gen_df, names, costs)
        costs, fitted_engines = split_fitted(fitted_all)
        for b, v in fitted_engines.items():
            engines.setdefault(b, {}).update(v)
        fitted = {
            "provenance": {
                "method": "least squares on log(predicted / measured) over every expressed row",
                "inputs": [str(p) for p in step_paths + gen_paths],
                "fitted": names,
                "started_from": args.costs,
                "date": time.strftime("%Y-%m-%d"),
                "command": " ".join(sys.argv),
            },
            "costs": {k: float(v) for k, v in costs.items()},
            "engines": fitted_engines,
        }
        atomic_write_text(out / "fitted_costs.yaml", yaml.safe_dump(fitted, sort_keys=False))  # for fitted.yaml
        print("fitted: " + ", ".join(f"{n}={fitted_all[n]:.4g}" for n in names))
    summary: dict = {
        "inputs": [str(p) for p in step_paths + gen_paths],
        "costs_set": args.costs,
        "costs": costs,
        "engines": engines,
    }
    with catalog.engine_overrides(engines):
        _published_tables(summary, step_df, gen_df, costs, out)
    if args.cv is not None:
        summary["cv"] = _published_cv(args, step_df, gen_df, base, out)
    if args.anchor:
        summary["anchored"] = _published_anchored(step_df, costs, args.costs, out)
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    print(f"wrote {out}/summary.json")
    return 0


def _published_tables(summary: dict, step_df, gen_df, costs: dict[str, float], out: Path) -> None:
    # loaded when the command runs: rlsim-calibrate starts without pandas and scipy
    from calibrate.published import generation as gen
    from calibrate.published import steps

    if step_df is not None:
        results = steps.evaluate(step_df, costs or None)
        summary["step_time"] = steps.summarize(results)
        atomic_write_text(out / "published.csv", steps.table(results).to_csv(index=False))
        print(f"{'run':<58} {'measured':>9} {'predicted':>9} {'error':>7}  phases (s): rollout/logprob/ref/train/sync")
        for r in results:
            if r.expressed:
                ph = r.phases_s
                parts = "/".join(
                    f"{ph.get(k, 0):.1f}"
                    for k in (Phase.ROLLOUT, Phase.OLD_LOGPROB, Phase.REF_LOGPROB, Phase.TRAIN_ACTOR, Phase.WEIGHT_SYNC)
                )
                print(f"{r.label[:58]:<58} {r.measured_s:>8.1f}s {r.predicted_s:>8.1f}s {r.error_pct:>+6.1f}%  {parts}")
        for r in results:
            if r.expressed and r.reason:
                print(f"note: {r.label} ({r.file} row {r.row}): {r.reason}")
        print()
        _print_summary("step time", summary["step_time"])
    if gen_df is not None:
        gresults = gen.evaluate(gen_df, costs or None)
        summary["generation"] = gen.summarize(gresults)
        atomic_write_text(out / "generation.csv", gen.table(gresults).to_csv(index=False))
        print(f"\n{'generation benchmark':<58} {'measured':>9} {'predicted':>9} {'error':>7}  (output tokens/s)")
        for r in gresults:
            if r.expressed:
                print(f"{r.label[:58]:<58} {r.measured:>9.0f} {r.predicted:>9.0f} {r.error_pct:>+6.1f}%")
        for r in gresults:
            if r.expressed and r.reason:  # predicted with a stated assumption (an engine release rlsim lacks)
                print(f"note: {r.label} ({r.file} row {r.row}): {r.reason}")
        print()
        _print_summary("generation tokens/s", summary["generation"])
        by_tp = summary["generation"]["by_tp"]
        print(
            "median error by tensor-parallel size: "
            + ", ".join(f"TP{tp} {v['median_error_pct']:+.1f}% (n={v['n']})" for tp, v in by_tp.items())
        )


def _published_cv(args: argparse.Namespace, step_df, gen_df, base: dict[str, float], out: Path) -> dict:
    """Leave-one-group-out accuracy of both tables (calibrate.published.cv); DIR gets cv.csv."""
    # loaded when the command runs: rlsim-calibrate starts without pandas and scipy
    import pandas as pd

    from calibrate.published import cv as pcv
    from calibrate.published.costs import prior_of

    key = args.cv.strip()
    names = [n.strip() for n in args.fit.split(",") if n.strip()] if args.fit else None
    result: dict = {"key": key}
    rows = []
    for table, df, default, what in (
        ("step", step_df, pcv.STEP_FIT, "step time"),
        ("generation", gen_df, pcv.GENERATION_FIT, "generation tokens/s"),
    ):
        if df is None:
            continue
        fold_names = names or list(default)
        priors = {n: prior_of(n) for n in fold_names}
        start = {**base, **{n: v for n, v in priors.items() if v is not None}}  # folds start at their priors
        cv = pcv.cross_validate(
            table, df, key, fold_names, start, progress=lambda m: print(f"cv: {m}", file=sys.stderr)
        )
        rows += [{"table": table, **r} for r in cv.pop("rows", [])]
        result["step_time" if table == "step" else "generation"] = cv
        print()
        print("\n".join(pcv.format_table(what, cv)))
    atomic_write_text(out / "cv.csv", pd.DataFrame(rows).to_csv(index=False))
    return result


def _published_anchored(step_df, costs: dict[str, float], costs_name: str, out: Path) -> dict:
    """Anchored accuracy of the step table (calibrate.published.anchored); DIR gets anchored.csv."""
    # loaded when the command runs: rlsim-calibrate starts without pandas and scipy
    import pandas as pd

    from calibrate.published import anchored

    if step_df is None:
        raise CalibrateError("--anchor: no step-time table among the inputs (columns of rl_step_times_dev.csv)")
    result = anchored.measure(step_df, costs, progress=lambda m: print(f"anchor: {m}", file=sys.stderr))
    pairs = result.pop("pairs")
    atomic_write_text(out / "anchored.csv", pd.DataFrame(pairs).to_csv(index=False))
    print()
    print(f"starting from the {costs_name} cost set")
    print("\n".join(anchored.format_table(result)))
    return result


def add_parsers(sub: Any) -> None:
    """``published`` on ``sub`` (rlsim-calibrate's subparsers)."""
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
        help="cost coefficients for every row: shipped (what rlsim run resolves to; the default) or prior (every "
        "constant fitted on published rows at its prior, rlsim/catalog/fitted.yaml: the no-fit baseline)",
    )
    pub.add_argument("--set", action="append", metavar="costs.FIELD=VALUE", help="one cost override for every row")
    pub.add_argument(
        "--fit",
        metavar="FIELD,FIELD",
        help="fit these coefficients, one set for every row of every table: costs fields, or BEHAVIOUR.FIELD for "
        "a named engine behaviour (rlsim/catalog/engines.yaml; a behaviour's own value takes precedence over the "
        "costs field's default, so fit it under its name); writes DIR/fitted_costs.yaml (the values go into "
        "the catalog: rlsim/catalog/fitted.yaml)",
    )
    pub.add_argument(
        "--cv",
        metavar="KEY",
        help="cross-validate: for each group of KEY (gpu, version, model, family, tp, or any column) fit on the "
        "other groups and predict it; prints and writes (summary.json cv, DIR/cv.csv) the held-out accuracy beside "
        "the in-sample and no-fit (prior) figures. Each fold fits --fit's names if given, else the default set's, "
        "starting from their priors",
    )
    pub.add_argument(
        "--anchor",
        action="store_true",
        help="anchored accuracy: within each group of step rows sharing model, release and GPU, anchor on each row's "
        "step time in turn (rlsim-calibrate anchor's fit) and predict the others; prints per group, writes "
        "DIR/anchored.csv and summary.json anchored (starts from the shipped values unless --costs names another set)",
    )
    pub.set_defaults(func=cmd_published)
