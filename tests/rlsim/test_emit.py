"""rlsim.frameworks.emit: a planned scenario back in the framework's keys.

Round trip for every fixture of the four frameworks: plan a scenario that differs from the imported original (P, G,
engine TP, GPUs, training layout, schedule), emit it against the original, import the original again with the
emitted overrides as --set, and get the plan's batch, placement, engine and layout knobs back. Emitting the
original's own scenario changes nothing.
"""

from pathlib import Path

import pytest
import yaml

from rlsim.frameworks.adapter import EmitError
from rlsim.frameworks.config_import import import_config
from rlsim.frameworks.emit import emit, parse_emitted_overrides, write_emitted
from rlsim.scenario import from_dict, parse_overrides, with_overrides
from rlsim.workload.lr_rules import lr_for_batch

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
PERF = CONFIGS / "nemo_rl" / "recipes" / "llm" / "performance"
ORL_MODEL = ["actor.model_name_or_path=Llama-3.1-8B"]

# (format, fixture, its --set items, the plan as scenario overrides of the imported original)
CASES = [
    (
        "verl",
        CONFIGS / "verl_grpo_qwen3_8b.yaml",
        [],
        {
            "workload.prompts_per_step": 2048,
            "workload.group_size": 8,
            "engine.tensor_parallel_size": 4,
            "hardware.num_gpus": 16,
        },
    ),
    (
        "verl",
        CONFIGS / "verl_ppo_qwen2.5_0.5b_quickstart.yaml",
        [],
        {
            "workload.prompts_per_step": 512,
            "workload.group_size": 2,
            "hardware.num_gpus": 2,
            "hardware.gpus_per_node": 2,
            "engine.tensor_parallel_size": 2,
            "algorithm.epochs_per_step": 2,
        },
    ),
    (
        "trl",
        CONFIGS / "trl_gspo_qwen3_0.6b.yaml",
        ["num_processes=8", "model_name_or_path=Qwen2.5-0.5B"],
        {"workload.prompts_per_step": 128, "workload.group_size": 4, "hardware.num_gpus": 16},
    ),
    (
        "trl",
        CONFIGS / "trl_grpo_qwen2.5_7b_vllm_server.json",
        ["num_processes=4", "vllm_server_tensor_parallel_size=4"],
        {
            "workload.prompts_per_step": 8,
            "workload.group_size": 8,
            "hardware.num_gpus": 12,
            "hardware.rollout_gpus": 8,
            "engine.tensor_parallel_size": 2,
            "engine.replicas": 4,
        },
    ),
    (
        "openrlhf",
        CONFIGS / "openrlhf_scripts" / "train_ppo_ray_hybrid_engine.sh",
        ORL_MODEL,
        {
            "workload.prompts_per_step": 2048,
            "workload.group_size": 4,
            "hardware.num_gpus": 16,
            "engine.tensor_parallel_size": 4,
            "engine.replicas": 4,
        },
    ),
    (
        "openrlhf",
        CONFIGS / "openrlhf_ppo_llama3_8b_slurm.args",
        ORL_MODEL,
        {
            "workload.prompts_per_step": 2048,
            "workload.group_size": 2,
            "hardware.num_gpus": 24,
            "hardware.rollout_gpus": 16,
            "hardware.train_gpus": 8,
            "engine.replicas": 8,
            "schedule.mode": "async",
            "schedule.max_staleness": 2,
            "schedule.streaming": False,
        },
    ),
    (
        "openrlhf",
        CONFIGS / "openrlhf_ppo_llama3_8b_hybrid_engine_v0.9.5.yaml",
        ["pretrain=Llama-3.1-8B"],
        {
            "workload.prompts_per_step": 512,
            "workload.group_size": 8,
            "engine.tensor_parallel_size": 1,
            "engine.replicas": 8,
            "algorithm.mini_batches_per_step": 16,
        },
    ),
    (
        "nemo-rl",
        CONFIGS / "nemo_rl" / "grpo_math_1B.yaml",
        [],
        {
            "workload.prompts_per_step": 64,
            "workload.group_size": 8,
            "training.global_batch_size": 256,
            "hardware.num_gpus": 2,
            "hardware.gpus_per_node": 2,
            "engine.tensor_parallel_size": 2,
        },
    ),
    (
        "nemo-rl",
        PERF / "grpo-llama3.1-8b-instruct-2n8g.yaml",
        [],
        {
            "workload.prompts_per_step": 128,
            "hardware.num_gpus": 32,
            "engine.tensor_parallel_size": 2,
            "training.tensor_parallel_size": 2,
            "training.pipeline_parallel_size": 2,
        },
    ),
    (
        "nemo-rl",
        PERF / "grpo-llama3.1-8b-instruct-2n8g-async-1off.yaml",
        [],
        {
            "workload.group_size": 16,
            "training.global_batch_size": 1024,
            "hardware.num_gpus": 32,
            "hardware.rollout_gpus": 16,
            "hardware.train_gpus": 16,
            "engine.tensor_parallel_size": 2,
            "schedule.max_staleness": 2,
        },
    ),
    (
        "nemo-rl",
        PERF / "grpo-qwen3-30ba3b-4n8g.yaml",
        [],
        {
            "workload.prompts_per_step": 32,
            "training.global_batch_size": 1024,
            "hardware.num_gpus": 64,
            "engine.tensor_parallel_size": 4,
            "training.tensor_parallel_size": 2,
        },
    ),
]
IDS = [f"{fmt}-{path.stem}" for fmt, path, _, _ in CASES]


