"""SGLang as a rollout engine, for the importers (verl ``rollout.name: sglang``, NeMo RL ``generation.backend:
sglang``): what a framework's SGLang settings become in a scenario. Read in the sglang 0.5.6 and 0.5.12.post1 wheels
(PyPI; verl b178a3c pins 0.5.6 in setup.py, NeMo RL 7ea279a pins 0.5.12.post1 in pyproject.toml):

* ``mem_fraction_static`` is the share of each GPU for the weights and the KV pool; activations and CUDA graphs
  live in the rest (``server_args.py`` ``_handle_gpu_memory_settings``), so it becomes engine.gpu_memory_utilization
  with engine.activation_memory_fraction 0.
* ``max_running_requests`` unset: SGLang derives it from the KV pool, min(tokens // 2, a request pool of
  min(max(tokens / context_len x 512, 2048), 4096)) (0.5.6 ``managers/tp_worker.py``, 0.5.12.post1
  ``model_runner_kv_cache_mixin.py`` ``_resolve_max_num_reqs``): 4096 unless the pool holds under 8,192 tokens,
  where the KV cache binds first anyway. rlsim takes :data:`DERIVED_MAX_RUNNING_REQUESTS`.
* The scheduler (token pages, radix prefix cache, chunked prefill by GPU memory, the overlap scheduler): the
  ``sglang-0.5`` behaviour of rlsim/catalog/engines.yaml, which also says what is not modelled (SGLang's reserved-
  token admission).
"""

from __future__ import annotations

from typing import Any

BEHAVIOUR = "sglang-0.5"
DERIVED_MAX_RUNNING_REQUESTS = 4096  # SGLang's request pool cap; see the module docstring


def engine_section(
    tensor_parallel_size: int, mem_fraction_static: float, max_running_requests: int | None, version: str, who: str
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(engine section, software section, notes) for an SGLang engine set up by ``who`` (a framework and the key
    its settings came from), at SGLang ``version``."""
    notes = [
        f"{who}: SGLang {version} (rlsim engine behaviour {BEHAVIOUR}: token pages, radix prefix cache, chunked "
        "prefill by GPU memory, the overlap scheduler; its CPU costs are vLLM V1's, not fitted to SGLang, and its "
        "reserved-token admission is not modelled: rlsim/catalog/engines.yaml)"
    ]
    if max_running_requests is None:
        max_running_requests = DERIVED_MAX_RUNNING_REQUESTS
        notes.append(
            f"{who}: max_running_requests unset: SGLang derives it from its KV pool, "
            f"{DERIVED_MAX_RUNNING_REQUESTS} unless the pool is tiny (rlsim/frameworks/sglang.py)"
        )
    engine = {
        "tensor_parallel_size": int(tensor_parallel_size),
        "gpu_memory_utilization": float(mem_fraction_static),
        "activation_memory_fraction": 0.0,  # mem_fraction_static holds weights and KV only
        "max_num_seqs": int(max_running_requests),
        "behaviour": BEHAVIOUR,
    }
    return engine, {"engine": "sglang", "engine_version": version}, notes
