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
    --rollout-max-response-len 8192; train.py: synchronous; --hf-checkpoint /root/Qwen3-4B (the catalog's)."""
    got = import_config(SLIME / "run-qwen3-4B.sh", "slime").scenario
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
    got = import_config(SLIME / "run-qwen3-4B.sh", "slime", {"hf-checkpoint": "/root/my-qwen"}).scenario
    assert got["model"]["num_params"] == 4_022_468_096
    assert got["model"]["num_layers"] == 36 and got["model"]["num_kv_heads"] == 8


def test_slime_round_trip_carries_the_defaults(tmp_path):
    for path in (SLIME / "run-qwen3-4B.sh", SLIME / "examples/fully_async/run-qwen2.5-0.5B-fully_async.sh"):
        first = import_config(path, "slime").scenario
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
    script.write_text("python3 train.py --rollout-batch-size 8 --rollout-max-response-len 1024 --hf-checkpoint Qwen/Qwen3-4B\n")
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
    PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT, is outside the catalog: refused naming model.name, then set."""
    with pytest.raises(ImportConfigError, match="^model.name: 'PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT'"):
        import_config(PRIME / "readme_rl_command.sh", "prime-rl")
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


def test_prime_rl_round_trip_writes_toml_with_the_defaults(tmp_path):
    sets = {"model.name": "Qwen/Qwen2.5-1.5B"}
    first = import_config(PRIME / "configs/basic/wordle/rl.toml", "prime-rl", sets).scenario
    files = write_emitted(emit("prime-rl", from_dict(first)), "prime-rl", tmp_path)
    toml = next(f for f in files if f.suffix == ".toml")
    again = import_config(toml, "prime-rl").scenario
    assert facts(again) == facts(first)
    text = toml.read_text()
    assert "max_off_policy_steps = 8" in text and "freq = 1" in text  # orchestrator.py:532, trainer.py:35
