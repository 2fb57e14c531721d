"""`rlsim import-config`: verl, TRL, OpenRLHF and NeMo RL configs as scenarios (rlsim.frameworks.config_import,
verl, trl, openrlhf, nemo_rl).

Every fixture imports, loads and simulates; the batch mappings are checked against values computed by hand from the
frameworks' semantics; overrides, unused keys and refusals behave as documented.
"""

from pathlib import Path

import pytest
import yaml

from rlsim.cli import main
from rlsim.frameworks import registry
from rlsim.frameworks.adapter import ImportConfigError, Source
from rlsim.frameworks.config_import import import_config
from rlsim.frameworks.nemo_rl.recipe import PROMPT_TOKENS, scenario_from_recipe
from rlsim.frameworks.nemo_rl.recipe_yaml import read as read_recipe
from rlsim.frameworks.openrlhf.args import parse_arguments
from rlsim.run.simulation import simulate
from rlsim.scenario import engine_behaviour, from_dict, load_scenario
from rlsim.trainer.memory import memory

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
VERL_GRPO = CONFIGS / "verl_grpo_qwen3_8b.yaml"
VERL_PPO = CONFIGS / "verl_ppo_qwen2.5_0.5b_quickstart.yaml"
TRL_GSPO = CONFIGS / "trl_gspo_qwen3_0.6b.yaml"
TRL_SERVER = CONFIGS / "trl_grpo_qwen2.5_7b_vllm_server.json"
ORL_HYBRID = CONFIGS / "openrlhf_scripts" / "train_ppo_ray_hybrid_engine.sh"
ORL_SLURM = CONFIGS / "openrlhf_ppo_llama3_8b_slurm.args"
ORL_FLAT = CONFIGS / "openrlhf_ppo_llama3_8b_hybrid_engine_v0.9.5.yaml"
NEMO = CONFIGS / "nemo_rl"
NEMO_BASE = NEMO / "grpo_math_1B.yaml"
NEMO_PERF = NEMO / "recipes" / "llm" / "performance"
NEMO_LLAMA = NEMO_PERF / "grpo-llama3.1-8b-instruct-2n8g.yaml"
NEMO_ASYNC = NEMO_PERF / "grpo-llama3.1-8b-instruct-2n8g-async-1off.yaml"
NEMO_QWEN = NEMO_PERF / "grpo-qwen3-30ba3b-4n8g.yaml"
ORL_MODEL = ["actor.model_name_or_path=Llama-3.1-8B"]
# the launch facts each fixture's README row names (and catalog models for Qwen3-0.6B and Llama-3-8B)
FIXTURES = [
    ("verl", VERL_GRPO, []),
    ("verl", VERL_PPO, []),
    ("trl", TRL_GSPO, ["num_processes=8", "model_name_or_path=Qwen2.5-0.5B"]),
    ("trl", TRL_SERVER, ["num_processes=4", "vllm_server_tensor_parallel_size=4"]),
    ("openrlhf", ORL_HYBRID, ORL_MODEL),
    ("openrlhf", ORL_SLURM, ORL_MODEL),
    ("openrlhf", ORL_FLAT, ["pretrain=Llama-3.1-8B"]),
    ("nemo-rl", NEMO_BASE, []),
    ("nemo-rl", NEMO_LLAMA, []),
    ("nemo-rl", NEMO_ASYNC, []),
    ("nemo-rl", NEMO_QWEN, []),
]
FORMATS = ["verl", "trl", "openrlhf", "nemo-rl"]


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
        assert f"`{path.relative_to(CONFIGS).as_posix()}`" in readme


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
    mapped = {row.key for row in registry.get("verl").table}
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


