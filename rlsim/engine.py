"""Rollout engine model: one inference-engine replica doing continuous batching.

What it models (vLLM-style scheduling, recompute preemption), all times in seconds, sizes in tokens:

The replica receives its requests in arrival order (index order). Each request ``j`` has ``prompt_tokens[j]``
and ``response_tokens[j] >= 1``. The engine works in *rounds*; each round is:

1. **Admission.** While the waiting queue is not empty and fewer than ``max_num_seqs`` sequences run, look at
   the request at the *front* of the queue (no skipping ahead: head-of-line blocking, as vLLM's FCFS policy).
   Its context is ``c = prompt + generated_so_far``. It is admitted iff
   ``kv_used + c + (running + 1) <= kv_capacity_tokens``, i.e. there is room for its context *and* for one more
   decode iteration of every running sequence including it. On admission ``kv_used += c``.
   All requests admitted in one round are prefilled together before that round's decode iteration, costing
   ``prefill.overhead_s + prefill.per_token_s * sum(c) + prefill.per_token_sq_s * sum(c**2)`` (nothing when no
   request is admitted). A request re-admitted after preemption recomputes its whole context this way.
2. If nothing runs now: stop if the queue is empty, else the front request can never fit (an error).
3. **Preemption.** While ``kv_used + running > kv_capacity_tokens`` (the next iteration does not fit), preempt
   the most recently admitted running sequence: its KV is freed (``kv_used -= prompt + generated``), it keeps
   the tokens generated so far, and it goes back to the *front* of the waiting queue.
4. **Decode iteration.** With ``b`` running sequences and ``K = kv_used`` cached tokens, the iteration takes
   ``max(decode.mem_intercept_s[b] + decode.mem_slope_s_per_token * K,
          decode.compute_intercept_s[b] + decode.compute_slope_s_per_token * K,
          decode.floor_s[b]) + decode.overhead_s[b]``
   (the roofline of REFERENCE section 6: weight and KV reads vs. matmul and attention FLOPs; the floor is CPU
   work that overlaps the GPU step, zero for a serial engine, whose CPU work is in ``overhead_s``). Every running
   sequence generates one token (``kv_used += b``). A sequence whose generated count reaches its response
   length finishes at the end of this iteration; its KV is freed.

These rules follow vLLM's FCFS scheduler (V1: ``vllm/v1/core/sched/scheduler.py``, 0.11.2 L275-339 preemption of
``self.running.pop()`` to the front of ``waiting`` with ``num_computed_tokens = 0``, L396 no admission in a step
that preempted, L561-563 head-of-line blocking; V0 0.5.4 ``core/scheduler.py`` L454-483 and L808 alike), counted in
tokens rather than 16-token blocks; ``docs/design.md`` lists the differences.

Every response token costs one decode iteration; the prompt's KV comes from the prefill. (A real engine emits
the first token from the prefill; charging it to the decode instead moves one iteration per request.)

Why it is fast: between two events (a finish, a preemption, an admission) the batch is fixed and the cached
context grows by ``b`` per iteration, so the run of iterations up to the next event is summed in closed form
(the max of two affine functions of the iteration index). Work grows with the number of requests and
preemptions, not with tokens. The kernel is compiled with numba. ``tests/reference_engine.py`` holds the plain
iteration-by-iteration implementation of the rules above and a property test checks the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from rlsim.errors import RlsimError

__all__ = [
    "DecodeCoefficients",
    "PrefillCoefficients",
    "ReplicaResult",
    "EngineCapacityError",
    "simulate_replica",
    "decode_iteration_s",
    "prefill_s",
]


class EngineCapacityError(RlsimError, ValueError):
    """A request can never be admitted: its context does not fit the replica's KV cache."""


@dataclass(frozen=True)
class DecodeCoefficients:
    """Decode-iteration cost as a function of batch ``b`` (array index 0..max_num_seqs) and cached tokens K."""

    mem_intercept_s: np.ndarray
    mem_slope_s_per_token: float
    compute_intercept_s: np.ndarray
    compute_slope_s_per_token: float
    overhead_s: np.ndarray
    # an iteration never takes less than this (per b): CPU work that overlaps the GPU step (scheduling,
    # sampling, detokenizing done ahead, as vLLM >= 0.6 and V1 do); None: no floor (CPU work serial, in overhead_s)
    floor_s: np.ndarray | None = None

    @property
    def max_batch(self) -> int:
        return len(self.mem_intercept_s) - 1

    @property
    def floor(self) -> np.ndarray:
        return np.zeros_like(self.mem_intercept_s) if self.floor_s is None else np.asarray(self.floor_s, dtype=float)


