"""A fully-async run and an offloaded optimizer on the hf engine, predicted before measured (issue 57, must-show 2).

    python scripts/cpu_async_offload.py -o out/cpu_async_offload [--rounds 3] [--predict-only]
        [--record DIR] [--earlier DIR]

Two setups, each built as ``rlsim-calibrate loop`` builds its scenarios: benches on this machine (one torch
thread), synchronous reference runs, ``rlsim-calibrate fit --runs ... --scenario-out``, then a prediction from that
profile and scenario with the variant's keys set:

* ``async``: GRPO on parity (tiny Llama, P = 16, G = 8, 8 new tokens), measured as
  ``rlsim-real train --fully-async --staleness 1`` (a generator process and the trainer, one thread each, on the
  2 cores), predicted with ``schedule.mode: async``, ``max_staleness: 1``, ``streaming: false`` (transformers'
  generate takes each batch in one call; rlsim's streaming window would let batches share an engine) on two
  one-thread "devices" (``placement: separate``, one each).
* ``offload``: a larger tiny Llama (hidden 256, 4 layers, 3.9 M parameters) with P = 4, G = 4 and 4 mini-batches
  per step (four optimizer steps), measured as ``rlsim-real train --offload-optimizer``, predicted with
  ``training.offload_optimizer: true``; the offloaded step's copies and host Adam and the on-module Adam come from
  ``rlsim-real bench optimizer`` (calibrate.bench.optimizer).

The learning rate is small (1e-4 at 128 responses) so that the response lengths stay where the reference runs had
them: this checks the systems side. Steps: ``predictions.json`` (with the time it was written; the script stops
there with ``--predict-only``, and a rerun never rewrites it), then ``--rounds`` rounds, each running every setup's
synchronous control and its variant back to back (interleaved, so that the machine's drift falls on both), then
the comparison: the median over rounds of each run's mean step time (steps 2..S, calibrate's definition), its
range, and the load other processes put on the machine during each run. Writes
docs/results/cpu_async_offload.md and, under ``--record`` (default research/cpu_async_offload), the
predictions and the measurements; ``--earlier DIR`` adds an earlier iteration's record to the page.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import results_page  # noqa: E402

from calibrate.runs.run import load_run, measured  # noqa: E402
from rlsim.host.machine_load import load_summary  # noqa: E402
from rlsim.run.profile import load_profile  # noqa: E402
from rlsim.run.simulation import simulate  # noqa: E402

MEDIUM = "tiny:hidden_size=256,num_layers=4,intermediate_size=1024"
COMMON = "--task parity:length=3 --engine hf --lr-rule sqrt --lr0 1e-4 --reference-batch 128 --max-new-tokens 8"
COMMON += " --eval-size 32 --checkpoint-every 1000 --threads 1"
SETUPS = {
    "async": {
        "train": f"{COMMON} --model tiny --prompts-per-step 16 --group-size 8 --micro-batches 2 --max-steps 30 "
        "--eval-every 30",
        "variant": "--fully-async --staleness 1",
        "keys": {
            "hardware.num_gpus": 2,
            "hardware.placement": "separate",
            "hardware.rollout_gpus": 1,
            "hardware.train_gpus": 1,
            "schedule.mode": "async",
            "schedule.max_staleness": 1,
            "schedule.streaming": False,
        },
        "bench": [
            "generation --engine hf --model tiny --concurrency 16,32,64,128,256 --prompt-tokens 5 "
            "--response-tokens 2,4,8",
            "train --model tiny --tokens 384,768,1536,2304,3072 --seq-len 12 --micro-batches 2",
            "sync --engine hf --model tiny --model tiny:hidden_size=192 --model tiny:hidden_size=256 "
            "--model tiny:hidden_size=320 --repeats 15 --warmup 5 --number 10",
        ],
    },
    "offload": {
        "train": f"{COMMON} --model {MEDIUM} --prompts-per-step 4 --group-size 4 --mini-batches 4 "
        "--micro-batches 1 --max-steps 20 --eval-every 20",
        "variant": "--offload-optimizer",
        "keys": {"training.offload_optimizer": True},
        "bench": [
            f"generation --engine hf --model {MEDIUM} --concurrency 4,8,16,32 --prompt-tokens 5 "
            "--response-tokens 2,4,8",
            f"train --model {MEDIUM} --tokens 24,48,96,192,384 --seq-len 12 --micro-batches 1",
            f"sync --engine hf --model {MEDIUM} --repeats 15 --warmup 5 --number 10",
            "optimizer --model tiny:hidden_size=192,num_layers=4,intermediate_size=768 "
            f"--model {MEDIUM} --model tiny:hidden_size=320,num_layers=4,intermediate_size=1280 "
            "--model tiny:hidden_size=384,num_layers=4,intermediate_size=1536",
        ],
    },
}
REFERENCE_SEEDS = (0, 1)
DEFAULT_RECORD = ROOT / "calibrate" / "research" / "cpu_async_offload"


def sh(module: str, args: list[str]) -> str:
    """Run ``python -m MODULE ARGS`` (printed as the user's command); its stdout, or exit on failure."""
    shown = {"real.cli": "rlsim-real", "calibrate.cli": "rlsim-calibrate"}.get(module, module)
    print("$ " + " ".join([shown, *args]), flush=True)
    proc = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{shown} {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return proc.stdout


def bench(out: Path, name: str) -> list[str]:
    tables = []
    for spec in SETUPS[name]["bench"]:
        kind = spec.split()[0]
        d = out / name / "bench" / kind
        if not (d / "bench.csv").is_file():
            extra = [] if "--repeats" in spec else ["--repeats", "7", "--warmup", "2"]
            sh("real.cli", ["bench", *spec.split(), *extra, "--threads", "1", "-o", str(d)])
        tables.append(str(d / "bench.csv"))
    return tables


def train(run_dir: Path, name: str, seed: int, variant: bool) -> Path:
    if not (run_dir / "summary.json").is_file():
        args = SETUPS[name]["train"].split() + (SETUPS[name]["variant"].split() if variant else [])
        stdout = sh("real.cli", ["train", *args, "--seed", str(seed), "-o", str(run_dir)])
        (run_dir / "summary.json").write_text(stdout)
    return run_dir


def predict(out: Path) -> dict:
    """Benches, reference runs, fit, and each setup's predictions (sync and its variant)."""
    made: dict = {"written_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "setups": {}}
    for name, setup in SETUPS.items():
        tables = bench(out, name)
        refs = [train(out / name / "reference" / f"seed{s}", name, s, False) for s in REFERENCE_SEEDS]
        profile, scenario = out / name / "profile.json", out / name / "scenario.yaml"
        sh(
            "calibrate.cli",
            ["fit", *tables, "--runs", *map(str, refs), "-o", str(profile), "--scenario-out", str(scenario)],
        )
        sync = simulate(scenario, profile=profile).summary()
        var = simulate(scenario, profile=profile, overrides=dict(setup["keys"])).summary()
        made["setups"][name] = {
            "train": setup["train"],
            "variant_flags": setup["variant"],
            "scenario_keys": setup["keys"],
            "profile": str(profile),
            "scenario": str(scenario),
            "sync": {"step_time_s": sync["step_time_s"], "phase_time_s": sync.get("phase_time_s")},
            "variant": {"step_time_s": var["step_time_s"], "phase_time_s": var.get("phase_time_s")},
            "reference_measured_step_time_s": [measured(load_run(r), None)["step_time_s"] for r in refs],
        }
        print(f"  {name}: predicted sync {sync['step_time_s']:.4f} s, variant {var['step_time_s']:.4f} s", flush=True)
    return made


def run_measure(out: Path, rounds: int) -> dict:
    """``rounds`` rounds of every setup's control and variant, back to back; each run's step time and load."""
    runs: dict = {name: {"sync": [], "variant": []} for name in SETUPS}
    for r in range(rounds):
        for name in SETUPS:
            for kind in ("sync", "variant"):
                d = train(out / name / f"round{r}" / kind, name, 100 + r, kind == "variant")
                run = load_run(d)
                recs = run.records[1:]
                runs[name][kind].append(
                    {
                        "run": str(d),
                        "step_time_s": measured(run, None)["step_time_s"],
                        "load": load_summary(recs),
                        "load_avg_1m": float(np.median([x["load_avg_1m"] for x in recs])),
                        "own_cores": _own_cores(run.records),
                        "phase_time_s": measured(run, None)["phase_time_s"],
                        **({"offload_s": _mean_parts(recs)} if name == "offload" and kind == "variant" else {}),
                        **(
                            {"wait_s": float(np.mean([x["wait_s"] for x in recs]))}
                            if name == "async" and kind == "variant"
                            else {}
                        ),
                    }
                )
    return runs


def _own_cores(records: list[dict]) -> float:
    """The cores this run's processes kept busy over steps 2..S: their CPU seconds (the trainer's, and the
    generator's in an async run) over the steps' wall seconds."""
    walls = np.diff([r["wall_s"] for r in records])
    cpu = [r["cpu_s"] + r.get("generator_cpu_s", 0.0) for r in records[1:]]
    return float(np.sum(cpu) / np.sum(walls))


def _mean_parts(recs: list[dict]) -> dict:
    keys = recs[0].get("offload_s", {}).keys()
    return {k: float(np.mean([x["offload_s"][k] for x in recs])) for k in keys}


def compare(pred: dict, runs: dict) -> tuple[list[str], dict]:
    rows, lines = {}, []
    head = (
        "| setup | run | predicted step (s) | measured median (s) | rounds' range (s) | error | "
        "other processes' share of the machine (median) | cores this run's processes got (median) | "
        "load average 1 min (median) |"
    )
    lines += [head, "|---|---|---|---|---|---|---|---|---|"]
    for name, kinds in runs.items():
        for kind, items in kinds.items():
            p = pred["setups"][name][kind]["step_time_s"]
            ts = [x["step_time_s"] for x in items]
            m = float(np.median(ts))
            share = float(np.median([x["load"]["median_other_cpu_fraction"] or 0.0 for x in items]))
            avg = float(np.median([x["load_avg_1m"] for x in items]))
            own = float(np.median([x["own_cores"] for x in items]))
            label = "synchronous control" if kind == "sync" else pred["setups"][name]["variant_flags"]
            rows[f"{name}/{kind}"] = {
                "predicted": p,
                "measured_median": m,
                "error": p / m - 1,
                "range": [min(ts), max(ts)],
            }
            lines.append(
                f"| {name} | `{label}` | {p:.4f} | {m:.4f} | {min(ts):.4f}-{max(ts):.4f} | {p / m - 1:+.1%} | "
                f"{share:.0%} | {own:.2f} | {avg:.2f} |"
            )
    return lines, rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", type=Path, required=True, help="working folder for the benches' and runs' files")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds of every run (default 3)")
    p.add_argument("--predict-only", action="store_true", help="stop once predictions.json is written")
    p.add_argument(
        "--record",
        type=Path,
        default=DEFAULT_RECORD,
        help="folder kept with the repository for predictions.json (written once) and measured.json",
    )
    p.add_argument(
        "--earlier",
        type=Path,
        action="append",
        default=[],
        help="an earlier iteration's record folder (predictions.json, measured.json), summarized on the page; "
        "repeat it for several",
    )
    args = p.parse_args()
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    out, record = args.output, args.record
    out.mkdir(parents=True, exist_ok=True)
    record.mkdir(parents=True, exist_ok=True)
    pred_path = record / "predictions.json"
    if not pred_path.is_file():
        pred_path.write_text(json.dumps(predict(out), indent=1) + "\n")
        print(f"wrote {pred_path} before any measured run", flush=True)
    if args.predict_only:
        return 0
    pred = json.loads(pred_path.read_text())
    runs = run_measure(out, args.rounds)
    lines, rows = compare(pred, runs)
    (record / "measured.json").write_text(json.dumps({"runs": runs, "comparison": rows}, indent=1) + "\n")
    write_page(pred, runs, lines, args)
    print("\n".join(lines))
    return 0


def round_lines(pred: dict, runs: dict) -> list[str]:
    """Per round and setup: the control's and the variant's step times back to back, their ratio against the
    predicted ratio, and the load during each."""
    out = [
        "| setup | round | control step (s) | variant step (s) | variant / control: measured | predicted | "
        "other processes' share: control, variant | cores the runs' processes got: control, variant |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, kinds in runs.items():
        want = pred["setups"][name]["variant"]["step_time_s"] / pred["setups"][name]["sync"]["step_time_s"]
        for r, (c, v) in enumerate(zip(kinds["sync"], kinds["variant"])):
            oc, ov = (x["load"]["median_other_cpu_fraction"] or 0.0 for x in (c, v))
            out.append(
                f"| {name} | {r} | {c['step_time_s']:.4f} | {v['step_time_s']:.4f} | "
                f"{v['step_time_s'] / c['step_time_s']:.2f} | {want:.2f} | {oc:.0%}, {ov:.0%} | "
                f"{c['own_cores']:.2f}, {v['own_cores']:.2f} |"
            )
    return out


def fit_load(pred: dict) -> str:
    """The load under which each setup's benches and reference runs were measured (their profile's provenance)."""
    parts = []
    for name, setup in pred["setups"].items():
        path = Path(setup["profile"])
        if not path.is_file():
            continue
        prov = json.loads(path.read_text())["provenance"]
        bench, refs = (prov.get(k, {}).get("median_other_cpu_fraction") for k in ("bench_load", "runs_load"))
        if bench is not None and refs is not None:
            parts.append(f"{name}: bench {bench:.0%}, reference runs {refs:.0%}")
    return (
        "Other processes' share of the machine while the prediction's inputs were measured (median): "
        + "; ".join(parts)
        + ". The prediction's speed is that of the machine under that load."
    )


QUIET = 0.2  # other processes' share under which a round counts as quiet (rlsim.host.machine_load.HIGH_OTHER_CPU)


def ratio_by_load(pred: dict, runs: dict) -> str:
    """Per setup, the median variant / control ratio over the quiet rounds (other processes under QUIET of the
    machine during both runs) and over the others, beside the predicted ratio."""
    parts = []
    for name, kinds in runs.items():
        want = pred["setups"][name]["variant"]["step_time_s"] / pred["setups"][name]["sync"]["step_time_s"]
        quiet, loaded = [], []
        for c, v in zip(kinds["sync"], kinds["variant"]):
            shares = [x["load"]["median_other_cpu_fraction"] or 0.0 for x in (c, v)]
            (quiet if max(shares) < QUIET else loaded).append(v["step_time_s"] / c["step_time_s"])
        got = [
            f"{label} rounds {np.median(xs):.2f} ({len(xs)})"
            for label, xs in (("quiet", quiet), ("loaded", loaded))
            if xs
        ]
        parts.append(f"{name} predicted {want:.2f}, " + ", ".join(got))
    return "; ".join(parts) + f" (quiet: other processes under {QUIET:.0%} of the machine during both runs)"


def offload_priced(pred: dict) -> dict[str, float]:
    """What the prediction prices per training step for the offloaded step's parts: the mini-batches' optimizer
    steps x the copies and the host Adam, and the device Adam they replace (calibrate.bench.optimizer's unit times
    over the profile's coefficients), from the profile and scenario the prediction used."""
    from calibrate.bench.optimizer import _unit_times
    from rlsim.run.simulation import configure, systems_scenario

    setup = pred["setups"]["offload"]
    profile = load_profile(setup["profile"])
    scn = systems_scenario(configure(setup["scenario"], profile, dict(setup["scenario_keys"])), profile)
    c, p, steps = scn.costs, scn.model.num_params, scn.optimizer_steps_per_step
    unit = _unit_times(scn, p)
    return {
        "parameters": p,
        "optimizer_steps": steps,
        "copies_s": steps * unit["offload_copy"] / c.host_link_efficiency,
        "host_adam_s": steps * unit["host_adam"] / c.cpu_adam_params_per_s,
        "device_adam_s": steps * unit["optimizer"] / c.optimizer_memory_efficiency,
    }


def write_page(pred: dict, runs: dict, lines: list[str], args: argparse.Namespace) -> None:
    argv = ["-o", str(args.output), "--rounds", str(args.rounds)]
    argv += ["--record", _rel(args.record)] if args.record != DEFAULT_RECORD else []
    argv += [a for d in args.earlier for a in ("--earlier", _rel(d))]
    page = results_page.header(
        "A fully-async run and an offloaded optimizer on the CPU: predicted before measured",
        results_page.command("cpu_async_offload", argv),
        extra=f"one torch thread per process; predictions written {pred['written_utc']} UTC, before any measured run",
    )
    parts = runs["offload"]["variant"]
    offload = {k: float(np.median([x["offload_s"][k] for x in parts])) for k in parts[0]["offload_s"]}
    priced = offload_priced(pred)
    waits = [x["wait_s"] for x in runs["async"]["variant"]]
    own = {k: float(np.median([x["own_cores"] for x in runs["async"][k]])) for k in ("sync", "variant")}
    page += [
        "Each run's step time is the mean over its steps 2..S (calibrate's definition); each row of the first table "
        f"gives the median over {args.rounds} rounds, each round running every setup's synchronous control and its "
        "variant back to back. Errors are predicted / measured - 1. The share of the machine other processes took "
        "is from /proc/stat over each step (the async run's generator counted as the run's own), the median over "
        "the run's steps and then over rounds; the cores a run's processes got are their CPU seconds over the "
        "steps' wall seconds. Setups, scenario keys and benches: scripts/cpu_async_offload.py; the predictions as "
        f"written: {_rel(args.record)}/predictions.json; every run: measured.json beside it.",
        "",
        *lines,
        "",
        fit_load(pred),
        "",
        "## Round by round",
        "",
        *round_lines(pred, runs),
        "",
        "## What the figures say",
        "",
        "The async scenario gives the generator and the trainer a core each (two one-thread devices). The "
        f"fully-async runs' two processes together kept a median {own['variant']:.2f} cores busy (the synchronous "
        f"controls {own['sync']:.2f}), and the trainer waited a median {np.median(waits):.4f} s per step for the "
        "generator. Variant / control, measured back to back, against the predicted ratio, by the load during the "
        f"round: {ratio_by_load(pred, runs)}.",
        "",
        f"The offloaded optimizer (P = {priced['parameters']:,.0f} parameters, {priced['optimizer_steps']} "
        "optimizer steps per training step), per training step, priced against measured (median over rounds): "
        f"copies {priced['copies_s']:.4f} s against {offload['copy_out'] + offload['copy_back']:.4f} s "
        f"(out {offload['copy_out']:.4f}, back {offload['copy_back']:.4f}); host Adam {priced['host_adam_s']:.4f} s "
        f"against {offload['host_adam']:.4f} s; in place of the device Adam priced at {priced['device_adam_s']:.4f} s.",
    ]
    for record in args.earlier:
        page += earlier_lines(record)
    results_page.write(results_page.RESULTS / "cpu_async_offload.md", page)


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def earlier_lines(record: Path) -> list[str]:
    """An earlier iteration's figures: each run's predicted and measured median step, the rounds' range and the
    load, from its record folder."""
    pred = json.loads((record / "predictions.json").read_text())
    got = json.loads((record / "measured.json").read_text())
    shares = [
        x["load"]["median_other_cpu_fraction"] or 0.0
        for kinds in got["runs"].values()
        for items in kinds.values()
        for x in items
    ]
    lo_share, hi_share = min(shares), max(shares)
    out = [
        "",
        f"## An earlier iteration: {_rel(record)}",
        "",
        f"The same setups, benched and fitted under the load given below (predictions written {pred['written_utc']} "
        f"UTC), then measured over {len(got['runs']['async']['sync'])} rounds in which other "
        f"processes took from {lo_share:.0%} to {hi_share:.0%} of the machine (per run, the median over its steps):",
        "",
        "| setup | run | predicted step (s) | measured median (s) | rounds' range (s) | error | "
        "other processes' share (median) |",
        "|---|---|---|---|---|---|---|",
    ]

    for key, row in got["comparison"].items():
        name, kind = key.split("/")
        items = got["runs"][name][kind]
        share = float(np.median([x["load"]["median_other_cpu_fraction"] or 0.0 for x in items]))
        lo, hi = row["range"]
        label = "synchronous control" if kind == "sync" else f"`{pred['setups'][name]['variant_flags']}`"
        out.append(
            f"| {name} | {label} | {row['predicted']:.4f} | {row['measured_median']:.4f} | {lo:.4f}-{hi:.4f} | "
            f"{row['error']:+.1%} | {share:.0%} |"
        )
    out += ["", fit_load(pred)]
    return out


if __name__ == "__main__":
    raise SystemExit(main())
