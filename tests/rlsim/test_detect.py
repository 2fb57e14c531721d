"""What a file is, from the file alone (issue 58, "the file says what it is"): each adapter's ``detect``, the
frameworks rlsim does not read and the trainers that are not RL refused in one line naming what was recognised,
with or without --format (rlsim.frameworks.detect, rlsim.frameworks.registry.choose)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import rlsim
from rlsim.cli import main
from rlsim.frameworks import registry
from rlsim.frameworks.adapter import EmitContext, FrameworkAdapter, ImportConfigError, Row, Source
from rlsim.frameworks.config_import import import_config
from rlsim.frameworks.detect import Found, Probe

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
CORPUS = yaml.safe_load((CONFIGS / "corpus.yaml").read_text())
READS = "rlsim reads verl, trl, openrlhf, nemo-rl"


def _file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", [n for n, e in CORPUS.items() if "refused" not in e and "format" in e])
def test_every_corpus_file_is_recognised_as_its_framework(name):
    fmt, note = registry.choose(CONFIGS / name, None)
    assert fmt == CORPUS[name]["format"] and note.startswith("read as ")


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("verl_grpo_qwen3_8b.yaml", "verl"),
        ("verl_ppo_qwen2.5_0.5b_quickstart.yaml", "verl"),
        ("openrlhf_ppo_llama3_8b_hybrid_engine_v0.9.5.yaml", "openrlhf"),
        ("openrlhf_ppo_llama3_8b_slurm.args", "openrlhf"),
        ("trl_grpo_qwen2.5_7b_vllm_server.json", "trl"),
        ("trl_gspo_qwen3_0.6b.yaml", "trl"),
        ("nemo_rl/grpo_math_1B.yaml", "nemo-rl"),
    ],
)
def test_each_fixture_config_is_recognised_by_its_keys(name, fmt):
    assert registry.choose(CONFIGS / name, None)[0] == fmt


def test_without_format_the_import_is_the_one_with_format(monkeypatch, tmp_path):
    monkeypatch.chdir(CONFIGS)
    name = "verl_scripts/grpo_trainer__run_qwen3-8b.sh"
    auto = import_config(Path(name), None)
    given = import_config(Path(name), "verl")
    assert auto.fmt == "verl" and auto.scenario["hardware"] == given.scenario["hardware"]
    assert "read as verl (--format verl): verl.trainer.main_ppo" in auto.scenario["assumptions"]
    out = tmp_path / "s.yaml"
    assert main(["import-config", name, "-o", str(out)]) == 0 and rlsim.load_scenario(out).workload.group_size == 5


NOT_READ = {
    "slime.sh": (
        "ray job submit --address=http://127.0.0.1:8265 -- python3 train.py --actor-num-nodes 1 \\\n"
        "   --rollout-batch-size 32 --n-samples-per-prompt 8\n",
        "a slime file (train.py with --rollout-batch-size)",
    ),
    "skyrl.sh": (
        "uv run --isolated --extra vllm -m skyrl_train.entrypoints.main_base trainer.train_batch_size=1024\n",
        "a SkyRL file (skyrl_train.entrypoints.main_base)",
    ),
    "prime.sh": ("uv run rl @ examples/reverse_text/rl.toml\n", "a prime-rl file (uv run rl)"),
    "prime.toml": ("[orchestrator]\nbatch_size = 128\n[trainer]\n", "a prime-rl file (orchestrator keys)"),
    "areal.sh": (
        "python3 -m areal.launcher.local examples/math/gsm8k_grpo.py --config gsm8k_grpo.yaml\n",
        "an AReaL file (areal.launcher.local)",
    ),
    "areal.yaml": (
        "allocation_mode: sglang:d4p1t1+d4p1t1\nactor:\n  path: Qwen/Qwen2.5-1.5B\ngconfig:\n  n_samples: 4\n",
        "an AReaL file (allocation_mode keys)",
    ),
    "roll.yaml": (
        "pretrain: Qwen/Qwen2.5-7B\nrollout_batch_size: 64\nactor_train:\n  device_mapping: list(range(0,16))\n",
        "a ROLL file (actor_train.device_mapping keys)",
    ),
}


# the adapter each of those files is read by now that rlsim reads those frameworks (their adapters' registration took
# them out of detect.NOT_READ, whose signs recognise them)
READ_BY = {
    "slime.sh": "slime",
    "skyrl.sh": "skyrl",
    "prime.sh": "prime-rl",
    "prime.toml": "prime-rl",
    "areal.sh": "areal",
    "areal.yaml": "areal",
    "roll.yaml": "roll",
}


@pytest.mark.parametrize("name", list(NOT_READ))
def test_each_newer_framework_is_recognised_and_named_under_another_format(tmp_path, name):
    text, what = NOT_READ[name]
    path = _file(tmp_path, name, text)
    fmt, note = registry.choose(path, None)
    assert fmt == READ_BY[name] and note.startswith("read as ")
    # under another --format it is named, never told to set that format's keys (issue 58: AReaL as verl, slime as
    # openrlhf told "'pkill' is not a --flag")
    for other in ("verl", "openrlhf", "trl", "nemo-rl"):
        with pytest.raises(ImportConfigError, match=rf"this is {_re(what)}, not {other}; use --format {fmt} "):
            import_config(path, other)


def _re(text: str) -> str:
    import re

    return re.escape(text)


NOT_RL = {
    "sft.sh": ("deepspeed --module openrlhf.cli.train_sft --pretrain x\n", "an OpenRLHF SFT training file"),
    "rm.sh": ("deepspeed --module openrlhf.cli.train_rm --pretrain x\n", "an OpenRLHF reward-model training file"),
    "dpo.sh": ("torchrun --nproc_per_node 8 -m openrlhf.cli.train_dpo --beta 0.1\n", "an OpenRLHF preference"),
    "verl_sft.sh": ("torchrun -m verl.trainer.fsdp_sft_trainer data.train_batch_size=256\n", "a verl SFT training"),
    "verl_sft_gsm8k.sh": (  # a data path naming grpo is not a GRPO script
        "torchrun --nproc_per_node=8 -m verl.trainer.fsdp_sft_trainer data.train_files=/d/gsm8k_grpo/train.parquet\n",
        "a verl SFT training",
    ),
    "serve_rm.sh": (
        "python -m openrlhf.cli.serve_rm --reward_pretrain x --port 5000\n",
        "an OpenRLHF reward-model serv",
    ),
    "ckpt.sh": ("python -m deepspeed.checkpoint.ds_to_universal --input_folder a\n", "a DeepSpeed checkpoint conver"),
    "verl_gen.sh": ("python3 -m verl.trainer.main_generation trainer.n_gpus_per_node=8\n", "a verl offline gener"),
    "trl_sft.sh": ("trl sft --config sft.yaml\n", "a TRL SFT training file (trl sft)"),
    "trl_dpo.yaml": ("model_name_or_path: Qwen/Qwen2.5-0.5B\nbeta: 0.1\nrpo_alpha: 0.5\n", "a TRL DPO training"),
    "nemo_sft.yaml": (
        "sft:\n  max_num_steps: 100\npolicy:\n  model_name: m\ncluster:\n  gpus_per_node: 8\n",
        "a NeMo RL SFT",
    ),
    "nemo_sft.sh": ("uv run examples/run_sft.py --config examples/configs/sft.yaml\n", "a NeMo RL SFT training"),
}


@pytest.mark.parametrize("name", list(NOT_RL))
def test_a_trainer_that_is_not_rl_is_refused_naming_what_was_recognised(tmp_path, name):
    text, what = NOT_RL[name]
    path = _file(tmp_path, name, text)
    with pytest.raises(ImportConfigError, match=rf"^{_re(name)}: this is {_re(what)}.*not an RL trainer's config"):
        import_config(path, None)


def test_an_sft_config_under_format_trl_is_refused_with_its_keys(tmp_path):
    path = _file(tmp_path, "sft.yaml", "model_name_or_path: Qwen/Qwen2.5-7B\npacking: true\nmax_length: 4096\n")
    with pytest.raises(ImportConfigError, match=r"a TRL SFT training file \(SFTConfig keys: max_length, packing\)"):
        import_config(path, "trl", {"num_processes": 8})


def test_another_supported_framework_under_format_is_named_with_its_format(tmp_path):
    path = _file(tmp_path, "run.sh", "python3 -m openrlhf.cli.train_ppo_ray --pretrain x --rollout_batch_size 8\n")
    with pytest.raises(ImportConfigError, match=r"an OpenRLHF file \(openrlhf.cli.train_ppo_ray\), not verl; use --f"):
        import_config(path, "verl")


def test_two_frameworks_in_one_file_are_refused_naming_both(tmp_path):
    path = _file(
        tmp_path,
        "both.sh",
        "python3 -m verl.trainer.main_ppo data.train_batch_size=8\n"
        "python3 -m openrlhf.cli.train_ppo_ray --pretrain x\n",
    )
    with pytest.raises(ImportConfigError, match=r"looks like verl .* and OpenRLHF .*; pass --format to say which"):
        import_config(path, None)
    assert registry.choose(path, "verl") == ("verl", None)  # with --format, the one named is read


def test_a_nemo_rl_launch_script_is_recognised_and_its_recipe_asked_for(tmp_path):
    path = _file(tmp_path, "run.sh", "uv run examples/run_grpo_math.py --config examples/configs/grpo_math_1B.yaml\n")
    assert registry.choose(path, None) == ("nemo-rl", "read as NeMo RL (--format nemo-rl): run_grpo_math.py")
    with pytest.raises(ImportConfigError, match="rlsim reads NeMo RL's recipe YAML, not its launch script"):
        import_config(path, None)


def test_a_recipe_with_a_broken_defaults_chain_is_read_as_nemo_rl_and_the_chain_named(tmp_path):
    path = _file(tmp_path, "r.yaml", "defaults: ../nowhere.yaml\npolicy:\n  model_name: m\n")
    with pytest.raises(ImportConfigError, match=r"r.yaml: defaults: .*nowhere.yaml is not a file"):
        import_config(path, None)


def test_a_script_it_sources_beside_it_counts(tmp_path):
    """OpenRLHF's train_nonrl_slurm.sh: ``source ./${training_script} slurm`` with the name assigned above."""
    _file(tmp_path, "train_dpo_llama.sh", 'training_commands="openrlhf.cli.train_dpo --beta 0.1"\n')
    path = _file(
        tmp_path, "slurm.sh", 'readonly training_script="train_dpo_llama.sh"\nsource ./${training_script} slurm\n'
    )
    with pytest.raises(ImportConfigError, match=r"an OpenRLHF preference \(DPO / KTO\) training file"):
        import_config(path, None)


