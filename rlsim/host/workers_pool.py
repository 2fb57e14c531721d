"""Local worker processes for rlsim.host.executor.run_tasks: a pool per call, or kept across calls.

Each spawned worker costs a fresh interpreter and rlsim's imports (about half a second on two cores). A command
that runs several stages of tasks one after another (``rlsim plan``: its lower bounds, screening rounds and
finalists) holds :func:`kept_pools` around them, so that the workers are started once per worker count and keep
what they hold for the command (a plan's sampled lengths, rlsim.plan.evaluate) from one stage to the next.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor

_KEPT: dict[int, ProcessPoolExecutor] | None = None  # by worker count, while kept_pools() holds them


def local(workers: int, initializer: Callable[..., None]) -> ProcessPoolExecutor:
    """A pool of ``workers`` spawned processes, each started with ``initializer(busy)`` (``busy``: a shared count
    of the workers running a task, rlsim.host.threads.share_cores): the kept one when :func:`kept_pools` holds it."""
    if _KEPT is not None and workers in _KEPT:
        return _KEPT[workers]

    ctx = mp.get_context("spawn")
    busy = ctx.Value("i", 0)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=initializer, initargs=(busy,))
    if _KEPT is not None:
        _KEPT[workers] = pool
    return pool


def release(pool: ProcessPoolExecutor) -> None:
    """Done with ``pool`` for this call: shut down (its tasks not started cancelled), unless it is kept."""
    if _KEPT is None or pool not in _KEPT.values():
        pool.shutdown(cancel_futures=True)


@contextlib.contextmanager
def kept_pools() -> Iterator[None]:
    """Within it, :func:`local` keeps each pool for the next call; they are shut down when it ends (nested: the
    outer one keeps them)."""
    global _KEPT
    if _KEPT is not None:
        yield
        return
    _KEPT = {}
    try:
        yield
    finally:
        pools, _KEPT = _KEPT, None
        for pool in pools.values():
            pool.shutdown(cancel_futures=True)
