"""The cost model and the engine model together: decode is memory-bound at low concurrency (must-show 1)."""

import dataclasses

import numpy as np
import pytest

import rlsim
from rlsim import catalog
from rlsim.engine.iteration import decode_iteration_s
from rlsim.run.costs import RooflineCostModel, moe_weight_fraction
from rlsim.scenario import scheduler_rules, with_overrides
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
    s2 = with_overrides(s1, {"engine.tensor_parallel_size": 2})
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
    cost = RooflineCostModel(dataclasses.replace(scn, costs=costs))
    assert cost.rollout_overhead_s(0) == pytest.approx(0.25)
    assert cost.rollout_overhead_s(512) == pytest.approx(0.25 + 0.512)
    base = rlsim.simulate(scn).summary()["phase_time_s"]["rollout"]
    more = rlsim.simulate(with_overrides(scn, {"costs.rollout_s_per_sample": 0.001})).summary()["phase_time_s"]
    b = scn.workload.prompts_per_step * scn.workload.group_size
    assert more["rollout"] - base == pytest.approx(0.001 * b, rel=1e-6)


# ----------------------------------------------------------------------------------------------------------
# speculative decoding (MTP), expert-parallel DP attention, the engine's scheduler rules


def _mtp_model() -> dict:
    """Qwen3-8B's shape with one MTP module (a hypothetical model: only the field matters here)."""
    m = {k: v for k, v in catalog.model("Qwen3-8B").items() if k not in ("source", "notes", "verify", "hf_id")}
    return {**m, "name": "Qwen3-8B-mtp", "num_mtp_layers": 1}


def test_mtp_speculative_decoding_costs_by_hand():
    """k = 1 draft token accepted with a = 0.5: an iteration yields 1 + 0.5 = 1.5 tokens per sequence. It reads the
    weights once plus the MTP module (one layer's share of the weights + the LM head) once, verifies 2 tokens per
    sequence (twice the matmul FLOPs, twice the attention queries), and every coefficient is that cost / 1.5."""
    base = rlsim.load_scenario(SCENARIOS / "dense8b_h100_colocated.yaml", {"model": _mtp_model()})
    spec = rlsim.load_scenario(
        SCENARIOS / "dense8b_h100_colocated.yaml",
        {"model": _mtp_model(), "engine.speculative_tokens": 1, "engine.speculative_acceptance_rate": 0.5},
    )
    d0 = RooflineCostModel.from_scenario(base).decode_coefficients()
    d1 = RooflineCostModel.from_scenario(spec).decode_coefficients()
    m, gpu, c = spec.model, spec.hardware.gpu, spec.costs
    bw = gpu.hbm_bandwidth_bytes_per_s * c.decode_memory_efficiency
    module_bytes = (m.num_params * 2 / m.num_layers) + m.vocab_size * m.hidden_size * 2
    assert RooflineCostModel.from_scenario(spec).tokens_per_iteration == 1.5
    assert d1.mem_intercept_s[4] == pytest.approx((m.num_params * 2 + module_bytes) / bw / 1.5)
    assert d1.mem_slope_s_per_token == pytest.approx(d0.mem_slope_s_per_token / 1.5)
    assert d1.compute_slope_s_per_token == pytest.approx(d0.compute_slope_s_per_token * 2 / 1.5)
    module_flops = 2 * (m.num_active_params / m.num_layers + m.vocab_size * m.hidden_size)
    flops = gpu.bf16_flops_per_s * c.decode_compute_efficiency
    assert d1.compute_intercept_s[4] == pytest.approx((2 * m.num_active_params * 8 + module_flops * 4) / flops / 1.5)
    # memory-bound decode at a small batch: per generated token MTP is faster, (1 + module share) / 1.5 of it
    ratio = decode_iteration_s(d1, 4, 4000) / decode_iteration_s(d0, 4, 4000)
    assert 0.65 < ratio < 0.8


