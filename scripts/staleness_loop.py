"""The staleness loop on a real model (issue 33, must-show 4): stale-policy runs at some maximum stalenesses, the
staleness form fitted to them, predictions for other stalenesses written down, then those runs made and compared.

    python scripts/staleness_loop.py -o out/staleness [--seeds 5] [--fit 0,1,2,4,32] [--held-out 8,16] [--jobs 2]

Every run is ``rlsim-real train`` (GRPO on the ``last`` task from the tiny random model, B = 16 x 8, sqrt LR 2.5e-4,
4 mini-batches per step, so the proximal policy moves within a step as in AReaL's PPO, 200 steps, eval of 128
held-out prompts every 5 steps, one torch thread) with ``--staleness K --staleness-loss L``; K = 0 runs are shared by
both losses. A run whose directory holds ``summary.json`` is not run again, so the script resumes. Per loss:

1. the fit runs (``--fit``) -> ``rlsim-calibrate fit-staleness``'s fit (calibrate/learning/staleness.py);
2. ``predictions.json``: each form's predicted eval curve and kept gain at each held-out staleness, with the time
   they were written; the held-out runs have not started then;
3. the held-out runs;
4. ``comparison.md`` / ``comparison.json``: predicted against measured (the seeds' mean curve; the kept gain at the
   fit's common sample count, with the seeds' range).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibrate.learning.checks import run_points  # noqa: E402
from calibrate.learning.curve import first_crossing  # noqa: E402
from calibrate.learning.staleness import FORMS, fit_staleness, metric_near  # noqa: E402
from rlsim.io.runlog import read_jsonl  # noqa: E402

LOSSES = ("naive_ppo", "decoupled_ppo")
TRAIN = (
    "--task last --algo grpo --engine hf --prompts-per-step 16 --group-size 8 --lr0 2.5e-4 --lr-rule sqrt "
    "--max-steps 200 --eval-every 5 --eval-size 128 --threads 1 --mini-batches 4"
).split()


def run_name(loss: str, k: int, seed: int) -> str:
    return f"k0_s{seed}" if k == 0 else f"{loss}_k{k}_s{seed}"


def run_all(out: Path, names: list[tuple[str, list[str]]], jobs: int) -> None:
    def one(item: tuple[str, list[str]]) -> None:
        name, extra = item
        d = out / "runs" / name
        if (d / "summary.json").exists():
            return
        cmd = ["rlsim-real", "train", *TRAIN, *extra, "-o", str(d)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
        (d / "summary.json").write_text(proc.stdout)
        print(f"  ran {name}", flush=True)

    with ThreadPoolExecutor(jobs) as ex:
        list(ex.map(one, names))


def jobs_for(ks: list[int], seeds: int) -> list[tuple[str, list[str]]]:
    out = {}
    for seed in range(seeds):
        for loss in LOSSES:
            for k in ks:
                extra = ["--seed", str(seed)] + ([] if k == 0 else ["--staleness", str(k), "--staleness-loss", loss])
                out[run_name(loss, k, seed)] = extra
    return list(out.items())


def logs(out: Path, loss: str, ks: list[int], seeds: int) -> dict[int, list[list[dict]]]:
    return {
        k: [list(read_jsonl(out / "runs" / run_name(loss, k, s) / "runlog.jsonl")) for s in range(seeds)] for k in ks
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", type=Path, required=True)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--fit", default="0,1,2,4,32", help="stalenesses the forms are fitted to (include 0)")
    p.add_argument("--held-out", default="8,16", help="stalenesses predicted, then run")
    p.add_argument("--jobs", type=int, default=2, help="runs at once")
    args = p.parse_args()
    fit_ks = sorted({int(x) for x in args.fit.split(",")})
    held = sorted({int(x) for x in args.held_out.split(",")})
    if 0 not in fit_ks or set(fit_ks) & set(held):
        p.error("--fit must include 0 and share no staleness with --held-out")
    out = args.output
    (out / "runs").mkdir(parents=True, exist_ok=True)
    print(f"1. fit runs: stalenesses {fit_ks}, {args.seeds} seeds, both losses", flush=True)
    run_all(out, jobs_for(fit_ks, args.seeds), args.jobs)
    pred_path = out / "predictions.json"
    if not pred_path.exists():
        pred_path.write_text(json.dumps(predict(out, fit_ks, held, args.seeds), indent=1) + "\n")
        print(f"2. wrote {pred_path} before any held-out run", flush=True)
    predictions = json.loads(pred_path.read_text())
    print(f"3. held-out runs: stalenesses {held}", flush=True)
    run_all(out, [j for j in jobs_for(held, args.seeds) if not j[0].startswith("k0_")], args.jobs)
    compare(out, predictions, held, args.seeds)
    return 0


def predict(out: Path, fit_ks: list[int], held: list[int], seeds: int) -> dict:
    """Per loss: the fit on the runs at ``fit_ks`` and every form's predicted curve and kept gain at ``held``."""
    predictions: dict = {"written": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "fit": fit_ks, "held_out": held}
    for loss in LOSSES:
        runs = [r for k, rs in logs(out, loss, fit_ks, seeds).items() for r in rs]
        fit = fit_staleness(runs)
        grid = np.unique(np.concatenate([run_points(r, i)[0] for i, r in enumerate(runs)]))
        predictions[loss] = {
            "chosen": fit.loss,
            "rms": fit.rms,
            "penalty_per_step": fit.penalty_per_step,
            "spread": fit.spread,
            "free_steps": fit.free_steps,
            "constants": [fit.constants.free_steps, fit.constants.ceiling_loss, fit.constants.half_steps],
            "initial": fit.initial,
            "at_samples": fit.at_samples,
            "base_gain": fit.base_gain,
            "retained_fit": {str(k): v for k, v in fit.retained.items()},
            "samples": grid.tolist(),
            "curves": {f: {str(k): fit.predict(f, k, grid).tolist() for k in held} for f in FORMS},
            "kept": {
                f: {str(k): float((fit.predict(f, k, [fit.at_samples])[0] - fit.initial) / fit.base_gain) for k in held}
                for f in FORMS
            },
        }
        print(f"   {loss}: {fit.loss} (rms " + ", ".join(f"{f} {e:.3f}" for f, e in fit.rms.items()) + ")")
    return predictions


