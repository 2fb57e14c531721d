"""How good the time estimates are: rlsim.host.footprint's estimate against the measured time of the same simulation.

    python scripts/estimates.py [--repeats 3] [--write]

Cases: every built-in scenario as ``rlsim run`` simulates it (to the target where there is a learning model, with
the band), the paper plan's winner (``rlsim plan scenarios/paper_grpo.yaml``, simulated as ``rlsim run
winner.yaml`` would), and runs to the target that take many steps (the paper at staleness 64; at P = 2048).
Each is timed in this process (``predict``, after an untimed warm-up so the numba kernel is loaded),
median of ``--repeats`` interleaved rounds, beside the estimate that ``before`` receives. Prints the page, a
Markdown table with the machine's load while it ran (rlsim.host.machine_load); ``--write`` writes it whole to
docs/results/estimates.md (scripts/results_page.py: the command, the date and the machine at its top).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from results_page import RESULTS, command, header, write  # noqa: E402

from rlsim.host.machine_load import LoadMeter  # noqa: E402
from rlsim.run.simulation import configure, predict  # noqa: E402

SCENARIOS = ROOT / "scenarios"
OUTPUT = RESULTS / "estimates.md"
TITLE = "Estimated against measured simulation time"


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


def page(cmd: str, rows: list[tuple[str, int, float, list[float]]], loads: list[float], when: str | None = None,
         where: str | None = None) -> list[str]:  # fmt: skip
    """The whole page: its header (:func:`results_page.header`), what is compared, and one row per case of ``rows``
    (label, steps simulated, estimated seconds, measured seconds of each round)."""
    load = f"; other processes took a median {statistics.median(loads):.0%} of the machine while it ran"
    load = load if loads else ""
    lines = header(TITLE, cmd, when, where) + [
        "What `rlsim.host.footprint.estimate` says before a simulation starts (the CLI prints it when it is over a "
        "minute) against the simulation's measured time, in this process with the band, as `rlsim run` simulates "
        "it (every built-in scenario goes to its target where it has a learning model). A streaming async schedule "
        "simulates its steps k + 1 at a time, each window of k + 1 batches once, so a step's work is its responses. "
        f"A ratio is estimated / measured; the command line adds about a second of Python start-up to each{load}.",
        "",
        "| case | steps simulated (band included) | estimated | measured (median) | spread (max/min) | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for label, steps, est, seconds in rows:
        med = statistics.median(seconds)
        spread = max(seconds) / min(seconds)
        lines.append(f"| {label} | {steps:,} | {est:.2f} s | {med:.2f} s | {spread:.2f} | {est / med:.2f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--write", action="store_true", help=f"write the page to {OUTPUT.relative_to(ROOT)}")
    args = ap.parse_args(argv)
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
    rows = [(label, *estimates[label], times[label]) for label, _ in todo]
    lines = page(command("estimates", sys.argv[1:] if argv is None else argv), rows, loads)
    print("\n".join(lines))
    if args.write:
        write(OUTPUT, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