def _imported(fmt, path, sets):
    return from_dict(import_config(path, fmt, parse_overrides(list(sets))).scenario)


def _knobs(s):
    hw, tr = s.hardware, s.training
    return {
        "P": s.workload.prompts_per_step,
        "G": s.workload.group_size,
        "mini_batches": s.algorithm.mini_batches_per_step,
        "optimizer_steps": s.optimizer_steps_per_step,
        "epochs": s.algorithm.epochs_per_step,
        "gpus": hw.num_gpus,
        "placement": hw.placement,
        "rollout_gpus": hw.rollout_gpus,
        "train_gpus": hw.train_gpus,
        "engine_tp": s.engine.tensor_parallel_size,
        "replicas": s.num_replicas,
        "train_tp": tr.tensor_parallel_size,
        "train_pp": tr.pipeline_parallel_size,
        "schedule": (s.schedule.mode, s.schedule.max_staleness),
    }


@pytest.mark.parametrize(("fmt", "path", "sets", "plan"), CASES, ids=IDS)
def test_round_trip_gives_the_plans_knobs_back(fmt, path, sets, plan):
    original = _imported(fmt, path, sets)
    planned = with_overrides(original, plan)
    assert _knobs(planned) != _knobs(original)
    emitted = emit(fmt, planned, original=path, framework_set=sets)
    assert emitted.patch and emitted.overrides
    again = {**parse_overrides(list(sets)), **parse_emitted_overrides(fmt, emitted.overrides, emitted.launch)}
    back = from_dict(import_config(path, fmt, again).scenario)
    assert _knobs(back) == _knobs(planned)
    assert back.learning.lr0 == pytest.approx(lr_for_batch(planned.learning, planned.workload.responses_per_step))


@pytest.mark.parametrize(("fmt", "path", "sets", "plan"), CASES, ids=IDS)
def test_emitting_the_original_changes_nothing(fmt, path, sets, plan):
    emitted = emit(fmt, _imported(fmt, path, sets), original=path, framework_set=sets)
    assert emitted.patch == {} and emitted.overrides == []


def test_verl_patch_holds_only_the_changed_keys_and_the_lr_at_the_new_batch():
    """P 1024 -> 2048 and G 5 -> 10: B x 4, so the sqrt rule doubles the LR (1e-6 -> 2e-6); mini-batches stay 4
    (ppo_mini_batch_size 256 -> 512 prompts)."""
    path = CONFIGS / "verl_grpo_qwen3_8b.yaml"
    planned = with_overrides(
        _imported("verl", path, []), {"workload.prompts_per_step": 2048, "workload.group_size": 10}
    )
    emitted = emit("verl", planned, original=path)
    assert emitted.patch == {
        "data": {"train_batch_size": 2048},
        "actor_rollout_ref": {
            "rollout": {"n": 10},
            "actor": {"ppo_mini_batch_size": 512, "optim": {"lr": pytest.approx(2e-6)}},
        },
    }
    assert "data.train_batch_size=2048" in emitted.overrides
    assert "actor_rollout_ref.rollout.n=10" in emitted.overrides


def test_without_an_original_every_determined_key_is_emitted():
    planned = _imported("nemo-rl", PERF / "grpo-llama3.1-8b-instruct-2n8g.yaml", [])
    emitted = emit("nemo-rl", planned)
    assert emitted.patch["grpo"]["num_prompts_per_step"] == 64
    assert emitted.patch["policy"]["megatron_cfg"]["pipeline_model_parallel_size"] == 2
    assert emitted.patch["cluster"] == {"gpus_per_node": 8, "num_nodes": 2}


def test_trl_keeps_the_knob_the_original_uses():
    path = CONFIGS / "trl_gspo_qwen3_0.6b.yaml"
    gen_sets = ["num_processes=8", "model_name_or_path=Qwen2.5-0.5B", "generation_batch_size=512"]
    gen_sets.append("steps_per_generation=null")
    for sets, knob, other in (
        (gen_sets, "generation_batch_size", "steps_per_generation"),
        (CASES[2][2], "steps_per_generation", "generation_batch_size"),
    ):
        plan = {"workload.prompts_per_step": 256, "workload.group_size": 4, "hardware.num_gpus": 32}
        planned = with_overrides(_imported("trl", path, sets), plan)
        patch = emit("trl", planned, original=path, framework_set=sets).patch
        assert knob in patch and other not in patch, patch


