"""Whole-process ``rlsim run scenarios/paper_grpo.yaml --json``: at most 0.4 s with numba's cache warm, at most 1.5 s
with it empty (median of the rounds).

    python -m pytest tests/benchmarks/test_bench_startup.py --benchmark-only --benchmark-enable

Each round is a fresh ``python -m rlsim.cli run ...`` process, what the ``rlsim`` command runs. Cold rounds point
``NUMBA_CACHE_DIR`` at a new empty folder, so nothing numba compiled before is found. With the kernel built ahead of
time (``pip install`` builds it; ``python -m rlsim.engine.kernel_build`` in a checkout) neither imports numba; the
targets are checked for that kernel. The just-in-time fallback (``RLSIM_KERNEL=jit``: numba compiles, or loads from its
cache, on first use) is timed too and recorded in extra_info, not checked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from rlsim.engine import replica as engine
from tests.conftest import ROOT, SCENARIOS

COMMAND = [sys.executable, "-m", "rlsim.cli", "run", str(SCENARIOS / "paper_grpo.yaml"), "--json"]
WARM_S, COLD_S = 0.4, 1.5


def _env(kernel: str, cache: str | None = None) -> dict[str, str]:
    env = dict(os.environ, RLSIM_KERNEL=kernel)
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    return env


def _run(env: dict[str, str]) -> None:
    subprocess.run(COMMAND, env=env, cwd=ROOT, check=True, capture_output=True)


def _cold(benchmark, kernel: str, rounds: int) -> float:
    folders: list[str] = []

    def setup():
        folders.append(tempfile.mkdtemp(prefix="rlsim-numba-cache-"))
        return (_env(kernel, folders[-1]),), {}

    try:
        benchmark.pedantic(_run, setup=setup, rounds=rounds, iterations=1)
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
    return benchmark.stats.stats.median


def _kernel_note() -> str:
    built = engine._load_kernel("auto").__name__ != "rlsim.engine.kernel"
    return "" if built else " (no kernel built ahead of time: run `python -m rlsim.engine.kernel_build`)"


@pytest.mark.benchmark(group="startup")
def test_rlsim_run_json_warm(benchmark):
    benchmark.pedantic(_run, args=(_env("auto"),), rounds=9, iterations=1, warmup_rounds=1)
    median = benchmark.stats.stats.median
    assert median <= WARM_S, f"warm rlsim run --json took {median:.2f} s (median), over {WARM_S} s{_kernel_note()}"


@pytest.mark.benchmark(group="startup")
def test_rlsim_run_json_with_an_empty_numba_cache(benchmark):
    median = _cold(benchmark, "auto", rounds=5)
    assert median <= COLD_S, f"cold rlsim run --json took {median:.2f} s (median), over {COLD_S} s{_kernel_note()}"


@pytest.mark.benchmark(group="startup-jit")
def test_rlsim_run_json_warm_jit_fallback(benchmark):
    benchmark.pedantic(_run, args=(_env("jit"),), rounds=5, iterations=1, warmup_rounds=1)
    benchmark.extra_info["median_s"] = benchmark.stats.stats.median  # recorded, not checked


@pytest.mark.benchmark(group="startup-jit")
def test_rlsim_run_json_cold_jit_fallback(benchmark):
    benchmark.extra_info["median_s"] = _cold(benchmark, "jit", rounds=3)  # recorded, not checked
