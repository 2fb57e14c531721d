"""How a scenario's engine schedules and pages its KV cache: the engine section's own fields, else the named
engine behaviour's (``engine.behaviour``, rlsim/catalog/engines.yaml), else vLLM V1's defaults.

Token budgets are in tokens, block sizes in tokens per KV block; the defaults are vLLM's (V1 ``LLM`` class on GPUs,
the CPU platform's on CPUs, vLLM 0.5's admission rounds without chunked prefill), or a behaviour's own table by the
GPU's memory (SGLang's chunked_prefill_size: ``token_budget_by_memory_gib``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlsim import catalog
from rlsim.engine.scheduler import SchedulerRules
from rlsim.scenario import software

if TYPE_CHECKING:
    from rlsim.schema.scenario import Scenario


def scheduler_rules(scenario: Scenario) -> SchedulerRules:
    """The engine's scheduling and paging rules: engine fields, else the named behaviour's, else vLLM V1's."""
    eng = scenario.engine
    name = software.behaviour(scenario)  # engine.behaviour, else what the software section selects
    entry = catalog.engine(name) if name is not None else {}

    def pick(name: str, default: Any) -> Any:
        value = getattr(eng, name)
        return value if value is not None else entry.get(name, default)

    chunked = bool(pick("chunked_prefill", True))
    budget = eng.max_num_batched_tokens
    gpu = scenario.hardware.gpu
    on_cpu = gpu.platform == "cpu"
    by_memory = entry.get("token_budget_by_memory_gib")  # SGLang: chunked_prefill_size by the GPU's memory
    if budget is None and chunked and by_memory and not on_cpu:
        gib = scenario.hardware.engine_memory_bytes / 2**30
        budget = next(tokens for below, tokens in by_memory if below is None or gib < below)
    elif budget is None and chunked:
        if on_cpu:
            default = 4096 * eng.tensor_parallel_size
        else:  # vllm.LLM's budget at the reference V1 release (rlsim/catalog/software.yaml batch_defaults)
            limits = software.batch_defaults(
                software.V1_REFERENCE_RELEASE, "llm_class", gpu.name, scenario.hardware.engine_memory_bytes
            )
            default = limits["max_num_batched_tokens"]
        budget = max(default, eng.max_num_seqs)
    elif budget is None:
        budget = max(scenario.workload.max_prompt_tokens + scenario.workload.max_response_tokens, 2048)
    return SchedulerRules(
        block_size=int(pick("block_size", 128 if on_cpu else 16)),
        chunked_prefill=chunked,
        max_num_batched_tokens=int(budget),
        prefix_caching=bool(pick("prefix_caching", True)),
        kv_watermark=float(pick("kv_watermark", 0.0)),
        # vLLM V1 and SGLang keep freed blocks as evictable cache; rlsim models it with chunked prefill
        cache_freed_blocks=chunked,
        fast_thrash=eng.thrash_model == "fast",
    )
