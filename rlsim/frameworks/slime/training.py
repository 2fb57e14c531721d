"""slime's trainer: the Megatron flags of a slime launch as rlsim's ``training`` section (slime trains with
Megatron-LM; its flags pass through Megatron's argument parser, read at THUDM/slime@v0.3.1 a6272da).

* Layout: ``--tensor-model-parallel-size``, ``--pipeline-model-parallel-size``, ``--context-parallel-size``,
  ``--expert-model-parallel-size``, ``--expert-tensor-parallel-size`` (Megatron's defaults: 1; the expert TP
  defaults to the TP); slime always turns on the distributed optimizer and bf16
  (``slime/backends/megatron_utils/arguments.py:147-150``).
* Micro-batches: ``--use-dynamic-batch-size`` packs bins of ``--max-tokens-per-gpu`` x the CP size tokens
  (``slime/utils/dp_schedule.py:120``), else ``--micro-batch-size`` sequences.
* ``--recompute-granularity`` full / selective (Megatron's), none without it.
* ``--optimizer-cpu-offload`` puts ``--optimizer-offload-fraction`` (1.0) of the optimizer on the host
  (Megatron-Core's hybrid optimizer); ``--use-precision-aware-optimizer`` keeps the master as bf16 remainders.
* The reference model (``--ref-load``) waits in pinned host memory and is swapped into the actor's parameters for
  its pass (``slime/utils/tensor_backper.py:59``, ``backends/megatron_utils/actor.py:123-126, 429``):
  training.reference_on_host.
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.adapter import Row, Source
from rlsim.frameworks.common import as_float, as_int

ROWS = (
    Row("tensor-model-parallel-size", 1, "training.tensor_parallel_size", "Megatron TP"),
    Row("pipeline-model-parallel-size", 1, "training.pipeline_parallel_size", "Megatron PP"),
    Row("context-parallel-size", 1, "training.context_parallel_size", "Megatron CP"),
    Row("expert-model-parallel-size", 1, "training.expert_parallel_size", "Megatron EP"),
    Row("expert-tensor-parallel-size", None, "training.expert_tensor_parallel_size", "None: the TP"),
    Row("use-dynamic-batch-size", False, "training.sequence_packing", "bins of max-tokens-per-gpu x CP tokens"),
    Row("max-tokens-per-gpu", None, "training.packing_tokens", "with dynamic batch size (x the CP size)"),
    Row("micro-batch-size", 1, "training.micro_batch_size", "without dynamic batch size"),
    Row("recompute-granularity", None, "training.activation_recompute", "full / selective; None: none"),
    Row("optimizer-cpu-offload", False, "training.offload_optimizer", "Megatron-Core hybrid CPU Adam"),
    Row("optimizer-offload-fraction", 1.0, "training.offload_optimizer_fraction", "its host share"),
    Row("use-precision-aware-optimizer", False, "training.precision_aware_optimizer", "bf16 master remainders"),
)


def training(src: Source, kl_reference: bool) -> dict[str, Any]:
    """The ``training`` section of a slime launch."""
    tp, cp = as_int(src, "tensor-model-parallel-size"), as_int(src, "context-parallel-size")
    out: dict[str, Any] = {
        "backend": "megatron",
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": as_int(src, "pipeline-model-parallel-size"),
        "context_parallel_size": cp,
        "expert_parallel_size": as_int(src, "expert-model-parallel-size"),
        "expert_tensor_parallel_size": as_int(src, "expert-tensor-parallel-size")
        if src.get("expert-tensor-parallel-size") is not None
        else tp,
        "distributed_optimizer": True,
        "precision_aware_optimizer": bool(src.get("use-precision-aware-optimizer")),
        "reference_on_host": kl_reference,
    }
    if src.get("use-dynamic-batch-size") and src.get("max-tokens-per-gpu") is not None:
        out.update(sequence_packing=True, micro_batch_size=1, packing_tokens=as_int(src, "max-tokens-per-gpu") * cp)
    else:
        out.update(sequence_packing=False, remove_padding=True, micro_batch_size=as_int(src, "micro-batch-size"))
    granularity = src.get("recompute-granularity")
    out["activation_recompute"] = granularity if granularity in ("full", "selective") else "none"
    if src.get("optimizer-cpu-offload"):
        out.update(offload_optimizer=True, offload_optimizer_fraction=as_float(src, "optimizer-offload-fraction"))
    return out
