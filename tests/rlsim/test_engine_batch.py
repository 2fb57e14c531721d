"""``rlsim.engine.replica.simulate_replicas`` (one compiled call for a step's replicas, as rlsim.engine.rollout uses
it) gives the bits of :func:`simulate_replica` called on each replica's slice in turn, and raises the error the first
failing
replica raises."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from rlsim.engine import replica as engine
from rlsim.engine.replica import EngineCapacityError, SchedulerRules, simulate_replica, simulate_replicas
from rlsim.engine.rollout import launch_rollouts, simulate_rollout
from tests.rlsim.test_engine_reference import numpy_case
from tests.rlsim.test_kernel import RULES, jit_kernel


def built_kernel(kind: str, monkeypatch=None):
    """The ``jit`` or ``aot`` kernel (the test is skipped where none was built ahead of time); with ``monkeypatch``,
    rlsim.engine.replica's kernel for the test."""
    built = engine.aot_kernel() if kind == "aot" else jit_kernel()
    if built is None:
        pytest.skip("no kernel built ahead of time here")
    if monkeypatch is not None:
        monkeypatch.setattr(engine, "_KERNEL", built)
    return built


def per_replica(prompt, response, offsets, m, cap, decode, prefill, rules, groups):
    """simulate_replica on each non-empty slice in turn: finish times and stats rows as simulate_replicas has them."""
    finish = np.zeros(prompt.size)
    stats = np.zeros((offsets.size - 1, 11))
    for r in np.flatnonzero(np.diff(offsets)):
        lo, hi = offsets[r], offsets[r + 1]
        res = simulate_replica(prompt[lo:hi], response[lo:hi], m, cap, decode, prefill, rules, groups[lo:hi])
        finish[lo:hi] = res.finish_s
        stats[r] = [float(v) for v in dataclasses.astuple(res)[1:]]
    return finish, stats


def outcome(fn, *args):
    try:
        finish, stats = fn(*args)
    except ValueError as exc:  # EngineCapacityError included
        return type(exc), str(exc)
    return finish.tobytes(), stats.tobytes()


def step_case(rng, i):
    """A few replicas' worth of numpy_case requests (some replicas empty), grouped by 3, under RULES[i % 4]."""
    prompt, response, m, cap, decode, prefill, _ = numpy_case(rng)
    rules = RULES[i % len(RULES)]
    if rules.chunked_prefill:
        m = min(m, rules.max_num_batched_tokens)
    groups = np.arange(prompt.size) // 3
    prompt = prompt[groups * 3]
    cap = max(cap, int((prompt + response).max()) + 2 * rules.block_size)
    cuts = np.sort(rng.integers(0, groups[-1] + 2, size=int(rng.integers(1, 5))))
    offsets = np.concatenate([[0], np.searchsorted(groups, cuts), [prompt.size]])
    return prompt, response, offsets, m, cap, decode, prefill, rules, groups


@pytest.mark.parametrize("kernel", ["jit", "aot"])
def test_simulate_replicas_gives_the_bits_of_one_call_per_replica(kernel, monkeypatch):
    built_kernel(kernel, monkeypatch)
    rng = np.random.default_rng(5)
    for i in range(200):
        case = step_case(rng, i)
        assert outcome(simulate_replicas, *case) == outcome(per_replica, *case), i


def test_simulate_replicas_raises_what_the_first_failing_replica_raises():
    rng = np.random.default_rng(8)
    seen = set()
    for i in range(300):
        prompt, response, offsets, m, cap, decode, prefill, rules, groups = step_case(rng, i)
        kind = i % 5
        if kind == 0:  # a request that cannot fit alone
            cap = int(rng.integers(1, int((prompt + response).max()) + 1))
        elif kind == 1:  # a response of 0 tokens somewhere
            response = response.copy()
            response[rng.integers(prompt.size)] = 0
        elif kind == 2:  # a group whose prompts differ
            prompt = prompt.copy()
            prompt[rng.integers(prompt.size)] += 1
        elif kind == 3:  # two errors on different replicas: the earlier replica's
            response = response.copy()
            response[-1] = 0
            cap = int((prompt + response).max()) - 1
        else:  # max_num_seqs beyond the decode table
            m = decode.max_batch + int(rng.integers(0, 2))
        case = (prompt, response, offsets, m, cap, decode, prefill, rules, groups)
        got = outcome(simulate_replicas, *case)
        assert got == outcome(per_replica, *case), (i, got)
        seen.add(got[0] if isinstance(got[0], type) else None)
    assert {EngineCapacityError, ValueError, None} <= seen


