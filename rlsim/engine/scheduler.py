"""The engine's scheduling and paging rules (what rlsim.engine.replica simulates), apart from the compiled kernel.

Kept free of numba: rlsim.scenario needs it, and code that starts a vLLM engine in the same process imports the
scenario. (vLLM 0.32 on CPU scans every loaded module when its worker starts and fails on llvmlite's objects, so
nothing on that path may import numba before the engine is up.)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SchedulerRules"]


@dataclass(frozen=True)
class SchedulerRules:
    """How the engine schedules and pages (module docstring). The defaults are rlsim's earlier token-level rules;
    :func:`rlsim.scenario.rules.scheduler_rules` gives an engine's own."""

    block_size: int = 1
    chunked_prefill: bool = False
    # tokens per iteration (chunked) or per admission round's prefill (rounds); None: no limit (rounds only)
    max_num_batched_tokens: int | None = None
    prefix_caching: bool = False
    # the share of the KV blocks an admission must leave free (vLLM V0's watermark, 0.01 there: BlockSpaceManager
    # can_allocate, free - required >= int(watermark x blocks)); decode growth may use them. V1 has none.
    kv_watermark: float = 0.0
    # with prefix caching: freed blocks stay cached until their slot is reused (vLLM V1's free queue, evicted from
    # its head), so a preempted request readmitted soon hits its own blocks and the group's prompt again
    cache_freed_blocks: bool = False
    # the fast model of a KV-cache thrash (chunked prefill only): once the engine has preempted, the waiting
    # queue's front is hosted in the free blocks in aggregate instead of readmitted and preempted one event at a
    # time (rlsim.engine.kernel._host_tail); False: every preemption simulated (the reference)
    fast_thrash: bool = False

    def __post_init__(self):
        if self.block_size < 1:
            raise ValueError(f"block_size ({self.block_size}) must be >= 1")
        if self.chunked_prefill and self.max_num_batched_tokens is None:
            raise ValueError("chunked prefill needs max_num_batched_tokens")
        if self.max_num_batched_tokens is not None and self.max_num_batched_tokens < 1:
            raise ValueError(f"max_num_batched_tokens ({self.max_num_batched_tokens}) must be >= 1")
        if not 0.0 <= self.kv_watermark < 1.0:
            raise ValueError(f"kv_watermark ({self.kv_watermark}) must be in [0, 1)")

    def watermark_blocks(self, capacity_blocks: int) -> int:
        """The blocks an admission leaves free in a cache of ``capacity_blocks`` (vLLM's int(watermark x blocks))."""
        return int(self.kv_watermark * capacity_blocks)
