"""The executor: ``[fn(t) for t in tasks]`` on local worker processes or a Ray cluster, in the tasks' order,
with progress; used by ``rlsim sweep`` and ``rlsim plan`` (the screen and the finalists).

Local workers default to one per two cores (each runs its kernel calls on two threads, rlsim.host.threads) and are
started per call or kept across the calls of a command (rlsim.host.workers_pool). Ray joins an existing cluster
(``--executor ray --address ...``) and is imported only then.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import as_completed
from typing import Any

from rlsim.errors import RlsimError, ScenarioError
from rlsim.host import threads, workers_pool


def run_tasks(
    fn: Callable[[Any], Any],
    tasks: list[Any],
    executor: str = "local",
    address: str | None = None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    costs: list[float] | None = None,
    sizes: list[int] | None = None,
    cores_per_worker: int = 0,
) -> list[Any]:
    """``[fn(t) for t in tasks]`` on an executor (``local``: processes on this machine; ``ray``: a Ray cluster),
    in the tasks' order whatever order they finish in; ``progress(done, total)`` after each, counting task ``i``
    as ``sizes[i]`` (the configurations it holds; 1 each by default). With ``costs`` (a rough duration per task)
    the longest are started first, so that the last one to start is a short one: the results and their order do
    not change. ``cores_per_worker`` sets the default local workers (:func:`default_workers`)."""
    order = sorted(range(len(tasks)), key=lambda i: (-costs[i], i)) if costs is not None else list(range(len(tasks)))
    submitted = [tasks[i] for i in order]
    weights = [sizes[i] for i in order] if sizes is not None else [1] * len(tasks)
    count = 0

    def finished(i: int) -> None:  # task i (in submitted order) is done
        nonlocal count
        count += weights[i]
        if progress:
            progress(count, sum(weights))

    if executor == "local":
        done = _run_local(fn, submitted, workers or default_workers(len(tasks), cores_per_worker), finished)
    elif executor == "ray":
        done = _run_ray(fn, submitted, address, finished)
    else:
        raise ScenarioError("--executor", executor, "is not an executor", "use local or ray")
    out: list[Any] = [None] * len(tasks)
    for i, result in zip(order, done):
        out[i] = result
    return out


def _run_local(fn, tasks, workers, finished):
    """Local processes: ``workers`` of them (by default one per two cores, so that each runs its kernel calls on two
    threads, rlsim.host.threads; on two cores, this process alone); each takes its share of the cores, counted again
    at each kernel call (threads.share_cores), so the last still running get the cores of those done."""
    n = len(tasks)
    if workers <= 1 or n == 1:
        out = []
        for i, t in enumerate(tasks):
            out.append(fn(t))
            finished(i)
        return out
    results: list[Any] = [None] * n
    pool = workers_pool.local(workers, threads.share_cores)
    try:
        futures = {pool.submit(threads.counted, fn, t): i for i, t in enumerate(tasks)}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            finished(futures[fut])
    finally:
        workers_pool.release(pool)
    return results


# cores per local worker by default: a worker's two threads keep two cores busy (measured: the paper sweep on two
# cores took 13.5 s in one process, 14.1-15.2 s in two)
CORES_PER_WORKER = 2


def default_workers(tasks: int, cores_per_worker: int = 0) -> int:
    """Local worker processes for ``tasks`` tasks when --workers is not given: one per ``cores_per_worker`` cores
    (default CORES_PER_WORKER) this process may run on, at least one, at most one per task."""
    return max(1, min(tasks, threads.available_cores() // (cores_per_worker or CORES_PER_WORKER)))


def _run_ray(fn, tasks, address, finished):
    try:
        import ray  # here: only --executor ray needs Ray, an optional dependency
    except ImportError:
        raise RlsimError("--executor ray needs Ray: pip install 'rlsim[ray]'") from None
    started = False
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise RlsimError(
                f"--executor ray --address {address}: no Ray cluster to join ({first[:160]}); start one (ray start "
                "--head) or run without --executor ray"
            ) from None
        started = True
    try:
        remote = ray.remote(fn)
        refs = [remote.remote(t) for t in tasks]
        results: list[Any] = [None] * len(tasks)
        index = {ref: i for i, ref in enumerate(refs)}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                results[index[ref]] = ray.get(ref)
                finished(index[ref])
        return results
    finally:
        if started:
            ray.shutdown()
