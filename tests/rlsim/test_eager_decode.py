"""vLLM with enforce_eager (issue 56): no CUDA graphs, the host launches every layer's kernels each decode
iteration, a floor under the iteration's GPU time (engines.yaml vllm-v1-eager, rlsim.run.costs._decode_overheads),
against numbers worked out by hand."""

import pytest

from rlsim import catalog
from rlsim.errors import ScenarioError
from rlsim.run.costs import RooflineCostModel
from rlsim.scenario import engine_behaviour, from_dict

LAYERS = 32  # Llama-3.1-8B
HOST_S = 2.9e-4  # eager_host_s_per_layer: DeepSpeed PR #8352, 3.51 ms a step / 12 GPT-2 layers
GAP_S = 1.2e-5  # eager_attention_s_per_layer (vLLM PR #20059)
HW = {"gpu": "H100-SXM", "num_gpus": 8}


def _scenario(eager: bool, engine_version: str = "0.11.2", **engine):
    return from_dict(
        {
            "model": "Llama-3.1-8B",
            "hardware": {"gpu": "H100-SXM", "num_gpus": 8},
            "software": {"engine_version": engine_version},
            "engine": {"enforce_eager": eager, "max_num_seqs": 256, **engine},
        }
    )


def _iteration_s(s, b: int, cached: int) -> float:
    """One decode iteration of ``b`` sequences over ``cached`` tokens (rlsim.engine.replica step 3)."""
    d = RooflineCostModel.from_scenario(s).decode_coefficients()
    mem = d.mem_intercept_s[b] + d.mem_slope_s_per_token * cached
    cmp = d.compute_intercept_s[b] + d.compute_slope_s_per_token * cached
    return float(max(mem, cmp, d.floor[b]) + d.overhead_s[b])


def test_enforce_eager_selects_the_eager_variant_of_the_release():
    assert engine_behaviour(_scenario(False)) == "vllm-v1"
    assert engine_behaviour(_scenario(True)) == "vllm-v1-eager"
    assert engine_behaviour(_scenario(True, "0.10.0")) == "vllm-v1-piecewise-eager"
    explicit = from_dict({"model": "Llama-3.1-8B", "hardware": HW, "engine": {"behaviour": "vllm-v1-eager"}})
    assert engine_behaviour(explicit) == "vllm-v1-eager"
    # the piecewise release keeps its MoE kernels; only the graph mode changes
    pw, pw_eager = catalog.engine("vllm-v1-piecewise"), catalog.engine("vllm-v1-piecewise-eager")
    assert pw_eager["unfused_grouped_topk_s_per_layer"] == pw["unfused_grouped_topk_s_per_layer"]
    assert pw_eager["eager_host_s_per_layer"] == catalog.engine("vllm-v1-eager")["eager_host_s_per_layer"] == HOST_S


def test_at_batch_1_the_host_launches_bind():
    # oracle: Llama-3.1-8B (32 layers, 8.03e9 bf16 parameters), one H100 (3.35e12 B/s x vllm-v1's fitted decode
    # memory efficiency e, 1.0), batch 1 over 1000 cached tokens. GPU: weights 16.06e9 B / (3.35e12 x e) = 4.79 ms, KV
    # 1000 x 131,072 B (32 layers x 8 KV heads x 128 x 2 x 2 B) = 0.04 ms, launch gaps 32 x 1.2e-5 = 0.384 ms:
    # 5.22 ms < the host's 32 x 2.9e-4 = 9.28 ms. Iteration: 9.28 ms + vllm-v1's serial CPU work
    # 4.0e-3 + 2.0e-6 x 1 = 13.282 ms
    e = catalog.engine("vllm-v1")["decode_memory_efficiency"]
    gpu_s = 8.03e9 * 2 / (3.35e12 * e) + 1000 * 131_072 / (3.35e12 * e) + LAYERS * GAP_S
    assert gpu_s == pytest.approx(5.22e-3, rel=0.01)
    host_s = LAYERS * HOST_S
    assert host_s == pytest.approx(9.28e-3) and host_s > gpu_s
    assert _iteration_s(_scenario(True), 1, 1000) == pytest.approx(host_s + 4.0e-3 + 2.0e-6, rel=1e-9)
    # with CUDA graphs the same iteration is the GPU roofline (no gaps) + the CPU work
    graphs = 8.03e9 * 2 / (3.35e12 * e) + 1000 * 131_072 / (3.35e12 * e) + 4.0e-3 + 2.0e-6
    assert _iteration_s(_scenario(False), 1, 1000) == pytest.approx(graphs, rel=2e-3)


def test_at_batch_256_the_gpu_roofline_hides_the_launches():
    # oracle: 256 sequences over 1000 cached tokens each: the KV read is 256,000 x 131,072 B / (3.35e12 x e)
    # = 10.0 ms, + 4.79 ms of weights = 14.8 ms > the host's 9.28 ms: eager costs only the launch gaps,
    # 32 x 1.2e-5 = 0.384 ms more than with CUDA graphs
    e = catalog.engine("vllm-v1")["decode_memory_efficiency"]
    gpu_s = (8.03e9 * 2 + 256_000 * 131_072) / (3.35e12 * e)
    assert gpu_s == pytest.approx(14.8e-3, rel=0.01) and gpu_s > LAYERS * HOST_S
    eager, graphs = _iteration_s(_scenario(True), 256, 256_000), _iteration_s(_scenario(False), 256, 256_000)
    assert eager - graphs == pytest.approx(LAYERS * GAP_S, rel=1e-9)
    assert eager == pytest.approx(gpu_s + LAYERS * GAP_S + 4.0e-3 + 2.0e-6 * 256, rel=2e-3)


def test_an_overlapped_loop_puts_cpu_work_and_launches_on_one_host_thread():
    # oracle: vllm-v1-async-eager at batch 1: the floor is the CPU work (4.002 ms) + the launches (9.28 ms)
    s = from_dict(
        {
            "model": "Llama-3.1-8B",
            "hardware": HW,
            "engine": {"behaviour": "vllm-v1-async", "enforce_eager": True, "max_num_seqs": 8},
        }
    )
    assert engine_behaviour(s) == "vllm-v1-async-eager"
    assert _iteration_s(s, 1, 1000) == pytest.approx(4.0e-3 + 2.0e-6 + LAYERS * HOST_S, rel=1e-9)


def test_enforce_eager_without_an_eager_variant_is_refused():
    with pytest.raises(ScenarioError, match="no eager variant of engine behaviour vllm-0.5"):
        from_dict({"model": "Llama-3.1-8B", "hardware": HW, "engine": {"behaviour": "vllm-0.5", "enforce_eager": True}})
    with pytest.raises(ScenarioError, match="needs a named engine behaviour"):
        from_dict({"model": "Llama-3.1-8B", "hardware": HW, "engine": {"enforce_eager": True}})


def test_a_typo_in_the_field_names_it():
    with pytest.raises(ScenarioError, match="enforce_eager"):
        from_dict({"model": "Llama-3.1-8B", "hardware": HW, "engine": {"enforce_eagre": True}})
