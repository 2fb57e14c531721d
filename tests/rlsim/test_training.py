"""Training systems model (rlsim.trainer.training) and weight sync (rlsim.trainer.sync): analytic oracles.

Every expected number is computed in the test from the formulas of the module docstrings, on a toy GPU and a toy
model with round numbers, with latencies and overheads set to zero and link efficiency 1, so that each term can
be written out by hand:

* toy GPU: 1e15 bf16 FLOP/s, 1e12 B/s HBM, 1e11 B/s NVLink per GPU, 1e10 B/s NIC per GPU, 8 GPUs per NVLink
  domain, 1e10 B/s host link.
* toy model: 1e9 parameters (2e9 bytes in bf16), 8 layers, hidden 1024.
* costs: train and forward efficiency 0.5 (so a GPU does 5e14 useful FLOP/s), no latencies, no overheads.
* workload: prompts and responses of 512 tokens, so packing_tokens = 1024 (one micro-batch bin of 1024 tokens).
"""

from __future__ import annotations

import copy
import math
import re
import subprocess
import sys
from typing import Any

import pytest
import yaml

import rlsim
from rlsim.errors import ScenarioError
from rlsim.scenario import from_dict
from rlsim.trainer import memory as training_memory
from rlsim.trainer import training
from rlsim.trainer.sync import weight_sync_time

GPU = {
    "name": "toy",
    "bf16_flops_per_s": 1e15,
    "hbm_bandwidth_bytes_per_s": 1e12,
    "memory_bytes": 1e12,
    "link_bandwidth_bytes_per_s": 1e11,
    "nic_bandwidth_bytes_per_s": 1e10,
    "host_link_bandwidth_bytes_per_s": 1e10,
    "nvlink_domain_size": 8,
    "fp8_flops_per_s": 2e15,
}
N = 1e9  # parameters of the toy model
W = 2 * N  # its bf16 bytes
L = 8
H = 1024
MODEL = {
    "name": "toy-1b",
    "num_layers": L,
    "hidden_size": H,
    "num_attention_heads": 8,
    "num_kv_heads": 8,
    "head_dim": 128,
    "vocab_size": 1000,
    "num_params": N,
    "num_active_params": N,
}
COSTS = {
    "collective_latency_s": 0,
    "link_efficiency": 1,
    "host_link_efficiency": 1,  # the toy's host copies at the link's peak (the shipped default is a fit)
    "train_step_overhead_s": 0,
    "forward_overhead_s": 0,
    "weight_sync_latency_s": 0,
    "sleep_wake_overhead_s": 0,
    "train_compute_efficiency": 0.5,
    "forward_compute_efficiency": 0.5,
    "decode_memory_efficiency": 0.5,
}
EFF_FLOPS = 1e15 * 0.5  # useful FLOP/s of one toy GPU in training
PACK = 1024  # max_prompt_tokens + max_response_tokens: tokens per packed micro-batch bin


def _base() -> dict[str, Any]:
    return {
        "name": "toy",
        "model": dict(MODEL),
        "hardware": {"gpu": dict(GPU), "num_gpus": 8, "placement": "colocated"},
        "engine": {"tensor_parallel_size": 1},
        "workload": {
            "prompts_per_step": 16,
            "group_size": 8,
            "prompt_length": {"dist": "fixed", "tokens": 512},
            "response_length": {"dist": "fixed", "tokens": 512},
            "max_prompt_tokens": 512,
            "max_response_tokens": 512,
        },
        "algorithm": {"name": "grpo"},
        "schedule": {"mode": "sync-colocated"},
        # the memory tests below price the model against a flat 90% of the toy GPU (rlsim.trainer.headroom's
        # per-framework reserves have their own tests, tests/rlsim/test_offload_memory.py)
        "training": {"memory_fraction": 0.9},
        "costs": dict(COSTS),
        "run": {"steps": 2},
    }


