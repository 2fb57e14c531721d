"""The replicas of one step on several cores: the kernel's ``run_replicas`` called from threads, each on a
contiguous range of replicas, while the GIL is released (both kernels release it, rlsim.engine.kernel). A call is
launched (:func:`launch`): the pool's threads start on its ranges at once, and the caller takes the ranges left
when it asks for the result, so it can simulate the steps before while the kernel runs (rlsim.run.pipeline). Launched
calls queue, oldest first: a thread that finds no range left in the call it waits for takes those of the next,
so with the next call launched a core never idles at a call's tail.

Replicas are independent (each starts from its own empty state and writes only its own requests' finish times
and its own row of stats), so the results are the bits of one call, whatever the number of threads; the first
failing replica in replica order is reported, as one call reports it.

How many threads: ``RLSIM_THREADS`` (a count, or ``auto``: the cores this process may run on, the default). A
process pool that runs configurations in parallel (rlsim.host.executor.run_tasks) gives each worker its share of the
cores, counted again at each call: the workers still running get the cores of those that have finished. Steps
of fewer than MIN_REQUESTS requests run in one call: the kernel takes well under a millisecond there and handing
work to another thread would cost more than it saves.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType

import numpy as np

from rlsim.errors import RlsimError

MIN_REQUESTS = 4096  # requests in a step below which one thread runs it
ENV = "RLSIM_THREADS"

_POOL: ThreadPoolExecutor | None = None


def available_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def count_of(text: str) -> int | None:
    """The whole number >= 1 that ``text`` spells (a thread count, a step number), or None."""
    try:
        count = int(text)
    except ValueError:
        return None
    return count if count >= 1 else None


_BUSY = (
    None  # in a worker of rlsim.answers.sweep's process pool: how many of its workers run a task (shared), else None
)


def share_cores(busy) -> None:
    """Called in each worker process of a pool that runs tasks in parallel (rlsim.answers.sweep): ``busy`` (a
    multiprocessing.Value shared by the workers) counts the workers running a task, and ``auto`` threads are then
    this process's share of the cores, so that the workers never run more threads than there are cores, and the
    last ones running get the cores the others have left (a sweep's longest configuration, started first, often
    runs alone at the end)."""
    global _BUSY
    _BUSY = busy


def counted(fn, task):
    """``fn(task)``, counted among the busy workers while it runs when this process is a pool's worker
    (:func:`share_cores`)."""
    busy = _BUSY
    if busy is None:
        return fn(task)
    with busy.get_lock():
        busy.value += 1
    try:
        return fn(task)
    finally:
        with busy.get_lock():
            busy.value -= 1


def thread_count() -> int:
    """Threads a step's replicas run on: ``RLSIM_THREADS`` (a count >= 1, or ``auto``: the available cores, or
    in a pool's worker its share of them, :func:`share_cores`)."""
    raw = os.environ.get(ENV, "auto").strip().lower()
    if raw in ("", "auto"):
        cores = available_cores()
        if _BUSY is not None:
            return max(1, cores // max(int(_BUSY.value), 1))
        return cores
    count = count_of(raw)
    if count is None:
        raise RlsimError(f"{ENV}={raw!r}: must be a whole number of threads >= 1 or auto; unset it for auto")
    return count


def split(offsets: np.ndarray, parts: int) -> list[tuple[int, int]]:
    """Contiguous replica ranges [r0, r1) covering all replicas, at most ``parts`` of them, each about the same
    number of requests (cut where the running request count crosses each k / parts of the total)."""
    n_rep = offsets.size - 1
    total = int(offsets[-1])
    cuts = np.searchsorted(offsets, [total * k / parts for k in range(1, parts)], side="left")
    bounds = sorted({0, n_rep, *(int(min(max(c, 0), n_rep)) for c in cuts)})
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if offsets[b] > offsets[a]]


TASKS_PER_THREAD = 4  # replica ranges per thread: whoever is free takes the next (a thread busy elsewhere less)

_COND = threading.Condition()  # guards _QUEUE, _SERVING and every Pending's task counters
_QUEUE: list[Pending] = []  # launched calls with tasks no thread has taken yet, oldest first
_SERVING = 0  # pool threads submitted to take tasks from _QUEUE (queued or running)


