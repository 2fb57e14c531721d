"""A fully-async run and an offloaded optimizer on the hf engine, predicted before measured (issue 57, must-show 2).

    python scripts/cpu_async_offload.py -o out/cpu_async_offload [--rounds 3] [--cores-rounds N] [--predict-only]

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
range, and the load other processes put on the machine during each run. With ``--cores-rounds N``, a second
prediction for the async run (``predictions_cores.json``, written before its runs; ``--predict-only`` stops
there): the cores rule (CORES_RULE) picks, at each async run's start, between the async scenario on two devices
and the setup's step on one shared device, and N more rounds of the async pair are compared with it. Writes
docs/results/cpu_async_offload.md and, under ``--record`` (default calibrate/research/cpu_async_offload), the
predictions and the measurements.
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
    p.add_argument("-o", "--output", type=Path, required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--predict-only", action="store_true", help="stop once predictions.json is written")
    p.add_argument("--record", type=Path, default=ROOT / "calibrate" / "research" / "cpu_async_offload")
    p.add_argument(
        "--cores-rounds",
        type=int,
        default=0,
        help="then this many rounds of the async pair under the cores rule (predictions_cores.json, CORES_RULE)",
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
    cores = None
    if args.cores_rounds:
        cores_path = record / "predictions_cores.json"
        if not cores_path.is_file():
            made = {
                "written_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
                "rule": CORES_RULE,
                "two_devices": pred["setups"]["async"]["variant"]["step_time_s"],
                "one_device": pred["setups"]["async"]["sync"]["step_time_s"],
            }
            cores_path.write_text(json.dumps(made, indent=1) + "\n")
            print(f"wrote {cores_path} before any run under its rule", flush=True)
            if args.predict_only:
                return 0
        cores = run_cores(out, json.loads(cores_path.read_text()), args.cores_rounds)
        (record / "measured_cores.json").write_text(json.dumps(cores, indent=1) + "\n")
    write_page(pred, runs, lines, args, cores)
    print("\n".join(lines))
    return 0


CORES_RULE = (
    "at each async run's start, the cores other processes leave free are measured over 2 s "
    "(rlsim.host.machine_load.free_cores); with 1.5 or more free the generator and the trainer have a core each "
    "and the prediction is the async scenario's on two one-thread devices (two_devices); with fewer they share "
    "one, which does the generator's and the trainer's work either way, and the prediction is the same setup's "
    "synchronous step on one device (one_device)"
)
FREE_FOR_TWO = 1.5


def run_cores(out: Path, made: dict, rounds: int) -> list[dict]:
    """Rounds of the async setup's control and fully-async run, the prediction chosen by the cores rule at the
    async run's start (recorded in choice.json before it runs)."""
    from rlsim.host.machine_load import LoadMeter

    rows = []
    for r in range(rounds):
        base = out / "async" / f"cores_round{r}"
        control = train(base / "sync", "async", 200 + r, False)
        choice_path = base / "choice.json"
        if not choice_path.is_file():
            meter = LoadMeter().start()
            time.sleep(2.0)
            other = meter.stop()["other_cpu_fraction"] or 0.0
            free = 2 * (1.0 - other)  # of this 2-core machine
            key = "two_devices" if free >= FREE_FOR_TWO else "one_device"
            choice_path.write_text(json.dumps({"free_cores": free, "prediction": key, "predicted": made[key]}) + "\n")
        choice = json.loads(choice_path.read_text())
        variant = load_run(train(base / "variant", "async", 200 + r, True))
        m = measured(variant, None)["step_time_s"]
        rows.append(
            {
                **choice,
                "measured": m,
                "error": choice["predicted"] / m - 1,
                "control": measured(load_run(control), None)["step_time_s"],
                "other_cpu_fraction": load_summary(variant.records[1:])["median_other_cpu_fraction"],
                "own_cores": _own_cores(variant.records),
            }
        )
    return rows


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


