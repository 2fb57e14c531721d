"""Detokenization in an in-process engine (NeMo RL v0.4.0's synchronous vllm.LLM): each decode iteration's output
processing runs between GPU steps and costs costs.detokenize_per_token_s per generated token; an engine core in its
own process (AsyncLLM, vLLM V1's default) overlaps it, and without a tokenizer (skip_tokenizer_init) it costs
nothing."""

from pathlib import Path

import pytest

from rlsim.errors import ScenarioError
from rlsim.frameworks.config_import import import_config
from rlsim.frameworks.nemo_rl.recipe import scenario_from_recipe
from rlsim.run.costs import RooflineCostModel, detokenize_s_per_token
from rlsim.scenario import from_dict, parse_overrides

NEMO_BASE = Path(__file__).parent / "fixtures" / "configs" / "nemo_rl" / "grpo_math_1B.yaml"
BASE = {"model": "Qwen2.5-1.5B", "hardware": {"gpu": "H100-SXM", "num_gpus": 8}}


def scn(engine=None, **sw):
    return from_dict({**BASE, "engine": {"tensor_parallel_size": 1, **(engine or {})}, "software": sw})


def overhead(s, b):
    return RooflineCostModel.from_scenario(s).decode_coefficients().overhead_s[b]


@pytest.mark.parametrize("b", [1, 64, 256])
def test_an_in_process_engine_that_detokenizes_adds_the_per_token_cost_to_each_iteration(b):
    # oracle: NeMo RL v0.4.0 detokenizes (skip_tokenizer_init forced False); 5.0e-6 s per token x b sequences,
    # one token each per iteration, on top of the same release's engine run in its own process
    inproc = scn({"in_process": True}, framework="nemo-rl", framework_version="0.4.0")
    separate = scn({"in_process": False}, framework="nemo-rl", framework_version="0.4.0")
    assert inproc.costs.detokenize_per_token_s == 5.0e-6
    assert overhead(inproc, b) - overhead(separate, b) == pytest.approx(5.0e-6 * b, rel=1e-9)


def test_the_release_decides_unless_the_scenario_says():
    v04 = scn({"in_process": True}, framework="nemo-rl", framework_version="0.4.0")
    v05 = scn({"in_process": True}, framework="nemo-rl", framework_version="0.5.0")
    v06 = scn({"in_process": True}, framework="nemo-rl", framework_version="0.6.0")
    assert detokenize_s_per_token(v04) == 5.0e-6
    assert detokenize_s_per_token(v05) == 0.0 and detokenize_s_per_token(v06) == 0.0
    # stop strings in a v0.5 config: vLLM must detokenize; a plain vLLM engine in process detokenizes by default
    assert (
        detokenize_s_per_token(
            scn({"in_process": True, "detokenize": True}, framework="nemo-rl", framework_version="0.5.0")
        )
        == 5.0e-6
    )
    assert detokenize_s_per_token(scn({"in_process": True}, engine_version="0.11.2")) == 5.0e-6
    assert detokenize_s_per_token(scn({"in_process": True, "detokenize": False}, engine_version="0.11.2")) == 0.0
    assert detokenize_s_per_token(scn(engine_version="0.11.2")) == 0.0  # its own process: overlapped
    # the per-token cost is a costs field a profile or --set can change
    s = from_dict({**BASE, "engine": {"in_process": True}, "costs": {"detokenize_per_token_s": 2e-5}})
    assert detokenize_s_per_token(s) == 2e-5


def test_bad_values_name_the_field():
    with pytest.raises(ScenarioError, match="detokenize_per_token_s"):
        from_dict({**BASE, "costs": {"detokenize_per_token_s": -1.0}})
    with pytest.raises(ScenarioError, match="in_process"):
        from_dict({**BASE, "engine": {"in_process": "maybe"}})


RECIPE = {
    "prompts_per_step": 64,
    "gens_per_prompt": 32,
    "num_gpus": 32,
    "gen_gpus": 16,
    "train_gpus": 16,
    "max_seq_len": 4096,
    "avg_gen_len": 3000,
    "model": "Qwen/Qwen3-32B",
    "train_tp": 4,
    "train_pp": 2,
    "gpu": "DGX-H100 (H100 80GB)",
    "gen_tp": 4,
    "source_version": "NeMo RL v0.4 perf table",
}


def test_nemo_rl_runs_its_synchronous_engine_in_process_and_async_grpo_in_its_own():
    sync = from_dict(scenario_from_recipe({**RECIPE, "policy_mode": "on", "colocated": True}, steps=2))
    asy = from_dict(scenario_from_recipe({**RECIPE, "policy_mode": "async-1off", "colocated": False}, steps=2))
    assert sync.engine.in_process and not asy.engine.in_process
    assert detokenize_s_per_token(sync) == 5.0e-6 and detokenize_s_per_token(asy) == 0.0
    # AsyncLLM in a synchronous run (vllm_cfg.async_engine true, as DeepSeek-V3's recipe): its own process
    big = from_dict(
        scenario_from_recipe(
            {**RECIPE, "policy_mode": "on", "colocated": True, "recipe_vllm_async_engine": True}, steps=2
        )
    )
    assert not big.engine.in_process


@pytest.mark.parametrize(
    "sets, detokenize",
    [
        ([], False),  # no release named: the latest's choice, skip_tokenizer_init true without stop strings
        (['policy.generation.stop_strings=["</answer>"]'], True),
        (["policy.generation.vllm_cfg.skip_tokenizer_init=false"], True),
    ],
)
def test_a_nemo_rl_config_detokenizes_for_stop_strings_or_when_told(sets, detokenize):
    s = from_dict(import_config(NEMO_BASE, "nemo-rl", parse_overrides(sets), None).scenario)
    assert s.engine.in_process and s.engine.detokenize is detokenize
    assert detokenize_s_per_token(s) == (5.0e-6 if detokenize else 0.0)
