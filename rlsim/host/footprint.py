"""What a simulation will take, known before it starts: memory and time from the responses it simulates.

The simulator handles every response of every step (its lengths, its place in the engine's batches), so its cost
grows with responses per step (P x G) and with the steps simulated. Measured on the 2-core development VM
(`rlsim run scenarios/paper_grpo.yaml` with P x G from 128 to 4.2M, 1 to 4 steps, 2026-12-01):

* memory: a base of about 250 MB (Python, numpy, SimPy, numba) plus about 140 bytes per response of the largest
  step (397 MB at 1.05M responses, 837 MB at 4.2M); the steps do not accumulate per-response data;
* time: 16-34 us per response and step then (4.2M responses x 3 steps: 423 s), before the numba kernel; now much
  less (below).

:func:`estimate` uses those figures with a margin (``BYTES_PER_RESPONSE`` 100 per response of a step's window,
so 200 per response at the paper's k = 1, where 140 was measured), :func:`check` refuses a run whose
estimated memory exceeds what the machine has available (``MemAvailable`` from /proc/meminfo), naming the numbers
and the fix, instead of a multi-terabyte allocation failing (or swapping) deep in numpy: P = 1e7 with G = 1e5
asked for 7 TiB.

Time: a streaming async schedule simulates its steps k + 1 at a time, each window of k + 1 batches once
(rlsim.run.batches.step_requests; a run ending inside a window simulates all of it), so a step costs its responses,
as a synchronous one does; the window sets the memory (until 2026-12-04 each step simulated a window of its own, k +
1 x its responses; the README's example, P = 4,096 at staleness 64 to the target, was estimated at 2 min and is now
at 1 s). rlsim.run.simulation.footprint counts the steps a run and its band simulate (whole windows; the band's
nominal short run is a lookup where a shorter run is the start of a longer one). Measured (``python
scripts/estimates.py``, 2026-12-04, 2-core AVX-512 VM, quiet, with the band as ``rlsim run`` simulates it): a run
costs about a millisecond, each step 0.05-0.1 ms of Python around the kernel (the SimPy processes, the records), and
each response 0.05-0.2 us a step (more where the engines thrash, P = 2048 and staleness 64); ``SECONDS_PER_RUN`` 0.5
ms, ``SECONDS_PER_STEP`` 75 us and ``SECONDS_PER_RESPONSE`` 0.09 us (fitted to the table's cases) put every case of
docs/results/estimates.md's table within 2x of its measured time, 0.64-1.73x (the built-in scenarios, the paper
plan's winner, runs to the target at staleness 64 and at P = 2048; the smallest take milliseconds, where noise moves
the ratio most; before, 5 ms a run, 0.09 us a response and no step term, fitted on a VM about 1.75x slower with
every band run counted). The time is for the caller to warn about (:data:`LONG_S`); other machines differ by a small
factor, the response count by orders of magnitude.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlsim.errors import RlsimError

BASE_BYTES = 250e6
BYTES_PER_RESPONSE = 100.0  # per response in a step's window (the measured 140 per response was at k = 1: 2 batches)
SECONDS_PER_RESPONSE = 0.09e-6  # per response the kernel simulates
SECONDS_PER_STEP = 0.075e-3  # the Python around each step
SECONDS_PER_RUN = 0.5e-3
LONG_S = 60.0  # an estimated run time above which the CLI says how long it will take before starting
SEARCH_STEPS = 6  # steps of each short run of rlsim.answers.thrash's max_num_seqs search (rlsim.run.probe counts it)
FALLBACK_AVAILABLE_BYTES = 8 * 2**30  # when /proc/meminfo cannot be read (not Linux)


class FootprintError(RlsimError):
    """A simulation larger than this machine can run."""


@dataclass(frozen=True)
class Footprint:
    responses_per_step: int
    steps: int  # every step simulated: the run's and its band's extra runs'
    memory_bytes: float
    seconds: float
    window: int = 1  # batches whose requests are simulated together (k + 1 streaming: the engines hold them at once)

    def describe(self) -> str:
        size, time = _bytes(self.memory_bytes), _duration(self.seconds)
        return (
            f"{self.responses_per_step:,} responses per step x {self.steps:,} steps simulated: about {size} of "
            f"memory and {time}"
        )


def estimate(
    responses_per_step: int, steps: int, window: int = 1, seconds_per_response: float = SECONDS_PER_RESPONSE
) -> Footprint:
    """The estimated peak memory and time of simulating ``steps`` steps in all, their requests simulated in windows
    of ``window`` batches (k + 1 under a streaming async schedule; module docstring): the window sets the memory,
    the steps the time; ``seconds_per_response`` where a probe measured more (rlsim.run.probe: a thrashing engine)."""
    memory = BASE_BYTES + BYTES_PER_RESPONSE * float(responses_per_step) * float(window)
    per_response = max(SECONDS_PER_RESPONSE, seconds_per_response)
    seconds = SECONDS_PER_RUN + float(steps) * (SECONDS_PER_STEP + per_response * float(responses_per_step))
    return Footprint(int(responses_per_step), int(steps), memory, seconds, int(window))


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
            f"available; simulate at most about "
            f"{max(0, int((avail - BASE_BYTES) / (BYTES_PER_RESPONSE * fp.window))):,} responses per step (fewer "
            "prompts or a smaller group"
            + (
                f"; a streaming schedule holds {fp.window} batches at once: a smaller max_staleness helps too)"
                if fp.window > 1
                else ")"
            )
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
