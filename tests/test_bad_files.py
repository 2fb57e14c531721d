"""Wrong files given to the three CLIs: one line naming the file and the fix, exit 2, no traceback (issue 13's
list: binary and non-UTF-8 inputs, header-only and non-numeric bench tables, a run directory that is a file)."""

import subprocess
import sys
from pathlib import Path

import pytest

HEADER = "phase,device,time_s,concurrency,prompt_tokens,response_tokens\n"


def _cli(module, *args):
    proc = subprocess.run([sys.executable, "-m", module, *map(str, args)], capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stderr


@pytest.fixture
def files(tmp_path):
    out = {
        "binary": tmp_path / "x.bin",
        "latin1": tmp_path / "x.txt",
        "header": tmp_path / "header.csv",
        "nonnum": tmp_path / "nonnum.csv",
        "inf": tmp_path / "inf.csv",
    }
    out["binary"].write_bytes(bytes(range(256)) * 4)
    out["latin1"].write_bytes("name: caf\xe9\n".encode("latin-1"))
    out["header"].write_text(HEADER)
    out["nonnum"].write_text(HEADER + "rollout,cpu,0.1,abc,5,2\n")
    out["inf"].write_text(HEADER + "rollout,cpu,0.1,inf,5,2\n")
    return tmp_path, out


@pytest.mark.parametrize("kind, words", [("binary", "is a binary file"), ("latin1", "is not UTF-8 text")])
def test_binary_or_non_utf8_inputs(files, kind, words):
    tmp_path, f = files
    cases = [
        ("rlsim.cli", ["run", f[kind]], "rlsim: error: scenario"),
        ("calibrate.cli", ["import", "--format", "verl", f[kind], "-o", tmp_path / "o.jsonl"], "log"),
        ("real.cli", ["import-vllm-bench", f[kind], "-o", tmp_path / "vb"], "vllm bench JSON"),
    ]
    for module, args, what in cases:
        code, err = _cli(module, *args)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert what in err and words in err and str(f[kind]) in err
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "vb").exists()  # nothing half-written


@pytest.mark.parametrize(
    "kind, words",
    [("header", "has a header but no rows"), ("nonnum", "concurrency 'abc'"), ("inf", "concurrency 'inf'")],
)
def test_fit_refuses_tables_it_cannot_read(files, kind, words):
    tmp_path, f = files
    code, err = _cli("calibrate.cli", "fit", f[kind], "--model", "Qwen2.5-0.5B", "-o", tmp_path / "p.json")
    assert code == 2 and err.count("\n") == 1 and words in err, err
    assert not (tmp_path / "p.json").exists()


def test_train_refuses_an_output_that_is_a_file(files):
    pytest.importorskip("torch")
    tmp_path, f = files
    code, err = _cli("real.cli", "train", "--max-steps", "1", "-o", f["header"])
    assert code == 2 and err.count("\n") == 1 and "is a file, not a run directory" in err, err
    assert f["header"].read_text() == HEADER  # untouched


BOMB = "".join(
    f"{k}: &{k} [{', '.join([prev] * 9)}]\n" for k, prev in zip("bcdefghi", ["*a"] + [f"*{c}" for c in "bcdefgh"])
)
BOMB = 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + BOMB


def test_yaml_duplicates_and_alias_bombs_are_refused(tmp_path):
    """A duplicate key is an error, not last-wins; a few hundred bytes of nested aliases (a billion values when
    walked: 54 s and 6 GB before) are refused from the node graph, before anything expands them."""
    dup = tmp_path / "dup.yaml"
    dup.write_text("model: Qwen2.5-0.5B\nhardware: {gpu: H100-SXM, num_gpus: 1}\nrun: {steps: 3}\nrun: {steps: 4}\n")
    code, err = _cli("rlsim.cli", "run", dup)
    assert code == 2 and "line 4 (duplicate key 'run')" in err and err.count("\n") == 1, err
    bomb = tmp_path / "bomb.yaml"
    nested = "".join("    " + line + "\n" for line in BOMB.splitlines())
    bomb.write_text(f"model: Qwen2.5-0.5B\nhardware: {{gpu: H100-SXM, num_gpus: 1}}\nrun:\n  steps:\n{nested}")
    assert len(bomb.read_bytes()) < 600
    code, err = _cli("rlsim.cli", "run", bomb)
    assert code == 2 and "expand to more than 1,000,000 values" in err and err.count("\n") == 1, err