def test_openrlhf_flat_original_gets_flat_names():
    path = CONFIGS / "openrlhf_ppo_llama3_8b_hybrid_engine_v0.9.5.yaml"
    planned = with_overrides(_imported("openrlhf", path, ["pretrain=Llama-3.1-8B"]), {"workload.group_size": 8})
    emitted = emit("openrlhf", planned, original=path, framework_set=["pretrain=Llama-3.1-8B"])
    assert emitted.patch["n_samples_per_prompt"] == 8 and "--n_samples_per_prompt 8" in emitted.overrides
    assert "rollout" not in emitted.patch


def test_openrlhf_a_false_flag_is_a_note_to_remove_it():
    path = CONFIGS / "openrlhf_scripts" / "train_ppo_ray_hybrid_engine.sh"
    planned = with_overrides(
        _imported("openrlhf", path, ORL_MODEL),
        {
            "hardware.placement": "separate",
            "hardware.num_gpus": 16,
            "hardware.rollout_gpus": 8,
            "hardware.train_gpus": 8,
            "schedule.mode": "sync-separate",
        },
    )
    emitted = emit("openrlhf", planned, original=path, framework_set=ORL_MODEL)
    assert emitted.patch["train"]["colocate_all"] is False
    assert not any("colocate_all" in o for o in emitted.overrides)
    assert any(n.startswith("--train.colocate_all: remove it from the command line") for n in emitted.notes)


@pytest.mark.parametrize(
    ("fmt", "path", "sets", "plan", "note"),
    [
        (
            "trl",
            CONFIGS / "trl_grpo_qwen2.5_7b_vllm_server.json",
            CASES[3][2],
            {"schedule.mode": "async", "schedule.max_staleness": 1},
            "schedule.mode async (max_staleness 1): TRL has no",
        ),
        (
            "openrlhf",
            CONFIGS / "openrlhf_ppo_llama3_8b_slurm.args",
            ORL_MODEL,
            {"engine.max_num_seqs": 512},
            "engine.max_num_seqs 512: OpenRLHF has no key for it",
        ),
        (
            "verl",
            CONFIGS / "verl_grpo_qwen3_8b.yaml",
            [],
            {
                "hardware.placement": "separate",
                "hardware.num_gpus": 16,
                "hardware.rollout_gpus": 8,
                "hardware.train_gpus": 8,
                "training.micro_batch_size": 16,
                "schedule.mode": "sync-separate",
            },
            "hardware.placement separate (8 + 8): verl's hybrid engine",
        ),
        (
            "nemo-rl",
            PERF / "grpo-llama3.1-8b-instruct-2n8g.yaml",
            [],
            {"algorithm.epochs_per_step": 2},
            "algorithm.epochs_per_step 2: NeMo RL trains each batch once",
        ),
    ],
    ids=["trl-async", "openrlhf-max-num-seqs", "verl-separate", "nemo-epochs"],
)
def test_a_knob_the_framework_cannot_express_is_a_note(fmt, path, sets, plan, note):
    planned = with_overrides(_imported(fmt, path, sets), plan)
    emitted = emit(fmt, planned, original=path, framework_set=sets)
    assert any(n.startswith(note) for n in emitted.notes), emitted.notes


def test_nemo_rl_on_policy_ratio_is_turned_off_when_the_plan_takes_several_optimizer_steps():
    path = PERF / "grpo-llama3.1-8b-instruct-2n8g.yaml"
    planned = with_overrides(_imported("nemo-rl", path, []), {"workload.prompts_per_step": 128})  # gbs 2048 < B 4096
    emitted = emit("nemo-rl", planned, original=path)
    assert emitted.patch["loss_fn"] == {"force_on_policy_ratio": False}
    assert "loss_fn.force_on_policy_ratio=false" in emitted.overrides


def test_nemo_rl_a_key_the_recipe_lacks_is_added_with_plus_plus():
    path = PERF / "grpo-llama3.1-8b-instruct-2n8g.yaml"
    planned = with_overrides(_imported("nemo-rl", path, []), {"engine.max_num_seqs": 512})
    emitted = emit("nemo-rl", planned, original=path)
    assert emitted.overrides == ["++policy.generation.vllm_kwargs.max_num_seqs=512"]


def test_a_plan_the_batch_rules_cannot_express_is_refused_naming_both_sides():
    path = CONFIGS / "verl_grpo_qwen3_8b.yaml"
    planned = with_overrides(_imported("verl", path, []), {"algorithm.mini_batches_per_step": 5})
    with pytest.raises(EmitError, match=r"workload.prompts_per_step \(1024\) must be divisible by the optimizer"):
        emit("verl", planned, original=path)
    with pytest.raises(EmitError, match="--emit 'colossal' is not supported"):
        emit("colossal", planned)


