"""The scenario's trainer-side sections: ``training`` (the trainer's parallel layout and options) and
``weight_sync`` (how a framework moves the weights). Their costs are rlsim.trainer's; the sections are inputs,
here so that the scenario does not import the models that read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class Training:
    """The trainer's parallel layout and options (scenario section ``training``)."""

    backend: Literal["fsdp", "megatron"] = "fsdp"
    tensor_parallel_size: int = field(default=1, metadata={"ge": 1, "le": 1024})
    pipeline_parallel_size: int = field(default=1, metadata={"ge": 1, "le": 1024})
    virtual_pipeline_stages: int = field(default=1, metadata={"ge": 1, "le": 128})
    context_parallel_size: int = field(default=1, metadata={"ge": 1, "le": 1024})
    expert_parallel_size: int = field(default=1, metadata={"ge": 1, "le": 4096})
    expert_tensor_parallel_size: int = field(default=1, metadata={"ge": 1, "le": 1024})
    # sequences per micro-batch; with sequence packing, micro-batches are bins of micro_batch_size x
    # packing_tokens tokens (default: workload.max_prompt_tokens + max_response_tokens)
    micro_batch_size: int = field(default=1, metadata={"ge": 1, "le": 1_000_000})
    sequence_packing: bool = True
    packing_tokens: int | None = field(default=None, metadata={"ge": 1})
    # without packing: the trainer pads the step's whole batch to its longest prompt + response, so every
    # log-prob and training pass costs responses x that length (rlsim-real's trainer, real/update.py
    # batch_tensors); the longest of more samples is longer, so the cost per sample grows with the batch
    pad_to_longest: bool = False
    # without packing: each micro-batch holds only its sequences' real tokens (verl use_remove_padding, its
    # default; OpenRLHF packing_samples), so its memory is priced at a high quantile of micro_batch_size sequences'
    # prompt + response tokens under the workload's lengths (rlsim.trainer.memory), not at micro_batch_size x cap
    remove_padding: bool = False
    # sequences (packed: bins) per micro-batch of the forward-only log-prob passes; None: micro_batch_size
    logprob_micro_batch_size: int | None = field(default=None, metadata={"ge": 1})
    # responses per optimizer step (the frameworks' train global batch); None: responses per step divided by
    # algorithm.mini_batches_per_step
    global_batch_size: int | None = field(default=None, metadata={"ge": 1})
    distributed_optimizer: bool = True
    overlap_communication: bool = True  # DP reduce-scatter / all-gather overlapped with compute
    # full: keep each layer's input only (verl's enable_gradient_checkpointing, on by default there)
    activation_recompute: Literal["none", "selective", "full"] = "full"
    precision: Literal["bf16", "fp8"] = "bf16"
    offload_optimizer: bool = False  # optimizer states and update on the host (CPU Adam)
    offload_params: bool = False  # fsdp only: parameters live on the host between uses
    memory_fraction: float = field(default=0.9, metadata={"gt": 0, "le": 1})  # of each GPU the trainer may use
    # the reference model waits in host memory and is swapped into the trainer's parameters for the reference
    # pass: policy weights out, reference in, policy back (NeMo RL use_reference_model)
    reference_on_host: bool = False


@dataclass(frozen=True)
class WeightSync:
    """How a framework moves the weights (scenario section ``weight_sync``)."""

    # sharded: every engine GPU receives only its own shard, every trainer GPU of one model copy sends its part,
    # all in parallel. broadcast: every GPU receives the whole model in the training dtype, as NeMo RL v0.5-v0.6
    # do: separate pools, one training rank broadcasts every tensor (nemo_rl/utils/packed_tensor.py,
    # packed_broadcast_producer with src=0); colocated, every rank exports full HF tensors
    # (megatron_policy_worker.py, export_hf_weights) and its engine keeps its slice
    transfer: Literal["sharded", "broadcast"] = "sharded"
    # colocated: the trainer's parameters, gradients and optimizer state go to host memory before generation and
    # come back after it (NeMo RL offload_before_refit / offload_after_refit)
    offload_trainer: bool = False
    # colocated: the engine sleeps while the trainer runs (vLLM sleep mode: its weights to host memory, its KV cache
    # freed) and wakes for the sync, paying those copies and costs.sleep_wake_overhead_s; false: it keeps its
    # weights where they are (transformers' generate, vLLM without sleep mode, an engine on a CPU)
    engine_sleeps: bool = True
