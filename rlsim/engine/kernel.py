"""The compiled part of :mod:`rlsim.engine.replica`: the event-driven kernel of the rules in that module's docstring.

Plain Python under numba's ``njit``, so that it stays readable and ``tests/rlsim/reference_engine.py`` stays an
independent check. It imports numba and numpy only, so that ``rlsim/engine/kernel_build.py`` (run by ``setup.py`` at
install time) can compile it ahead of time into an extension module without importing the rest of rlsim.

Two ways to run it, chosen by :func:`rlsim.engine.replica.kernel`:

* **ahead of time** (the default when installed): ``rlsim/engine/kernel_build.py`` compiles the entry points of
  ``SIGNATURES`` with numba's AOT compiler into ``rlsim/_kernel_aot_<digest>``, named by the digest of this file, so
  a module built from other source is never loaded; ``rlsim`` then starts without importing numba or compiling;
* **just in time**: importing this module compiles every entry point for its one explicit signature (or loads it
  from numba's on-disk cache), and no other argument types are ever compiled: a call with other types fails
  instead of compiling a second version. ``rlsim.engine.replica`` passes writable C-contiguous int64 / float64 arrays.

The helpers are inlined into the entry points (``_inlined``), and the per-replica work
(``_replica``) is compiled without numba's reference counting on a workspace its caller allocates once, so the
event loop neither allocates nor touches reference counts. Every entry point releases the GIL (``nogil``;
rlsim/engine/kernel_build.py does the same for the built module), so rlsim.host.threads runs replicas of a step on
several cores at once. Both builds compile ``a[i]`` without the wraparound of negative indices
(:func:`unwrapped_indices`): the
kernel never indexes with a negative integer (tests/rlsim/test_kernel.py runs it under numba's bounds checks).

Both are the same source compiled by the same LLVM without fast-math, so they give the same bits
(``tests/rlsim/test_kernel.py`` checks it; ``tests/rlsim/test_golden.py`` checks both against the golden outputs).
"""

from __future__ import annotations

import contextlib

import numba
import numpy as np

# the entry points rlsim.engine.replica calls, with their argument types (numba's signature syntax)
# one replica's row of stats, as run_replicas fills it (N_STATS per replica; rlsim.engine.replica.ReplicaResult
# names them in this order)
STAT_MAKESPAN_S = 0
STAT_DECODE_S = 1
STAT_PREFILL_S = 2
STAT_ITERATIONS = 3
STAT_PREEMPTIONS = 4
STAT_PEAK_KV_TOKENS = 5
STAT_PEAK_RUNNING = 6
STAT_RECOMPUTED_TOKENS = 7
STAT_DECODED_TOKENS = 8
STAT_PREFILL_TOKENS = 9
STAT_PREFIX_HIT_TOKENS = 10
N_STATS = 11

SIGNATURES = {
    # the replicas of a step in one call: their requests concatenated (replica r's are offsets[r]:offsets[r+1],
    # group ids numbered per replica, n_groups per replica), finish_s alike and 11 stats per replica; prompt,
    # response, group, offsets, n_groups, max_num_seqs, cap, bs, chunked, budget, wm, reuse, fast, mem_a, mem_s,
    # cmp_a, cmp_s, over, floor, pf_over, pf_tok, pf_sq, finish_s, stats
    "run_replicas": (
        "i8(i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8, i8, i8, b1, i8, i8, b1, b1, f8[::1], f8, f8[::1], f8, "
        "f8[::1], f8[::1], f8, f8, f8, f8[::1], f8[::1])"
    ),
    # groups, prompt, out
    "renumber_consecutive": "i8(i8[::1], i8[::1], i8[::1])",
    # prompt, response, group_size, replicas, out_prompt, out_response, out_group, offsets, n_groups
    "deal_round_robin": "i8(i8[::1], i8[::1], i8, i8, i8[::1], i8[::1], i8[::1], i8[::1], i8[::1])",
    # prompt, response, sub, bs, cap, out
    "first_invalid": "i8(i8[::1], i8[::1], i8, i8, i8, i8[::1])",
    # (none): the numba that compiled the kernel, see NUMBA_VERSION
    "numba_version": "i8()",
}


def _version_number(version: str) -> int:
    """major * 10000 + minor * 100 + patch of a version string such as 0.68.1 (0 for a part that is not a number)."""
    parts = [int(p) if p.isdigit() else 0 for p in (version.split("+")[0].split(".") + ["0", "0"])[:3]]
    return parts[0] * 10000 + parts[1] * 100 + parts[2]


# numba's version where this module is compiled: the running numba for the JIT kernel, the build environment's for
# the ahead-of-time one (pip builds it with the newest numba it can install, which is not the one rlsim then runs
# with: its LLVM decides how fast the event loop is, 1.3x between numba 0.65 and 0.68 on recorded paper steps)
NUMBA_VERSION = _version_number(numba.__version__)


def _inlined(fn):
    """A helper of the entry points, inlined into them by numba (no call, no reference counting of its array
    arguments), compiled only as part of them."""
    return numba.njit(cache=True, inline="always")(fn)


def _compiled(signature: str):
    """``numba.njit`` for one signature, cached on disk: compiled (or loaded) at import, never for other types, with
    indices as they are (:func:`unwrapped_indices`); it releases the GIL while it runs (rlsim.host.threads calls it from
    several threads at once)."""

    def compile_now(fn):
        with unwrapped_indices():  # _replica, called from run_replicas, is compiled within this block too
            return numba.njit(signature, cache=True, nogil=True)(fn)

    return compile_now


@contextlib.contextmanager
def unwrapped_indices():
    """Within this block numba compiles ``a[i]`` for a signed integer ``i`` without the wraparound that Python's
    ``a[-1]`` needs: numba's ``fix_integer_index`` (numba.np.arrayobj) then only casts the index. The kernel never
    indexes with a negative integer, so its results are the same; each access saves a compare, an add and keeping
    the array's length at hand, which in the event loop's register pressure is a reload from the stack (measured on
    recorded paper steps: 1.26x to 1.35x faster at P = 128, 1024, 8192). Both the just-in-time entry points and
    rlsim/engine/kernel_build.py's ahead-of-time build compile within it. Should numba's internals move, compiles keep
    the wraparound: same results, slower."""
    try:
        from numba.core import types
        from numba.np import arrayobj
    except ImportError:  # pragma: no cover - numba moved its internals
        yield
        return
    wrapping = getattr(arrayobj, "fix_integer_index", None)
    if wrapping is None:  # pragma: no cover
        yield
        return

    def as_is(context, builder, idxty, idx, size):
        if isinstance(idxty, types.Integer) and idxty.signed:
            return context.cast(builder, idx, idxty, types.intp)
        return wrapping(context, builder, idxty, idx, size)

    arrayobj.fix_integer_index = as_is
    try:
        yield
    finally:
        arrayobj.fix_integer_index = wrapping


@_inlined
def _linear_sum(a: float, s: float, lo: int, hi: int) -> float:
    """sum_{i=lo}^{hi-1} (a + s*i)."""
    if hi <= lo:
        return 0.0
    count = hi - lo
    return a * count + s * (lo + hi - 1) * count / 2.0


