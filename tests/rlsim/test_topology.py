"""Topology and GPU generations as the cost model sees them: which link an all-to-all rides (inside a GB200 tray,
across trays over multi-node NVLink, across trays over the NICs), FP8 weights on GPUs with and without FP8 tensor
cores, and the per-generation efficiency factors. Every expected number is computed here by hand from the catalog
figures."""

import numpy as np
import pytest

from rlsim import catalog
from rlsim.frameworks.nemo_rl.recipe import scenario_from_recipe
from rlsim.run.costs import RooflineCostModel
from rlsim.scenario import from_dict
from rlsim.trainer import training

GB200 = catalog.gpu("GB200")
NVLINK = GB200["link_bandwidth_bytes_per_s"]  # 900e9 per direction
NIC = GB200["nic_bandwidth_bytes_per_s"]  # 50e9 per GPU


def _scenario(gpu="GB200", num_gpus=16, **hardware):
    return from_dict(
        {
            "model": "Qwen3-30B-A3B",
            "hardware": {"gpu": gpu, "num_gpus": num_gpus, **hardware},
            "training": {"offload_optimizer": True},  # layouts of any size pass the memory check
        }
    )


def test_gb200_tray_and_rack():
    s = _scenario()
    assert s.hardware.node_gpus == 4  # a compute tray
    assert s.hardware.nvlink_domain == 4  # unless the job says so, trays talk over their NICs
    assert _scenario(multi_node_nvlink=True).hardware.nvlink_domain == 72  # the rack's fabric, NCCL's MNNVL
    assert _scenario(multi_node_nvlink=False).hardware.nvlink_domain == 4
    assert _scenario(gpus_per_node=4, multi_node_nvlink=True).hardware.nvlink_domain == 72
    # a DGX H100 node is its own NVLink domain whatever multi_node_nvlink says; 4-GPU nodes stay 4-GPU domains
    assert _scenario("H100-SXM").hardware.nvlink_domain == 8
    assert _scenario("H100-SXM", multi_node_nvlink=True).hardware.nvlink_domain == 8
    assert _scenario("H100-SXM", gpus_per_node=4).hardware.nvlink_domain == 4


def test_all_to_all_inside_a_tray_across_trays_over_nvlink_and_over_nics():
    nbytes = 1.6e9
    s = _scenario()
    c = s.costs
    eff, lat_in, lat_out = c.link_efficiency, c.collective_latency_s, c.internode_latency_s
    # EP 4 inside one tray: 3/4 of the bytes leave the GPU over NVLink
    inside = training.all_to_all_s(s, nbytes, 4, 4)
    assert inside == pytest.approx(0.75 * nbytes / (NVLINK * eff) + lat_in, rel=1e-12)
    # EP 16 over 4 trays with multi-node NVLink: 15/16 over NVLink, the in-domain latency
    mnnvl = training.all_to_all_s(_scenario(multi_node_nvlink=True), nbytes, 16, 16)
    assert mnnvl == pytest.approx(15 / 16 * nbytes / (NVLINK * eff) + lat_in, rel=1e-12)
    # EP 16 over 4 trays through the NICs: 12 of 16 destinations are in other trays (12/16 of the bytes over the
    # NIC), 3/16 stay in the tray on NVLink, both at once; the network latency
    s_nic = _scenario(multi_node_nvlink=False)
    nic = training.all_to_all_s(s_nic, nbytes, 16, 16)
    expected = max(12 / 16 * nbytes / (NIC * eff), 3 / 16 * nbytes / (NVLINK * eff)) + lat_out
    assert nic == pytest.approx(expected, rel=1e-12)
    assert training.all_to_all_s(s, nbytes, 16, 16) == nic  # the default prices the NICs
    assert inside < mnnvl < nic
    # with multi-node NVLink, a group larger than the rack (128 GPUs) sends (128 - 72) / 128 of its bytes through
    # the NICs
    big = training.all_to_all_s(_scenario(multi_node_nvlink=True), nbytes, 128, 128)
    expected = max(56 / 128 * nbytes / (NIC * eff), (127 / 128 - 56 / 128) * nbytes / (NVLINK * eff)) + lat_out
    assert big == pytest.approx(expected, rel=1e-12)


