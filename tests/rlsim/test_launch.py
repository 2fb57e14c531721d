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


# ---- bash evaluated, never run (rlsim.frameworks.shell): each construct with its words written out by hand -------

V = "python3 -m verl.trainer.main_ppo"


def _words(text: str, **sets: str) -> list[str]:
    from rlsim.frameworks.launch import shell_sets

    with shell_sets(sets):
        return framework_command(text, "run.sh", ENTRY)[0]


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        # every parameter expansion: X=abc.def.sh; # shortest prefix to the first '.', ## longest to the last
        (
            "X=abc.def.sh\n" + V + " a=${X#*.} b=${X##*.} c=${X%.*} d=${X%%.*}",
            ["a=def.sh", "b=sh", "c=abc.def", "d=abc"],
        ),
        ("X=a-b-c\n" + V + " a=${X/-/_} b=${X//-/_} c=${#X}", ["a=a_b-c", "b=a_b_c", "c=5"]),
        # X set but empty: ':-' gives the default, '-' keeps the empty; ':+' / '+' the alternative
        ("X=\n" + V + " a=${X:-8} b=${X-8}x c=${X:+1}y d=${X+1}", ["a=8", "b=x", "c=y", "d=1"]),
        ("unset Y\n" + V + " a=${Y:=4} b=$Y c=${Y=9}", ["a=4", "b=4", "c=4"]),
        # nested and quoted defaults (verl's NGPUS_PER_NODE and RAY_DATA_HOME forms)
        (V + " n=${NGPUS_PER_NODE:-${GPUS_PER_NODE:-8}}", ["n=8"]),
        ("GPUS_PER_NODE=4\n" + V + " n=${NGPUS_PER_NODE:-${GPUS_PER_NODE:-8}}", ["n=4"]),
        ('R=${RAY_DATA_HOME:-"/data/verl"}\n' + V + ' f="${R}/x.parquet"', ["f=/data/verl/x.parquet"]),
        # positional parameters: the script run with no arguments; set -- gives them
        ("NUM_GPUS=${1:-8}\n" + V + " n=$((NUM_GPUS)) m=$#", ["n=8", "m=0"]),
        ("set -- 2 4\nshift\n" + V + " n=$1 c=$#", ["n=4", "c=1"]),
        # arithmetic: precedence, C division (toward zero), ** , ternary, (( )) and let
        ("A=7\n" + V + " a=$((A / 2 * 3 + -7 / 2)) b=$((2 ** 3 ** 2)) c=$((A > 5 ? 1 : 0))", ["a=6", "b=512", "c=1"]),
        ("N=2\nK=0\n(( N *= 4 ))\nlet 'M = N + 1' K++\n" + V + " n=$N m=$M k=$K", ["n=8", "m=9", "k=1"]),
        # arrays: +=, "${A[@]}" one word per element, ${#A[@]}, ${A[1]}, "${A[*]}" one word
        (
            'A=(x "y z")\nA+=(w)\n' + V + ' "${A[@]}" n=${#A[@]} s=${A[1]} "j=${A[*]}"',
            ["x", "y z", "w", "n=3", "s=y", "z", "j=x y z w"],
        ),
        # case and if by value; [[ ]] patterns, [ ], test, elif, && / ||
        ('D=npu\ncase "$D" in\n npu|ascend) G=16 ;;\n *) G=8 ;;\nesac\n' + V + " n=$G", ["n=16"]),
        ('D=h100\ncase "$D" in\n npu) G=16 ;;\n h*) G=8 ;;\nesac\n' + V + " n=$G", ["n=8"]),
        (
            'M=7B\nif [[ $M == *B && -n "$M" ]]; then T=1\nelif [ "$M" = 70B ]; then T=8\nelse T=2\nfi\n' + V + " t=$T",
            ["t=1"],
        ),
        ('N=3\nQ=x\ntest "$N" -gt 4 && P=1 || P=2\nR=$P\n[ -z "$Q" ] || P=9\n' + V + " p=$P r=$R", ["p=9", "r=2"]),
        # functions with local and arguments; the caller's variable restored after local
        ("t=1\nf() {\n  local t=$1\n  G=$((t * 2))\n}\nf 4\n" + V + " g=$G t=$t", ["g=8", "t=1"]),
        # export / declare / readonly; words of one export expanded before any is assigned
        ("B=1\nexport B=2 C=$B\ndeclare -i D=5\nreadonly E=6\n" + V + " c=$C d=$D e=$E", ["c=1", "d=5", "e=6"]),
        # loops, heredoc fed to bash, bash -c, eval
        ("S=0\nfor i in 1 2 3; do S=$((S + i)); done\n" + V + " s=$S", ["s=6"]),
        ("export P=5\nbash <<EOF\n" + V + " p=\\$P q=$P\nEOF", ["p=5", "q=5"]),
        ('P=5\nbash -c "' + V + ' p=$P"', ["p=5"]),
        ("C='" + V + ' p=3\'\neval "$C"', ["p=3"]),
    ],
)
def test_bash_constructs_evaluate_to_the_words_bash_gives(script, expected):
    assert _words(script) == expected