@_inlined
def _segment_s(a1: float, s1: float, a2: float, s2: float, n: int) -> float:
    """sum_{i=0}^{n-1} max(a1 + s1*i, a2 + s2*i), exactly split at the crossing."""
    if s1 == s2:
        return _linear_sum(max(a1, a2), s1, 0, n)
    # f(i) = a1 + s1 i >= g(i) = a2 + s2 i  <=>  (s1 - s2) i >= a2 - a1
    # clamp in floating point before the integer cast: nearly parallel lines put the crossing far away. A line
    # above the other at i = 0 with the steeper slope is above it throughout: there the crossing is negative (at
    # or before -1 in the second case, so that the quotient cannot round to -0.0) and i0 is 0 without the division
    if s1 > s2:  # f wins for i >= cross
        i0 = 0
        if not a1 > a2:
            cross = min(max((a2 - a1) / (s1 - s2), -1.0), float(n))
            i0 = int(np.ceil(cross)) if cross > 0 else 0
            if i0 > n:
                i0 = n
        return _linear_sum(a2, s2, 0, i0) + _linear_sum(a1, s1, i0, n)
    # s1 < s2: f wins for i <= cross
    i0 = 0
    if not a2 - a1 >= s2 - s1:
        cross = min(max((a2 - a1) / (s1 - s2), -1.0), float(n))
        i0 = int(np.floor(cross)) + 1 if cross >= 0 else 0
        if i0 > n:
            i0 = n
    return _linear_sum(a1, s1, 0, i0) + _linear_sum(a2, s2, i0, n)


@_inlined
def _segment_floor_s(a1: float, s1: float, a2: float, s2: float, c: float, n: int) -> float:
    """sum_{i=0}^{n-1} max(a1 + s1*i, a2 + s2*i, c) for slopes s1, s2 >= 0: the constant c rules up to the first
    i where either line reaches it, the two lines after."""
    if n <= 0:
        return 0.0
    if a1 >= c or a2 >= c:  # a line rules from i = 0
        return _segment_s(a1, s1, a2, s2, n)
    first = n
    for a, sl in ((a1, s1), (a2, s2)):
        if sl > 0:
            kf = np.ceil((c - a) / sl)  # clamp in floating point: a tiny slope puts the crossing far away
            if kf < first:
                first = int(kf)
    if first > n:
        first = n
    if first <= 0:
        return _segment_s(a1, s1, a2, s2, n)
    return c * first + _segment_s(a1 + s1 * first, s1, a2 + s2 * first, s2, n - first)


NONE = 1 << 62  # the finish iteration of no decoder


def _lowest_bit_table():
    """Position of the lowest set bit of a 64-bit word from its isolated bit (x & -x) times a de Bruijn constant:
    the product's top six bits differ for the 64 positions."""
    table = np.zeros(64, dtype=np.int64)
    for i in range(64):
        table[((DEBRUIJN << i) & (2**64 - 1)) >> 58] = i
    assert sorted(table.tolist()) == list(range(64))
    return table


DEBRUIJN = 0x022FDD63CC95386D  # a de Bruijn sequence B(2, 6)
LOWEST_BIT = _lowest_bit_table()


@_inlined
def _lowest_bit(word):
    """Position (0..63) of the lowest set bit of a nonzero int64 word."""
    return LOWEST_BIT[((word & -word) * DEBRUIJN >> 58) & 63]


# The decoders' finish iterations are a calendar: bucket k & (R - 1) of ``head`` (R, a power of two, above every
# response length, so that the keys under way, all within [cur_iter, cur_iter + longest response], have buckets of
# their own) lists the decoders that finish in iteration k, linked through nxt / prv; bit k & (R - 1) of ``bits`` says
# the bucket is not empty. ``head`` holds int32 request indices (a replica of 2**31 requests would need a workspace of
# hundreds of GB): half the cache lines of int64 where the filings land all over it (recorded paper steps, five
# comparisons: 0.98x-1.07x at P = 8192, median 1.05x; 1.02x at P = 1024). Filing, removing (a preemption) and the
# finishes of an iteration are O(1); the next finish is the first set bit from the current iteration on. Which
# decoders finish in an iteration does not depend on the order they are listed in, nor does the order they leave in
# change any result.


@_inlined
def _cal_add(head, bits, nxt, prv, j, k):
    """File decoder j under its finish iteration k."""
    i = k & (head.shape[0] - 1)
    first = head[i]
    nxt[j] = first
    prv[j] = -1
    if first >= 0:
        prv[first] = j
    else:
        bits[i >> 6] |= 1 << (i & 63)
    head[i] = j


@_inlined
def _cal_remove(head, bits, nxt, prv, j, k):
    """Take decoder j, filed under iteration k, out of the calendar."""
    before = prv[j]
    after = nxt[j]
    if after >= 0:
        prv[after] = before
    if before >= 0:
        nxt[before] = after
    else:
        i = k & (head.shape[0] - 1)
        head[i] = after
        if after < 0:
            bits[i >> 6] &= ~(1 << (i & 63))


@_inlined
def _first_finish(head, bits, b, it):
    """The iteration in which the next of the b decoders finishes (NONE: no decoder), from iteration ``it`` on."""
    if b == 0:
        return NONE
    mask = head.shape[0] - 1
    i = it & mask
    w = i >> 6
    word = bits[w] & (-1 << (i & 63))  # the buckets from it's on
    while word == 0:  # a decoder is filed: the walk ends, after wrapping around at most once
        w = w + 1 if w + 1 < bits.shape[0] else 0
        word = bits[w]
    return it + ((((w << 6) + _lowest_bit(word)) - i) & mask)


@_inlined
def _stack_add(stack, length, j, running_flag, fkey):
    """Push j (admitted, not yet decoding) on the admission-order stack; when the stack is full, first drop the
    requests no longer running. Returns the stack's length."""
    if length == stack.shape[0]:  # rare
        new_len = 0
        for q in range(length):
            if running_flag[stack[q]]:
                stack[new_len] = stack[q]
                new_len += 1
        length = new_len
    stack[length] = j
    fkey[j] = NONE
    return length + 1


@_inlined
def _decoding(j, k, fkey, head, bits, nxt, prv):
    """Admitted request j starts decoding, to finish in iteration k."""
    fkey[j] = k
    _cal_add(head, bits, nxt, prv, j, k)


@_inlined
def _start_decoding(
    j, c, it, response, generated, slot, cnt, admit_iter, gen_at_admit, ctx_at, fkey, head, bits, nxt, prv, bs, sh,
):  # fmt: skip
    """Request j, with context c, decodes from iteration ``it`` on: in the block-phase histogram and the calendar.
    Returns the iteration it finishes in."""
    slot[j] = _bmod(c - it, bs, sh)
    cnt[slot[j]] += 1
    admit_iter[j] = it
    gen_at_admit[j] = generated[j]
    ctx_at[j] = c
    k = it + response[j] - generated[j]
    _decoding(j, k, fkey, head, bits, nxt, prv)
    return k


@_inlined
def _bdiv(x, bs, sh):
    """floor(x / bs): a shift when the block size is a power of two (sh = log2(bs) >= 0), as Python's // for any x."""
    return x >> sh if sh >= 0 else x // bs


@_inlined
def _bmod(x, bs, sh):
    """x mod bs in 0..bs-1 (Python's %): a mask when the block size is a power of two."""
    return x & (bs - 1) if sh >= 0 else x % bs


@_inlined
def _bceil(x, bs, sh):
    """ceil(x / bs) for x >= 0: the blocks x tokens take."""
    return _bdiv(x + bs - 1, bs, sh)


@_inlined
def _phase(it, bs, sh):
    """Histogram slot of the decoders that need a new KV block in iteration ``it`` (see _replica): -it mod bs."""
    return _bmod(-it, bs, sh)


@_inlined
def _prev_phase(p, bs):
    """The slot of the next iteration: the phase goes down by one each iteration, modulo bs."""
    return p - 1 if p > 0 else bs - 1


