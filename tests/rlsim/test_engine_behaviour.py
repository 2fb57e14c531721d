"""Engine behaviours (serial vs overlapped CPU work, named vLLM behaviours), FP8 KV cache, device memory."""

import numpy as np
import pytest

from rlsim import catalog
from rlsim.engine.iteration import DecodeCoefficients, PrefillCoefficients, decode_iteration_s
from rlsim.engine.replica import simulate_replica
from rlsim.errors import ScenarioError
from rlsim.run.costs import RooflineCostModel, engine_coefficients
from rlsim.scenario import from_dict

BASE = {"model": "Qwen3-8B", "hardware": {"gpu": "H100-SXM", "num_gpus": 8}}


def _scn(**engine):
    return from_dict({**BASE, "engine": engine})


def test_serial_cpu_work_adds_and_overlapped_cpu_work_is_a_floor():
    costs = {"decode_iteration_overhead_s": 0.01, "decode_per_seq_overhead_s": 1e-4, "tp_rank_overhead_s": 0.0}
    serial = from_dict({**BASE, "engine": {"cpu_overlap": False}, "costs": costs})
    overlap = from_dict({**BASE, "engine": {"cpu_overlap": True}, "costs": costs})
    ds = RooflineCostModel.from_scenario(serial).decode_coefficients()
    do = RooflineCostModel.from_scenario(overlap).decode_coefficients()
    b, k = 16, 1000.0
    gpu = max(
        ds.mem_intercept_s[b] + ds.mem_slope_s_per_token * k,
        ds.compute_intercept_s[b] + ds.compute_slope_s_per_token * k,
    )
    cpu = 0.01 + 1e-4 * b
    assert decode_iteration_s(ds, b, k) == pytest.approx(gpu + cpu)
    assert decode_iteration_s(do, b, k) == pytest.approx(max(gpu, cpu))  # TP 1: no collectives
    assert cpu > gpu  # this case is CPU-bound, so the floor decides


def test_named_behaviour_replaces_the_costs_fields():
    s = _scn(behaviour="vllm-0.5", tensor_parallel_size=2)
    entry = catalog.engine("vllm-0.5")
    got = engine_coefficients(s)
    assert got["cpu_overlap"] is False
    assert got["decode_per_seq_overhead_s"] == pytest.approx(float(entry["decode_per_seq_overhead_s"]))
    d = RooflineCostModel.from_scenario(s).decode_coefficients()
    tp_comm = d.overhead_s[4] - (
        entry["decode_iteration_overhead_s"] + 4 * entry["decode_per_seq_overhead_s"] + entry["tp_rank_overhead_s"]
    )
    assert tp_comm > 0  # the all-reduces of TP 2 remain on top
    with catalog.engine_overrides({"vllm-0.5": {"tp_rank_overhead_s": 1.0}}):
        assert engine_coefficients(s)["tp_rank_overhead_s"] == 1.0
    assert engine_coefficients(s)["tp_rank_overhead_s"] == pytest.approx(float(entry["tp_rank_overhead_s"]))


def test_unknown_behaviour_is_refused_with_the_names():
    with pytest.raises(ScenarioError, match=r"engine.behaviour.*vllm-0.5, vllm-v1"):
        _scn(behaviour="vllm-9")


def test_fp8_kv_cache_doubles_capacity_and_halves_kv_reads():
    a, b = _scn(), _scn(kv_cache_dtype="fp8")
    assert b.kv_capacity_tokens == pytest.approx(2 * a.kv_capacity_tokens, abs=1)
    da, db = (RooflineCostModel.from_scenario(x).decode_coefficients() for x in (a, b))
    assert db.mem_slope_s_per_token == pytest.approx(da.mem_slope_s_per_token / 2)


def test_kv_cache_sized_from_the_memory_cuda_reports():
    """H100: 85e9 bytes reported; KV = (85e9 x (0.9 - 0.05) - weights / TP) x TP / bytes per token."""
    s = _scn(gpu_memory_utilization=0.9)
    m = s.model
    expected = int((85.0e9 * 0.85 - m.num_params * 2) // m.kv_bytes_per_token)
    assert s.kv_capacity_tokens == expected


def test_overlapped_floor_matches_iteration_by_iteration_sum():
    """The closed form of a run of iterations with a floor equals the plain sum (one request, growing K)."""
    decode = DecodeCoefficients(
        mem_intercept_s=np.array([0.0, 0.001]),
        mem_slope_s_per_token=1e-6,
        compute_intercept_s=np.array([0.0, 0.0005]),
        compute_slope_s_per_token=2e-6,
        overhead_s=np.array([0.0, 0.0]),
        floor_s=np.array([0.0, 0.0015]),
    )
    prefill = PrefillCoefficients(0.0, 0.0, 0.0)
    res = simulate_replica(np.array([100]), np.array([2000]), 1, 5000, decode, prefill)
    plain = sum(max(0.001 + 1e-6 * k, 0.0005 + 2e-6 * k, 0.0015) for k in range(100, 2100))
    assert res.makespan_s == pytest.approx(plain, rel=1e-12)
