"""KV cache under tensor parallelism, counted by hand: a rank keeps max(1, kv_heads // TP) KV heads (vLLM
replicates them once TP exceeds the heads) and, with MLA, the whole latent. The replica's capacity and each
rank's decode reads follow from the bytes one rank holds per token."""

from __future__ import annotations

import pytest

from rlsim.errors import ScenarioError
from rlsim.run.costs import RooflineCostModel, engine_coefficients
from rlsim.scenario import from_dict


def _scenario(model: str, tp: int, gmu: float = 0.9, gpu: str = "GB200"):
    return from_dict(
        {
            "model": model,
            "hardware": {"gpu": gpu, "num_gpus": 512},
            "engine": {"tensor_parallel_size": tp, "gpu_memory_utilization": gmu},
            "training": {"offload_optimizer": True, "offload_params": True},
        }
    )


# bytes one rank holds per token: K and V x layers x the rank's KV heads x head_dim x 2 bytes (BF16), or the MLA
# latent (kv_lora_rank 512 + rope 64) x layers x 2 bytes; from the models' config.json
QWEN3_235B_RANK = {4: 2 * 94 * 1 * 128 * 2, 8: 2 * 94 * 1 * 128 * 2, 16: 2 * 94 * 1 * 128 * 2}
DEEPSEEK_V3_RANK = 61 * (512 + 64) * 2  # every rank, whatever the TP


@pytest.mark.parametrize("tp", [4, 8, 16])
def test_gqa_heads_shard_then_replicate(tp):
    s = _scenario("Qwen3-235B-A22B", tp)
    assert s.kv_bytes_per_token == pytest.approx(tp * QWEN3_235B_RANK[tp])
    # at TP = kv heads (4) the replica holds one copy (192,512 bytes a token); beyond, TP / 4 copies
    assert s.kv_replication == max(1, tp // 4)


@pytest.mark.parametrize("tp", [16, 32, 64])
def test_mla_latent_on_every_rank(tp):
    s = _scenario("DeepSeek-V3", tp)
    assert s.kv_replication == tp
    assert s.kv_bytes_per_token == pytest.approx(tp * DEEPSEEK_V3_RANK)


def test_dense_model_with_enough_heads_is_unchanged():
    s = _scenario("Llama-3.1-8B", 8)  # 8 KV heads over 8 ranks: one each
    assert s.kv_replication == 1
    assert s.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2


def test_capacity_is_each_ranks_memory_over_its_bytes_per_token():
    s = _scenario("Qwen3-235B-A22B", 16)
    e = s.engine
    per_gpu = s.hardware.engine_memory_bytes * (e.gpu_memory_utilization - e.activation_memory_fraction)
    per_gpu -= s.engine_weight_bytes / 16
    assert s.kv_capacity_tokens == int(per_gpu * 16 // (16 * QWEN3_235B_RANK[16]))
    # a quarter of what four-way sharded heads would have held
    assert s.kv_capacity_tokens == pytest.approx(per_gpu * 16 / (2 * 94 * 4 * 128 * 2) / 4, rel=1e-4)


def test_each_rank_reads_its_own_copy_in_decode():
    for model, tp, rank_bytes in [("Qwen3-235B-A22B", 16, QWEN3_235B_RANK[16]), ("DeepSeek-V3", 32, DEEPSEEK_V3_RANK)]:
        s = _scenario(model, tp)
        d = RooflineCostModel(s).decode_coefficients()
        gpu = s.hardware.gpu
        eff = engine_coefficients(s)["decode_memory_efficiency"] * gpu.memory_efficiency_factor
        assert d.mem_slope_s_per_token == pytest.approx(rank_bytes / (gpu.hbm_bandwidth_bytes_per_s * eff), rel=1e-9)


def test_llama_past_its_kv_heads_counts_two_copies():
    s = _scenario("Llama-3.1-8B", 16)  # 8 KV heads over 16 ranks: each head on two
    assert s.kv_replication == 2
    assert s.kv_bytes_per_token == 16 * (2 * 32 * 1 * 128 * 2)


@pytest.mark.parametrize(
    "model, tp, what",
    [("Llama-3.1-8B", 3, "32 attention heads"), ("Llama-3.1-8B", 6, "32 attention heads"), ("Qwen2.5-0.5B", 7, "KV")],
)
def test_a_tp_that_splits_heads_is_refused(model, tp, what):
    """vLLM refuses a TP that does not divide the attention heads, and splits or replicates whole KV heads."""
    with pytest.raises(ScenarioError, match=what):
        from_dict(
            {
                "model": model,
                "hardware": {"gpu": "H100-SXM", "num_gpus": 168},
                "engine": {"tensor_parallel_size": tp},
                "training": {"offload_optimizer": True, "offload_params": True},
            }
        )
