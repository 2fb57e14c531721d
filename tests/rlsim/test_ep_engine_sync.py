"""Oracle: an expert-parallel engine's weight sync moves and keeps only its share of the experts (bytes counted by
hand), where a TP-only engine keeps a TP shard of the whole model.

The toy GPU of tests/rlsim/test_training.py (HBM 1e12 B/s); the toy MoE of tests/rlsim/test_ep_refit.py: 2e9
parameters, X = 8 layers x 64 experts x 3 x 1024 x 1024 in routed experts, bf16: D dense and E expert bytes.
"""

from __future__ import annotations

import pytest

from rlsim.trainer.sync import engine_shard_bytes, weight_sync_time
from tests.rlsim.test_ep_refit import MOE, D, E
from tests.rlsim.test_training import _scn


def _engine(ep: bool, sleeps: bool = False):
    return _scn(
        {
            **MOE,
            "hardware.num_gpus": 8,
            "training.expert_parallel_size": 8,
            "weight_sync.transfer": "sharded",
            "weight_sync.offload_trainer": False,
            "weight_sync.engine_sleeps": sleeps,
            "engine.tensor_parallel_size": 2,
            "engine.data_parallel_size": 4 if ep else 1,
            "engine.expert_parallel": ep,
        }
    )


def test_an_ep_engine_keeps_half_the_dense_weights_and_an_eighth_of_the_experts():
    # TP 2 x DP 4 with expert parallelism: attention and other dense weights split over TP 2, experts over all 8
    ep, tp = _engine(True), _engine(False)
    assert engine_shard_bytes(ep) == pytest.approx(D / 2 + E / 8)
    assert engine_shard_bytes(tp) == pytest.approx((D + E) / 2)
    # the copy into the engine reads and writes its share once at the HBM peak (1e12 B/s)
    assert weight_sync_time(ep).copy_s == pytest.approx(2 * (D / 2 + E / 8) / 1e12)
    assert weight_sync_time(tp).copy_s == pytest.approx(2 * (D + E) / 2 / 1e12)


def test_a_sleeping_ep_engine_moves_only_its_share_through_host_memory():
    ep, tp = _engine(True, sleeps=True), _engine(False, sleeps=True)
    rate = ep.hardware.gpu.host_link_bandwidth_bytes_per_s * ep.costs.host_link_efficiency
    # out to host before generation's sleep, back on wake: twice the engine's bytes on this GPU (bf16 engine)
    assert weight_sync_time(ep).host_s == pytest.approx(2 * (D / 2 + E / 8) / rate, rel=1e-6)
    assert weight_sync_time(tp).host_s == pytest.approx(2 * (D + E) / 2 / rate, rel=1e-6)
