"""How good the time estimates are: rlsim.host.footprint's estimate against the measured time of the same simulation.

    python scripts/estimates.py [--repeats 3] [--write]

Cases: every built-in scenario as ``rlsim run`` simulates it (to the target where there is a learning model, with
the band), the paper plan's winner (``rlsim plan scenarios/paper_grpo.yaml``, simulated as ``rlsim run
winner.yaml`` would), and runs to the target that take many steps (the paper at staleness 64; at P = 2048).
Each is timed in this process (``predict``, after an untimed warm-up so the numba kernel is loaded),
median of ``--repeats`` interleaved rounds, beside the estimate that ``before`` receives. Prints a Markdown table
with the machine's load while it ran (rlsim.host.machine_load); ``--write`` puts it at the end of docs/scaling.md, in
place of the one there (scripts/scaling.py keeps it when it rewrites the rest).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rlsim.host.machine_load import LoadMeter  # noqa: E402
from rlsim.run.simulation import configure, predict  # noqa: E402

SCENARIOS = ROOT / "scenarios"
DOC = ROOT / "docs" / "scaling.md"
START = "<!-- estimates: scripts/estimates.py -->"  # scripts/scaling.py keeps what follows it


def cases() -> list[tuple[str, object]]:
    """(label, configured scenario) for every case of the table."""
    from rlsim.plan.output import winner_scenario
    from rlsim.plan.search import plan
    from rlsim.scenario import from_dict, load_scenario

    out = [(f"{p.stem} (as shipped)", configure(p)) for p in sorted(SCENARIOS.glob("*.yaml"))]
    paper = SCENARIOS / "paper_grpo.yaml"
    result = plan(load_scenario(paper))
    out.append(("paper_grpo: the plan's winner", configure(from_dict(winner_scenario(result)))))
    out.append(("paper_grpo, staleness 64, to the target", configure(paper, None, {"schedule.max_staleness": 64})))
    out.append(("paper_grpo, P = 2048, to the target", configure(paper, None, {"workload.prompts_per_step": 2048})))
    return out


def merged(old: str, text: str) -> str:
    """The document with the estimate table (from :data:`START` to its end) replaced by ``text``, everything before
    the marker (scripts/scaling.py's tables, the sections written by hand) kept."""
    return (old[: old.index(START)] if START in old else old + "\n") + text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="replace the estimate table at the end of docs/scaling.md")
    args = ap.parse_args()
    todo = cases()
    estimates: dict[str, tuple[int, float]] = {}
    times: dict[str, list[float]] = {label: [] for label, _ in todo}
    predict(todo[0][1], with_band=True)  # warm-up: the kernel loads once
    meter = LoadMeter()
    loads = []
    for _ in range(args.repeats):
        meter.start()
        for label, scn in todo:
            seen = []
            t0 = time.perf_counter()
            predict(scn, with_band=True, before=seen.append)
            times[label].append(time.perf_counter() - t0)
            estimates[label] = (seen[0].steps, seen[0].seconds)
        loads.append(meter.stop()["other_cpu_fraction"] or 0.0)
    lines = [
        START,
        "",
        "## Estimated against measured simulation time",
        "",
        "What `rlsim.host.footprint.estimate` says before a simulation starts (the CLI prints it when it is over a "
        "minute) against the simulation's measured time, in this process with the band, as `rlsim run` simulates "
        "it (every built-in scenario goes to its target where it has a learning model). A streaming async schedule "
        "simulates its steps k + 1 at a time, each window of k + 1 batches once, so a step's work is its responses "
        "(until 2026-12-04 each step simulated a window of its own, k + 1 x its responses).",
        "",
        f"Written by `python scripts/estimates.py --repeats {args.repeats} --write` on {_dt.date.today()} "
        f"({platform.machine()}, Python {platform.python_version()}); other processes took a median "
        f"{statistics.median(loads):.0%} of the machine while it ran. A ratio is estimated / measured; the command "
        "line adds about a second of Python start-up to each.",
        "",
        "| case | steps simulated (band included) | estimated | measured (median) | spread (max/min) | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for label, _ in todo:
        steps, est = estimates[label]
        med = statistics.median(times[label])
        spread = max(times[label]) / min(times[label])
        lines.append(f"| {label} | {steps:,} | {est:.2f} s | {med:.2f} s | {spread:.2f} | {est / med:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        DOC.write_text(merged(DOC.read_text(), text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
