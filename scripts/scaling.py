"""How long a simulation takes as steps, responses per step and engine replicas grow: writes docs/results/scaling.md.

    python scripts/scaling.py [--repeats 3] [-o docs/results/scaling.md]

Each point is the paper scenario (scenarios/paper_grpo.yaml) with one knob changed, simulated in this process
(``rlsim.simulate``, no band, no learning-to-target run: ``run.until_target`` off), after one untimed warm-up
run so the numba kernel is loaded. The table gives the median wall seconds of ``--repeats`` interleaved repeats
(every configuration once per round, so a slow spell of a shared machine hits all of them), the simulated
responses per second (responses per step x steps / seconds), and the machine's load while it ran
(rlsim.host.machine_load: other processes' share of the CPU, median over the rounds).

A second table gives the engine kernel's work in steady-state steps of the paper scenario at several batch sizes
(:func:`step_work`): per replica, the scheduler events the exact event model has to go through (iterations,
preemptions; each preemption is followed by a readmission that recomputes the request's context), what share of
the replica's simulated time the prefills (recomputes included) take, and the kernel's own time for the step on
one thread (timed in the same rounds as the first table), per replica and as simulated responses per second on
all cores for the kernel alone (no Python around it, replicas spread perfectly).

The page is written whole (scripts/results_page.py: the command, the date and the machine at its top); docs/scaling.md
explains it and links to it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import numpy as np  # noqa: E402
from results_page import RESULTS, command, header, write  # noqa: E402

import rlsim  # noqa: E402
from rlsim.engine import replica as engine  # noqa: E402
from rlsim.host import threads  # noqa: E402
from rlsim.host.machine_load import LoadMeter  # noqa: E402
from rlsim.run.batches import step_requests, window  # noqa: E402
from rlsim.run.costs import RooflineCostModel  # noqa: E402
from rlsim.scenario import scheduler_rules  # noqa: E402

SCENARIO = ROOT / "scenarios" / "paper_grpo.yaml"
OUTPUT = RESULTS / "scaling.md"
TITLE = "Simulation time vs steps, responses per step and replicas"
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
WORK_PROMPTS = [128, 1024, 4096, 8192]  # prompts per step (G = 8) of the work table


def step_windows(scn: rlsim.Scenario, windows: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The requests the kernel simulates in the calls 2 .. windows + 1 of ``scn`` (rlsim.run.batches.step_requests
    with the run's seed: under a streaming async schedule a window of k + 1 steps' batches each, else one step's
    batch; the first, which starts from an empty engine, left out)."""
    drawn = step_requests(scn, np.random.default_rng(scn.run.seed))
    calls = (call for step in drawn for call in step[2])  # (one call per window without dynamic sampling)
    next(calls)
    return [next(calls) for _ in range(windows)]


def step_work(prompts: int, repeats: int = 3, windows: int = 2) -> dict[str, float]:
    """The kernel's work in ``windows`` steady-state windows (:func:`step_windows`) of the paper scenario at
    ``prompts`` prompts per step: every window's replicas (prompt groups dealt round-robin, as
    rlsim.engine.rollout deals them) in one :func:`rlsim.engine.replica.simulate_replicas` call on one thread
    (``RLSIM_THREADS=1`` while it runs), as rlsim.run.pipeline makes it for a chunk of steps; per-replica means of
    the counts (a replica's share of one window), the prefills' share of simulated time and of recomputed tokens,
    and the median over ``repeats`` of the call's seconds per step (a window holds k + 1 steps' batches)."""
    scn = rlsim.load_scenario(SCENARIO, {**BASE, "workload.prompts_per_step": prompts})
    cost = RooflineCostModel.from_scenario(scn)
    replicas = scn.num_replicas
    prompt_parts, response_parts, groups, offsets = [], [], [], [0]
    for prompt, response in step_windows(scn, windows):  # every window's replicas one after another, in one call
        group = np.arange(prompt.size) // scn.workload.group_size
        order = np.argsort(group % replicas, kind="stable")  # replica after replica, each in arrival order
        prompt_parts.append(prompt[order])
        response_parts.append(response[order])
        groups.append(group[order] + (groups[-1][-1] + 1 if groups else 0))  # group ids rise along the call
        offsets += list(offsets[-1] + np.cumsum(np.bincount(group % replicas, minlength=replicas)))
    args = (np.concatenate(prompt_parts), np.concatenate(response_parts), np.array(offsets), scn.engine.max_num_seqs)
    args += (scn.kv_capacity_tokens, cost.decode_coefficients(), cost.prefill_coefficients(), scheduler_rules(scn))
    seconds, table = [], np.empty((0, 11))
    before = os.environ.get(threads.ENV)
    os.environ[threads.ENV] = "1"
    try:
        for _ in range(repeats):
            t0 = time.perf_counter()
            table = engine.simulate_replicas(*args, np.concatenate(groups))[1]  # one row per replica of every step
            seconds.append((time.perf_counter() - t0) / (windows * window(scn)))
    finally:
        if before is None:
            del os.environ[threads.ENV]
        else:
            os.environ[threads.ENV] = before
    makespan, prefill_s, iterations, preemptions, recomputed, prefilled = (table[:, c] for c in (0, 2, 3, 4, 7, 9))
    requests = args[0].size
    return {
        "prompts": prompts,
        "responses_per_step": scn.workload.responses_per_step,
        "requests_per_replica": requests / table.shape[0],
        "iterations": float(iterations.mean()),
        "preemptions": float(preemptions.mean()),
        "preemptions_per_request": float(preemptions.sum()) / requests,
        "prefill_share_of_time": float(prefill_s.sum() / makespan.sum()),
        "recomputed_share_of_prefill": float(recomputed.sum() / max(prefilled.sum(), 1.0)),
        "kernel_s": statistics.median(seconds),
        "replicas": replicas,
    }


