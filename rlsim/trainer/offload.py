"""Offload of the trainer's state to host memory, as the frameworks do it: what crosses the host link and when, what
runs Adam on the CPU, what the GPU is relieved of, and whether a node's host memory holds it.

Three mechanisms (docs/frameworks.md, "Offload and memory headroom"):

* **CPU Adam** (``training.offload_optimizer``): the optimizer state lives on the host and the host updates it
  every optimizer step. Megatron (NeMo RL ``megatron_cfg.optimizer.optimizer_cpu_offload`` /
  ``optimizer_offload_fraction``; verl's ``override_optimizer_config``): Megatron-Core's HybridDeviceOptimizer puts
  the first ``offload_optimizer_fraction`` of a rank's parameters on the host (Megatron-LM@core_v0.17.1
  megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py:251-300) as fp32 copies (param_update_in_fp32,
  megatron/core/optimizer/__init__.py:519-529); each step copies their gradients to pinned host buffers
  (hybrid_optimizer.py:98-115), steps torch's AdamW on the CPU (__init__.py:10, hybrid_optimizer.py:170-174) and
  copies the fp32 result into the GPU parameters (hybrid_optimizer.py:117-125). Both copies are non_blocking, so
  PyTorch converts dtypes on the GPU and 4 bytes per parameter cross each way (pytorch aten/src/ATen/native/cuda/
  Copy.cu, copy_kernel_cuda: "If non_blocking is true - type conversions are performed on the GPU"). The rest of
  the parameters step on the GPU. DeepSpeed's ZeRO-Offload (OpenRLHF ``--adam_offload``: DeepSpeedCPUAdam,
  OpenRLHF@v0.9.5 openrlhf/utils/deepspeed/deepspeed.py:139, offload_optimizer device cpu,
  openrlhf/utils/deepspeed/deepspeed_utils.py:24-27): the fp32 gradient partition goes to the host (converted on the
  GPU, DeepSpeed@v0.19.5 deepspeed/runtime/zero/stage_1_and_2.py:1574-1577), DeepSpeedCPUAdam steps the fp32 master,
  which is cast to a bf16 host buffer and copied back (stage_1_and_2.py:2303-2315): 4 + 2 bytes. FSDP2's
  CPUOffloadPolicy (``training.offload_params`` too: NeMo RL ``dtensor_cfg.cpu_offload``, verl
  ``fsdp_config.offload_policy``) keeps parameters, gradients and optimizer state on the host; every layer's shard
  comes up for its all-gather and its gradient goes down after the reduce-scatter (priced per layer in
  rlsim.trainer.training._fsdp_time) and the optimizer steps on the CPU: no copies here, CPU Adam only.
* **Swap between phases** (``training.swap_params`` / ``swap_optimizer``; verl's Megatron and FSDP workers'
  ``param_offload`` / ``optimizer_offload``): the state waits in host memory between phases, comes back to the GPU
  before each log-prob pass and update and goes out after it; Adam runs on the GPU. Megatron
  (verl@v0.7.0 verl/workers/megatron_workers.py:725-761 update_actor, 840-874 compute_log_prob; the same at v0.6.1:
  630-661, 745-760): the bf16 parameter buffer goes to pinned host memory and comes back (verl@v0.7.0
  verl/utils/megatron_utils.py:405-438, 441-465); the gradient buffer is freed and re-zeroed, never copied (so
  ``grad_offload``, read at megatron_workers.py:343, moves nothing); the optimizer's fp32 master shard and Adam
  moments go out and back (megatron_utils.py:468-590). FSDP (verl@v0.7.0 verl/workers/fsdp_workers.py:905-945,
  1000-1040; verl/utils/fsdp_utils.py:144-227): the fp32 flat parameter shard and the Adam moments (8 bytes).
  The GPU holds everything again at the update's peak, so the memory check is not relieved by it.
* The colocated weight sync's trainer offload and a sleeping engine's weights (weight_sync) occupy host memory too.

Host memory: ``hardware.host_memory_bytes``, else the GPU catalog's per-node figure (rlsim/catalog/gpus.yaml); a
scenario whose node holds more than that in host memory is refused, one that names no host memory is not checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlsim.errors import ScenarioError

if TYPE_CHECKING:
    from rlsim.schema import ModelSpec, Scenario, Training

# bytes per parameter over the host link in one CPU Adam step (gradient down + parameter up), by path
HYBRID_LINK_BYTES = 4.0 + 4.0  # Megatron-Core HybridDeviceOptimizer: fp32 gradient down, fp32 parameter up
DEEPSPEED_LINK_BYTES = 4.0 + 2.0  # ZeRO-Offload: fp32 gradient down, bf16 parameter up
# bytes per parameter the host holds for a CPU Adam: fp32 parameter, gradient and both moments; DeepSpeed adds the
# bf16 staging buffer of the updated partition (stage_1_and_2.py param_buffer_of_bit16_for_cpu_offload_groups)
CPU_ADAM_HOST_BYTES = 16.0
DEEPSPEED_HOST_BYTES = 18.0
FSDP_SWAP_PARAM_BYTES = 4.0  # verl's FSDP actor keeps fp32 sharded parameters (mixed precision computes in bf16)
FSDP_SWAP_OPTIMIZER_BYTES = 8.0  # exp_avg and exp_avg_sq, fp32
MEGATRON_PARAM_BYTES = 2.0  # the bf16 parameter buffer
BF16_BYTES = 2.0


def megatron_grad_bytes(tr: Training) -> float:
    """Bytes per parameter of Megatron's gradient buffer: fp32, or bf16 without ``grad_reduce_in_fp32``."""
    return 4.0 if tr.grad_reduce_in_fp32 else 2.0