def compare(out: Path, predictions: dict, held: list[int], seeds: int) -> None:
    """Predicted against measured per loss, held-out staleness and form: the kept gain at the fit's common samples,
    the samples to R0 + 3/4 of the k0 runs' gain (the seeds' median, a seed that never gets there counted as
    latest; from the predicted curve as written) and the curve's RMS against the seeds' mean curve."""
    head = (
        "| loss | k | form | kept: predicted | measured (seeds' range) | samples to level: predicted | "
        "measured median | curve RMS |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    rows = []
    for loss in LOSSES:
        pr = predictions[loss]
        grid = np.array(pr["samples"])
        level = pr["initial"] + 0.75 * pr["base_gain"]
        for k, runs in logs(out, loss, held, seeds).items():
            points = [run_points(r, i) for i, r in enumerate(runs)]
            measured = [(metric_near(s, m, pr["at_samples"]) - pr["initial"]) / pr["base_gain"] for s, m in points]
            mean_curve = np.mean([np.interp(grid, s, m) for s, m in points], axis=0)
            hits = sorted(first_crossing(s, m, level) or math.inf for s, m in points)
            med = float(np.median(hits))
            for form in FORMS:
                curve = np.array(pr["curves"][form][str(k)])
                rms = float(np.sqrt(np.mean((curve - mean_curve) ** 2)))
                reach = np.flatnonzero(curve >= level)
                pred_n = float(grid[reach[0]]) if reach.size else math.inf
                row = {"loss": loss, "k": k, "form": form, "chosen": form == pr["chosen"],
                       "predicted_kept": pr["kept"][form][str(k)], "measured_kept": float(np.mean(measured)),
                       "measured_range": [min(measured), max(measured)], "level": level,
                       "predicted_samples": pred_n, "measured_samples_median": med,
                       "measured_samples": hits, "curve_rms": rms}  # fmt: skip
                rows.append(row)
                mark = " (chosen)" if row["chosen"] else ""
                lines.append(
                    f"| {loss} | {k} | {form}{mark} | {row['predicted_kept']:.2f} | {row['measured_kept']:.2f} "
                    f"({min(measured):.2f}-{max(measured):.2f}) | {_n(pred_n)} | {_n(med)} | {rms:.3f} |"
                )
    (out / "comparison.json").write_text(json.dumps(rows, indent=1, default=str) + "\n")
    (out / "comparison.md").write_text("\n".join(lines) + "\n")
    print("4. predicted against measured:\n" + "\n".join(lines))


def _n(samples: float) -> str:
    return "never" if math.isinf(samples) else f"{samples:,.0f}"


if __name__ == "__main__":
    raise SystemExit(main())
