"""Plain, iteration-by-iteration reference for ``rlsim.engine.simulate_replica``.

Written from the rules in the ``rlsim.engine`` module docstring only (not from the compiled kernel). Every
decode iteration is simulated one at a time, so it is slow but easy to check against the text. One loop
round is:

1. admission (FCFS from the front of the waiting queue, no skipping ahead), then one prefill for all requests
   admitted in this round;
2. stop when nothing runs and the queue is empty; error when nothing runs and the queue is not empty;
3. preemption of the most recently admitted running sequence while the next iteration does not fit;
4. one decode iteration (every running sequence generates one token), then finishes.

Only meant for small cases in tests.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from rlsim.engine import (
    DecodeCoefficients,
    EngineCapacityError,
    PrefillCoefficients,
    decode_iteration_s,
    prefill_s,
)

__all__ = ["reference_replica"]


def reference_replica(
    prompt_tokens,
    response_tokens,
    max_num_seqs: int,
    kv_capacity_tokens: int,
    decode: DecodeCoefficients,
    prefill: PrefillCoefficients,
) -> dict:
    prompt = [int(x) for x in np.asarray(prompt_tokens).ravel()]
    response = [int(x) for x in np.asarray(response_tokens).ravel()]
    if len(prompt) != len(response):
        raise ValueError("prompt_tokens and response_tokens must have the same length")
    if any(r < 1 for r in response) or any(p < 0 for p in prompt):
        raise ValueError("response_tokens must be >= 1 and prompt_tokens >= 0")
    max_num_seqs = int(max_num_seqs)
    cap = int(kv_capacity_tokens)
    if max_num_seqs < 1 or max_num_seqs > decode.max_batch:
        raise ValueError(f"max_num_seqs ({max_num_seqs}) must be in 1..{decode.max_batch}")

    n = len(prompt)
    finish = np.zeros(n, dtype=np.float64)
    generated = [0] * n
    was_preempted = [False] * n
    waiting: deque[int] = deque(range(n))
    running: list[int] = []  # in admission order; the last one is the most recently admitted
    kv_used = 0

    clock = 0.0
    decode_total = 0.0
    prefill_total = 0.0
    num_iterations = 0
    num_preemptions = 0
    peak_kv = 0
    peak_running = 0
    recomputed = 0
    decoded = 0

    # Safety net against an accidental infinite loop in the reference itself.
    max_rounds = 10 * (sum(response) + 1) * (n + 1) + 1000

    rounds = 0
    while True:
        rounds += 1
        if rounds > max_rounds:  # pragma: no cover - would be a bug in this file
            raise RuntimeError("reference_replica did not terminate")

        # 1. Admission.
        admitted_contexts: list[int] = []
        while waiting and len(running) < max_num_seqs:
            j = waiting[0]
            c = prompt[j] + generated[j]
            if kv_used + c + (len(running) + 1) <= cap:
                waiting.popleft()
                running.append(j)
                kv_used += c
                admitted_contexts.append(c)
                if was_preempted[j]:
                    recomputed += c
                    was_preempted[j] = False
            else:
                break
        if admitted_contexts:
            dt = prefill_s(prefill, np.array(admitted_contexts, dtype=np.float64))
            prefill_total += dt
            clock += dt
        peak_running = max(peak_running, len(running))

        # 2. Stop / error.
        if not running:
            if not waiting:
                break
            j = waiting[0]
            raise EngineCapacityError(
                f"request {j} (prompt {prompt[j]} + response {response[j]} tokens) cannot fit the KV cache "
                f"of {cap} tokens"
            )

        # 3. Preemption.
        while running and kv_used + len(running) > cap:
            j = running.pop()
            kv_used -= prompt[j] + generated[j]
            was_preempted[j] = True
            waiting.appendleft(j)
            num_preemptions += 1
        if not running:
            # Only reachable when a lone sequence's context fills the whole cache (it can never finish);
            # the next round's admission fails and step 2 raises.
            continue

        # 4. One decode iteration.
        b = len(running)
        dt = decode_iteration_s(decode, b, float(kv_used))
        decode_total += dt
        clock += dt
        num_iterations += 1
        kv_used += b
        decoded += b
        peak_kv = max(peak_kv, kv_used)
        still_running = []
        for j in running:
            generated[j] += 1
            if generated[j] >= response[j]:
                finish[j] = clock
                kv_used -= prompt[j] + generated[j]
            else:
                still_running.append(j)
        running = still_running

    return {
        "finish_s": finish,
        "makespan_s": clock,
        "decode_s": decode_total,
        "prefill_s": prefill_total,
        "num_iterations": num_iterations,
        "num_preemptions": num_preemptions,
        "peak_kv_tokens": peak_kv,
        "peak_running": peak_running,
        "recomputed_tokens": recomputed,
        "decoded_tokens": decoded,
    }