def megatron_optimizer_bytes(tr: Training) -> float:
    """Bytes per parameter of Megatron's optimizer state: the fp32 Adam moments (8) and the master weight, fp32
    (4) or, under the precision-aware optimizer with bf16 weights, the 16-bit remainder of it (2; Megatron-LM
    ``distrib_optimizer.py``: ``master_param`` an int16 shard when ``store_param_remainders`` and bf16)."""
    remainder = tr.precision_aware_optimizer and tr.precision == "bf16"
    return 8.0 + (2.0 if remainder else 4.0)


def host_bandwidth(scenario: Scenario) -> float:
    """Bytes per second a copy between a GPU and host memory reaches: the host link's peak times
    ``costs.host_link_efficiency``."""
    return scenario.hardware.gpu.host_link_bandwidth_bytes_per_s * scenario.costs.host_link_efficiency


def cpu_adam_fraction(scenario: Scenario) -> float:
    """Share of a rank's optimizer state on the host and updated by CPU Adam (0 without offload_optimizer)."""
    tr = scenario.training
    if tr.backend == "megatron":
        return tr.offload_optimizer_fraction if tr.offload_optimizer else 0.0
    return 1.0 if (tr.offload_optimizer or tr.offload_params) else 0.0  # CPUOffloadPolicy steps on the CPU too


def cpu_optimizer_s(scenario: Scenario, shard_params: float) -> float:
    """Seconds of one offloaded optimizer step over a rank's ``shard_params``: the gradients down and the updated
    parameters up the host link, then CPU Adam (``costs.cpu_adam_params_per_s``), serial (NeMo RL leaves
    Megatron's overlap_cpu_optimizer_d2h_h2d at its default, false; DeepSpeed steps after the last gradient is
    down). Only the offloaded share; the GPU share is rlsim.trainer.training._optimizer_s's HBM term."""
    tr = scenario.training
    frac = cpu_adam_fraction(scenario)
    if frac <= 0.0:
        return 0.0
    params = frac * shard_params
    if tr.backend == "megatron":
        link = HYBRID_LINK_BYTES
    elif tr.offload_params:
        link = 0.0  # FSDP2 CPUOffloadPolicy: the per-layer copies of _fsdp_time carry the traffic
    else:
        link = DEEPSPEED_LINK_BYTES
    return link * params / host_bandwidth(scenario) + params / scenario.costs.cpu_adam_params_per_s


# ---------------------------------------------------------------------------------------------------- swaps