def work_table(work: dict[int, list[dict[str, float]]], cores: int) -> list[str]:
    """The markdown lines of the work table: ``work[P]`` holds one :func:`step_work` per round (the counts are the
    same in each; the kernel's seconds are their median)."""
    lines = [
        "",
        "## The kernel's work per step",
        "",
        "Steady-state windows of the paper scenario (the streaming windows of steps 3-4 and 5-6: two batches each, "
        "simulated once), their replicas in one `rlsim.engine.replica.simulate_replicas` call on one thread (as "
        "rlsim.run.pipeline makes it for a chunk of steps), timed once per round of the table above (interleaved "
        "with it), median; per replica (its share of a window): the scheduler events the exact event model goes "
        "through. Every preemption is followed by a readmission that recomputes the request's context. The last "
        f"column is the responses of a step over its kernel time shared by {cores} cores: the kernel alone, "
        "replicas spread perfectly, no Python around it.",
        "",
        "| P (G = 8) | requests per replica | iterations per replica | preemptions per replica | preemptions per "
        "request | prefill share of simulated time | recomputed share of prefill tokens | kernel s per step (1 "
        f"thread) | kernel ms per replica and step | kernel alone: responses / s on {cores} cores |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for prompts, rounds in work.items():
        w = rounds[0]
        kernel_s = statistics.median(r["kernel_s"] for r in rounds)
        lines.append(
            f"| {prompts} | {w['requests_per_replica']:,.0f} | {w['iterations']:,.0f} | {w['preemptions']:,.0f} | "
            f"{w['preemptions_per_request']:.2f} | {w['prefill_share_of_time']:.2%} | "
            f"{w['recomputed_share_of_prefill']:.1%} | {kernel_s:.4f} | {kernel_s / w['replicas'] * 1e3:.3f} | "
            f"{w['responses_per_step'] / (kernel_s / cores):,.0f} |"
        )
    return lines


def page(cmd: str, rows: list[tuple[str, object, list[float], int]], loads: list[float], work: dict, cores: int,
         when: str | None = None, where: str | None = None) -> list[str]:  # fmt: skip
    """The whole page: its header (:func:`results_page.header`), the time table (``rows``: what varies, its value,
    the seconds of each round, the responses simulated) and the kernel's work table (:func:`work_table`)."""
    extra = f"rlsim {rlsim.__version__}, kernel {engine.kernel_description()}"
    load = f"other processes took a median {statistics.median(loads):.0%} of the machine while it ran" if loads else ""
    lines = header(TITLE, cmd, when, where, extra) + [
        "The paper scenario with one knob changed (20 steps at P = 128 otherwise), in-process `rlsim.simulate` without "
        "band or run to the target, median of interleaved repeats" + (f"; {load}." if load else "."),
        "",
        "| varied | value | seconds (median) | spread (max/min) | simulated responses / s |",
        "|---|---|---|---|---|",
    ]
    for name, v, seconds, responses in rows:
        med = statistics.median(seconds)
        lines.append(f"| {name} | {v} | {med:.4f} | {max(seconds) / min(seconds):.2f} | {responses / med:,.0f} |")
    return lines + work_table(work, cores)


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
    parser.add_argument("-o", "--output", type=Path, default=OUTPUT, help="the page (default %(default)s)")
    args = parser.parse_args(argv)
    points = [(name, v, over(v)) for name, values, over in AXES for v in values]
    _time({})  # warm-up: the kernel loads from numba's cache (or compiles) once
    times: dict[int, list[float]] = {i: [] for i in range(len(points))}
    loads: list[float] = []
    responses: dict[int, int] = {}
    work: dict[int, list[dict[str, float]]] = {p: [] for p in WORK_PROMPTS}
    for _ in range(args.repeats):
        for i, (_name, _v, over) in enumerate(points):
            seconds, load, n = _time(over)
            times[i].append(seconds)
            responses[i] = n
            if load is not None:
                loads.append(load)
        for prompts in WORK_PROMPTS:
            work[prompts].append(step_work(prompts, repeats=1))
    rows = [(name, v, times[i], responses[i]) for i, (name, v, _over) in enumerate(points)]
    lines = page(command("scaling", sys.argv[1:] if argv is None else argv), rows, loads, work, os.cpu_count() or 1)
    write(args.output, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