def offload_priced(pred: dict) -> dict[str, float]:
    """What the prediction prices per training step for the offloaded step's parts (rlsim.trainer.training): the
    mini-batches' optimizer steps x (6 B x P / (host link x efficiency), P / CPU Adam rate), and the device Adam
    they replace (28 B x P / (memory bandwidth x efficiency)), from the profile the prediction used."""
    from rlsim.run.simulation import configure, systems_scenario
    from rlsim.trainer.training import ADAM_BYTES_PER_PARAM, OFFLOAD_BYTES_PER_PARAM

    setup = pred["setups"]["offload"]
    profile = load_profile(setup["profile"])
    scn = systems_scenario(configure(setup["scenario"], profile, dict(setup["scenario_keys"])), profile)
    gpu, c, p = scn.hardware.gpu, scn.costs, scn.model.num_params
    steps = scn.optimizer_steps_per_step
    return {
        "parameters": p,
        "optimizer_steps": steps,
        "copies_s": steps
        * OFFLOAD_BYTES_PER_PARAM
        * p
        / (gpu.host_link_bandwidth_bytes_per_s * c.host_link_efficiency),
        "host_adam_s": steps * p / c.cpu_adam_params_per_s,
        "device_adam_s": steps
        * ADAM_BYTES_PER_PARAM
        * p
        / (gpu.hbm_bandwidth_bytes_per_s * c.optimizer_memory_efficiency),
    }


def write_page(pred: dict, runs: dict, lines: list[str], args: argparse.Namespace, cores: list | None) -> None:
    argv = ["-o", str(args.output), "--rounds", str(args.rounds)]
    argv += ["--cores-rounds", str(args.cores_rounds)] if args.cores_rounds else []
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
        "written: calibrate/research/cpu_async_offload/predictions.json; every run: measured.json beside it.",
        "",
        *lines,
        "",
        "## Round by round",
        "",
        *round_lines(pred, runs),
        "",
        "## What the figures say",
        "",
        f"The async scenario gives the generator and the trainer a core each (two one-thread devices). On this "
        f"machine the fully-async runs' two processes together kept a median {own['variant']:.2f} cores busy, the "
        f"synchronous controls {own['sync']:.2f}: other processes held most of the machine, so the generator and "
        "the trainer shared what the control had alone, and every phase of the async run ran slower than in the "
        "control (the trainer's wait for the generator was a median "
        f"{np.median(waits):.4f} s per step). The overlap rlsim prices needs the second core, which these "
        "measurements never had.",
        "",
        f"The offloaded optimizer (P = {priced['parameters']:,.0f} parameters, {priced['optimizer_steps']} "
        "optimizer steps per training step), per training step, priced against measured (median over rounds): "
        f"copies {priced['copies_s']:.4f} s against {offload['copy_out'] + offload['copy_back']:.4f} s "
        f"(out {offload['copy_out']:.4f}, back {offload['copy_back']:.4f}); host Adam {priced['host_adam_s']:.4f} s "
        f"against {offload['host_adam']:.4f} s; in place of the device Adam priced at {priced['device_adam_s']:.4f} s.",
    ]
    if cores:
        made = json.loads((args.record / "predictions_cores.json").read_text())
        page += [
            "",
            "## The async run under the cores rule",
            "",
            f"A second prediction, written {made['written_utc']} UTC after the rounds above and before the runs "
            f"below, from the same profile: {made['rule']} (two devices {made['two_devices']:.4f} s, one device "
            f"{made['one_device']:.4f} s).",
            "",
            "| round | free cores at the start | prediction | predicted step (s) | measured step (s) | error | "
            "control step (s) | other processes' share (median) | cores the run's processes got |",
            "|---|---|---|---|---|---|---|---|---|",
            *(
                f"| {i} | {c['free_cores']:.2f} | {c['prediction'].replace('_', ' ')} | {c['predicted']:.4f} | "
                f"{c['measured']:.4f} | {c['error']:+.1%} | {c['control']:.4f} | {c['other_cpu_fraction'] or 0:.0%} | "
                f"{c['own_cores']:.2f} |"
                for i, c in enumerate(cores)
            ),
            "",
            f"Median error {np.median([c['error'] for c in cores]):+.1%}, median |error| "
            f"{np.median([abs(c['error']) for c in cores]):.1%} over {len(cores)} rounds.",
        ]
    results_page.write(results_page.RESULTS / "cpu_async_offload.md", page)


if __name__ == "__main__":
    raise SystemExit(main())
