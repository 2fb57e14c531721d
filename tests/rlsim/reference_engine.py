"""Plain, iteration-by-iteration reference for ``rlsim.engine.replica.simulate_replica``.

Written from the rules in the ``rlsim.engine.replica`` module docstring only (not from the compiled kernel). Every
iteration is simulated one at a time and the KV blocks held are recounted from every request's state each time
they are needed, so it is slow but easy to check against the text. Only meant for small cases in tests.

Rounds (no chunked prefill), one loop round:

1. admission (FCFS from the front, no skipping ahead; the round's prefill tokens within the budget, the first
   request always; its blocks plus the next iteration's blocks of every running sequence, itself included, fit),
   then one prefill for all requests admitted in this round;
2. stop when nothing runs and the queue is empty; error when nothing runs and the queue is not empty;
3. preemption of the most recently admitted running sequence while the next iteration's blocks do not fit;
4. one decode iteration (every running sequence generates one token), then finishes.

Chunked prefill (vLLM V1), one loop round is one iteration:

1. decoding sequences take one token each; while their new blocks do not fit, the last running request is
   preempted; the request being prefilled takes min(remaining, budget left) tokens or preempts itself;
2. if nothing was preempted, waiting requests from the front take min(context - cached prefix, budget left)
   tokens while the budget lasts, fewer than max_num_seqs run and their blocks fit (the cached prefix: the
   group's held prompt; with ``cache_freed_blocks`` also what the free queue still holds of a released group
   prompt and of a preempted request's own blocks, which it takes back);
3. one forward pass; decoders generate one token; completed prefills sample their first token.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from rlsim.engine.iteration import (
    DecodeCoefficients,
    PrefillCoefficients,
    decode_iteration_s,
    mixed_iteration_s,
    prefill_s,
)
from rlsim.engine.replica import EngineCapacityError, SchedulerRules

__all__ = ["reference_replica"]


class _Cache:
    """Per-request KV state and the shared prompt blocks of each group."""

    def __init__(self, block_size: int, capacity_blocks: int, group: list[int | None], reuse: bool = False):
        self.group = group
        self.bs = block_size
        self.cap = capacity_blocks
        self.tokens: dict[int, int] = {}  # running request -> KV tokens it holds (its context so far)
        self.shared: dict[int, int] = {}  # running request -> tokens of its group's cached prompt it references
        self.group_tokens: dict[int, int] = {}  # group -> cached prompt tokens (present while referenced)
        # freed blocks kept as evictable cache (vLLM V1): the free queue counted in positions, blocks appended at
        # its tail as they are freed and taken from its head when allocated
        self.reuse = reuse
        self.appended = capacity_blocks  # positions ever appended (the empty cache's blocks first)
        self.run: dict[int, tuple[int, int, int]] = {}  # preempted request -> (end, full own blocks, shared blocks)
        self.group_run: dict[int, tuple[int, int]] = {}  # group -> (end, prompt blocks) once no one holds them

    def head(self, reserved: int = 0) -> int:
        """The free queue's head position once ``reserved`` more blocks are taken (the step's decoders take theirs
        before any admission): the free blocks are the last ones appended. (Blocks hit again leave vLLM's queue
        from its middle; counting them as gone from the head evicts a little early: 2.7-4.1% more recomputed
        tokens than vLLM 0.32 on the thrash cases of scripts/vllm_thrash.py, docs/results/vllm.md.)"""
        return self.appended - (self.free() - reserved)

    def survivors(self, end: int, k: int, reserved: int) -> int:
        """Of k blocks appended up to position ``end`` (the first of them, by content, appended last), how many
        the head has not evicted yet: those are the first by content."""
        return max(0, min(k, end - self.head(reserved)))

    def lookup(self, j: int, c: int, reserved: int = 0) -> tuple[int, int, int]:
        """Request j's cached prefix at admission: (hit tokens, of which held by running requests, of which the
        group's prompt). The group's prompt while held, else (reuse) what survives of it in the free queue, then
        (reuse, j preempted) what survives of j's own blocks after it; at most c - 1 tokens."""
        bs, g = self.bs, self.group[j]
        held = self.group_tokens.get(g, 0) if g is not None else 0
        gb = held // bs
        if not held and self.reuse and g in self.group_run:
            gb = self.survivors(*self.group_run[g], reserved)
        total = gb
        if self.reuse and j in self.run:
            end, k, sb = self.run[j]
            if gb >= sb:  # a prefix: the group's blocks, then j's own that survive from sb on
                total = max(gb, sb + self.survivors(end, k, reserved))
        total = max(0, min(total, (c - 1) // bs))
        held_blocks = min(held // bs, total)
        return total * bs, held_blocks * bs, min(gb, total) * bs

    def used(self) -> int:
        own = sum(math.ceil(x / self.bs) - self.shared.get(j, 0) // self.bs for j, x in self.tokens.items())
        groups = sum(t // self.bs for t in self.group_tokens.values())
        return own + groups

    def free(self) -> int:
        return self.cap - self.used()

    def hit(self, group: int | None) -> int:
        return self.group_tokens.get(group, 0) if group is not None else 0

    def add(self, j: int, tokens: int, shared: int):
        self.tokens[j] = tokens
        if shared:
            self.shared[j] = shared

    def publish(self, j: int, group: int, prompt: int):
        """j has its prompt scheduled: its full prompt blocks become the group's cached prompt. For the first of its
        group (j references none of it); or, when j found only part of it cached (taken back from the free queue)
        and computed the rest, the group's prompt is its full blocks again (j's copy of the rest is the group's)."""
        hg = (prompt - 1) // self.bs * self.bs
        if not self.shared.get(j):
            if hg > 0:
                self.group_tokens[group] = hg
                self.shared[j] = hg
                self.group_run.pop(group, None)
        elif hg > self.group_tokens.get(group, 0):
            self.group_tokens[group] = hg
            self.shared[j] = hg

    def remove(self, j: int, preempted: bool = False):
        """j leaves the running set; its group's prompt blocks go when no running request references them. Freed
        blocks join the free queue's tail, the request's last block first (vLLM frees a block table reversed)."""
        tokens = self.tokens.pop(j)
        g = self.group[j]
        sb = self.shared.get(j, 0) // self.bs
        own = math.ceil(tokens / self.bs) - sb
        self.appended += own
        if preempted:
            self.run[j] = (self.appended, tokens // self.bs - sb, sb)
        if self.shared.pop(j, 0) and not any(self.group[k] == g for k in self.shared):
            gb = self.group_tokens.pop(g) // self.bs
            self.appended += gb
            self.group_run[g] = (self.appended, gb)

    def new_block(self, j: int) -> bool:
        """Whether decoding request j's next token starts a block."""
        return self.tokens[j] % self.bs == 0


def reference_replica(
    prompt_tokens,
    response_tokens,
    max_num_seqs: int,
    kv_capacity_tokens: int,
    decode: DecodeCoefficients,
    prefill: PrefillCoefficients,
    rules: SchedulerRules | None = None,
    prompt_groups=None,
) -> dict:
    rules = rules or SchedulerRules()
    prompt = [int(x) for x in np.asarray(prompt_tokens).ravel()]
    response = [int(x) for x in np.asarray(response_tokens).ravel()]
    n = len(prompt)
    if len(response) != n:
        raise ValueError("prompt_tokens and response_tokens must have the same length")
    if any(r < 1 for r in response) or any(p < 0 for p in prompt):
        raise ValueError("response_tokens must be >= 1 and prompt_tokens >= 0")
    max_num_seqs = int(max_num_seqs)
    if max_num_seqs < 1 or max_num_seqs > decode.max_batch:
        raise ValueError(f"max_num_seqs ({max_num_seqs}) must be in 1..{decode.max_batch}")
    group: list[int | None] = [None] * n
    if rules.prefix_caching and prompt_groups is not None:
        group = [int(g) for g in np.asarray(prompt_groups).ravel()]
    bs = rules.block_size
    cache = _Cache(bs, int(kv_capacity_tokens) // bs, group, rules.prefix_caching and rules.cache_freed_blocks)
    wm = rules.watermark_blocks(cache.cap)  # blocks an admission leaves free
    budget = math.inf if rules.max_num_batched_tokens is None else rules.max_num_batched_tokens
    chunked = rules.chunked_prefill
    for j in range(n):  # a request that cannot hold its whole context alone can never finish
        if math.ceil((prompt[j] + response[j] - (1 if chunked else 0)) / bs) > cache.cap:
            raise EngineCapacityError(f"request {j} cannot fit the KV cache of {kv_capacity_tokens} tokens")

    finish = np.zeros(n, dtype=np.float64)
    generated = [0] * n
    was_preempted = [False] * n
    waiting: deque[int] = deque(range(n))
    running: list[int] = []  # admission order; the last is the most recently admitted
    decoding: set[int] = set()
    prefilling: int | None = None

    out = dict.fromkeys(
        (
            "num_iterations",
            "num_preemptions",
            "peak_kv_tokens",
            "peak_running",
            "recomputed_tokens",
            "decoded_tokens",
            "prefill_tokens",
            "prefix_hit_tokens",
        ),
        0,
    )
    clock = decode_total = prefill_total = 0.0

    def preempt_last():
        nonlocal prefilling
        j = running.pop()
        cache.remove(j, preempted=True)
        decoding.discard(j)
        if j == prefilling:
            prefilling = None
        was_preempted[j] = True
        waiting.appendleft(j)
        out["num_preemptions"] += 1

    def context(j: int) -> int:
        return prompt[j] + generated[j]

    def note_peaks():
        out["peak_kv_tokens"] = max(out["peak_kv_tokens"], cache.used() * bs)

    def finish_request(j: int):
        running.remove(j)
        decoding.discard(j)
        cache.remove(j)
        finish[j] = clock

    max_rounds = 20 * (sum(response) + sum(prompt) + 1) * (n + 1) + 1000
    for _ in range(max_rounds):
        if not running and not waiting:
            break
        if not chunked:
            # 1. admission round
            contexts, hits = [], []
            while waiting and len(running) < max_num_seqs:
                j = waiting[0]
                c = context(j)
                hit = cache.hit(group[j])
                own = math.ceil(c / bs) - hit // bs
                nxt = sum(cache.new_block(r) for r in running) + (c % bs == 0)
                if cache.used() + own + nxt + wm > cache.cap:
                    break
                if contexts and sum(contexts) - sum(hits) + c - hit > budget:
                    break
                waiting.popleft()
                running.append(j)
                decoding.add(j)
                cache.add(j, c, hit)
                if hit:
                    out["prefix_hit_tokens"] += hit
                elif group[j] is not None:
                    cache.publish(j, group[j], prompt[j])
                if was_preempted[j]:
                    out["recomputed_tokens"] += c - hit
                    was_preempted[j] = False
                contexts.append(c)
                hits.append(hit)
            if contexts:
                dt = prefill_s(prefill, np.array(contexts), np.array(hits))
                prefill_total += dt
                clock += dt
                out["prefill_tokens"] += sum(contexts) - sum(hits)
            out["peak_running"] = max(out["peak_running"], len(running))
            note_peaks()
            # 2. stop / error
            if not running:
                raise EngineCapacityError(f"request {waiting[0]} cannot fit the KV cache")
            # 3. preemption
            while running and cache.used() + sum(cache.new_block(r) for r in running) > cache.cap:
                preempt_last()
            if not running:
                continue
            # 4. one decode iteration
            b = len(running)
            dt = decode_iteration_s(decode, b, float(sum(cache.tokens[r] for r in running)))
            decode_total += dt
            clock += dt
            out["num_iterations"] += 1
            out["decoded_tokens"] += b
            for j in running:
                cache.tokens[j] += 1
            note_peaks()
            for j in list(running):
                generated[j] += 1
                if generated[j] >= response[j]:
                    finish_request(j)
            continue

        # chunked: one iteration
        preempted = False
        while cache.used() + sum(cache.new_block(r) for r in decoding) > cache.cap:
            preempt_last()
            preempted = True
        b = len(decoding)
        k_tokens = float(sum(cache.tokens[r] for r in decoding))
        left = budget - b
        chunks: list[tuple[int, int]] = []
        completed: list[int] = []
        # blocks the decoders take in this iteration, charged before any prefill chunk
        reserved = sum(cache.new_block(r) for r in decoding)
        if prefilling is not None:
            j = prefilling
            a = cache.tokens[j]
            chunk = min(context(j) - a, left)
            need = math.ceil((a + chunk) / bs) - math.ceil(a / bs)
            if cache.free() - reserved < need:
                assert running[-1] == j
                preempt_last()
                preempted = True
            else:
                cache.tokens[j] = a + chunk
                left -= chunk
                chunks.append((a, chunk))
                if a + chunk == context(j):
                    completed.append(j)
                    prefilling = None
        if not preempted:
            while waiting and left > 0 and len(running) < max_num_seqs:
                j = waiting[0]
                c = context(j)
                hit, held, group_part = cache.lookup(j, c, reserved)
                chunk = min(c - hit, left)
                need = math.ceil((hit + chunk) / bs) - held // bs  # blocks hit again leave the free queue too
                if cache.free() - reserved - wm < need:
                    break
                waiting.popleft()
                running.append(j)
                g = group[j]
                shared = held
                if not held and group_part:  # the group's prompt, taken again from the free queue: held again
                    del cache.group_run[g]
                    cache.group_tokens[g] = shared = group_part
                cache.run.pop(j, None)
                cache.add(j, hit + chunk, shared)
                if hit:
                    out["prefix_hit_tokens"] += hit
                if was_preempted[j]:
                    out["recomputed_tokens"] += c - hit
                    was_preempted[j] = False
                left -= chunk
                chunks.append((hit, chunk))
                if hit + chunk == c:
                    completed.append(j)
                    if group[j] is not None:
                        cache.publish(j, group[j], prompt[j])
                else:
                    prefilling = j
        if b == 0 and not chunks:
            if not running and waiting and not preempted:
                raise EngineCapacityError(f"request {waiting[0]} cannot fit the KV cache")
            continue
        out["peak_running"] = max(out["peak_running"], len(running))
        dt = mixed_iteration_s(decode, prefill, b, k_tokens, chunks)
        dec = decode_iteration_s(decode, b, k_tokens) if b else 0.0
        clock += dt
        decode_total += dec
        prefill_total += dt - dec
        out["prefill_tokens"] += sum(n_ for _, n_ in chunks)
        out["num_iterations"] += 1
        out["decoded_tokens"] += b
        for j in decoding:
            cache.tokens[j] += 1
        note_peaks()
        for j in list(decoding):
            generated[j] += 1
            if generated[j] >= response[j]:
                finish_request(j)
        for j in completed:
            generated[j] += 1
            if generated[j] >= response[j]:
                finish_request(j)
            else:
                decoding.add(j)
    else:  # pragma: no cover - would be a bug in this file
        raise RuntimeError("reference_replica did not terminate")

    out.update(
        finish_s=finish,
        makespan_s=clock,
        decode_s=decode_total,
        prefill_s=prefill_total,
    )
    return out