@pytest.mark.parametrize(
    "prefix",
    [
        "srun --nodes=2 --ntasks=2",
        "torchrun --nproc_per_node=8",
        "deepspeed --num_gpus 8",
        "uv run --isolated",
        "nohup",
        "env A=B WANDB_MODE=offline",
        "ray job submit --address=http://127.0.0.1:8265 --",
        "A=B",
    ],
)
def test_launchers_before_the_entry_point_are_passed_over(prefix):
    assert _words(f"{prefix} {V} data.train_batch_size=8 > log.txt 2>&1 &") == ["data.train_batch_size=8"]


NPU_CASE = """#!/bin/bash
case "$DEVICE" in
  npu) NGPUS_PER_NODE=16 ;;
  *) NGPUS_PER_NODE=8 ;;
esac
RAY_DATA_HOME=${RAY_DATA_HOME:-"${HOME}/verl"}
python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=$NGPUS_PER_NODE data.train_files="$RAY_DATA_HOME/d"
"""


def test_a_branch_on_a_variable_the_script_does_not_set_is_refused_or_picked_by_set():
    """issue 58: verl's npu / cuda ``case`` applied every branch (16 GPUs instead of 8). Now: refused naming the
    variable and both values; ``--set DEVICE=...`` picks the branch; a branch that changes nothing the command
    uses is read on (the ``HOME`` default is left as written, no 'No closing quotation')."""
    refusal = r"NGPUS_PER_NODE is 16 or 8 depending on `case \"\$DEVICE\"`.*--set DEVICE="
    with pytest.raises(ImportConfigError, match=refusal):
        _words(NPU_CASE)
    assert _words(NPU_CASE, DEVICE="npu")[0] == "trainer.n_gpus_per_node=16"
    assert _words(NPU_CASE, DEVICE="cuda") == ["trainer.n_gpus_per_node=8", "data.train_files=${HOME}/verl/d"]
    both = 'if [ "$X" = y ]; then A=1; else A=1; fi\n' + V + " a=$A"
    assert _words(both) == ["a=1"]  # both branches give 1: nothing to refuse
    stops = '[ -z "$MODEL" ] && { echo set MODEL; exit 1; }\n' + V + " m=$MODEL"
    assert _words(stops, MODEL="Qwen/Qwen3-8B") == ["m=Qwen/Qwen3-8B"]


