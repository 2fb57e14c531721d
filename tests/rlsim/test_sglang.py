"""SGLang as a rollout engine (issue 29): the software section selects its behaviour, its scheduler rules follow
SGLang's defaults (token pages, radix cache, chunked_prefill_size by GPU memory, the overlap scheduler), and verl's
and NeMo RL's SGLang settings import as those frameworks pass them to SGLang."""

from pathlib import Path

import pytest

import rlsim
from rlsim.frameworks.config_import import import_config
from rlsim.frameworks.sglang import DERIVED_MAX_RUNNING_REQUESTS
from rlsim.scenario import engine_behaviour, from_dict, scheduler_rules

CONFIGS = Path(__file__).parent / "fixtures" / "configs"


def scn(gpu="H100-SXM", **engine):
    return from_dict(
        {
            "model": "Qwen2.5-1.5B",
            "hardware": {"gpu": gpu, "num_gpus": 1},
            "engine": engine,
            "software": {"engine": "sglang", "engine_version": "0.5.6"},
        }
    )


@pytest.mark.parametrize(
    ("gpu", "budget"), [("A100-80GB", 8192), ("H100-SXM", 8192), ("H200", 8192), ("B200", 16384), ("L40S", 4096)]
)
def test_chunked_prefill_size_follows_the_gpus_memory(gpu, budget):
    """server_args.py _handle_gpu_memory_settings: 8k below 160 GiB (H100, H200), 16k above (B200), 4k below 60."""
    rules = scheduler_rules(scn(gpu))
    assert (rules.block_size, rules.chunked_prefill, rules.prefix_caching) == (1, True, True)
    assert rules.max_num_batched_tokens == budget


def test_the_scenarios_own_fields_win_over_sglangs_defaults():
    rules = scheduler_rules(scn(max_num_batched_tokens=4096, block_size=16))
    assert (rules.max_num_batched_tokens, rules.block_size) == (4096, 16)


def test_sglang_overlaps_its_cpu_work_and_vllm_v1_does_not():
    """The behaviour's overlap scheduler: with CPU work per iteration larger than a tiny model's GPU step, the same
    rollout takes less time on SGLang's behaviour than on vLLM V1's (which runs its CPU work between GPU steps)."""
    over = {"run.steps": 2, "workload.prompts_per_step": 8, "workload.group_size": 4, "model": "Qwen2.5-0.5B"}
    base = CONFIGS.parent.parent.parent.parent / "scenarios" / "paper_grpo.yaml"
    sg = rlsim.load_scenario(base, {**over, "software.engine": "sglang", "software.engine_version": "0.5.6"})
    v1 = rlsim.load_scenario(base, {**over, "engine.behaviour": "vllm-v1"})
    assert engine_behaviour(sg) == "sglang-0.5"
    t_sg, t_v1 = (sum(r["timing_s"]["rollout"] for r in rlsim.simulate(x).steady_records) for x in (sg, v1))
    assert t_sg < t_v1


def test_verl_passes_its_rollout_settings_to_sglang(monkeypatch):
    monkeypatch.chdir(CONFIGS)
    imp = import_config(Path("verl_scripts/grpo_trainer__run_qwen2-7b_seq_balance.sh"), "verl", {})
    eng = imp.scenario["engine"]
    assert imp.scenario["software"] == {"engine": "sglang", "engine_version": "0.5.6"}
    # gpu_memory_utilization 0.6 is SGLang's mem_fraction_static (weights + KV, no activations); max_num_seqs 256
    # (verl's default) its max_running_requests
    assert (eng["gpu_memory_utilization"], eng["activation_memory_fraction"], eng["max_num_seqs"]) == (0.6, 0.0, 256)
    assert any("SGLang 0.5.6" in n for n in imp.scenario["assumptions"])


def test_nemo_rl_sglang_cfg_imports_with_sglangs_derived_request_limit(monkeypatch):
    monkeypatch.chdir(CONFIGS)
    imp = import_config(Path("nemo_rl_7ea279a/examples/configs/grpo_math_1B_sglang.yaml"), "nemo-rl", {})
    eng = imp.scenario["engine"]
    assert imp.scenario["software"] == {"engine": "sglang", "engine_version": "0.5.12.post1"}
    assert (eng["gpu_memory_utilization"], eng["max_num_seqs"]) == (0.6, DERIVED_MAX_RUNNING_REQUESTS)
    assert any("max_running_requests unset" in n for n in imp.scenario["assumptions"])
    limited = import_config(
        Path("nemo_rl_7ea279a/examples/configs/grpo_math_1B_sglang.yaml"),
        "nemo-rl",
        {"policy.generation.sglang_cfg.max_running_requests": 64},
    )
    assert limited.scenario["engine"]["max_num_seqs"] == 64


def test_an_engine_neither_vllm_nor_sglang_is_refused_naming_the_fix(monkeypatch):
    from rlsim.frameworks.adapter import ImportConfigError

    monkeypatch.chdir(CONFIGS)
    with pytest.raises(ImportConfigError, match="'trtllm' is not mapped.*rollout.name=vllm"):
        import_config(
            Path("verl_scripts/grpo_trainer__run_qwen2-7b_seq_balance.sh"),
            "verl",
            {"actor_rollout_ref.rollout.name": "trtllm"},
        )