@_inlined
def _cum_blocks(cnt, bs, sh, it0, b, n):
    """Blocks ``b`` decoders allocate over iterations it0 .. it0+n-1: each takes one every ``bs`` iterations, in
    the iteration where its context reaches a block boundary (``cnt`` counts decoders per phase)."""
    if bs == 1:
        return b * n
    q = _bdiv(n, bs, sh)
    total = q * b
    p = _phase(it0, bs, sh)  # the phase of it0 + q bs
    for _ in range(n - q * bs):
        total += cnt[p]
        p = _prev_phase(p, bs)
    return total


@_inlined
def _run_cap(cnt, bs, sh, it0, b, free, limit):
    """The largest n <= limit with _cum_blocks(cnt, bs, sh, it0, b, n) <= free (b > 0, free >= 0), and the blocks
    those n iterations take."""
    if bs == 1:
        n = free // b
        n = n if n < limit else limit
        return n, b * n
    q = free // b if free >= b else 0  # (no division in the thrash, where fewer blocks are free than decoders)
    n = q * bs  # q whole cycles take q * b <= free blocks
    if n >= limit:
        return limit, _cum_blocks(cnt, bs, sh, it0, b, limit)
    rem = free - q * b  # < b: the walk below stops within one cycle
    p = _phase(it0, bs, sh)  # the phase of it0 + q bs
    while n < limit:
        need = cnt[p]
        if need > rem:
            break
        rem -= need
        n += 1
        p = _prev_phase(p, bs)
    return n, free - rem


@_inlined
def _context(j, prompt, generated, group, grp_tok):
    """Request j's context (prompt + generated), its prompt group (-1: none) and the tokens of its prompt that
    the group has cached (0: none)."""
    g = group[j]
    return prompt[j] + generated[j], g, (grp_tok[g] if g >= 0 else 0)


@_inlined
def _requeue_front(queue, q_head, j):
    """Put a preempted request back at the front of the circular waiting queue; returns the new head."""
    q_head = q_head - 1 if q_head > 0 else queue.shape[0] - 1
    queue[q_head] = j
    return q_head


@_inlined
def _publish(j, g, prompt_j, bs, sh, shared, grp_tok, grp_ref, rq):
    """j has its prompt scheduled: its full prompt blocks up to the last prompt token (which vLLM always
    recomputes) become the group's, referenced by j. For the first of group g (j references none of it) they are
    the group's cached prompt (its released copy, if any, forgotten); for a j that found only part of it cached
    (taken back from the free queue) and computed the rest, the group's cached prompt is its full blocks again."""
    hg = _bdiv(prompt_j - 1, bs, sh) * bs
    if shared[j] == 0:
        if hg > 0:
            grp_tok[g] = hg
            grp_ref[g] = 1
            shared[j] = hg
            rq[4, g] = 0
    elif hg > grp_tok[g]:
        grp_tok[g] = hg
        shared[j] = hg


@_inlined
def _hold_group_prompt(j, g, held, prompt_j, bs, sh, shared, grp_tok, grp_ref, rq):
    """Admitted request j references its group's cached prompt, ``held`` tokens of it; with none held (and a
    group), its own full prompt blocks become the group's (:func:`_publish`)."""
    if held > 0:
        grp_ref[g] += 1
        shared[j] = held
    elif g >= 0:
        _publish(j, g, prompt_j, bs, sh, shared, grp_tok, grp_ref, rq)


@_inlined
def _release(j, tokens, bs, sh, shared, group, grp_tok, grp_ref, preempted, rq):
    """Blocks freed when request ``j`` holding ``tokens`` KV tokens leaves the running set: its own blocks, and its
    group's shared prompt blocks when it was their last holder. They join the free queue's tail (``rq``: see
    :func:`_lookup`), j's own first (its last block first, as vLLM frees a block table reversed), so that where
    its full blocks and the group's prompt end is known: a preempted request's and a released group's."""
    s = shared[j]
    sb = _bdiv(s, bs, sh)
    freed = _bceil(tokens, bs, sh) - sb
    rq[5, 0] += freed
    if preempted:
        rq[0, j] = rq[5, 0]
        rq[1, j] = _bdiv(tokens, bs, sh) - sb
        rq[2, j] = sb
    if s > 0:
        g = group[j]
        grp_ref[g] -= 1
        if grp_ref[g] == 0:
            gb = _bdiv(grp_tok[g], bs, sh)
            freed += gb
            rq[5, 0] += gb
            rq[3, g] = rq[5, 0]
            rq[4, g] = gb
            grp_tok[g] = 0
        shared[j] = 0
    return freed


@_inlined
def _survivors(end, k, head):
    """Of k blocks that joined the free queue up to position ``end``, those its head has not reached."""
    left = end - head
    return 0 if left < 0 else (k if left > k else left)


@_inlined
def _lookup(j, c, g, reuse, bs, sh, cap, used, grp_tok, was_preempted, rq):
    """Request j's cached prefix at admission, with ``used`` blocks held once the step's decoders have theirs:
    (hit tokens, of which held by running requests, of which its group's prompt). The group's prompt while held;
    with ``reuse`` (freed blocks stay cached, vLLM V1) else what the free queue still holds of it, and for a
    preempted j then what it still holds of j's own blocks; at most c - 1 tokens (vLLM recomputes the last).

    The free queue in positions (``rq[5, 0]``: positions ever appended, the empty cache's ``cap`` first): the
    free blocks are the last ``cap - used`` appended, so its head is at ``rq[5, 0] - (cap - used)``. Blocks hit
    again leave vLLM's queue from the middle; counting them as gone from the head evicts a little early: against
    vLLM 0.32 (scripts/vllm_thrash.py) the recomputed tokens come out 2.7-4.1% high, steps and preemptions exact.
    ``rq`` rows: a preempted request's end position, full own blocks and shared blocks; a released group's end
    position and prompt blocks (0: held, or never released). The hit is a prefix: the group's blocks, then those of
    j's own that follow them (a group prompt grown past what j shared, after j's own were evicted, still hits)."""
    held = grp_tok[g] if g >= 0 else 0
    if not reuse:
        return held, held, held
    gb = _bdiv(held, bs, sh)
    hb = gb
    pos = rq[5, 0] - (cap - used)
    if held == 0 and g >= 0 and rq[4, g] > 0:
        gb = _survivors(rq[3, g], rq[4, g], pos)
    total = gb
    if was_preempted[j] and gb >= rq[2, j]:  # its own blocks follow the group's from its shared ones on
        own = rq[2, j] + _survivors(rq[0, j], rq[1, j], pos)
        total = own if own > gb else gb
    most = _bdiv(c - 1, bs, sh) if c > 0 else 0
    total = total if total < most else most
    return total * bs, (hb if hb < total else total) * bs, (gb if gb < total else total) * bs


@_inlined
def _pop_latest(stack, length, running_flag):
    """The latest admitted request still running, taken off the admission-order stack (the finished and preempted
    ones above it dropped): it and the stack's new length."""
    while not running_flag[stack[length - 1]]:
        length -= 1
    return stack[length - 1], length - 1


