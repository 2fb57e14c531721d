"""The cost model and the engine model together: decode is memory-bound at low concurrency (must-show 1)."""

import dataclasses

import numpy as np
import pytest

import rlsim
from rlsim import catalog
from rlsim.costs import RooflineCostModel, moe_weight_fraction
from rlsim.engine import decode_iteration_s
from tests.conftest import SCENARIOS


def _paper(**over):
    return rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", {"run.steps": 3, **over})


def test_paper_generation_throughput_rises_then_flattens():
    """P=1024 gives >= 2x the generation tokens/s of P=128 (G=8), and the gain per doubling shrinks at high P."""
    tput = {}
    for p in (128, 256, 1024, 2048, 4096):
        tput[p] = rlsim.simulate(_paper(**{"workload.prompts_per_step": p})).summary()["generation_tokens_per_s"]
    assert tput[1024] >= 2.0 * tput[128]
    gain_low = tput[256] / tput[128]
    gain_high = tput[4096] / tput[2048]
    assert gain_high < gain_low
    assert gain_high < 1.3  # flat: KV capacity and compute cap the batch


def test_decode_iteration_memory_bound_at_low_batch():
    """Tokens/s of one decode iteration grows ~linearly with the batch while weight reads dominate."""
    s = rlsim.load_scenario(SCENARIOS / "dense8b_h100_colocated.yaml")
    d = RooflineCostModel.from_scenario(s).decode_coefficients()
    ctx = 1000  # cached tokens per sequence
    tps = {b: b / decode_iteration_s(d, b, b * ctx) for b in (1, 2, 4, 8, 16, 32, 64, 128, 256)}
    assert tps[2] / tps[1] > 1.9  # nearly doubles: the weights are read once for the whole batch
    assert tps[256] / tps[128] < tps[2] / tps[1]  # and flattens as KV reads grow with the batch
    # at batch 1 the memory line wins
    b = 1
    mem = d.mem_intercept_s[b] + d.mem_slope_s_per_token * ctx
    comp = d.compute_intercept_s[b] + d.compute_slope_s_per_token * ctx
    assert mem > 10 * comp


def test_roofline_numbers_by_hand():
    """Qwen3-8B on one H100: the batch-1 decode iteration reads the weights at e_mem x 3.35 TB/s."""
    s = rlsim.load_scenario(SCENARIOS / "dense8b_h100_colocated.yaml")
    m, gpu, c = s.model, s.hardware.gpu, s.costs
    d = RooflineCostModel.from_scenario(s).decode_coefficients()
    assert d.mem_intercept_s[1] == pytest.approx(
        m.num_params * 2 / (gpu.hbm_bandwidth_bytes_per_s * c.decode_memory_efficiency)
    )
    assert m.kv_bytes_per_token == 2 * 36 * 8 * 128 * 2  # K and V, 36 layers, 8 KV heads, head dim 128, bf16
    assert d.compute_intercept_s[10] == pytest.approx(
        2 * m.num_active_params * 10 / (gpu.bf16_flops_per_s * c.decode_compute_efficiency)
    )


def test_moe_reads_more_experts_as_batch_grows():
    frac = moe_weight_fraction(128, 8, np.array([1, 8, 64, 512]))
    assert frac[0] == pytest.approx(8 / 128)
    assert np.all(np.diff(frac) > 0) and frac[-1] > 0.99
    s = _paper()
    d = RooflineCostModel.from_scenario(s).decode_coefficients()
    assert d.mem_intercept_s[512] > 5 * d.mem_intercept_s[1]


def test_tensor_parallel_adds_bandwidth_and_communication():
    s1 = rlsim.load_scenario(SCENARIOS / "dense8b_h100_colocated.yaml")
    s2 = s1.with_overrides({"engine.tensor_parallel_size": 2})
    d1 = RooflineCostModel.from_scenario(s1).decode_coefficients()
    d2 = RooflineCostModel.from_scenario(s2).decode_coefficients()
    assert d2.mem_intercept_s[1] == pytest.approx(d1.mem_intercept_s[1] / 2)
    assert d2.overhead_s[64] > d1.overhead_s[64]
    assert s2.kv_capacity_tokens > 2 * s1.kv_capacity_tokens  # weights split over two GPUs free memory


def test_faster_hardware_is_faster():
    h100 = rlsim.simulate(_paper()).summary()
    h200 = rlsim.simulate(_paper(**{"hardware.gpu": "H200"})).summary()
    assert h200["generation_tokens_per_s"] > h100["generation_tokens_per_s"]
    assert h200["step_time_s"] < h100["step_time_s"]


def test_catalog_entries_have_sources():
    for name in catalog.gpu_names():
        entry = catalog.gpu(name)
        for key in ("bf16_flops_per_s", "hbm_bandwidth_bytes_per_s", "memory_bytes", "link_bandwidth_bytes_per_s"):
            assert isinstance(entry[key], (int, float)) and entry[key] > 0, (name, key)
            assert entry["source"].get(key), f"{name}.{key} has no source"
    required = {"A100-80GB", "H100-SXM", "H200", "B200", "L40S", "MI300X"}
    assert required <= set(catalog.gpu_names())
    models = {
        "Qwen2.5-0.5B",
        "Qwen2.5-1.5B",
        "Qwen2.5-7B",
        "Qwen3-8B",
        "Qwen3-32B",
        "Qwen3-30B-A3B",
        "Llama-3.1-8B",
        "Llama-3.1-70B",
        "SmolLM2-135M",
    }
    assert models <= set(catalog.model_names())
    for name in models:
        entry = catalog.model(name)
        assert entry["source"], name
        # parameter count agrees with the architecture within 5% (dense models; MoE checked below)
        if not entry["num_experts"]:
            h, L, v = entry["hidden_size"], entry["num_layers"], entry["vocab_size"]
            attn = (
                h * entry["num_attention_heads"] * entry["head_dim"] * 2
                + h * entry["num_kv_heads"] * entry["head_dim"] * 2
            )
            mlp = 3 * h * entry["intermediate_size"]
            emb = v * h * (1 if entry["tie_word_embeddings"] else 2)
            assert L * (attn + mlp) + emb == pytest.approx(entry["num_params"], rel=0.05), name
    moe = rlsim.scenario.ModelSpec(
        **{k: v for k, v in catalog.model("Qwen3-30B-A3B").items() if k not in ("source", "notes", "verify", "aliases")}
    )
    assert moe.expert_params == pytest.approx(48 * 128 * 3 * 2048 * 768)
    assert moe.num_active_params < 0.15 * moe.num_params


def test_rollout_host_overhead_grows_with_the_responses():
    """Per step the rollout pays rollout_overhead_s plus rollout_s_per_sample for every response; the simulated
    rollout phase carries it."""
    scn = rlsim.load_scenario(SCENARIOS / "small_1gpu.yaml")
    costs = dataclasses.replace(scn.costs, rollout_overhead_s=0.25, rollout_s_per_sample=0.001)
    cost = RooflineCostModel.from_scenario(scn, costs)
    assert cost.rollout_overhead_s(0) == pytest.approx(0.25)
    assert cost.rollout_overhead_s(512) == pytest.approx(0.25 + 0.512)
    base = rlsim.simulate(scn).summary()["phase_time_s"]["rollout"]
    more = rlsim.simulate(scn.with_overrides({"costs.rollout_s_per_sample": 0.001})).summary()["phase_time_s"]
    b = scn.workload.prompts_per_step * scn.workload.group_size
    assert more["rollout"] - base == pytest.approx(0.001 * b, rel=1e-6)
