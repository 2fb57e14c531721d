"""Time the same rlsim commands in two checkouts, interleaved, and compare medians (before/after a change).

    git worktree add /tmp/base <commit> && (cd /tmp/base && python -m rlsim.engine.kernel_build)
    python scripts/compare_trees.py --base /tmp/base --head . --repeats 5

Each round runs every command once in the base checkout and once in the head checkout (the order alternating by
round), each as a fresh ``python -m rlsim.cli`` process started in that checkout's root, so that it imports that
checkout's rlsim and its kernel built ahead of time (build it there first, as above: a checkout without one
compiles the kernel with numba). A slow spell of a shared machine then hits both sides. The table gives the
median wall seconds of each side, head / base, the spread (max / min) of each side's repeats and the machine's
1-minute load average over the run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "rlsim run paper_grpo --json": ["run", "scenarios/paper_grpo.yaml", "--json"],
    "rlsim sweep paper_grpo (its grid)": ["sweep", "scenarios/paper_grpo.yaml", "-o", "{tmp}/sweep"],
    "rlsim plan paper_grpo, H100-SXM + H200": [
        "plan",
        "scenarios/paper_grpo.yaml",
        "--gpu-types",
        "H100-SXM,H200",
        "--json",
    ],
}


def _time(tree: Path, args: list[str]) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        argv = [a.replace("{tmp}", tmp) for a in args]
        env = {**os.environ, "PYTHONPATH": str(tree)}
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "rlsim.cli", *argv], cwd=tree, env=env, capture_output=True, text=True
        )
        elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: rlsim {' '.join(argv)} failed:\n{proc.stderr[-2000:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--base", type=Path, required=True, help="the checkout before the change")
    p.add_argument("--head", type=Path, required=True, help="the checkout after it")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--only", action="append", default=[], help="run only the commands whose name contains this")
    args = p.parse_args(argv)
    trees = {"base": args.base.resolve(), "head": args.head.resolve()}
    for side, tree in trees.items():
        if not (tree / "rlsim" / "cli.py").is_file():
            p.error(f"--{side} {tree}: not an rlsim checkout (no rlsim/cli.py there); give the folder of one")
    commands = {k: v for k, v in COMMANDS.items() if not args.only or any(o in k for o in args.only)}
    times: dict[tuple[str, str], list[float]] = {(c, s): [] for c in commands for s in trees}
    loads = []
    for r in range(args.repeats):
        for name, cmd in commands.items():
            for side in ("base", "head") if r % 2 == 0 else ("head", "base"):
                times[(name, side)].append(_time(trees[side], cmd))
            loads.append(os.getloadavg()[0])
            last = {side: times[(name, side)][-1] for side in trees}
            print(f"round {r + 1}: {name}: base {last['base']:.2f} s, head {last['head']:.2f} s", file=sys.stderr)
    print("| command | base median (s) | head median (s) | head / base | spread base, head (max/min) |")
    print("|---|---|---|---|---|")
    for name in commands:
        b, h = times[(name, "base")], times[(name, "head")]
        mb, mh = statistics.median(b), statistics.median(h)
        print(f"| {name} | {mb:.2f} | {mh:.2f} | {mh / mb:.3f} | {max(b) / min(b):.2f}, {max(h) / min(h):.2f} |")
    print(f"\n{args.repeats} interleaved rounds; 1-minute load average {min(loads):.2f}-{max(loads):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
