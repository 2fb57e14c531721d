"""Weight sync through whole tensors: ``weight_sync.transfer`` per_tensor and bucketed (rlsim.trainer.sync
dispatches here). The trainer first gathers every tensor whole from its training layout (the resharding), then sends
the whole tensors on, one collective per tensor or per bucket; every engine GPU receives the whole model and its
engine keeps its own slice (``load_weights``; an expert-parallel engine drops the experts it does not hold).

What the frameworks run (docs/frameworks.md, "Weight sync per framework and mode"):

* verl, separate pools without a checkpoint engine (fully-async and one-step-off): every trainer rank calls
  ``full_tensor()`` on each parameter, rank 0 broadcasts it to every rollout GPU in one NCCL group spanning both
  pools, one tensor at a time (volcengine/verl@v0.7.0:recipe/fully_async_policy/fsdp_workers.py:85-110, the group
  of all actor and rollout workers: recipe/fully_async_policy/param_sync.py:70-79; the same loop at v0.6.1:
  recipe/fully_async_policy/fsdp_workers.py:69-91 and recipe/one_step_off_policy/fsdp_workers.py:82-107).
  per_tensor.
* verl's checkpoint engine (``async_training.checkpoint_engine.enable``, "largely copied from"
  MoonshotAI/checkpoint-engine): each trainer rank gathers every tensor and keeps every world-size-th one in host
  memory (fsdp_workers.py:117-131), copies it into pinned buckets of ``max(device_buffer_size_M, largest tensor)``
  (recipe/fully_async_policy/checkpoint_engine.py:309-316; device_buffer_size_M 4096 in
  recipe/fully_async_policy/config/fully_async_ppo_trainer.yaml:36), then bucket by bucket copies it back to the GPU
  and broadcasts it from its rank to every rank of the group (checkpoint_engine.py:483-501). bucketed,
  host_staged; new in v0.7.0 (v0.6.1 has no checkpoint engine).
* OpenRLHF: per parameter, ZeRO-3 gathers it (``GatheredParameters``) and DeepSpeed rank 0 broadcasts it to every
  vLLM rank (separate pools), or every rank clones it and the engines open its CUDA IPC handle (``colocate_all``)
  (OpenRLHF/OpenRLHF@v0.11.0:openrlhf/trainer/ray/ppo_actor.py:103, 420-480). per_tensor.
* slime: per pipeline stage, its first rank all-gathers the TP and EP shards and broadcasts 512 MiB buckets
  (``--update-weight-buffer-size``) to every engine GPU (THUDM/slime@v0.3.1:slime/backends/megatron_utils/
  update_weight/update_weight_from_distributed.py:136-240; slime/utils/arguments.py:517-519). bucketed.

The price (bytes and seconds; W the model's bytes in the training dtype, n_t the trainer's GPUs):

* gather: every GPU of one trainer copy (rlsim.trainer.sync.trainer_copy_span, g GPUs) assembles the whole
  model, an all-gather: (g - 1) / g x W over its per-GPU link (NVLink inside a domain, the NIC across);
* separate pools: W into every engine GPU through a pipelined broadcast over a group spanning both pools, W over
  the per-GPU link of that group; a checkpoint engine adds each trainer GPU's share W / n_t to host memory at the
  pageable copy rate (``costs.host_link_efficiency``) and back from pinned buffers at the host link's peak;
* colocated: each GPU assembles the whole model as rlsim.trainer.sync prices its broadcast path (the NVLink and
  NIC parts of the gather at once);
* one call per tensor (per_tensor) or per bucket (bucketed: ceil(W / bucket); host_staged: n_t x ceil(W / n_t /
  bucket), each rank's own buckets): the collective's latency (rlsim.trainer.training.latency_s) plus
  ``costs.weight_sync_call_s``. The steps run one after the other, as the frameworks' loops do.

What they hold while syncing (:func:`sync_buffer_bytes`): one whole tensor (per_tensor), one bucket (bucketed;
a checkpoint engine's trainer two: the host-to-device buffer and the broadcast buffer, checkpoint_engine.py:427-436),
NeMo RL's packed broadcast two buffers of min(2% of the GPU, 5 GiB) (NVIDIA-NeMo/RL@v0.7.0:
nemo_rl/utils/packed_tensor.py:23-36).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rlsim.trainer.training import latency_s, link_bandwidth

if TYPE_CHECKING:
    from rlsim.schema import ModelSpec, Scenario

# tensors of a decoder layer in an HF checkpoint: q, k, v, o projections and two norms; a dense MLP's gate, up and
# down projections; an MoE layer's router, each routed expert's three projections and one fused shared expert's three
ATTENTION_TENSORS = 6
MLP_TENSORS = 3
OUTER_TENSORS = 3  # embedding, final norm, LM head


def tensor_count(model: ModelSpec) -> int:
    """Tensors of the model's HF checkpoint, counted from its architecture (``weight_sync.tensors`` wins)."""
    dense_layers = model.num_layers if not model.is_moe else min(model.num_dense_layers, model.num_layers)
    moe_layers = model.num_layers - dense_layers
    moe = 1 + MLP_TENSORS * model.num_experts + (MLP_TENSORS if model.num_shared_experts else 0)
    return OUTER_TENSORS + model.num_layers * ATTENTION_TENSORS + dense_layers * MLP_TENSORS + moe_layers * moe