@_inlined
def _preempt_decoder(
    j, it, admit_iter, gen_at_admit, generated, ctx_at, bs, sh, shared, group, grp_tok, grp_ref, cnt, slot, fkey,
    head, bits, nxt, prv, running_flag, was_preempted, queue, q_head, rq,
):  # fmt: skip
    """Decoder j, just taken off the stack, preempted before iteration ``it``: its tokens so far kept, its blocks
    freed, out of the calendar and back at the front of the waiting queue. Returns the blocks freed, its KV tokens
    and the queue's head."""
    steps_done = it - admit_iter[j]
    generated[j] = gen_at_admit[j] + steps_done
    kv = ctx_at[j] + steps_done
    freed = _release(j, kv, bs, sh, shared, group, grp_tok, grp_ref, True, rq)
    cnt[slot[j]] -= 1
    _cal_remove(head, bits, nxt, prv, j, fkey[j])
    fkey[j] = NONE
    running_flag[j] = False
    was_preempted[j] = True
    return freed, kv, _requeue_front(queue, q_head, j)


@_inlined
def _iteration_s(b, kv_tok, mem_a, mem_s, cmp_a, cmp_s, floor, over):
    """One decode iteration of b decoders holding kv_tok KV tokens: the max of its memory, compute and floor
    terms, plus the per-iteration overhead."""
    return max(mem_a[b] + mem_s * kv_tok, cmp_a[b] + cmp_s * kv_tok, floor[b]) + over[b]


@_inlined
def _make_room(
    cap, used, kv_tok, stack, stack_len, it, admit_iter, gen_at_admit, generated, ctx_at, bs, sh, shared, group,
    grp_tok, grp_ref, cnt, slot, fkey, head, bits, nxt, prv, running_flag, was_preempted, queue, q_head, rq,
):  # fmt: skip
    """Preempt decoders, latest admitted first, until the new blocks of iteration ``it`` fit in the cache (or no
    decoder is left). Returns the decoders preempted and the state they change: used, kv_tok, stack_len, q_head."""
    ph = _phase(it, bs, sh)
    count = 0
    while used + cnt[ph] > cap:
        j, stack_len = _pop_latest(stack, stack_len, running_flag)
        freed, kv, q_head = _preempt_decoder(
            j, it, admit_iter, gen_at_admit, generated, ctx_at, bs, sh, shared, group, grp_tok, grp_ref, cnt, slot,
            fkey, head, bits, nxt, prv, running_flag, was_preempted, queue, q_head, rq,
        )  # fmt: skip
        used -= freed
        kv_tok -= kv
        count += 1
    return count, used, kv_tok, stack_len, q_head


@_inlined
def _decode_run(cnt, bs, sh, it, b, free, limit, kv_tok, mem_a, mem_s, cmp_a, cmp_s, floor, over):
    """b decoders holding kv_tok KV tokens decode from iteration ``it`` on, as many iterations as their new blocks
    fit in ``free``, at most ``limit``: their count, the blocks they take and their time (one iteration's is
    exactly the max of its three terms)."""
    steps, taken = _run_cap(cnt, bs, sh, it, b, free, limit)
    if steps == 1:
        dt = _iteration_s(b, kv_tok, mem_a, mem_s, cmp_a, cmp_s, floor, over)
    else:
        a_mem = mem_a[b] + mem_s * kv_tok
        a_cmp = cmp_a[b] + cmp_s * kv_tok
        dt = _segment_floor_s(a_mem, mem_s * b, a_cmp, cmp_s * b, floor[b], steps) + over[b] * steps
    return steps, taken, dt


RESERVE_ITERATIONS = 16  # the fast thrash model's least margin to join the core, in iterations of growth


@_inlined
def _reserve(bs, sh, b, first, adm, c, left):
    """The fast thrash model's admission margin (see :func:`_host_tail`): the blocks the running requests take
    over the next RESERVE_ITERATIONS iterations (or up to the first finish, ``first`` iterations away, if later),
    with no finish counted: the ``b`` decoders, the ``adm`` requests admitted earlier in this step, and a request
    admitted now with context ``c`` and ``left`` tokens to generate. The younger requests a thrash would admit and
    preempt again within that time stay in the hosted tail instead. With no decoder (b = 0, no finish ahead) the
    margin is RESERVE_ITERATIONS' growth of those admitted. (Used where the fast model admits by a step's own
    admission round: with no decoder running, or a prefill under way; otherwise the decode loop moves the hosted
    front into the core, with the same margin counted by block phase.)"""
    h = first if b > 0 and first > RESERVE_ITERATIONS else RESERVE_ITERATIONS
    m = h if h < left else left
    return _bceil(b * h, bs, sh) + adm * (_bdiv(h, bs, sh) + 1) + _bceil(c + m, bs, sh) - _bceil(c, bs, sh)


@_inlined
def _drop_hosted(j, was_preempted, rq, keep, until):
    """Request j, hosted in the fast thrash model's tail, is preempted: when readmitted it recomputes its context
    beyond what its group has cached then (its own blocks counted as evicted: NONE makes :func:`_lookup` look
    at the group's prompt only), but for ``keep`` blocks of its own still free at the run's end, which a hosting
    anew in the next run (stamp ``until``) finds cached."""
    was_preempted[j] = True
    rq[2, j] = NONE
    rq[1, j] = keep
    rq[0, j] = until


@_inlined
def _host_tail(
    queue, q_head, q_len, room, l0, l1, steps, n_hosted, prompt, response, generated, group, grp_tok, hosted,
    was_preempted, tmark, stamp, bs, sh, rq,
):  # fmt: skip
    """The fast thrash model's younger tail over a run of ``steps`` decode iterations in which the running
    requests (the *core*) take ``l0 - l1`` of the ``l0`` blocks they leave free (``engine.thrash_model: fast``).

    Exact vLLM readmits the waiting queue's front into blocks a finish freed and preempts it again, newest
    first, as the running requests grow into them: one event each. Here the front of the queue is *hosted* in
    the free blocks instead, in order, without entering the running set: request i of the front, whose blocks
    with those before it come to ``cum``, decodes while the free blocks (falling linearly from l0 to l1 over the
    run) cover ``cum``, so ``steps`` iterations when cum <= l1, ``steps (l0 - cum) / (l0 - l1)`` when it is
    dropped part way (one preemption), none when cum > l0. A group's prompt that no running request holds counts
    in ``cum`` once, for the first member hosted in the run (``tmark[g] == stamp``, the run's iteration): the
    members after it hold only their own blocks, as in the running set. A request hosted at the end of a run
    stays hosted (no recompute) into the next; one hosted anew recomputes its context beyond its group's held
    prompt and, if it was dropped in the run just before (``rq[0, j] == stamp``), beyond the blocks of its own
    that were still free at that run's end (the free blocks beyond those hosted before it): vLLM's prefix cache
    gives a preempted request back what no other request has taken yet. At most ``room`` are hosted, and a hosted
    request stops one token short of its end: it joins the core to finish. Returns the hosted tokens decoded,
    their KV tokens summed over the iterations, the count hosted at the run's start, the preemptions, the
    (re)admitted prefill tokens and their squares' sum (for the prefill cost law), the recomputed tokens and the
    count still hosted."""
    n = queue.shape[0]
    cum = 0
    hosts = 0
    seen = 0
    dec = 0
    kvs = 0.0
    drops = 0
    tok = 0
    sq = 0.0
    rec = 0
    kept = 0
    p = q_head
    for _ in range(q_len):
        j = queue[p]
        was = hosted[j]
        if was:
            seen += 1
        elif seen >= n_hosted and (cum > l0 or hosts >= room):
            break  # no later request is hosted, and every one hosted before is seen
        c = prompt[j] + generated[j]
        g = group[j]
        held = grp_tok[g] if g >= 0 else 0
        if held == 0 and g >= 0 and tmark[g] == stamp:
            held = _bdiv(prompt[j] - 1, bs, sh) * bs  # its group's prompt, held by a member hosted before it
        own = _bceil(c, bs, sh) - _bdiv(held, bs, sh)
        cum += own
        free = l1 - (cum - own)  # blocks free at the run's end beside those hosted before j
        if cum <= l0 and hosts < room:
            hosts += 1
            if g >= 0:
                tmark[g] = stamp
            d = steps
            if cum > l1:
                d = (steps * (l0 - cum)) // (l0 - l1)
            most = response[j] - 1 - generated[j]
            d = d if d < most else most
            if not was:
                base = held
                if was_preempted[j] and rq[2, j] == NONE and rq[0, j] == stamp:  # (rq is not reset per replica)
                    base += rq[1, j] * bs
                    base = base if base < c - 1 else c - 1
                tok += c - base
                sq += float(c) * float(c) - float(base) * float(base)
                if was_preempted[j] or generated[j] > 0:
                    rec += c - base
            dec += d
            kvs += float(d) * float(c) + float(d) * float(d - 1) / 2.0
            generated[j] += d
            if cum <= l1:
                hosted[j] = True
                kept += 1
            else:
                hosted[j] = False
                keep = _bdiv(c + d, bs, sh) - _bdiv(held, bs, sh)
                keep = keep if keep < free else (free if free > 0 else 0)
                _drop_hosted(j, was_preempted, rq, keep, stamp + steps)
                drops += 1
        elif was:
            hosted[j] = False
            keep = _bdiv(c, bs, sh) - _bdiv(held, bs, sh)
            keep = keep if keep < free else (free if free > 0 else 0)
            _drop_hosted(j, was_preempted, rq, keep, stamp + steps)
            drops += 1
        p = p + 1 if p + 1 < n else 0
    return dec, kvs, hosts, drops, tok, sq, rec, kept