def test_a_trl_key_given_twice_takes_its_last_value_as_trl_does(tmp_path):
    """open-r1 8000dd2's Qwen2.5-7B-Instruct config_demo.yaml gives do_eval twice: TRL's yaml.safe_load keeps the
    last value."""
    text = "model_name_or_path: Qwen/Qwen2.5-1.5B\nuse_vllm: true\nvllm_mode: colocate\nnum_generations: 4\n"
    path = _file(tmp_path, "grpo.yaml", text + "num_generations: 8\n")
    s = rlsim.from_dict(import_config(path, None, {"num_processes": 8}).scenario)
    assert s.workload.group_size == 8
    verl = _file(tmp_path, "verl.yaml", "actor_rollout_ref:\n  rollout:\n    n: 4\ndata:\n  x: 1\ndata:\n  y: 2\n")
    with pytest.raises(ImportConfigError, match=r"is not valid YAML \(duplicate key 'data', line 6\)"):
        import_config(verl, "verl")  # verl reads its YAML through OmegaConf, which refuses a repeated key


def test_a_nemo_rl_ppo_recipe_is_recognised_as_nemo_rl(tmp_path):
    path = _file(tmp_path, "ppo.yaml", "ppo:\n  num_prompts_per_step: 32\npolicy:\n  model_name: m\ncluster:\n  x: 1\n")
    assert registry.choose(path, None) == ("nemo-rl", "read as NeMo RL (--format nemo-rl): ppo, policy sections")


