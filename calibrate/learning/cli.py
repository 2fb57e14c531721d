"""``rlsim-calibrate fit-learning``, ``fit-staleness``, ``fit-groups`` and ``fit-filtering``: the learning side's
fits from run logs, each read, printed and written into a profile here (the other modules of calibrate.learning
hold the work). :func:`add_parsers` puts them on ``rlsim-calibrate``'s subcommands."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path
from typing import Any

from calibrate import CalibrateError
from rlsim.io.files import atomic_write_text, read_json
from rlsim.io.runlog import RunLogError, read_jsonl
from rlsim.run.profile import Profile, load_profile


def _read_run(path: Path) -> list[dict]:
    """A run's step records from a run directory (its runlog.jsonl) or a run-log file."""
    log = path / "runlog.jsonl" if path.is_dir() else path
    if not log.is_file():
        raise CalibrateError(f"{path}: no run log; give run directories (with runlog.jsonl) or runlog.jsonl files")
    try:
        return list(read_jsonl(log))
    except RunLogError as exc:
        raise CalibrateError(str(exc)) from None


def _run_config(path: Path) -> dict:
    """The config.json of a run directory, or beside a run log (rlsim-real train); {} when there is none."""
    cfg = path / "config.json" if path.is_dir() else path.parent / "config.json"
    return read_json(cfg, "rerun the run or restore the file") if cfg.is_file() else {}


def _run_lr_rule(path: Path) -> str | None:
    """The LR rule in a run's config.json (rlsim-real train), or None for a bare run log."""
    return _run_config(path).get("lr_rule")


def cmd_fit_learning(args: argparse.Namespace) -> int:
    # loaded when the command runs: rlsim-calibrate starts without scipy
    from calibrate.learning.fit import fit_learning

    profile = load_profile(args.profile)  # before the fit: a bad profile fails fast
    runs = [_read_run(p) for p in args.runs]
    rules = {_run_lr_rule(p) for p in args.runs} - {None}
    if len(rules) > 1:
        raise CalibrateError(f"the runs used LR rules {', '.join(sorted(rules))}; fit the runs of one rule")
    knob = _family_knob(args, runs)
    if knob in ("group", "staleness"):  # runs at one batch: the family alone
        return _fit_family_only(args, profile, runs, knob)
    fit = fit_learning(runs, args.target, args.reference_batch, lr_rule=rules.pop() if rules else None)
    learning = fit.to_profile_learning()
    family = None
    if knob == "batch":
        # loaded when the command runs: rlsim-calibrate starts without scipy
        from calibrate.learning.family import fit_family, with_family

        family = fit_family(runs, args.target, "batch", fit.reference_batch, boots=args.boots)
        learning = with_family(learning, family)
    _write_learning(args, profile, learning, "learning_runs", learning_command=" ".join(sys.argv))
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
    if family is not None:
        print("\n".join(family.lines()))
        for note in family.notes:
            print(f"note: {note}")
        print("the profile's batch term is the family table (learning.family.batch; batch_multiplier invariant)")
    print(f"\nwrote {args.output} (learning fitted on {len(runs)} runs at reference batch {fit.reference_batch})")
    return 0


def _family_knob(args: argparse.Namespace, runs: list[list[dict]]) -> str | None:
    """The knob --family fits over: the one given, or (auto) the one knob whose value differs between the runs."""
    if not args.family:
        return None
    # loaded when the command runs: rlsim-calibrate starts without scipy
    from calibrate.learning.family import varying_knobs

    varying = varying_knobs(runs)
    if args.family != "auto":
        if args.family != "batch" and "batch" in varying:
            raise CalibrateError(
                f"--family {args.family} fits runs at one batch; these run at several: give the runs of one batch"
            )
        return args.family
    if len(varying) != 1:
        which = ", ".join(varying) if varying else "none"
        raise CalibrateError(
            f"--family: the knobs that differ between the runs are {which}; name one (--family batch, group or "
            "staleness) with runs that differ in it"
        )
    return varying[0]


def _fit_family_only(args: argparse.Namespace, profile: Profile, runs: list[list[dict]], knob: str) -> int:
    """fit-learning --family group / staleness: the reference value's curve and the family table, from runs at one
    batch (calibrate.learning.family)."""
    # loaded when the command runs: rlsim-calibrate starts without scipy
    from calibrate.learning.family import family_learning, fit_family

    family = fit_family(runs, args.target, knob, args.reference, boots=args.boots)
    learning = family_learning(family, runs, args.target)
    _write_learning(args, profile, learning, "learning_runs", learning_command=" ".join(sys.argv))
    print("\n".join(family.lines()))
    for note in family.notes:
        print(f"note: {note}")
    print(f"\nwrote {args.output} (learning.family.{knob} from {len(runs)} runs, reference {family.reference:g})")
    return 0


