"""What a simulation will take, known before it starts: memory and time from the responses it simulates.

The simulator handles every response of every step (its lengths, its place in the engine's batches), so its cost
grows with responses per step (P x G) and with the steps simulated. Measured on the 2-core development VM
(`rlsim run scenarios/paper_grpo.yaml` with P x G from 128 to 4.2M, 1 to 4 steps, 2026-12-01):

* memory: a base of about 250 MB (Python, numpy, SimPy, numba) plus about 140 bytes per response of the largest
  step (397 MB at 1.05M responses, 837 MB at 4.2M); the steps do not accumulate per-response data;
* time: 16-34 us per response and step (4.2M responses x 3 steps: 423 s), the larger figure at the larger steps.

:func:`estimate` uses those figures with a margin (``BYTES_PER_RESPONSE`` 200, ``SECONDS_PER_RESPONSE`` 40 us),
:func:`check` refuses a run whose estimated memory exceeds what the machine has available (``MemAvailable`` from
/proc/meminfo), naming the numbers and the fix, instead of a multi-terabyte allocation failing (or swapping) deep
in numpy: P = 1e7 with G = 1e5 asked for 7 TiB. The time is an order of magnitude for the caller to warn about
(:data:`LONG_S`); other machines differ by a small factor, the response count by orders of magnitude.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlsim.errors import RlsimError

BASE_BYTES = 250e6
BYTES_PER_RESPONSE = 200.0
SECONDS_PER_RESPONSE = 40e-6
LONG_S = 60.0  # an estimated run time above which the CLI says how long it will take before starting
FALLBACK_AVAILABLE_BYTES = 8 * 2**30  # when /proc/meminfo cannot be read (not Linux)


class FootprintError(RlsimError):
    """A simulation larger than this machine can run."""


@dataclass(frozen=True)
class Footprint:
    responses_per_step: int
    steps: int  # every step simulated: the run's and its band's extra runs'
    memory_bytes: float
    seconds: float

    def describe(self) -> str:
        size, time = _bytes(self.memory_bytes), _duration(self.seconds)
        return (
            f"{self.responses_per_step:,} responses per step x {self.steps:,} steps simulated: about {size} of "
            f"memory and {time}"
        )


def estimate(responses_per_step: int, steps: int) -> Footprint:
    """The estimated peak memory and time of simulating ``steps`` steps in all (module docstring)."""
    memory = BASE_BYTES + BYTES_PER_RESPONSE * float(responses_per_step)
    seconds = SECONDS_PER_RESPONSE * float(responses_per_step) * float(steps)
    return Footprint(int(responses_per_step), int(steps), memory, seconds)


def available_bytes() -> float:
    """The memory available to a new allocation now: ``MemAvailable`` of /proc/meminfo."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except OSError:
        pass
    return float(FALLBACK_AVAILABLE_BYTES)


def check(fp: Footprint, available: float | None = None) -> Footprint:
    """``fp`` when the machine has the memory for it; a FootprintError naming the sizes and the fix otherwise."""
    avail = available_bytes() if available is None else available
    if fp.memory_bytes > avail:
        raise FootprintError(
            f"{fp.responses_per_step:,} responses generated per step (workload.prompts_per_step x "
            f"workload.group_size, times dynamic sampling's rounds) need "
            f"about {_bytes(fp.memory_bytes)} of memory to simulate, and this machine has {_bytes(avail)} "
            f"available; simulate at most about {max(0, int((avail - BASE_BYTES) / BYTES_PER_RESPONSE)):,} responses "
            "per step (fewer prompts or a smaller group)"
        )
    return fp


def _bytes(n: float) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n / 1024:,.0f} KiB"


def _duration(s: float) -> str:
    if s >= 86400:
        return f"{s / 86400:,.1f} days"
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 60:
        return f"{s / 60:.0f} min"
    return f"{s:.0f} s"
