"""rlsim.host.workers_pool: run_tasks' local workers, started per call or kept across the calls of a command
(rlsim plan's stages), shut down when it ends."""

import os

import pytest

from rlsim.host import workers_pool
from rlsim.host.executor import run_tasks


def _pid(_task):
    return os.getpid()


def _fail(task):
    if task == 3:
        raise ValueError("task 3 fails")
    return task


def test_kept_pools_start_the_workers_once():
    with workers_pool.kept_pools():
        first = set(run_tasks(_pid, list(range(6)), workers=2))
        pool = workers_pool._KEPT[2]
        started = set(pool._processes)  # the pool's worker processes (whichever of them took the tasks)
        again = set(run_tasks(_pid, list(range(6)), workers=2))
        assert workers_pool._KEPT[2] is pool and first | again <= started and os.getpid() not in started
        with workers_pool.kept_pools():  # nested: the outer one keeps them
            assert set(run_tasks(_pid, list(range(4)), workers=2)) <= started
        assert workers_pool._KEPT == {2: pool}
    assert workers_pool._KEPT is None and not pool._processes  # shut down at the end
    assert set(run_tasks(_pid, list(range(6)), workers=2)).isdisjoint(started)  # new ones, each call


def test_a_failing_task_is_raised_and_the_kept_pools_are_shut_down():
    with pytest.raises(ValueError, match="task 3 fails"):
        with workers_pool.kept_pools():
            run_tasks(_fail, [1, 2, 3, 4], workers=2)
    assert workers_pool._KEPT is None
    assert run_tasks(_fail, [1, 2], workers=2) == [1, 2]