def test_mtp_raises_simulated_generation_throughput():
    over = {"model": _mtp_model(), "run.steps": 2}
    plain = rlsim.simulate(rlsim.load_scenario(SCENARIOS / "dense8b_h100_colocated.yaml", over)).summary()
    spec = rlsim.simulate(
        rlsim.load_scenario(SCENARIOS / "dense8b_h100_colocated.yaml", {**over, "engine.speculative_tokens": 2})
    ).summary()
    assert spec["generation_tokens_per_s"] > 1.3 * plain["generation_tokens_per_s"]


def test_speculative_tokens_need_mtp_modules():
    with pytest.raises(rlsim.ScenarioError, match="engine.speculative_tokens.*num_mtp_layers 0"):
        rlsim.load_scenario(SCENARIOS / "dense8b_h100_colocated.yaml", {"engine.speculative_tokens": 1})


def test_expert_parallel_shards_experts_over_dp_ranks_by_hand():
    """Qwen3-30B-A3B, TP 2, 2 attention DP ranks with EP: a GPU holds half the dense weights and a quarter of the
    experts; a rank's decode reads the dense weights and half the experts the tokens of both ranks touch; each MoE
    layer adds two all-to-alls of the rank's tokens x top-k x hidden, split over its TP GPUs."""
    over = {"run.steps": 2}
    tp = rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", over)
    ep = rlsim.load_scenario(
        SCENARIOS / "paper_grpo.yaml", {**over, "engine.expert_parallel": True, "engine.data_parallel_size": 2}
    )
    m = ep.model
    experts = m.expert_params * 2
    dense = m.num_params * 2 - experts
    assert ep.engine_weight_bytes_per_gpu == pytest.approx(dense / 2 + experts / 4)
    assert ep.kv_capacity_tokens > tp.kv_capacity_tokens
    cm = RooflineCostModel.from_scenario(ep)
    d = cm.decode_coefficients()
    b = 16
    bw = 2 * ep.hardware.gpu.hbm_bandwidth_bytes_per_s * ep.costs.decode_memory_efficiency
    frac = moe_weight_fraction(m.num_experts, m.num_experts_per_token, np.array([2 * b]))[0]
    # a rank streams its half of the touched experts at the expert GEMMs' share of the dense bandwidth
    moe = ep.costs.moe_decode_memory_efficiency_factor
    assert d.mem_intercept_s[b] == pytest.approx((dense + experts * frac / 2 / moe) / bw)
    slow = with_overrides(ep, {"costs.moe_decode_memory_efficiency_factor": moe / 2})
    d_slow = RooflineCostModel.from_scenario(slow).decode_coefficients()
    assert d_slow.mem_intercept_s[b] - d.mem_intercept_s[b] == pytest.approx(experts * frac / 2 / moe / bw)
    d_tp = RooflineCostModel.from_scenario(tp).decode_coefficients()
    sent = b * m.num_experts_per_token * m.hidden_size * m.dtype_bytes / 2
    a2a = 2 * (m.num_layers - m.num_dense_layers) * cm._all_to_all_s(np.array([sent]), 4)[0]
    assert d.overhead_s[b] - d_tp.overhead_s[b] == pytest.approx(a2a)
    assert a2a > 0


def test_dp_attention_without_expert_parallel_is_refused():
    with pytest.raises(rlsim.ScenarioError, match="engine.data_parallel_size"):
        rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", {"engine.data_parallel_size": 2})
    with pytest.raises(rlsim.ScenarioError, match="engine.expert_parallel.*dense"):
        rlsim.load_scenario(SCENARIOS / "dense8b_h100_colocated.yaml", {"engine.expert_parallel": True})


