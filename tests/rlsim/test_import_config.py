"""`rlsim import-config`: verl and TRL configs as scenarios (rlsim.frameworks.config_import, verl, trl).

Every fixture imports, loads and simulates; the batch mappings are checked against values computed by hand from the
frameworks' semantics; overrides, unused keys and refusals behave as documented.
"""

from pathlib import Path

import pytest
import yaml

from rlsim.cli import main
from rlsim.frameworks import trl, verl
from rlsim.frameworks.config_import import ImportConfigError, Source, import_config
from rlsim.scenario import load_scenario
from rlsim.simulation import simulate

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
VERL_GRPO = CONFIGS / "verl_grpo_qwen3_8b.yaml"
VERL_PPO = CONFIGS / "verl_ppo_qwen2.5_0.5b_quickstart.yaml"
TRL_GSPO = CONFIGS / "trl_gspo_qwen3_0.6b.yaml"
TRL_SERVER = CONFIGS / "trl_grpo_qwen2.5_7b_vllm_server.json"
# the launch facts each fixture's README row names (and, for the GSPO example, a catalog model for Qwen3-0.6B)
FIXTURES = [
    ("verl", VERL_GRPO, []),
    ("verl", VERL_PPO, []),
    ("trl", TRL_GSPO, ["num_processes=8", "model_name_or_path=Qwen2.5-0.5B"]),
    ("trl", TRL_SERVER, ["num_processes=4", "vllm_server_tensor_parallel_size=4"]),
]


def _import(tmp_path, fmt, path, sets=(), scenario_sets=()):
    out = tmp_path / "scenario.yaml"
    args = ["import-config", "--format", fmt, str(path), "-o", str(out)]
    for item in sets:
        args += ["--set", item]
    for item in scenario_sets:
        args += ["--scenario-set", item]
    return main(args), out


@pytest.mark.parametrize(("fmt", "path", "sets"), FIXTURES, ids=[p.name for _, p, _ in FIXTURES])
def test_each_fixture_imports_loads_and_simulates_three_steps(tmp_path, fmt, path, sets):
    code, out = _import(tmp_path, fmt, path, sets)
    assert code == 0
    scenario = load_scenario(out, {"run.steps": 3})
    result = simulate(scenario)
    assert len(result.steps) == 3
    assert result.summary()["samples_per_s"] > 0


def test_fixture_readme_names_every_fixture():
    readme = (CONFIGS / "README.md").read_text()
    for _, path, _ in FIXTURES:
        assert f"`{path.name}`" in readme


def test_verl_batch_semantics_by_hand(tmp_path):
    """train_batch_size=1024, n=8: P=1024, G=8, B=8192; ppo_mini_batch_size 256 prompts: 1024/256 = 4 mini-batches."""
    sets = ["actor_rollout_ref.rollout.n=8", "trainer.nnodes=2", "actor_rollout_ref.actor.ppo_epochs=2"]
    code, out = _import(tmp_path, "verl", VERL_GRPO, sets)
    assert code == 0
    s = load_scenario(out)
    assert (s.workload.prompts_per_step, s.workload.group_size) == (1024, 8)
    assert s.workload.responses_per_step == 8192
    assert s.algorithm.mini_batches_per_step == 4 and s.algorithm.epochs_per_step == 2
    assert s.algorithm.name == "grpo" and s.algorithm.kl_reference
    assert s.engine.tensor_parallel_size == 2 and s.engine.gpu_memory_utilization == 0.6
    assert s.hardware.num_gpus == 16 and s.hardware.gpus_per_node == 8 and s.num_replicas == 8
    assert s.training.micro_batch_size == 32 and not s.training.sequence_packing
    assert (s.workload.max_prompt_tokens, s.workload.max_response_tokens) == (512, 1024)
    assert s.model.name == "Qwen3-8B" and s.learning.lr0 == 1e-6 and s.learning.reference_batch == 8192


