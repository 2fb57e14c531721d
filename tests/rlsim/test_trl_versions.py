"""TRL's defaults by release (rlsim/frameworks/trl/trl_defaults.yaml, from TRL's tags) and its accelerate launch."""

from __future__ import annotations

from pathlib import Path

import pytest

import rlsim
from rlsim.frameworks import registry
from rlsim.frameworks.adapter import ImportConfigError
from rlsim.frameworks.common import version_tuple
from rlsim.frameworks.config_import import import_config
from rlsim.frameworks.trl import releases
from rlsim.scenario import with_overrides
from tests.conftest import load_script

ROOT = Path(__file__).parents[2]
CONFIGS = Path(__file__).parent / "fixtures" / "configs"
OPEN_R1 = CONFIGS / "open_r1_1416fa0"
GRPO = {"model_name_or_path": "Qwen/Qwen2.5-1.5B-Instruct", "use_vllm": True, "num_generations": 8}


def _write(tmp_path: Path, data: dict, name: str = "grpo.yaml") -> Path:
    import yaml

    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _scenario(path: Path, **sets):
    imported = import_config(path, "trl", {"num_processes": 8, **sets})
    return rlsim.from_dict(imported.scenario), imported.scenario["assumptions"]


def test_a_release_brings_its_own_defaults(tmp_path):
    path = _write(tmp_path, GRPO)
    new, notes = _scenario(path)  # the newest release: colocate, beta 0, IS correction -> old log-prob pass
    assert new.hardware.placement == "colocated" and not new.algorithm.kl_reference
    assert new.algorithm.recompute_old_logprob and new.workload.max_response_tokens == 256
    assert any(n.startswith("trl_version: not given, so TRL 1.9.0's defaults") for n in notes)
    old, notes = _scenario(path, trl_version="0.18.0")  # server mode by default, beta 0.04, no IS correction
    assert old.hardware.placement == "separate" and old.hardware.num_gpus == 9
    assert old.algorithm.kl_reference and not old.algorithm.recompute_old_logprob
    assert any(n.startswith("trl_version 0.18.0: TRL 0.18.0's defaults") for n in notes)
    patch, _ = _scenario(path, trl_version="0.18.2")  # the newest release at or below
    assert patch.algorithm.kl_reference and patch.hardware.placement == "separate"
    mid, _ = _scenario(path, trl_version="0.19.1")  # beta's default fell to 0 in 0.19
    assert not mid.algorithm.kl_reference


def test_before_0_17_a_step_is_one_micro_steps_generation_round(tmp_path):
    path = _write(tmp_path, {**GRPO, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 8})
    s, notes = _scenario(path, trl_version="0.16.0")
    assert s.workload.responses_per_step == 4 * 8 and s.algorithm.mini_batches_per_step == 1
    assert s.learning.reference_batch == 4 * 8 * 8  # the optimizer step accumulates 8 rounds
    assert any("generates each micro-step's completions apart" in n for n in notes)
    s, _ = _scenario(path, trl_version="0.17.0")  # once per optimizer step, over the accumulated batch
    assert s.workload.responses_per_step == 4 * 8 * 8 and s.algorithm.mini_batches_per_step == 1


def test_a_key_the_release_lacks_is_refused_in_one_line(tmp_path):
    path = _write(tmp_path, {**GRPO, "vllm_mode": "colocate"})
    with pytest.raises(ImportConfigError, match=r"vllm_mode: TRL 0.17.0 has no such option \(it is in 0.18.0-"):
        _scenario(path, trl_version="0.17.0")
    with pytest.raises(ImportConfigError, match="has no GRPOTrainer"):
        _scenario(path, trl_version="0.12.0")
    for bad in ("latest", "0.18.o", "18"):
        with pytest.raises(ImportConfigError, match="is not a version"):
            _scenario(path, trl_version=bad)
    assert releases.release_for("0.19.0rc1")[0] == "0.19.0" and releases.release_for("v0.18")[0] == "0.18.0"
    with pytest.raises(
        ImportConfigError,
        match="--set trl_versoin: not a key of the file or of rlsim.s trl mapping; did you mean trl_version",
    ):
        _scenario(path, trl_versoin="0.18.0")  # a launch key TRL's parser would not catch