def test_model_outside_the_catalog_is_refused_naming_the_key(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))  # nor in the local Hugging Face cache
    code, out = _import(tmp_path, "trl", TRL_GSPO, ["num_processes=8", "model_name_or_path=Qwen/Qwen3-14B"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not out.exists()
    assert err[-1].startswith("rlsim: error: model_name_or_path: 'Qwen/Qwen3-14B' is not in rlsim's model catalog")
    assert "--set model_name_or_path=NAME" in err[-1] and "config.json" in err[-1]


def test_a_model_outside_the_catalog_imports_from_its_config_json(tmp_path):
    """The same TRL file with its model as a local folder holding config.json (what a user who downloaded
    the model has): the scenario names the folder, and the model's spec is read from the file."""
    import shutil

    import rlsim

    folder = tmp_path / "Qwen3-8B-local"
    folder.mkdir()
    shutil.copy(Path(rlsim.__file__).parent / "catalog" / "hf_configs" / "Qwen3-8B" / "config.json", folder)
    code, out = _import(tmp_path, "trl", TRL_GSPO, ["num_processes=8", f"model_name_or_path={folder}"])
    assert code == 0
    scn = rlsim.load_scenario(out)
    assert scn.model.name == "Qwen3-8B-local" and scn.model.num_params == pytest.approx(8.19e9, rel=0.01)


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


def test_wrong_format_is_refused_naming_the_frameworks(tmp_path, capsys):
    """The formats are the registered adapters (rlsim.frameworks.registry), checked when the import runs: one line,
    exit 2, nothing written; a near miss is named."""
    code, out = _import(tmp_path, "colossal", VERL_GRPO)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not out.exists() and len(err) == 1
    assert "--format 'colossal' is not supported; use one of: verl, trl, openrlhf, nemo-rl, slime" in err[0]
    with pytest.raises(ImportConfigError, match="--format 'verlx' is not supported; did you mean verl"):
        import_config(VERL_GRPO, "verlx")


def test_a_verl_file_read_as_trl_is_refused_naming_verl(tmp_path, capsys):
    # issue 58: it was refused for a missing TRL key, a hint that leads to importing verl's file as TRL's defaults
    code, _ = _import(tmp_path, "trl", VERL_GRPO)
    assert code == 2 and "this is a verl file (actor_rollout_ref keys), not trl; use --format verl" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_mapping_reads_only_keys_of_its_table(fmt):
    table = registry.get(fmt).table
    source = Source({}, table, fmt)
    with pytest.raises(KeyError, match="not in the mapping TABLE"):
        source.get("no.such.key")
    assert len({row.key for row in table}) == len(table)


@pytest.mark.parametrize("fmt", FORMATS)
def test_docs_tables_list_every_mapped_key(fmt):
    adapter = registry.get(fmt)
    readme = (Path(__file__).parents[2] / "docs" / "import-config.md").read_text()
    for row in adapter.table:
        assert f"| `{row.key}` |" in readme, row.key
    assert adapter.version_read.split(" ")[1] in readme  # the commit read


# ------------------------------------------------------------------------------------------------ OpenRLHF


def _scenario(fmt, path, sets=(), scenario_sets=None):
    from rlsim.scenario import parse_overrides

    return from_dict(import_config(path, fmt, parse_overrides(list(sets)), scenario_sets).scenario)


def test_openrlhf_batch_semantics_by_hand():
    """rollout.batch_size 1024 x n_samples_per_prompt 8 = B 8192 samples; train.batch_size 128 samples per optimizer
    step: 8192 / 128 = 64 optimizer steps; the hybrid engine shares the 8 actor GPUs with 4 engines x TP 2."""
    s = _scenario("openrlhf", ORL_HYBRID, [*ORL_MODEL, "rollout.n_samples_per_prompt=8", "train.max_epochs=2"])
    assert (s.workload.prompts_per_step, s.workload.group_size, s.workload.responses_per_step) == (1024, 8, 8192)
    assert s.algorithm.mini_batches_per_step == 64 and s.algorithm.epochs_per_step == 2
    assert s.hardware.placement == "colocated" and s.schedule.mode == "sync-colocated"
    assert s.hardware.num_gpus == 8 and s.engine.tensor_parallel_size == 2 and s.num_replicas == 4
    assert s.engine.gpu_memory_utilization == 0.5 and s.engine.prefix_caching is False
    assert s.algorithm.name == "ppo" and s.algorithm.kl_reference and s.algorithm.recompute_old_logprob
    assert s.training.sequence_packing and s.training.packing_tokens == 16384 and s.training.micro_batch_size == 1
    assert s.training.activation_recompute == "full"
    assert (s.workload.max_prompt_tokens, s.workload.max_response_tokens) == (1024, 1024)  # max_len 2048, halved
    assert s.learning.lr0 == 5e-7 and s.learning.reference_batch == 8192
    assert s.model.name == "Llama-3.1-8B"


def test_openrlhf_flat_names_of_v095_give_the_same_scenario_as_the_dotted_ones():
    """The v0.9.5 example in flat names (rollout_batch_size=1024, n_samples_per_prompt=8: P 1024, G 8, B 8192)
    and the v0.11.0 example in dotted names are the same run."""
    flat = _scenario("openrlhf", ORL_FLAT, ["pretrain=Llama-3.1-8B", "n_samples_per_prompt=8"])
    dotted = _scenario("openrlhf", ORL_HYBRID, [*ORL_MODEL, "rollout.n_samples_per_prompt=8"])
    assert (flat.workload.prompts_per_step, flat.workload.group_size, flat.workload.responses_per_step) == (
        1024,
        8,
        8192,
    )
    for section in ("hardware", "engine", "algorithm", "schedule", "learning"):
        assert flat.to_dict()[section] == dotted.to_dict()[section], section
    assert {**flat.to_dict()["training"], "logprob_micro_batch_size": 1} == dotted.to_dict()["training"]
    assert (flat.workload.max_prompt_tokens, flat.workload.max_response_tokens) == (1024, 1024)
    # the flat file's defaults are v0.9.5's: micro_rollout_batch_size 8 (v0.11.0: 1)
    assert flat.training.logprob_micro_batch_size == 8 and dotted.training.logprob_micro_batch_size == 1


def test_openrlhf_separate_pools_and_the_other_models_gpus():
    s = _scenario("openrlhf", ORL_SLURM, ORL_MODEL)
    assert s.hardware.placement == "separate" and s.schedule.mode == "sync-separate"
    assert (s.hardware.rollout_gpus, s.hardware.train_gpus, s.hardware.num_gpus) == (8, 4, 12)
    assert s.num_replicas == 4 and s.engine.tensor_parallel_size == 2 and s.hardware.gpus_per_node == 4
    assert s.algorithm.mini_batches_per_step == 8  # 1024 x 1 / 128
    assert s.training.micro_batch_size == 8 and not s.training.sequence_packing
    assert s.training.logprob_micro_batch_size == 16 and s.training.offload_optimizer
    # colocate_critic_reward: the critic on the reward model's 4 GPUs, counted once with them
    assert s.algorithm.critic_with_reward and s.reward.num_gpus == 4 and s.total_gpus == 16
    assert any(a.startswith("critic on the reward model's 4 GPUs") for a in s.assumptions)
    assert any("ds.packing_samples without dynamic batch" in a for a in s.assumptions)


def test_openrlhf_async_queue_is_the_staleness():
    sets = [*ORL_MODEL, "train.async_enable=true", "train.async_queue_size=2", "train.partial_rollout_enable=true"]
    s = _scenario("openrlhf", ORL_SLURM, sets)
    assert s.schedule.mode == "async" and s.schedule.max_staleness == 2
    assert s.schedule.in_flight_weight_updates and not s.schedule.streaming
    s = _scenario("openrlhf", ORL_HYBRID, [*ORL_MODEL, "train.async_enable=true"])  # colocate_all: DeepSpeed only
    assert s.hardware.placement == "separate" and (s.hardware.rollout_gpus, s.hardware.train_gpus) == (8, 8)
    assert not s.schedule.in_flight_weight_updates


def test_openrlhf_async_loss_is_decoupled_with_the_is_correction_and_left_open_without():
    """issue 33: the staleness form follows the loss (rlsim.learning.staleness). With is_correction_enable the
    actor's recomputed old log-probs are the clipping centre and vLLM's weigh the staleness: decoupled_ppo."""
    sets = [*ORL_MODEL, "train.async_enable=true", "train.async_queue_size=4"]
    s = _scenario("openrlhf", ORL_SLURM, [*sets, "algo.advantage.is_correction_enable=true"])
    assert s.learning.staleness_loss == "decoupled_ppo"
    s = _scenario("openrlhf", ORL_SLURM, sets)
    assert s.learning.staleness_loss == "stretch"
    assert any("neither of AReaL's measured losses" in a for a in s.assumptions)
    assert _scenario("openrlhf", ORL_SLURM, ORL_MODEL).learning.staleness_loss == "stretch"  # synchronous


def test_openrlhf_reads_the_command_line_after_the_module_with_the_scripts_arrays(tmp_path, capsys):
    cmd = tmp_path / "run.sh"
    cmd.write_text(
        'ray job submit --address="http://127.0.0.1:8265" \\\n   -- python3 -m openrlhf.cli.train_ppo_ray \\\n'
        "   --actor.model_name_or_path Qwen/Qwen2.5-7B --vllm.num_engines=8 \\\n   --train.colocate_all \\\n"
        "   --algo.advantage.estimator group_norm --rollout.n_samples_per_prompt 8 --train.batch_size 1024\n"
        "# a line without a backslash ends the command, as in bash:\n   --train.batch_size 7\n"
    )
    s = _scenario("openrlhf", cmd)
    assert s.algorithm.name == "grpo" and s.num_replicas == 8 and s.hardware.placement == "colocated"
    assert s.model.name == "Qwen2.5-7B" and s.algorithm.mini_batches_per_step == 8
    arrays = tmp_path / "arrays.sh"  # OpenRLHF's example scripts gather flags in bash arrays
    arrays.write_text(
        "SAMPLES=8\nTRAIN_ARGS=(\n   --train.batch_size 1024\n   --rollout.n_samples_per_prompt ${SAMPLES}\n)\n"
        "ray job submit --address=http://127.0.0.1:8265 -- python3 -m openrlhf.cli.train_ppo_ray \\\n"
        "   --actor.model_name_or_path Qwen/Qwen2.5-7B --vllm.num_engines 8 --train.colocate_all \\\n"
        '   --algo.advantage.estimator group_norm "${TRAIN_ARGS[@]}"\n'
    )
    s = _scenario("openrlhf", arrays)
    assert s.workload.group_size == 8 and s.workload.prompts_per_step * 8 == 1024 * 8
    assert s.model.name == "Qwen2.5-7B" and s.num_replicas == 8


def test_openrlhf_every_key_is_mapped_or_listed():
    imported = import_config(ORL_SLURM, "openrlhf", {"actor.model_name_or_path": "Llama-3.1-8B"})
    flags = parse_arguments(ORL_SLURM.read_text())
    mapped = {row.key for row in registry.get("openrlhf").table}
    assert {k for k in flags if k not in mapped} <= set(imported.unused) <= set(flags)
    assert "reward.normalize_enable" in imported.unused and "ckpt.output_dir" in imported.unused
    assert "reward.model_name_or_path" not in imported.unused  # the reward model: rlsim's reward section
    # the reward model: OpenRLHF/Llama-3-8b-rm-mixture, whose architecture is Meta-Llama-3-8B's (same_architecture.yaml)
    assert imported.scenario["reward"] == {"model": "Meta-Llama-3-8B", "num_gpus": 4}
    legacy = import_config(ORL_FLAT, "openrlhf", {"pretrain": "Llama-3.1-8B"})
    assert "reward_pretrain" not in legacy.unused and "normalize_reward" in legacy.unused  # in the file's spelling
    assert legacy.scenario["reward"] == {"model": "Llama-3.1-8B"}  # colocate_all_models: on the actor's GPUs
    assert "rollout_batch_size" not in legacy.unused and "prompt_max_len" not in legacy.unused


@pytest.mark.parametrize(
    ("path", "sets", "keys"),
    [
        (ORL_SLURM, ["train.batch_size=100"], ["train.batch_size", "train.micro_batch_size"]),
        (ORL_HYBRID, ["vllm.num_engines=2"], ["actor.num_nodes", "vllm.num_engines", "train.colocate_all"]),
        (ORL_HYBRID, ["ref.num_gpus_per_node=4"], ["ref.num_gpus_per_node", "actor.num_gpus_per_node"]),
        (ORL_HYBRID, ["rollout.vllm_generate_batch_size=2048"], ["vllm_generate_batch_size", "async_enable"]),
        (ORL_HYBRID, ["train.batch_size=96"], ["rollout.batch_size", "train.batch_size"]),
        (ORL_HYBRID, ["rollout.max_new_tokens=4096"], ["rollout.max_new_tokens", "data.max_len"]),
        (ORL_FLAT, ["train_batch_size=100"], ["train_batch_size", "micro_train_batch_size"]),
    ],
    ids=["deepspeed-batch", "colocate-engines", "colocate-ref", "oversampling", "mini-batches", "lengths", "flat"],
)
def test_openrlhf_contradiction_is_refused_naming_both_keys(tmp_path, capsys, path, sets, keys):
    model = ["pretrain=Llama-3.1-8B"] if path == ORL_FLAT else ORL_MODEL
    code, out = _import(tmp_path, "openrlhf", path, [*model, *sets])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("rlsim: error:")]
    assert code == 2 and not out.exists() and len(lines) == 1
    for key in keys:
        assert key in lines[0]


def test_openrlhf_one_key_in_both_spellings_is_refused(tmp_path):
    both = tmp_path / "both.yaml"
    both.write_text("rollout_batch_size: 64\nrollout:\n  batch_size: 128\n")
    with pytest.raises(ImportConfigError, match="rollout_batch_size and rollout.batch_size give the same"):
        import_config(both, "openrlhf")


def test_openrlhf_without_vllm_is_refused_and_dynamic_filtering_assumes_its_keep_rate():
    with pytest.raises(ImportConfigError, match="vllm.num_engines: not set"):
        import_config(ORL_HYBRID, "openrlhf", {"vllm.num_engines": 0, "actor.model_name_or_path": "Llama-3.1-8B"})
    sets = {"algo.dynamic_filtering_enable": True, "actor.model_name_or_path": "Llama-3.1-8B"}
    imp = import_config(ORL_HYBRID, "openrlhf", sets)
    assumed = {"mode": "replace", "keep_rate": 1 / 3, "keep_rate_source": "assumed"}
    assert imp.scenario["algorithm"]["dynamic_sampling"] == assumed
    assert any("keep rate assumed 0.33" in a for a in imp.scenario["assumptions"])
    imp = import_config(ORL_HYBRID, "openrlhf", sets, {"algorithm.dynamic_sampling.keep_rate": 0.25})
    given = {"mode": "replace", "keep_rate": 0.25, "keep_rate_source": "given"}
    assert imp.scenario["algorithm"]["dynamic_sampling"] == given
    assert any("streaming replacement" in a for a in imp.scenario["assumptions"])


# ------------------------------------------------------------------------------------------------ NeMo RL


def test_nemo_rl_defaults_chain_merges_parents_first_and_the_child_wins():
    """async-1off <- 2n8g <- grpo_math_1B: P 64 x G 32 from the middle recipe, its PP 2 replaced by the child's 1,
    non-colocated on 1 + 1 nodes of 8 (resources.num_nodes 1), one step stale, vLLM gpu_memory_utilization 0.8."""
    s = _scenario("nemo-rl", NEMO_ASYNC)
    assert (s.workload.prompts_per_step, s.workload.group_size) == (64, 32)
    assert s.training.backend == "megatron" and s.training.pipeline_parallel_size == 1
    assert s.training.global_batch_size == 2048 and s.optimizer_steps_per_step == 1
    assert (s.hardware.placement, s.hardware.rollout_gpus, s.hardware.train_gpus) == ("separate", 8, 8)
    assert s.schedule.mode == "async" and s.schedule.max_staleness == 1 and s.schedule.in_flight_weight_updates
    assert s.engine.gpu_memory_utilization == 0.8 and s.engine.max_num_seqs == 128  # AsyncLLM's default
    assert s.learning.lr0 == 5e-7 and s.model.name == "Llama-3.1-8B"
    assert s.learning.staleness_loss == "decoupled_ppo"  # async GRPO asserts the importance-sampling correction
    sync = _scenario("nemo-rl", NEMO_LLAMA)
    assert sync.learning.staleness_loss == "stretch"
    assert sync.training.pipeline_parallel_size == 2 and sync.hardware.placement == "colocated"
    assert sync.hardware.num_gpus == 16 and sync.hardware.gpus_per_node == 8 and sync.engine.max_num_seqs == 1024


def test_nemo_rl_base_recipe_is_dtensor_on_one_gpu():
    """grpo_math_1B: 32 prompts x 16 generations = 512 = train_global_batch_size (one optimizer step), DTensor
    TP 1 (rlsim fsdp), 4 sequences per micro-batch packed into bins of 512 x 4 tokens."""
    s = _scenario("nemo-rl", NEMO_BASE)
    assert (s.workload.prompts_per_step, s.workload.group_size, s.optimizer_steps_per_step) == (32, 16, 1)
    assert s.hardware.num_gpus == 1 and s.training.backend == "fsdp"
    assert s.training.micro_batch_size == 4 and s.training.packing_tokens == 512
    assert s.training.logprob_micro_batch_size == 4  # ${policy.train_micro_batch_size}
    assert s.workload.max_response_tokens == 512 - PROMPT_TOKENS
    assert s.model.name == "Qwen2.5-1.5B" and s.learning.lr0 == 5e-6


def test_nemo_rl_interpolations_follow_the_overrides():
    s = _scenario("nemo-rl", NEMO_BASE, ["policy.max_total_sequence_length=1024", "policy.train_micro_batch_size=2"])
    assert s.workload.max_response_tokens == 1024 - PROMPT_TOKENS  # max_new_tokens, max_model_len follow
    assert s.training.packing_tokens == 1024 and s.training.logprob_micro_batch_size == 2
    # a recipe that spells max_model_len and max_new_tokens keeps them; the least cap wins
    s = _scenario("nemo-rl", NEMO_LLAMA, ["policy.max_total_sequence_length=2048"])
    assert s.workload.max_response_tokens == 2048 - PROMPT_TOKENS


def test_nemo_rl_moe_recipe_with_a_null_section_and_an_interpolation():
    s = _scenario("nemo-rl", NEMO_QWEN)
    assert s.model.name == "Qwen3-30B-A3B" and s.training.expert_parallel_size == 8
    assert s.engine.tensor_parallel_size == 2 and s.num_replicas == 16 and s.hardware.num_gpus == 32
    assert s.learning.lr0 == 3e-7  # megatron_cfg.optimizer.lr; policy.optimizer is null in this recipe


def test_nemo_rl_import_is_the_published_mapping():
    """The v0.7.0 recipe with the v0.5.0 train_global_batch_size (512, the development row's) maps like
    rlsim-calibrate published maps that row, but for what only the row has (the measured response length)."""
    from calibrate.published.steps import dev_set_path, read_rows

    dev = read_rows([dev_set_path()])
    row = dev[(dev["model"] == "meta-llama/Llama-3.1-8B-Instruct") & (dev["policy_mode"] == "on")].iloc[0].to_dict()
    published_s = from_dict(scenario_from_recipe(row, steps=2))
    sets = ["policy.train_global_batch_size=512", "loss_fn.force_on_policy_ratio=false"]
    mine_s = _scenario("nemo-rl", NEMO_LLAMA, sets)
    # the row's release selects the behaviour (software section); the recipe YAML, of no release, names it
    assert published_s.software.framework_version == "0.5.0" and mine_s.engine.behaviour == "vllm-v1"
    assert engine_behaviour(mine_s) == engine_behaviour(published_s) == "vllm-v1"
    mine, published = mine_s.to_dict(), published_s.to_dict()
    mine["engine"]["behaviour"] = published["engine"]["behaviour"]
    for section in ("engine", "algorithm", "schedule", "weight_sync"):
        assert mine[section] == published[section], section
    assert mine["training"] == published["training"]
    hw = {k: v for k, v in mine["hardware"].items() if k != "gpus_per_node"}
    assert hw == {k: v for k, v in published["hardware"].items() if k != "gpus_per_node"}
    for key in ("prompts_per_step", "group_size", "prompt_length", "max_prompt_tokens", "max_response_tokens"):
        assert mine["workload"][key] == published["workload"][key], key


def test_nemo_rl_every_key_is_mapped_or_listed():
    from rlsim.frameworks.config_import import flatten

    imported = import_config(NEMO_LLAMA, "nemo-rl")
    merged = flatten(read_recipe(NEMO_LLAMA))
    mapped = {row.key for row in registry.get("nemo-rl").table}
    assert {k for k in merged if k not in mapped} <= set(imported.unused) <= set(merged)
    # a mapped key this recipe does not use (DTensor's, with Megatron on) is listed too
    assert "policy.dtensor_cfg.tensor_parallel_size" in imported.unused
    assert "logger.wandb.project" in imported.unused and "grpo.seed" in imported.unused
    assert "defaults" not in imported.unused


def test_nemo_rl_defaults_chain_cycle_and_missing_parent_are_refused_naming_the_file(tmp_path):
    (tmp_path / "a.yaml").write_text("defaults: b.yaml\ngrpo:\n  num_prompts_per_step: 8\n")
    (tmp_path / "b.yaml").write_text("defaults: [./a.yaml]\n")
    with pytest.raises(ImportConfigError, match=r"a.yaml: defaults chain has a cycle \(a.yaml -> b.yaml -> a.yaml\)"):
        import_config(tmp_path / "a.yaml", "nemo-rl")
    (tmp_path / "c.yaml").write_text("defaults: ../nowhere/base.yaml\n")
    with pytest.raises(ImportConfigError, match=r"c.yaml: defaults: .*nowhere/base.yaml is not a file"):
        import_config(tmp_path / "c.yaml", "nemo-rl")


def test_nemo_rl_dynamic_sampling_maps_with_its_keep_rate_given(tmp_path):
    sets = ["grpo.use_dynamic_sampling=true", "grpo.batch_multiplier=2", "grpo.dynamic_sampling_max_gen_batches=4"]
    code, out = _import(tmp_path, "nemo-rl", NEMO_BASE, sets, ["algorithm.dynamic_sampling.keep_rate=0.3"])
    assert code == 0
    ds = load_scenario(out).algorithm.dynamic_sampling
    assert (ds.keep_rate, ds.batch_multiplier, ds.max_gen_batches, ds.rounds()) == (0.3, 2.0, 4, 2)
    assert ds.keep_rate_source == "given" and "no keep rate in the file" in out.read_text()
    # a keep rate that needs more rounds than the recipe allows: refused naming both
    code, _ = _import(tmp_path, "nemo-rl", NEMO_BASE, sets, ["algorithm.dynamic_sampling.keep_rate=0.1"])
    assert code == 2


def test_nemo_rl_override_marker_replaces_the_parents_section(tmp_path):
    parent = NEMO_BASE.resolve()
    child = tmp_path / "child.yaml"
    child.write_text(f"defaults: {parent}\ncluster:\n  _override_: true\n  gpus_per_node: 8\n")
    s = _scenario("nemo-rl", child)
    assert s.hardware.num_gpus == 8  # num_nodes gone with the parent's section: the TABLE default 1


@pytest.mark.parametrize(
    ("path", "sets", "keys"),
    [
        (NEMO_QWEN, ["policy.train_global_batch_size=1024"], ["force_on_policy_ratio", "train_global_batch_size"]),
        (NEMO_BASE, ["policy.train_global_batch_size=384"], ["num_prompts_per_step", "train_global_batch_size"]),
        (NEMO_ASYNC, ["policy.generation.vllm_cfg.async_engine=false"], ["async_grpo.enabled", "async_engine"]),
        (NEMO_LLAMA, ["policy.dtensor_cfg.enabled=true"], ["megatron_cfg.enabled", "dtensor_cfg.enabled"]),
        (NEMO_ASYNC, ["policy.generation.colocated.enabled=true"], ["async_grpo.enabled", "colocated.enabled"]),
        (
            NEMO_ASYNC,
            ["policy.generation.colocated.resources.gpus_per_node=4"],
            ["resources.gpus_per_node", "cluster.gpus_per_node"],
        ),
        (
            NEMO_BASE,
            ["policy.generation.colocated.enabled=false", "cluster.gpus_per_node=8"],
            ["resources.gpus_per_node"],
        ),
    ],
    ids=[
        "on-policy-ratio",
        "global-batch",
        "async-engine",
        "two-backends",
        "async-colocated",
        "gen-nodes",
        "one-node-gen-gpus",
    ],
)
def test_nemo_rl_contradiction_is_refused_naming_the_keys(tmp_path, capsys, path, sets, keys):
    code, out = _import(tmp_path, "nemo-rl", path, sets)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("rlsim: error:")]
    assert code == 2 and not out.exists() and len(lines) == 1
    for key in keys:
        assert key in lines[0]


