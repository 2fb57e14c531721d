"""Rollout engine model: one inference-engine replica doing continuous batching.

What it models (vLLM's scheduling, paged KV cache, prefix caching, recompute preemption), times in seconds,
sizes in tokens. The replica receives its requests in arrival order (index order). Request ``j`` has
``prompt_tokens[j]``, ``response_tokens[j] >= 1`` and optionally a prompt group (the G responses of a GRPO prompt
share one prompt). Its context is ``c = prompt + generated_so_far``.

**KV cache in blocks** (:class:`SchedulerRules` ``block_size``; vLLM's PagedAttention). The cache holds
``kv_capacity_tokens // block_size`` blocks; a sequence with ``x`` cached tokens holds ``ceil(x / block_size)``
of them, and takes a new one in the iteration whose token starts a block. ``block_size = 1`` counts tokens.
An admission (its first chunk's blocks, or in rounds its context's) must leave ``int(kv_watermark x blocks)``
blocks free (vLLM V0's watermark; 0 under V1); decoding sequences may grow into them.

**Prefix caching** (``prefix_caching``; vLLM's automatic prefix caching, ``vllm/v1/core/kv_cache_manager.py``).
When the first request of a group has been scheduled to its prompt's end, the full blocks of its prompt up to
``floor((prompt - 1) / block_size)`` blocks (vLLM always recomputes the last prompt token) become the group's,
shared by reference: every later member admitted while a member still holds them skips those tokens (no compute,
no new blocks). They are freed when the last member holding them leaves the running set. With
``cache_freed_blocks`` (vLLM V1's block pool; rlsim's chunked-prefill engines) freed blocks stay cached until
their slot is reused: they join the tail of a free queue, a request's last block first, and allocations take
blocks from its head, so a request preempted and readmitted soon finds its own full blocks (and a released
group's prompt) still cached and recomputes only what was evicted (``rlsim.engine.kernel._lookup``; the decoders'
new blocks of a step are taken before any admission, as vLLM's scheduler allocates for running requests first).

**Prefill cost** of ``L`` tokens of a context starting at position ``a`` (``a`` = tokens already cached):
``per_token_s * L + per_token_sq_s * ((a + L)^2 - a^2)`` (causal attention), plus ``overhead_s`` once per
iteration or admission round that prefills anything.

Two schedulers (``chunked_prefill``):

**vLLM V1, chunked prefill** (``vllm/v1/core/sched/scheduler.py`` ``schedule()``, 0.11.2). Each iteration has a
token budget ``max_num_batched_tokens`` (>= ``max_num_seqs``):

1. Running requests in admission order: every decoding sequence takes one token; their new blocks are allocated
   and, while they do not fit, the *last* running request is preempted (L275-339: ``self.running.pop()``, its
   blocks freed, back to the *front* of the waiting queue, to recompute its whole context later). The request
   being prefilled (at most one: the last admitted) then takes ``min(remaining prompt, budget left)`` tokens, or
   preempts itself when their blocks do not fit.
2. Only if nothing was preempted (L396): waiting requests from the front, no skipping ahead (L561-563), while the
   budget is not spent, fewer than ``max_num_seqs`` run and the blocks of their first chunk fit:
   ``min(c - cached prefix, budget left)`` tokens each.
3. One forward pass runs the ``b`` decoding sequences (``K`` cached tokens) and the ``T`` prefill tokens:
   ``max(decode.mem_intercept_s[b] + decode.mem_slope_s_per_token * K,
         decode.compute_intercept_s[b] + decode.compute_slope_s_per_token * K + prefill compute of the chunks,
         decode.floor_s[b]) + decode.overhead_s[b]`` (+ ``prefill.overhead_s`` when ``T > 0``): the roofline of
   docs/reference.md section 6, weights read once for decode and prefill together; the floor is CPU work that overlaps
   the GPU step (zero for a serial engine, whose CPU work is in ``overhead_s``).
4. Each decoding sequence generates one token; a request whose prefill completed samples its first token (as
   vLLM does) and decodes from the next iteration. A request that reaches its response length frees its blocks.

**Rounds, no chunked prefill** (vLLM 0.5's default; and ``block_size = 1``, no groups: rlsim's earlier rules):

1. Admission from the front while fewer than ``max_num_seqs`` run, the prefill tokens of the round stay within
   ``max_num_batched_tokens`` (the first request always goes) and its blocks plus the blocks every running
   sequence (itself included) takes in the next iteration fit. The round's admitted requests are prefilled
   together (one cost) before the decode iteration.
2. Stop when nothing runs and the queue is empty; error when the front request can never fit.
3. Preemption of the most recently admitted sequence while the next iteration's blocks do not fit.
4. One decode iteration of every running sequence; every response token costs one (the first included).

Why it is fast: between two events (a finish, a preemption, an admission, a prefill chunk) the batch is fixed,
the cached context grows by ``b`` per iteration and new blocks follow a fixed cycle of ``block_size``
iterations, so the run of iterations up to the next event is summed in closed form (the max of two affine
functions of the iteration index and a constant). Work grows with the number of requests, admission steps and
preemptions, not with tokens. The kernel (:mod:`rlsim.engine.kernel`) is compiled with numba: ahead of time when rlsim
is installed, else on first use (:func:`kernel`). ``tests/rlsim/reference_engine.py`` holds the plain
iteration-by-iteration implementation of these rules and property tests check the two agree.
"""