@_inlined
def _finish_due(
    it, t, head, bits, nxt, running_flag, fkey, ctx_at, admit_iter, generated, response, bs, sh, shared, group,
    grp_tok, grp_ref, cnt, slot, finish_s, rq,
):  # fmt: skip
    """The decoders that generated their last token in iteration ``it`` (just run, ending at t) leave: the whole
    bucket of ``it``, all of whose decoders finish then. Returns the blocks, KV tokens and decoders that left."""
    freed = 0
    kv_out = 0
    left = 0
    i = it & (head.shape[0] - 1)
    j = head[i]
    if j >= 0:
        head[i] = -1
        bits[i >> 6] &= ~(1 << (i & 63))
    while j >= 0:
        kv = ctx_at[j] + (it - admit_iter[j])
        generated[j] = response[j]
        freed += _release(j, kv, bs, sh, shared, group, grp_tok, grp_ref, False, rq)
        kv_out += kv
        cnt[slot[j]] -= 1
        fkey[j] = NONE
        running_flag[j] = False
        left += 1
        finish_s[j] = t
        j = nxt[j]
    return freed, kv_out, left


WORK_ROWS = 22  # int64 rows of a replica's workspace (see _replica)
RQ_ROW = 15  # its first of the six rows of the free queue's positions (rq, see _lookup)


