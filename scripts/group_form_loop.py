"""Responses per prompt, second loop (issue 33, must-show 4): the spread model (prompt pass rates spread around the
mean, correlated responses to one prompt; rlsim.learning.groups) fitted to runs at some G of one batch, then
predicted, before they run, at other G of that batch and at every G of another batch.

    python scripts/group_form_loop.py -o out/group_form [--seeds 5] [--fit 2,8,32] [--held-out 4,16] [--batch 128]
        [--new-batch 64] [--target 0.8] [--jobs 2] [--task last:partial=0] [--max-steps 300]

Every run is ``rlsim-real train`` with scripts/staleness_loop.py's flags (tiny model, sqrt LR from 2.5e-4 at 128,
4 mini-batches, one torch thread) and ``--task``, ``--max-steps`` (at ``--new-batch`` scaled to the same samples),
P = B / G; a run whose directory holds ``summary.json`` is not run again unless it is shorter (then it is extended
from its checkpoint), so the script resumes.

1. The fit runs: B = ``--batch`` at the ``--fit`` G (the reference G = 8 among them).
2. The fit (calibrate/learning/groups.py): the prompt concentration from the fit runs' logged
   ``zero_variance_groups``, the group correlation from their samples-to-target at the G other than 8.
3. ``group_form_predictions.json``, with the time it was written: per model (batch: B = P x G alone; groups: the
   informative share with every prompt at the curve's pass rate; spread: the fitted model) the samples-to-target
   multiplier against G = 8 at each held-out G of ``--batch`` and at each G of ``--new-batch``; the new batch's
   G = 8 runs are its anchor (measured, not predicted), as the fit runs' G = 8 are at ``--batch``.
4. The held-out runs, then ``group_form.md`` / ``group_form.json``: predicted against measured (the seeds' median
   samples to ``--target``, a seed that never reaches it counted as latest), each model's RMS log error per batch,
   and the informative share the fitted concentration gives at each logged step's accuracy against the logged one.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from staleness_loop import ROOT, run_all  # noqa: E402

sys.path.insert(0, str(ROOT))
from calibrate.learning.groups import (  # noqa: E402
    fit_spread,
    group_multipliers,
    median_reached,
    reference_point,
    seeds_reaching,
    share_steps,
)
from rlsim.io.runlog import read_jsonl  # noqa: E402
from rlsim.learning.groups import informative_share  # noqa: E402

REFERENCE_G = 8
MODELS = ("batch", "groups", "spread")


def name(batch: int, g: int, seed: int) -> str:
    return f"B{batch}_G{g}_s{seed}"


def runs_at(out: Path, batch: int, g: int, seeds: int) -> list[list[dict]]:
    return [list(read_jsonl(out / "runs" / name(batch, g, s) / "runlog.jsonl")) for s in range(seeds)]


def jobs(batch: int, groups: list[int], seeds: int, common: list[str]) -> list[tuple[str, list[str]]]:
    return [
        (name(batch, g, s), ["--seed", str(s), "--prompts-per-step", str(batch // g), "--group-size", str(g), *common])
        for s in range(seeds)
        for g in groups
    ]


def extend(out: Path, todo: list[tuple[str, list[str]]], steps: int) -> list[tuple[str, list[str]]]:
    """The runs of ``todo`` with their summary's stale when shorter than ``steps`` (run_all extends them)."""
    for run, _ in todo:
        config = out / "runs" / run / "config.json"
        if config.exists() and json.loads(config.read_text())["max_steps"] < steps:
            (out / "runs" / run / "summary.json").unlink(missing_ok=True)
    return todo


def measured_median(out: Path, batch: int, g: int, seeds: int, target: float) -> tuple[float, list]:
    values = seeds_reaching(runs_at(out, batch, g, seeds), target)
    return median_reached(values), values


def predict(out: Path, args: argparse.Namespace, fit_gs: list[int], held: list[int], new: list[int]) -> dict:
    """Step 2-3: the fit on the fit runs and every model's multipliers (module docstring)."""
    by_g = {g: runs_at(out, args.batch, g, args.seeds) for g in fit_gs}
    median = {g: median_reached(seeds_reaching(got, args.target)) for g, got in by_g.items()}
    ratio = {g: median[g] / median[REFERENCE_G] for g in fit_gs}
    ref = by_g[REFERENCE_G]
    steps = share_steps([r for got in by_g.values() for r in got], [g for g, got in by_g.items() for _ in got])
    k, rho = fit_spread(steps, reference_point(ref, args.target, REFERENCE_G), REFERENCE_G, ratio)
    targets = sorted(set(held) | set(new))
    spread = group_multipliers(ref, args.target, REFERENCE_G, targets, k, rho)
    plain = group_multipliers(ref, args.target, REFERENCE_G, targets)
    return {
        "written": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "target": args.target,
        "fit_runs": {str(g): args.seeds for g in fit_gs},
        "fit_measured_ratio": {str(g): v for g, v in ratio.items()},
        "prompt_concentration": k,
        "group_correlation": rho,
        "multiplier": {
            "batch": {str(g): 1.0 for g in targets},
            "groups": {str(g): plain[g] for g in targets},
            "spread": {str(g): spread[g] for g in targets},
        },
    }