def test_scheduler_rules_resolution():
    """Engine fields win, then the named behaviour, then vLLM V1's defaults (budget by GPU memory)."""
    s = rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml")
    r = scheduler_rules(s)
    assert (r.block_size, r.chunked_prefill, r.prefix_caching, r.max_num_batched_tokens) == (16, True, True, 16384)
    old = scheduler_rules(rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", {"engine.behaviour": "vllm-0.5"}))
    w = s.workload
    assert (old.chunked_prefill, old.prefix_caching, old.block_size) == (False, False, 16)
    assert old.max_num_batched_tokens == max(w.max_prompt_tokens + w.max_response_tokens, 2048)
    mine = scheduler_rules(
        rlsim.load_scenario(
            SCENARIOS / "paper_grpo.yaml",
            {"engine.behaviour": "vllm-0.5", "engine.chunked_prefill": True, "engine.max_num_batched_tokens": 4096},
        )
    )
    assert (mine.chunked_prefill, mine.max_num_batched_tokens) == (True, 4096)
    a100 = scheduler_rules(rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", {"hardware.gpu": "A100-80GB"}))
    assert a100.max_num_batched_tokens == 8192
    with pytest.raises(rlsim.ScenarioError, match="engine.max_num_batched_tokens"):
        rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", {"engine.max_num_batched_tokens": 8})


def test_prefix_caching_shortens_grpo_prefill():
    """G = 8 responses share a 2,048-token prompt: with prefix caching the step prefills ~1/8 of the tokens."""
    over = {"run.steps": 2, "workload.prompt_length": {"dist": "fixed", "tokens": 2048}}
    on = rlsim.simulate(rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", over)).summary()
    off = rlsim.simulate(
        rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", {**over, "engine.prefix_caching": False})
    ).summary()
    assert on["step_time_s"] < off["step_time_s"]


def _sliding_model(window: int = 1024, layers: int = 18) -> dict:
    """Qwen3-8B's shape with half its 36 layers on a sliding window (a hypothetical model, like Gemma 2's mix)."""
    m = {k: v for k, v in catalog.model("Qwen3-8B").items() if k not in ("source", "notes", "verify", "hf_id")}
    return {**m, "name": "Qwen3-8B-swa", "sliding_window": window, "num_sliding_layers": layers}


def test_sliding_window_layers_keep_only_the_window_by_hand():
    """Half the layers slide over 1,024 tokens: a token costs half the KV bytes; every sequence that may run holds
    the window in the sliding layers (1,024 x half the bytes), taken off the cache; a decode iteration reads and
    attends to that window per sequence and to the full context only in the other half of the layers."""
    full = rlsim.load_scenario(SCENARIOS / "dense8b_h100_colocated.yaml")
    swa = rlsim.load_scenario(SCENARIOS / "dense8b_h100_colocated.yaml", {"model": _sliding_model()})
    per_token = full.kv_bytes_per_token
    assert swa.kv_bytes_per_token == per_token / 2
    assert swa.sliding_kv_bytes_per_seq == 1024 * per_token / 2
    kv_memory = full.kv_capacity_tokens * per_token  # the same bytes (to within one token)
    expected = (kv_memory - swa.engine.max_num_seqs * 1024 * per_token / 2) / (per_token / 2)
    assert swa.kv_capacity_tokens == pytest.approx(expected, abs=3)
    d0 = RooflineCostModel.from_scenario(full).decode_coefficients()
    d1 = RooflineCostModel.from_scenario(swa).decode_coefficients()
    bw = full.hardware.gpu.hbm_bandwidth_bytes_per_s * full.costs.decode_memory_efficiency
    assert d1.mem_slope_s_per_token == pytest.approx(d0.mem_slope_s_per_token / 2)
    assert d1.mem_intercept_s[8] - d0.mem_intercept_s[8] == pytest.approx(8 * 1024 * per_token / 2 / bw)
    assert d1.compute_slope_s_per_token == pytest.approx(d0.compute_slope_s_per_token / 2)
    # long contexts: per sequence at 16k tokens the sliding model reads ~ (16k/2 + 1k/2) / 16k = 53% of the KV
    ctx = 16384
    kv0 = d0.mem_slope_s_per_token * ctx
    kv1 = d1.mem_slope_s_per_token * ctx + (d1.mem_intercept_s[1] - d0.mem_intercept_s[1])
    assert kv1 / kv0 == pytest.approx((ctx / 2 + 512) / ctx)


def test_every_layer_sliding_is_refused():
    with pytest.raises(rlsim.ScenarioError, match="model.num_sliding_layers"):
        rlsim.load_scenario(SCENARIOS / "dense8b_h100_colocated.yaml", {"model": _sliding_model(layers=36)})