def test_set_of_a_shell_variable_reaches_the_script_through_import_config(tmp_path, capsys):
    """``rlsim import-config --set DEVICE=npu``: DEVICE is a shell variable of the script, so it is set before the
    script is read (not taken as a verl key); the other --set items stay verl keys."""
    import rlsim

    script = tmp_path / "run.sh"
    script.write_text(
        NPU_CASE.replace(
            "trainer.n_gpus_per_node=$NGPUS_PER_NODE",
            "trainer.n_gpus_per_node=$NGPUS_PER_NODE data.train_batch_size=64 actor_rollout_ref.rollout.n=4 "
            "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B actor_rollout_ref.actor.ppo_mini_batch_size=16 "
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
        )
    )
    out = tmp_path / "s.yaml"
    assert main(["import-config", "--format", "verl", str(script), "--set", "DEVICE=npu", "-o", str(out)]) == 0
    scn = rlsim.load_scenario(out)
    assert scn.hardware.num_gpus == 16 and scn.workload.prompts_per_step == 64
    assert not any("key not used" in a and "DEVICE" in a for a in scn.assumptions)
    assert main(["import-config", "--format", "verl", str(script), "-o", str(out)]) == 2
    assert "pick the branch with --set DEVICE=VALUE" in capsys.readouterr().err
    assert main(["import-config", "--format", "verl", str(script), "--set", "DEVIE=npu", "-o", str(out)]) == 2
    assert "--set DEVIE: not a variable of the script; did you mean DEVICE?" in capsys.readouterr().err


def test_set_takes_only_the_scripts_own_variables():
    """A ``--set`` name the script never assigns nor expands stays a framework key, even where a word of the
    script looks like an assignment of it (``rollout.n=5``, ``--num_generations=8``)."""
    from rlsim.frameworks.launch import shell_sets

    script = "G=4\n" + V + " actor_rollout_ref.rollout.n=5 --num_generations=8 g=$G"
    with shell_sets({"n": 7, "num_generations": 2, "G": 16}) as used:
        words, notes = framework_command(script, "run.sh", ENTRY)
    assert used == {"G"} and words[-1] == "g=4"  # G=4 in the script wins over --set G=16, said in a note
    assert any("--set G=16" in n and "the script then sets it itself (G=4)" in n for n in notes)


def test_source_reads_a_file_beside_the_script_and_notes_a_missing_one(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "qwen.sh").write_text("MODEL_ARGS=(--num-layers 28)\nNGPUS=4\n")
    script = 'source "models/qwen.sh"\n. ./absent.sh\n' + V + ' n=$NGPUS "${MODEL_ARGS[@]}"'
    words, notes = framework_command(script, "run.sh", ENTRY, tmp_path)
    assert words == ["n=4", "--num-layers", "28"]
    assert any("absent.sh: not found" in n for n in notes)
    # slime's form: the folder from a command substitution, the file found where the layout puts it
    script = 'SCRIPT_DIR="$(cd -- "$(dirname -- "$0")" && pwd)"\nsource "${SCRIPT_DIR}/models/qwen.sh"\n'
    script += V + " n=$NGPUS"
    words, notes = framework_command(script, "run.sh", ENTRY, tmp_path)
    assert words == ["n=4"] and any("read as models/qwen.sh" in n for n in notes)


def test_what_rlsim_cannot_know_is_named():
    """A command substitution on the command line is refused; a variable the script never sets stays as written
    with a note; a parse error on the command's own line is refused in one line."""
    with pytest.raises(ImportConfigError, match=r"command substitution \(`\.\.\.`\) is not run"):
        _words(V + " n=`nproc`")
    words, notes = framework_command(V + " trainer.nnodes=$NNODES", "run.sh", ENTRY)
    assert words == ["trainer.nnodes=$NNODES"] and any("$NNODES is not set by the script" in n for n in notes)
    with pytest.raises(ImportConfigError, match="not bash the grammar reads") as exc:
        _words(V + ' a="unclosed')
    assert "\n" not in str(exc.value)


def test_a_script_that_stops_before_the_command_says_where():
    """``MASTER_ADDR=${MASTER_ADDR:-}`` then ``[ -z ... ] && exit 1``: run with an empty environment, bash stops
    there (slime's run-qwen3-next-80B-A3B.sh); the refusal names the line and the check, and --set passes it."""
    script = 'M=${MASTER_ADDR:-}\nif [ -z "${M}" ]; then\n  echo set it\n  exit 1\nfi\n' + V + " a=$M"
    with pytest.raises(ImportConfigError, match=r"stops at line 4 \(exit 1 under `if \[ -z \"\$\{M\}\" \];`\)"):
        _words(script)
    assert _words(script, MASTER_ADDR="10.0.0.1") == ["a=10.0.0.1"]
