"""What a training GPU leaves the trainer's tensors: the memory CUDA reports, less what sits outside PyTorch's
allocator (the CUDA context, library workspaces, NCCL's buffers), less what a colocated engine keeps, divided by
the caching allocator's fragmentation. rlsim.trainer.memory checks the trainer's peak against it.

Each reserve and its source (docs/frameworks.md, "Offload and memory headroom"):

* Memory CUDA reports: ``gpu.device_memory_bytes`` (what vLLM's gpu_memory_utilization multiplies too), not the
  datasheet's decimal figure.
* Outside the allocator, per process: NON_TORCH_BYTES, vLLM's own profile of it on an H100 ("non_torch_memory takes
  1.27GiB": CUDA context, cuBLAS workspaces, NCCL communicators; the log in vllm-project/vllm pull 11743).
* A colocated engine (vLLM) that does not sleep keeps its whole share, ``engine.gpu_memory_utilization`` x the
  memory CUDA reports (vLLM sizes its KV cache to fill it: vllm/v1/worker/gpu_worker.py determine_available_memory).
  One that sleeps (level 1: weights to the host, KV cache freed) keeps its process's non-torch memory and its CUDA
  graph pool, which level-1 sleep leaves resident (vllm-project/vllm pull 56373: "Level-1 cuMem sleep releases
  weights and KV cache, but leaves graph executables and native CUDA graph pools resident"). The pool holds the
  activations of the largest captured batch, whose size follows the hidden size at vLLM's fixed capture sizes; the
  one measurement, 1,503,657,984 bytes for Kimi-K2.6 (hidden 7168) in vllm-project/vllm issue 47654, scales to
  other models by hidden size: CUDA_GRAPH_BYTES_PER_HIDDEN.
* Fragmentation of PyTorch's caching allocator: what it reserves over what it allocates at the peak,
  FRAGMENTATION (a DeepSpeed trainer's "Max_MA 46.18 GB ... Max_CA 51 GB", vllm-project/vllm issue 17117:
  51 / 46.18 - 1), for every framework: NeMo RL leaves PYTORCH_CUDA_ALLOC_CONF unset (NVIDIA-NeMo/RL@v0.7.0
  nemo_rl/models/policy/workers/megatron_policy_worker.py:1463-1474 names expandable segments as a recipe option),
  so do OpenRLHF and TRL; verl's trainer turns expandable segments on (verl@v0.7.0
  verl/workers/megatron_workers.py:716, fsdp_workers.py:771; v0.6.1 :618, :746), which strands less memory
  between segments, but rlsim has no measurement of how much less and prices the same reserve.

``training.memory_fraction`` set: the flat share of ``gpu.memory_bytes`` instead (rlsim's rule before these). A CPU
platform (rlsim-real's runs) has no CUDA reserves: 0.9 of its memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlsim.schema import Scenario

NON_TORCH_BYTES = 1.27 * 2**30
CUDA_GRAPH_BYTES_PER_HIDDEN = 1_503_657_984 / 7168
FRAGMENTATION = 51.0 / 46.18 - 1.0  # 0.104
CPU_PLATFORM_FRACTION = 0.9


@dataclass(frozen=True)
class Headroom:
    """Bytes of one training GPU: what CUDA reports, the reserves, and what the trainer's tensors may take."""

    device_bytes: float
    non_torch_bytes: float
    engine_bytes: float
    fragmentation: float
    budget_bytes: float

    def describe(self) -> str:
        """The budget's arithmetic, the GPU's memory stated once (GB and GiB) as every memory message does."""
        if not self.non_torch_bytes and not self.engine_bytes and not self.fragmentation:
            b = self.device_bytes
            return f"{self.budget_bytes / b:.0%} of the datasheet's {b / 1e9:.1f} GB ({b / 2**30:.1f} GiB)"
        dev = f"{self.device_bytes / 1e9:.1f} GB ({self.device_bytes / 2**30:.1f} GiB, as CUDA reports it)"
        parts = [f"{dev} less {self.non_torch_bytes / 1e9:.1f} outside PyTorch"]
        if self.engine_bytes:
            parts.append(f"{self.engine_bytes / 1e9:.1f} for the colocated engine")
        text = ", ".join(parts)
        if self.fragmentation:
            text += f", over 1 + {self.fragmentation:.0%} allocator fragmentation"
        return text


def engine_reserve_bytes(scenario: Scenario) -> float:
    """What a colocated engine keeps on a training GPU while the trainer runs (0 on separate GPUs)."""
    hw = scenario.hardware
    if hw.placement != "colocated":
        return 0.0
    if not scenario.weight_sync.engine_sleeps:
        return scenario.engine.gpu_memory_utilization * hw.engine_memory_bytes
    return NON_TORCH_BYTES + CUDA_GRAPH_BYTES_PER_HIDDEN * scenario.model.hidden_size


def headroom(scenario: Scenario) -> Headroom:
    """The trainer's memory budget on one of its GPUs."""
    hw, tr = scenario.hardware, scenario.training
    if tr.memory_fraction is not None:
        budget = hw.gpu.memory_bytes * tr.memory_fraction
        return Headroom(hw.gpu.memory_bytes, 0.0, 0.0, 0.0, budget)
    if hw.gpu.platform == "cpu":
        return Headroom(hw.gpu.memory_bytes, 0.0, 0.0, 0.0, hw.gpu.memory_bytes * CPU_PLATFORM_FRACTION)
    device = hw.engine_memory_bytes
    engine = engine_reserve_bytes(scenario)
    budget = max(0.0, device - NON_TORCH_BYTES - engine) / (1.0 + FRAGMENTATION)
    return Headroom(device, NON_TORCH_BYTES, engine, FRAGMENTATION, budget)


def budget_bytes(scenario: Scenario) -> float:
    return headroom(scenario).budget_bytes