def test_group_ids_out_of_order_on_a_replica_take_the_general_path():
    rng = np.random.default_rng(2)
    prompt, response, m, cap, decode, prefill, _ = numpy_case(rng)
    rules = SchedulerRules(block_size=4, prefix_caching=True)
    groups = rng.permutation(prompt.size) % 4
    offsets = np.array([0, prompt.size // 2, prompt.size])
    case = (prompt, response, offsets, m, max(cap, 200), decode, prefill, rules, groups)
    assert outcome(simulate_replicas, *case) == outcome(per_replica, *case)


def test_simulate_rollout_names_the_request_within_its_replica():
    rng = np.random.default_rng(4)
    prompt, response, m, cap, decode, prefill, _ = numpy_case(rng)
    response = response.copy()
    response[7] = 10**6  # request 7: group 3 of 2 (group size 2) goes to replica 1 of 2, its 4th request
    with pytest.raises(EngineCapacityError, match=r"^request 3 \("):
        simulate_rollout(prompt, response, 2, 2, m, 10**5, decode, prefill)


@pytest.mark.parametrize("kernel", ["jit", "aot"])
def test_run_replicas_stops_at_the_first_request_that_never_fits_and_names_it_in_the_concatenation(kernel):
    """simulate_replicas checks beforehand that every request fits alone; the kernel's own check, called directly."""
    built = built_kernel(kernel)
    i8 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    table = np.zeros(3)
    stats = np.zeros(33)
    finish = np.zeros(5)
    args = (i8(1, 1, 1, 50, 1), i8(1, 1, 1, 1, 1), i8(-1, -1, -1, -1, -1), i8(0, 2, 2, 5), i8(0, 0, 0), 2, 10, 1)
    rest = (
        False,
        1 << 62,
        0,
        False,
        False,
        table,
        1e-6,
        table,
        1e-7,
        table + 1e-3,
        table,
        1e-3,
        1e-5,
        1e-9,
        finish,
        stats,
    )
    assert built.run_replicas(*args, *rest) == -1 - 3
    assert stats[0] > 0 and not stats[11:].any()  # replica 0 ran, replica 1 has no requests, replica 2 failed


@pytest.mark.parametrize("kernel", ["jit", "aot"])
def test_deal_round_robin_is_the_stable_sort_by_owner_with_groups_numbered_per_replica(kernel):
    """rlsim.engine.rollout's compiled dealing against its definition in numpy (group = i // G, owner = group % R,
    stable sort by owner, groups renumbered within each replica), partial last groups included."""
    built = built_kernel(kernel)
    rng = np.random.default_rng(9)
    for _ in range(200):
        n, size, replicas = int(rng.integers(1, 60)), int(rng.integers(1, 6)), int(rng.integers(1, 7))
        group = np.arange(n) // size
        prompt = rng.integers(1, 9, n)[group]
        if rng.random() < 0.3:
            prompt[rng.integers(n)] += 1  # a group whose prompts may now differ
        response = rng.integers(1, 50, n)
        order = np.argsort(group % replicas, kind="stable")
        bounds = np.searchsorted((group % replicas)[order], np.arange(replicas + 1))
        want_group, want_counts, want_bad = engine._replica_groups(prompt[order], bounds, group[order])
        out = [np.empty(n, dtype=np.int64) for _ in range(3)]
        offsets, counts = np.empty(replicas + 1, dtype=np.int64), np.empty(replicas, dtype=np.int64)
        code = built.deal_round_robin(prompt, response, size, replicas, *out, offsets, counts)
        assert np.array_equal(out[0], prompt[order]) and np.array_equal(out[1], response[order])
        assert np.array_equal(offsets, bounds) and np.array_equal(counts, want_counts)
        bad = int(np.searchsorted(offsets, -1 - code, side="right")) - 1 if code < 0 else replicas
        assert bad == want_bad
        if bad == replicas:
            assert np.array_equal(out[2], want_group)
    empty = np.zeros(0, dtype=np.int64)
    offsets, counts = np.ones(4, dtype=np.int64), np.ones(3, dtype=np.int64)
    assert built.deal_round_robin(empty, empty, 8, 3, empty, empty, empty, offsets, counts) == 0
    assert not offsets.any() and not counts.any()


def test_simulate_rollout_refuses_a_group_whose_prompts_differ():
    rng = np.random.default_rng(4)
    prompt, response, m, cap, decode, prefill, _ = numpy_case(rng)
    prompt = np.repeat(prompt[::2], 2)[: prompt.size].copy()
    prompt[5] += 1  # group 2 of 2 requests
    with pytest.raises(ValueError, match="requests of one prompt group must have the same prompt length"):
        simulate_rollout(prompt, response, 2, 2, m, 10**6, decode, prefill, rules=SchedulerRules(prefix_caching=True))
    simulate_rollout(prompt, response, 2, 2, m, 10**6, decode, prefill, rules=SchedulerRules(prefix_caching=False))


@pytest.mark.parametrize("kernel", ["jit", "aot"])
def test_simulate_rollout_takes_read_only_and_other_typed_arrays(kernel, monkeypatch):
    """The compiled dealing takes only writable int64 arrays (the JIT kernel refuses a read-only one);
    simulate_rollout converts what it is given."""
    built_kernel(kernel, monkeypatch)
    rng = np.random.default_rng(4)
    prompt, response, m, cap, decode, prefill, _ = numpy_case(rng)
    prompt = np.repeat(prompt[::2], 2)[: prompt.size].copy()
    want = simulate_rollout(prompt, response, 2, 2, m, 10**6, decode, prefill)
    frozen = [np.array(a) for a in (prompt, response)]
    for a in frozen:
        a.flags.writeable = False
    assert simulate_rollout(*frozen, 2, 2, m, 10**6, decode, prefill) == want
    assert simulate_rollout(prompt.astype(np.int32), response.astype(float), 2, 2, m, 10**6, decode, prefill) == want


def rollout_steps(rng, count, least=0):
    """``count`` steps of at least ``least`` requests in prompt groups of 2, on one numpy_case's engine arguments."""
    prompt, response, m, cap, decode, prefill, _ = numpy_case(rng)
    steps = []
    for _ in range(count):
        n = int(rng.integers(least, max(prompt.size, least) + 1))
        p = np.repeat(rng.integers(1, 40, n // 2 + 1), 2)[:n]
        steps.append((p, rng.integers(1, 60, p.size)))
    return steps, m, max(cap, 400), decode, prefill


@pytest.mark.parametrize("kernel", ["jit", "aot"])
def test_launched_rollouts_give_the_results_of_one_call_per_step(kernel, monkeypatch):
    """Several steps' replicas in one compiled call (rlsim.run.pipeline simulates small steps so): each step's
    RolloutResult is the one simulate_rollout gives for it alone, under every rule set (empty steps included)."""
    built_kernel(kernel, monkeypatch)
    rng = np.random.default_rng(11)
    for i in range(40):
        steps, m, cap, decode, prefill = rollout_steps(rng, int(rng.integers(1, 5)))
        rules = RULES[i % len(RULES)]
        m = min(m, rules.max_num_batched_tokens) if rules.chunked_prefill else m
        replicas = int(rng.integers(1, 4))
        overheads = rng.random(len(steps)).tolist()
        want = [
            simulate_rollout(p, r, 2, replicas, m, cap, decode, prefill, o, rules)
            for (p, r), o in zip(steps, overheads)
        ]
        assert launch_rollouts(steps, 2, replicas, m, cap, decode, prefill, overheads, rules).result() == want, i


def test_launched_rollouts_raise_what_the_first_failing_step_raises_alone():
    rng = np.random.default_rng(12)
    steps, m, cap, decode, prefill = rollout_steps(rng, 3, least=4)
    rules = SchedulerRules(prefix_caching=True)
    bad_fit = list(steps)
    bad_fit[1] = (bad_fit[1][0], bad_fit[1][1].copy())
    bad_fit[1][1][-1] = 10**6  # step 1's last request can never fit
    bad_group = list(steps)
    bad_group[2] = (bad_group[2][0].copy(), bad_group[2][1])
    bad_group[2][0][1] += 1  # step 2's first group has two prompt lengths
    for case, failing in ((bad_fit, 1), (bad_group, 2), (bad_fit[:2] + bad_group[2:], 1)):
        with pytest.raises(ValueError) as alone:
            simulate_rollout(*case[failing], 2, 2, m, cap, decode, prefill, 0.0, rules)
        with pytest.raises(type(alone.value), match=f"^{re.escape(str(alone.value))}$"):
            launch_rollouts(case, 2, 2, m, cap, decode, prefill, [0.0] * 3, rules).result()


def test_launch_rollouts_wants_one_overhead_per_step():
    rng = np.random.default_rng(14)
    steps, m, cap, decode, prefill = rollout_steps(rng, 3, least=2)
    with pytest.raises(ValueError, match="^2 overheads for 3 steps: give one per step$"):
        launch_rollouts(steps, 2, 2, m, cap, decode, prefill, [0.0, 0.0])
