"""How long a simulation takes as steps, responses per step and engine replicas grow: writes docs/scaling.md.

    python scripts/scaling.py [--repeats 3] [-o docs/scaling.md]

Each point is the paper scenario (scenarios/paper_grpo.yaml) with one knob changed, simulated in this process
(``rlsim.simulate``, no band, no learning-to-target run: ``run.until_target`` off), after one untimed warm-up
run so the numba kernel is loaded. The table gives the median wall seconds of ``--repeats`` interleaved repeats
(every configuration once per round, so a slow spell of a shared machine hits all of them), the simulated
responses per second (responses per step x steps / seconds), and the machine's load while it ran
(rlsim.machine_load: other processes' share of the CPU, median over the rounds).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import rlsim  # noqa: E402
from rlsim import engine  # noqa: E402
from rlsim.machine_load import LoadMeter  # noqa: E402

SCENARIO = ROOT / "scenarios" / "paper_grpo.yaml"
# (what varies, its values, the overrides for one value); the rest is the paper scenario at P = 128, 20 steps
AXES = [
    ("steps", [10, 30, 100, 300], lambda v: {"run.steps": v}),
    ("prompts per step (G = 8)", [32, 128, 512, 2048, 8192], lambda v: {"workload.prompts_per_step": v}),
    (
        "engine replicas (TP1, 48 rollout GPUs; P = 1024)",
        [6, 12, 24, 48],
        lambda v: {"engine.tensor_parallel_size": 1, "engine.replicas": v, "workload.prompts_per_step": 1024},
    ),
]
BASE = {"run.until_target": False, "run.steps": 20}


def _time(overrides: dict) -> tuple[float, float | None, int]:
    scn = rlsim.load_scenario(SCENARIO, {**BASE, **overrides})
    meter = LoadMeter().start()
    t0 = time.perf_counter()
    rlsim.simulate(scn)
    seconds = time.perf_counter() - t0
    load = meter.stop()["other_cpu_fraction"]
    return seconds, load, scn.workload.responses_per_step * scn.run.steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "docs" / "scaling.md")
    args = parser.parse_args(argv)
    points = [(name, v, over(v)) for name, values, over in AXES for v in values]
    _time({})  # warm-up: the kernel loads from numba's cache (or compiles) once
    times: dict[int, list[float]] = {i: [] for i in range(len(points))}
    loads: list[float] = []
    responses: dict[int, int] = {}
    for _ in range(args.repeats):
        for i, (_name, _v, over) in enumerate(points):
            seconds, load, n = _time(over)
            times[i].append(seconds)
            responses[i] = n
            if load is not None:
                loads.append(load)
    lines = [
        "# Simulation time vs steps, responses per step and replicas",
        "",
        f"Written by `python scripts/scaling.py --repeats {args.repeats}` on {_dt.date.today().isoformat()} "
        f"({platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"rlsim {rlsim.__version__}, kernel {engine.kernel_description()}). The paper scenario with one knob "
        "changed (20 steps at P = 128 otherwise), "
        "in-process `rlsim.simulate` without band or run to the target, median of interleaved repeats; other "
        f"processes took a median {statistics.median(loads):.0%} of the machine while it ran."
        if loads
        else "",
        "",
        "| varied | value | seconds (median) | spread (max/min) | simulated responses / s |",
        "|---|---|---|---|---|",
    ]
    for i, (name, v, _over) in enumerate(points):
        med = statistics.median(times[i])
        spread = max(times[i]) / min(times[i])
        lines.append(f"| {name} | {v} | {med:.4f} | {spread:.2f} | {responses[i] / med:,.0f} |")
    args.output.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
