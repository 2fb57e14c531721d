"""rlsim.host.threads: a step's replicas split over threads give the bits of one kernel call, and the error one call
raises; both kernels release the GIL so that the threads run at once."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from rlsim.engine import kernel_build
from rlsim.engine import replica as engine
from rlsim.engine.replica import simulate_replicas
from rlsim.errors import RlsimError
from rlsim.host import threads
from tests.rlsim.test_engine_batch import built_kernel, outcome, step_case
from tests.rlsim.test_kernel import jit_kernel


def test_split_covers_every_replica_once_in_order_with_about_equal_requests():
    offsets = np.array([0, 10, 10, 30, 31, 60, 100, 100])
    for parts in (1, 2, 3, 4, 7, 12):
        ranges = threads.split(offsets, parts)
        assert len(ranges) <= parts
        assert ranges[0][0] == 0 and all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        assert offsets[ranges[-1][1]] == offsets[-1]  # only empty replicas may be left after the last range
        assert all(offsets[b] > offsets[a] for a, b in ranges)  # no range without requests
    assert threads.split(offsets, 2) == [(0, 5), (5, 7)]  # 60 of 100 requests before the cut at 50
    assert threads.split(np.array([0, 0, 0]), 2) == []


@pytest.mark.parametrize("kernel", ["jit", "aot"])
@pytest.mark.parametrize("count", ["2", "3", "5"])
def test_threads_give_the_bits_and_the_errors_of_one_call(kernel, count, monkeypatch):
    built_kernel(kernel, monkeypatch)
    monkeypatch.setattr(threads, "MIN_REQUESTS", 0)  # split even these small steps
    rng = np.random.default_rng(11)
    split_somewhere = 0
    for i in range(120):
        prompt, response, offsets, m, cap, decode, prefill, rules, groups = step_case(rng, i)
        if i % 3 == 1:  # a request that cannot fit alone, on some replica
            cap = int(rng.integers(1, int((prompt + response).max()) + 1))
        case = (prompt, response, offsets, m, cap, decode, prefill, rules, groups)
        monkeypatch.setenv(threads.ENV, "1")
        one = outcome(simulate_replicas, *case)
        monkeypatch.setenv(threads.ENV, count)
        assert outcome(simulate_replicas, *case) == one, i
        split_somewhere += len(threads.split(offsets, int(count))) > 1
    assert split_somewhere > 50


def test_rlsim_threads_must_be_a_count_or_auto(monkeypatch):
    monkeypatch.setenv(threads.ENV, "auto")
    assert threads.thread_count() == threads.available_cores() >= 1
    monkeypatch.setenv(threads.ENV, "3")
    assert threads.thread_count() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(threads.ENV, bad)
        with pytest.raises(RlsimError, match=r"RLSIM_THREADS=.*whole number of threads >= 1 or auto"):
            threads.thread_count()


def test_the_jit_kernel_releases_the_gil():
    assert jit_kernel().run_replicas.targetoptions.get("nogil") is True


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # numba.pycc is pending deprecation (kernel_build)
def test_the_ahead_of_time_build_sets_numbas_release_gil_flag_and_restores_it():
    from numba.pycc import compiler

    plain = compiler.Flags
    with kernel_build._releasing_gil():
        assert compiler.Flags().release_gil is True
    assert compiler.Flags is plain and not plain().release_gil


def _threaded_step_in_child(queue):
    """Run in a forked child: a step split over two threads."""
    import os

    os.environ[threads.ENV] = "2"
    queue.put(outcome(simulate_replicas, *_split_case()))


def _split_case():
    """A few replicas' step (rlsim.host.threads splits it in two when MIN_REQUESTS is 0)."""
    return step_case(np.random.default_rng(3), 1)


@pytest.mark.skipif(sys.platform == "win32", reason="needs fork")
def test_a_forked_child_runs_threaded_steps_with_a_pool_of_its_own(monkeypatch):
    """The parent's pool threads do not exist in a forked child; the child must not hand work to them (it would
    wait forever)."""
    import multiprocessing as mp

    monkeypatch.setattr(threads, "MIN_REQUESTS", 0)
    monkeypatch.setenv(threads.ENV, "2")
    case = _split_case()
    assert len(threads.split(case[2], 2)) == 2
    want = outcome(simulate_replicas, *case)  # the parent's pool now exists
    assert threads._POOL is not None
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_threaded_step_in_child, args=(queue,), daemon=True)
    child.start()
    got = queue.get(timeout=60)
    child.join(timeout=60)
    assert got == want and child.exitcode == 0


def test_a_bad_rlsim_threads_is_refused_before_a_small_run_too(tmp_path):
    """A step under MIN_REQUESTS never reads the count, but the run checks it first: `rlsim run` says what is wrong,
    exits 2 and writes nothing."""
    import os
    import subprocess

    from tests.conftest import ROOT, SCENARIOS

    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "rlsim.cli", "run", str(SCENARIOS / "paper_grpo.yaml"), "-o", str(out)],
        env=dict(os.environ, RLSIM_THREADS="two"),
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and not out.exists()
    assert "RLSIM_THREADS='two': must be a whole number of threads >= 1 or auto" in run.stderr