def test_nothing_recognised_asks_for_format(tmp_path):
    path = _file(tmp_path, "run.sh", "echo hello\npython train.py --lr 1e-6\n")
    with pytest.raises(ImportConfigError, match=r"^run.sh: no framework recognised .*; pass --format \(verl, trl"):
        import_config(path, None)
    with pytest.raises(ImportConfigError, match="is not a file"):
        import_config(tmp_path / "nowhere.yaml", None)


def test_a_typo_in_a_trl_key_under_auto_detection_names_the_option(tmp_path):
    """The other keys say TRL; the misspelt one is no release's option, and TRL's parser would refuse it."""
    path = _file(tmp_path, "grpo.yaml", "model_name_or_path: Qwen/Qwen2.5-1.5B\nuse_vllm: true\nnum_generatons: 8\n")
    with pytest.raises(
        ImportConfigError, match=r"^num_generatons: is not an option of any TRL release .*num_generations"
    ):
        import_config(path, None, {"num_processes": 8})
    code = main(["import-config", str(path), "-o", str(tmp_path / "s.yaml")])
    assert code == 2


class _Areal(FrameworkAdapter):
    name = "areal"
    table = (Row("allocation_mode", None, "hardware", "test"),)
    version_read = "test"

    def detect(self, probe: Probe) -> Found | None:
        return self.found("AReaL", "allocation_mode keys" if probe.has("allocation_mode") else None)

    def to_scenario(self, source: Source):
        raise ImportConfigError("read by the test adapter")

    def emit_keys(self, ctx: EmitContext):
        return {}