def compare(out: Path, args: argparse.Namespace, pred: dict, table: dict[int, list[int]]) -> tuple[list, list[str]]:
    """Step 4: per batch, predicted against measured and each model's RMS log error."""
    rows, lines = [], []
    for batch, groups in table.items():
        ref_n, _ = measured_median(out, batch, REFERENCE_G, args.seeds, args.target)
        lines += [f"B = {batch} (anchor G = {REFERENCE_G}: {ref_n:,.0f} samples to {args.target:g})", ""]
        lines += [
            "| G | P | batch | groups | spread | measured median (seeds) | never |",
            "|---|---|---|---|---|---|---|",
        ]
        errors = {m: [] for m in MODELS}
        for g in groups:
            med, values = measured_median(out, batch, g, args.seeds, args.target)
            predicted = {m: ref_n * pred["multiplier"][m][str(g)] for m in MODELS}
            for m in MODELS:
                if math.isfinite(med):
                    errors[m].append(math.log(predicted[m] / med))
            rows.append({"batch": batch, "group_size": g, "predicted": predicted, "measured": values,
                         "measured_median": None if math.isinf(med) else med})  # fmt: skip
            seeds = ", ".join("-" if v is None else f"{v:,.0f}" for v in values)
            cells = " | ".join(f"{predicted[m]:,.0f}" for m in MODELS)
            shown = "never" if math.isinf(med) else f"{med:,.0f}"
            lines.append(f"| {g} | {batch // g} | {cells} | {shown} ({seeds}) | {sum(v is None for v in values)} |")
        rms = {m: math.sqrt(float(np.mean(np.square(e)))) if e else math.nan for m, e in errors.items()}
        lines += ["", "RMS log error: " + ", ".join(f"{m} {e:.3f}" for m, e in rms.items()), ""]
    return rows, lines


def share_lines(out: Path, args: argparse.Namespace, pred: dict, table: dict[int, list[int]]) -> list[str]:
    """The informative share the fitted concentration (and every prompt at p) gives at each logged step's accuracy,
    against the share logged, per batch and G (steps with accuracy 0.02-0.98)."""
    lines = ["| B | G | steps | logged share of informative groups | spread model | every prompt at p |"]
    lines.append("|---|---|---|---|---|---|")
    for batch, groups in table.items():
        for g in groups:
            st = share_steps(runs_at(out, batch, g, args.seeds), [g] * args.seeds)
            if st.pass_rate.size == 0:
                continue
            model = informative_share(st.pass_rate, g, pred["prompt_concentration"])
            plain = informative_share(st.pass_rate, g)
            logged = float(np.mean(st.informative))
            lines.append(
                f"| {batch} | {g} | {st.pass_rate.size} | {logged:.2f} | {model.mean():.2f} | {plain.mean():.2f} |"
            )
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", type=Path, required=True)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--fit", default="2,8,32")
    p.add_argument("--held-out", default="4,16")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--new-batch", type=int, default=64)
    p.add_argument("--target", type=float, default=0.8)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--task", default="last:partial=0")
    p.add_argument("--max-steps", type=int, default=300)
    args = p.parse_args()
    fit_gs = sorted({int(x) for x in args.fit.split(",")} | {REFERENCE_G})
    held = sorted({int(x) for x in args.held_out.split(",")} - set(fit_gs))
    new = sorted({*fit_gs, *held} - {REFERENCE_G})
    for b in (args.batch, args.new_batch):
        if any(b % g or g < 2 for g in [*fit_gs, *held]):
            p.error(f"every G in --fit and --held-out must divide the batch {b} and be at least 2")
    out, common = args.output, ["--task", args.task, "--max-steps", str(args.max_steps)]
    new_steps = args.max_steps * args.batch // args.new_batch  # the same samples at the new batch
    new_common = ["--task", args.task, "--max-steps", str(new_steps)]
    print(f"1. fit runs: B = {args.batch}, G = {fit_gs}", flush=True)
    run_all(out, jobs(args.batch, fit_gs, args.seeds, common), args.jobs)
    pred_path = out / "group_form_predictions.json"
    if not pred_path.exists():
        pred_path.write_text(json.dumps(predict(out, args, fit_gs, held, new), indent=1) + "\n")
    pred = json.loads(pred_path.read_text())
    print(
        f"2-3. {pred_path}: concentration {pred['prompt_concentration']}, correlation {pred['group_correlation']:.3f}"
    )
    print(f"4. held-out runs: B = {args.batch} at G = {held}; B = {args.new_batch} at G = {[REFERENCE_G, *new]}")
    run_all(out, extend(out, jobs(args.new_batch, [REFERENCE_G], args.seeds, new_common), new_steps), args.jobs)
    new_jobs = extend(out, jobs(args.new_batch, new, args.seeds, new_common), new_steps)
    run_all(out, jobs(args.batch, held, args.seeds, common) + new_jobs, args.jobs)
    table = {args.batch: held, args.new_batch: new}
    rows, lines = compare(out, args, pred, table)
    lines += share_lines(out, args, pred, {args.batch: fit_gs + held, args.new_batch: [REFERENCE_G, *new]})
    (out / "group_form.json").write_text(json.dumps(rows, indent=1) + "\n")
    (out / "group_form.md").write_text(f"Predictions written {pred['written']}.\n\n" + "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
