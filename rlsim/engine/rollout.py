"""One step's generation: B = P x G requests spread over the engine replicas, each simulated by rlsim.engine.replica.

Prompts are dealt to replicas round-robin with all G responses of a prompt on the same replica (as when a
framework sends a prompt with n=G), where they form one prompt group for prefix caching; replicas run in
parallel and the phase ends when the slowest finishes, so stragglers (long responses, a loaded replica) set the
rollout time without being modelled separately.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rlsim.engine.iteration import DecodeCoefficients, PrefillCoefficients
from rlsim.engine.replica import N_STATS, STAT, PendingReplicas, SchedulerRules, _arg, kernel, launch_replicas


@dataclass(frozen=True)
class RolloutResult:
    rollout_s: float  # slowest replica plus the per-step dispatch overhead
    prompt_tokens: int
    response_tokens: int
    num_preemptions: int
    num_iterations: int  # summed over replicas
    mean_decode_batch: float  # decoded tokens / decode iterations, over all replicas
    peak_kv_tokens: int  # the largest on any replica
    replica_makespan_s: tuple[float, ...]
    recomputed_tokens: int = 0  # context tokens prefilled again after a preemption, summed over replicas
    # engine seconds those recomputes took, summed over replicas: each replica's prefill seconds in proportion to
    # its recomputed share of the tokens it prefilled (a prefill's cost per token is nearly flat, iteration.py)
    recompute_s: float = 0.0

    @property
    def recompute_share(self) -> float:
        """The recomputes' share of the engine's seconds (every replica's makespan)."""
        busy = sum(self.replica_makespan_s)
        return self.recompute_s / busy if busy > 0 else 0.0

    @property
    def generation_tokens_per_s(self) -> float:
        return self.response_tokens / self.rollout_s if self.rollout_s > 0 else 0.0


def simulate_rollout(
    prompt_tokens: np.ndarray,
    response_tokens: np.ndarray,
    group_size: int,
    replicas: int,
    max_num_seqs: int,
    kv_capacity_tokens: int,
    decode: DecodeCoefficients,
    prefill: PrefillCoefficients,
    overhead_s: float = 0.0,
    rules: SchedulerRules | None = None,
) -> RolloutResult:
    """Generate one step's responses on ``replicas`` engines (requests ordered group by group) under the engine's
    scheduling ``rules`` (rlsim.engine.replica.SchedulerRules; default: token-level rounds)."""
    return launch_rollouts(
        [(prompt_tokens, response_tokens)],
        group_size,
        replicas,
        max_num_seqs,
        kv_capacity_tokens,
        decode,
        prefill,
        [overhead_s],
        rules,
    ).result()[0]


def launch_rollouts(
    steps: Sequence[tuple[np.ndarray, np.ndarray]],
    group_size: int | Sequence[int],
    replicas: int,
    max_num_seqs: int,
    kv_capacity_tokens: int,
    decode: DecodeCoefficients,
    prefill: PrefillCoefficients,
    overhead_s: Sequence[float],
    rules: SchedulerRules | None = None,
    memo: RolloutMemo | None = None,
) -> PendingRollouts | _Answered:
    """:func:`simulate_rollout` of several steps (their prompt and response lengths, and each one's dispatch
    overhead) in one compiled call, started on the pool's threads (rlsim.engine.replica.launch_replicas) so that the
    caller can do other work (rlsim.run.pipeline: the steps before these) until it asks for the result. Every replica
    of every step is independent (each starts empty), so the results are the bits of one call per step, and the
    replicas of many small steps fill the cores together where one small step would run on one. The first step
    that cannot run raises, as it would alone (inputs that are wrong whatever the replica, now; the others by
    :meth:`PendingRollouts.result`); ``group_size`` one, or one per step (ReMax's greedy call: 1). With a ``memo``, a
    call whose inputs equal an earlier one's that it kept gets that call's results, and this call's are kept in it."""
    arrays = []
    for prompt_tokens, response_tokens in steps:
        n = len(response_tokens)
        prompt, response = (_arg(a, np.int64) for a in (prompt_tokens, response_tokens))  # the kernel's one type
        if prompt.shape != (n,):
            raise ValueError(
                f"prompt_tokens {prompt.shape} and response_tokens {response.shape} must be 1-D, same length"
            )
        arrays.append((prompt, response))
    if len(overhead_s) != len(arrays):
        raise ValueError(f"{len(overhead_s)} overheads for {len(arrays)} steps: give one per step")
    sizes = _group_sizes(group_size, len(arrays))
    key = None
    if memo is not None:
        engine = (tuple(sizes), replicas, max_num_seqs, kv_capacity_tokens, decode, prefill, rules)
        key = memo.key(arrays, engine)
        kept = memo.get(key, arrays)
        if kept is not None:  # the kernel's rows; each step's tokens summed from these lengths, overheads added
            bounds, stats = kept
            joined = [np.concatenate([a[i] for a in arrays]) for i in (0, 1)]
            return _Answered(_results(joined, bounds, replicas, stats, overhead_s))
    total = sum(len(r) for _, r in arrays)
    # each replica's requests in arrival order, its groups numbered from 0 (one compiled pass per step:
    # rlsim.engine.kernel), the steps' replicas one after another
    dealt = [np.empty(total, dtype=np.int64) for _ in range(3)]
    bounds = np.empty(len(arrays) * replicas + 1, dtype=np.int64)
    n_groups = np.empty(len(arrays) * replicas, dtype=np.int64)
    bad_group = len(arrays) * replicas
    lo = 0
    for k, (prompt, response) in enumerate(arrays):
        hi = lo + len(response)
        r0 = k * replicas
        code = kernel().deal_round_robin(
            prompt,
            response,
            sizes[k],
            replicas,
            *(d[lo:hi] for d in dealt),
            bounds[r0 : r0 + replicas + 1],
            n_groups[r0 : r0 + replicas],
        )
        if code < 0 and bad_group == len(arrays) * replicas:
            bad_group = r0 + int(np.searchsorted(bounds[r0 : r0 + replicas + 1], -1 - code, side="right")) - 1
        bounds[r0 : r0 + replicas + 1] += lo
        lo = hi
    # every replica of every step in one compiled call (rlsim.engine.replica.launch_replicas: simulate_replica on each
    # # in turn)
    run = launch_replicas(
        dealt[0],
        dealt[1],
        bounds,
        max_num_seqs,
        kv_capacity_tokens,
        decode,
        prefill,
        rules,
        numbered=(dealt[2], n_groups, bad_group),
    )
    pending = PendingRollouts(run, dealt, bounds, replicas, overhead_s)
    return pending if memo is None else _Remembered(pending, memo, key, arrays)


def _group_sizes(group_size: int | Sequence[int], steps: int) -> list[int]:
    """Each step's group size: one for all, or one per step."""
    sizes = [group_size] * steps if isinstance(group_size, int) else [int(g) for g in group_size]
    if len(sizes) != steps:
        raise ValueError(f"{len(sizes)} group sizes for {steps} steps: give one, or one per step")
    return sizes


@dataclass(frozen=True)
class PendingRollouts:
    """:func:`launch_rollouts` under way: :meth:`result` gives each step's RolloutResult, or raises the first
    failing step's error."""

    run: PendingReplicas
    dealt: list[np.ndarray]  # the steps' requests dealt to replicas, step after step
    bounds: np.ndarray  # replica boundaries in dealt: step k's replicas are k R .. (k + 1) R - 1
    replicas: int
    overhead_s: Sequence[float]

    def result(self) -> list[RolloutResult]:
        return _results(self.dealt, self.bounds, self.replicas, self.run.result()[1], self.overhead_s)


def _results(
    dealt: list[np.ndarray], bounds: np.ndarray, replicas: int, stats: np.ndarray, overhead_s: Sequence[float]
) -> list[RolloutResult]:
    """Each step's RolloutResult from its replicas' rows of stats and its dealt requests (step k's are
    bounds[k R]:bounds[(k + 1) R] of the concatenation), every step's sums and maxima in one numpy pass (the
    stats are whole numbers in float64: their sums are exact in any order)."""
    steps = len(overhead_s)
    rows = stats.reshape(steps, replicas, N_STATS)
    makespans = rows[:, :, STAT["makespan_s"]].tolist()
    summed = [STAT["num_preemptions"], STAT["num_iterations"], STAT["decoded_tokens"]]
    counts = np.add.reduce(rows[:, :, summed], axis=1).tolist()  # (.sum / .max without their Python wrappers)
    peaks = np.maximum.reduce(rows[:, :, STAT["peak_kv_tokens"]], axis=1).tolist() if replicas else [0] * steps
    recomputed = rows[:, :, STAT["recomputed_tokens"]]
    prefilled = rows[:, :, STAT["prefill_tokens"]]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(prefilled > 0, recomputed / prefilled, 0.0)
    recompute_s = np.add.reduce(rows[:, :, STAT["prefill_s"]] * share, axis=1).tolist()
    recomputed_sums = np.add.reduce(recomputed, axis=1).tolist()
    edges = bounds[::replicas] if replicas else np.zeros(steps + 1, dtype=np.int64)
    prompt_sums, response_sums = ((np.concatenate([[0], np.cumsum(a)])[edges]).tolist() for a in (dealt[0], dealt[1]))
    out = []
    for k in range(steps):
        preemptions, iterations, decoded = (int(v) for v in counts[k])
        out.append(
            RolloutResult(
                rollout_s=max(makespans[k]) + overhead_s[k],
                prompt_tokens=prompt_sums[k + 1] - prompt_sums[k],
                response_tokens=response_sums[k + 1] - response_sums[k],
                num_preemptions=preemptions,
                num_iterations=iterations,
                mean_decode_batch=decoded / iterations if iterations else 0.0,
                peak_kv_tokens=int(peaks[k]),
                replica_makespan_s=tuple(makespans[k]),
                recomputed_tokens=int(recomputed_sums[k]),
                recompute_s=float(recompute_s[k]),
            )
        )
    return out


def free_rollouts(arrays: list[tuple[np.ndarray, np.ndarray]], replicas: int) -> _Answered:
    """:func:`launch_rollouts`' answer were generation free: each call's tokens, no time, no engine simulated
    (rlsim.run.pipeline's free-generation bound)."""
    zero = (0.0,) * replicas
    return _Answered(
        [RolloutResult(0.0, int(np.add.reduce(p)), int(np.add.reduce(r)), 0, 0, 0.0, 0, zero) for p, r in arrays]
    )


def merge_rounds(results: list[RolloutResult]) -> RolloutResult:
    """One step's generation calls run one after another (dynamic sampling's rounds): their times and tokens
    add up, the decode batch is the mean over all their iterations, the KV peak is the largest."""
    if len(results) == 1:
        return results[0]
    iterations = sum(r.num_iterations for r in results)
    decoded = sum(r.mean_decode_batch * r.num_iterations for r in results)
    return RolloutResult(
        rollout_s=sum(r.rollout_s for r in results),
        prompt_tokens=sum(r.prompt_tokens for r in results),
        response_tokens=sum(r.response_tokens for r in results),
        num_preemptions=sum(r.num_preemptions for r in results),
        num_iterations=iterations,
        mean_decode_batch=decoded / iterations if iterations else 0.0,
        peak_kv_tokens=max(r.peak_kv_tokens for r in results),
        replica_makespan_s=tuple(np.sum([r.replica_makespan_s for r in results], axis=0).tolist()),
        recomputed_tokens=sum(r.recomputed_tokens for r in results),
        recompute_s=sum(r.recompute_s for r in results),
    )


def _fingerprint(a: np.ndarray) -> int:
    """A 64-bit digest of an int64 array's values (a weighted sum, wrapping): equal arrays give equal ones."""
    global _WEIGHTS
    n = a.shape[0]
    if _WEIGHTS.shape[0] < n:
        _WEIGHTS = np.random.default_rng(20261204).integers(1, 1 << 63, 2 * n, dtype=np.uint64) | np.uint64(1)
    return int(_WEIGHTS[:n] @ a.view(np.uint64))


_WEIGHTS = np.zeros(0, dtype=np.uint64)


class RolloutMemo:
    """What the kernel gave :func:`launch_rollouts` calls, kept by the kernel's inputs, for calls that many
    configurations share (rlsim.plan's screen: the same engine on as many GPUs under another schedule, placement
    or trainer): a call whose kernel inputs equal a kept call's gets its results without a simulation, with its
    own dispatch overheads added (a synchronous step pays one, a streaming window none). A fingerprint of the
    lengths finds the candidate and the lengths themselves are compared, so a hit is an equal call. It keeps
    copies of at most ``max_bytes`` of lengths, the least recently used dropped first; ``calls`` and ``hits``
    count what it saw."""

    def __init__(self, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = max_bytes
        self.calls = 0
        self.hits = 0
        self._kept: OrderedDict[tuple, tuple[list[np.ndarray], tuple[np.ndarray, np.ndarray]]] = OrderedDict()
        self._bytes = 0

    def key(self, arrays: list[tuple[np.ndarray, np.ndarray]], engine: tuple) -> tuple:
        """The lookup key of a call: its scalar inputs and each step's size and length fingerprints."""
        group_size, replicas, max_num_seqs, kv, decode, prefill, rules = engine
        coefficients = tuple(
            a.tobytes() if isinstance(a, np.ndarray) else a
            for a in (decode.mem_intercept_s, decode.mem_slope_s_per_token, decode.compute_intercept_s,
                      decode.compute_slope_s_per_token, decode.overhead_s, decode.floor_s)
        )  # fmt: skip
        steps = tuple((r.shape[0], _fingerprint(p), _fingerprint(r)) for p, r in arrays)
        scalars = (group_size, replicas, max_num_seqs, kv, prefill, rules)
        return (*scalars, coefficients, steps)

    def get(self, key: tuple, arrays: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray] | None:
        """The kept call's replica bounds and kernel stats, if its lengths equal these."""
        self.calls += 1
        kept = self._kept.get(key)
        if kept is None or not all(np.array_equal(a, b) for a, b in zip(kept[0], (x for pr in arrays for x in pr))):
            return None
        self._kept.move_to_end(key)
        self.hits += 1
        return kept[1]

    def put(
        self, key: tuple, arrays: list[tuple[np.ndarray, np.ndarray]], output: tuple[np.ndarray, np.ndarray]
    ) -> None:
        copies = [x.copy() for pr in arrays for x in pr]
        size = sum(c.nbytes for c in copies)
        if size > self.max_bytes:
            return
        old = self._kept.pop(key, None)
        if old is not None:
            self._bytes -= sum(c.nbytes for c in old[0])
        self._kept[key] = (copies, output)
        self._bytes += size
        while self._bytes > self.max_bytes:
            _, (dropped, _) = self._kept.popitem(last=False)
            self._bytes -= sum(c.nbytes for c in dropped)


@dataclass(frozen=True)
class _Answered:
    """A call the memo answered: its results, as :meth:`PendingRollouts.result` gives them."""

    results: list[RolloutResult]

    def result(self) -> list[RolloutResult]:
        return self.results


@dataclass(frozen=True)
class _Remembered:
    """A call under way whose kernel rows, once they come, the memo keeps."""

    pending: PendingRollouts
    memo: RolloutMemo
    key: tuple
    arrays: list[tuple[np.ndarray, np.ndarray]]

    def result(self) -> list[RolloutResult]:
        p = self.pending
        stats = p.run.result()[1]
        self.memo.put(self.key, self.arrays, (p.bounds, stats))
        return _results(p.dealt, p.bounds, p.replicas, stats, p.overhead_s)
