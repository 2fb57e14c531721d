"""Framework releases as mechanisms (issue 56): what a NeMo RL release does that moves step time, each a behaviour
of the release in rlsim/catalog/software.yaml with its source at the tag, priced from what it moves."""

import dataclasses

import pytest

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
    assert software.framework_behaviours(s) == {"offload_optimizer_every_step": True}
    assert software.framework_behaviours(recipe("0.5.0")) == {}


def test_v0_4_moves_the_optimizer_state_to_the_host_and_back_every_step():
    # oracle: on PP 2 x DP 4 each GPU holds the distributed optimizer's fp32 master, m and v (12 B/param) of 1/8
    # of the 8.03e9 parameters; they go to host memory before the log-prob pass and back before training, at the
    # host link's peak x host_link_efficiency (the rate rlsim prices every host copy at)
    s = recipe("0.4.0")
    assert memory(s).optimizer_bytes == pytest.approx(12.0 * s.model.num_params / 8)
    for eff in (1.0, 0.1):
        scn = dataclasses.replace(s, costs=dataclasses.replace(s.costs, host_link_efficiency=eff))
        expected = 2.0 * 12.0 * s.model.num_params / 8 / (64e9 * eff)  # H100 SXM: PCIe 5.0 x16, 64 GB/s
        assert RooflineCostModel(scn).logprob_host_s() == pytest.approx(expected)
    assert RooflineCostModel(recipe("0.5.0")).logprob_host_s() == 0.0  # offload_optimizer_for_logprob: false
    # colocated, the weight sync's trainer offload already moves it (priced there, not twice)
    colocated = recipe("0.4.0", policy_mode="on", colocated=True, num_gpus=16)
    assert colocated.weight_sync.offload_trainer and RooflineCostModel(colocated).logprob_host_s() == 0.0
