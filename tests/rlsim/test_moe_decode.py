"""vLLM-release mechanisms of the MoE decode path (issue 56, rlsim.run.moe_decode): the shared expert on a second
CUDA stream (0.11.1+) and the unfused grouped top-k router (0.10.0), each against numbers worked out by hand."""

import dataclasses

import pytest

from rlsim import catalog
from rlsim.catalog.hf_config import spec_from_path
from rlsim.run.costs import RooflineCostModel
from rlsim.scenario import from_dict
from rlsim.schema import ModelSpec

HF_CONFIGS = catalog.__path__[0] + "/hf_configs"


def _model(name: str, **over) -> ModelSpec:
    fields = {f.name for f in dataclasses.fields(ModelSpec)}
    return ModelSpec(**{**{k: v for k, v in catalog.model(name).items() if k in fields}, **over})


def _dsv3(**over) -> ModelSpec:
    return _model("DeepSeek-V3", **over)


def _scenario(engine_version: str, model: ModelSpec | None = None, gpu: str = "H100-SXM", tp: int = 32):
    """One engine replica of ``tp`` GPUs decoding ``model`` (DeepSeek-V3 unless given) on that vLLM release; the
    trainer's memory check is left out (only the decode roofline is read)."""
    base = from_dict(
        {
            "model": "Qwen3-30B-A3B",
            "hardware": {"gpu": gpu, "num_gpus": 32},
            "software": {"engine_version": engine_version},
        }
    )
    engine = dataclasses.replace(base.engine, tensor_parallel_size=tp, max_num_seqs=300)
    return dataclasses.replace(base, model=model or _dsv3(), engine=engine)


def _decode(s, **behaviour):
    """The decode coefficients with the behaviour's values replaced (``behaviour``), for a with/without pair."""
    name = {"0.10.0": "vllm-v1-piecewise", "0.11.2": "vllm-v1"}[s.software.engine_version]
    with catalog.engine_overrides({name: behaviour}):
        return RooflineCostModel.from_scenario(s).decode_coefficients()


def test_the_shared_expert_beside_the_routed_ones_hides_its_weight_read_at_batch_64():
    # oracle: DeepSeek-V3, vLLM 0.11.2, TP 32 on H100s, 64 sequences. The shared expert of a MoE layer is
    # 3 x 7168 x 2048 parameters = 44,040,192 x 2 bytes (bf16) = 88,080,384 bytes, read every iteration; the
    # replica reads at 32 x 3.35e12 B/s x vllm-v1's decode_memory_efficiency. Its FLOPs (2 x 44.0e6 x 64 = 5.6e9
    # over 32 x 989.4e12 x 0.5) take 0.36 us, less than the read, and the routed experts' read at 64 tokens
    # (1 - (1 - 8/256)^64 = 87% of 256 experts) is far longer: the hidden time is the shared expert's read,
    # x 58 MoE layers (61 layers, 3 dense)
    s = _scenario("0.11.2")
    e_mem = catalog.engine("vllm-v1")["decode_memory_efficiency"]
    shared_bytes = 3 * 7168 * 2048 * 2
    assert shared_bytes == 88_080_384
    expected = 58 * shared_bytes / (32 * 3.35e12 * e_mem)
    assert expected == pytest.approx(47.7e-6, rel=0.01)  # at e_mem 1.0: 0.822 us a layer
    on, off = _decode(s), _decode(s, shared_expert_overlap_max_tokens=0)
    assert off.mem_intercept_s[64] - on.mem_intercept_s[64] == pytest.approx(expected, rel=1e-9)
    # the iteration's max drops by the same on the compute line, so the roofline max does too
    assert off.compute_intercept_s[64] - on.compute_intercept_s[64] == pytest.approx(expected, rel=1e-9)
    # at 256 tokens (VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD, still overlapped) the shared expert's FLOPs,
    # 2 x 44,040,192 x 256 over 32 x 989.4e12 x 0.5 = 1.425 us, outlast its 0.822 us read: 58 x 1.425 us hidden
    assert s.costs.decode_compute_efficiency == 0.5
    at_256 = 58 * 2 * 44_040_192 * 256 / (32 * 989.4e12 * 0.5)
    assert at_256 == pytest.approx(82.6e-6, rel=0.01)
    assert off.mem_intercept_s[256] - on.mem_intercept_s[256] == pytest.approx(at_256, rel=1e-9)
    # none at 257 tokens or in an empty iteration
    assert on.mem_intercept_s[257] == off.mem_intercept_s[257] and on.mem_intercept_s[0] == off.mem_intercept_s[0]
    # vLLM 0.10.0 runs it after the routed experts: nothing hidden
    old = _scenario("0.10.0")
    assert catalog.engine("vllm-v1-piecewise")["shared_expert_overlap_max_tokens"] == 0
    serial, overlapped = _decode(old), _decode(old, shared_expert_overlap_max_tokens=256)
    assert (serial.mem_intercept_s[1:257] > overlapped.mem_intercept_s[1:257]).all()


