"""Oracles for an expert-parallel trainer's memory: bytes counted by hand.

The toy GPU of tests/rlsim/test_training.py: NVLink 1e11 B/s per GPU, one NIC of 1e10 B/s per GPU, NVLink
domains of 8, link efficiency 1. The toy MoE: 2e9 parameters, of which X = 8 layers x 64 experts x 3 x 1024 x
1024 = 1.61e9 in routed experts; bf16, so D = 2 (2e9 - X) dense and E = 2 X expert bytes.
"""

from __future__ import annotations

import pytest

from rlsim.trainer import memory as training_memory
from tests.rlsim.test_training import _scn

X = 8 * 64 * 3 * 1024 * 1024
E = 2.0 * X  # expert bytes
D = 2.0 * (2e9 - X)  # dense bytes
NVLINK, NIC = 1e11, 1e10

MOE = {
    "model.num_params": 2e9,
    "model.num_active_params": 0.5e9,
    "model.num_experts": 64,
    "model.num_experts_per_token": 8,
    "model.moe_intermediate_size": 1024,
    "training.backend": "megatron",
    "weight_sync.transfer": "broadcast",
}


def _ep(num_gpus: int, tp: int, pp: int, ep: int, **over):
    return _scn(
        {
            **MOE,
            "hardware.num_gpus": num_gpus,
            "training.tensor_parallel_size": tp,
            "training.pipeline_parallel_size": pp,
            "training.expert_parallel_size": ep,
            **over,
        }
    )


def test_nemo_rl_optimizer_holds_bf16_gradients_and_master_remainders():
    """TP 1 x PP 4 x EP 16 on 64 GPUs: shard = (2e9 - X)/4 dense + X/64 expert parameters. Megatron's defaults:
    6 bytes each (bf16 weight, fp32 gradient) and 12 / d optimizer (d = 16 dense, 1 expert). NeMo RL
    (grad_reduce_in_fp32 false, use_precision_aware_optimizer with bf16): 4 bytes and 10 / d (int16 remainder
    of the fp32 master, fp32 moments; Megatron-LM distrib_optimizer.py)."""
    dense, expert = (2e9 - X) / 4, X / 64
    mega = training_memory.memory(_ep(64, 1, 4, 16))
    assert mega.weights_grads_bytes == pytest.approx(6 * (dense + expert))
    assert mega.optimizer_bytes == pytest.approx(12 * (dense / 16 + expert))
    nemo = training_memory.memory(
        _ep(64, 1, 4, 16, **{"training.grad_reduce_in_fp32": False, "training.precision_aware_optimizer": True})
    )
    assert nemo.weights_grads_bytes == pytest.approx(4 * (dense + expert))
    assert nemo.optimizer_bytes == pytest.approx(10 * (dense / 16 + expert))