def test_import_config_and_published_rows_see_the_same_gb200_domain():
    row = {
        "model": "Qwen/Qwen3-30B-A3B",
        "gpu": "GB200-NVL72",
        "num_gpus": 16,
        "policy_mode": "on",
        "prompts_per_step": 64,
        "gens_per_prompt": 32,
        "avg_gen_len": 3000,
        "max_seq_len": 4096,
        "gen_tp": 1,
        "train_ep": 16,
    }
    published = from_dict(scenario_from_recipe(row, steps=2))
    imported = from_dict(scenario_from_recipe({**row, "gpus_per_node": 4}, steps=2))  # import-config sets it
    assert published.hardware.nvlink_domain == imported.hardware.nvlink_domain == 4
    assert published.hardware.node_gpus == imported.hardware.node_gpus == 4


def test_a_job_across_trays_is_told_which_link_it_was_priced_on():
    import rlsim

    s = _scenario(num_gpus=8)
    (line,) = s.hardware.topology_warnings()
    assert "span 2 GB200 nodes of 4" in line and "hardware.multi_node_nvlink: true" in line
    assert line in rlsim.simulate(s).warnings
    assert _scenario(num_gpus=4).hardware.topology_warnings() == []  # one tray: nothing crosses
    assert _scenario(num_gpus=8, multi_node_nvlink=True).hardware.topology_warnings() == []  # the user said
    assert _scenario(num_gpus=8, multi_node_nvlink=False).hardware.topology_warnings() == []
    assert _scenario("H100-SXM", num_gpus=16).hardware.topology_warnings() == []  # DGX: one node per domain


def test_recipe_expert_parallel_size_wins_over_the_table():
    row = {
        "model": "Qwen/Qwen3-30B-A3B",
        "gpu": "GB200-NVL72",
        "num_gpus": 16,
        "policy_mode": "async-1off",
        "colocated": False,
        "gen_gpus": 8,
        "train_gpus": 8,
        "prompts_per_step": 64,
        "gens_per_prompt": 32,
        "avg_gen_len": 3000,
        "max_seq_len": 4096,
        "train_ep": 16,  # the published table's cell: cannot divide 8 training GPUs
        "recipe_expert_parallel_size": 8,  # what the recipe at the tag runs
    }
    s = from_dict(scenario_from_recipe(row, steps=2))
    assert s.training.expert_parallel_size == 8
    assert s.engine.max_num_seqs == 128 and s.engine.max_num_batched_tokens == 2048  # vLLM AsyncLLM defaults


def _decode(gpu, precision):
    s = from_dict(
        {
            "model": "Qwen3-8B",
            "hardware": {"gpu": gpu, "num_gpus": 1},
            "engine": {"precision": precision, "max_num_seqs": 64},
            "training": {"offload_optimizer": True, "offload_params": True},
        }
    )
    return s, RooflineCostModel.from_scenario(s).decode_coefficients()


def test_fp8_weights_with_and_without_fp8_tensor_cores():
    """H100 runs FP8 GEMMs at its FP8 peak; A100 has no FP8 tensor cores, so FP8 checkpoints run weight-only
    (vLLM's Marlin W8A16): one byte per weight read, GEMMs at the BF16 peak."""
    b = 64
    for gpu in ("H100-SXM", "A100-80GB"):
        spec = catalog.gpu(gpu)
        s, fp8 = _decode(gpu, "fp8")
        _, bf16 = _decode(gpu, "bf16")
        n = s.model.num_active_params
        peak = spec["fp8_flops_per_s"] or spec["bf16_flops_per_s"]
        eff = s.costs.decode_compute_efficiency * spec.get("gemm_efficiency_factor", 1.0)
        # the compute intercept at batch b: 2 N b FLOPs at the peak the precision gets on this GPU
        assert fp8.compute_intercept_s[b] == pytest.approx(2 * n * b / (peak * eff), rel=1e-9)
        # weights: one byte each in FP8, two in BF16 (the memory intercept at batch 1 is the weight read)
        assert fp8.mem_intercept_s[1] == pytest.approx(bf16.mem_intercept_s[1] / 2, rel=0.02)
    assert catalog.gpu("A100-80GB")["fp8_flops_per_s"] is None


