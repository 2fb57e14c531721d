"""The fast thrash model against the exact kernel on recorded thrashing steps, with the kernel's speed-up: writes
docs/results/fast_thrash.md (docs/design.md, "The fast thrash model", explains the model).

    python scripts/fast_thrash.py [--rounds 9] [--case paper_p8192 ...] [--write]

Each case (tests/rlsim/thrash_steps.py) is replica 0 of a step as the pipeline hands it to the engine, run once with
``engine.thrash_model: fast`` and once exact. Columns: the fast model's step makespan, mean decode batch and
finish-time quantiles against exact's (relative), its preemptions against exact's (ratio), its recomputed tokens
(relative), and the speed-up: the median of ``--rounds`` interleaved runs of each (exact, then fast, in every
round, so that a slow spell of a shared machine hits both), in this process on one thread. The header says which
kernel ran (a kernel's speed depends on the numba that built it) and how busy the machine was (other processes'
share of the CPU, rlsim.host.machine_load). The issue's bounds: makespan 1%, mean decode batch 2%, quantiles 2%,
preemptions 10%; tests/rlsim/test_fast_thrash.py holds every case to them and the recompute to 5%. The cases come
from the tests (tests/rlsim/thrash_steps.py), so the script needs what the tests need installed (README, second
command: pytest among it). ``--write`` writes the page whole (scripts/results_page.py: the command, the date and the
machine at its top); without it the page is only printed.
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

import numpy as np  # noqa: E402
from results_page import RESULTS, command, header, write  # noqa: E402

from rlsim.engine import replica as engine  # noqa: E402
from rlsim.engine.kernel import (  # noqa: E402
    STAT_DECODED_TOKENS,
    STAT_ITERATIONS,
    STAT_MAKESPAN_S,
    STAT_PREEMPTIONS,
    STAT_RECOMPUTED_TOKENS,
)
from rlsim.host.machine_load import LoadMeter  # noqa: E402
from tests.rlsim.thrash_steps import CASES, recorded_step, run  # noqa: E402

OUTPUT = RESULTS / "fast_thrash.md"
TITLE = "The fast thrash model against exact, on recorded thrashing steps"

HEADER = (
    "| case | requests | makespan | mean decode batch | finish p50 / p90 / p99 | preemptions | recomputed tokens "
    "| kernel speed-up |\n|---|---|---|---|---|---|---|---|"
)


def _timed(step: dict, fast: bool) -> float:
    t0 = time.perf_counter()
    run(step, fast)
    return time.perf_counter() - t0


def compare(name: str, rounds: int) -> str:
    """One case's table row."""
    step = recorded_step(name)
    (fin_e, st_e), (fin_f, st_f) = run(step, False), run(step, True)  # (also loads the kernel before the timing)
    exact_s, fast_s = [], []
    for _ in range(rounds):
        exact_s.append(_timed(step, False))
        fast_s.append(_timed(step, True))
    e, f = st_e[0], st_f[0]

    def rel(a: float, b: float) -> str:
        return f"{a / b - 1:+.2%}"

    quantiles = " / ".join(rel(np.percentile(fin_f, q), np.percentile(fin_e, q)) for q in (50, 90, 99))
    return (
        f"| {name} | {fin_e.size:,} | {rel(f[STAT_MAKESPAN_S], e[STAT_MAKESPAN_S])} "
        f"| {rel(f[STAT_DECODED_TOKENS] / f[STAT_ITERATIONS], e[STAT_DECODED_TOKENS] / e[STAT_ITERATIONS])} "
        f"| {quantiles} | {f[STAT_PREEMPTIONS] / e[STAT_PREEMPTIONS]:.2f}x "
        f"| {rel(f[STAT_RECOMPUTED_TOKENS], e[STAT_RECOMPUTED_TOKENS])} "
        f"| {statistics.median(exact_s) / statistics.median(fast_s):.2f}x "
        f"({statistics.median(fast_s) * 1e3:.2f} / {statistics.median(exact_s) * 1e3:.2f} ms) |"
    )


def page(cmd: str, rows: list[str], rounds: int, load: float | None, when: str | None = None,
         where: str | None = None) -> list[str]:  # fmt: skip
    """The whole page: its header (:func:`results_page.header`, with the kernel that ran), what the columns are, and
    the table of ``rows`` (:func:`compare`'s)."""
    busy = f"; other processes took {load:.0%} of the machine" if load is not None else ""
    lines = header(TITLE, cmd, when, where, f"kernel {engine.kernel_description()}") + [
        "Each case (tests/rlsim/thrash_steps.py) is replica 0 of a recorded step as the pipeline hands it to the "
        "engine, run with `engine.thrash_model: fast` and exact. Columns: the fast model's makespan, mean decode "
        "batch, finish-time quantiles and recomputed tokens against exact's (relative), its preemptions (ratio), and "
        f"the kernel's speed-up: medians of {rounds} interleaved runs of each, one thread (fast / exact ms in "
        f"brackets){busy}. tests/rlsim/test_fast_thrash.py holds every case to makespan 1%, mean decode batch 2%, "
        "quantiles 2%, preemptions 10% and recompute 5%.",
        "",
        HEADER,
        *rows,
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9, help="interleaved timed runs of each model (default 9)")
    parser.add_argument("--case", action="append", choices=list(CASES), help="a case (default: all; repeatable)")
    parser.add_argument("--write", action="store_true", help=f"write the page to {OUTPUT.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, not {args.rounds}")
    meter = LoadMeter().start()
    rows = [compare(name, args.rounds) for name in args.case or CASES]
    load = meter.stop()["other_cpu_fraction"]
    lines = page(command("fast_thrash", sys.argv[1:] if argv is None else argv), rows, args.rounds, load)
    print("\n".join(lines))
    if args.write:
        write(OUTPUT, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
