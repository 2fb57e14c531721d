"""The adapters of slime, SkyRL, prime-rl, AReaL and ROLL (issue 58, must-show 3): each framework's own example files,
copied verbatim into tests/rlsim/fixtures/configs/<framework>_<tag>/ (the README there names the commit), imported
with the P, G and GPUs counted by hand from the file and the framework's defaults (the reasoning in each comment,
written from the file, not from rlsim's output), and emitted back: the emitted file, imported again, gives the same
scenario fields, and carries the framework's documented defaults for the keys the scenario does not set.

Needs of the shell reader: slime's arrays and its `source scripts/models/X.sh` are read today (the adapter inlines a
sourced file that lies where the script says); SkyRL's `: "${NUM_GPUS:=4}"` needs the null command's assignment
(rlsim.frameworks.launch reads it; the bash parser of branch shell58 does too).
"""

from pathlib import Path

import pytest
import yaml

from rlsim.frameworks import registry
from rlsim.frameworks.adapter import ImportConfigError
from rlsim.frameworks.config_import import import_config
from rlsim.frameworks.emit import emit, write_emitted
from rlsim.scenario import from_dict

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
SLIME = CONFIGS / "slime_v0.3.1"
SKYRL = CONFIGS / "skyrl_v0.4.0"
PRIME = CONFIGS / "prime_rl_v0.8.1.dev67"


def facts(scenario: dict) -> dict:
    """The fields must-show 3 names: P, G, every pool's GPUs, engine TP, response cap, model, schedule."""
    hw, wl, sched = scenario["hardware"], scenario["workload"], scenario["schedule"]
    model = scenario["model"] if isinstance(scenario["model"], str) else scenario["model"]["name"]
    return {
        "P": wl["prompts_per_step"],
        "G": wl["group_size"],
        "gpus": hw["num_gpus"],
        "placement": hw["placement"],
        "rollout_gpus": hw.get("rollout_gpus"),
        "train_gpus": hw.get("train_gpus"),
        "tp": scenario["engine"]["tensor_parallel_size"],
        "response_cap": wl["max_response_tokens"],
        "model": model,
        "schedule": sched["mode"],
        "staleness": from_dict(scenario).schedule.staleness,  # the learning model's k
    }


def test_the_new_adapters_are_registered_with_their_recognisers():
    for name in ("slime", "skyrl", "prime-rl", "areal", "roll"):
        adapter = registry.get(name)
        assert adapter.name == name and adapter.table and adapter.version_read
        assert adapter.recognisers.format == name and (adapter.recognisers.entry_points or adapter.recognisers.keys)
        assert adapter.docs_table().startswith("| framework key |")


# ---------------------------------------------------------------------------------------------------- slime


def test_slime_qwen3_4b_colocated():
    """scripts/run-qwen3-4B.sh: ROLLOUT_ARGS --rollout-batch-size 32 (P) --n-samples-per-prompt 8 (G)
    --global-batch-size 256 (samples: 32 x 8 / 256 = 1 optimizer step); --actor-num-nodes 1 --actor-num-gpus-per-node
    ${NUM_GPUS}: NUM_GPUS=${NUM_GPUS:-${DETECTED_GPUS}} where nvidia-smi is not run, then the `-z`/`-le 0` branch
    sets 8, so 1 x 8 = 8 GPUs; --colocate: the engines on those 8; --rollout-num-gpus-per-engine 2 (TP 2);
    --rollout-max-response-len 8192; train.py: synchronous; --hf-checkpoint /root/Qwen3-4B (the catalog's). The
    GPU count depends on what nvidia-smi finds, which is not run: refused naming NUM_GPUS unless --set gives it."""
    with pytest.raises(ImportConfigError, match=r"NUM_GPUS is 8 or .*--set NUM_GPUS=VALUE"):
        import_config(SLIME / "run-qwen3-4B.sh", "slime")
    got = import_config(SLIME / "run-qwen3-4B.sh", "slime", {"NUM_GPUS": 8}).scenario
    assert facts(got) == {
        "P": 32, "G": 8, "gpus": 8, "placement": "colocated", "rollout_gpus": None, "train_gpus": None, "tp": 2,
        "response_cap": 8192, "model": "Qwen3-4B", "schedule": "sync-colocated", "staleness": 0,
    }  # fmt: skip
    assert got["algorithm"]["mini_batches_per_step"] == 1 and got["algorithm"]["kl_reference"]  # --use-kl-loss
    assert got["engine"]["gpu_memory_utilization"] == 0.7  # --sglang-mem-fraction-static 0.7
    assert any("read from qwen3-4B.sh beside the script" in a for a in got["assumptions"])  # the sourced file


