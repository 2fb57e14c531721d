"""TRL by release (issue 58): without ``trl_version`` the newest release whose GRPOConfig has every option the
config sets is read, with a note; every release from 0.14 on reads with its own defaults; launches by torchrun and
``trl grpo``. Releases named here were read from huggingface/trl's tags (trl/trainer/grpo_config.py):
``max_prompt_length`` is declared at v0.14.0..v0.27.2 and gone at v0.28.0, ``vllm_device`` at v0.14.0..v0.17.0,
``vllm_mode`` from v0.18.0, ``num_iterations`` from v0.16.0."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import rlsim
from rlsim.frameworks.adapter import ImportConfigError
from rlsim.frameworks.config_import import import_config
from rlsim.frameworks.trl import releases
from tests.conftest import load_script

BASE = {"model_name_or_path": "Qwen/Qwen2.5-1.5B-Instruct", "num_generations": 8, "per_device_train_batch_size": 8}
BASE["gradient_accumulation_steps"] = 1


def _import(tmp_path: Path, data: dict, fmt: str | None = "trl", **sets):
    path = tmp_path / "grpo.yaml"
    path.write_text(yaml.safe_dump(data))
    imported = import_config(path, fmt, {"num_processes": 8, **sets})
    return rlsim.from_dict(imported.scenario), imported.scenario["assumptions"]


def _release_note(notes: list[str]) -> str:
    return next(n for n in notes if n.startswith("trl_version: not given"))


def test_a_key_of_releases_before_0_28_reads_the_newest_of_them(tmp_path):
    s, notes = _import(tmp_path, {**BASE, "max_prompt_length": 1000}, fmt=None)
    note = _release_note(notes)
    assert "TRL 0.27.2's defaults" in note and "max_prompt_length" in note
    assert s.workload.max_prompt_tokens == 1000  # accepted at that release, read as its cap


def test_a_key_of_0_14_to_0_17_reads_0_17_with_its_defaults(tmp_path):
    s, notes = _import(tmp_path, {**BASE, "use_vllm": True, "vllm_device": "cuda:7"})
    assert "TRL 0.17.0's defaults" in _release_note(notes) and "vllm_device" in _release_note(notes)
    # 0.17.0: beta 0.04 (a reference model), no vllm_mode (vLLM on a GPU of its own: 8 train + 1)
    assert s.algorithm.kl_reference and s.hardware.num_gpus == 8 + 1
    # 0.17 generates once per optimizer step: 8 per device x 8 processes x 1 step / 8 per prompt = 8 prompts
    assert s.workload.prompts_per_step == 8 * 8 * 1 // 8


def test_keys_of_every_release_read_the_newest(tmp_path):
    s, notes = _import(tmp_path, {**BASE, "use_vllm": True, "vllm_mode": "colocate"})
    assert "TRL 1.9.0's defaults" in _release_note(notes)
    assert not s.algorithm.kl_reference and s.hardware.num_gpus == 8  # beta 0 since 0.19; colocated


def test_keys_no_single_release_has_are_refused_naming_both(tmp_path):
    with pytest.raises(ImportConfigError, match=r"vllm_device \(TRL 0.14.0-0.17.0\) and vllm_mode \(TRL 0.18.0-"):
        _import(tmp_path, {**BASE, "vllm_device": "auto", "vllm_mode": "server"})


@pytest.mark.parametrize("version", sorted(releases.releases(), key=lambda v: tuple(map(int, v.split(".")))))
def test_every_release_reads_with_its_defaults(tmp_path, version):
    s, notes = _import(tmp_path, {**BASE, "gradient_checkpointing": True}, trl_version=version)
    assert any(n.startswith(f"trl_version {version}: TRL {version}'s defaults") for n in notes)
    # before 0.17 a round is one micro-step's: 8 x 8 processes; from 0.17 one optimizer step's: 8 x 8 x 1; in 0.14
    # per_device_train_batch_size counts prompts (8 per device x 8 processes), from 0.15 completions (/ 8 per prompt)
    assert s.workload.prompts_per_step == (8 * 8 if version == "0.14.0" else 8 * 8 // 8)
    assert s.workload.max_response_tokens == releases.releases()[version]["max_completion_length"]


def test_a_0_14_config_with_num_iterations_null_reads_one_pass(tmp_path):
    data = {**BASE, "num_iterations": None, "max_prompt_length": 256}
    s, notes = _import(tmp_path, data, trl_version="0.14.0")
    assert (
        s.algorithm.epochs_per_step == 1
        and "TRL 0.14.0 has no num_iterations: each generation round is used once" in notes
    )
    s, _ = _import(tmp_path, data, trl_version="0.15.0", num_iterations=1)  # what 0.15 does: accepted
    assert s.algorithm.epochs_per_step == 1
    with pytest.raises(ImportConfigError, match=r"num_iterations: TRL 0.15.0 has no such option \(it is in 0.16.0-"):
        _import(tmp_path, data, trl_version="0.15.0", num_iterations=2)


def test_in_0_14_the_per_device_batch_counts_prompts(tmp_path):
    """open-r1 571661a's config_full (TRL main of 2025-02-06, 0.14 semantics): 1 prompt per device, 7 processes,
    16 accumulated micro-steps, 8 completions per prompt."""
    data = {**BASE, "per_device_train_batch_size": 1, "gradient_accumulation_steps": 16}
    path = tmp_path / "grpo.yaml"
    path.write_text(yaml.safe_dump(data))
    imported = import_config(path, "trl", {"num_processes": 7, "trl_version": "0.14.0"})
    s = rlsim.from_dict(imported.scenario)
    assert s.workload.prompts_per_step == 1 * 7  # one micro-step's round: 1 prompt x 7 processes
    assert s.training.micro_batch_size == 1 * 8  # completions per device per micro-step
    assert s.learning.reference_batch == 1 * 7 * 8 * 16  # completions per optimizer step
    assert (
        "TRL 0.14.0: per_device_train_batch_size counts prompts; 1 x 8 = 8 completions"
        in (imported.scenario["assumptions"])
    )


def test_torchrun_and_trl_grpo_launches_are_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump({**BASE, "use_vllm": True, "vllm_mode": "colocate"}))
    run = tmp_path / "run.sh"
    run.write_text("N=4\ntorchrun --standalone --nproc_per_node=$N --nnodes 2 -m grpo --config cfg.yaml\n")
    s = rlsim.from_dict(import_config(run, None).scenario)
    assert s.hardware.num_gpus == 4 * 2  # processes per node x nodes, colocated
    assert s.workload.prompts_per_step == 8 * (4 * 2) * 1 // 8
    run.write_text("trl grpo --config cfg.yaml --per_device_train_batch_size 16\n")
    s = rlsim.from_dict(import_config(run, None, {"num_processes": 2}).scenario)
    assert s.workload.prompts_per_step == 16 * 2 * 1 // 8
    run.write_text("trl vllm-serve --model m\n")
    with pytest.raises(ImportConfigError, match="runs trl vllm-serve, not trl grpo"):
        import_config(run, "trl")


def test_the_generator_records_runs_of_releases_per_option():
    module = load_script("trl_defaults")
    by_release = {"0.1.0": {"a"}, "0.2.0": {"a", "b"}, "0.3.0": {"b"}, "0.4.0": {"a"}}
    assert module.option_ranges(by_release) == {"a": ["0.1.0-0.2.0", "0.4.0-0.4.0"], "b": ["0.2.0-0.3.0"]}
    source = "class GRPOConfig(TrainingArguments):\n    beta: float = field(default=0.04)\n    vllm_mode: str\n"
    assert module.class_fields(source, ("GRPOConfig",)) == {"beta", "vllm_mode"}


MIRROR = Path("/work/.mirror/huggingface+trl/repo")


def _same_transformers() -> bool:
    """Whether the installed transformers is the one the committed table's TrainingArguments came from."""
    import importlib.metadata

    try:
        installed = importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        return False
    return f"transformers {installed} training_args.py" in releases.DEFAULTS_FILE.read_text()


@pytest.mark.skipif(not MIRROR.is_dir(), reason="needs a clone of huggingface/trl with its tags")
@pytest.mark.skipif(not _same_transformers(), reason="needs the transformers the table was generated with")
def test_the_committed_table_is_what_the_tags_give(tmp_path):
    out = tmp_path / "trl_defaults.yaml"
    assert load_script("trl_defaults").main([str(MIRROR), "-o", str(out)]) == 0
    assert yaml.safe_load(out.read_text()) == yaml.safe_load(releases.DEFAULTS_FILE.read_text())