def _raw(over: dict[str, Any] | None = None) -> dict[str, Any]:
    """The base scenario dict with dotted-key overrides (a value of None deletes the key)."""
    d = copy.deepcopy(_base())
    for dotted, value in (over or {}).items():
        *head, last = dotted.split(".")
        node = d
        for part in head:
            node = node.setdefault(part, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return d


def _scn(over: dict[str, Any] | None = None) -> rlsim.scenario.Scenario:
    return from_dict(_raw(over))


def _separate(rollout: int, train: int) -> dict[str, Any]:
    return {
        "hardware.num_gpus": rollout + train,
        "hardware.placement": "separate",
        "hardware.rollout_gpus": rollout,
        "hardware.train_gpus": train,
        "schedule.mode": "sync-separate",
    }


def _train(s, tokens: float, steps: int = 1, **kw) -> training.TrainTime:
    """phase_time of the policy's update, attention off (sq_tokens = 0) so compute is 6 N T (+ recompute)."""
    return training.phase_time(s, s.model, tokens, 0.0, optimizer_steps=steps, **kw)


def _ring(nbytes: float, group: int, bw: float) -> float:
    """Hand formula of an all-gather / reduce-scatter: (g-1)/g of the bytes over the per-GPU bandwidth."""
    return (group - 1) / group * nbytes / bw


# ------------------------------------------------------------------------------------------- 1. pipeline bubble


MEGATRON_PP = {"training.backend": "megatron", "training.pipeline_parallel_size": 4}


def test_1f1b_bubble_is_p_minus_1_over_m_of_the_ideal_time():
    """n=8, t=1, p=4 -> d=2; 16384 tokens -> 8192 per data-parallel rank = m = 8 bins of 1024 tokens.
    Full recompute: 4 passes of 2 N FLOPs per token. No TP, no EP: bubble = compute x (p-1)/m."""
    s = _scn(MEGATRON_PP)
    p, d, tokens = 4, 2, 16384
    m = math.ceil(tokens / d / (1 * PACK))
    assert m == 8
    tt = _train(s, tokens)
    compute = 4 * 2 * N * tokens / (8 * EFF_FLOPS)
    assert compute == pytest.approx(0.032768)
    assert tt.micro_batches == m
    assert tt.compute_s == pytest.approx(compute)
    assert tt.tp_comm_s == 0 and tt.ep_comm_s == 0
    assert tt.pp_bubble_s == pytest.approx(compute * (p - 1) / m)
    # the textbook form: the bubble is (p-1)/(m+p-1) of the step (ideal + bubble)
    assert tt.pp_bubble_s / (tt.compute_s + tt.pp_bubble_s) == pytest.approx((p - 1) / (m + p - 1))  # 3/11


def test_1f1b_bubble_includes_tensor_parallel_time():
    """t=2, p=4 on 8 GPUs -> d=1, m = 16384 / 1024 = 16. TP with sequence parallel: per layer of the stage 6
    collectives (2 forward, 2 backward, 2 recomputed forward), each a ring over t of 2 x tokens x h bf16 bytes;
    the bubble is (compute + tp) x (p-1)/m, and the send/recv of the fill and drain 2 (p-1) hops of one
    micro-batch's activations (tokens / (d m) / t x h x 2 bytes) over NVLink (span 2 n/p = 4 GPUs)."""
    s = _scn({**MEGATRON_PP, "training.tensor_parallel_size": 2})
    p, t, d, tokens = 4, 2, 1, 16384
    m = tokens // d // PACK
    tt = _train(s, tokens)
    assert tt.micro_batches == m == 16
    compute = 4 * 2 * N * tokens / (8 * EFF_FLOPS)
    tp_one = _ring(2 * tokens * H * 2, t, 1e11)  # 0.5 x 67,108,864 B / 1e11 B/s
    tp = 6 * (L / p) * tp_one
    assert tt.tp_comm_s == pytest.approx(tp)
    assert tp == pytest.approx(12 * 3.3554432e-4)
    assert tt.pp_bubble_s == pytest.approx((compute + tp) * (p - 1) / m)
    act = tokens / (d * m) / t * H * 2
    assert tt.pp_p2p_s == pytest.approx(2 * (p - 1) * act / 1e11)


def test_interleaved_pipeline_divides_the_bubble_by_v():
    """Virtual stages v: bubble (p-1)/(v m) of the ideal time."""
    tokens, p, m = 16384, 4, 8
    one = _train(_scn(MEGATRON_PP), tokens)
    for v in (2, 4):
        tt = _train(_scn({**MEGATRON_PP, "training.virtual_pipeline_stages": v}), tokens)
        assert tt.compute_s == pytest.approx(one.compute_s)
        assert tt.pp_bubble_s == pytest.approx(tt.compute_s * (p - 1) / (v * m))
        assert tt.pp_bubble_s == pytest.approx(one.pp_bubble_s / v)


def test_more_micro_batches_shrink_the_bubble_fraction():
    """m from the micro-batch size: micro_batch_size 2 -> bins of 2048 tokens -> m = 4, bubble 3/7 of the step;
    without packing m = ceil(sequences / d / micro_batch_size)."""
    tokens, p = 16384, 4
    tt = _train(_scn({**MEGATRON_PP, "training.micro_batch_size": 2}), tokens)
    assert tt.micro_batches == 4
    assert tt.pp_bubble_s / (tt.compute_s + tt.pp_bubble_s) == pytest.approx((p - 1) / (4 + p - 1))
    unpacked = _scn({**MEGATRON_PP, "training.sequence_packing": False, "training.micro_batch_size": 3})
    tt = _train(unpacked, tokens, num_sequences=30)  # 30 sequences / d=2 / 3 per micro-batch = 5
    assert tt.micro_batches == 5
    assert tt.pp_bubble_s == pytest.approx(tt.compute_s * (p - 1) / 5)


# ------------------------------------------------------------------------------------------- 2. FSDP exposure


FSDP8 = {"training.backend": "fsdp", "training.activation_recompute": "none"}
LAYER_BYTES = N / L * 2  # bf16 bytes of one layer: 2.5e8
AG = _ring(LAYER_BYTES, 8, 1e11)  # all-gather (= reduce-scatter) of one layer over 8 GPUs in one domain


def _fsdp_fwd_layer(tokens_per_rank_mb: float) -> float:
    """Seconds of one layer's forward on one GPU for one micro-batch: 2 (N/L) tokens / F_eff."""
    return 2 * (N / L) * tokens_per_rank_mb / EFF_FLOPS


def test_fsdp_compute_bound_exposes_only_the_first_gather():
    """micro_batch_size 8 -> 8192 tokens per micro-batch per GPU: a layer's forward (4.1 ms) outlasts its
    all-gather (2.19 ms) and its backward (8.2 ms) the gather + reduce-scatter: only the first gather and the last
    reduce-scatter (the backward's end, nothing left to hide it) show, once per optimizer step."""
    s = _scn({**FSDP8, "training.micro_batch_size": 8})
    tokens, steps = 8 * 8192 * 2 * 2, 2  # 2 micro-batches per rank per optimizer step
    fwd = _fsdp_fwd_layer(8192)
    assert fwd == pytest.approx(4.096e-3) and AG == pytest.approx(2.1875e-3)
    assert fwd >= AG  # so the backward (2 fwd) also outlasts the gather + reduce-scatter (2 AG)
    tt = _train(s, tokens, steps)
    assert tt.micro_batches == 2
    assert tt.compute_s == pytest.approx(3 * 2 * N * tokens / (8 * EFF_FLOPS))
    assert tt.fsdp_comm_s == pytest.approx(steps * (AG + AG))


def test_fsdp_comm_bound_exposure_by_hand():
    """micro_batch_size 1 -> 1024 tokens per micro-batch per GPU: forward of a layer 0.512 ms < gather 2.1875 ms.
    Per micro-batch per layer: (ag - fwd) + (ag + rs - 2 fwd) = 3 (ag - fwd); per step m L of them + the first
    gather and the last reduce-scatter."""
    s = _scn(FSDP8)
    tokens, steps = 8 * 1024 * 16 * 2, 2  # m = 16 per rank per optimizer step
    fwd = _fsdp_fwd_layer(1024)
    assert fwd == pytest.approx(5.12e-4)
    per_mb_layer = max(0.0, AG - fwd) + max(0.0, AG + AG - 2 * fwd)
    expected = steps * (16 * L * per_mb_layer + AG + AG)
    tt = _train(s, tokens, steps)
    assert tt.micro_batches == 16
    assert tt.fsdp_comm_s == pytest.approx(expected)
    assert expected == pytest.approx(2 * (128 * 3 * (2.1875e-3 - 5.12e-4) + 2 * 2.1875e-3))
    # the optimizer: Adam over the 1/8 shard at 28 bytes per parameter through HBM, once per optimizer step
    assert tt.optimizer_s == pytest.approx(steps * 28 * N / 8 / 1e12)
    # forward only (log-prob pass): only the forward gather, no reduce-scatter, one pass
    fo = training.phase_time(s, s.model, tokens, 0.0, forward_only=True)
    m_fo = tokens // 8 // PACK
    fwd_fo = 2 * (N / L) * PACK / EFF_FLOPS  # same efficiency (0.5) for forward
    assert fo.fsdp_comm_s == pytest.approx(m_fo * L * max(0.0, AG - fwd_fo) + AG)


def test_fsdp_comm_bound_exposure_with_full_recompute():
    """Full recompute: compute = 4 forwards. Per micro-batch per layer the gather hides behind one forward and the
    gather + reduce-scatter behind the backward with its recomputed forward (2 + 1 forwards)."""
    s = _scn({**FSDP8, "training.activation_recompute": "full"})
    tokens, steps = 8 * 1024 * 16, 1
    tt = _train(s, tokens, steps)
    assert tt.compute_s == pytest.approx(4 * 2 * N * tokens / (8 * EFF_FLOPS))
    fwd = _fsdp_fwd_layer(1024)
    per_mb_layer = max(0.0, AG - fwd) + max(0.0, 2 * AG - 3 * fwd)
    assert tt.fsdp_comm_s == pytest.approx(steps * (16 * L * per_mb_layer + 2 * AG))


def test_fsdp_one_gpu_has_no_communication():
    s = _scn({"hardware.num_gpus": 1, "training.backend": "fsdp"})
    assert _train(s, 1e5, 2).fsdp_comm_s == 0


# ------------------------------------------------------------------------------------------- 3. weight sync


def test_sharded_sync_separate_pools_in_one_nvlink_domain():
    """4 engine + 4 trainer GPUs (one NVLink domain). Engine TP 4 receives W/4 per GPU; Megatron TP 2 holds one
    copy on 2 GPUs, each sending W/2: transfer = max(W/4, W/2) / NVLink = 1e9 / 1e11."""
    s = _scn(
        {
            **_separate(4, 4),
            "engine.tensor_parallel_size": 4,
            "training.backend": "megatron",
            "training.tensor_parallel_size": 2,
        }
    )
    st = weight_sync_time(s)
    assert st.transfer_s == pytest.approx(max(W / 4, W / 2) / 1e11)
    assert st.transfer_s == pytest.approx(0.01)
    assert st.copy_s == 0 and st.host_s == 0 and st.latency_s == 0
    assert st.total_s == pytest.approx(0.01)
    # FSDP over the 4 trainer GPUs sends W/4 each; engine TP 1 receives all of W: the receiver bounds it
    s = _scn({**_separate(4, 4), "engine.tensor_parallel_size": 1})
    assert weight_sync_time(s).transfer_s == pytest.approx(max(W, W / 4) / 1e11)


def test_sharded_sync_across_nodes_uses_the_nic_and_link_efficiency():
    """8 + 8 GPUs span two NVLink domains: the per-GPU NIC (1e10 B/s) x link_efficiency carries the shards."""
    over = {
        **_separate(8, 8),
        "engine.tensor_parallel_size": 4,
        "training.backend": "megatron",
        "training.tensor_parallel_size": 2,
    }
    s = _scn(over)
    assert weight_sync_time(s).transfer_s == pytest.approx(max(W / 4, W / 2) / 1e10)  # 0.1 s
    s = _scn({**over, "costs.link_efficiency": 0.5})
    assert weight_sync_time(s).transfer_s == pytest.approx((W / 2) / (1e10 * 0.5))


def test_broadcast_sync_moves_the_whole_model_through_one_link():
    for rollout, train, bw in ((4, 4, 1e11), (8, 8, 1e10)):
        over = {
            **_separate(rollout, train),
            "engine.tensor_parallel_size": 4,
            "training.backend": "megatron",
            "training.tensor_parallel_size": 2,
        }
        base = _scn(over)
        sharded = weight_sync_time(base)
        s = _scn({**over, "weight_sync.transfer": "broadcast"})
        st = weight_sync_time(s)
        assert st.transfer_s == pytest.approx(W / bw)
        assert st.transfer_s == pytest.approx(2 * sharded.transfer_s)  # W vs W/2


def test_colocated_sync_over_nvlink_when_a_trainer_copy_fits_one_domain():
    """16 colocated GPUs, Megatron TP 8: one trainer copy lies in one NVLink domain, so each engine GPU (TP 1,
    the whole W) copies its shard over NVLink; the copy into the engine reads and writes it in HBM at its peak
    (2 W / HBM) and sleep/wake moves the engine's weights to the host and back (2 W / host link)."""
    s = _scn({"hardware.num_gpus": 16, "training.backend": "megatron", "training.tensor_parallel_size": 8})
    st = weight_sync_time(s)
    assert st.transfer_s == pytest.approx(W / 1e11)  # 0.02 s
    assert st.copy_s == pytest.approx(2 * W / 1e12)
    assert st.host_s == pytest.approx(2 * W / 1e10)
    assert st.total_s == pytest.approx(0.02 + 0.004 + 0.4)
    # an engine without sleep mode keeps its weights: no host copies, no fixed sleep / wake (even at 2 s)
    awake = _scn(
        {
            "hardware.num_gpus": 16,
            "training.backend": "megatron",
            "training.tensor_parallel_size": 8,
            "weight_sync.engine_sleeps": False,
            "costs.sleep_wake_overhead_s": 2.0,
        }
    )
    st = weight_sync_time(awake)
    assert st.host_s == 0 and st.total_s == pytest.approx(0.02 + 0.004)
    # FSDP over all 16 GPUs: one copy spans two domains, half of each shard comes through the NIC
    s = _scn({"hardware.num_gpus": 16, "training.backend": "fsdp"})
    st = weight_sync_time(s)
    assert st.transfer_s == pytest.approx(max(0.5 * W / 1e10, 0.5 * W / 1e11))  # 0.1 s


# ------------------------------------------------------------------------------------------- 4. data parallel


def _dp_scn(n: int, overlap: bool):
    return _scn(
        {
            "hardware.num_gpus": n,
            "training.backend": "megatron",
            "training.activation_recompute": "none",
            "training.overlap_communication": overlap,
        }
    )


def test_doubling_data_parallel_halves_compute_and_adds_the_dp_collectives():
    """Megatron t=p=1 on 4 and on 8 GPUs (d = 4, 8), same tokens: compute halves. With the distributed optimizer a
    reduce-scatter and an all-gather of the bf16 parameters per optimizer step, each (d-1)/d x 2 N bytes over
    NVLink; without overlap all of it is exposed."""
    tokens, steps = 8 * 1024 * 4 * 2, 2
    t4 = _train(_dp_scn(4, False), tokens, steps)
    t8 = _train(_dp_scn(8, False), tokens, steps)
    assert t4.compute_s == pytest.approx(3 * 2 * N * tokens / (4 * EFF_FLOPS))
    assert t8.compute_s == pytest.approx(t4.compute_s / 2)
    for tt, d in ((t4, 4), (t8, 8)):
        rs = _ring(2 * N, d, 1e11)
        assert tt.dp_comm_s == pytest.approx(steps * 2 * rs)
        assert tt.optimizer_s == pytest.approx(steps * 28 * N / d / 1e12)  # distributed optimizer shard
    assert t8.dp_comm_s == pytest.approx(2 * 2 * 0.0175)
    assert t8.dp_comm_s > t4.dp_comm_s  # (7/8 vs 3/4 of the bytes)


def test_dp_overlap_hides_the_last_micro_batch():
    """overlap_communication: the reduce-scatter hides behind the last micro-batch's backward (2/3 of its
    compute) and the all-gather behind the next forward (1/3): exposed = rs + ag - last micro-batch when both
    outlast their windows. 8 GPUs, 1024 tokens per micro-batch per GPU -> last micro-batch 12.288 ms."""
    tokens, steps = 8 * 1024 * 4 * 2, 2
    tt = _train(_dp_scn(8, True), tokens, steps)
    assert tt.micro_batches == 4
    last_mb = 3 * 2 * N * (8 * 1024) / (8 * EFF_FLOPS)
    assert last_mb == pytest.approx(0.012288)
    assert tt.compute_s == pytest.approx(steps * 4 * last_mb)
    rs = ag = _ring(2 * N, 8, 1e11)
    expected = steps * (max(0.0, rs - 2 / 3 * last_mb) + max(0.0, ag - 1 / 3 * last_mb))
    assert expected == pytest.approx(steps * (rs + ag - last_mb))
    assert tt.dp_comm_s == pytest.approx(expected)
    # a long micro-batch (8 bins of 1024 tokens) hides both collectives entirely
    s = _scn(
        {
            "hardware.num_gpus": 8,
            "training.backend": "megatron",
            "training.activation_recompute": "none",
            "training.micro_batch_size": 8,
        }
    )
    assert _train(s, 8 * 8192 * 2, 1).dp_comm_s == 0


def test_dp_overlap_windows_with_full_recompute():
    """Full recompute: the last micro-batch is 4 forwards, its backward 3 of them (recompute + 2), the next
    step's first forward 1. An all-gather larger than one forward is exposed by ag - last/4."""
    s = _scn({"hardware.num_gpus": 8, "training.backend": "megatron", "training.micro_batch_size": 2})
    tokens = 8 * 2048 * 4
    tt = _train(s, tokens, 1)
    last_mb = tt.compute_s / 4
    assert last_mb == pytest.approx(4 * 2 * N * (8 * 2048) / (8 * EFF_FLOPS))  # 32.768 ms
    rs = ag = _ring(2 * N, 8, 1e11)  # 17.5 ms: hidden behind the backward (24.6 ms), not behind one forward (8.2)
    assert tt.dp_comm_s == pytest.approx(max(0.0, rs - 3 / 4 * last_mb) + max(0.0, ag - 1 / 4 * last_mb))


# ------------------------------------------------------------------------------------------- 5. refusals


def _refused(over: dict[str, Any], *parts: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        _scn(over)
    msg = str(info.value)
    for part in parts:
        assert part in msg, (part, msg)
    assert "\n" not in msg
    return info.value


SMALL_GPU = {"hardware.gpu.memory_bytes": 100e9}  # 90 GB for the trainer at memory_fraction 0.9


def test_memory_refuses_without_distributed_optimizer_and_loads_with_it():
    """Megatron d=8, 10e9 parameters: 6 bytes/param weights+grads (60 GB) + 12 bytes/param unsharded optimizer
    (120 GB) > 90 GB; the distributed optimizer shards the 12 bytes over d: 60 + 15 GB fits."""
    over = {
        **SMALL_GPU,
        "model.num_params": 10e9,
        "model.num_active_params": 10e9,
        "training.backend": "megatron",
        "training.distributed_optimizer": False,
    }
    err = _refused(
        over, "training.distributed_optimizer: False", "set training.distributed_optimizer: true", "optimizer 120.0"
    )
    assert err.field == "training.distributed_optimizer"
    s = _scn({**over, "training.distributed_optimizer": True})
    mem = training_memory.memory(s)
    assert mem.weights_grads_bytes == pytest.approx(6 * 10e9)
    assert mem.optimizer_bytes == pytest.approx(12 * 10e9 / 8)
    assert mem.fits


def test_memory_refuses_a_stage_too_large_and_pipeline_parallel_fixes_it():
    """14e9 parameters, d=8: 84 GB + 21 GB > 90 GB -> raise pipeline_parallel_size; p=2 halves the stage."""
    over = {**SMALL_GPU, "model.num_params": 14e9, "model.num_active_params": 14e9, "training.backend": "megatron"}
    err = _refused(over, "training.pipeline_parallel_size: 1", "raise training.pipeline_parallel_size")
    assert err.field == "training.pipeline_parallel_size"
    s = _scn({**over, "training.pipeline_parallel_size": 2})
    mem = training_memory.memory(s)
    assert mem.weights_grads_bytes == pytest.approx(6 * 7e9)
    assert mem.optimizer_bytes == pytest.approx(12 * 7e9 / 4)  # d = 8 / 2


def test_memory_refuses_moe_without_expert_parallel_and_ep_fixes_it():
    """MoE: 8 layers x 64 experts x 3 x 1024 x 1024 = 1.61e9 expert parameters of 2e9; on a 16 GB GPU the
    unsplit experts (12 GB weights+grads + 3 GB optimizer) do not fit 14.4 GB; expert parallel 8 does."""
    moe = {
        "model.num_params": 2e9,
        "model.num_active_params": 0.5e9,
        "model.num_experts": 64,
        "model.num_experts_per_token": 8,
        "model.moe_intermediate_size": 1024,
        "hardware.gpu.memory_bytes": 16e9,
        "training.backend": "megatron",
    }
    err = _refused(moe, "training.expert_parallel_size: 1", "raise training.expert_parallel_size")
    assert err.field == "training.expert_parallel_size"
    s = _scn({**moe, "training.expert_parallel_size": 8})
    expert = 8 * 64 * 3 * 1024 * 1024
    assert s.model.expert_params == expert
    mem = training_memory.memory(s)
    assert mem.weights_grads_bytes == pytest.approx(6 * ((2e9 - expert) + expert / 8))
    assert mem.optimizer_bytes == pytest.approx(12 * ((2e9 - expert) / 8 + expert / 8))  # d_expert = 8/8 = 1


def test_memory_refuses_activations_without_recompute_and_full_recompute_fixes_it():
    """micro_batch_size 64 x 1024 tokens, no recompute: 34 s h bytes per layer x 8 layers = 18.3 GB (+ 0.26 GB of
    fp32 logits) against 7.5 GB of weights, gradients and optimizer; over the 14.4 GB budget of a 16 GB GPU the
    activations dominate -> training.activation_recompute; full recompute keeps 2 s h per layer (1.1 GB) plus one
    recomputed layer (2.3 GB)."""
    over = {
        "hardware.gpu.memory_bytes": 16e9,
        "training.backend": "megatron",
        "training.micro_batch_size": 64,
        "training.activation_recompute": "none",
    }
    err = _refused(over, "training.activation_recompute: 'none'", "set training.activation_recompute: full")
    assert err.field == "training.activation_recompute"
    s = _scn({**over, "training.activation_recompute": "full"})
    tok = 64 * PACK
    mem = training_memory.memory(s)
    expected = tok * 2 * H * L + tok * 34 * H + tok * 1000 * 4  # layer inputs + one recomputed layer + logits
    assert mem.activation_bytes == pytest.approx(expected)
    assert mem.fits


def test_fsdp_memory_refuses_without_optimizer_offload_and_offload_fixes_it():
    """FSDP on one GPU: 8 + 8 bytes per parameter; 6e9 parameters = 96 GB > 90 GB; CPU Adam (ZeRO-Offload: the
    fp32 master and the moments on the host, bf16 parameters and gradients on the GPU) leaves 4 x 6e9 = 24 GB."""
    over = {**SMALL_GPU, "hardware.num_gpus": 1, "model.num_params": 6e9, "model.num_active_params": 6e9}
    err = _refused(
        over, "training.offload_optimizer: False", "set training.offload_optimizer: true", "hardware.num_gpus"
    )
    assert err.field == "training.offload_optimizer"
    s = _scn({**over, "training.offload_optimizer": True})
    mem = training_memory.memory(s)
    assert mem.weights_grads_bytes == pytest.approx(4 * 6e9)
    assert mem.optimizer_bytes == 0


def test_fp8_training_needs_fp8_tensor_cores():
    err = _refused(
        {"hardware.gpu.fp8_flops_per_s": None, "training.precision": "fp8"},
        "training.precision: 'fp8'",
        "set training.precision: bf16",
    )
    assert err.field == "training.precision"
    s = _scn({"training.precision": "fp8", "hardware.num_gpus": 1})
    # FP8 GEMMs at fp8 peak x fp8_train_compute_efficiency (default 0.3)
    assert _train(s, 1e4).compute_s == pytest.approx(4 * 2 * N * 1e4 / (2e15 * 0.3))


@pytest.mark.parametrize(
    "over, field, words",
    [
        ({"training.bogus": 1}, "training.bogus", "is not a known key"),
        ({"training.backend": "foo"}, "training.backend", "is not allowed"),
        (
            {"training.backend": "megatron", "training.tensor_parallel_size": 0},
            "training.tensor_parallel_size",
            "must be at least 1",
        ),
        ({"training.global_batch_size": 48}, "training.global_batch_size", "must divide the responses per step"),
        ({"training.tensor_parallel_size": 2}, "training.tensor_parallel_size", "backend fsdp"),
        (
            {"training.backend": "megatron", "training.tensor_parallel_size": 3},
            "training.tensor_parallel_size",
            "must divide",
        ),
        (
            {"training.backend": "megatron", "training.pipeline_parallel_size": 16},
            "training.tensor_parallel_size",
            "must divide",
        ),
        (
            {"hardware.num_gpus": 16, "training.backend": "megatron", "training.pipeline_parallel_size": 16},
            "training.pipeline_parallel_size",
            "exceeds the model's 8 layers",
        ),
        (
            {"training.backend": "megatron", "training.virtual_pipeline_stages": 2},
            "training.virtual_pipeline_stages",
            "needs pipeline_parallel_size > 1",
        ),
        (
            {"training.backend": "megatron", "training.expert_parallel_size": 2},
            "training.expert_parallel_size",
            "needs a MoE model",
        ),
        ({"training.offload_params": True, "training.backend": "megatron"}, "training.offload_params", "FSDP option"),
        ({"weight_sync.transfer": "multicast"}, "weight_sync.transfer", "is not allowed"),
        (
            {"training.global_batch_size": 32, "algorithm.mini_batches_per_step": 2},
            "algorithm.mini_batches_per_step",
            "contradicts training.global_batch_size",
        ),
    ],
)
def test_bad_training_input_names_the_field(over, field, words):
    err = _refused(over, field, words)
    assert err.field == field


# ------------------------------------------------------------------------------------------- 6. CLI


def test_cli_bad_training_section_is_one_line_and_exit_2(tmp_path):
    raw = _raw({"training": {"backend": "megatron", "tensor_parallel_size": 3}})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(raw))
    proc = subprocess.run(
        [sys.executable, "-m", "rlsim.cli", "run", str(path), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert re.match(r"^rlsim: error: training\.tensor_parallel_size: 3 ", lines[0]), lines[0]
    assert "8 training GPUs" in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


# ------------------------------------------------------------------------------------------- 7. optimizer steps


def test_optimizer_steps_follow_the_global_batch():
    base = {"workload.prompts_per_step": 256, "workload.group_size": 8}  # P x G = 2048
    assert _scn(base).optimizer_steps_per_step == 1
    assert _scn({**base, "training.global_batch_size": 2048}).optimizer_steps_per_step == 1
    assert _scn({**base, "training.global_batch_size": 512}).optimizer_steps_per_step == 4
    assert (
        _scn({**base, "training.global_batch_size": 512, "algorithm.epochs_per_step": 2}).optimizer_steps_per_step == 8
    )
    assert _scn({**base, "algorithm.mini_batches_per_step": 4}).optimizer_steps_per_step == 4


def test_simulated_train_phase_pays_every_optimizer_step():
    """One GPU (no communication), FSDP: the same tokens in 4 optimizer steps instead of 1 add 3 x (step overhead
    + Adam over all N parameters at 28 B/param through HBM) to train_actor."""
    over = {
        "workload.prompts_per_step": 256,
        "workload.group_size": 8,
        "hardware.num_gpus": 1,
        "costs.train_step_overhead_s": 0.5,
        "run.steps": 1,
    }
    one = rlsim.simulate(_scn({**over, "training.global_batch_size": 2048})).summary()["phase_time_s"]
    four = rlsim.simulate(_scn({**over, "training.global_batch_size": 512})).summary()["phase_time_s"]
    per_step = 0.5 + 28 * N / 1e12
    assert four["train_actor"] - one["train_actor"] == pytest.approx(3 * per_step, rel=1e-9)
    # and the phase itself: 4 steps of overhead and Adam + compute of 2048 x 1024 tokens (full recompute),
    # attention included: 0.5 x 4 L heads d per token pair, 4 passes (full recompute), causal sum s^2 per sequence
    tokens = 2048 * 1024
    attn = 0.5 * 4 * L * 8 * 128 * 2048 * 1024**2
    compute = (4 * 2 * N * tokens + 4 * attn) / EFF_FLOPS
    assert four["train_actor"] == pytest.approx(compute + 4 * per_step, rel=1e-9)


# ----------------------------------------------------------------------------------------------------------
# reference model, colocated broadcast, trainer offload, in-flight updates (review additions)


def test_reference_swap_moves_three_shards_over_the_host_link():
    """Megatron t 2 x p 2 on 8 GPUs: a GPU holds N / 4 parameters; the swap moves 3 x 2 bytes of each at the
    host link (1e10 B/s) times host_link_efficiency (0.5): 3 x 0.5e9 / 5e9 = 0.3 s."""
    s = _scn(
        {
            "training.backend": "megatron",
            "training.tensor_parallel_size": 2,
            "training.pipeline_parallel_size": 2,
            "training.reference_on_host": True,
            "costs.host_link_efficiency": 0.5,
        }
    )
    assert training.reference_swap_s(s, s.model) == pytest.approx(3 * (N / 4 * 2) / 5e9)
    off = _scn({"training.backend": "megatron", "training.tensor_parallel_size": 2})
    assert training.reference_swap_s(off, off.model) == 0.0


def test_gpu_resident_reference_counts_in_training_memory():
    """kl_reference without reference_on_host: the reference's bf16 shard (2 N / 8 bytes on 8 FSDP GPUs) adds to
    the weights the memory check counts; on the host it does not."""
    on_gpu = _scn({"algorithm.kl_reference": True})
    on_host = _scn({"algorithm.kl_reference": True, "training.reference_on_host": True})
    base = training_memory.memory(on_gpu).weights_grads_bytes
    assert training_memory.resident_memory(on_gpu).weights_grads_bytes == pytest.approx(base + 2 * N / 8)
    assert training_memory.resident_memory(on_host).weights_grads_bytes == pytest.approx(base)


def test_colocated_broadcast_brings_the_whole_model_to_every_gpu():
    """16 colocated GPUs under FSDP: one trainer copy spans two NVLink domains, so half of the whole model (W)
    comes through the NIC (1e10) and half over NVLink (1e11): transfer = max(W/2 / 1e10, W/2 / 1e11) = 0.1 s."""
    s = _scn({"hardware.num_gpus": 16, "weight_sync.transfer": "broadcast"})
    assert weight_sync_time(s).transfer_s == pytest.approx(0.5 * W / 1e10)


def test_trainer_offload_adds_its_state_to_the_host_traffic():
    """offload_trainer: weights, gradients and optimizer state (16 N / 8 bytes per FSDP GPU) go out and back."""
    plain = _scn({})
    off = _scn({"weight_sync.offload_trainer": True})
    extra = weight_sync_time(off).host_s - weight_sync_time(plain).host_s
    assert extra == pytest.approx(2 * 16 * N / 8 / 1e10)
    with pytest.raises(ScenarioError, match="weight_sync.offload_trainer"):
        _scn(
            {
                "hardware.placement": "separate",
                "hardware.rollout_gpus": 4,
                "hardware.train_gpus": 4,
                "schedule.mode": "sync-separate",
                "weight_sync.offload_trainer": True,
            }
        )


def _async(over):
    return _scn(
        {
            "hardware.placement": "separate",
            "hardware.rollout_gpus": 4,
            "hardware.train_gpus": 4,
            "schedule.mode": "async",
            "schedule.max_staleness": 1,
            "run.steps": 6,
            **over,
        }
    )


def test_in_flight_updates_stall_busy_engines_only():
    """Generation-bound: every weight update lands while the engines generate, so each steady batch's rollout is
    its engine time plus one stall (the sync's transfer + copy). Trainer-bound: updates land while the engines
    wait for the trainer, and cost them nothing."""
    from rlsim.run.pipeline import run_pipeline

    gen_bound = _async({"costs.weight_sync_latency_s": 0})
    recs, _ = run_pipeline(gen_bound)
    pause = weight_sync_time(gen_bound).engine_pause_s
    assert pause > 0
    no_stall = _async({"schedule.in_flight_weight_updates": False})
    base, _ = run_pipeline(no_stall)
    for a, b in zip(recs[2:-1], base[2:-1]):
        assert a["timing_s"]["rollout"] == pytest.approx(b["timing_s"]["rollout"] + pause)
    slow_trainer = {"costs.train_step_overhead_s": 1000.0}
    recs, _ = run_pipeline(_async(slow_trainer))
    base, _ = run_pipeline(_async({**slow_trainer, "schedule.in_flight_weight_updates": False}))
    for a, b in zip(recs[2:], base[2:]):
        assert a["timing_s"]["rollout"] == pytest.approx(b["timing_s"]["rollout"])


def test_a_batch_padded_to_its_longest_costs_responses_times_that_length():
    """pad_to_longest: every log-prob and training pass sees each sequence at the step's longest prompt + response,
    so the passes cost exactly what the same passes cost for n x longest tokens (and n x longest^2 for attention);
    the rollout is untouched. With packing on it is refused: packing leaves no padding."""
    import rlsim
    from rlsim.errors import ScenarioError
    from rlsim.run.costs import RooflineCostModel

    over = {
        "training.sequence_packing": False,
        "training.micro_batch_size": 16,  # compute-bound passes (few weight reads per pass)
        "workload.max_response_tokens": 4096,
        "workload.response_length": {"dist": "uniform", "low": 64, "high": 4096},
    }
    plain = _scn(over)
    padded = _scn({**over, "training.pad_to_longest": True})
    run_p, run_q = rlsim.simulate(plain), rlsim.simulate(padded)
    rec = run_q.records[0]
    n = rec["responses"]
    # the step's longest sequence, from the pipeline's own draws of the first step
    import numpy as np

    from rlsim.run.batches import step_requests

    rng = np.random.default_rng(padded.run.seed)
    prompts, responses, *_ = next(step_requests(padded, rng))
    longest = float((prompts + responses).max())
    cost = RooflineCostModel.from_scenario(padded)
    expected = cost.train_s(padded.model, n * longest, n * longest * longest, padded.optimizer_steps_per_step, 1, n)
    assert rec["timing_s"]["train_actor"] == pytest.approx(expected, rel=1e-9)
    assert rec["timing_s"]["rollout"] == run_p.records[0]["timing_s"]["rollout"]
    assert rec["timing_s"]["train_actor"] > run_p.records[0]["timing_s"]["train_actor"]
    with pytest.raises(ScenarioError, match="pad_to_longest"):
        _scn({"training.pad_to_longest": True})


def test_remove_padding_prices_a_micro_batch_at_its_real_tokens():
    """Without padding a micro-batch holds its sequences' real tokens: prompts fixed at 200 of a 512 cap and
    responses fixed at 100 of 512 give 8 x 300 tokens, not 8 x 1024; with lognormal responses the 99th percentile
    of 8 sequences' sum, between the mean and the cap; padded (the default) prices the cap."""
    over = {
        "training.sequence_packing": False,
        "training.micro_batch_size": 8,
        "workload.prompt_length": {"dist": "fixed", "tokens": 200},
        "workload.response_length": {"dist": "fixed", "tokens": 100},
    }
    assert training_memory.micro_batch_tokens(_scn(over)) == 8 * PACK
    assert training_memory.micro_batch_tokens(_scn({**over, "training.remove_padding": True})) == 8 * 300
    spread = {**over, "training.remove_padding": True}
    spread["workload.response_length"] = {"dist": "lognormal", "mean_tokens": 100, "sigma": 1.0}
    tokens = training_memory.micro_batch_tokens(_scn(spread))
    assert 8 * 300 * 1.3 < tokens < 8 * PACK
    assert training_memory.micro_batch_tokens(_scn(spread)) == tokens  # seeded: the same answer every time
    packed = {**spread, "training.sequence_packing": True}  # bins of the cap: remove_padding changes nothing
    assert training_memory.micro_batch_tokens(_scn(packed)) == 8 * PACK


def test_remove_padding_contradicts_pad_to_longest():
    over = {"training.sequence_packing": False, "training.remove_padding": True, "training.pad_to_longest": True}
    err = _refused(over, "training.remove_padding: True", "remove one of training.remove_padding")
    assert err.field == "training.remove_padding"
