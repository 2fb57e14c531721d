"""Oracles for the whole-tensor weight syncs (rlsim.trainer.sync_gathered): a checkpoint engine's bucketed sync, the
per-tensor and bucketed paths, and an expert-parallel MoE engine fed by a disaggregated trainer, with the bytes, the
links and the calls counted by hand.

The toy GPU and model of tests/rlsim/test_training.py: NVLink 1e11 B/s and one NIC of 1e10 B/s per GPU, NVLink
domains of 8 GPUs, host link 1e10 B/s, HBM 1e12 B/s, link efficiency 1; a dense model of 1e9 parameters (W = 2e9
bf16 bytes), 8 layers, hidden 1024, vocabulary 1000. Separate pools of 8 engine + 8 trainer GPUs: the sync's group
spans 16 GPUs, two NVLink domains, so the broadcast rides the NICs. Per call: the cross-domain latency 1e-4 s plus
the Python-side call 1e-3 s. Pageable host copies at half the host link (host_link_efficiency 0.5), pinned at its
peak.
"""

from __future__ import annotations

import math

import pytest

from rlsim.errors import ScenarioError
from rlsim.trainer.sync import weight_sync_time
from rlsim.trainer.sync_gathered import sync_buffer_bytes, tensor_count
from tests.rlsim.test_ep_refit import MOE, D, E
from tests.rlsim.test_training import W, _scn, _separate

NVLINK, NIC, HOST, HBM = 1e11, 1e10, 1e10, 1e12
LATENCY, CALL = 1e-4, 1e-3  # costs.internode_latency_s, costs.weight_sync_call_s
TIMING = {
    "costs.internode_latency_s": LATENCY,
    "costs.weight_sync_call_s": CALL,
    "costs.host_link_efficiency": 0.5,
}


def _pools(**over):
    return _scn({**_separate(8, 8), **TIMING, "engine.tensor_parallel_size": 2, **over})


def test_a_checkpoint_engine_sync_counts_its_gather_host_copies_buckets_and_broadcast():
    s = _pools(**{"weight_sync.transfer": "bucketed", "weight_sync.host_staged": True, "weight_sync.bucket_bytes": 1e8})
    gather = 7 / 8 * W / NVLINK  # every trainer GPU of the FSDP group (8, one NVLink domain) assembles W
    broadcast = W / NIC  # every engine GPU receives the whole model; the 16-GPU group crosses domains
    share = W / 8  # each trainer rank keeps every 8th tensor on the host: 2.5e8 bytes
    host = share / (HOST * 0.5) + share / HOST  # out to pageable memory, back from pinned buckets
    buckets = 8 * math.ceil(share / 1e8)  # each rank's own buckets: 8 x 3 = 24 broadcasts
    calls = buckets * (LATENCY + CALL)
    t = weight_sync_time(s)
    assert buckets == 24
    assert t.transfer_s == pytest.approx(gather + broadcast + host + calls)  # 0.0175 + 0.2 + 0.075 + 0.0264
    assert t.transfer_s == pytest.approx(0.3189)
    assert t.copy_s == pytest.approx(2 * (W / 2) / HBM)  # the engine writes its TP-2 half once
    assert t.host_s == 0.0 and t.latency_s == 0.0  # the toy's weight_sync_latency_s is 0
    assert t.engine_pause_s == pytest.approx(t.transfer_s + t.copy_s)  # the rollouter pauses for all of it
    # the trainer holds a host-to-device buffer and a broadcast buffer, an engine GPU one bucket
    assert sync_buffer_bytes(s) == (2e8, 1e8)


def test_bucketed_and_per_tensor_syncs_pay_one_call_per_bucket_or_tensor():
    bucketed = weight_sync_time(_pools(**{"weight_sync.transfer": "bucketed", "weight_sync.bucket_bytes": 1e8}))
    per_tensor = weight_sync_time(_pools(**{"weight_sync.transfer": "per_tensor"}))
    moved = 7 / 8 * W / NVLINK + W / NIC
    # ceil(2e9 / 1e8) = 20 buckets; the toy's 3 + 8 layers x (6 attention + 3 MLP) = 75 tensors
    assert tensor_count(_pools().model) == 75
    assert bucketed.transfer_s == pytest.approx(moved + 20 * (LATENCY + CALL))
    assert per_tensor.transfer_s == pytest.approx(moved + 75 * (LATENCY + CALL))
    # what they hold: one bucket; one whole tensor, the largest being the 1000 x 1024 embedding in bf16
    assert sync_buffer_bytes(_pools(**{"weight_sync.transfer": "bucketed", "weight_sync.bucket_bytes": 1e8})) == (
        1e8,
        1e8,
    )
    assert sync_buffer_bytes(_pools(**{"weight_sync.transfer": "per_tensor"})) == (2.048e6, 2.048e6)