def test_the_hidden_time_is_the_shorter_stream_and_needs_a_shared_expert():
    # oracle: 4 shared experts beside 1 routed of 256 at batch 1, TP 8: the routed stream reads 1 expert
    # (1 - (1 - 1/256)^1 = 1/256 of 256) at the grouped GEMMs' 0.67 of the bandwidth, 1.49 experts' time, shorter
    # than the 4 shared experts' read: 58 x 44,040,192 x 2 / 0.67 bytes at 8 x 3.35e12 x e_mem
    s = _scenario("0.11.2", _dsv3(num_shared_experts=4, num_experts_per_token=1), tp=8)
    e_mem = catalog.engine("vllm-v1")["decode_memory_efficiency"]
    assert s.costs.moe_decode_memory_efficiency_factor == 0.67
    expected = 58 * 3 * 7168 * 2048 * 2 / 0.67 / (8 * 3.35e12 * e_mem)
    on, off = _decode(s), _decode(s, shared_expert_overlap_max_tokens=0)
    assert off.mem_intercept_s[1] - on.mem_intercept_s[1] == pytest.approx(expected, rel=1e-9)
    # Qwen3-30B-A3B has no shared expert: the stream changes nothing
    qwen = _scenario("0.11.2", _model("Qwen3-30B-A3B"), tp=4)
    assert (_decode(qwen).mem_intercept_s == _decode(qwen, shared_expert_overlap_max_tokens=0).mem_intercept_s).all()


def test_an_unfused_grouped_top_k_adds_its_kernels_per_moe_layer_on_vllm_0_10():
    # oracle: vLLM 0.10.0's Python grouped_topk, 9 kernels x 2.5 us = 22.5 us, against 0.11.2's one fused kernel of
    # ~7 us (PR #34206): 15.5 us per MoE layer per decode iteration on an H100, x 58 MoE layers = 0.899 ms, at
    # every batch (the kernels are launch-bound at decode sizes)
    s = _scenario("0.10.0")
    assert s.model.routing_groups == 8
    per_layer = 22.5e-6 - 7e-6
    with_topk, without = _decode(s), _decode(s, unfused_grouped_topk_s_per_layer=0.0)
    for b in (1, 64, 300):
        assert with_topk.overhead_s[b] - without.overhead_s[b] == pytest.approx(58 * per_layer, rel=1e-9)
    assert 58 * per_layer == pytest.approx(0.899e-3)
    # GPU work: on an A100 it takes H100's SMs x clock over A100's, 132 x 1.98 / (108 x 1.41) = 1.716 times as long
    a100 = _scenario("0.10.0", gpu="A100-80GB")
    slow = 132 * 1.98 / (108 * 1.41)
    gap = _decode(a100).overhead_s[64] - _decode(a100, unfused_grouped_topk_s_per_layer=0.0).overhead_s[64]
    assert gap == pytest.approx(58 * per_layer * slow, rel=1e-9)
    # 0.10.0 against 0.11.2 at batch 64: the eager attention (61 layers x 12 us) and the router (58 x 15.5 us)
    new = _scenario("0.11.2")
    assert _decode(s).overhead_s[64] - _decode(new).overhead_s[64] == pytest.approx(61 * 12e-6 + 58 * per_layer)


def test_only_a_grouped_router_pays_the_unfused_top_k():
    # Qwen3 MoE routes by a plain softmax top-k: the same 0.10.0 behaviour adds nothing for it
    qwen = _dsv3(routing_groups=0)
    s = _scenario("0.10.0", qwen)
    assert (_decode(s).overhead_s == _decode(s, unfused_grouped_topk_s_per_layer=0.0).overhead_s).all()
    assert catalog.model("Qwen3-30B-A3B").get("routing_groups", 0) == 0


@pytest.mark.parametrize("name, groups", [("DeepSeek-V3", 8), ("DeepSeek-V2-Lite", 0), ("Qwen3-30B-A3B", 0)])
def test_routing_groups_come_from_a_biased_grouped_router_in_config_json(name, groups):
    # DeepSeek-V3: n_group 8 with topk_method noaux_tc; DeepSeek-V2-Lite: topk_method greedy (no bias, no fused path)
    assert spec_from_path(f"{HF_CONFIGS}/{name}")["routing_groups"] == groups