def test_write_emitted_writes_the_patch_the_overrides_and_the_notes(tmp_path):
    path = CONFIGS / "trl_grpo_qwen2.5_7b_vllm_server.json"
    sets = CASES[3][2]
    plan = {"workload.group_size": 16, "hardware.num_gpus": 12, "hardware.train_gpus": 8}
    planned = with_overrides(_imported("trl", path, sets), plan)
    emitted = emit("trl", planned, original=path, framework_set=sets)
    files = write_emitted(emitted, "trl", tmp_path / "out")
    assert [f.name for f in files] == ["trl_patch.yaml", "trl_overrides.sh", "trl_launch.sh", "trl_notes.txt"]
    assert yaml.safe_load(files[0].read_text()) == emitted.patch and "num_processes" not in emitted.patch
    assert files[1].read_text().count("\n") == 1 and "--num_generations 16" in files[1].read_text()
    assert "num_processes" not in files[1].read_text()
    assert files[2].read_text() == "accelerate launch --num_processes 8\n"
    assert files[3].read_text().startswith("- num_processes: launch facts, not config keys")
    orl = emit("openrlhf", _imported("openrlhf", CONFIGS / "openrlhf_ppo_llama3_8b_slurm.args", ORL_MODEL))
    files = write_emitted(orl, "openrlhf", tmp_path / "orl")
    assert files[0].name == "openrlhf_patch.json" and files[0].read_text().startswith("{")


def test_dynamic_sampling_and_a_reward_model_are_emitted_or_named():
    path = PERF / "grpo-llama3.1-8b-instruct-2n8g.yaml"
    ds = {"algorithm.dynamic_sampling": {"keep_rate": 0.4, "batch_multiplier": 2, "max_gen_batches": 6}}
    planned = with_overrides(_imported("nemo-rl", path, []), ds)
    emitted = emit("nemo-rl", planned, original=path)
    assert emitted.patch["grpo"]["use_dynamic_sampling"] is True
    assert (
        emitted.patch["grpo"]["batch_multiplier"] == 2
        and emitted.patch["grpo"]["dynamic_sampling_max_gen_batches"] == 6
    )
    verl_path = CONFIGS / "verl_grpo_qwen3_8b.yaml"
    planned = with_overrides(_imported("verl", verl_path, []), {**ds, "reward.model": "Qwen2.5-1.5B"})
    notes = emit("verl", planned, original=verl_path).notes
    assert any("algorithm.dynamic_sampling (keep rate 0.4): not emitted for verl" in n for n in notes)
    assert any("reward.model Qwen2.5-1.5B on the training GPUs: not emitted" in n for n in notes)


@pytest.mark.parametrize(
    ("fmt", "path", "sets", "plan"), [c for c in CASES if c[0] == "trl"], ids=lambda v: str(v)[:40]
)
def test_trl_loads_the_emitted_config_through_its_own_parser(tmp_path, fmt, path, sets, plan):
    """Issue 29, must-show 2: the original with the patch applied is what `trl grpo --config` reads. TRL's own
    TrlParser (ScriptArguments, GRPOConfig, ModelConfig; TRL 1.9.0, the newest release rlsim's defaults read) parses
    it, refusing any key that is not TRL's (a launch fact in the file is refused: Emitted.launch holds them), its
    GRPOConfig checks pass, and it holds the plan's batch: G, and B = per-device batch x processes x steps per
    generation, over the launch's process count."""
    from trl import GRPOConfig, ModelConfig, ScriptArguments, TrlParser

    planned = with_overrides(_imported(fmt, path, sets), plan)
    emitted = emit(fmt, planned, original=path, framework_set=sets)
    config = {**yaml.safe_load(path.read_text()), **emitted.patch}
    out = tmp_path / "emitted.yaml"
    out.write_text(yaml.safe_dump(config))
    parser = TrlParser((ScriptArguments, GRPOConfig, ModelConfig))
    # use_cpu and dataset_name are this test machine's and the script's, not the config's
    _, grpo, _ = parser.parse_args_and_config(args=["--config", str(out), "--use_cpu", "true", "--dataset_name", "d"])
    launch = parse_emitted_overrides(fmt, [], emitted.launch)
    processes = launch.get("num_processes", dict(s.split("=") for s in sets).get("num_processes"))
    w = planned.workload
    assert grpo.num_generations == w.group_size
    assert grpo.per_device_train_batch_size * int(processes) * grpo.steps_per_generation == w.responses_per_step
    assert grpo.learning_rate == pytest.approx(lr_for_batch(planned.learning, w.responses_per_step))