def tensors(scenario: Scenario) -> int:
    return scenario.weight_sync.tensors or tensor_count(scenario.model)


def gather_s(scenario: Scenario, span: int) -> float:
    """Seconds for every GPU of a ``span``-GPU trainer copy to assemble the whole model: an all-gather."""
    if span <= 1:
        return 0.0
    return (span - 1) / span * scenario.model.weight_bytes / link_bandwidth(scenario, span)


def calls(scenario: Scenario) -> int:
    """Collectives of one sync: one per tensor, or per bucket (a checkpoint engine: each trainer rank its own)."""
    ws, w = scenario.weight_sync, scenario.model.weight_bytes
    if ws.transfer == "per_tensor":
        return tensors(scenario)
    if ws.host_staged:
        n = scenario.hardware.num_train_gpus
        return n * math.ceil(w / n / ws.bucket_bytes)
    return math.ceil(w / ws.bucket_bytes)


def calls_s(scenario: Scenario, span: int) -> float:
    """Seconds of the per-call costs: the collective's latency over ``span`` GPUs plus the Python-side call."""
    return calls(scenario) * (latency_s(scenario, span) + scenario.costs.weight_sync_call_s)


def separate_parts(scenario: Scenario, span: int) -> tuple[float, float, float]:
    """(gather + transfer, host staging, per-call) seconds of a separate-pool sync; ``span``: one trainer copy."""
    hw, w = scenario.hardware, scenario.model.weight_bytes
    transfer = gather_s(scenario, span) + w / link_bandwidth(scenario, hw.num_gpus)
    host = 0.0
    if scenario.weight_sync.host_staged:
        share = w / hw.num_train_gpus
        link = hw.gpu.host_link_bandwidth_bytes_per_s
        host = share / (link * scenario.costs.host_link_efficiency) + share / link  # pageable out, pinned back in
    return transfer, host, calls_s(scenario, hw.num_gpus)


def sync_buffer_bytes(scenario: Scenario) -> tuple[float, float]:
    """(trainer GPU, engine GPU) bytes a sync holds beyond the weights: see the module docstring."""
    ws, m = scenario.weight_sync, scenario.model
    if ws.transfer == "per_tensor":
        largest = m.vocab_size * m.hidden_size * m.dtype_bytes  # the embedding (or LM head), the largest tensor
        return largest, largest
    if ws.transfer == "bucketed":
        return (2.0 if ws.host_staged else 1.0) * ws.bucket_bytes, ws.bucket_bytes
    if ws.transfer == "broadcast":
        packed = 2.0 * min(0.02 * scenario.hardware.gpu.memory_bytes, 5 * 2**30)
        return packed, packed
    return 0.0, 0.0
