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
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from staleness_loop import ROOT, run_all  # noqa: E402

sys.path.insert(0, str(ROOT))
from calibrate.learning_fit.curve import first_crossing, fit_sigmoid_checked  # noqa: E402
from calibrate.learning_fit.fit import _run_points  # noqa: E402
from calibrate.learning_fit.staleness import run_initial  # noqa: E402
from rlsim.io.runlog import read_jsonl  # noqa: E402
from rlsim.learning.groups import group_multiplier  # noqa: E402
from rlsim.learning.model import reference_samples_to_target  # noqa: E402

BATCH, REFERENCE_G = 128, 8


def run_dir(out: Path, g: int, seed: int) -> Path:
    return out / "runs" / (f"k0_s{seed}" if g == REFERENCE_G else f"G{g}_s{seed}")


def reached(out: Path, g: int, seeds: int, target: float) -> list[float | None]:
    """Each seed's samples to ``target`` (None: never within the run)."""
    out_ = []
    for seed in range(seeds):
        s, m = _run_points(list(read_jsonl(run_dir(out, g, seed) / "runlog.jsonl")), seed)
        out_.append(first_crossing(s, m, target))
    return out_


def median_reached(values: list[float | None]) -> float | None:
    """The median with seeds that never reached counted as infinitely late (None when half or more never did)."""
    ordered = sorted(v if v is not None else np.inf for v in values)
    mid = float(np.median(ordered))
    return mid if np.isfinite(mid) else None


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
        runs = [list(read_jsonl(run_dir(out, REFERENCE_G, s) / "runlog.jsonl")) for s in range(args.seeds)]
        points = [_run_points(r, i) for i, r in enumerate(runs)]
        s_all = np.concatenate([s for s, _ in points])
        m_all = np.concatenate([m for _, m in points])
        order = np.argsort(s_all, kind="stable")
        r0 = float(np.mean([v for v in map(run_initial, runs) if v is not None]))
        curve = fit_sigmoid_checked(s_all[order], m_all[order], r0, 0.0, 1.0).to_metric_curve()
        n_model = reference_samples_to_target(curve, args.target)
        measured = median_reached(reached(out, REFERENCE_G, args.seeds, args.target))
        if measured is None:
            raise SystemExit(f"the reference runs' median never reached {args.target}: lower --target")
        pred = {
            "written": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "target": args.target,
            "curve": dataclasses.asdict(curve),
            "reference_measured": measured,
            "multiplier": {str(g): group_multiplier(curve, n_model, g, REFERENCE_G) for g in groups},
        }
        pred["predicted"] = {g: measured * m for g, m in pred["multiplier"].items()}
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
        values = reached(out, g, args.seeds, args.target)
        med = median_reached(values)
        predicted = pred["reference_measured"] * (pred["multiplier"].get(str(g), 1.0))
        rows.append({"group_size": g, "predicted": predicted, "batch_alone": pred["reference_measured"],
                     "measured_median": med, "measured": values})  # fmt: skip
        seeds = ", ".join("-" if v is None else f"{v:,.0f}" for v in values)
        lines.append(
            f"| {g} | {BATCH // g} | {predicted:,.0f} | {pred['reference_measured']:,.0f} | "
            f"{'never' if med is None else f'{med:,.0f}'} ({seeds}) | {sum(v is None for v in values)} |"
        )
    (out / "groups.json").write_text(json.dumps(rows, indent=1) + "\n")
    (out / "groups.md").write_text("\n".join(lines) + "\n")
    print("4. predicted against measured:\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