@dataclass(frozen=True)
class PrefillCoefficients:
    """Prefill cost of one admission round: overhead + per_token * sum(c) + per_token_sq * sum(c^2)."""

    overhead_s: float
    per_token_s: float
    per_token_sq_s: float


@dataclass(frozen=True)
class ReplicaResult:
    """Outcome of one replica's batch of requests; times are seconds from the replica's start."""

    finish_s: np.ndarray  # per request, in input order
    makespan_s: float
    decode_s: float
    prefill_s: float
    num_iterations: int
    num_preemptions: int
    peak_kv_tokens: int
    peak_running: int
    recomputed_tokens: int  # context tokens prefilled again after preemption
    decoded_tokens: int  # tokens generated by decode iterations (= sum of response lengths)

    @property
    def mean_running(self) -> float:
        """Mean number of sequences per decode iteration (the effective decode batch)."""
        return 0.0 if self.num_iterations == 0 else self.decoded_tokens / self.num_iterations


def decode_iteration_s(decode: DecodeCoefficients, batch: int, context_tokens: float) -> float:
    """Time of one decode iteration with ``batch`` sequences and ``context_tokens`` cached tokens."""
    return float(
        max(
            decode.mem_intercept_s[batch] + decode.mem_slope_s_per_token * context_tokens,
            decode.compute_intercept_s[batch] + decode.compute_slope_s_per_token * context_tokens,
            decode.floor[batch],
        )
        + decode.overhead_s[batch]
    )


def prefill_s(prefill: PrefillCoefficients, context_tokens: np.ndarray) -> float:
    """Time of one admission round that prefills sequences with the given context lengths."""
    c = np.asarray(context_tokens, dtype=np.float64)
    if c.size == 0:
        return 0.0
    return float(prefill.overhead_s + prefill.per_token_s * c.sum() + prefill.per_token_sq_s * (c * c).sum())


# ----------------------------------------------------------------------------------------------------------
# compiled kernel


@numba.njit(cache=True, inline="always")
def _linear_sum(a: float, s: float, lo: int, hi: int) -> float:
    """sum_{i=lo}^{hi-1} (a + s*i)."""
    if hi <= lo:
        return 0.0
    count = hi - lo
    return a * count + s * (lo + hi - 1) * count / 2.0


@numba.njit(cache=True)
def _segment_s(a1: float, s1: float, a2: float, s2: float, n: int) -> float:
    """sum_{i=0}^{n-1} max(a1 + s1*i, a2 + s2*i), exactly split at the crossing."""
    if s1 == s2:
        return _linear_sum(max(a1, a2), s1, 0, n)
    # f(i) = a1 + s1 i >= g(i) = a2 + s2 i  <=>  (s1 - s2) i >= a2 - a1
    # clamp in floating point before the integer cast: nearly parallel lines put the crossing far away
    cross = min(max((a2 - a1) / (s1 - s2), -1.0), float(n))
    if s1 > s2:  # f wins for i >= cross
        i0 = int(np.ceil(cross)) if cross > 0 else 0
        if i0 > n:
            i0 = n
        return _linear_sum(a2, s2, 0, i0) + _linear_sum(a1, s1, i0, n)
    # s1 < s2: f wins for i <= cross
    i0 = int(np.floor(cross)) + 1 if cross >= 0 else 0
    if i0 > n:
        i0 = n
    return _linear_sum(a1, s1, 0, i0) + _linear_sum(a2, s2, i0, n)


@numba.njit(cache=True)
def _segment_floor_s(a1: float, s1: float, a2: float, s2: float, c: float, n: int) -> float:
    """sum_{i=0}^{n-1} max(a1 + s1*i, a2 + s2*i, c) for slopes s1, s2 >= 0: the constant c rules up to the first
    i where either line reaches it, the two lines after."""
    if n <= 0:
        return 0.0
    first = n
    for a, sl in ((a1, s1), (a2, s2)):
        if a >= c:
            first = 0
        elif sl > 0:
            kf = np.ceil((c - a) / sl)  # clamp in floating point: a tiny slope puts the crossing far away
            if kf < first:
                first = int(kf)
    if first > n:
        first = n
    if first <= 0:
        return _segment_s(a1, s1, a2, s2, n)
    return c * first + _segment_s(a1 + s1 * first, s1, a2 + s2 * first, s2, n - first)


@numba.njit(cache=True)
def _heap_push(keys, idx, ep, size, k, j, e):
    i = size
    keys[i] = k
    idx[i] = j
    ep[i] = e
    while i > 0:
        parent = (i - 1) >> 1
        if keys[parent] < keys[i] or (keys[parent] == keys[i] and idx[parent] <= idx[i]):
            break
        keys[parent], keys[i] = keys[i], keys[parent]
        idx[parent], idx[i] = idx[i], idx[parent]
        ep[parent], ep[i] = ep[i], ep[parent]
        i = parent
    return size + 1


