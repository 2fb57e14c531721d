"""`rlsim run`: outputs, --json, byte-identical reruns (must-show 3)."""

import json
import subprocess
import sys

import pandas as pd
import pytest
import yaml

import rlsim
from rlsim.cli import main
from rlsim.io.runlog import read_jsonl
from tests.conftest import SCENARIOS


def _run(*args):
    return subprocess.run([sys.executable, "-m", "rlsim.cli", "run", *map(str, args)], capture_output=True, text=True)


def test_run_writes_all_outputs(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["run", str(SCENARIOS / "dense8b_h100_async.yaml"), "--set", "run.steps=5", "-o", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "step time" in text and "samples/s" in text and "utilization rollout_pool" in text and "train_actor" in text
    names = {p.name for p in out.iterdir()}
    assert names == {
        "scenario.resolved.yaml",
        "steps.csv",
        "steps.parquet",
        "runlog.jsonl",
        "trace.json",
        "summary.json",
    }
    csv = pd.read_csv(out / "steps.csv")
    parquet = pd.read_parquet(out / "steps.parquet")
    assert len(csv) == len(parquet) == 5
    assert {"timing_s/rollout", "timing_s/train_actor", "utilization/rollout_pool", "staleness"} <= set(csv.columns)
    assert [r["step"] for r in read_jsonl(out / "runlog.jsonl")] == [1, 2, 3, 4, 5]
    trace = json.loads((out / "trace.json").read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {e["name"] for e in spans} >= {"rollout", "train_actor", "weight_sync", "reward"}
    assert all(e["dur"] >= 0 for e in spans)
    # the resolved scenario reloads to the same scenario
    resolved = rlsim.from_dict(yaml.safe_load((out / "scenario.resolved.yaml").read_text()))
    # as it ran: run.until_target resolved (false: no learning model)
    assert resolved == rlsim.load_scenario(
        SCENARIOS / "dense8b_h100_async.yaml", ["run.steps=5", "run.until_target=false"]
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["scenario_hash"] == resolved.digest()


def test_json_summary_keys():
    proc = _run(SCENARIOS / "small_1gpu.yaml", "--set", "run.steps=3", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    for key in (
        "step_time_s",
        "samples_per_s",
        "generation_tokens_per_s",
        "phase_time_s",
        "tokens_per_s_per_gpu",
        "utilization",
    ):
        assert key in data
    assert set(data["phase_time_s"]) >= {"rollout", "reward", "old_logprob", "train_actor", "weight_sync"}
    assert data["step_time_s"] == pytest.approx(sum(data["phase_time_s"].values()), rel=1e-9)


def test_same_scenario_and_seed_give_byte_identical_csv(tmp_path):
    for d in ("a", "b"):
        proc = _run(SCENARIOS / "paper_grpo.yaml", "--set", "run.steps=4", "-o", tmp_path / d)
        assert proc.returncode == 0, proc.stderr
    for name in ("steps.csv", "runlog.jsonl", "trace.json", "summary.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    proc = _run(SCENARIOS / "paper_grpo.yaml", "--set", "run.steps=4", "--set", "run.seed=7", "-o", tmp_path / "c")
    assert (tmp_path / "c" / "steps.csv").read_bytes() != (tmp_path / "a" / "steps.csv").read_bytes()


def test_output_path_that_is_a_file_is_refused(tmp_path):
    f = tmp_path / "file"
    f.write_text("keep me")
    proc = _run(SCENARIOS / "small_1gpu.yaml", "-o", f)
    assert proc.returncode == 2
    assert "not a directory" in proc.stderr and "Traceback" not in proc.stderr
    assert f.read_text() == "keep me"


def test_help_lists_run():
    proc = subprocess.run([sys.executable, "-m", "rlsim.cli", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "run" in proc.stdout


def test_run_table_shows_the_target_and_each_warning_once(capsys):
    """With a learning model the table shows samples-, time- and GPU-hours-to-target and the seeds reaching it;
    a warning is printed once, on stderr, not again in the table."""
    argv = ["run", str(SCENARIOS / "paper_grpo.yaml"), "--set", "run.steps=3", "--set", "run.band_seeds=1"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    for row in ("samples to target", "time to target", "GPU-hours to target", "seeds reaching it"):
        assert row in out
    assert "warning" not in out
    assert all(err.count(line) == 1 for line in err.splitlines() if line.strip())


def test_phase_shares_over_100_percent_are_explained(capsys):
    """Under an async schedule on separate pools generation and training overlap: the phases' shares of the step
    time add up to more than 100%, and the table says why; a colocated synchronous run's shares do not, and it
    has no such line."""
    assert main(["run", str(SCENARIOS / "dense8b_h100_async.yaml"), "--set", "run.steps=10"]) == 0
    out = capsys.readouterr().out
    shares = [float(line.split()[-1].rstrip("%")) for line in out.split("share\n")[1].splitlines() if "%" in line[-1:]]
    assert sum(shares) > 100 and "overlap within a step" in out
    assert main(["run", str(SCENARIOS / "small_1gpu.yaml"), "--set", "run.steps=5"]) == 0
    out = capsys.readouterr().out
    assert "overlap within a step" not in out


PROFILE = {  # fitted costs plus a learning model and a length model, as rlsim-calibrate fit --runs writes them
    "schema": "rlsim-profile",
    "schema_version": 2,
    "provenance": dict.fromkeys(
        ("device", "engine", "engine_version", "torch_version", "model", "dtype", "date", "command"), "test"
    ),
    "phases": {"rollout": {"form": "roofline", "parameters": {"decode_memory_efficiency": 0.5}}},
    "learning": {
        "version": 1,
        "reference_batch": 256,
        "metric": {"initial": 0.1, "asymptote": 0.8, "mid_samples": 20000.0, "exponent": 1.5},
        "target": 0.6,
    },
    "lengths": {"response_length": {"dist": "fixed", "tokens": 300}},
}


def test_run_with_set_and_a_profile_validates_the_scenario_once(tmp_path, capsys, validated):
    """``rlsim run S --set workload.prompts_per_step=64 --profile P``: the file, the profile's learning and length
    models and --set are put together as plain data and validated once, on the way to the engine. (Before: the
    file alone, then file + profile + --set through Scenario.to_dict -> from_dict, and the profile's check twice.)"""
    p = tmp_path / "p.json"
    p.write_text(json.dumps(PROFILE))
    argv = ["run", str(SCENARIOS / "small_1gpu.yaml"), "--set", "workload.prompts_per_step=64", "--set"]
    assert main([*argv, "run.steps=2", "--set", "run.band_seeds=1", "--profile", str(p), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    runs = [s for s in validated if s.name == "small_1gpu"]
    assert len(runs) == 1
    (scn,) = runs
    assert scn.workload.prompts_per_step == 64 and scn.run.steps == 2  # --set
    assert scn.learning.target == 0.6 and scn.workload.response_length.tokens == 300  # the profile's models
    assert len(validated) == 2  # the other one: the profile's sections checked once when it loads
    assert summary["prompts_per_step"] == 64 and summary["target"] == 0.6 and summary["mean_response_tokens"] == 300


def test_run_with_set_validates_the_scenario_once(capsys, validated):
    assert main(["run", str(SCENARIOS / "small_1gpu.yaml"), "--set", "workload.prompts_per_step=64", "--json"]) == 0
    assert [s.workload.prompts_per_step for s in validated] == [64]
    assert json.loads(capsys.readouterr().out)["prompts_per_step"] == 64


@pytest.mark.parametrize("scenario", sorted(p.name for p in SCENARIOS.glob("*.yaml")))
def test_every_built_in_scenario_prints_strict_json(scenario, capsys):
    """`rlsim run S --json` for each scenario shipped in scenarios/: a strict JSON parser (no NaN, Infinity)
    reads it, and it carries time-to-target where the scenario has a learning model."""

    def refuse(name):
        raise ValueError(f"{scenario}: non-JSON constant {name} in --json output")

    assert main(["run", str(SCENARIOS / scenario), "--set", "run.steps=3", "--set", "run.band_seeds=1", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert summary["step_time_s"] > 0
    if summary.get("target") is not None:
        assert summary["time_to_target_s"] > 0


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["run", "scenarios/small_1gpu.yaml", "--jsn"],
            "rlsim run: error: unrecognized arguments: --jsn (did you mean --json for --jsn?)",
        ),
        (["sweep", "scenarios/small_1gpu.yaml", "--ful"], None),  # an unambiguous prefix is the option itself
        (["sweep", "scenarios/small_1gpu.yaml", "--fulll=1"], "(did you mean --full for --fulll=1?)"),
        (["run", "scenarios/small_1gpu.yaml", "more.yaml"], "rlsim run: error: unrecognized arguments: more.yaml\n"),
    ],
)
def test_an_unknown_option_is_refused_with_the_nearest_known_one(argv, says, capsys):
    from rlsim.cli import build_parser, parse

    if says is None:
        assert parse(build_parser(), argv).full is True
        return
    with pytest.raises(SystemExit) as exit_:
        parse(build_parser(), argv)
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err