def test_an_adapter_registered_under_a_not_read_name_takes_its_files(tmp_path):
    path = _file(tmp_path, "areal.yaml", NOT_READ["areal.yaml"][0])
    real = registry.get("areal")
    registry.unregister("areal")  # as before rlsim read AReaL: the NOT_READ entry names it
    try:
        assert registry.recognise(path)[0].fmt is None
        with pytest.raises(ImportConfigError, match=r"this is an AReaL file \(allocation_mode keys\); rlsim reads"):
            import_config(path, None)
        registry.register(_Areal())
        assert [f.fmt for f in registry.recognise(path)] == ["areal"]  # the NOT_READ entry is gone
        assert registry.choose(path, None) == ("areal", "read as AReaL (--format areal): allocation_mode keys")
    finally:
        registry.unregister("areal")
        registry.register(real)


class _Slime(_Areal):
    name = "slime"
    detect = FrameworkAdapter.detect  # none of its own: NOT_READ's signs for slime stand in


def test_an_adapter_without_detect_is_found_by_the_signs_it_replaces(tmp_path):
    path = _file(tmp_path, "slime.sh", NOT_READ["slime.sh"][0])
    real = registry.get("slime")
    registry.register(_Slime())
    try:
        assert registry.choose(path, None) == (
            "slime",
            "read as slime (--format slime): train.py with --rollout-batch-size",
        )
    finally:
        registry.unregister("slime")
        registry.register(real)


def test_plan_emits_in_the_originals_own_framework_without_emit(tmp_path, capsys):
    config = CONFIGS / "verl_grpo_qwen3_8b.yaml"
    scn = tmp_path / "verl.yaml"
    assert main(["import-config", str(config), "-o", str(scn)]) == 0
    out = tmp_path / "plan"
    args = ["plan", str(scn), "--assume-learning", "paper", "--grid", "workload.prompts_per_step=1024"]
    assert main([*args, "--schedules", "colocated", "-o", str(out), "--original", str(config)]) == 0
    assert (out / "verl_overrides.sh").is_file() and "verl overrides for the winner" in capsys.readouterr().out
    sft = _file(tmp_path, "sft.sh", "deepspeed --module openrlhf.cli.train_sft --pretrain x\n")
    assert main([*args, "-o", str(out), "--original", str(sft)]) == 2
    assert "an OpenRLHF SFT training file" in capsys.readouterr().err


def test_a_nemo_rl_ppo_config_is_refused_not_read_as_grpo(tmp_path):
    """NeMo RL's PPO recipe (ppo: and value: sections) was read by the GRPO mapping with no critic: silently the
    wrong algorithm. It is refused naming the value model."""
    text = (
        "ppo:\n  num_prompts_per_step: 32\n  num_generations_per_prompt: 16\npolicy:\n  model_name: Qwen/Qwen2.5-1.5B\n"
        "value:\n  model_name: Qwen/Qwen2.5-1.5B\ncluster:\n  gpus_per_node: 1\n  num_nodes: 1\n"
    )
    path = _file(tmp_path, "ppo.yaml", text)
    with pytest.raises(ImportConfigError, match=r"NeMo RL PPO config \(a ppo: section, value model Qwen/Qwen2\.5"):
        import_config(path, "nemo-rl")
