"""What a measurement ran on: Python, platform, torch and its threads, the device, transformers and vLLM versions.

Real runs write it to ``environment.json`` (with the model folder and the engine's limit on running sequences);
bench rows carry it in their provenance. The load average is the one at the start; each step and each bench
repeat records its own load (rlsim.host.machine_load).

Threads (``--threads auto``, the default of ``rlsim-real train`` and ``bench``): torch runs one thread per core
that other processes leave free, measured over half a second at the start. Measured on this project's 2-core VM
beside one CPU-bound process (a tiny Llama's update at 512 / 2048 / 6144 tokens, 15 repeats): with torch's
default 2 threads the median was 2.6-4.5x the quiet time and the repeats spread 2-3x (p10 102 ms, p90 262 ms at
512 tokens), because each parallel region waits for the thread the scheduler has parked; with 1 thread it was
within 0-17% of the quiet 1-thread time with a quiet machine's spread. So under a sustained load the bench and
the runs measure the same stable regime instead of two draws of a bimodal one; the chosen count and why are in
``environment.json`` and each bench row's provenance, and ``rlsim-calibrate fit``/``validate`` warn when the
bench and the runs ran with different counts.
"""

from __future__ import annotations

import os
import platform
from typing import Any

from real.engines import route_vllm_logs_to_stderr
from real.errors import RealError
from rlsim.host.machine_load import free_cores as measure
from rlsim.host.threads import count_of

THREADS_SAMPLE_S = 0.5  # how long --threads auto watches the other processes' CPU at the start
_threads_rule: str | None = None  # why torch runs the threads it does (set by apply_threads)


def free_cores(sample_s: float = THREADS_SAMPLE_S) -> tuple[int, int, float | None]:
    """rlsim.host.machine_load.free_cores over ``sample_s`` (default: half a second)."""
    return measure(sample_s)


def apply_threads(spec: str) -> str:
    """Set torch's intra-op threads from ``--threads``: ``auto`` (one per core other processes leave free, never
    more than torch's default) or a count; returns the rule, which :func:`environment` records."""
    global _threads_rule
    # here, not at the top: it loads torch (start-up time)
    import torch

    default = torch.get_num_threads()
    if spec == "auto":
        cores, free, busy = free_cores()
        n = min(default, free)
        if busy is None:
            _threads_rule = f"auto: torch's default {default} (the machine's load cannot be read)"
        else:
            _threads_rule = (
                f"auto: other processes kept {busy:.1f} of {cores} cores busy at the start, so {n} of torch's "
                f"default {default}"
            )
    else:
        n = count_of(spec)
        if n is None:
            raise RealError(f"--threads {spec!r}: give auto or a number of threads >= 1")
        _threads_rule = f"--threads {n}"
    torch.set_num_threads(n)
    return _threads_rule


def environment() -> dict[str, Any]:
    """The versions and device of this process; ``vllm`` is None when vLLM is not installed."""
    # here, not at the top: it loads torch (start-up time)
    import torch

    env = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"cpu ({os.cpu_count()} cores)",
        "torch_threads": torch.get_num_threads(),
        "threads_rule": _threads_rule or f"torch's default ({torch.get_num_threads()})",
        "load_avg_1m": os.getloadavg()[0],  # at the start; each step logs its own load (rlsim.host.machine_load)
    }
    try:
        import transformers

        env["transformers"] = transformers.__version__
    except ImportError:
        pass
    try:
        route_vllm_logs_to_stderr()  # importing vllm configures its logger
        import vllm

        env["vllm"] = vllm.__version__
    except ImportError:
        env["vllm"] = None
    return env