from __future__ import annotations

import functools
import importlib
import os
from dataclasses import dataclass, fields
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from rlsim.engine.iteration import DecodeCoefficients, PrefillCoefficients
from rlsim.engine.kernel_build import SOURCE as KERNEL_SOURCE
from rlsim.engine.kernel_build import module_name as aot_module_name
from rlsim.engine.scheduler import SchedulerRules
from rlsim.errors import RlsimError
from rlsim.host import threads

__all__ = [
    "ReplicaResult",
    "EngineCapacityError",
    "simulate_replica",
    "simulate_replicas",
    "launch_replicas",
]

UNLIMITED_TOKENS = 1 << 62


class EngineCapacityError(RlsimError, ValueError):
    """A request can never be admitted: its context does not fit the replica's KV cache."""


_KERNEL: ModuleType | None = None  # the kernel in use, chosen on first use


def kernel() -> ModuleType:
    """The compiled kernel: a module with the entry points of ``rlsim.engine.kernel.SIGNATURES``.

    The ahead-of-time module built from this very rlsim/engine/kernel.py (``rlsim/engine/kernel_build.py``, run at
    install) when there is one: nothing to compile and no numba to import. Otherwise :mod:`rlsim.engine.kernel`
    compiled by numba (on
    first use, cached on disk by numba). The environment variable ``RLSIM_KERNEL`` picks one: ``jit`` numba's,
    ``aot`` the built one or an error saying how to build it, ``auto`` (the default) as above."""
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = _load_kernel(os.environ.get("RLSIM_KERNEL", "auto"))
    return _KERNEL


def kernel_kind() -> str:
    """``aot`` or ``jit``: which kernel :func:`kernel` runs."""
    return "jit" if kernel().__name__ == "rlsim.engine.kernel" else "aot"


def kernel_description() -> str:
    """Which kernel runs and the numba that compiled it, e.g. ``aot, numba 0.68.1`` (for benchmark records: the
    compiling numba's LLVM changes the kernel's speed, not its results)."""
    v = int(kernel().numba_version())
    return f"{kernel_kind()}, numba {v // 10000}.{v // 100 % 100}.{v % 100}"


def aot_kernel() -> ModuleType | None:
    """The kernel built ahead of time from this rlsim/engine/kernel.py, or None when there is none or it does not load
    (an extension built against another numpy ABI raises ImportError or RuntimeError: numba's JIT then runs)."""
    try:
        return importlib.import_module(f"rlsim.engine.{aot_module_name()}")
    except Exception:  # whatever stops the extension loading, the JIT kernel is the same kernel
        return None


def _load_kernel(choice: str) -> ModuleType:
    if choice not in ("auto", "aot", "jit"):
        raise RlsimError(f"RLSIM_KERNEL={choice!r}: must be auto, aot or jit; unset it for auto")
    if choice != "jit":
        built = aot_kernel()
        if built is not None:
            return built
        if choice == "aot":
            raise RlsimError(
                f"RLSIM_KERNEL=aot: no kernel built ahead of time from {KERNEL_SOURCE} "
                f"(rlsim.engine.{aot_module_name()}) "
                "loads here; build it with `python -m rlsim.engine.kernel_build` or unset RLSIM_KERNEL"
            )
    return importlib.import_module("rlsim.engine.kernel")