@_inlined
def _workspace(n, bs, longest):
    """The scratch arrays of a replica of up to ``n`` requests with blocks of ``bs`` tokens and responses of up to
    ``longest`` tokens (reused replica after replica): int64 rows, bool rows, the block-phase histogram, and the
    calendar (see _cal_add: R > longest int32 buckets, R / 64 words of bits), empty: every replica that runs to
    its end leaves it empty again."""
    r = 64
    while r <= longest:
        r *= 2
    head = np.empty(r, dtype=np.int32)
    for i in range(r):
        head[i] = -1
    bits = np.zeros(r // 64, dtype=np.int64)
    return (
        np.empty((WORK_ROWS, 2 * n + 2), dtype=np.int64),
        np.empty((3, n + 1), dtype=np.bool_),
        np.empty(max(bs, 1), dtype=np.int64),
        head,
        bits,
    )


@numba.njit(cache=True, _nrt=False)
def _replica(
    iw,
    bw,
    cnt,
    head,
    bits,
    prompt,
    response,
    group,
    n_groups,
    max_num_seqs,
    cap,
    bs,
    chunked,
    budget,
    wm,
    reuse,
    fast,
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
    """Event-driven kernel of the rules in the module docstring (``cap`` in blocks of ``bs`` tokens) on the scratch
    arrays of :func:`_workspace` (sized for at least these requests, its calendar empty); fills finish_s and stats,
    returns 0 (the calendar empty again) or -1 - j if request j can never be admitted. Compiled without numba's
    reference counting (``_nrt=False``): it allocates nothing, and the helpers inlined into it take its arrays at no
    cost."""
    n = prompt.shape[0]
    generated = iw[0, :n]
    admit_iter = iw[1, :n]  # iteration a decoder started decoding
    gen_at_admit = iw[2, :n]  # its generated count then
    ctx_at = iw[3, :n]  # its KV tokens then
    computed = iw[4, :n]  # KV tokens of a request being prefilled (chunked)
    shared = iw[5, :n]  # tokens of its group's cached prompt it references
    running_flag = bw[0, :n]  # decoding or being prefilled
    was_preempted = bw[1, :n]
    hosted = bw[2, :n]  # hosted by the fast thrash model's tail at the end of the last run (see _host_tail)
    done = iw[6, :n]  # requests whose prefill completes in this step (chunked)
    grp_tok = iw[7, : max(n_groups, 1)]  # cached shared-prompt tokens per group (0: none)
    grp_ref = iw[8, : max(n_groups, 1)]  # running requests referencing them
    tmark = iw[21, : max(n_groups, 1)]  # the run in which a member was last hosted in the fast model's tail
    cnt = cnt[:bs]  # decoders per block phase: slot (kv - iteration) mod bs
    slot = iw[9, :n]  # a decoder's slot in cnt
    for j in range(n):
        generated[j] = 0
        shared[j] = 0
        running_flag[j] = False
        was_preempted[j] = False
        hosted[j] = False
    n_hosted = 0
    for g in range(grp_tok.shape[0]):
        grp_tok[g] = 0
        grp_ref[g] = 0
        tmark[g] = -1
    for x in range(bs):
        cnt[x] = 0
    sh = -1  # log2(bs) when bs is a power of two (block arithmetic by shifts and masks), else -1
    if bs & (bs - 1) == 0:
        sh = 0
        while (1 << sh) < bs:
            sh += 1
    queue = iw[10, :n]  # waiting queue: circular buffer, preempted requests re-enter at the front
    for j in range(n):
        queue[j] = j
    q_head = 0
    q_len = n
    stack = iw[11, : 2 * n + 2]  # running requests in admission order (lazy removal)
    stack_len = 0
    # the decoders' finish iterations: the calendar (head, bits; see _cal_add)
    nxt = iw[12, :n]
    prv = iw[13, :n]
    fkey = iw[14, :n]  # a decoder's finish iteration (NONE: not decoding)
    rq = iw[RQ_ROW : RQ_ROW + 6, :]  # the free queue's positions (see _lookup)
    rq[5, 0] = cap
    for g in range(max(n_groups, 1)):
        rq[4, g] = 0

    t = 0.0
    decode_total = 0.0
    prefill_total = 0.0
    cur_iter = 0
    n_iter = 0
    used = 0  # KV blocks held
    kv_tok = 0  # KV tokens of the decoders (what a decode iteration reads)
    b = 0  # decoders
    running = 0  # decoders + the request being prefilled
    pre = -1  # the request whose prefill is under way (chunked; at most one, the last admitted)
    n_preempt = 0
    peak_blocks = 0
    peak_b = 0
    recomputed = 0
    decoded = 0
    prefilled = 0
    cache_hit = 0

    budget_stop = False
    while True:
        if running == 0 and q_len == 0:
            break
        ph = _phase(cur_iter, bs, sh)
        explicit = True
        if not chunked:
            # ---- legacy round 1: admission, then one prefill for everything admitted
            adm_tok = 0.0
            adm_sq = 0.0
            adm_count = 0
            budget_stop = False
            while q_len > 0 and b < max_num_seqs:
                j = queue[q_head]
                c, g, hit = _context(j, prompt, generated, group, grp_tok)
                own = _bceil(c, bs, sh) - _bdiv(hit, bs, sh)
                grow = cnt[ph] + (1 if _bmod(c, bs, sh) == 0 else 0)
                if used + own + grow + wm > cap:  # (wm: the blocks admission leaves free, vLLM V0's watermark)
                    break
                if adm_count > 0 and adm_tok + (c - hit) > budget:
                    budget_stop = True  # the next round may admit it: run one iteration only
                    break
                q_head = q_head + 1 if q_head + 1 < n else 0
                q_len -= 1
                used += own
                _hold_group_prompt(j, g, hit, prompt[j], bs, sh, shared, grp_tok, grp_ref, rq)
                cache_hit += hit
                if was_preempted[j]:
                    recomputed += c - hit
                    was_preempted[j] = False
                adm_tok += c - hit
                adm_sq += float(c) * float(c) - float(hit) * float(hit)
                adm_count += 1
                # it decodes from this round's iteration on
                b += 1
                running += 1
                kv_tok += c
                slot[j] = _bmod(c - cur_iter, bs, sh)
                cnt[slot[j]] += 1
                running_flag[j] = True
                admit_iter[j] = cur_iter
                gen_at_admit[j] = generated[j]
                ctx_at[j] = c
                stack_len = _stack_add(stack, stack_len, j, running_flag, fkey)
                _decoding(j, cur_iter + response[j] - generated[j], fkey, head, bits, nxt, prv)
            if adm_count > 0:
                dt = pf_over + pf_tok * adm_tok + pf_sq * adm_sq
                t += dt
                prefill_total += dt
                prefilled += int(adm_tok)
            if used > peak_blocks:
                peak_blocks = used
            if b > peak_b:
                peak_b = b
            if b == 0:
                if q_len > 0:
                    return -1 - queue[q_head]
                break
            # ---- legacy round 2: preemption, latest admitted first, while the next iteration does not fit
            gone, used, kv_tok, stack_len, q_head = _make_room(
                cap, used, kv_tok, stack, stack_len, cur_iter, admit_iter, gen_at_admit, generated, ctx_at, bs, sh,
                shared, group, grp_tok, grp_ref, cnt, slot, fkey, head, bits, nxt, prv, running_flag, was_preempted,
                queue, q_head, rq,
            )  # fmt: skip
            b -= gone
            running -= gone
            q_len += gone
            n_preempt += gone
            if b == 0:
                continue
            explicit = False
        elif pre < 0 and b > 0:
            # ---- chunked, no prefill under way: decode iterations and the preemptions that make room for their
            # new blocks (latest admitted first; no admission in a step that preempted), up to the first iteration
            # that can admit the front request or until no decoder is left: the steps the general branch below
            # takes there, without its prefill bookkeeping (a KV thrash spends most of its iterations here)
            admit = False
            first = _first_finish(head, bits, b, cur_iter)  # changes in this loop only when decoders are preempted
            thrash = fast and n_preempt > 0  # the fast thrash model, once the cache has run out (see _host_tail)
            while True:
                ph = _phase(cur_iter, bs, sh)
                if thrash:
                    # the fast model keeps the running set (its core) to what fits up to its first finish, so that
                    # a run goes from one finish to the next: the latest admitted go to the front of the hosted
                    # tail (still decoding there, see _host_tail; no preemption) while the core's blocks up to its
                    # first finish do not fit
                    while b > 1 and used + _cum_blocks(cnt, bs, sh, cur_iter, b, first - cur_iter) > cap:
                        j, stack_len = _pop_latest(stack, stack_len, running_flag)
                        k = fkey[j]
                        freed, kv, q_head = _preempt_decoder(
                            j, cur_iter, admit_iter, gen_at_admit, generated, ctx_at, bs, sh, shared, group, grp_tok,
                            grp_ref, cnt, slot, fkey, head, bits, nxt, prv, running_flag, was_preempted, queue, q_head,
                            rq,
                        )  # fmt: skip
                        hosted[j] = True
                        n_hosted += 1
                        used -= freed
                        kv_tok -= kv
                        b -= 1
                        running -= 1
                        q_len += 1
                        if k == first:
                            first = _first_finish(head, bits, b, cur_iter)
                    # the hosted front joins the core, with nothing to recompute, while the core's blocks with it
                    # fit up to its first finish (at least RESERVE_ITERATIONS away); the tail hosts the rest of the
                    # queue, the core admitting none of it directly
                    while q_len > 0 and running < max_num_seqs:
                        j = queue[q_head]
                        if not hosted[j]:
                            break
                        c = prompt[j] + generated[j]
                        g = group[j]
                        held = grp_tok[g] if g >= 0 else 0
                        own = _bceil(c, bs, sh) - _bdiv(held, bs, sh)
                        h = first - cur_iter
                        h = h if h > RESERVE_ITERATIONS else RESERVE_ITERATIONS
                        m = response[j] - generated[j]
                        m = h if h < m else m
                        grow = _cum_blocks(cnt, bs, sh, cur_iter, b, h) + _bceil(c + m, bs, sh) - _bceil(c, bs, sh)
                        if used + own + grow + wm > cap:
                            break
                        hosted[j] = False
                        n_hosted -= 1
                        was_preempted[j] = False
                        q_head = q_head + 1 if q_head + 1 < n else 0
                        q_len -= 1
                        used += own
                        _hold_group_prompt(j, g, held, prompt[j], bs, sh, shared, grp_tok, grp_ref, rq)
                        running += 1
                        b += 1
                        running_flag[j] = True
                        stack_len = _stack_add(stack, stack_len, j, running_flag, fkey)
                        kv_tok += c
                        k = _start_decoding(
                            j, c, cur_iter, response, generated, slot, cnt, admit_iter, gen_at_admit, ctx_at, fkey,
                            head, bits, nxt, prv, bs, sh,
                        )  # fmt: skip
                        if k < first:
                            first = k
                    if running > peak_b:
                        peak_b = running
                if used + cnt[ph] > cap:
                    gone, used, kv_tok, stack_len, q_head = _make_room(
                        cap, used, kv_tok, stack, stack_len, cur_iter, admit_iter, gen_at_admit, generated, ctx_at,
                        bs, sh, shared, group, grp_tok, grp_ref, cnt, slot, fkey, head, bits, nxt, prv, running_flag,
                        was_preempted, queue, q_head, rq,
                    )  # fmt: skip
                    b -= gone
                    running -= gone
                    q_len += gone
                    n_preempt += gone
                    if b == 0:
                        break
                    used += cnt[ph]
                    steps = 1
                    dt = _iteration_s(b, kv_tok, mem_a, mem_s, cmp_a, cmp_s, floor, over)
                    first = _first_finish(head, bits, b, first)  # (no decoder finishes before the old first)
                else:
                    if q_len > 0 and running < max_num_seqs and not thrash:
                        j = queue[q_head]
                        c = prompt[j] + generated[j]
                        hit, held, gpart = _lookup(
                            j, c, group[j], reuse, bs, sh, cap, used + cnt[ph], grp_tok, was_preempted, rq
                        )
                        chunk = min(c - hit, budget - b)
                        if cap - used - cnt[ph] - wm >= _bceil(hit + chunk, bs, sh) - _bdiv(held, bs, sh):
                            admit = True
                            break
                    steps, taken, dt = _decode_run(
                        cnt, bs, sh, cur_iter, b, cap - used, first - cur_iter, kv_tok, mem_a, mem_s, cmp_a, cmp_s,
                        floor, over,
                    )  # fmt: skip
                    if thrash and q_len > 0 and running < max_num_seqs:
                        dec, kvs, hosts, drops, tok, sq, rec, n_hosted = _host_tail(
                            queue, q_head, q_len, max_num_seqs - running, cap - used, cap - used - taken, steps,
                            n_hosted, prompt, response, generated, group, grp_tok, hosted, was_preempted, tmark,
                            n_iter, bs, sh, rq,
                        )  # fmt: skip
                        if hosts > 0:
                            # the run's time with the hosted decoders' mean count and KV added, the (re)admissions'
                            # prefill in its first iteration through the same cost law
                            bv = b + (dec + steps // 2) // steps
                            kv0 = kv_tok + kvs / steps
                            a_mem = mem_a[bv] + mem_s * kv0
                            a_cmp = cmp_a[bv] + cmp_s * kv0
                            dt = (
                                _segment_floor_s(a_mem, mem_s * b, a_cmp, cmp_s * b, floor[bv], steps)
                                + over[bv] * steps
                            )
                            if tok > 0:
                                room = budget - bv if budget > bv else 1
                                k = (tok + room - 1) // room
                                k = k if k < steps else steps
                                pf = max(a_mem, a_cmp + (pf_tok * tok + pf_sq * sq) / k, floor[bv]) + pf_over
                                pf = k * (pf - max(a_mem, a_cmp, floor[bv]))
                                t += pf
                                prefill_total += pf
                                prefilled += tok
                            decoded += dec
                            recomputed += rec
                            if running + hosts > peak_b:
                                peak_b = running + hosts
                        n_preempt += drops  # (those hosted before and dropped now count when none is hosted too)
                    used += taken
                t += dt
                decode_total += dt
                decoded += b * steps
                kv_tok += b * steps
                cur_iter += steps
                n_iter += steps
                if used > peak_blocks:
                    peak_blocks = used
                if first == cur_iter:
                    break  # a decoder finished: the finishes below, after the loop
            if not admit:
                if b == 0:
                    continue
                explicit = False
        if not explicit:
            if not chunked:
                # ---- legacy: decode iterations up to the next event: a finish, or the iteration whose blocks do
                # not fit
                limit = 1 if budget_stop else _first_finish(head, bits, b, cur_iter) - cur_iter
                steps, taken, dt = _decode_run(
                    cnt, bs, sh, cur_iter, b, cap - used, limit, kv_tok, mem_a, mem_s, cmp_a, cmp_s, floor, over
                )
                t += dt
                decode_total += dt
                decoded += b * steps
                used += taken
                kv_tok += b * steps
                cur_iter += steps
                n_iter += steps
        else:
            # ---- chunked: one step as vLLM V1 schedules it
            preempted = False
            # decoders first (running order); preempt from the end (the prefill under way first) until their
            # new blocks fit
            while used + cnt[ph] > cap:
                j, stack_len = _pop_latest(stack, stack_len, running_flag)
                if j == pre:
                    used -= _release(j, computed[j], bs, sh, shared, group, grp_tok, grp_ref, True, rq)
                    pre = -1
                    running_flag[j] = False
                    was_preempted[j] = True
                    q_head = _requeue_front(queue, q_head, j)
                else:
                    freed, kv, q_head = _preempt_decoder(
                        j, cur_iter, admit_iter, gen_at_admit, generated, ctx_at, bs, sh, shared, group, grp_tok,
                        grp_ref, cnt, slot, fkey, head, bits, nxt, prv, running_flag, was_preempted, queue, q_head, rq,
                    )  # fmt: skip
                    used -= freed
                    kv_tok -= kv
                    b -= 1
                running -= 1
                q_len += 1
                n_preempt += 1
                preempted = True
            used += cnt[ph]
            left = budget - b
            tok = 0.0
            sq = 0.0
            n_done = 0
            # the prefill under way takes the next chunk, or preempts itself when its blocks do not fit
            if pre >= 0:
                j = pre
                c = prompt[j] + generated[j]
                a = computed[j]
                chunk = min(c - a, left)
                need = _bceil(a + chunk, bs, sh) - _bceil(a, bs, sh)
                if cap - used < need:
                    stack_len -= 1  # it is the last admitted
                    used -= _release(j, a, bs, sh, shared, group, grp_tok, grp_ref, True, rq)
                    running_flag[j] = False
                    was_preempted[j] = True
                    running -= 1
                    pre = -1
                    q_head = _requeue_front(queue, q_head, j)
                    q_len += 1
                    n_preempt += 1
                    preempted = True
                else:
                    used += need
                    left -= chunk
                    tok += chunk
                    sq += float(a + chunk) * float(a + chunk) - float(a) * float(a)
                    computed[j] = a + chunk
                    if a + chunk == c:
                        done[n_done] = j
                        n_done += 1
                        pre = -1
            # then the waiting queue, front first, while tokens, sequences and blocks last (no admission in a
            # step that preempted)
            if not preempted:
                thrash = fast and n_preempt > 0
                first_g = _first_finish(head, bits, b, cur_iter) if thrash else NONE
                adm = 0
                while q_len > 0 and left > 0 and running < max_num_seqs:
                    j = queue[q_head]
                    c = prompt[j] + generated[j]
                    g = group[j]
                    hit, held, gpart = _lookup(j, c, g, reuse, bs, sh, cap, used, grp_tok, was_preempted, rq)
                    cached = hit  # what the prefix cache gives (a hosted request's own context is not a cache hit)
                    margin = 0
                    if thrash:
                        if hosted[j]:
                            hit = c - 1  # decoding in the tail until now: nothing to recompute
                        margin = _reserve(bs, sh, b, first_g - cur_iter - 1, adm, c, response[j] - generated[j])
                    chunk = min(c - hit, left)
                    # blocks hit again in the free queue leave it as new ones do: only those held are not needed
                    need = _bceil(hit + chunk, bs, sh) - _bdiv(held, bs, sh)
                    if cap - used - wm - margin < need:
                        break
                    adm += 1
                    if hosted[j]:
                        hosted[j] = False
                        n_hosted -= 1
                    q_head = q_head + 1 if q_head + 1 < n else 0
                    q_len -= 1
                    used += need
                    running += 1
                    running_flag[j] = True
                    if held > 0:
                        grp_ref[g] += 1
                        shared[j] = held
                    elif gpart > 0:  # the group's prompt, hit again in the free queue: held again, by j
                        grp_tok[g] = gpart
                        grp_ref[g] = 1
                        shared[j] = gpart
                        rq[4, g] = 0
                    cache_hit += cached
                    if was_preempted[j]:
                        recomputed += c - hit
                        was_preempted[j] = False
                    left -= chunk
                    tok += chunk
                    sq += float(hit + chunk) * float(hit + chunk) - float(hit) * float(hit)
                    computed[j] = hit + chunk
                    stack_len = _stack_add(stack, stack_len, j, running_flag, fkey)
                    if hit + chunk == c:
                        done[n_done] = j
                        n_done += 1
                        if g >= 0:  # its full prompt blocks are the group's cached prompt
                            _publish(j, g, prompt[j], bs, sh, shared, grp_tok, grp_ref, rq)
                    else:
                        pre = j
            # the iteration: decode of b sequences and the prefill chunks in one forward pass
            if b == 0 and n_done == 0 and pre < 0 and tok == 0.0:
                if running == 0 and q_len > 0 and not preempted:
                    return -1 - queue[q_head]
                continue
            if used > peak_blocks:
                peak_blocks = used
            if running > peak_b:
                peak_b = running
            if tok == 0.0 and b > 0:  # decode only: the prefill terms are exactly zero, the decode time is the step
                dt = _iteration_s(b, kv_tok, mem_a, mem_s, cmp_a, cmp_s, floor, over)
                t += dt
                decode_total += dt
            else:
                dec = 0.0
                if b > 0:
                    dec = _iteration_s(b, kv_tok, mem_a, mem_s, cmp_a, cmp_s, floor, over)
                dt = max(mem_a[b] + mem_s * kv_tok, cmp_a[b] + cmp_s * kv_tok + pf_tok * tok + pf_sq * sq, floor[b])
                dt += over[b]
                if tok > 0.0:
                    dt += pf_over
                t += dt
                decode_total += dec
                prefill_total += dt - dec
            prefilled += int(tok)
            decoded += b
            kv_tok += b
            cur_iter += 1
            n_iter += 1
            # prefills that completed sample their first token; the rest decode from the next iteration
            for k in range(n_done):
                j = done[k]
                c = prompt[j] + generated[j]
                generated[j] += 1
                if generated[j] >= response[j]:
                    used -= _release(j, c, bs, sh, shared, group, grp_tok, grp_ref, False, rq)
                    running_flag[j] = False
                    running -= 1
                    finish_s[j] = t
                    continue
                b += 1
                kv_tok += c
                _start_decoding(
                    j, c, cur_iter, response, generated, slot, cnt, admit_iter, gen_at_admit, ctx_at, fkey, head,
                    bits, nxt, prv, bs, sh,
                )  # fmt: skip
        if used > peak_blocks:
            peak_blocks = used
        # decoders that generated their last token in the iteration just run
        freed, kv, left = _finish_due(
            cur_iter, t, head, bits, nxt, running_flag, fkey, ctx_at, admit_iter, generated, response, bs, sh, shared,
            group, grp_tok, grp_ref, cnt, slot, finish_s, rq,
        )  # fmt: skip
        used -= freed
        kv_tok -= kv
        b -= left
        running -= left
    stats[STAT_MAKESPAN_S] = t
    stats[STAT_DECODE_S] = decode_total
    stats[STAT_PREFILL_S] = prefill_total
    stats[STAT_ITERATIONS] = n_iter
    stats[STAT_PREEMPTIONS] = n_preempt
    stats[STAT_PEAK_KV_TOKENS] = peak_blocks * bs
    stats[STAT_PEAK_RUNNING] = peak_b
    stats[STAT_RECOMPUTED_TOKENS] = recomputed
    stats[STAT_DECODED_TOKENS] = decoded
    stats[STAT_PREFILL_TOKENS] = prefilled
    stats[STAT_PREFIX_HIT_TOKENS] = cache_hit
    return 0


@_compiled(SIGNATURES["run_replicas"])
def run_replicas(
    prompt,
    response,
    group,
    offsets,
    n_groups,
    max_num_seqs,
    cap,
    bs,
    chunked,
    budget,
    wm,
    reuse,
    fast,
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
    """The event-driven kernel (:func:`_replica`) for each replica r in turn, on requests offsets[r]:offsets[r+1]
    (one call for a whole step); replica r's stats go to stats[N_STATS r : N_STATS (r + 1)]. Stops at the first
    request that can never be admitted and returns -1 - its index in the concatenation, else 0."""
    largest = 0
    for r in range(offsets.shape[0] - 1):
        largest = max(largest, offsets[r + 1] - offsets[r])
    longest = 0
    for j in range(response.shape[0]):
        longest = max(longest, response[j])
    iw, bw, cnt, head, bits = _workspace(largest, bs, longest)  # one workspace, replica after replica
    for r in range(offsets.shape[0] - 1):
        lo = offsets[r]
        hi = offsets[r + 1]
        if hi == lo:
            continue
        code = _replica(
            iw,
            bw,
            cnt,
            head,
            bits,
            prompt[lo:hi],
            response[lo:hi],
            group[lo:hi],
            n_groups[r],
            max_num_seqs,
            cap,
            bs,
            chunked,
            budget,
            wm,
            reuse,
            fast,
            mem_a,
            mem_s,
            cmp_a,
            cmp_s,
            over,
            floor,
            pf_over,
            pf_tok,
            pf_sq,
            finish_s[lo:hi],
            stats[N_STATS * r : N_STATS * (r + 1)],
        )
        if code < 0:
            return code - lo
    return 0


@_compiled(SIGNATURES["renumber_consecutive"])
def renumber_consecutive(groups, prompt, out):
    """Dense ids of non-decreasing group ids into ``out``: the group count, -1 if the ids decrease somewhere, -2 if
    a group's prompt lengths differ."""
    g = 0
    out[0] = 0
    for i in range(1, groups.shape[0]):
        if groups[i] < groups[i - 1]:
            return -1
        if groups[i] != groups[i - 1]:
            g += 1
        elif prompt[i] != prompt[i - 1]:
            return -2
        out[i] = g
    return g + 1


@_compiled(SIGNATURES["deal_round_robin"])
def deal_round_robin(prompt, response, group_size, replicas, out_prompt, out_response, out_group, offsets, n_groups):
    """rlsim.engine.rollout's dealing of a step's requests: request i is in group i // group_size, which replica
    group % replicas serves. Each replica's requests in arrival order, concatenated replica after replica into the
    out arrays (replica r's at offsets[r]:offsets[r + 1]); out_group numbers a replica's groups 0, 1, ... and
    n_groups counts them. Returns 0, or -1 - i for the first position i of the concatenation whose prompt length
    differs from its group's first (a group shares one prompt)."""
    n = prompt.shape[0]
    n_grp = (n + group_size - 1) // group_size
    pos = 0
    bad = -1
    for r in range(replicas):
        offsets[r] = pos
        local = 0
        for g in range(r, n_grp, replicas):
            lo = g * group_size
            hi = min(lo + group_size, n)
            for i in range(lo, hi):
                out_prompt[pos] = prompt[i]
                out_response[pos] = response[i]
                out_group[pos] = local
                if bad < 0 and prompt[i] != prompt[lo]:
                    bad = pos
                pos += 1
            local += 1
        n_groups[r] = local
    offsets[replicas] = pos
    return -1 - bad if bad >= 0 else 0


@_compiled(SIGNATURES["first_invalid"])
def first_invalid(prompt, response, sub, bs, cap, out):
    """out[0]: the first request with a response under 1 token or a negative prompt; out[1]: the first whose peak
    KV (prompt + response - sub tokens) takes more than ``cap`` blocks of ``bs`` tokens; the request count where
    there is none. Returns 0."""
    n = prompt.shape[0]
    out[0] = n
    out[1] = n
    for i in range(n):
        if out[0] == n and (response[i] < 1 or prompt[i] < 0):
            out[0] = i
        if out[1] == n and -((sub - prompt[i] - response[i]) // bs) > cap:
            out[1] = i
        if out[0] < n and out[1] < n:
            break
    return 0


@_compiled(SIGNATURES["numba_version"])
def numba_version():
    """The numba that compiled this kernel, as NUMBA_VERSION (major * 10000 + minor * 100 + patch)."""
    return NUMBA_VERSION