def test_an_sft_config_is_not_imported_as_grpo(tmp_path, capsys):
    """TRL's SFTConfig (the keys of trl/trainer/sft_config.py) used to import as GRPO without a word."""
    sft = tmp_path / "sft.yaml"
    sft.write_text(
        "model_name_or_path: Qwen/Qwen2.5-7B\nlearning_rate: 2.0e-5\nper_device_train_batch_size: 4\n"
        "gradient_accumulation_steps: 8\npacking: true\nmax_length: 4096\ndataset_text_field: text\n"
    )
    code, out = _import(tmp_path, "trl", sft, ["num_processes=8"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not out.exists()
    assert "not an RL trainer's config" in err[-1] and "SFTConfig" in err[-1] and "dataset_text_field" in err[-1]


def test_nemo_rl_dtensor_cpu_offload_offloads_params_and_optimizer(tmp_path):
    """policy.dtensor_cfg.cpu_offload was ignored; it now puts parameters and optimizer states on the host."""
    off = _scenario("nemo-rl", NEMO_BASE, ["policy.dtensor_cfg.cpu_offload=true"])
    on = _scenario("nemo-rl", NEMO_BASE)
    assert off.training.offload_params and off.training.offload_optimizer
    assert not on.training.offload_params and not on.training.offload_optimizer


def test_a_fine_tune_name_resolves_to_its_base_with_the_source_said(tmp_path):
    from rlsim import catalog
    from rlsim.frameworks.common import resolve_model

    for name, entry in catalog.same_architecture().items():
        assert catalog.model(entry["as"]) and len(str(entry["source"])) > 40, name
    name, notes = resolve_model("OpenRLHF/Llama-3-8b-sft-mixture", "actor.model_name_or_path")
    assert name == "Meta-Llama-3-8B" and "same_architecture.yaml gives the source" in notes[0]
    assert resolve_model("/ckpt/Qwen2.5-Coder-7B-Instruct", "m")[0] == "Qwen2.5-7B"  # a local copy, by its name
    folder = tmp_path / "Qwen2.5-Coder-7B-Instruct"  # a folder with its own config.json is read instead
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    assert resolve_model(str(folder), "m")[0] == str(folder.resolve())


def test_verl_removes_padding_by_default_as_verl_does(tmp_path):
    script = CONFIGS / "verl_scripts" / "grpo_trainer__run_qwen2-7b.sh"  # use_remove_padding=True, micro 40
    code, out = _import(tmp_path, "verl", script)
    assert code == 0 and load_scenario(out).training.remove_padding
    sets = ["actor_rollout_ref.model.use_remove_padding=false"]  # padded to 40 x 1536 tokens, fp32 logits
    unpadded = load_scenario(out)
    code, out = _import(tmp_path, "verl", script, sets)
    padded = load_scenario(out)
    assert code == 0 and padded.training.pad_to_cap and unpadded.training.inplace_logprobs
    assert memory(padded).activation_bytes > memory(unpadded).activation_bytes


SC = CONFIGS / "nemo_rl_7ea279a" / "examples" / "configs"


def test_nemo_rl_single_controller_sampler_sets_the_staleness():
    """async_rl (NeMo RL's single controller): in_order's max_lookahead_versions, the other gated samplers'
    max_staleness_versions -> async K, 0 -> synchronous; a custom sampler, or async_grpo set as well, refused."""
    sync = SC / "recipes" / "llm" / "grpo-qwen2.5-math-1.5b-instruct-1n8g-megatron-single-controller-sync.yaml"
    s = from_dict(import_config(sync, "nemo-rl", {"policy.model_name": "Qwen2.5-1.5B"}).scenario)
    assert s.schedule.mode == "sync-separate" and s.hardware.rollout_gpus == 4  # max_lookahead_versions 0
    one_b = SC / "grpo_math_1B_megatron_single_controller.yaml"
    s = from_dict(import_config(one_b, "nemo-rl", {"async_rl.sampler.max_lookahead_versions": 2}).scenario)
    assert (s.schedule.mode, s.schedule.max_staleness) == ("async", 2)
    with pytest.raises(ImportConfigError, match="'custom' is not modelled"):
        import_config(one_b, "nemo-rl", {"async_rl.sampler.name": "custom"})
    with pytest.raises(ImportConfigError, match="both set"):
        import_config(one_b, "nemo-rl", {"grpo.async_grpo.enabled": True})
    with pytest.raises(ImportConfigError, match="with policy.generation.colocated.enabled: true is not modelled"):
        import_config(one_b, "nemo-rl", {"policy.generation.colocated.enabled": True})


def test_nemo_rl_dynamic_batching_is_priced_as_bins_of_its_token_budget():
    """policy.dynamic_batching (exclusive of sequence packing, as NeMo RL asserts): micro-batches of up to
    train_mb_tokens tokens, priced as micro_batch_size bins of train_mb_tokens / micro_batch_size; before, the
    micro-batches were priced padded to the cap."""
    one_b = SC / "grpo_math_1B.yaml"
    sets = {"policy.dynamic_batching.enabled": True, "policy.sequence_packing.enabled": False}
    s = from_dict(import_config(one_b, "nemo-rl", sets).scenario)
    assert s.training.sequence_packing and (s.training.micro_batch_size, s.training.packing_tokens) == (4, 512)
    s = from_dict(import_config(one_b, "nemo-rl", {**sets, "policy.dynamic_batching.train_mb_tokens": 4096}).scenario)
    assert s.training.packing_tokens == 1024
    padded = from_dict(import_config(one_b, "nemo-rl", {"policy.sequence_packing.enabled": False}).scenario)
    assert not padded.training.sequence_packing
    with pytest.raises(ImportConfigError, match="NeMo RL allows one"):
        import_config(one_b, "nemo-rl", {"policy.dynamic_batching.enabled": True})


# ------------------------------------------------------------------------------------------------ verl Megatron

VERL_MEGATRON = (
    Path(__file__).parent / "fixtures" / "configs" / "verl_scripts" / "grpo_trainer__run_qwen2-7b_math_megatron.sh"
)


def test_verl_megatron_trainer_imports_its_layout():
    """--config-name ppo_megatron_trainer with TP 2 x PP 2 on 8 GPUs: data-parallel 2, so a mini-batch of 256 x 5
    responses is 640 per rank, in micro-batches of 4; verl's Megatron engine packs real tokens (thd) and does not
    recompute unless told."""
    imp = import_config(VERL_MEGATRON, "verl", {})
    tr = imp.scenario["training"]
    assert (tr["backend"], tr["tensor_parallel_size"], tr["pipeline_parallel_size"]) == ("megatron", 2, 2)
    assert (tr["micro_batch_size"], tr["remove_padding"], tr["activation_recompute"]) == (4, True, "none")
    assert tr["expert_tensor_parallel_size"] == 1  # a dense model: Megatron's "null is TP" is moot
    assert any("data-parallel 2" in a for a in imp.scenario["assumptions"])
    full = import_config(
        VERL_MEGATRON,
        "verl",
        {"actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity": "full"},
    )
    assert full.scenario["training"]["activation_recompute"] == "full"


def test_verl_megatron_layouts_that_do_not_divide_are_refused_and_offload_is_mapped():
    with pytest.raises(ImportConfigError, match="tensor x pipeline x context"):
        import_config(VERL_MEGATRON, "verl", {"actor_rollout_ref.actor.megatron.tensor_model_parallel_size": 3})
    # verl's Megatron offload swaps the states between phases (rlsim.trainer.offload), grad_offload moves nothing
    mg = "actor_rollout_ref.actor.megatron."
    sets = {mg + "param_offload": True, mg + "grad_offload": True, mg + "optimizer_offload": True}
    out = import_config(VERL_MEGATRON, "verl", sets)
    tr = out.scenario["training"]
    assert tr["swap_params"] is True and tr["swap_optimizer"] is True and not tr.get("offload_optimizer")
    assert any("grad_offload: moves nothing" in str(n) for n in out.scenario.get("assumptions", []))


def test_a_verl_yaml_whose_defaults_name_the_megatron_actor_is_megatron(tmp_path):
    cfg = tmp_path / "ppo_megatron.yaml"
    cfg.write_text(
        "defaults:\n  - actor@actor_rollout_ref.actor: megatron_actor\n  - _self_\n"
        "data: {train_batch_size: 64}\n"
        "actor_rollout_ref:\n  model: {path: Qwen/Qwen2.5-7B}\n"
        "  actor: {ppo_mini_batch_size: 64, ppo_micro_batch_size_per_gpu: 2,\n"
        "          megatron: {tensor_model_parallel_size: 4}}\n"
        "  rollout: {n: 4}\n"
    )
    tr = import_config(cfg, "verl", {}).scenario["training"]
    assert tr["backend"] == "megatron" and tr["tensor_parallel_size"] == 4
