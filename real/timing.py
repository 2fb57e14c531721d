"""Phase timing for real runs: seconds per phase accumulated into a dict, device synchronized before each clock
reading (a CUDA kernel launch returns before the work is done), phase names from rlsim.phases."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rlsim.phases import Phase


def synchronize() -> None:
    """Wait for the accelerator (no-op on CPU)."""
    # here, not at the top: it loads torch (start-up time)
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


@contextmanager
def phase_timer(phase: Phase, timing_s: dict[str, float]) -> Iterator[None]:
    """Add the wall-clock seconds of the block to ``timing_s[phase]``."""
    synchronize()
    start = time.perf_counter()
    try:
        yield
    finally:
        synchronize()
        timing_s[phase.value] = timing_s.get(phase.value, 0.0) + time.perf_counter() - start
