"""Framework releases as mechanisms (issue 56): what a NeMo RL release does that moves step time, each a behaviour
of the release in rlsim/catalog/software.yaml with its source at the tag, priced from what it moves."""

import dataclasses

import pytest

from rlsim import catalog
from rlsim.frameworks.nemo_rl.recipe import scenario_from_recipe
from rlsim.run.costs import RooflineCostModel
from rlsim.scenario import from_dict, software
from rlsim.trainer.memory import memory

# NeMo RL v0.4.0's Llama-3.1-8B async recipe (grpo-llama3.1-8b-instruct-2n8g-async-1off): 8 generation and 8
# training H100s, Megatron PP 2 x DP 4
LLAMA_ASYNC = {
    "model": "meta-llama/Llama-3.1-8B-Instruct",
    "gpu": "H100",
    "num_gpus": 16,
    "policy_mode": "async-1off",
    "colocated": False,
    "gen_gpus": 8,
    "train_gpus": 8,
    "prompts_per_step": 64,
    "gens_per_prompt": 32,
    "avg_gen_len": 1000,
    "max_seq_len": 4096,
    "recipe_train_global_batch_size": 512,
    "recipe_kl": 0.01,
    "recipe_activation_checkpointing": True,
    "train_pp": 2,
}


def recipe(release, **fields):
    row = {**LLAMA_ASYNC, **fields, "recipe": f"NVIDIA-NeMo/RL@v{release}:examples/configs/recipes/llm/x.yaml"}
    return from_dict(scenario_from_recipe(row))


def test_the_release_of_a_published_row_reaches_the_scenario():
    s = recipe("0.4.0")
    assert (s.software.framework, s.software.framework_version) == ("nemo-rl", "0.4.0")
    assert software.framework_behaviours(s)["offload_optimizer_every_step"] is True
    assert software.framework_behaviours(recipe("0.5.0")) == {"detokenize": False}  # skip_tokenizer_init


def test_v0_4_moves_the_optimizer_state_to_the_host_and_back_every_step():
    # oracle: on PP 2 x DP 4 each GPU holds the distributed optimizer's state of 1/8 of the 8.03e9 parameters: as
    # NeMo RL runs Megatron (precision-aware Adam) fp32 m and v and the fp32 master's 16-bit remainder, 10 B/param;
    # they go to host memory before the log-prob pass and back before training, at the host link's peak x
    # host_link_efficiency (the rate rlsim prices every host copy at)
    s = recipe("0.4.0")
    assert memory(s).optimizer_bytes == pytest.approx(10.0 * s.model.num_params / 8)
    for eff in (1.0, 0.1):
        scn = dataclasses.replace(s, costs=dataclasses.replace(s.costs, host_link_efficiency=eff))
        expected = 2.0 * 10.0 * s.model.num_params / 8 / (64e9 * eff)  # H100 SXM: PCIe 5.0 x16, 64 GB/s
        assert RooflineCostModel(scn).logprob_host_s() == pytest.approx(expected)
    assert RooflineCostModel(recipe("0.5.0")).logprob_host_s() == 0.0  # offload_optimizer_for_logprob: false
    # colocated, the weight sync's trainer offload already moves it (priced there, not twice)
    colocated = recipe("0.4.0", policy_mode="on", colocated=True, num_gpus=16)
    assert colocated.weight_sync.offload_trainer and RooflineCostModel(colocated).logprob_host_s() == 0.0


QWEN3_32B_SYNC = {
    **LLAMA_ASYNC,
    "model": "Qwen/Qwen3-32B",
    "num_gpus": 32,
    "policy_mode": "on",
    "colocated": True,
    "gen_tp": 4,
    "train_tp": 4,
    "train_pp": 4,
    "recipe_activation_checkpointing": False,
}


def test_v0_4_trains_qwen3_with_an_unfused_swiglu():
    # oracle: Qwen3-32B (64 layers, intermediate 25600) on 32 GPUs without recompute; the unfused SwiGLU adds
    # 2 (forward) + 8 (backward) bf16 elements of the intermediate per token and layer, at the H100's 3.35 TB/s
    fields = {k: v for k, v in QWEN3_32B_SYNC.items() if k not in ("gen_gpus", "train_gpus")}
    old, new = recipe("0.4.0", **fields), recipe("0.5.0", **fields)
    assert software.framework_behaviours(old)["bias_activation_fusion"] == {"qwen3": False}
    tokens = 1e6
    per_token = 64 * 25600 * 2.0  # layers x intermediate x bf16 bytes
    train = (2.0 + 8.0) * per_token * tokens / (32 * 3.35e12)
    forward = 2.0 * per_token * tokens / (32 * 3.35e12)
    m = old.model
    cost_old, cost_new = RooflineCostModel(old), RooflineCostModel(new)
    assert cost_old.train_s(m, tokens, 0.0, 1, 1) - cost_new.train_s(m, tokens, 0.0, 1, 1) == pytest.approx(train)
    assert cost_old.forward_s(m, tokens, 0.0) - cost_new.forward_s(m, tokens, 0.0) == pytest.approx(forward)


DSV3_KEYS = ("num_layers", "intermediate_size", "moe_intermediate_size", "num_experts", "num_experts_per_token")
DSV3_KEYS += ("num_dense_layers", "num_shared_experts")


def test_the_unfused_swiglu_counts_experts_recompute_and_only_qwen3():
    from rlsim.trainer.training import swiglu_width, unfused_swiglu_s

    s = recipe("0.4.0")
    assert RooflineCostModel(s).forward_s(s.model, 1e6, 0.0) == RooflineCostModel(recipe("0.5.0")).forward_s(
        s.model, 1e6, 0.0
    )  # Llama's provider fused it already
    qwen_moe = from_dict({"model": "Qwen3-30B-A3B", "hardware": {"gpu": "H100-SXM", "num_gpus": 32}})
    assert swiglu_width(qwen_moe.model) == 48 * 768 * 8  # 48 MoE layers x 8 routed experts x 768
    dsv3 = dataclasses.replace(qwen_moe.model, **{k: catalog.model("DeepSeek-V3")[k] for k in DSV3_KEYS})
    assert swiglu_width(dsv3) == 3 * 18432 + 58 * 2048 * (8 + 1)  # 3 dense layers, 1 shared expert
    full = dataclasses.replace(qwen_moe, training=dataclasses.replace(qwen_moe.training, activation_recompute="full"))
    one = unfused_swiglu_s(qwen_moe, qwen_moe.model, 1e6, forward_only=True)
    assert unfused_swiglu_s(full, full.model, 1e6, False) == pytest.approx(one * (2 * 2 + 8) / 2)
