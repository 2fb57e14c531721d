"""Typos a user makes (issue 30, must-show 3): every one exits 2 with one line naming the key or value and the
nearest known one, before any simulation (none of these writes its output or starts a run)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
S = str(ROOT / "scenarios" / "paper_grpo.yaml")
VERL = str(ROOT / "tests" / "rlsim" / "fixtures" / "configs" / "verl_scripts" / "grpo_trainer__run_qwen3-8b.sh")
ORL = str(ROOT / "tests" / "rlsim" / "fixtures" / "configs" / "openrlhf_scripts" / "train_ppo_ray_hybrid_engine.sh")

CASES = [
    # (command, the suggestion the one line must hold)
    (["plan", S, "--grid", "workload.prompt_per_step=256,512"], "did you mean prompts_per_step?"),
    (
        ["import-config", "--format", "verl", VERL, "--set", "data.train_batch_sise=512"],
        "did you mean data.train_batch_size?",
    ),
    (["import-config", "--format", "verlx", VERL], "did you mean verl?"),
    (
        ["import-config", "--format", "openrlhf", ORL, "--set", "rollout.batch_sise=64"],
        "did you mean rollout.batch_size?",
    ),
    (["run", S, "--set", "workload.prompt_per_step=256"], "did you mean prompts_per_step?"),
    (["run", S, "--set", "enigne.tensor_parallel_size=2"], "did you mean engine?"),
    (["run", S, "--set", "hardware.gpu=H10"], "did you mean H20"),
    (["run", S, "--set", "model=Qwen2.5-7b"], "did you mean Qwen2.5-7B"),
    (["run", S, "--set", "schedule.mode=asyn"], "did you mean async?"),
    (["run", S, "--set", "learning.lr_rule=sqr"], "did you mean sqrt?"),
    (["run", S, "--set", "engine.behaviour=vllm-v2"], "did you mean vllm-v1?"),
    (["run", S, "--set", "software.engine=sglng"], "did you mean sglang?"),
    (["sweep", S, "--grid", "workload.group_sise=4,8"], "did you mean group_size?"),
    (
        ["decide", S, "--baseline", "workload.prompts_per_step=128", "--candidate", "workload.prompts_per_stepp=1024"],
        "did you mean prompts_per_step?",
    ),
    (["plan", S, "--set", "hardware.num_gpu=16"], "did you mean num_gpus?"),
    (["plan", S, "--emit", "trll", "-o", "OUT"], "did you mean trl?"),
]


@pytest.mark.parametrize(("args", "hint"), CASES, ids=[" ".join(a[:1] + a[2:4]) for a, _ in CASES])
def test_a_typo_is_one_line_with_a_suggestion_and_nothing_runs(tmp_path, args, hint):
    out = tmp_path / "out"
    args = [a if a != "OUT" else str(out) for a in args]
    if args[0] in ("run", "sweep", "import-config") and "-o" not in args:
        args += ["-o", str(out)]
    proc = subprocess.run([sys.executable, "-m", "rlsim.cli", *args], capture_output=True, text=True, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("rlsim: error:") and hint in lines[0], proc.stderr
    assert not out.exists()  # refused before any work


def test_a_calibrate_log_format_typo_is_one_line_with_a_suggestion(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text("{}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "calibrate.cli", "import", str(log), "--format", "verl1", "-o", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    want = "rlsim-calibrate: error: unknown log format 'verl1'; did you mean verl? use one of: verl, trl, openrlhf"
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [want + ", nemo-rl"]
