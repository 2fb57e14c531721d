"""Launch scripts read as text (rlsim.frameworks.launch): the framework's command out of real verl scripts, shell
assignments and expansion, and nothing in a script ever run."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlsim.cli import main
from rlsim.frameworks.adapter import ImportConfigError
from rlsim.frameworks.launch import framework_command

SCRIPTS = Path(__file__).parent / "fixtures" / "configs" / "verl_scripts"
ENTRY = ("verl.trainer.main_ppo",)


def test_assignments_arrays_defaults_and_arithmetic_expand():
    text = """#!/usr/bin/env bash
set -xeuo pipefail
NNODES=${NNODES:-2}
max_prompt_length=$((1024 * 4))
resp=$(( (max_prompt_length + 1024) / 2 ))
export NAME="Qwen/Qwen3-8B"
EXTRA=(
    trainer.val_before_train=False
    'trainer.logger=["console"]'
)
gen_tp=4
python3 -m verl.trainer.main_ppo \\
    trainer.nnodes=$NNODES data.max_prompt_length=${max_prompt_length} \\
    data.max_response_length=$resp \\
    actor_rollout_ref.model.path="${NAME}" rollout.tp=$gen_tp "${EXTRA[@]}" trainer.x=${UNSET_VAR} $@ 2>&1 | tee log.txt
"""
    words, notes = framework_command(text, "run.sh", ENTRY)
    assert words == [
        "trainer.nnodes=2",
        "data.max_prompt_length=4096",
        "data.max_response_length=2560",
        "actor_rollout_ref.model.path=Qwen/Qwen3-8B",
        "rollout.tp=4",
        "trainer.val_before_train=False",
        'trainer.logger=["console"]',
        "trainer.x=${UNSET_VAR}",
    ]
    assert any("UNSET_VAR" in n for n in notes) and any("arguments" in n for n in notes)


@pytest.mark.parametrize(
    "line",
    [
        "bash -c 'python3 -m verl.trainer.main_ppo data.train_batch_size=8'",
        "ray job submit --address=http://x:8265 --runtime-env-json='{}' -- "
        "python3 -m verl.trainer.main_ppo data.train_batch_size=8",
    ],
)
def test_bash_c_and_ray_job_submit_are_unwrapped(line):
    assert framework_command(line, "run.sh", ENTRY)[0] == ["data.train_batch_size=8"]


def test_nothing_in_a_script_is_ever_run(tmp_path):
    """Commands that would write files, substitutions that would run programs, a sourced file: none runs. A
    substitution the framework's command needs is refused in one line; elsewhere it is skipped."""
    marker = tmp_path / "ran"
    script = tmp_path / "run.sh"
    script.write_text(
        f"touch {marker}\n"
        f"echo hi > {marker}.2\n"
        f"source {tmp_path}/env.sh\n"
        f"PORT=$(touch {marker}.3; echo 1)\n"
        f"NOW=`touch {marker}.4`\n"
        "python3 -m verl.trainer.main_ppo data.train_batch_size=8 actor_rollout_ref.rollout.n=4 \\\n"
        "    actor_rollout_ref.model.path=Qwen/Qwen3-8B trainer.n_gpus_per_node=8\n"
    )
    words, _ = framework_command(script.read_text(), "run.sh", ENTRY)
    assert words[0] == "data.train_batch_size=8"
    with pytest.raises(ImportConfigError, match=r"command substitution \(\$\(\.\.\.\)\) is not run"):
        framework_command(f"python3 -m verl.trainer.main_ppo trainer.x=$(touch {marker}.5)", "run.sh", ENTRY)
    words, notes = framework_command("P=$(date)\npython3 -m verl.trainer.main_ppo trainer.p=$P", "run.sh", ENTRY)
    assert words == ["trainer.p=$P"] and any("$P is set by a command substitution" in n for n in notes)
    assert not list(tmp_path.glob("ran*"))


def test_a_script_without_the_entry_point_is_refused(tmp_path, capsys):
    with pytest.raises(ImportConfigError, match="runs no verl.trainer.main_ppo"):
        framework_command("echo hello\n", "run.sh", ENTRY)
    code = main(["import-config", "--format", "verl", str(tmp_path / "run_qwen.sh"), "-o", str(tmp_path / "s.yaml")])
    assert code == 2 and "run_qwen.sh: is not a file" in capsys.readouterr().err


def test_verls_own_example_script_imports_unedited(tmp_path, capsys):
    """examples/grpo_trainer/run_qwen3-8b.sh at volcengine/verl b178a3c, as published: P 1024, G 5, 8 GPUs,
    vLLM TP 2, responses capped at 1024, Qwen3-8B; and the Megatron one imports with the Megatron actor."""
    import rlsim

    out = tmp_path / "s.yaml"
    assert (
        main(["import-config", "--format", "verl", str(SCRIPTS / "grpo_trainer__run_qwen3-8b.sh"), "-o", str(out)]) == 0
    )
    scn = rlsim.load_scenario(out)
    assert (scn.workload.prompts_per_step, scn.workload.group_size) == (1024, 5)
    assert scn.hardware.num_gpus == 8 and scn.engine.tensor_parallel_size == 2
    assert scn.workload.max_response_tokens == 1024 and scn.model.name == "Qwen3-8B"
    capsys.readouterr()
    code = main(
        [
            "import-config",
            "--format",
            "verl",
            str(SCRIPTS / "grpo_trainer__run_qwen2-7b_math_megatron.sh"),
            "-o",
            str(tmp_path / "m.yaml"),
        ]
    )
    assert code == 0  # --config-name ppo_megatron_trainer: the Megatron actor's layout (test_import_config.py)
    assert rlsim.load_scenario(tmp_path / "m.yaml").training.backend == "megatron"


def test_openrlhfs_slurm_script_is_read_through_srun_bash_c_and_ray_job_submit(tmp_path):
    """examples/scripts/train_ppo_ray_slurm.sh at OpenRLHF 3c3be623: the command sits in srun ... bash -c "pip
    install ... && ray job submit ... -- python3 -m openrlhf.cli.train_ppo_ray ..."; its node names come from
    $(scontrol ...), which is not run. Every role's GPUs: actor 4, ref 4 (with the actor), critic 4, reward 4
    (with the critic), vLLM 4 engines x TP 2."""
    import rlsim

    out = tmp_path / "s.yaml"
    script = Path(__file__).parent / "fixtures" / "configs" / "openrlhf_scripts" / "train_ppo_ray_slurm.sh"
    sets = ["--set", "actor.model_name_or_path=Llama-3.1-8B", "--set", "reward.model_name_or_path=Llama-3.1-8B"]
    assert main(["import-config", "--format", "openrlhf", str(script), "-o", str(out), *sets]) == 0
    scn = rlsim.load_scenario(out)
    assert scn.workload.prompts_per_step == 1024 and scn.engine.tensor_parallel_size == 2
    assert scn.num_replicas == 4 and scn.algorithm.name == "ppo"
