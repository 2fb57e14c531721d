"""One step's generation: B = P x G requests spread over the engine replicas, each simulated by rlsim.engine.

Prompts are dealt to replicas round-robin with all G responses of a prompt on the same replica (as when a
framework sends a prompt with n=G), where they form one prompt group for prefix caching; replicas run in
parallel and the phase ends when the slowest finishes, so stragglers (long responses, a loaded replica) set the
rollout time without being modelled separately.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rlsim.engine import DecodeCoefficients, PrefillCoefficients, SchedulerRules, _arg, kernel, simulate_replicas


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
    scheduling ``rules`` (rlsim.engine.SchedulerRules; default: token-level rounds)."""
    n = len(response_tokens)
    prompt, response = (_arg(a, np.int64) for a in (prompt_tokens, response_tokens))  # the kernel's one type
    if prompt.shape != (n,):
        raise ValueError(f"prompt_tokens {prompt.shape} and response_tokens {response.shape} must be 1-D, same length")
    # each replica's requests in arrival order, its groups numbered from 0 (one compiled pass: rlsim.kernel)
    dealt = [np.empty(n, dtype=np.int64) for _ in range(3)]
    bounds = np.empty(replicas + 1, dtype=np.int64)
    n_groups = np.empty(replicas, dtype=np.int64)
    code = kernel().deal_round_robin(prompt, response, group_size, replicas, *dealt, bounds, n_groups)
    bad_group = int(np.searchsorted(bounds, -1 - code, side="right")) - 1 if code < 0 else replicas
    # every replica in one compiled call (rlsim.engine.simulate_replicas: simulate_replica on each in turn)
    _, stats = simulate_replicas(
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
    makespans = stats[:, 0].tolist()
    preemptions, iterations, decoded = (int(v) for v in stats[:, [4, 3, 8]].sum(axis=0))
    peak_kv = int(stats[:, 5].max()) if replicas else 0
    return RolloutResult(
        rollout_s=max(makespans) + overhead_s,
        prompt_tokens=int(prompt_tokens.sum()),
        response_tokens=int(response_tokens.sum()),
        num_preemptions=preemptions,
        num_iterations=iterations,
        mean_decode_batch=decoded / iterations if iterations else 0.0,
        peak_kv_tokens=peak_kv,
        replica_makespan_s=tuple(makespans),
    )