@numba.njit(cache=True)
def _heap_pop(keys, idx, ep, size):
    size -= 1
    keys[0] = keys[size]
    idx[0] = idx[size]
    ep[0] = ep[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        right = left + 1
        if right < size and (keys[right] < keys[left] or (keys[right] == keys[left] and idx[right] < idx[left])):
            child = right
        if keys[i] < keys[child] or (keys[i] == keys[child] and idx[i] <= idx[child]):
            break
        keys[child], keys[i] = keys[i], keys[child]
        idx[child], idx[i] = idx[i], idx[child]
        ep[child], ep[i] = ep[i], ep[child]
        i = child
    return size


@numba.njit(cache=True)
def _run_replica(
    prompt,
    response,
    max_num_seqs,
    capacity,
    mem_a,
    mem_s,
    cmp_a,
    cmp_s,
    over,
    floor,
    pf_over,
    pf_tok,
    pf_sq,
    finish_s,
    stats,
):
    """Event-driven kernel; fills finish_s and stats, returns 0 or -1 - j if request j can never fit."""
    n = prompt.shape[0]
    generated = np.zeros(n, dtype=np.int64)
    admit_iter = np.zeros(n, dtype=np.int64)
    gen_at_admit = np.zeros(n, dtype=np.int64)
    epoch = np.zeros(n, dtype=np.int64)
    running_flag = np.zeros(n, dtype=np.bool_)
    # waiting queue: circular buffer, preempted requests re-enter at the front
    queue = np.empty(n, dtype=np.int64)
    for j in range(n):
        queue[j] = j
    q_head = 0
    q_len = n
    # running sequences in admission order (a stack with lazy removal of finished ones)
    stack_cap = 2 * n + 2
    stack = np.empty(stack_cap, dtype=np.int64)
    stack_len = 0
    # min-heap of (finish iteration, request, epoch); stale entries skipped by epoch
    heap_cap = 2 * n + 2
    h_key = np.empty(heap_cap, dtype=np.int64)
    h_idx = np.empty(heap_cap, dtype=np.int64)
    h_ep = np.empty(heap_cap, dtype=np.int64)
    h_size = 0

    t = 0.0
    decode_total = 0.0
    prefill_total = 0.0
    cur_iter = 0
    kv_used = 0
    b = 0
    n_preempt = 0
    peak_kv = 0
    peak_b = 0
    recomputed = 0
    decoded = 0

    while True:
        # 1. admission
        adm_tok = 0.0
        adm_sq = 0.0
        adm_count = 0
        while q_len > 0 and b < max_num_seqs:
            j = queue[q_head]
            c = prompt[j] + generated[j]
            if kv_used + c + b + 1 > capacity:
                break
            q_head = (q_head + 1) % n
            q_len -= 1
            kv_used += c
            b += 1
            epoch[j] += 1
            running_flag[j] = True
            admit_iter[j] = cur_iter
            gen_at_admit[j] = generated[j]
            if h_size == heap_cap:  # compact stale heap entries (rare)
                new_size = 0
                for k in range(h_size):
                    if running_flag[h_idx[k]] and h_ep[k] == epoch[h_idx[k]]:
                        new_size = _heap_push(h_key, h_idx, h_ep, new_size, h_key[k], h_idx[k], h_ep[k])
                h_size = new_size
            h_size = _heap_push(h_key, h_idx, h_ep, h_size, cur_iter + response[j] - generated[j], j, epoch[j])
            if stack_len == stack_cap:  # compact finished entries (rare)
                new_len = 0
                for k in range(stack_len):
                    if running_flag[stack[k]]:
                        stack[new_len] = stack[k]
                        new_len += 1
                stack_len = new_len
            stack[stack_len] = j
            stack_len += 1
            adm_tok += c
            adm_sq += float(c) * float(c)
            adm_count += 1
            if generated[j] > 0:
                recomputed += c
        if adm_count > 0:
            dt = pf_over + pf_tok * adm_tok + pf_sq * adm_sq
            t += dt
            prefill_total += dt
        if b > peak_b:
            peak_b = b
        # 2. nothing runs
        if b == 0:
            if q_len > 0:
                return -1 - queue[q_head]
            break
        # 3. preemption (latest admitted first)
        while kv_used + b > capacity:
            while not running_flag[stack[stack_len - 1]]:
                stack_len -= 1
            j = stack[stack_len - 1]
            stack_len -= 1
            generated[j] = gen_at_admit[j] + (cur_iter - admit_iter[j])
            kv_used -= prompt[j] + generated[j]
            running_flag[j] = False
            epoch[j] += 1
            b -= 1
            q_head = (q_head - 1 + n) % n
            queue[q_head] = j
            q_len += 1
            n_preempt += 1
        if b == 0:
            continue
        # 4. decode iterations up to the next event
        while not (running_flag[h_idx[0]] and h_ep[0] == epoch[h_idx[0]]):
            h_size = _heap_pop(h_key, h_idx, h_ep, h_size)
        n_fin = h_key[0] - cur_iter
        n_cap = (capacity - kv_used) // b
        steps = n_fin if n_fin < n_cap else n_cap
        dt = (
            _segment_floor_s(
                mem_a[b] + mem_s * kv_used, mem_s * b, cmp_a[b] + cmp_s * kv_used, cmp_s * b, floor[b], steps
            )
            + over[b] * steps
        )
        t += dt
        decode_total += dt
        decoded += b * steps
        kv_used += b * steps
        cur_iter += steps
        if kv_used > peak_kv:
            peak_kv = kv_used
        # finishes at the end of this iteration
        while h_size > 0:
            j = h_idx[0]
            if not (running_flag[j] and h_ep[0] == epoch[j]):
                h_size = _heap_pop(h_key, h_idx, h_ep, h_size)
                continue
            if h_key[0] != cur_iter:
                break
            h_size = _heap_pop(h_key, h_idx, h_ep, h_size)
            generated[j] = response[j]
            running_flag[j] = False
            kv_used -= prompt[j] + response[j]
            b -= 1
            finish_s[j] = t
    stats[0] = t
    stats[1] = decode_total
    stats[2] = prefill_total
    stats[3] = cur_iter
    stats[4] = n_preempt
    stats[5] = peak_kv
    stats[6] = peak_b
    stats[7] = recomputed
    stats[8] = decoded
    return 0


def simulate_replica(
    prompt_tokens: np.ndarray,
    response_tokens: np.ndarray,
    max_num_seqs: int,
    kv_capacity_tokens: int,
    decode: DecodeCoefficients,
    prefill: PrefillCoefficients,
) -> ReplicaResult:
    """Run one replica's requests to completion under the rules in the module docstring.

    Raises EngineCapacityError when a request's prompt plus response cannot fit the KV cache, and ValueError on
    inconsistent inputs (lengths differ, response < 1, max_num_seqs beyond the decode coefficient table).
    """
    prompt = np.ascontiguousarray(prompt_tokens, dtype=np.int64)
    response = np.ascontiguousarray(response_tokens, dtype=np.int64)
    if prompt.shape != response.shape or prompt.ndim != 1:
        raise ValueError(f"prompt_tokens {prompt.shape} and response_tokens {response.shape} must be 1-D, same length")
    if response.size and (response.min() < 1 or prompt.min() < 0):
        raise ValueError("response_tokens must be >= 1 and prompt_tokens >= 0")
    if max_num_seqs < 1 or max_num_seqs > decode.max_batch:
        raise ValueError(f"max_num_seqs ({max_num_seqs}) must be in 1..{decode.max_batch} (decode table size)")
    finish = np.zeros(prompt.size, dtype=np.float64)
    if prompt.size == 0:
        return ReplicaResult(finish, 0.0, 0.0, 0.0, 0, 0, 0, 0, 0, 0)
    stats = np.zeros(9, dtype=np.float64)
    code = _run_replica(
        prompt,
        response,
        int(max_num_seqs),
        int(kv_capacity_tokens),
        np.ascontiguousarray(decode.mem_intercept_s, dtype=np.float64),
        float(decode.mem_slope_s_per_token),
        np.ascontiguousarray(decode.compute_intercept_s, dtype=np.float64),
        float(decode.compute_slope_s_per_token),
        np.ascontiguousarray(decode.overhead_s, dtype=np.float64),
        np.ascontiguousarray(decode.floor, dtype=np.float64),
        float(prefill.overhead_s),
        float(prefill.per_token_s),
        float(prefill.per_token_sq_s),
        finish,
        stats,
    )
    if code < 0:
        j = -1 - code
        raise EngineCapacityError(
            f"request {j} (prompt {prompt[j]} + response {response[j]} tokens) cannot fit the KV cache of "
            f"{kv_capacity_tokens} tokens; raise engine.gpu_memory_utilization or tensor parallelism, or lower "
            "workload.max_response_tokens"
        )
    return ReplicaResult(
        finish_s=finish,
        makespan_s=float(stats[0]),
        decode_s=float(stats[1]),
        prefill_s=float(stats[2]),
        num_iterations=int(stats[3]),
        num_preemptions=int(stats[4]),
        peak_kv_tokens=int(stats[5]),
        peak_running=int(stats[6]),
        recomputed_tokens=int(stats[7]),
        decoded_tokens=int(stats[8]),
    )