def _arg(values: object, dtype: type) -> np.ndarray:
    """A writable, aligned, C-contiguous array of ``dtype``: the one type the kernel is compiled for (a read-only
    array would need a second numba version, and the ahead-of-time kernel takes no other)."""
    a = np.ascontiguousarray(values, dtype=dtype)
    return a if a.flags.writeable and a.flags.aligned else a.copy()


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
    decoded_tokens: int  # tokens generated by decode iterations
    prefill_tokens: int = 0  # prompt and context tokens computed by prefills (cache hits excluded)
    prefix_hit_tokens: int = 0  # prompt tokens served from a group's cached prompt

    @property
    def mean_running(self) -> float:
        """Mean number of sequences per decode iteration (the effective decode batch)."""
        return 0.0 if self.num_iterations == 0 else self.decoded_tokens / self.num_iterations


# the kernel's row of stats per replica (rlsim.engine.kernel's STAT_* slots, in this order; N_STATS of them): the
# fields of ReplicaResult after finish_s, by name
STATS = tuple(f.name for f in fields(ReplicaResult))[1:]
N_STATS = len(STATS)
STAT = {name: i for i, name in enumerate(STATS)}
_INT_STATS = frozenset(f.name for f in fields(ReplicaResult) if f.type in ("int", int))


def replica_result(finish_s: np.ndarray, row: np.ndarray) -> ReplicaResult:
    """A replica's result from its finish times and its row of the kernel's stats."""
    values = {name: (int(row[i]) if name in _INT_STATS else float(row[i])) for i, name in enumerate(STATS)}
    return ReplicaResult(finish_s=finish_s, **values)


class KernelScalars(NamedTuple):
    """The arguments of ``kernel.run_replicas`` between the arrays and the outputs, by name (a tuple, passed on
    as ``*scalars``): the scheduler's limits and the iteration cost law's coefficients."""

    max_num_seqs: int
    cap_blocks: int
    block_size: int
    chunked_prefill: bool
    token_budget: int
    watermark_blocks: int
    cache_freed_blocks: bool
    fast_thrash: bool
    mem_intercept_s: np.ndarray
    mem_slope_s_per_token: float
    compute_intercept_s: np.ndarray
    compute_slope_s_per_token: float
    overhead_s: np.ndarray
    floor_s: np.ndarray
    prefill_overhead_s: float
    prefill_per_token_s: float
    prefill_per_token_sq_s: float

    @classmethod
    def of(
        cls,
        max_num_seqs: int,
        cap_blocks: int,
        rules: SchedulerRules,
        decode: DecodeCoefficients,
        prefill: PrefillCoefficients,
    ) -> KernelScalars:
        budget = UNLIMITED_TOKENS if rules.max_num_batched_tokens is None else int(rules.max_num_batched_tokens)
        return cls(
            int(max_num_seqs),
            cap_blocks,
            int(rules.block_size),
            bool(rules.chunked_prefill),
            budget,
            rules.watermark_blocks(cap_blocks),
            bool(rules.prefix_caching and rules.cache_freed_blocks),
            bool(rules.fast_thrash and rules.chunked_prefill),
            _arg(decode.mem_intercept_s, np.float64),
            float(decode.mem_slope_s_per_token),
            _arg(decode.compute_intercept_s, np.float64),
            float(decode.compute_slope_s_per_token),
            _arg(decode.overhead_s, np.float64),
            _arg(decode.floor, np.float64),
            float(prefill.overhead_s),
            float(prefill.per_token_s),
            float(prefill.per_token_sq_s),
        )