def test_verl_gae_is_ppo_with_the_critic_and_instruct_resolves_to_base(tmp_path):
    code, out = _import(tmp_path, "verl", VERL_PPO)
    assert code == 0
    s = load_scenario(out)
    assert s.algorithm.name == "ppo" and s.algorithm.critic_model.name == "Qwen2.5-0.5B"
    assert s.model.name == "Qwen2.5-0.5B"
    assert (s.workload.prompts_per_step, s.workload.group_size, s.algorithm.mini_batches_per_step) == (256, 1, 4)
    assert s.hardware.num_gpus == 1 and s.engine.tensor_parallel_size == 1
    assert any("Qwen2.5-0.5B-Instruct simulated as catalog model Qwen2.5-0.5B" in a for a in s.assumptions)


def test_verl_deprecated_global_micro_batch_is_divided_over_the_gpus(tmp_path):
    """ppo_micro_batch_size 64 over 8 GPUs: 8 per GPU, and it wins over the per-GPU key, as verl's workers do."""
    code, out = _import(tmp_path, "verl", VERL_GRPO, ["actor_rollout_ref.actor.ppo_micro_batch_size=64"])
    assert code == 0
    assert load_scenario(out).training.micro_batch_size == 8


def test_verl_without_a_micro_batch_is_refused(tmp_path, capsys):
    code, out = _import(tmp_path, "verl", VERL_GRPO, ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=null"])
    assert code == 2 and not out.exists()
    assert "ppo_micro_batch_size_per_gpu: not set (and use_dynamic_bsz is false)" in capsys.readouterr().err


def test_verl_dynamic_batch_packs_by_tokens(tmp_path):
    sets = ["actor_rollout_ref.actor.use_dynamic_bsz=true", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=24576"]
    code, out = _import(tmp_path, "verl", VERL_GRPO, sets)
    assert code == 0
    tr = load_scenario(out).training
    assert tr.sequence_packing and tr.packing_tokens == 24576 and tr.micro_batch_size == 1


def test_trl_batch_semantics_by_hand(tmp_path):
    """8 per device x 8 processes x steps_per_generation 8 = 512 completions per round; / 8 generations = P 64;
    8 / gradient_accumulation_steps 2 = 4 optimizer steps per round."""
    code, out = _import(tmp_path, "trl", TRL_GSPO, FIXTURES[2][2])
    assert code == 0
    s = load_scenario(out)
    assert (s.workload.prompts_per_step, s.workload.group_size, s.workload.responses_per_step) == (64, 8, 512)
    assert s.algorithm.mini_batches_per_step == 4 and s.algorithm.epochs_per_step == 1
    assert s.hardware.num_gpus == 8 and s.engine.static_batching  # no use_vllm: transformers generate
    assert s.algorithm.recompute_old_logprob  # 2 % (8 x 1) != 0: TRL computes old log-probs
    assert s.learning.lr0 == 1e-5 and s.workload.max_response_tokens == 1024


def test_trl_generations_default_to_gradient_accumulation_and_generation_batch_size_wins(tmp_path):
    # steps_per_generation unset: it is gradient_accumulation_steps, so 4 x 2 x 3 = 24 completions, P = 24 / 4
    sets = ["num_processes=2", "model_name_or_path=Qwen2.5-0.5B", "num_generations=4"]
    sets += ["per_device_train_batch_size=4", "gradient_accumulation_steps=3", "steps_per_generation=null"]
    code, out = _import(tmp_path, "trl", TRL_GSPO, sets)
    assert code == 0
    s = load_scenario(out)
    assert (s.workload.prompts_per_step, s.algorithm.mini_batches_per_step) == (6, 1)
    sets += ["generation_batch_size=48", "gradient_accumulation_steps=2"]
    code, out = _import(tmp_path, "trl", TRL_GSPO, sets)
    assert code == 0
    s = load_scenario(out)  # 48 / (4 x 2) = 6 micro-steps per round, / 2 = 3 optimizer steps; P = 48 / 4
    assert (s.workload.prompts_per_step, s.algorithm.mini_batches_per_step) == (12, 3)


def test_trl_vllm_server_uses_separate_gpus(tmp_path):
    code, out = _import(tmp_path, "trl", TRL_SERVER, FIXTURES[3][2])
    assert code == 0
    s = load_scenario(out)
    assert s.hardware.placement == "separate" and s.schedule.mode == "sync-separate"
    assert (s.hardware.train_gpus, s.hardware.rollout_gpus, s.hardware.num_gpus) == (4, 4, 8)
    assert s.engine.tensor_parallel_size == 4 and s.engine.gpu_memory_utilization == 0.9
    assert (s.workload.prompts_per_step, s.workload.group_size) == (4, 8)  # 8 x 4 x 1 / 8
    assert any(a.startswith("vllm_mode server: trl vllm-serve on 4 GPU(s)") for a in s.assumptions)


def test_trl_num_processes_default_is_one_and_said(tmp_path):
    code, out = _import(tmp_path, "trl", TRL_GSPO, ["model_name_or_path=Qwen2.5-0.5B"])
    assert code == 0
    s = load_scenario(out)
    assert s.hardware.num_gpus == 1 and s.workload.prompts_per_step == 8  # 8 x 1 x 8 / 8
    assert any(a.startswith("num_processes: 1 (TRL's config has no key for it") for a in s.assumptions)


def test_framework_set_wins_over_the_file_and_scenario_set_over_the_mapping(tmp_path):
    sets = ["data.train_batch_size=512", "actor_rollout_ref.rollout.tensor_model_parallel_size=4"]
    code, out = _import(tmp_path, "verl", VERL_GRPO, sets, ["hardware.gpu=H200", "workload.group_size=4"])
    assert code == 0
    s = load_scenario(out)
    assert s.workload.prompts_per_step == 512 and s.algorithm.mini_batches_per_step == 2
    assert s.engine.tensor_parallel_size == 4
    assert s.hardware.gpu.name == "H200" and s.workload.group_size == 4
    assert "--scenario-set hardware.gpu=H200" in s.assumptions


def test_unused_keys_are_listed_on_stderr_and_in_assumptions(tmp_path, capsys):
    code, out = _import(tmp_path, "verl", VERL_GRPO)
    assert code == 0
    err = capsys.readouterr().err
    raw = yaml.safe_load(out.read_text())
    for key in ("trainer.project_name", "actor_rollout_ref.actor.kl_loss_coef", "data.train_files"):
        assert key in err
        assert any(a.startswith(f"verl key not used (no rlsim field): {key} = ") for a in raw["assumptions"])
    # a mapped key is not listed as unused
    assert "data.train_batch_size" not in err and "algorithm.use_kl_in_reward" not in err


def test_every_key_of_a_fixture_is_either_mapped_or_listed():
    imported = import_config(VERL_GRPO, "verl")
    mapped = {row.key for row in verl.TABLE}
    flat = yaml.safe_load(VERL_GRPO.read_text())
    n_leaves = sum(1 for _ in _leaves(flat))
    assert n_leaves == len(imported.unused) + len([k for k in _leaves(flat) if k in mapped])


def _leaves(data, prefix=""):
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            yield from _leaves(value, dotted)
        else:
            yield dotted


@pytest.mark.parametrize(
    ("fmt", "path", "sets", "keys"),
    [
        ("verl", VERL_GRPO, ["actor_rollout_ref.actor.ppo_mini_batch_size=300"], ["data.train_batch_size"]),
        (
            "verl",
            VERL_GRPO,
            ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=48"],
            ["ppo_mini_batch_size", "ppo_micro_batch_size_per_gpu"],
        ),
        (
            "trl",
            TRL_GSPO,
            ["num_processes=8", "model_name_or_path=Qwen2.5-0.5B", "num_generations=7"],
            ["generation_batch_size", "num_generations"],
        ),
        (
            "trl",
            TRL_GSPO,
            ["num_processes=8", "model_name_or_path=Qwen2.5-0.5B", "steps_per_generation=3"],
            ["steps_per_generation", "gradient_accumulation_steps"],
        ),
        (
            "trl",
            TRL_GSPO,
            ["num_processes=8", "model_name_or_path=Qwen2.5-0.5B", "generation_batch_size=128"],
            ["generation_batch_size", "steps_per_generation"],
        ),
        (
            "trl",
            TRL_SERVER,
            ["num_processes=6", "vllm_mode=colocate", "vllm_tensor_parallel_size=4"],
            ["num_processes", "vllm_tensor_parallel_size"],
        ),
    ],
    ids=["verl-mini", "verl-micro", "trl-generations", "trl-accumulation", "trl-both-set", "trl-colocated-tp"],
)
def test_contradiction_is_refused_naming_both_keys_and_writes_nothing(tmp_path, capsys, fmt, path, sets, keys):
    code, out = _import(tmp_path, fmt, path, sets)
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    lines = [line for line in err.splitlines() if line.startswith("rlsim: error:")]
    assert len(lines) == 1
    for key in keys:
        assert key in lines[0]


def test_model_outside_the_catalog_is_refused_naming_the_key(tmp_path, capsys):
    code, out = _import(tmp_path, "trl", TRL_GSPO, ["num_processes=8"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not out.exists()
    assert err[-1].startswith("rlsim: error: model_name_or_path: 'Qwen/Qwen3-0.6B' is not in rlsim's model catalog")
    assert "--set model_name_or_path=NAME" in err[-1]


@pytest.mark.parametrize(
    ("fmt", "text", "suffix", "message"),
    [
        ("verl", None, ".yaml", "is not a file"),
        ("verl", "data: [unclosed", ".yaml", "is not valid YAML"),
        ("trl", "{bad json", ".json", "is not valid JSON"),
        ("trl", "- a list", ".yaml", "must hold a mapping"),
    ],
)
def test_bad_file_is_one_line(tmp_path, capsys, fmt, text, suffix, message):
    path = tmp_path / f"config{suffix}"
    if text is not None:
        path.write_text(text)
    code, out = _import(tmp_path, fmt, path)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0] and not out.exists()


@pytest.mark.parametrize(
    ("fmt", "path", "item", "words"),
    [
        ("verl", VERL_GRPO, "data.train_batch_size=abc", "data.train_batch_size: abc must be a positive whole number"),
        ("verl", VERL_GRPO, "actor_rollout_ref.rollout.n=0", "actor_rollout_ref.rollout.n: 0 must be a positive whole"),
        (
            "verl",
            VERL_GRPO,
            "actor_rollout_ref.actor.optim.lr=fast",
            "actor_rollout_ref.actor.optim.lr: fast must be a",
        ),
        ("trl", TRL_SERVER, "vllm_mode=remote", "vllm_mode: 'remote' must be colocate or server"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_key(tmp_path, capsys, fmt, path, item, words):
    code, out = _import(tmp_path, fmt, path, [item])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and words in err[0] and not out.exists()


def test_the_gpu_default_is_an_assumption_unless_set(tmp_path):
    _import(tmp_path, "verl", VERL_GRPO)
    assert any(
        a.startswith("hardware.gpu: H100-SXM")
        for a in yaml.safe_load((tmp_path / "scenario.yaml").read_text())["assumptions"]
    )
    _import(tmp_path, "verl", VERL_GRPO, scenario_sets=["hardware.gpu=H200"])
    assert not any(a.startswith("hardware.gpu:") for a in load_scenario(tmp_path / "scenario.yaml").assumptions)


def test_wrong_format_is_refused_by_the_parser(tmp_path):
    with pytest.raises(SystemExit) as exc:
        _import(tmp_path, "openrlhf", VERL_GRPO)
    assert exc.value.code == 2
    with pytest.raises(ImportConfigError, match="--format 'openrlhf' is not supported"):
        import_config(VERL_GRPO, "openrlhf")


def test_a_verl_file_read_as_trl_is_refused_for_its_missing_model(tmp_path, capsys):
    code, _ = _import(tmp_path, "trl", VERL_GRPO)
    assert code == 2 and "model_name_or_path: not set" in capsys.readouterr().err


@pytest.mark.parametrize("module", [verl, trl])
def test_the_mapping_reads_only_keys_of_its_table(module):
    source = Source({}, module.TABLE, module.__name__)
    with pytest.raises(KeyError, match="not in the mapping TABLE"):
        source.get("no.such.key")
    assert len({row.key for row in module.TABLE}) == len(module.TABLE)


@pytest.mark.parametrize("module", [verl, trl])
def test_readme_tables_list_every_mapped_key(module):
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    for row in module.TABLE:
        assert f"| `{row.key}` |" in readme, row.key
    assert module.VERSION_READ.split(" ")[1] in readme  # the commit read