def test_a_huge_value_in_an_error_is_shown_short():
    from rlsim.errors import ScenarioError

    err = ScenarioError("run.steps", [list(range(10**5))] * 10**3, "must be an integer")
    assert len(str(err)) < 160 and str(err).startswith("run.steps: [[0, 1, 2")


def test_batch_multiplier_limits_are_what_the_simulator_can_run():
    """Bounds below one response are refused at load; a penalty that overflows over many doublings is refused
    with the field instead of an OverflowError."""
    small = Path(__file__).resolve().parents[1] / "scenarios" / "small_1gpu.yaml"
    code, err = _cli("rlsim.cli", "run", small, "--set", "learning.batch_multiplier.batch_low=1e-30")
    assert code == 2 and "batch_low: 1e-30 must be at least 1" in err, err
    metric = ["learning.metric.initial=0", "learning.metric.asymptote=1", "learning.metric.mid_samples=1000"]
    over = [*metric, "learning.metric.exponent=1", "learning.target=0.5", "learning.batch_multiplier.batch_high=1"]
    over += ["learning.batch_multiplier.penalty_per_doubling=1000", "workload.prompts_per_step=1000000", "run.steps=1"]
    code, err = _cli("rlsim.cli", "run", small, *(a for o in over for a in ("--set", o)))
    assert code == 2 and "samples multiplier exceeds 1e30" in err and err.count("\n") == 1, err


def test_extreme_values_give_one_line_not_nan_and_json_stays_strict():
    """A cost coefficient past what the simulator can add up is refused at load; a hardware number that makes a
    time non-finite is named, so --json never prints NaN or Infinity (strict JSON)."""
    small = Path(__file__).resolve().parents[1] / "scenarios" / "small_1gpu.yaml"
    code, err = _cli("rlsim.cli", "run", small, "--set", "costs.train_step_overhead_s=1e308", "--json")
    assert code == 2 and "must be at most 1000000.0" in err, err
    code, err = _cli("rlsim.cli", "run", small, "--set", "hardware.gpu.bf16_flops_per_s=1e-300", "--json")
    assert code == 2 and "bf16_flops_per_s: 1e-300 must be at least" in err and err.count("\n") == 1, err
    code, err = _cli("rlsim.cli", "run", small, "--set", "hardware.gpu.memory_bytes=1e25")  # was a numba error
    assert code == 2 and "memory_bytes: 1e+25 must be at most" in err, err
    # the last guard: a summary holding a non-finite number is named, never printed
    from rlsim.cli import _non_finite

    assert _non_finite({"a": 1.0, "phase_time_s": {"rollout": float("inf")}}) == ("phase_time_s.rollout", float("inf"))
    assert _non_finite({"a": [1.0, 2]}) is None
    proc = subprocess.run(
        [sys.executable, "-m", "rlsim.cli", "run", str(small), "--set", "run.steps=3", "--json"],
        capture_output=True,
        text=True,
    )
    import json

    json.loads(proc.stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))  # no NaN / Infinity


def test_sweep_on_ray_without_a_cluster_is_one_line():
    """--address auto with no Ray cluster running: one line saying how to start one (Ray's ConnectionError)."""
    pytest.importorskip("ray")
    small = Path(__file__).resolve().parents[1] / "scenarios" / "small_1gpu.yaml"
    argv = ["sweep", small, "--executor", "ray", "--address", "auto", "--set", "run.steps=2"]
    code, err = _cli("rlsim.cli", *argv, "--grid", "workload.prompts_per_step=16,32")
    assert code == 2 and "no Ray cluster to join" in err and err.count("\n") == 1, err


def test_a_deeply_nested_yaml_is_one_line(tmp_path):
    """PyYAML composes recursively: 20,000 nested brackets ended in a RecursionError traceback (found by the fuzz
    test)."""
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 20000 + "]" * 20000)
    rc, err = _cli("rlsim.cli", "run", deep)
    assert rc == 2 and "not valid YAML" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