def simulate_replica(
    prompt_tokens: np.ndarray,
    response_tokens: np.ndarray,
    max_num_seqs: int,
    kv_capacity_tokens: int,
    decode: DecodeCoefficients,
    prefill: PrefillCoefficients,
    rules: SchedulerRules | None = None,
    prompt_groups: np.ndarray | None = None,
) -> ReplicaResult:
    """Run one replica's requests to completion under the rules in the module docstring.

    ``rules`` defaults to :class:`SchedulerRules` (token-level rounds); ``prompt_groups`` gives each request's
    shared-prompt group (requests of a group have the same prompt length), used when ``rules.prefix_caching``.
    Raises EngineCapacityError when a request's prompt plus response cannot fit the KV cache, and ValueError on
    inconsistent inputs (lengths differ, response < 1, max_num_seqs beyond the decode coefficient table).
    """
    # one replica of simulate_replicas: the same checks, errors and kernel call (a shape error is raised there first)
    finish, stats = simulate_replicas(
        prompt_tokens,
        response_tokens,
        np.array([0, np.size(response_tokens)]),
        max_num_seqs,
        kv_capacity_tokens,
        decode,
        prefill,
        rules,
        prompt_groups,
    )
    return replica_result(finish, stats[0])


def simulate_replicas(*args: Any, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
    """:func:`launch_replicas` (the same arguments), its result: the finish times and the stats, or its error."""
    return launch_replicas(*args, **kwargs).result()


class PendingReplicas:
    """:func:`launch_replicas` under way: :meth:`result` gives its finish times and stats, or raises its error."""

    def __init__(self, run: threads.Pending | None, error, invalid: bool, finish: np.ndarray, stats: np.ndarray):
        self._run, self._error, self._invalid, self._finish, self._stats = run, error, invalid, finish, stats

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        code = self._run.result() if self._run is not None else 0
        if code < 0 or self._invalid:  # a request that never fits comes first, then the first invalid replica
            raise self._error(code)
        return self._finish, self._stats


def launch_replicas(
    prompt_tokens: np.ndarray,
    response_tokens: np.ndarray,
    offsets: np.ndarray,
    max_num_seqs: int,
    kv_capacity_tokens: int,
    decode: DecodeCoefficients,
    prefill: PrefillCoefficients,
    rules: SchedulerRules | None = None,
    prompt_groups: np.ndarray | None = None,
    numbered: tuple[np.ndarray, np.ndarray, int] | None = None,
) -> PendingReplicas:
    """:func:`simulate_replica` for several replicas in one compiled call, started on the pool's threads
    (rlsim.host.threads.launch) so that the caller can do other work until it asks for :meth:`PendingReplicas.result`:
    replica ``r`` runs requests ``offsets[r]:offsets[r + 1]`` of the concatenated arrays (offsets non-decreasing,
    from 0 to the request count), each replica from its own start. The result is the finish times (concatenated,
    as the requests) and one row of stats per replica: makespan, decode, prefill, iterations, preemptions, peak
    KV tokens, peak running, recomputed, decoded, prefill and prefix-hit tokens (:class:`ReplicaResult`'s order;
    a replica without requests has zeros).

    The results, and the error raised, are those of :func:`simulate_replica` called on each replica's slice in
    turn (replicas without requests skipped): the first replica whose inputs are invalid or whose request can
    never fit raises, its request numbered within the replica (by ``result()``; arrays of the wrong shape and the
    shared arguments are refused at once).

    ``numbered``, instead of ``prompt_groups``: the groups as rlsim.engine.kernel's ``deal_round_robin`` gives them
    (int64 ids numbered within each replica, the count per replica, the first replica whose group prompts differ
    or the replica count), which is what :func:`_replica_groups` would make of ``prompt_groups``."""
    rules = rules or SchedulerRules()
    prompt = _arg(prompt_tokens, np.int64)
    response = _arg(response_tokens, np.int64)
    offsets = _arg(offsets, np.int64)
    _check_arrays(prompt, response, offsets)
    n_rep = offsets.size - 1
    finish = np.zeros(prompt.size, dtype=np.float64)
    stats = np.zeros(N_STATS * n_rep, dtype=np.float64)
    if prompt.size == 0:
        return PendingReplicas(None, None, False, finish, stats.reshape(n_rep, N_STATS))

    def replica_of(i: int) -> int:
        return int(np.searchsorted(offsets, i, side="right")) - 1

    # the first replica with invalid values, group prompts or a request that cannot fit alone: each replica is
    # checked in simulate_replica's order, and the replicas before the first failing one still run (their
    # kernel errors come first)
    bs = int(rules.block_size)
    cap_blocks = int(kv_capacity_tokens) // bs
    sub = 1 if rules.chunked_prefill else 0  # a request's peak KV is prompt + response - sub tokens
    found = np.empty(2, dtype=np.int64)  # the first request with invalid values, the first that cannot fit alone
    kernel().first_invalid(prompt, response, sub, bs, cap_blocks, found)
    first_bad = replica_of(int(found[0])) if found[0] < prompt.size else n_rep
    first = replica_of(0)  # the first replica with requests, where simulate_replica checks the shared arguments
    if first_bad > first:
        _check_shared(max_num_seqs, decode, rules)
    if numbered is not None and rules.prefix_caching:
        group, n_groups, bad_group = numbered
    else:
        group, n_groups, bad_group = _replica_groups(prompt, offsets, prompt_groups if rules.prefix_caching else None)
    first_bad = min(first_bad, bad_group)
    if found[1] < prompt.size:
        first_bad = min(first_bad, replica_of(int(found[1])))
    scalars = KernelScalars.of(max_num_seqs, cap_blocks, rules, decode, prefill)
    # the replicas up to the first invalid one, on several cores when the call is large (rlsim.host.threads)
    run = threads.launch(
        kernel(), prompt, response, group, offsets[: first_bad + 1].copy(), n_groups, scalars, finish, stats
    )
    error = functools.partial(
        _launch_error,
        prompt=prompt,
        response=response,
        offsets=offsets,
        first_bad=first_bad,
        bad_group=bad_group,
        sub=sub,
        kv_capacity_tokens=kv_capacity_tokens,
        block_size=bs,
    )
    return PendingReplicas(run, error, first_bad < n_rep, finish, stats.reshape(n_rep, N_STATS))


def _check_arrays(prompt: np.ndarray, response: np.ndarray, offsets: np.ndarray) -> None:
    """One request per entry of equal 1-D arrays, split by non-decreasing offsets from 0 to their length."""
    if prompt.shape != response.shape or prompt.ndim != 1:
        raise ValueError(f"prompt_tokens {prompt.shape} and response_tokens {response.shape} must be 1-D, same length")
    n_rep = offsets.size - 1
    if offsets.ndim != 1 or n_rep < 0 or offsets[0] != 0 or offsets[-1] != prompt.size or np.any(np.diff(offsets) < 0):
        raise ValueError(f"offsets must be non-decreasing from 0 to the request count ({prompt.size})")


def _check_shared(max_num_seqs: int, decode: DecodeCoefficients, rules: SchedulerRules) -> None:
    """The arguments every replica of a call shares, checked as :func:`simulate_replica` checks them."""
    if max_num_seqs < 1 or max_num_seqs > decode.max_batch:
        raise ValueError(f"max_num_seqs ({max_num_seqs}) must be in 1..{decode.max_batch} (decode table size)")
    if rules.chunked_prefill and rules.max_num_batched_tokens < max_num_seqs:
        raise ValueError(
            f"max_num_batched_tokens ({rules.max_num_batched_tokens}) must be >= max_num_seqs ({max_num_seqs}), "
            "as vLLM requires: every running sequence's decode token must fit one iteration"
        )


def _launch_error(
    code: int,
    *,
    prompt: np.ndarray,
    response: np.ndarray,
    offsets: np.ndarray,
    first_bad: int,
    bad_group: int,
    sub: int,
    kv_capacity_tokens: int,
    block_size: int,
) -> Exception:
    """The error of a :func:`launch_replicas` call: for a kernel code < 0 the request that can never be admitted
    (numbered within its replica), else :func:`simulate_replica`'s first error on the first invalid replica."""
    if code < 0:
        j = -1 - int(code)
        r = int(np.searchsorted(offsets, j, side="right")) - 1
        lo, hi = offsets[r], offsets[r + 1]
        return _capacity_error(j - int(lo), prompt[lo:hi], response[lo:hi], kv_capacity_tokens)
    lo, hi = offsets[first_bad], offsets[first_bad + 1]
    if np.any((response[lo:hi] < 1) | (prompt[lo:hi] < 0)):
        return ValueError("response_tokens must be >= 1 and prompt_tokens >= 0")
    if first_bad == bad_group:
        return ValueError("requests of one prompt group must have the same prompt length")
    worst = int(np.argmax(-((sub - prompt[lo:hi] - response[lo:hi]) // block_size)))
    return _capacity_error(worst, prompt[lo:hi], response[lo:hi], kv_capacity_tokens)


def _replica_groups(
    prompt: np.ndarray, offsets: np.ndarray, prompt_groups: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`_groups` of every replica's slice at once: the group ids renumbered within each replica, the group
    count per replica, and the first replica whose group's prompts differ (the replica count: none)."""
    n_rep = offsets.size - 1
    if prompt_groups is None:
        return np.full(prompt.size, -1, dtype=np.int64), np.zeros(n_rep, dtype=np.int64), n_rep
    groups = np.asarray(prompt_groups).ravel()
    if groups.shape != prompt.shape:
        raise ValueError(f"prompt_groups {groups.shape} must have one entry per request {prompt.shape}")
    starts = offsets[:-1]
    start = np.zeros(prompt.size, dtype=bool)
    start[starts[starts < prompt.size]] = True
    same = np.zeros(prompt.size, dtype=bool)  # in the previous request's group, on the same replica
    same[1:] = groups[1:] == groups[:-1]
    same &= ~start
    if np.any((groups[1:] < groups[:-1]) & ~start[1:]):  # ids out of order on some replica: the general path
        group = np.empty(prompt.size, dtype=np.int64)
        n_groups = np.zeros(n_rep, dtype=np.int64)
        for r in np.flatnonzero(np.diff(offsets)):
            lo, hi = offsets[r], offsets[r + 1]
            try:
                group[lo:hi], n_groups[r] = _groups(prompt[lo:hi], groups[lo:hi])
            except ValueError:
                return group, n_groups, int(r)
        return group, n_groups, n_rep
    differ = same & (prompt != np.roll(prompt, 1))
    bad = int(np.searchsorted(offsets, np.argmax(differ), side="right")) - 1 if differ.any() else n_rep
    dense = np.cumsum(~same) - 1  # group number over all replicas
    first_of = dense[np.minimum(starts, prompt.size - 1)]
    group = dense - np.repeat(first_of, np.diff(offsets))
    n_groups = np.where(np.diff(offsets) > 0, dense[np.maximum(offsets[1:] - 1, 0)] - first_of + 1, 0)
    return group.astype(np.int64), n_groups.astype(np.int64), bad


def _groups(prompt: np.ndarray, prompt_groups: np.ndarray | None) -> tuple[np.ndarray, int]:
    """Group ids renumbered 0..n_groups-1 (-1 everywhere when there are none); a group's prompts must be equal."""
    if prompt_groups is None:
        return np.full(prompt.size, -1, dtype=np.int64), 0
    groups = np.asarray(prompt_groups).ravel()
    if groups.shape != prompt.shape:
        raise ValueError(f"prompt_groups {groups.shape} must have one entry per request {prompt.shape}")
    group = np.empty(prompt.size, dtype=np.int64)
    # requests arrive group by group (rlsim.engine.rollout): one compiled pass, no sort, on the per-step hot path
    code = kernel().renumber_consecutive(_arg(groups, np.int64), prompt, group) if groups.size else 0
    if code == -1:  # ids out of order: the general path
        ids, inverse = np.unique(groups, return_inverse=True)
        group[:] = inverse
        first = np.full(ids.size, -1, dtype=np.int64)
        first[group[::-1]] = prompt[::-1]
        code = -2 if np.any(first[group] != prompt) else ids.size
    if code == -2:
        raise ValueError("requests of one prompt group must have the same prompt length")
    return group, int(code)


def _capacity_error(j: int, prompt: np.ndarray, response: np.ndarray, kv_capacity_tokens: int) -> EngineCapacityError:
    return EngineCapacityError(
        f"request {j} (prompt {prompt[j]} + response {response[j]} tokens) cannot fit the KV cache of "
        f"{kv_capacity_tokens} tokens; raise engine.gpu_memory_utilization or tensor parallelism, or lower "
        "workload.max_response_tokens"
    )