def _megatron_shards(scenario: Scenario, model: ModelSpec) -> tuple[float, float]:
    """(parameters of one GPU's model shard, parameters of its distributed-optimizer shard)."""
    tr = scenario.training
    t, p, c = tr.tensor_parallel_size, tr.pipeline_parallel_size, tr.context_parallel_size
    e, et = tr.expert_parallel_size, tr.expert_tensor_parallel_size
    n = scenario.hardware.num_train_gpus
    dense = (model.num_params - model.expert_params) / (t * p)
    expert = model.expert_params / (e * et * p)
    if not tr.distributed_optimizer:
        return dense + expert, dense + expert
    d = max(1, n // (t * p * c))
    d_expert = max(1, n // (e * et * p))
    return dense + expert, dense / (d * c) + expert / d_expert


def swap_bytes(scenario: Scenario, model: ModelSpec) -> tuple[float, float]:
    """(parameter bytes, optimizer bytes) one training GPU swaps to the host between phases (each way). Only the
    optimizer state the GPU holds is swapped: the share a CPU optimizer keeps on the host (``cpu_adam_fraction``:
    verl's Megatron ``optimizer_offload`` beside ``override_optimizer_config.optimizer_cpu_offload``) never moves."""
    tr = scenario.training
    if not (tr.swap_params or tr.swap_optimizer):
        return 0.0, 0.0
    if tr.backend == "megatron":
        shard, opt_shard = _megatron_shards(scenario, model)
        params = MEGATRON_PARAM_BYTES * shard
        opt = megatron_optimizer_bytes(tr) * opt_shard
    else:
        shard = model.num_params / scenario.hardware.num_train_gpus
        params, opt = FSDP_SWAP_PARAM_BYTES * shard, FSDP_SWAP_OPTIMIZER_BYTES * shard
    opt *= 1.0 - cpu_adam_fraction(scenario)
    return (params if tr.swap_params else 0.0), (opt if tr.swap_optimizer else 0.0)


def phase_swap_s(scenario: Scenario, model: ModelSpec, forward_only: bool) -> float:
    """Host traffic of one phase under verl's swaps: the parameters come up before a log-prob pass or an update and
    go back after it; the optimizer state does the same around an update only."""
    params, opt = swap_bytes(scenario, model)
    moved = params + (0.0 if forward_only else opt)
    return 2.0 * moved / host_bandwidth(scenario) if moved else 0.0


# ---------------------------------------------------------------------------------------------------- host memory


def trainer_host_bytes(scenario: Scenario) -> float:
    """Bytes one training GPU's process keeps in host memory: the CPU optimizer's state, the swapped states, what
    the colocated weight sync's trainer offload moves there (the bf16 weights and the optimizer state the GPU
    holds; NeMo RL offload_before_refit / offload_after_refit) and a host-resident reference model (bf16)."""
    tr, model = scenario.training, scenario.model
    frac = cpu_adam_fraction(scenario)
    if tr.backend == "megatron":
        shard, opt_shard = _megatron_shards(scenario, model)
        on_host = CPU_ADAM_HOST_BYTES * frac * opt_shard
        gpu_optimizer = megatron_optimizer_bytes(tr) * (1.0 - frac) * opt_shard
    else:
        shard = model.num_params / scenario.hardware.num_train_gpus
        cpu_adam = CPU_ADAM_HOST_BYTES if tr.offload_params else DEEPSPEED_HOST_BYTES
        on_host = cpu_adam * shard if frac else 0.0
        gpu_optimizer = 0.0 if frac else FSDP_SWAP_OPTIMIZER_BYTES * shard
    params, opt = swap_bytes(scenario, model)
    total = on_host + params + opt
    if scenario.hardware.placement == "colocated" and scenario.weight_sync.offload_trainer:
        total += (0.0 if tr.swap_params else BF16_BYTES * shard) + (0.0 if tr.swap_optimizer else gpu_optimizer)
    if tr.reference_on_host and scenario.algorithm.kl_reference:
        total += BF16_BYTES * shard
    return total


def node_host_bytes(scenario: Scenario) -> tuple[float, int, float, float]:
    """(host bytes one node holds, training GPUs on that node, per training GPU, per engine GPU): colocated, every
    GPU of a node trains and (when the engine sleeps at level 1: vLLM's level-1 sleep backs its weights up to pinned
    host memory, vllm device_allocator/cumem.py sleep; level 2 discards them) keeps its engine's weight shard there."""
    hw = scenario.hardware
    per_train = trainer_host_bytes(scenario)
    per_engine = 0.0
    if hw.placement == "colocated":
        gpus = min(hw.node_gpus, hw.num_gpus)
        if scenario.weight_sync.engine_sleeps and scenario.weight_sync.sleep_level == 1:
            per_engine = scenario.engine_weight_bytes_per_gpu
    else:
        gpus = min(hw.node_gpus, hw.num_train_gpus)
    return gpus * (per_train + per_engine), gpus, per_train, per_engine


def host_memory_bytes(scenario: Scenario) -> float | None:
    """Host memory of one node: the scenario's ``hardware.host_memory_bytes``, else the GPU catalog's."""
    hw = scenario.hardware
    return hw.host_memory_bytes or hw.gpu.host_memory_bytes


def check_host_memory(scenario: Scenario) -> None:
    """Refuse a scenario whose offloaded state does not fit a node's host memory (not checked where it is unknown)."""
    limit = host_memory_bytes(scenario)
    tr = scenario.training
    offloading = tr.offload_optimizer or tr.offload_params or tr.swap_params or tr.swap_optimizer
    if limit is None or not offloading:
        return
    need, gpus, per_train, per_engine = node_host_bytes(scenario)
    if need <= limit:
        return
    key = next(
        k for k in ("offload_params", "offload_optimizer", "swap_params", "swap_optimizer") if getattr(tr, k) is True
    )
    engine = f" + the sleeping engine's weights {per_engine / 1e9:.1f} GB" if per_engine else ""
    raise ScenarioError(
        f"training.{key}",
        True,
        f"puts {need / 1e9:.0f} GB in one node's host memory ({gpus} GPUs x (trainer state "
        f"{per_train / 1e9:.1f} GB{engine})), over the node's {limit / 1e9:.0f} GB "
        f"({'hardware.host_memory_bytes' if scenario.hardware.host_memory_bytes else scenario.hardware.gpu.name})",
        f"set training.{key}: false, spread the trainer over more nodes, or set hardware.host_memory_bytes to "
        "your nodes' memory",
    )