def test_slime_train_async_is_async_on_pools_apart():
    """examples/fully_async/run-qwen2.5-0.5B-fully_async.sh: train_async.py; --rollout-batch-size 8,
    --n-samples-per-prompt 4, --global-batch-size 32 (8 x 4 / 32 = 1 step); ACTOR_GPUS=${ACTOR_GPUS:-1} -> 1 x 1
    trainer GPU; NUM_GPUS=${NUM_GPUS:-4}, ROLLOUT_GPUS=$((NUM_GPUS - ACTOR_GPUS)) = 3 -> --rollout-num-gpus 3; no
    --colocate; 3 + 1 = 4 GPUs; TP 1; cap 1024; train_async.py runs one rollout ahead, weights every
    --update-weights-interval (default 1) -> staleness 1."""
    got = import_config(SLIME / "examples/fully_async/run-qwen2.5-0.5B-fully_async.sh", "slime").scenario
    assert facts(got) == {
        "P": 8, "G": 4, "gpus": 4, "placement": "separate", "rollout_gpus": 3, "train_gpus": 1, "tp": 1,
        "response_cap": 1024, "model": "Qwen2.5-0.5B", "schedule": "async", "staleness": 1,
    }  # fmt: skip


def test_slime_builds_a_model_outside_the_catalog_from_model_args():
    """With --hf-checkpoint naming no catalog model, the sourced MODEL_ARGS of qwen3-4B.sh describe it: 36 layers,
    hidden 2560, FFN 9728, 32 heads, 8 query groups, kv-channels 128, vocab 151936, --qk-layernorm (q/k norms), tied
    embeddings (no --untie-embeddings-and-output-weights). By hand: attention 2 x 2560 x 32 x 128 + 2 x 2560 x 8 x 128
    + 2 x 128 = 26,214,656; norms 2 x 2560 = 5,120; MLP 3 x 2560 x 9728 = 74,711,040; a layer 100,930,816, x 36 =
    3,633,509,376; embeddings 151936 x 2560 = 388,956,160; final norm 2,560: 4,022,468,096 (Qwen3-4B: 4.0B)."""
    got = import_config(SLIME / "run-qwen3-4B.sh", "slime", {"hf-checkpoint": "/root/my-qwen", "NUM_GPUS": 8}).scenario
    assert got["model"]["num_params"] == 4_022_468_096
    assert got["model"]["num_layers"] == 36 and got["model"]["num_kv_heads"] == 8


def test_slime_round_trip_carries_the_defaults(tmp_path):
    for path in (SLIME / "run-qwen3-4B.sh", SLIME / "examples/fully_async/run-qwen2.5-0.5B-fully_async.sh"):
        first = import_config(path, "slime", {"NUM_GPUS": 8} if "4B" in path.name else None).scenario
        emitted = emit("slime", from_dict(first))
        entry = "train_async.py" if first["schedule"]["mode"] == "async" else "train.py"
        launch = tmp_path / f"emitted_{path.stem}.sh"
        launch.write_text(f"python3 {entry} " + " ".join(emitted.overrides) + "\n")
        again = import_config(launch, "slime").scenario
        assert facts(again) == facts(first)
        # documented defaults (slime/utils/arguments.py) for the flags the scenario does not set
        assert "--sglang-server-concurrency 512" in emitted.overrides  # sglang_utils/arguments.py:44
        if entry == "train.py":
            assert "--update-weights-interval 1" in emitted.overrides  # arguments.py:526
    # against the original, its own scenario changes nothing
    assert emit("slime", from_dict(first), original=path).overrides == []