@pytest.mark.parametrize("count", ["1", "2", "4"])
def test_a_launched_call_runs_while_the_caller_works_and_gives_the_bits_and_errors_of_one_call(count, monkeypatch):
    """engine.launch_replicas starts the kernel on the pool's threads and returns: the caller's own work meanwhile
    (here: launching the next cases) changes nothing; each result, or error, is that of simulate_replicas run
    alone with one thread. Errors of one replica's inputs wait for result(), as a request that never fits does."""
    monkeypatch.setattr(threads, "MIN_REQUESTS", 0)
    rng = np.random.default_rng(21)
    cases = []
    for i in range(60):
        prompt, response, offsets, m, cap, decode, prefill, rules, groups = step_case(rng, i)
        if i % 3 == 1:
            cap = int(rng.integers(1, int((prompt + response).max()) + 1))
        if i % 5 == 2 and prompt.size:
            response = response.copy()
            response[int(rng.integers(prompt.size))] = 0  # an invalid request on some replica
        cases.append((prompt, response, offsets, m, cap, decode, prefill, rules, groups))
    monkeypatch.setenv(threads.ENV, "1")
    want = [outcome(simulate_replicas, *case) for case in cases]
    monkeypatch.setenv(threads.ENV, count)
    launched = [engine.launch_replicas(*case) for case in cases]  # all under way before any result is asked
    assert [outcome(lambda p=p: p.result()) for p in launched] == want
    assert sum(isinstance(w[0], type) for w in want) > 15  # errors among them


def test_result_waits_for_a_task_another_thread_is_still_running(monkeypatch):
    """The caller finishes the tasks no thread has taken and then waits for the ones under way: here the pool's
    thread holds its first task until released, after the caller has run out of tasks to take."""
    import threading

    monkeypatch.setattr(threads, "MIN_REQUESTS", 0)
    monkeypatch.setenv(threads.ENV, "2")
    prompt, response, offsets, m, cap, decode, prefill, rules, groups = step_case(np.random.default_rng(3), 0)
    offsets = np.array([0, 3 * (prompt.size // 5), prompt.size])  # split in two (rlsim.host.threads.split)
    assert len(threads.split(offsets, 2)) == 2
    case = (prompt, response, offsets, m, cap, decode, prefill, rules, groups)
    want = outcome(simulate_replicas, *case)
    real = engine.kernel()
    release, held = threading.Event(), threading.Event()

    class Holding:  # the kernel, but the pool thread's first call waits for release
        def __getattr__(self, name):
            return getattr(real, name)

        def run_replicas(self, *args):
            if threading.current_thread() is not threading.main_thread() and not held.is_set():
                held.set()
                release.wait(10)
            return real.run_replicas(*args)

    monkeypatch.setattr(engine, "_KERNEL", Holding())
    monkeypatch.setattr(threads, "TASKS_PER_THREAD", 1)  # two tasks: one for each thread
    pending = engine.launch_replicas(*case)
    assert held.wait(10)  # the pool thread has its task and holds it
    threading.Timer(0.2, release.set).start()
    assert outcome(pending.result) == want and release.is_set()


def _two_task_case(seed: int):
    """A step that rlsim.host.threads splits into two tasks (two threads, one task each), and its one-call outcome."""
    prompt, response, offsets, m, cap, decode, prefill, rules, groups = step_case(np.random.default_rng(seed), 0)
    offsets = np.array([0, 3 * (prompt.size // 5), prompt.size])
    assert len(threads.split(offsets, 2)) == 2
    case = (prompt, response, offsets, m, cap, decode, prefill, rules, groups)
    return case, outcome(simulate_replicas, *case)


def test_a_caller_whose_last_task_runs_elsewhere_runs_the_tasks_of_the_next_call(monkeypatch):
    """While the pool's thread holds call A's first task, the caller asking for A's result runs A's other task and
    then both tasks of call B, launched after A, instead of waiting idle; both results are those of one call."""
    import threading

    monkeypatch.setattr(threads, "MIN_REQUESTS", 0)
    monkeypatch.setattr(threads, "TASKS_PER_THREAD", 1)
    monkeypatch.setenv(threads.ENV, "2")
    (case_a, want_a), (case_b, want_b) = _two_task_case(3), _two_task_case(4)
    real = engine.kernel()
    release, held = threading.Event(), threading.Event()
    ran_by_caller = []

    class Holding:  # the kernel, but the pool thread's first call waits for release
        def __getattr__(self, name):
            return getattr(real, name)

        def run_replicas(self, *args):
            if threading.current_thread() is threading.main_thread():
                ran_by_caller.append(args[0].size)
                if len(ran_by_caller) == 3:
                    release.set()  # (without the helping, A's result would wait here until the hold times out)
            elif not held.is_set():
                held.set()
                release.wait(10)
            return real.run_replicas(*args)

    monkeypatch.setattr(engine, "_KERNEL", Holding())
    a = engine.launch_replicas(*case_a)
    assert held.wait(10)  # the pool thread holds A's first task
    b = engine.launch_replicas(*case_b)
    assert outcome(a.result) == want_a
    # the caller ran A's second task and both of B's while A's first was held
    assert len(ran_by_caller) == 3 and sum(ran_by_caller[1:]) == case_b[0].size
    assert outcome(b.result) == want_b


def test_an_error_raised_on_a_pool_thread_is_raised_by_result(monkeypatch):
    import threading

    monkeypatch.setattr(threads, "MIN_REQUESTS", 0)
    monkeypatch.setattr(threads, "TASKS_PER_THREAD", 1)
    monkeypatch.setenv(threads.ENV, "2")
    case, _ = _two_task_case(3)
    real = engine.kernel()

    class Failing:  # the kernel, but any call on a pool thread fails
        def __getattr__(self, name):
            return getattr(real, name)

        def run_replicas(self, *args):
            if threading.current_thread() is not threading.main_thread():
                entered.set()
                raise MemoryError("pool thread")
            return real.run_replicas(*args)

    entered = threading.Event()
    monkeypatch.setattr(engine, "_KERNEL", Failing())
    pending = engine.launch_replicas(*case)
    assert entered.wait(10)  # the pool thread took a task, and failed
    with pytest.raises(MemoryError, match="pool thread"):
        pending.result()
