"""slime's trainer layout as rlsim's ``training`` section: slime trains with Megatron (``--train-backend``
megatron, its only choice: THUDM/slime@v0.3.1 slime/utils/arguments.py:1539) and turns the distributed optimizer
on itself (slime/backends/megatron_utils/arguments.py:149); the script's Megatron flags give the layout.

* ``--tensor-model-parallel-size``, ``--pipeline-model-parallel-size``, ``--context-parallel-size``,
  ``--expert-model-parallel-size`` (1 each in Megatron-LM), ``--expert-tensor-parallel-size`` (None: the TP,
  NVIDIA/Megatron-LM@core_v0.19.0 megatron/training/arguments.py:569-570).
* ``--recompute-granularity`` full / selective (Megatron's default: none).
* ``--optimizer-cpu-offload`` (Megatron-LM arguments.py:2781): Adam's state and step on the CPU, rlsim
  training.offload_optimizer.
* ``--use-dynamic-batch-size`` with ``--max-tokens-per-gpu``: micro-batches packed to at most max_tokens_per_gpu
  x CP tokens each (slime/utils/dp_schedule.py:28-30; arguments.py:1809 requires the budget), rlsim's packed bins
  of that many tokens per data-parallel rank; otherwise ``--micro-batch-size`` sequences (1: arguments.py:706).
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.adapter import ImportConfigError, Source
from rlsim.frameworks.common import as_int

SPEC = (
    ("tensor-model-parallel-size", "training.tensor_parallel_size", "Megatron TP"),
    ("pipeline-model-parallel-size", "training.pipeline_parallel_size", "Megatron PP"),
    ("context-parallel-size", "training.context_parallel_size", "Megatron CP"),
    ("expert-model-parallel-size", "training.expert_parallel_size", "Megatron EP"),
    ("expert-tensor-parallel-size", "training.expert_tensor_parallel_size", "None: the TP (Megatron)"),
    ("recompute-granularity", "training.activation_recompute", "full / selective; None: none"),
    ("optimizer-cpu-offload", "training.offload_optimizer", "Adam on the CPU"),
    ("use-dynamic-batch-size", "training.sequence_packing", "true: bins of max-tokens-per-gpu x CP tokens"),
    ("max-tokens-per-gpu", "training.packing_tokens", "with use-dynamic-batch-size (required then)"),
    ("micro-batch-size", "training.micro_batch_size", "sequences per micro-batch, unpacked"),
)


def training(src: Source) -> dict[str, Any]:
    """The ``training`` section of a slime launch (module docstring)."""
    tp = as_int(src, "tensor-model-parallel-size")
    cp = as_int(src, "context-parallel-size")
    etp = src.get("expert-tensor-parallel-size")
    recompute = src.get("recompute-granularity")
    if recompute not in (None, "full", "selective"):
        raise ImportConfigError(f"--recompute-granularity: {recompute!r} is not full or selective; fix it")
    out: dict[str, Any] = {
        "backend": "megatron",
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": as_int(src, "pipeline-model-parallel-size"),
        "context_parallel_size": cp,
        "expert_parallel_size": as_int(src, "expert-model-parallel-size"),
        "expert_tensor_parallel_size": tp if etp is None else as_int(src, "expert-tensor-parallel-size"),
        "distributed_optimizer": True,
        "activation_recompute": recompute or "none",
        "offload_optimizer": bool(src.get("optimizer-cpu-offload")),
    }
    if src.get("use-dynamic-batch-size"):
        if not src.given("max-tokens-per-gpu"):
            raise ImportConfigError("--max-tokens-per-gpu: not set with --use-dynamic-batch-size (slime requires it)")
        out.update(sequence_packing=True, micro_batch_size=1, packing_tokens=as_int(src, "max-tokens-per-gpu") * cp)
    else:
        out.update(sequence_packing=False, micro_batch_size=as_int(src, "micro-batch-size"))
    return out