def test_slime_refusals_name_the_flag(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("python3 train.py --n-samples-per-prompt 8 --rollout-max-response-len 1024\n")
    with pytest.raises(ImportConfigError, match="--rollout-batch-size: not set"):
        import_config(script, "slime")
    script.write_text(
        "python3 train.py --rollout-batch-size 8 --rollout-max-response-len 1024 --hf-checkpoint Qwen/Qwen3-4B\n"
    )
    with pytest.raises(ImportConfigError, match="--rollout-num-gpus: not set and no --colocate"):
        import_config(script, "slime")
    script.write_text("python3 train.py --rollout-batch-size 8 --colocate --debug-train-only\n")
    with pytest.raises(ImportConfigError, match="--debug-train-only: a train-only debug run"):
        import_config(script, "slime")


# ---------------------------------------------------------------------------------------------------- SkyRL


def test_skyrl_gsm8k_colocated():
    """examples/gsm8k/run_gsm8k.sh: `: "${NUM_GPUS:=4}"` -> 4; trainer.train_batch_size=1024 (P, prompts),
    generator.n_samples_per_prompt=5 (G), policy_mini_batch_size=256 (1024 / 256 = 4 optimizer steps);
    colocate_all=true, policy 1 node (default) x 4 GPUs, num_inference_engines=4 x TP 1 = 4 (equal, as SkyRL
    asserts): 4 GPUs; max_generate_length=1024; main_base: synchronous; Qwen2.5-1.5B-Instruct -> Qwen2.5-1.5B."""
    got = import_config(SKYRL / "run_gsm8k.sh", "skyrl").scenario
    assert facts(got) == {
        "P": 1024, "G": 5, "gpus": 4, "placement": "colocated", "rollout_gpus": None, "train_gpus": None, "tp": 1,
        "response_cap": 1024, "model": "Qwen2.5-1.5B", "schedule": "sync-colocated", "staleness": 0,
    }  # fmt: skip
    assert got["algorithm"]["mini_batches_per_step"] == 4


def test_skyrl_async_and_fully_async():
    """async_run_gsm8k.sh: examples.async.main_async (one-step off-policy: staleness 1), colocate_all=false, policy
    4 GPUs, 4 engines x TP 1 = 4 rollout GPUs: 8; P 1024, G 5.
    fully_async_run_gsm8k.sh: examples.fully_async.main_fully_async; NUM_POLICY_GPUS=2 policy GPUs,
    NUM_INFERENCE_GPUS=2 engines x TP 1: 2 + 2 = 4; a step is policy_mini_batch_size = MINI_BATCH_SIZE = 256
    prompts (train_batch_size the same), G 5; max_staleness_steps=${MAX_STALENESS_STEPS} = 4."""
    got = import_config(SKYRL / "async_run_gsm8k.sh", "skyrl").scenario
    assert facts(got) == {
        "P": 1024, "G": 5, "gpus": 8, "placement": "separate", "rollout_gpus": 4, "train_gpus": 4, "tp": 1,
        "response_cap": 1024, "model": "Qwen2.5-1.5B", "schedule": "async", "staleness": 1,
    }  # fmt: skip
    got = import_config(SKYRL / "fully_async_run_gsm8k.sh", "skyrl").scenario
    assert facts(got) == {
        "P": 256, "G": 5, "gpus": 4, "placement": "separate", "rollout_gpus": 2, "train_gpus": 2, "tp": 1,
        "response_cap": 1024, "model": "Qwen2.5-1.5B", "schedule": "fully-async", "staleness": 4,
    }  # fmt: skip
    assert from_dict(got).schedule.staleness == 4  # ceil((1 + 4) x 1) - 1


def test_skyrl_round_trip_carries_the_defaults(tmp_path):
    entries = {"sync-colocated": "skyrl_train.entrypoints.main_base", "async": "examples.async.main_async"}
    entries["fully-async"] = "examples.fully_async.main_fully_async"
    for name in ("run_gsm8k.sh", "async_run_gsm8k.sh", "fully_async_run_gsm8k.sh"):
        first = import_config(SKYRL / name, "skyrl").scenario
        emitted = emit("skyrl", from_dict(first))
        launch = tmp_path / f"emitted_{name}"
        launch.write_text(f"uv run --isolated -m {entries[first['schedule']['mode']]} " + " ".join(emitted.overrides))
        assert facts(import_config(launch, "skyrl").scenario) == facts(first)
        # ppo_base_config.yaml's defaults for keys the scenario does not set
        assert "trainer.algorithm.use_kl_in_reward=false" in emitted.overrides  # :100
        assert "generator.inference_engine_pipeline_parallel_size=1" in emitted.overrides  # :267
    assert emit("skyrl", from_dict(first), original=SKYRL / name).overrides == []


def test_skyrl_refuses_unequal_colocated_pools(tmp_path):
    with pytest.raises(ImportConfigError, match="must equal generator.num_inference_engines"):
        import_config(SKYRL / "run_gsm8k.sh", "skyrl", {"generator.num_inference_engines": 2})


# ---------------------------------------------------------------------------------------------------- prime-rl


def test_prime_rl_readme_command_composes_the_toml():
    """README.md:166 `uv run rl @ configs/basic/reverse-text/rl.toml`: batch_size 128 samples, group_size 16, so
    P = 128 / 16 = 8, G 16; deployment 1 trainer + 1 inference GPU (apart): 2; vLLM TP 1 (default);
    max_completion_tokens 128, seq_len 2048 -> prompts up to 1920; async, one step ahead. Its model,
    PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT, is a fine-tune of the catalog's Qwen3-0.6B (said in a note); set."""
    assert facts(import_config(PRIME / "readme_rl_command.sh", "prime-rl").scenario)["model"] == "Qwen3-0.6B"
    got = import_config(PRIME / "readme_rl_command.sh", "prime-rl", {"model.name": "Qwen/Qwen2.5-0.5B"}).scenario
    assert facts(got) == {
        "P": 8, "G": 16, "gpus": 2, "placement": "separate", "rollout_gpus": 1, "train_gpus": 1, "tp": 1,
        "response_cap": 128, "model": "Qwen2.5-0.5B", "schedule": "async", "staleness": 1,
    }  # fmt: skip
    assert got["workload"]["max_prompt_tokens"] == 1920 and got["learning"]["lr0"] == 3e-6


def test_prime_rl_multi_node_and_overlays(tmp_path):
    """examples/advanced/qwen3-30b-a3b/math.toml: batch_size 512, group_size unset (1: orchestrator.py:517), so
    with --orchestrator.group-size 8 on the command line P = 512 / 8 = 64; multi_node, 2 train nodes and 2 inference
    nodes (x 1 replica) of 8 GPUs: 16 + 16 = 32; [inference.vllm] tensor_parallel_size 8; max_completion_tokens
    32768. (Its model, Qwen3-30B-A3B-Thinking-2507, has the architecture of the catalog's Qwen3-30B-A3B; H200: the
    memory check refuses its 32k-token activations on H100, which the file offloads with [trainer.model.ac_offloading],
    a mechanism rlsim's memory model lacks.)"""
    command = tmp_path / "launch.sh"
    math = PRIME / "examples/advanced/qwen3-30b-a3b/math.toml"
    command.write_text(f"uv run rl @ {math} --orchestrator.group-size 8 --model.name Qwen/Qwen3-30B-A3B\n")
    got = import_config(command, "prime-rl", scenario_set={"hardware.gpu": "H200"}).scenario
    assert facts(got) == {
        "P": 64, "G": 8, "gpus": 32, "placement": "separate", "rollout_gpus": 16, "train_gpus": 16, "tp": 8,
        "response_cap": 32768, "model": "Qwen3-30B-A3B", "schedule": "async", "staleness": 1,
    }  # fmt: skip
    with pytest.raises(ImportConfigError, match="write '@ x.toml'"):
        command.write_text("uv run rl @x.toml\n")
        import_config(command, "prime-rl")


def test_prime_rl_v0_8_0_spells_the_engine_tp_as_inference_parallel_tp(tmp_path):
    """prime-rl v0.8.0 sets each vLLM server's TP with [inference.parallel] tp (configs/inference.py:26-27); the
    release read spells it [inference.vllm] tensor_parallel_size. batch_size 64 samples / group_size 8: P 8, G 8;
    1 + 4 GPUs apart; TP 4 from either spelling, both at once refused."""
    base = "[model]\nname = 'Qwen/Qwen2.5-1.5B'\n[orchestrator]\nbatch_size = 64\ngroup_size = 8\n"
    base += "[deployment]\nnum_train_gpus = 1\nnum_infer_gpus = 4\n"
    old = tmp_path / "old.toml"
    old.write_text(base + "[inference.parallel]\ntp = 4\n")
    got = import_config(old, None)
    assert (facts(got.scenario)["P"], facts(got.scenario)["G"], facts(got.scenario)["tp"]) == (8, 8, 4)
    assert any("v0.8.0's spelling" in a for a in got.scenario["assumptions"])
    both = tmp_path / "both.toml"
    both.write_text(base + "[inference.parallel]\ntp = 4\n[inference.vllm]\ntensor_parallel_size = 4\n")
    with pytest.raises(ImportConfigError, match="two releases' spellings"):
        import_config(both, None)


def test_prime_rl_round_trip_writes_toml_with_the_defaults(tmp_path):
    sets = {"model.name": "Qwen/Qwen2.5-1.5B"}
    first = import_config(PRIME / "configs/basic/wordle/rl.toml", "prime-rl", sets).scenario
    files = write_emitted(emit("prime-rl", from_dict(first)), "prime-rl", tmp_path)
    toml = next(f for f in files if f.suffix == ".toml")
    again = import_config(toml, "prime-rl").scenario
    assert facts(again) == facts(first)
    text = toml.read_text()
    assert "max_off_policy_steps = 8" in text and "freq = 1" in text  # orchestrator.py:532, trainer.py:35


# ---------------------------------------------------------------------------------------------------- AReaL

AREAL = CONFIGS / "areal_v1.0.4"


def test_areal_gsm8k_grpo_yaml_and_its_launch_line():
    """examples/math/gsm8k_grpo.yaml: train_dataset.batch_size 256 (P), gconfig.n_samples 4 (G), max_new_tokens
    1024; rollout.backend sglang:d4p1t1 (4 servers of TP 1: 4 GPUs), actor.backend fsdp:d4p1t1 (4): 8 GPUs, apart;
    max_head_offpolicyness 2 -> async, staleness 2; actor.path Qwen2.5-1.5B-Instruct; kl_ctl 0.0: no reference
    pass although a ref section is given (rl_trainer.py:179). The quickstart's launch line (--config that YAML)
    gives the same; its Ray example's overrides rollout.backend=sglang:d12p1t1 actor.backend=fsdp:d4p1t1 give
    12 + 4 = 16."""
    want = {
        "P": 256, "G": 4, "gpus": 8, "placement": "separate", "rollout_gpus": 4, "train_gpus": 4, "tp": 1,
        "response_cap": 1024, "model": "Qwen2.5-1.5B", "schedule": "async", "staleness": 2,
    }  # fmt: skip
    got = import_config(AREAL / "examples/math/gsm8k_grpo.yaml", "areal").scenario
    assert facts(got) == want and not got["algorithm"]["kl_reference"]
    assert got["learning"]["staleness_loss"] == "decoupled_ppo"  # use_decoupled_loss: true
    assert facts(import_config(AREAL / "quickstart_launcher_local.sh", "areal").scenario) == want
    ray = {"rollout.backend": "sglang:d12p1t1", "actor.backend": "fsdp:d4p1t1", "cluster.n_gpus_per_node": 4}
    got = import_config(AREAL / "quickstart_launcher_local.sh", "areal", ray).scenario
    assert (facts(got)["gpus"], facts(got)["rollout_gpus"], facts(got)["train_gpus"]) == (16, 12, 4)


def test_areal_reads_the_deprecated_allocation_mode():
    """allocation_mode sglang:d4p1t2+d8p1t1: generation 4 x 1 x 2 = 8 GPUs of TP 2, training 8 x 1 x 1 = 8: 16."""
    sets = {"allocation_mode": "sglang:d4p1t2+d8p1t1", "rollout.backend": None, "actor.backend": None}
    got = facts(import_config(AREAL / "examples/math/gsm8k_grpo.yaml", "areal", sets).scenario)
    assert (got["gpus"], got["rollout_gpus"], got["train_gpus"], got["tp"]) == (16, 8, 8, 2)
    with pytest.raises(ImportConfigError, match="rollout.backend: 'sglang:x4' is not an allocation string"):
        import_config(AREAL / "examples/math/gsm8k_grpo.yaml", "areal", {"rollout.backend": "sglang:x4"})


def test_areal_round_trip_carries_the_defaults(tmp_path):
    first = import_config(AREAL / "examples/math/gsm8k_grpo.yaml", "areal").scenario
    files = write_emitted(emit("areal", from_dict(first)), "areal", tmp_path)
    patch = next(f for f in files if f.name == "areal_patch.yaml")
    assert facts(import_config(patch, "areal").scenario) == facts(first)
    data = yaml.safe_load(patch.read_text())
    assert data["vllm"]["max_num_seqs"] == 256 and data["cluster"]["n_nodes"] == 32  # cli_args.py:1637, :2541
    assert emit("areal", from_dict(first), original=AREAL / "examples/math/gsm8k_grpo.yaml").overrides == [
        "sglang.max_running_requests=4096"  # unset in the file: SGLang's derived pool, as rlsim assumed it
    ]


# ---------------------------------------------------------------------------------------------------- ROLL

ROLL = CONFIGS / "roll_v0.3.0"
NO_JUDGE = {"rewards.llm_judge.device_mapping": None}


def test_roll_device_mappings_parsed_never_evaluated():
    from rlsim.frameworks.roll.mapping import devices

    assert devices("list(range(0,16))", "k") == list(range(16))
    assert devices("list(range(16, 24))", "k") == [16, 17, 18, 19, 20, 21, 22, 23]
    assert devices("list(range(0,8,2))", "k") == [0, 2, 4, 6]
    assert devices("list([0,1,2,3,8,9,10,11])", "k") == [0, 1, 2, 3, 8, 9, 10, 11]
    assert devices("list(range(0,2)) + [4, 5]", "k") == [0, 1, 4, 5]
    with pytest.raises(ImportConfigError, match="not a device list rlsim reads without running it"):
        devices("__import__('os').system('true')", "actor_train.device_mapping")


def test_roll_8gpus_colocated_with_engines_on_part_of_the_pool():
    """rlvr_config_8gpus.yaml: rollout_batch_size 64 (P), num_return_sequences_in_group 8 (G), response_length
    4096; actor_train list(range(0,8)) = 8 GPUs, actor_infer list(range(0,6)) = 6 within them: colocated, 6 vLLM
    engines of TP 1; 64 x 8 = 512 samples over per_device 1 x accumulation 64 x 8 ranks = 512: one optimizer step;
    async_generation_ratio unset (0): synchronous; init_kl_coef 0.2 by default: the reference pass. Its LLM judge
    on GPUs 6-7 (within actor_train's 8) is the reward model on the training pool (its model a Qwen2.5-7B
    fine-tune); set null, the rule rewards alone."""
    judged = import_config(ROLL / "rlvr_config_8gpus.yaml", "roll").scenario
    assert (
        judged["reward"] == {"model": "Qwen2.5-7B", "tensor_parallel_size": 1} and judged["hardware"]["num_gpus"] == 8
    )
    got = import_config(ROLL / "rlvr_config_8gpus.yaml", "roll", NO_JUDGE).scenario
    assert facts(got) == {
        "P": 64, "G": 8, "gpus": 8, "placement": "colocated", "rollout_gpus": None, "train_gpus": None, "tp": 1,
        "response_cap": 4096, "model": "Qwen2.5-7B", "schedule": "sync-colocated", "staleness": 0,
    }  # fmt: skip
    assert got["engine"]["replicas"] == 6 and got["algorithm"]["mini_batches_per_step"] == 1
    assert got["algorithm"]["kl_reference"]


def test_roll_async_and_separate_pools():
    """rlvr_config_async.yaml: actor_train list(range(0,16)) = 16, actor_infer list(range(16,24)) = 8 (disjoint):
    24 GPUs apart; SGLang; async_generation_ratio 1 -> staleness 1; response_length 8192; P 64, G 8.
    rlvr_qwen2.5_7B_seperate.yaml: actor_train list([0,1,2,3,8,9,10,11]) = 8, actor_infer list([4,5,12,13]) = 4:
    12 apart; 64 x 8 = 512 samples over 1 x 32 x 8 ranks = 256: two optimizer steps; synchronous."""
    got = import_config(ROLL / "rlvr_config_async.yaml", "roll", NO_JUDGE).scenario
    assert facts(got) == {
        "P": 64, "G": 8, "gpus": 24, "placement": "separate", "rollout_gpus": 8, "train_gpus": 16, "tp": 1,
        "response_cap": 8192, "model": "Qwen2.5-7B", "schedule": "async", "staleness": 1,
    }  # fmt: skip
    got = import_config(ROLL / "rlvr_qwen2.5_7B_seperate.yaml", "roll", NO_JUDGE).scenario
    assert facts(got) == {
        "P": 64, "G": 8, "gpus": 12, "placement": "separate", "rollout_gpus": 4, "train_gpus": 8, "tp": 1,
        "response_cap": 4096, "model": "Qwen2.5-7B", "schedule": "sync-separate", "staleness": 0,
    }  # fmt: skip
    assert got["algorithm"]["mini_batches_per_step"] == 2


def test_roll_round_trip_carries_the_defaults(tmp_path):
    for name in ("rlvr_config_8gpus.yaml", "rlvr_config_async.yaml", "rlvr_qwen2.5_7B_seperate.yaml"):
        first = import_config(ROLL / name, "roll", NO_JUDGE).scenario
        files = write_emitted(emit("roll", from_dict(first)), "roll", tmp_path / name)
        patch = next(f for f in files if f.name == "roll_patch.yaml")
        again = import_config(patch, "roll").scenario
        assert facts(again) == facts(first)
        assert again["algorithm"]["mini_batches_per_step"] == first["algorithm"]["mini_batches_per_step"]
        data = yaml.safe_load(patch.read_text())
        assert data["num_gpus_per_node"] == 8 and data["enable_reference"] is False  # base_config.py:244, :575
        original = emit(
            "roll", from_dict(first), original=ROLL / name, framework_set=["rewards.llm_judge.device_mapping=null"]
        )
        assert original.overrides == []