def test_the_sharded_sync_moves_each_engine_gpu_its_shard_only():
    # the old price of the same pools: an engine GPU receives its TP-2 half (1e9), a trainer GPU sends its eighth
    assert weight_sync_time(_pools()).transfer_s == pytest.approx(max(W / 2, W / 8) / NIC)


def test_a_colocated_per_tensor_sync_gathers_the_whole_model_and_pays_its_calls():
    s = _scn({**TIMING, "weight_sync.transfer": "per_tensor", "weight_sync.engine_sleeps": False})
    t = weight_sync_time(s)
    # 8 GPUs, one NVLink domain: each assembles W over NVLink; 75 all-gathers inside the domain (latency 0 in the
    # toy's collective_latency_s) plus the calls
    assert t.transfer_s == pytest.approx(W / NVLINK)
    assert t.latency_s == pytest.approx(75 * (0 + CALL))


def test_host_staging_is_refused_outside_a_bucketed_sync_between_pools():
    with pytest.raises(ScenarioError, match="weight_sync.host_staged"):
        _scn({"weight_sync.transfer": "bucketed", "weight_sync.host_staged": True})
    with pytest.raises(ScenarioError, match="weight_sync.host_staged"):
        _pools(**{"weight_sync.transfer": "per_tensor", "weight_sync.host_staged": True})


# --------------------------------------------------------------------------- an MoE fed to an expert-parallel engine


def _moe(transfer: str):
    """The toy MoE of tests/rlsim/test_ep_refit.py (2e9 parameters, 8 layers x 64 experts; D dense and E expert
    bytes) trained on 8 GPUs under expert parallelism 8, generated on 8 GPUs by one TP 2 x DP 4 engine that spreads
    the experts over all 8."""
    return _scn(
        {
            **MOE,
            **_separate(8, 8),
            **TIMING,
            "training.expert_parallel_size": 8,
            "engine.tensor_parallel_size": 2,
            "engine.data_parallel_size": 4,
            "engine.expert_parallel": True,
            "weight_sync.transfer": transfer,
        }
    )


def test_an_moe_disaggregated_per_tensor_sync_sends_every_expert_to_every_engine_gpu():
    s = _moe("per_tensor")
    w = D + E  # 4e9 bytes
    assert w == pytest.approx(4e9)
    # tensors: 3 outer + 8 layers x (6 attention + router + 64 experts x 3)
    assert tensor_count(s.model) == 3 + 8 * (6 + 1 + 64 * 3) == 1595
    gather = 7 / 8 * w / NVLINK  # one trainer copy spans the EP group of 8: each GPU assembles every expert
    broadcast = w / NIC  # every engine GPU receives all 64 experts' bytes (vLLM keeps its eighth)
    calls = 1595 * (LATENCY + CALL)
    t = weight_sync_time(s)
    assert t.transfer_s == pytest.approx(gather + broadcast + calls)  # 0.035 + 0.4 + 1.7545
    assert t.transfer_s == pytest.approx(2.1895)
    assert t.copy_s == pytest.approx(2 * (D / 2 + E / 8) / HBM)  # it keeps half the dense weights, 1/8 of experts
    # the sharded price: an engine GPU's share (D/2 + E/8) against the most loaded trainer GPU's (D + E/8, the
    # dense weights on one GPU since TP = 1): 0.118 s, a nineteenth of what the frameworks' path moves and calls
    sharded = weight_sync_time(_moe("sharded"))
    assert sharded.transfer_s == pytest.approx(max(D / 2 + E / 8, D + E / 8) / NIC)
    assert t.transfer_s / sharded.transfer_s > 18
    # NeMo RL's packed broadcast (unchanged): the whole model over the NIC once
    assert weight_sync_time(_moe("broadcast")).transfer_s == pytest.approx(w / NIC)


def test_verl_fully_async_imports_its_checkpoint_engine_or_the_per_tensor_broadcast(tmp_path):
    """verl v0.7.0's fully-async config turns the checkpoint engine on with 4096 MiB buckets (recipe/
    fully_async_policy/config/fully_async_ppo_trainer.yaml:31-36); off, rank 0 broadcasts tensor by tensor."""
    from tests.rlsim.test_verl_fully_async_import import _scenario, _script

    s, _ = _scenario(_script(tmp_path))
    ws = s.weight_sync
    assert (ws.transfer, ws.host_staged, ws.bucket_bytes) == ("bucketed", True, 4096 * 2**20)
    off, _ = _scenario(_script(tmp_path, extra="async_training.checkpoint_engine.enable=False"))
    assert off.weight_sync.transfer == "per_tensor" and not off.weight_sync.host_staged
