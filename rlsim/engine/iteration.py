"""The iteration cost law of an engine replica (rlsim.engine.replica's module docstring, step 3; docs/reference.md
section 6): a decode iteration's time as the roofline max of a memory line and a compute line in the batch and
its cached tokens (with a CPU floor and an overhead per batch size), a prefill round's time in its tokens and
their squares (causal attention), and the two in one forward pass under chunked prefill. The coefficients are
what the roofline (rlsim.run.costs) or a fitted profile gives; the compiled kernel takes them as arrays."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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


def prefill_s(
    prefill: PrefillCoefficients, context_tokens: np.ndarray, cached_tokens: np.ndarray | None = None
) -> float:
    """Time of one admission round that prefills contexts of the given lengths, of which ``cached_tokens`` (default
    none) come from the prefix cache."""
    c = np.asarray(context_tokens, dtype=np.float64)
    if c.size == 0:
        return 0.0
    h = np.zeros_like(c) if cached_tokens is None else np.asarray(cached_tokens, dtype=np.float64)
    return float(
        prefill.overhead_s + prefill.per_token_s * (c - h).sum() + prefill.per_token_sq_s * (c * c - h * h).sum()
    )


def mixed_iteration_s(
    decode: DecodeCoefficients,
    prefill: PrefillCoefficients,
    batch: int,
    context_tokens: float,
    chunks: list[tuple[int, int]],
) -> float:
    """One chunked-prefill iteration: ``batch`` decoding sequences with ``context_tokens`` cached tokens and prefill
    chunks given as (start position, tokens), in one forward pass (module docstring, step 3)."""
    tok = float(sum(n for _, n in chunks))
    sq = float(sum((a + n) * (a + n) - a * a for a, n in chunks))
    prefill_compute = prefill.per_token_s * tok + prefill.per_token_sq_s * sq
    gpu = max(
        decode.mem_intercept_s[batch] + decode.mem_slope_s_per_token * context_tokens,
        decode.compute_intercept_s[batch] + decode.compute_slope_s_per_token * context_tokens + prefill_compute,
        decode.floor[batch],
    )
    return float(gpu + decode.overhead_s[batch] + (prefill.overhead_s if tok > 0 else 0.0))
