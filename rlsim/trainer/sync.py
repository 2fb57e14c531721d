"""Weight sync: seconds to move the trainer's new weights into the generation engines, per shard and in parallel.

What the frameworks do (docs/reference.md section 11): every engine GPU receives its own tensor-parallel shard of the
weights at once, not the whole model through one GPU's link.

* Colocated (trainer and engines on the same GPUs; verl, NeMo RL colocated): each engine GPU's shard comes from
  the training shards of its own NVLink domain by device-to-device copy (CUDA IPC) and from other domains through
  its NIC when one model copy of the trainer spans several domains (resharding from the training layout to the
  generation layout). The copy into the engine's buffers reads and writes the shard once in HBM. Around it the
  engine wakes (weights back from host memory, KV cache re-allocated) and later sleeps again (weights to the
  host); ``costs.sleep_wake_overhead_s`` is the fixed part.
* Separate pools (NCCL broadcast from the trainer to the engines): each engine GPU receives its shard through
  its NIC (or NVLink when both pools share one NVLink domain), each trainer GPU of one model copy sends its part;
  a pipelined broadcast moves each byte over each link once, so the time is the larger of the two per-GPU
  volumes over the per-GPU bandwidth.

``weight_sync.transfer: per_tensor`` and ``bucketed`` (verl, OpenRLHF, slime and checkpoint engines: whole tensors
gathered on the trainer and sent to every engine GPU, one call per tensor or bucket) are rlsim.trainer.sync_gathered's.
``weight_sync.transfer: broadcast`` models what NeMo RL v0.5-v0.6 do instead: every GPU receives the whole model
(separate pools: one training rank broadcasts every tensor; colocated: every rank assembles the full tensors and
its engine keeps its slice). ``weight_sync.engine_sleeps: false`` (an engine without sleep mode) drops the
engine's host copies and the fixed part, ``weight_sync.sleep_level: 2`` (weights discarded) the host copies only.
``weight_sync.offload_trainer`` adds, when colocated, the trainer's weights, gradients and optimizer state going to
host memory before generation and back after it. Host copies run at ``costs.host_link_efficiency`` of the PCIe
peak. The coefficients are the scenario's (``s.costs``, a profile's folded in).

Units: bytes and seconds. Bytes moved are the training dtype's (an FP8 engine quantizes on load).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from rlsim.trainer import sync_gathered as gathered
from rlsim.trainer.memory import memory
from rlsim.trainer.training import layout_of, link_bandwidth

if TYPE_CHECKING:
    from rlsim.schema import Scenario


@dataclass(frozen=True)
class SyncTime:
    """Seconds of one weight sync, by part. ``engine_pause_s`` is what an in-flight update costs the engines."""

    transfer_s: float = 0.0  # shards over NVLink / NICs, in parallel
    copy_s: float = 0.0  # into the engine's buffers (colocated: device-to-device)
    host_s: float = 0.0  # colocated: engine weights to and from host memory around training (sleep / wake)
    latency_s: float = 0.0  # fixed: collective set-up, format conversion, engine bookkeeping

    @property
    def total_s(self) -> float:
        return sum(getattr(self, f.name) for f in fields(self))

    @property
    def engine_pause_s(self) -> float:
        """How long the engines stop for an in-flight update: the receive and the copy."""
        return self.transfer_s + self.copy_s


def trainer_copy_span(scenario: Scenario) -> int:
    """GPUs that hold one full copy of the trained weights (the senders' group)."""
    lay = layout_of(scenario)
    if scenario.training.backend == "fsdp":
        return lay.n
    dense_span = lay.t * lay.p
    expert_span = lay.e * lay.et * lay.p if scenario.model.is_moe else 0
    return max(dense_span, expert_span)


def sender_bytes(scenario: Scenario) -> float:
    """Bytes the most loaded trainer GPU of one model copy sends: its share of the dense and of the expert
    weights (Megatron spreads dense weights over t x p GPUs, experts over e x et x p)."""
    lay, m = layout_of(scenario), scenario.model
    if scenario.training.backend == "fsdp":
        return m.weight_bytes / lay.n
    expert = m.expert_params * m.dtype_bytes
    return (m.weight_bytes - expert) / (lay.t * lay.p) + (expert / (lay.e * lay.et * lay.p) if m.is_moe else 0.0)


def engine_shard_bytes(scenario: Scenario) -> float:
    """Bytes of weights each engine GPU keeps, in the training dtype: its tensor-parallel shard; under expert
    parallelism its share of the dense weights and of the experts (``Scenario.engine_weight_bytes_per_gpu``)."""
    if not scenario.engine.expert_parallel:
        return scenario.model.weight_bytes / scenario.engine.tensor_parallel_size
    return scenario.model.weight_bytes * scenario.engine_weight_bytes_per_gpu / scenario.engine_weight_bytes


def weight_sync_time(scenario: Scenario) -> SyncTime:
    hw = scenario.hardware
    shard = engine_shard_bytes(scenario)
    span = trainer_copy_span(scenario)
    send = sender_bytes(scenario)
    domain = hw.nvlink_domain
    transfer_mode = scenario.weight_sync.transfer
    whole = transfer_mode in ("per_tensor", "bucketed")  # whole tensors, one call each (rlsim.trainer.sync_gathered)
    if hw.placement == "colocated":
        # sharded: each GPU assembles its engine shard; broadcast, per_tensor, bucketed: each GPU assembles every
        # full tensor (NeMo RL's Megatron-Bridge export_hf_weights, verl's full_tensor(), OpenRLHF's ZeRO-3 gather
        # on every rank) and keeps its slice
        need = shard if transfer_mode == "sharded" else scenario.model.weight_bytes
        remote = max(0.0, 1.0 - domain / span)  # the part held outside this NVLink domain
        transfer = max(
            need * remote / (hw.nic_bandwidth_bytes_per_s * scenario.costs.link_efficiency),
            need * (1.0 - remote) / (hw.gpu.link_bandwidth_bytes_per_s * scenario.costs.link_efficiency),
        )
        copy = 2.0 * shard / hw.gpu.hbm_bandwidth_bytes_per_s  # read and write once at the HBM peak
        sleeps = scenario.weight_sync.engine_sleeps
        backed_up = sleeps and scenario.weight_sync.sleep_level == 1  # level 2 discards the weights
        host_bytes = 2.0 * scenario.engine_weight_bytes_per_gpu if backed_up else 0.0
        if scenario.weight_sync.offload_trainer:
            mem = memory(scenario)
            host_bytes += 2.0 * (mem.weights_grads_bytes + mem.optimizer_bytes)
        host = host_bytes / (hw.gpu.host_link_bandwidth_bytes_per_s * scenario.costs.host_link_efficiency) + (
            scenario.costs.sleep_wake_overhead_s if sleeps else 0.0
        )
        calls = gathered.calls_s(scenario, span) if whole else 0.0
        return SyncTime(transfer, copy, host, scenario.costs.weight_sync_latency_s + calls)
    if whole:  # the trainer gathers whole tensors, every engine GPU receives them all; the engines wait for all of
        # it (verl pauses its rollouter around the whole sync: recipe/fully_async_policy/param_sync.py:97-124)
        moved, staged, calls = gathered.separate_parts(scenario, span)
        copy = 2.0 * shard / hw.gpu.hbm_bandwidth_bytes_per_s
        return SyncTime(moved + staged + calls, copy, latency_s=scenario.costs.weight_sync_latency_s)
    bw = link_bandwidth(scenario, hw.num_gpus)
    if scenario.weight_sync.transfer == "broadcast":  # the whole model leaves one GPU; a pipelined broadcast moves it
        return SyncTime(transfer_s=scenario.model.weight_bytes / bw, latency_s=scenario.costs.weight_sync_latency_s)
    return SyncTime(transfer_s=max(shard, send) / bw, latency_s=scenario.costs.weight_sync_latency_s)