class Pending:
    """A kernel call's replicas as tasks (contiguous replica ranges of about equal requests), started on the
    pool's threads at once (:func:`launch`) and finished by the caller (:meth:`result`). Whichever thread is free
    takes the next task of the oldest launched call, the caller too when it asks for its result: its own tasks
    first, then, while its last ones run elsewhere, those of calls launched after it. So a caller that keeps the
    next call launched (rlsim.run.pipeline) never leaves a core idle at a call's tail, and one that has other work
    meanwhile gets the kernel run beside it. Each task writes only its own replicas' finish times and stats: the
    bits do not depend on which thread ran what."""

    def __init__(self, kernel: ModuleType, arrays: tuple, scalars: tuple, ranges: list[tuple[int, int]]):
        self._kernel, self._arrays, self._scalars, self._ranges = kernel, arrays, scalars, ranges
        self._codes = [0] * len(ranges)
        self._next = 0  # the first task no thread has taken
        self._left = len(ranges)  # tasks not finished
        self._error: BaseException | None = None

    def _take(self) -> int | None:
        """The next task no thread has taken (held _COND), or None."""
        i = self._next
        if i >= len(self._ranges):
            return None
        self._next += 1
        if self._next == len(self._ranges) and self in _QUEUE:
            _QUEUE.remove(self)
        return i

    def _run(self, i: int) -> None:
        """Task i, outside the lock; its code (or error) recorded under it."""
        error = None
        try:
            code = self._call(*self._ranges[i])
        except BaseException as exc:  # raised by result(), in the caller's thread
            code, error = 0, exc
        with _COND:
            self._codes[i] = code
            if error is not None and self._error is None:
                self._error = error
            self._left -= 1
            if self._left == 0:
                _COND.notify_all()

    def _call(self, r0: int, r1: int) -> int:
        prompt, response, group, offsets, n_groups, finish, stats = self._arrays
        if r0 == 0 and r1 == offsets.size - 1:  # all of it: no slicing
            return int(
                self._kernel.run_replicas(prompt, response, group, offsets, n_groups, *self._scalars, finish, stats)
            )
        lo, hi = int(offsets[r0]), int(offsets[r1])
        code = self._kernel.run_replicas(
            prompt[lo:hi],
            response[lo:hi],
            group[lo:hi],
            offsets[r0 : r1 + 1] - lo,
            n_groups[r0:r1],
            *self._scalars,
            finish[lo:hi],
            stats[11 * r0 : 11 * r1],
        )
        return int(code) - lo if code < 0 else 0  # -1 - j within the range -> -1 - (lo + j)

    def result(self) -> int:
        """Run this call's tasks no thread has taken, then, while the others finish elsewhere, tasks of calls
        launched after it (or wait); the kernel's return code for the whole call: that of the first failing
        replica in replica order, else 0."""
        while True:
            with _COND:
                if self._left == 0:
                    break
                owner, i = self, self._take()
                if i is None:
                    owner, i = _oldest_task()
                    if owner is None:
                        _COND.wait()
                        continue
            owner._run(i)
        if self._error is not None:
            raise self._error
        return next((c for c in self._codes if c < 0), 0)


def _oldest_task() -> tuple[Pending | None, int]:
    """The next task of the oldest launched call that has one (held _COND): (call, task), or (None, 0). A call
    leaves _QUEUE when its last task is taken."""
    while _QUEUE:
        owner = _QUEUE[0]
        i = owner._take()
        if i is not None:
            return owner, i
        _QUEUE.pop(0)  # pragma: no cover - a call whose tasks are all taken is no longer queued
    return None, 0


def _serve() -> None:
    """A pool thread's work: tasks of the oldest launched calls until none is left untaken."""
    global _SERVING
    while True:
        with _COND:
            owner, i = _oldest_task()
            if owner is None:
                _SERVING -= 1
                return
        owner._run(i)


def launch(
    kernel: ModuleType,
    prompt: np.ndarray,
    response: np.ndarray,
    group: np.ndarray,
    offsets: np.ndarray,
    n_groups: np.ndarray,
    scalars: tuple,
    finish: np.ndarray,
    stats: np.ndarray,
) -> Pending:
    """``kernel.run_replicas(prompt, response, group, offsets, n_groups, *scalars, finish, stats)`` as tasks that
    :func:`thread_count` threads share, started now when the call is large enough (MIN_REQUESTS); the arrays
    must stay untouched until :meth:`Pending.result`, which gives the call's return code."""
    global _SERVING
    large = int(offsets[-1]) >= max(MIN_REQUESTS, 1)
    threads = min(thread_count(), offsets.size - 1) if large else 1
    ranges = split(offsets, threads * TASKS_PER_THREAD) if threads > 1 else []
    if len(ranges) <= 1:
        ranges = [(0, offsets.size - 1)]
    pending = Pending(kernel, (prompt, response, group, offsets, n_groups, finish, stats), scalars, ranges)
    if len(ranges) > 1:
        with _COND:
            _QUEUE.append(pending)
            more = min(threads - 1, len(ranges) - 1) - _SERVING
            _SERVING += max(more, 0)
        for _ in range(more):
            _pool().submit(_serve)
    return pending


def _forget_pool() -> None:
    """In a forked child: the parent's pool threads do not exist there (a task given to the pool would wait
    forever), nor do its calls under way, so the child makes its own pool and queue when it needs them."""
    global _POOL, _COND, _SERVING
    _POOL = None
    _COND = threading.Condition()
    _QUEUE.clear()
    _SERVING = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=max(available_cores() - 1, 1), thread_name_prefix="rlsim-replicas")
    return _POOL