def _learning_profile(args: argparse.Namespace, what: str) -> Profile | None:
    """The --profile of a fit that adds ``what`` to a learning model (None without --profile): it must hold one
    (fit-learning's), and -o must say where the result goes."""
    profile = load_profile(args.profile) if args.profile else None
    if profile is not None and not (profile.learning or {}).get("metric"):
        raise CalibrateError(f"{args.profile}: no learning model to add {what} to; run fit-learning first")
    if profile is not None and args.output is None:
        raise CalibrateError("--profile needs -o/--output: the profile JSON to write (may be --profile)")
    return profile


def _write_learning(
    args: argparse.Namespace, profile: Profile, learning: dict, runs_key: str, **provenance: str
) -> None:
    """``profile`` with ``learning`` in place of its learning section and the runs named under ``runs_key`` (and
    ``provenance``) in its provenance, written atomically to -o."""
    prov = {**profile.provenance, runs_key: [str(p) for p in args.runs], **provenance}
    atomic_write_text(args.output, dataclasses.replace(profile, provenance=prov, learning=learning).dumps() + "\n")


def cmd_fit_staleness(args: argparse.Namespace) -> int:
    # loaded when the command runs: rlsim-calibrate starts without scipy
    from calibrate.learning.staleness import fit_staleness, profile_learning

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
    # loaded when the command runs: rlsim-calibrate starts without scipy
    from calibrate.learning.groups import fit_groups

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
    # loaded when the command runs: rlsim-calibrate starts without scipy
    from calibrate.learning.filtering import fit_filtering

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


def add_parsers(sub: Any) -> None:
    """The four subcommands on ``sub`` (rlsim-calibrate's subparsers)."""
    fl = sub.add_parser("fit-learning", help="fit the learning model from run logs into a profile")
    fl.add_argument("runs", type=Path, nargs="+", help="run directories (runlog.jsonl) or runlog.jsonl files")
    fl.add_argument("--target", type=float, required=True, help="eval metric target for samples-to-target")
    fl.add_argument("--reference-batch", type=int, help="responses per step of the curve kept (default: smallest)")
    fl.add_argument("--profile", type=Path, required=True, help="profile JSON to add the learning model to")
    fl.add_argument("-o", "--output", type=Path, required=True, help="profile JSON to write (may be --profile)")
    fl.add_argument(
        "--family",
        nargs="?",
        const="auto",
        choices=("auto", "batch", "group", "staleness"),
        help="fit the curve family over the knob that differs between the runs (or the one named): which of S_mid, "
        "b and A it moves, written as learning.family.<knob>",
    )
    fl.add_argument("--reference", type=float, help="with --family group/staleness: the reference G or staleness")
    fl.add_argument("--boots", type=int, default=100, help="with --family: bootstrap resamples over seeds (0: none)")
    fl.set_defaults(func=cmd_fit_learning)

    fs = _profile_fit(
        sub,
        "fit-staleness",
        "which staleness form async runs at several stalenesses follow",
        "run directories (runlog.jsonl) or runlog.jsonl files",
        "the form",
        cmd_fit_staleness,
    )
    fs.add_argument(
        "--initial",
        type=float,
        help="the metric before training (default: the runs' eval_metric_initial, else their first evaluation)",
    )
    fg = _profile_fit(
        sub,
        "fit-groups",
        "whether responses per prompt count apart from the batch in your runs",
        "run directories or runlog.jsonl files: one batch, two+ G",
        "the result",
        cmd_fit_groups,
    )
    fg.add_argument("--target", type=float, required=True, help="the eval metric to reach (a pass rate in [0, 1])")
    fg.add_argument("--reference-group-size", type=int, help="the G the others are predicted from (default: most runs)")
    ff = _profile_fit(
        sub,
        "fit-filtering",
        "what DAPO's dynamic sampling saves per trained sample in your runs",
        "run directories or runlog.jsonl files: one batch, both kinds",
        "the power",
        cmd_fit_filtering,
    )
    ff.add_argument("--target", type=float, required=True, help="the eval metric to reach")


def _profile_fit(sub: Any, name: str, about: str, runs: str, what: str, func: Any) -> argparse.ArgumentParser:
    """A fit that reads run logs and, with --profile, writes ``what`` into its learning section at -o."""
    p = sub.add_parser(name, help=about)
    p.add_argument("runs", type=Path, nargs="+", help=runs)
    p.add_argument("--profile", type=Path, help=f"profile JSON (with a learning model) to write {what} into")
    p.add_argument("-o", "--output", type=Path, help="profile JSON to write (with --profile)")
    p.set_defaults(func=func)
    return p
