"""The rollout engine: one inference-engine replica doing continuous batching (``replica``: vLLM's scheduling,
paged KV cache, prefix caching, recompute preemption), its compiled kernel (``kernel``, built ahead of time by
``kernel_build``), the scheduling and paging rules (``scheduler``) and one step's generation over the replicas
(``rollout``). Sizes in tokens, times in seconds.

May import: rlsim.host, rlsim.errors, rlsim.phases. Nothing here reads a scenario: the run layer hands it arrays.
"""
