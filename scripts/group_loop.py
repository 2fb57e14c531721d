"""Responses per prompt on a real model (issue 33, must-show 4): runs at one group size G fit the curve, rlsim
predicts samples-to-target at other G at the same batch, those runs are made and compared.

    python scripts/group_loop.py -o out/groups [--seeds 5] [--groups 2,4,16,32] [--target 0.8] [--jobs 2]
        [--task last] [--max-steps 200]

The reference runs are scripts/staleness_loop.py's synchronous ones (``k0_s*``: G = 8, P = 16, the same flags), so
one output folder serves both (with the default task and steps; another task needs its own folder). The
prediction, per G: the reference seeds' median samples to ``--target`` times rlsim's group multiplier
(rlsim.learning.groups, along the sigmoid fitted to the reference runs), against B = P x G alone (multiplier 1).
``group_predictions.json`` is written, with its time, before any other G runs; then the runs, then ``groups.md`` /
``groups.json``: measured median samples to target (a seed that never reaches it counted as latest).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from staleness_loop import ROOT, run_all  # noqa: E402

sys.path.insert(0, str(ROOT))
from calibrate.learning.groups import group_multipliers, median_reached, reference_curve, seeds_reaching  # noqa: E402
from rlsim.io.runlog import read_jsonl  # noqa: E402

BATCH, REFERENCE_G = 128, 8


def run_dir(out: Path, g: int, seed: int) -> Path:
    return out / "runs" / (f"k0_s{seed}" if g == REFERENCE_G else f"G{g}_s{seed}")


def runs_at(out: Path, g: int, seeds: int) -> list[list[dict]]:
    return [list(read_jsonl(run_dir(out, g, s) / "runlog.jsonl")) for s in range(seeds)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", type=Path, required=True)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--groups", default="2,4,16,32")
    p.add_argument("--target", type=float, default=0.8)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--task", default="last", help="rlsim-real task spec, e.g. last:partial=0 (reward = accuracy)")
    p.add_argument("--max-steps", type=int, default=200)
    args = p.parse_args()
    groups = sorted({int(x) for x in args.groups.split(",")} - {REFERENCE_G})
    if any(BATCH % g or g < 2 for g in groups):
        p.error(f"--groups must divide the batch {BATCH} and be at least 2")
    out = args.output
    common = ["--task", args.task, "--max-steps", str(args.max_steps)]
    ref = [["--seed", str(s), *common] for s in range(args.seeds)]
    print(f"1. reference runs (G = {REFERENCE_G})", flush=True)
    run_all(out, [(f"k0_s{s}", extra) for s, extra in enumerate(ref)], args.jobs)
    pred_path = out / "group_predictions.json"
    if not pred_path.exists():
        ref_runs = runs_at(out, REFERENCE_G, args.seeds)
        measured = median_reached(seeds_reaching(ref_runs, args.target))
        if math.isinf(measured):
            raise SystemExit(f"the reference runs' median never reached {args.target}: lower --target")
        multiplier = group_multipliers(ref_runs, args.target, REFERENCE_G, groups)
        pred = {
            "written": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "target": args.target,
            "curve": dataclasses.asdict(reference_curve(ref_runs)),
            "reference_measured": measured,
            "multiplier": {str(g): m for g, m in multiplier.items()},
            "predicted": {str(g): measured * m for g, m in multiplier.items()},
        }
        pred_path.write_text(json.dumps(pred, indent=1) + "\n")
        print(f"2. wrote {pred_path}: " + ", ".join(f"G={g} x{m:.2f}" for g, m in pred["multiplier"].items()))
    pred = json.loads(pred_path.read_text())
    print(f"3. runs at G = {groups}, B = {BATCH}", flush=True)
    jobs = [
        (f"G{g}_s{s}", ["--seed", str(s), "--prompts-per-step", str(BATCH // g), "--group-size", str(g), *common])
        for s in range(args.seeds)
        for g in groups
    ]
    run_all(out, jobs, args.jobs)
    rows, lines = [], ["| G | P | predicted (group term) | B = P x G alone | measured median (seeds) | never |"]
    lines.append("|---|---|---|---|---|---|")
    for g in [REFERENCE_G, *groups]:
        values = seeds_reaching(runs_at(out, g, args.seeds), args.target)
        med = median_reached(values)
        predicted = pred["reference_measured"] * (pred["multiplier"].get(str(g), 1.0))
        rows.append({"group_size": g, "predicted": predicted, "batch_alone": pred["reference_measured"],
                     "measured_median": None if math.isinf(med) else med, "measured": values})  # fmt: skip
        seeds = ", ".join("-" if v is None else f"{v:,.0f}" for v in values)
        lines.append(
            f"| {g} | {BATCH // g} | {predicted:,.0f} | {pred['reference_measured']:,.0f} | "
            f"{'never' if math.isinf(med) else f'{med:,.0f}'} ({seeds}) | {sum(v is None for v in values)} |"
        )
    (out / "groups.json").write_text(json.dumps(rows, indent=1) + "\n")
    (out / "groups.md").write_text("\n".join(lines) + "\n")
    print("4. predicted against measured:\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