def test_the_accelerate_launch_is_read_and_never_run(tmp_path, monkeypatch):
    """open-r1's README command: the YAML --config names, --vllm_mode colocate over it, 8 processes from the
    accelerate config; a command substitution on another line stays unrun."""
    monkeypatch.chdir(tmp_path)  # paths resolve from the script's folder up, as from the repository's root
    script = tmp_path / "launch.sh"
    text = (OPEN_R1 / "readme_commands" / "grpo_distill_qwen_1.5b.sh").read_text()
    script.write_text(f"touch {tmp_path}/ran\nOUT=$(touch {tmp_path}/ran2)\n" + text)
    (tmp_path / "recipes").symlink_to(OPEN_R1 / "recipes")
    imported = import_config(script, "trl", {"trl_version": "0.18.0"})
    s = rlsim.from_dict(imported.scenario)
    assert (s.hardware.num_gpus, s.hardware.placement, s.workload.prompts_per_step) == (8, "colocated", 32)
    assert not (tmp_path / "ran").exists() and not (tmp_path / "ran2").exists()
    assert "read from the accelerate launch of src/open_r1/grpo.py in launch.sh" in imported.scenario["assumptions"]


def test_a_missing_file_on_the_launch_line_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "launch.sh"
    script.write_text("accelerate launch --num_processes=4 train.py --config recipes/nowhere.yaml\n")
    with pytest.raises(ImportConfigError, match=r"recipes/nowhere.yaml is not a file \(looked from the working"):
        import_config(script, "trl")


def test_the_docs_table_of_releases_is_generated_from_the_file():
    assert releases.release_changes_table() in (ROOT / "docs" / "import-config.md").read_text()


def test_the_generator_reads_field_defaults_and_a_base_class():
    module = load_script("trl_defaults")
    source = (
        "class _BaseConfig:\n    gradient_checkpointing: bool = field(default=True)\n"
        "class GRPOConfig(_BaseConfig):\n    beta: float = field(default=0.04, metadata={})\n"
        "    num_generations: int = 8\n    vllm_mode: str = field(metadata={})\n"
    )
    got = module.class_defaults(source, ("_BaseConfig", "GRPOConfig"))
    assert got == {"gradient_checkpointing": True, "beta": 0.04, "num_generations": 8}


def test_an_accelerate_config_gives_the_processes_and_names_its_sharding(tmp_path):
    acc = tmp_path / "ddp.yaml"
    acc.write_text("distributed_type: MULTI_GPU\nnum_processes: 4\nnum_machines: 1\n")
    path = _write(tmp_path, GRPO)
    imported = import_config(path, "trl", {"accelerate_config": str(acc), "trl_version": "1.9.0"})
    s = rlsim.from_dict(imported.scenario)
    notes = imported.scenario["assumptions"]
    assert s.hardware.num_gpus == 4 and "num_processes: 4 (the accelerate config's)" in notes
    assert any(n.startswith("training: MULTI_GPU keeps whole parameters") for n in notes)
    zero3 = OPEN_R1 / "recipes" / "accelerate_configs" / "zero3.yaml"
    notes = import_config(path, "trl", {"accelerate_config": str(zero3)}).scenario["assumptions"]
    assert "accelerate config zero3.yaml: distributed_type DEEPSPEED, ZeRO stage 3" in notes
    assert not any(n.startswith("training: ") and "keeps whole" in n for n in notes)


def test_the_table_states_the_newest_releases_defaults():
    """docs/import-config.md's TRL table shows TABLE's defaults: those of the newest release read (a key it lacks:
    none)."""
    newest = releases.releases()[max(releases.releases(), key=version_tuple)]
    versioned = {k for row in releases.releases().values() for k in row} - {"commit"}
    for row in registry.get("trl").table:
        if row.key in versioned:
            assert row.default == newest.get(row.key), row.key


def test_emit_reads_an_absent_key_with_the_originals_release(tmp_path, monkeypatch):
    """open-r1's code recipe under TRL 0.18 runs vLLM as a server (0.18's default vllm_mode): a colocated plan
    must write vllm_mode: colocate, which under 1.9.0's default it would not need."""
    from rlsim.frameworks.emit import emit

    monkeypatch.chdir(CONFIGS)
    path = OPEN_R1 / "readme_commands" / "grpo_code.sh"
    plan = {"hardware.placement": "colocated", "schedule.mode": "sync-colocated", "hardware.num_gpus": 7}
    plan |= {"hardware.rollout_gpus": None, "hardware.train_gpus": None}
    for version, written in (("0.18.0", True), ("1.9.0", False)):
        sets = [f"trl_version={version}", "max_prompt_length=null"]  # 1.9.0 has no max_prompt_length
        base = rlsim.from_dict(import_config(path, "trl", {"trl_version": version, "max_prompt_length": None}).scenario)
        patch = emit("trl", with_overrides(base, plan), original=path, framework_set=sets).patch
        assert (patch.get("vllm_mode") == "colocate") is written, (version, patch)