def test_generation_factors_carry_hopper_efficiencies():
    """The costs are Hopper fractions of peak: a GB200 training pass costs the FLOPs over GB200's peak times the
    same efficiency times its train factor, not the peak ratio alone."""
    gb, h = _scenario("GB200", 8), _scenario("H100-SXM", 8)
    tokens, sq = 1e6, 1e9
    t_gb = training._compute_s(gb, gb.model, tokens, sq, 8, forward_only=False)[0]
    t_h = training._compute_s(h, h.model, tokens, sq, 8, forward_only=False)[0]
    f = GB200["train_efficiency_factor"]
    assert t_h / t_gb == pytest.approx(GB200["bf16_flops_per_s"] / catalog.gpu("H100-SXM")["bf16_flops_per_s"] * f)
    # decode HBM: the bandwidth each generation streams is its peak x the decode efficiency x its memory factor
    s, d = _decode("GB200", "bf16")
    bw = GB200["hbm_bandwidth_bytes_per_s"] * s.costs.decode_memory_efficiency * GB200["memory_efficiency_factor"]
    assert d.mem_slope_s_per_token == pytest.approx(s.kv_bytes_per_token / bw, rel=1e-12)


def test_every_catalog_gpu_has_device_memory_and_sourced_factors():
    for name in catalog.gpu_names():
        spec = catalog.gpu(name)
        if spec.get("platform") == "cpu":
            continue
        assert spec.get("device_memory_bytes"), name
        assert "device_memory_bytes" in spec["source"], name
        factors = ("train_efficiency_factor", "gemm_efficiency_factor", "memory_efficiency_factor", "node_size")
        for key in (*factors, "sm_count", "boost_clock_hz"):
            if key in spec:
                assert key in spec["source"], f"{name}.{key} has no source"


def test_vllm_05_per_sequence_and_per_rank_work_is_priced_by_the_gpu():
    """vllm-0.5's per-sequence and per-rank overheads are GPU work stated for an H100: on an A100 they take Hopper's
    SMs x boost clock over the A100's longer (132 x 1.98 / (108 x 1.41) = 1.716); the V1 behaviour's stay host CPU."""
    from rlsim.schema.specs import small_kernel_time_factor

    v05 = catalog.engine("vllm-0.5")
    slow = 132 * 1.98 / (108 * 1.41)
    b, tp = 32, 4
    for gpu, factor in (("H100-SXM", 1.0), ("A100-80GB", slow)):
        s = from_dict(
            {
                "model": "Qwen3-8B",
                "hardware": {"gpu": gpu, "num_gpus": tp},
                "engine": {"behaviour": "vllm-0.5", "tensor_parallel_size": tp, "max_num_seqs": 64},
                "training": {"offload_optimizer": True, "offload_params": True},
            }
        )
        assert small_kernel_time_factor(s.hardware.gpu) == pytest.approx(factor, rel=1e-12)
        cost = RooflineCostModel.from_scenario(s)
        over = cost.decode_coefficients().overhead_s[b]
        comm = cost._decode_overheads(np.arange(65, dtype=float), cost.decode_coefficients().overhead_s * 0)
        cpu = v05["decode_iteration_overhead_s"] + factor * (
            v05["decode_per_seq_overhead_s"] * b + v05["tp_rank_overhead_s"] * (tp - 1)
        )
        assert comm["overhead_s"][b] == pytest.approx(cpu, rel=1e-12)
        assert over > cpu  # plus the TP all-reduces
    v1 = from_dict(
        {"model": "Qwen2.5-1.5B", "hardware": {"gpu": "A100-80GB", "num_gpus": 1}, "engine": {"behaviour": "vllm-v1"}}
    )
    e = catalog.engine("vllm-v1")
    got = RooflineCostModel.from_scenario(v1)._decode_overheads(np.arange(257, dtype=float), np.zeros(257))
    assert got["overhead_s"][b] == pytest.approx(e["decode_iteration_overhead_s"] + e["decode_per_seq_overhead_s"] * b)
