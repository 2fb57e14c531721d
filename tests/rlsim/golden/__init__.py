"""Golden outputs of every built-in scenario: what ``rlsim run scenarios/<name>.yaml -o DIR --json`` prints and
writes, kept byte for byte (every decimal number written to ``SIGNIFICANT`` significant digits, see below) so that a
change meant to leave the model alone (speed work, refactoring) can show that it did.

Why the rounding: numpy picks its vectorised maths by the processor, and on a CPU with AVX-512 its ``np.power``
(the learning curve's, rlsim.learning.curve.sigmoid_fraction) differs from the AVX2 one in the last bit or two
(seen 2026-12-04: 0.766966075133489 against 0.7669660751334891 on one step of paper_grpo, the files otherwise
identical; the same run with ``NPY_DISABLE_CPU_FEATURES`` naming the AVX-512 features reproduced the old files).
Twelve digits are far above that and far below any change of the model. The files as kept were checked to come
out the same on the AVX-512, AVX2 and baseline (no AVX) paths; a value that happens to sit on a twelve-digit
rounding boundary could still split them, about one chance in 10^4 per value that differs at all.

Per scenario, in this folder:

* ``<name>.summary.json``: the ``--json`` stdout (the summary, time-to-target and its band included);
* ``<name>.steps.csv``: the per-step table ``-o`` writes (``steps.csv``);
* ``<name>.sha256``: the SHA-256 of the other files ``-o`` writes (``runlog.jsonl``, ``trace.json``,
  ``scenario.resolved.yaml``, ``summary.json``). ``steps.parquet`` is left out: its bytes carry the pandas and
  pyarrow versions, and steps.csv holds the same table.

Each scenario runs as shipped (its own ``run.steps`` and ``run.seed``). None of them preempts, so two more cases
(``EXTRA``) run short, preemption-heavy variants: the paper scenario at P = 2048 (vLLM V1 rules, ~100k recomputes
per step) and the colocated 8B scenario under the rounds scheduler (no chunked prefill, no prefix caching) with a
small KV cache. ``tests/rlsim/test_golden.py`` checks that
the current code reproduces them. A deliberate model change regenerates them in one command, from the repository
root, and says which files changed::

    python -m tests.rlsim.golden --update

(``python -m tests.rlsim.golden`` alone only compares and lists the differences; it runs the kernel
``rlsim.engine.kernel`` picks, ``RLSIM_KERNEL=jit`` for numba's just-in-time one.) Commit the new files with the
model change, naming it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "scenarios"
GOLDEN = Path(__file__).resolve().parent
HASHED = ("runlog.jsonl", "trace.json", "scenario.resolved.yaml", "summary.json")
SIGNIFICANT = 12
# a decimal number with a fraction or an exponent, not part of a word or of a dotted version string
_DECIMAL = re.compile(rb"(?<![\w.])-?\d+(?:\.\d+(?:[eE][+-]?\d+)?|[eE][+-]?\d+)(?![\w.])")


def canonical(data: bytes) -> bytes:
    """``data`` with every decimal number written to ``SIGNIFICANT`` significant digits (integers untouched)."""
    return _DECIMAL.sub(lambda m: format(float(m.group()), f".{SIGNIFICANT}g").encode(), data)


# case -> (scenario file stem, --set overrides): short variants that exercise preemption
EXTRA = {
    "paper_grpo_p2048_preempting": (
        "paper_grpo",
        ("workload.prompts_per_step=2048", "run.steps=4", "run.until_target=false"),
    ),
    "dense8b_colocated_rounds_preempting": (
        "dense8b_h100_colocated",
        (
            "engine.chunked_prefill=false",
            "engine.prefix_caching=false",
            "engine.gpu_memory_utilization=0.3",
            "run.steps=5",
        ),
    ),
}


def cases() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every golden case: each built-in scenario as shipped, then the EXTRA variants."""
    return {**{p.stem: (p.stem, ()) for p in sorted(SCENARIOS.glob("*.yaml"))}, **EXTRA}


def scenario_names() -> list[str]:
    return list(cases())


def produce(name: str) -> dict[str, bytes]:
    """The golden files of case ``name`` as the current code makes them (the CLI, in this process), decimals
    canonical (:func:`canonical`)."""
    from rlsim.cli import main

    stem, overrides = cases()[name]
    argv = ["run", str(SCENARIOS / f"{stem}.yaml"), *(a for o in overrides for a in ("--set", o))]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main([*argv, "-o", str(out), "--json"])
        if code != 0:
            raise RuntimeError(f"rlsim run {name} exited {code}: {stderr.getvalue()}")
        hashes = "".join(f"{hashlib.sha256(canonical((out / f).read_bytes())).hexdigest()}  {f}\n" for f in HASHED)
        return {
            f"{name}.summary.json": canonical(stdout.getvalue().encode()),
            f"{name}.steps.csv": canonical((out / "steps.csv").read_bytes()),
            f"{name}.sha256": hashes.encode(),
        }


def differences(name: str, produced: dict[str, bytes]) -> list[str]:
    """The golden files of ``name`` that ``produced`` does not reproduce byte for byte (missing ones included)."""
    return [f for f, data in produced.items() if not (GOLDEN / f).is_file() or (GOLDEN / f).read_bytes() != data]


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tests.rlsim.golden", description=__doc__.split("\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite the golden files that differ")
    args = parser.parse_args(argv)
    changed = []
    for name in scenario_names():
        produced = produce(name)
        diff = differences(name, produced)
        changed += diff
        if args.update:
            for f in diff:
                (GOLDEN / f).write_bytes(produced[f])
    verb = "updated" if args.update else "differ"
    for f in changed:
        print(f"{verb}: tests/rlsim/golden/{f}")
    if not changed:
        print(f"golden outputs reproduced: {len(scenario_names())} cases")
    return 1 if changed and not args.update else 0
