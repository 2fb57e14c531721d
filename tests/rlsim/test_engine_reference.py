"""Checks ``rlsim.engine.replica.simulate_replica`` (event-driven, closed-form) against the plain iteration-by-iteration
reference in ``tests/rlsim/reference_engine.py`` and against hand-computed oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from rlsim.engine.iteration import DecodeCoefficients, PrefillCoefficients
from rlsim.engine.replica import EngineCapacityError, simulate_replica
from tests.rlsim.reference_engine import reference_replica

INT_FIELDS = (
    "num_iterations",
    "num_preemptions",
    "peak_kv_tokens",
    "peak_running",
    "recomputed_tokens",
    "decoded_tokens",
)
TIME_FIELDS = ("makespan_s", "decode_s", "prefill_s")
REL, ABS = 1e-9, 1e-12


# ----------------------------------------------------------------------------------------------------------
# case generation, shared by the hypothesis strategy and a seeded numpy sweep


def pick_capacity(integer, choice, need: int, edge: int, huge: int) -> int:
    """A cache size for a case whose largest request needs ``need`` units: mostly tight (need..3 need, so
    requests preempt), sometimes at the edge (need..need + edge), sometimes ``huge`` (nothing preempts)."""
    kind = choice(("tight", "tight", "tight", "edge", "huge"))
    if kind == "tight":
        return integer(need, 3 * need)
    if kind == "edge":
        return need + integer(0, edge)
    return huge


def build_case(integer, uniform, choice):
    """Build one random replica case from three samplers.

    ``integer(lo, hi)`` -> int in [lo, hi]; ``uniform(lo, hi)`` -> float in [lo, hi]; ``choice(seq)`` -> element.
    """
    n = integer(1, 40)
    prompt = np.array([integer(0, 60) for _ in range(n)], dtype=np.int64)
    response = np.array([integer(1, 80) for _ in range(n)], dtype=np.int64)
    max_num_seqs = integer(1, 16)

    # Every request fits alone iff prompt + response <= capacity (the docstring rules); "edge" probes that boundary.
    need = int((prompt + response).max())
    cap = pick_capacity(integer, choice, need, edge=2, huge=10**9)

    table = max_num_seqs + 1 + choice((0, 0, 0, 2))  # the table may be longer than max_num_seqs + 1
    regime = choice(("memory", "compute", "cross", "random"))
    mem_slope = uniform(0.0, 1e-4)
    mem_icpt = np.array([uniform(0.0, 1e-2) for _ in range(table)])
    overhead = np.array([uniform(0.0, 1e-3) for _ in range(table)])
    steps = np.array([uniform(0.0, 2e-3) for _ in range(table)])
    if regime == "memory":  # memory line always wins
        comp_icpt = mem_icpt * np.array([uniform(0.0, 1.0) for _ in range(table)])
        comp_slope = mem_slope * uniform(0.0, 1.0)
    elif regime == "compute":  # compute line always wins
        comp_icpt = np.maximum(mem_icpt, np.cumsum(steps)) + np.cumsum(steps)
        comp_slope = mem_slope + uniform(0.0, 1e-4)
    elif regime == "cross":  # compute wins at small K, memory overtakes somewhere inside the cache
        comp_slope = mem_slope * uniform(0.0, 0.5)
        k_cross = np.array([uniform(0.0, float(min(cap, 4 * need))) for _ in range(table)])
        comp_icpt = mem_icpt + (mem_slope - comp_slope) * k_cross
    else:  # independent draws, compute intercept increasing with batch
        comp_icpt = np.cumsum(steps)
        comp_slope = uniform(0.0, 1e-4)
    # half the cases: CPU work overlapping the GPU step, a floor under every iteration (engine.cpu_overlap)
    floor = np.array([uniform(0.0, 2e-2) for _ in range(table)]) if choice((True, False)) else None
    decode = DecodeCoefficients(
        mem_intercept_s=mem_icpt,
        mem_slope_s_per_token=float(mem_slope),
        compute_intercept_s=np.asarray(comp_icpt, dtype=np.float64),
        compute_slope_s_per_token=float(comp_slope),
        overhead_s=overhead,
        floor_s=floor,
    )
    prefill = PrefillCoefficients(
        overhead_s=uniform(0.0, 1e-2), per_token_s=uniform(0.0, 1e-4), per_token_sq_s=uniform(0.0, 1e-7)
    )
    return prompt, response, max_num_seqs, cap, decode, prefill, regime


@st.composite
def replica_cases(draw):
    return build_case(
        lambda lo, hi: draw(st.integers(lo, hi)),
        lambda lo, hi: draw(st.floats(lo, hi, allow_nan=False, allow_infinity=False)),
        lambda seq: draw(st.sampled_from(seq)),
    )


def numpy_case(rng: np.random.Generator):
    return build_case(
        lambda lo, hi: int(rng.integers(lo, hi + 1)),
        lambda lo, hi: float(rng.uniform(lo, hi)),
        lambda seq: seq[int(rng.integers(len(seq)))],
    )


def assert_matches(fast, ref: dict, context: str = "") -> None:
    for f in INT_FIELDS:
        assert int(getattr(fast, f)) == ref[f], f"{f}: fast {getattr(fast, f)} != reference {ref[f]} {context}"
    for f in TIME_FIELDS:
        a, b = float(getattr(fast, f)), ref[f]
        assert math.isclose(a, b, rel_tol=REL, abs_tol=ABS), f"{f}: fast {a!r} != reference {b!r} {context}"
    fa, fb = np.asarray(fast.finish_s), ref["finish_s"]
    assert fa.shape == fb.shape
    bad = ~np.isclose(fa, fb, rtol=REL, atol=ABS)
    assert not bad.any(), (
        f"finish_s differs at {np.flatnonzero(bad)[:5]}: fast {fa[bad][:5]} vs reference {fb[bad][:5]} {context}"
    )


# ----------------------------------------------------------------------------------------------------------
# fast model == reference


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(replica_cases())
def test_fast_model_matches_reference(case):
    prompt, response, m, cap, decode, prefill, regime = case
    ref = reference_replica(prompt, response, m, cap, decode, prefill)
    fast = simulate_replica(prompt, response, m, cap, decode, prefill)
    event(f"regime={regime}")
    event("preempted" if ref["num_preemptions"] else "no preemption")
    note(f"reference: { {k: v for k, v in ref.items() if k != 'finish_s'} }")
    assert_matches(fast, ref)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(replica_cases(), st.integers(1, 5))
def test_fast_model_matches_reference_on_capacity_errors(case, shortfall):
    """With a cache below the largest prompt + response, both raise, or both run and agree."""
    prompt, response, m, _cap, decode, prefill, _ = case
    cap = max(1, int((prompt + response).max()) - shortfall)
    try:
        ref = reference_replica(prompt, response, m, cap, decode, prefill)
    except EngineCapacityError:
        with pytest.raises(EngineCapacityError, match="KV cache"):
            simulate_replica(prompt, response, m, cap, decode, prefill)
        return
    assert_matches(simulate_replica(prompt, response, m, cap, decode, prefill), ref)


def test_seeded_sweep_matches_reference_and_preempts_often():
    """The case generator really exercises preemption (and the fast model agrees on every case)."""
    rng = np.random.default_rng(20240607)
    cases = preempted = recomputed = 0
    regimes = set()
    for i in range(300):
        prompt, response, m, cap, decode, prefill, regime = numpy_case(rng)
        ref = reference_replica(prompt, response, m, cap, decode, prefill)
        assert_matches(simulate_replica(prompt, response, m, cap, decode, prefill), ref, f"(seeded case {i})")
        cases += 1
        preempted += ref["num_preemptions"] > 0
        recomputed += ref["recomputed_tokens"] > 0
        regimes.add(regime)
    assert preempted >= 0.2 * cases, f"only {preempted}/{cases} cases preempt"
    assert recomputed > 0
    assert regimes == {"memory", "compute", "cross", "random"}


def test_tiny_slope_difference_crossing_overflow():
    """Nearly parallel lines: the crossing index (intercept gap / slope gap = 7.8e27) must not overflow an int cast.

    One request, one decode iteration at K=0: cost = max(0.0078125 + 0*K, 0 + 1e-30*K) = 0.0078125 s. (The first
    version of the kernel returned 42535295.87 s here, and negative times in other such cases.)
    """
    decode = DecodeCoefficients(
        mem_intercept_s=np.array([0.0, 0.0078125]),
        mem_slope_s_per_token=0.0,
        compute_intercept_s=np.array([0.0, 0.0]),
        compute_slope_s_per_token=1e-30,
        overhead_s=np.array([0.0, 0.0]),
    )
    prefill = PrefillCoefficients(0.0, 0.0, 0.0)
    args = (np.array([0]), np.array([1]), 1, 1, decode, prefill)
    ref = reference_replica(*args)
    assert ref["makespan_s"] == 0.0078125
    assert_matches(simulate_replica(*args), ref)


# ----------------------------------------------------------------------------------------------------------
# hand-computed oracles


def _simple_decode(max_batch: int = 4) -> DecodeCoefficients:
    """cost(b, K) = max(1 + K/4, c_b) + 1/8 with c_1 = 1/2, c_b = 2 for b >= 2 (binary-exact numbers)."""
    comp = np.full(max_batch + 1, 2.0)
    comp[1] = 0.5
    return DecodeCoefficients(
        mem_intercept_s=np.full(max_batch + 1, 1.0),
        mem_slope_s_per_token=0.25,
        compute_intercept_s=comp,
        compute_slope_s_per_token=0.0,
        overhead_s=np.full(max_batch + 1, 0.125),
    )


SIMPLE_PREFILL = PrefillCoefficients(overhead_s=0.5, per_token_s=0.0625, per_token_sq_s=0.0)


def test_hand_traced_preemption_case():
    """Two requests (prompt 0, response 4), max_num_seqs 2, capacity 6 tokens, traced by hand:

    round 1: admit both (0+0+1 <= 6, 0+0+2 <= 6), prefill 0.5; iterate b=2 K=0 -> kv 2
    round 2: b=2 K=2 -> kv 4; round 3: 4+2 <= 6, b=2 K=4 -> kv 6 (peak)
    round 4: 6+2 > 6: preempt request 1 (3 generated) -> kv 3; b=1 K=3 -> request 0 finishes, kv 0
    round 5: re-admit request 1 with c=3 (0+3+1 <= 6), prefill 0.5+3/16; b=1 K=3 -> finishes
    """
    d = _simple_decode(2)
    it_b2 = [max(1.0 + 0.25 * k, 2.0) + 0.125 for k in (0, 2, 4)]  # 2.125 each
    it_b1 = max(1.0 + 0.25 * 3, 0.5) + 0.125  # 1.875
    f0 = 0.5 + sum(it_b2) + it_b1
    f1 = f0 + (0.5 + 0.0625 * 3) + it_b1
    assert (f0, f1) == (8.75, 11.3125)
    expected = {
        "finish_s": np.array([f0, f1]),
        "makespan_s": f1,
        "decode_s": sum(it_b2) + 2 * it_b1,
        "prefill_s": 0.5 + 0.6875,
        "num_iterations": 5,
        "num_preemptions": 1,
        "peak_kv_tokens": 6,
        "peak_running": 2,
        "recomputed_tokens": 3,
        "decoded_tokens": 8,
    }
    args = (np.array([0, 0]), np.array([4, 4]), 2, 6, d, SIMPLE_PREFILL)
    assert_matches(simulate_replica(*args), expected)
    ref = reference_replica(*args)
    assert_matches(simulate_replica(*args), ref)
    np.testing.assert_array_equal(ref["finish_s"], expected["finish_s"])

    # One more token of cache and nothing is preempted: 3 more iterations at b=2, then none left.
    roomy = simulate_replica(np.array([0, 0]), np.array([4, 4]), 2, 8, d, SIMPLE_PREFILL)
    assert roomy.num_preemptions == 0 and roomy.num_iterations == 4 and roomy.peak_kv_tokens == 8


def test_hand_traced_head_of_line_blocking():
    """Admission is FCFS without skipping: a big request at the front blocks a small one behind it.

    prompts [3, 5, 0], responses [2, 1, 1], max_num_seqs 3, capacity 8.
    round 1: admit 0 (0+3+1 <= 8, kv 3); request 1 needs 3+5+2 = 10 > 8: blocked, and request 2 (which would
             fit) waits behind it. b=1 K=3 -> kv 4.
    round 2: request 1 still blocked (4+5+2 = 11). b=1 K=4 -> request 0 finishes, kv 0.
    round 3: admit 1 (0+5+1 <= 8, kv 5) and 2 (5+0+2 <= 8). b=2 K=5 -> both finish.
    """
    d = _simple_decode(3)
    t1 = 0.5 + 0.0625 * 3
    t1 += max(1.0 + 0.25 * 3, 0.5) + 0.125
    f0 = t1 + max(1.0 + 0.25 * 4, 0.5) + 0.125
    f12 = f0 + (0.5 + 0.0625 * 5) + max(1.0 + 0.25 * 5, 2.0) + 0.125
    args = (np.array([3, 5, 0]), np.array([2, 1, 1]), 3, 8, d, SIMPLE_PREFILL)
    fast = simulate_replica(*args)
    np.testing.assert_allclose(fast.finish_s, [f0, f12, f12], rtol=REL, atol=ABS)
    assert fast.num_iterations == 3 and fast.peak_running == 2 and fast.num_preemptions == 0
    assert fast.peak_kv_tokens == 7
    assert_matches(fast, reference_replica(*args))


def _alone_s(p: int, r: int, decode: DecodeCoefficients, prefill: PrefillCoefficients) -> float:
    """One request alone: its prefill plus r iterations at b=1 over K = p, p+1, ..., p+r-1 cached tokens, each at
    least the CPU floor when the engine overlaps its CPU work."""
    total = prefill.overhead_s + prefill.per_token_s * p + prefill.per_token_sq_s * p * p
    for i in range(r):
        k = p + i
        mem = decode.mem_intercept_s[1] + decode.mem_slope_s_per_token * k
        comp = decode.compute_intercept_s[1] + decode.compute_slope_s_per_token * k
        total += max(mem, comp, decode.floor[1]) + decode.overhead_s[1]
    return float(total)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(replica_cases(), st.integers(0, 200), st.integers(1, 300), st.integers(0, 3))
def test_single_request_alone(case, p, r, slack):
    _, _, _, _, decode, prefill, _ = case
    cap = p + r + slack  # fits exactly when slack == 0
    fast = simulate_replica(np.array([p]), np.array([r]), 1, cap, decode, prefill)
    expected = _alone_s(p, r, decode, prefill)
    assert math.isclose(fast.makespan_s, expected, rel_tol=REL, abs_tol=ABS)
    assert math.isclose(float(fast.finish_s[0]), expected, rel_tol=REL, abs_tol=ABS)
    assert fast.num_iterations == r and fast.decoded_tokens == r
    assert fast.num_preemptions == 0 and fast.recomputed_tokens == 0
    assert fast.peak_kv_tokens == p + r and fast.peak_running == 1


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(replica_cases())
def test_fast_model_invariants(case):
    prompt, response, m, cap, decode, prefill, _ = case
    fast = simulate_replica(prompt, response, m, cap, decode, prefill)
    assert fast.peak_kv_tokens <= cap
    assert 1 <= fast.peak_running <= m
    assert fast.decoded_tokens == int(response.sum())
    assert int(response.max()) <= fast.num_iterations <= int(response.sum())
    assert math.isclose(fast.makespan_s, fast.decode_s + fast.prefill_s, rel_tol=REL, abs_tol=ABS)
    assert math.isclose(fast.makespan_s, float(fast.finish_s.max()), rel_tol=REL, abs_tol=ABS)
    assert (fast.finish_s > 0).all() or decode.overhead_s.min() == 0
    if fast.num_preemptions == 0:
        assert fast.recomputed_tokens == 0


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(replica_cases())
def test_one_sequence_at_a_time(case):
    """max_num_seqs=1: requests run back to back in input order, each exactly as if alone."""
    prompt, response, _, cap, decode, prefill, _ = case
    decode = DecodeCoefficients(  # strictly positive iteration cost so finish times strictly increase
        mem_intercept_s=decode.mem_intercept_s,
        mem_slope_s_per_token=decode.mem_slope_s_per_token,
        compute_intercept_s=decode.compute_intercept_s,
        compute_slope_s_per_token=decode.compute_slope_s_per_token,
        overhead_s=decode.overhead_s + 1e-4,
    )
    fast = simulate_replica(prompt, response, 1, cap, decode, prefill)
    assert (np.diff(fast.finish_s) > 0).all()
    expected = np.cumsum([_alone_s(int(p), int(r), decode, prefill) for p, r in zip(prompt, response)])
    np.testing.assert_allclose(fast.finish_s, expected, rtol=REL, atol=ABS)
    assert fast.num_preemptions == 0 and fast.peak_running == 1
    assert fast.num_iterations == int(response.sum())


@pytest.mark.parametrize("fn", [simulate_replica, reference_replica], ids=["fast", "reference"])
def test_request_that_cannot_fit_raises(fn):
    d = _simple_decode(4)
    # prompt + response = 50 > 49 tokens of cache, behind requests that do fit.
    prompt, response = np.array([5, 10, 7]), np.array([5, 40, 3])
    with pytest.raises(EngineCapacityError, match="KV cache"):
        fn(prompt, response, 4, 49, d, SIMPLE_PREFILL)
    # exactly at the boundary it fits
    out = fn(prompt, response, 4, 50, d, SIMPLE_PREFILL)
    peak = out["peak_kv_tokens"] if isinstance(out, dict) else out.peak_kv_tokens
    assert peak <= 50
    # a prompt alone larger than the cache
    with pytest.raises(EngineCapacityError, match="KV cache"):
        fn(np.array([100]), np.array([1]), 4, 64, d, SIMPLE_PREFILL)


def test_empty_batch():
    d = _simple_decode(2)
    fast = simulate_replica(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 2, 10, d, SIMPLE_PREFILL)
    ref = reference_replica(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 2, 10, d, SIMPLE_PREFILL)
    assert_matches(fast, ref)
    assert fast.makespan_s == 0.0 and fast.num_iterations == 0 and fast.finish_s.shape == (0,)
