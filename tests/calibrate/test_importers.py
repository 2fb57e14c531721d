"""calibrate.importers (rlsim.frameworks.logs read through calibrate): framework metric dumps (verl, OpenRLHF, TRL,
NeMo RL) -> rlsim run logs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from calibrate import CalibrateError
from calibrate.importers.convert import FORMATS, format_problems, import_log, write_runlog
from rlsim.io.runlog import read_jsonl, validate_record

FIX = Path(__file__).parent / "fixtures"


def _json_lines(name: str) -> dict[int, dict]:
    """Readable source lines of a fixture, by line number."""
    out = {}
    for lineno, line in enumerate((FIX / name).read_text().splitlines(), 1):
        try:
            out[lineno] = json.loads(line)
        except json.JSONDecodeError:
            pass
    return out


def _write(tmp_path: Path, name: str, rows: list) -> Path:
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _verl_row(step: int, **extra) -> dict:
    row = {
        "training/global_step": step,
        "timing_s/gen": 40.0,
        "timing_s/update_actor": 15.0,
        "timing_s/step": 56.0,
        "response_length/mean": 300.0,
        "prompt_length/mean": 100.0,
    }
    row.update(extra)
    return row


@pytest.fixture(scope="module")
def verl():
    return import_log(FIX / "verl_grpo.jsonl", "verl", group_size=8)


# ---------------------------------------------------------------------------------------------------------------
# verl


def test_verl_imports_valid_records_and_reports_broken_lines(verl):
    assert [r["step"] for r in verl.records] == [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12]
    for rec in verl.records:
        validate_record(rec)
        assert rec["run_id"] == "verl_grpo"
    lines = dict(verl.problems)
    assert set(lines) == {9, 14}
    assert "not valid JSON" in lines[9]
    assert "missing the step timer timing_s/step" in lines[14]
    assert verl.initial_eval_metric == pytest.approx(0.412)  # the step-0 val_before_train row


def test_verl_phases_equal_source_numbers(verl):
    src = {row["training/global_step"]: row for row in _json_lines("verl_grpo.jsonl").values()}
    pairs = {
        "rollout": "timing_s/gen",
        "reward": "timing_s/reward",
        "old_logprob": "timing_s/old_log_prob",
        "ref_logprob": "timing_s/ref",
        "train_actor": "timing_s/update_actor",
        "weight_sync": "timing_s/update_weights",
    }
    for rec in verl.records:
        row = src[rec["step"]]
        for phase, key in pairs.items():
            assert rec["timing_s"][phase] == row[key]
        assert "values" not in rec["timing_s"] and "train_critic" not in rec["timing_s"]  # GRPO: no critic
        assert rec["reward_mean"] == row["critic/score/mean"]
        assert rec["lr"] == row["actor/lr"]
        assert rec["source_line"] in _json_lines("verl_grpo.jsonl")
        assert rec["source_metrics"]["timing_s/adv"] == row["timing_s/adv"]
        assert "timing_s/gen" not in rec["source_metrics"]


def test_verl_wall_excludes_testing(verl):
    src = {row["training/global_step"]: row for row in _json_lines("verl_grpo.jsonl").values()}
    wall = 0.0
    for rec in verl.records:
        row = src[rec["step"]]
        if "timing_s/testing" in row:
            assert rec["timing_s"]["eval"] == row["timing_s/testing"]
            assert rec["step_time_s"] == pytest.approx(row["timing_s/step"] - row["timing_s/testing"])
            assert rec["eval_metric"] == row["val-core/openai/gsm8k/reward/mean@1"]
        else:
            assert "eval" not in rec["timing_s"]
            assert rec["step_time_s"] == row["timing_s/step"]
            assert rec["eval_metric"] is None
        wall += rec["step_time_s"]
        assert rec["wall_s"] == pytest.approx(wall)
    assert [r["step"] for r in verl.records if r["eval_metric"] is not None] == [3, 5, 10, 12]


def test_verl_testing_outside_step_timer_is_not_subtracted(tmp_path):
    # other timers (55 s) + testing (30 s) do not fit in step (56 s): testing was timed outside the step
    path = _write(tmp_path, "v.jsonl", [_verl_row(1, **{"timing_s/testing": 30.0})])
    rec = import_log(path, "verl", prompts_per_step=4, group_size=2).records[0]
    assert rec["step_time_s"] == 56.0 and rec["timing_s"]["eval"] == 30.0


def test_verl_counts_and_tokens(verl):
    src = {row["training/global_step"]: row for row in _json_lines("verl_grpo.jsonl").values()}
    assert any("perf/total_num_tokens" in n for n in verl.notes)
    for i, rec in enumerate(verl.records, 1):
        row = src[rec["step"]]
        assert rec["responses"] == 512 and rec["prompts"] == 64
        assert rec["cumulative_samples"] == 512 * i
        assert rec["response_tokens"] == round(row["response_length/mean"] * 512)
        assert rec["prompt_tokens"] == round(row["prompt_length/mean"] * 512)
        assert abs(rec["prompt_tokens"] + rec["response_tokens"] - row["perf/total_num_tokens"]) <= 2


def test_verl_without_group_info_asks_for_the_options():
    with pytest.raises(CalibrateError, match="--prompts-per-step and --group-size"):
        import_log(FIX / "verl_grpo.jsonl", "verl")


def test_verl_roundtrip_through_runlog(verl, tmp_path):
    out = write_runlog(verl, tmp_path / "sub" / "verl.runlog.jsonl")
    back = list(read_jsonl(out))
    assert back == json.loads(json.dumps(verl.records))


def test_verl_file_logger_envelope(tmp_path):
    path = _write(tmp_path, "metrics.jsonl", [{"step": s, "data": _verl_row(s)} for s in (1, 2)])
    res = import_log(path, "verl", prompts_per_step=8, group_size=4, run_id="r1")
    assert [r["step"] for r in res.records] == [1, 2]
    assert res.records[0]["run_id"] == "r1" and res.records[0]["timing_s"]["rollout"] == 40.0
    assert res.records[0]["responses"] == 32  # no perf/total_num_tokens: from the arguments


def test_nested_json_objects_are_flattened(tmp_path):
    row = {"training/global_step": 1, "timing_s": {"gen": 40.0, "update_actor": 15.0, "step": 56.0}}
    path = _write(tmp_path, "v.jsonl", [row])
    rec = import_log(path, "verl", prompts_per_step=2, group_size=2).records[0]
    assert rec["timing_s"] == {"rollout": 40.0, "train_actor": 15.0}
    assert rec["prompt_tokens"] is None and rec["response_tokens"] is None  # means not logged


# ---------------------------------------------------------------------------------------------------------------
# broken input


def test_broken_lines_are_reported_with_reasons_and_skipped(tmp_path):
    rows = [
        _verl_row(1),
        "{not json",
        "[1, 2, 3]",
        _verl_row(3, **{"timing_s/gen": "fast"}),
        _verl_row(4),
        _verl_row(4),
        _verl_row(2),
        {"training/global_step": 5, "actor/lr": 1e-6},
        _verl_row(6, **{"training/global_step": 6.5}),
        _verl_row(7, **{"timing_s/ref": -1.0}),
        _verl_row(8),
    ]
    path = _write(tmp_path, "broken.jsonl", rows)
    res = import_log(path, "verl", prompts_per_step=4, group_size=2)
    assert [r["step"] for r in res.records] == [1, 4, 8]
    assert [r["cumulative_samples"] for r in res.records] == [8, 16, 24]
    reasons = dict(res.problems)
    assert "not valid JSON" in reasons[2]
    assert "not an object" in reasons[3]
    assert "timing_s/gen = 'fast' is not a finite number" in reasons[4]
    assert "duplicated step 4" in reasons[6] and "line 5" in reasons[6]
    assert "step 2 comes after step 4; steps must increase" in reasons[7]
    assert "missing the step timer" in reasons[8]
    assert "not an integer" in reasons[9]
    assert "negative" in reasons[10]
    assert [ln for ln, _ in res.problems] == [2, 3, 4, 6, 7, 8, 9, 10]
    text = format_problems(res)
    assert text.count("\n") == len(res.problems)
    for ln, reason in res.problems:
        assert f"line {ln}: {reason}" in text


def test_format_problems_without_problems():
    res = import_log(FIX / "openrlhf.jsonl", "openrlhf", group_size=8)
    assert "all lines read" in format_problems(res)


def test_csv_row_with_wrong_width_is_reported(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("step,step_time,reward\n1,10.0,0.5\n2,11.0\n3,12.0,0.6,9\n4,13.0,0.7\n")
    res = import_log(path, "trl", prompts_per_step=2, group_size=2)
    assert [r["step"] for r in res.records] == [1, 4]
    assert [ln for ln, _ in res.problems] == [3, 4]
    assert "header has 3" in res.problems[0][1]


def test_nothing_readable_raises(tmp_path):
    path = _write(tmp_path, "x.jsonl", ["garbage", {"foo": 1}])
    with pytest.raises(CalibrateError, match="no training step could be read"):
        import_log(path, "verl", prompts_per_step=1, group_size=1)


def test_unknown_format_and_missing_file_and_bad_args(tmp_path):
    with pytest.raises(CalibrateError, match="unknown log format 'deepspeed-chat'; use one of: verl"):
        import_log(FIX / "verl_grpo.jsonl", "deepspeed-chat")
    with pytest.raises(CalibrateError, match="no such log file"):
        import_log(tmp_path / "missing.jsonl", "verl")
    with pytest.raises(CalibrateError, match="--group-size"):
        import_log(FIX / "verl_grpo.jsonl", "verl", group_size=0)
    assert FORMATS == ("verl", "trl", "openrlhf", "nemo-rl")


def test_no_step_key_numbers_rows_consecutively(tmp_path):
    rows = [{k: v for k, v in _verl_row(0).items() if k != "training/global_step"} for _ in range(3)]
    path = _write(tmp_path, "v.jsonl", rows)
    res = import_log(path, "verl", prompts_per_step=1, group_size=4)
    assert [r["step"] for r in res.records] == [1, 2, 3]
    assert [r["cumulative_samples"] for r in res.records] == [4, 8, 12]


def test_zero_based_steps_are_shifted(tmp_path):
    path = _write(tmp_path, "v.jsonl", [_verl_row(0), _verl_row(1)])
    res = import_log(path, "verl", prompts_per_step=1, group_size=4)
    assert [r["step"] for r in res.records] == [1, 2]


# ---------------------------------------------------------------------------------------------------------------
# OpenRLHF


def test_openrlhf_mapping():
    res = import_log(FIX / "openrlhf.jsonl", "openrlhf", group_size=8)
    src = [row for row in _json_lines("openrlhf.jsonl").values() if "train/global_step" in row]
    assert res.problems == []
    assert [r["step"] for r in res.records] == [1, 2, 3, 4, 5]
    wall = 0.0
    for rec, row in zip(res.records, src):
        validate_record(rec)
        t = rec["timing_s"]
        assert t["rollout"] == row["train/timing/generation"]
        assert t["train_actor"] == row["train/timing/ppo_train"]
        assert t["weight_sync"] == row["train/timing/broadcast"]
        assert t["old_logprob"] + t["ref_logprob"] == pytest.approx(row["train/timing/make_experience"])
        assert t["old_logprob"] == t["ref_logprob"]
        wall += row["train/timing/step_total"]
        assert rec["wall_s"] == pytest.approx(wall)
        assert rec["responses"] == 256 and rec["prompts"] == 32
        assert rec["reward_mean"] == row["train/rollout/reward_mean"]
        assert rec["lr"] == row["train/actor_lr"]
        mean_prompt = row["train/total_length"] - row["train/response_length"]
        assert rec["prompt_tokens"] == round(mean_prompt * 256)
        assert "eval" not in t
    assert [r["eval_metric"] is not None for r in res.records] == [False, False, False, True, False]
    assert res.records[3]["eval_metric"] == pytest.approx((0.562 + 0.318) / 2)
    assert res.records[3]["source_metrics"]["eval/eval_gsm8k_pass4"] == 0.781


def test_openrlhf_generation_inside_make_experience(tmp_path):
    # older layout: make_experience (50 s) includes generation (40 s); parts (40+50+20+2) exceed step_total (72 s)
    row = {
        "train/global_step": 1,
        "train/timing/generation": 40.0,
        "train/timing/make_experience": 50.0,
        "train/timing/ppo_train": 20.0,
        "train/timing/broadcast": 2.0,
        "train/timing/step_total": 72.0,
        "train/critic_loss": 0.3,
    }
    rec = import_log(_write(tmp_path, "o.jsonl", [row]), "openrlhf", prompts_per_step=4, group_size=2).records[0]
    t = rec["timing_s"]
    assert t["rollout"] == 40.0
    assert t["old_logprob"] == t["ref_logprob"] == t["values"] == pytest.approx(10.0 / 3)
    assert rec["wall_s"] == 72.0


def test_openrlhf_without_step_total_sums_timers(tmp_path):
    row = {"global_step": 1, "timing/generation": 30.0, "timing/make_experience": 8.0, "timing/ppo_train": 12.0}
    rec = import_log(_write(tmp_path, "o.jsonl", [row]), "openrlhf", prompts_per_step=4, group_size=2).records[0]
    assert rec["wall_s"] == 50.0 and rec["timing_s"]["weight_sync"] == 0.0


# ---------------------------------------------------------------------------------------------------------------
# TRL


def test_trl_needs_batch_info():
    with pytest.raises(CalibrateError, match="pass --prompts-per-step and --group-size"):
        import_log(FIX / "trl.csv", "trl")


def test_trl_mapping():
    res = import_log(FIX / "trl.csv", "trl", prompts_per_step=16, group_size=8)
    with open(FIX / "trl.csv", newline="") as fh:
        src = [{k: float(v) for k, v in row.items() if v} for row in csv.DictReader(fh)]
    train = [row for row in src if "step_time" in row]
    p = "profiling/Time taken: GRPOTrainer."
    assert res.problems == []
    wall, prev_tokens = 0.0, 0.0
    for rec, row in zip(res.records, train):
        validate_record(rec)
        t = rec["timing_s"]
        assert t["rollout"] == row[p + "vLLM.generate"]
        assert t["reward"] == row[p + "_calculate_rewards"]
        assert t["weight_sync"] == row[p + "_move_model_to_vllm"]
        assert sum(v for k, v in t.items() if k != "eval") == pytest.approx(row["step_time"])
        wall += row["step_time"]
        assert rec["wall_s"] == pytest.approx(wall)  # eval_runtime never counted
        assert rec["responses"] == 128 and rec["prompts"] == 16
        assert rec["response_tokens"] == round(row["completions/mean_length"] * 128)
        assert rec["prompt_tokens"] + rec["response_tokens"] == row["num_tokens"] - prev_tokens
        prev_tokens = row["num_tokens"]
        assert rec["lr"] == row["learning_rate"] and rec["reward_mean"] == row["reward"]
    assert res.records[3]["eval_metric"] == 0.553 and res.records[3]["timing_s"]["eval"] == 61.37
    assert [r["eval_metric"] is None for r in res.records] == [True, True, True, False, True]


def test_trl_wandb_rows_without_step_attach_to_next_step(tmp_path):
    p = "profiling/Time taken: GRPOTrainer."
    rows = [
        {p + "_calculate_rewards": 1.0},
        {p + "_calculate_rewards": 0.5},
        {p + "vLLM.generate": 20.0},
        {"train/global_step": 1, "train/step_time": 30.0, "train/reward": 0.4, "eval/reward": 0.3},
        {p + "vLLM.generate": 5.0},
    ]
    res = import_log(_write(tmp_path, "w.jsonl", rows), "trl", prompts_per_step=2, group_size=2)
    rec = res.records[0]
    assert rec["timing_s"]["reward"] == 1.5 and rec["timing_s"]["rollout"] == 20.0
    assert rec["timing_s"]["train_actor"] == pytest.approx(8.5)
    assert rec["eval_metric"] == 0.3 and rec["reward_mean"] == 0.4
    assert res.problems == [(5, "no step number and no later step to attach it to")]


# ---------------------------------------------------------------------------------------------------------------
# NeMo RL


def test_nemo_rl_mapping():
    res = import_log(FIX / "nemo_rl.jsonl", "nemo-rl", group_size=16)
    rows: dict[int, dict] = {}
    for row in _json_lines("nemo_rl.jsonl").values():
        rows.setdefault(row["step"], {}).update(row)
    assert res.problems == []
    assert res.initial_eval_metric == 0.281
    wall = 0.0
    for rec in res.records:
        validate_record(rec)
        row = rows[rec["step"]]
        t = rec["timing_s"]
        assert t["rollout"] == row["timing/train/generation"]
        assert t["reward"] == row["timing/train/reward_calculation"]
        assert t["weight_sync"] == row["timing/train/prepare_for_generation"]
        assert t["train_actor"] == row["timing/train/policy_training"]
        assert t["old_logprob"] + t["ref_logprob"] == pytest.approx(row["timing/train/policy_and_reference_logprobs"])
        step_s = row["timing/train/total_step_time"] - row.get("timing/validation/total_validation_time", 0.0)
        assert rec["step_time_s"] == pytest.approx(step_s)
        wall += step_s
        assert rec["wall_s"] == pytest.approx(wall)
        assert rec["responses"] == 512 and rec["prompts"] == 32
        assert rec["reward_mean"] == row["train/reward"] and rec["lr"] == row["train/lr"]
        assert rec["response_tokens"] == round(row["train/mean_gen_tokens_per_sample"] * 512)
    last = res.records[-1]
    assert (
        last["eval_metric"] == 0.462 and last["timing_s"]["eval"] == rows[5]["timing/validation/total_validation_time"]
    )
    assert "timing/train/data_processing" in last["source_metrics"]


def test_log_readers_live_in_rlsim_and_calibrate_keeps_its_entry_points():
    files = sorted(Path(__file__).parents[2].joinpath("rlsim", "frameworks", "logs").glob("*.py"))
    assert {f.stem for f in files} == {"__init__", "core", "read", "verl", "openrlhf", "trl", "nemo_rl", "console"}
    from calibrate.importers import convert
    from rlsim.frameworks.logs import read

    assert convert.FORMAT_SPECS is read.FORMAT_SPECS and convert.ImportResult is read.ImportResult


def test_errors_are_rlsim_errors_in_rlsim_and_calibrate_errors_here(tmp_path):
    from rlsim.errors import LogImportError
    from rlsim.frameworks.logs.read import import_log as rlsim_import_log

    with pytest.raises(LogImportError, match="no such log file"):
        rlsim_import_log(tmp_path / "missing.jsonl", "verl")
    with pytest.raises(CalibrateError, match="no such log file") as info:
        import_log(tmp_path / "missing.jsonl", "verl")
    assert isinstance(info.value.__cause__, LogImportError)


def test_every_framework_module_is_a_format():
    """One module per framework, each registered under its --format name with its own step keys and timer."""
    from calibrate.importers import convert
    from rlsim.frameworks.logs import nemo_rl, openrlhf, trl, verl

    assert FORMATS == ("verl", "trl", "openrlhf", "nemo-rl")
    for name, module in zip(FORMATS, (verl, trl, openrlhf, nemo_rl)):
        assert convert.FORMAT_SPECS[name] is module.FORMAT
        assert module.FORMAT.step_keys == module.STEP_KEYS and module.STEP_TIMER in module.FORMAT.timer_hint
