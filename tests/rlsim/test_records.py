"""rlsim.io.records: the run-log record and the bench-table columns, defined once (real runs and the simulator use
them; tests/real/test_train.py checks that a real run's log passes the same validator)."""

import json

import pytest

import rlsim
from rlsim.host.machine_load import LOAD_KEYS
from rlsim.io.records import (
    BENCH_COLUMNS,
    BENCH_PHASE_COLUMNS,
    BENCH_REQUIRED_COLUMNS,
    DETOKENIZE_BENCH_PHASES,
    FIELDS_BY_NAME,
    OPTIMIZER_BENCH_PHASES,
    REQUIRED_KEYS,
    RUN_LOG_FIELDS,
    SCHEMA_VERSION,
    RunLogError,
    run_log_record,
    validate_record,
)
from rlsim.io.runlog import read_jsonl, write_jsonl
from rlsim.phases import Phase

MINIMAL = dict(
    run_id="r",
    step=1,
    cumulative_samples=8,
    prompts=2,
    responses=8,
    prompt_tokens=40,
    response_tokens=64,
    lr=1e-3,
    reward_mean=0.5,
    eval_metric=None,
    wall_s=1.2,
    timing_s={"rollout": 0.9, "train_actor": 0.3},
)


def test_the_constructor_adds_the_schema_version_and_keeps_extra_keys():
    rec = run_log_record(**MINIMAL, my_metric=3.0)
    assert rec == {"schema_version": SCHEMA_VERSION, **MINIMAL, "my_metric": 3.0}
    assert set(REQUIRED_KEYS) == {"schema_version", *MINIMAL}


@pytest.mark.parametrize("key", sorted(set(REQUIRED_KEYS) - {"schema_version"}))
def test_a_missing_required_field_is_refused(key):
    with pytest.raises(RunLogError, match=rf"misses key\(s\) {key}$"):
        run_log_record(**{k: v for k, v in MINIMAL.items() if k != key})


@pytest.mark.parametrize(
    "change, match",
    [
        ({"step": 0}, "step 0 must be an integer >= 1"),
        ({"step": "1"}, "step '1' must be an integer"),
        ({"step": True}, "step True must be an integer"),
        ({"step": 1.0}, "step 1.0 must be an integer"),
        ({"run_id": 7}, "run_id 7 must be a string"),
        ({"wall_s": None}, "wall_s is null; it must be a finite number >= 0"),
        ({"wall_s": float("inf")}, "wall_s inf must be a finite number"),
        ({"wall_s": -1.0}, "wall_s -1.0 must be a finite number >= 0"),
        ({"responses": 0}, "responses 0 must be an integer >= 1"),
        ({"timing_s": {"decode": 1.0}}, "unknown phase 'decode'"),
        ({"timing_s": {"rollout": -0.1}}, r"timing_s.rollout = -0.1 must be a finite number >= 0"),
        ({"timing_s": [1.0]}, "timing_s must be a mapping"),
        ({"response_length_counts": [3, -1]}, "response_length_counts .* must be a list of integers >= 0"),
        ({"staleness": -1}, "staleness -1 must be an integer >= 0"),
        ({"utilization": 0.5}, "utilization 0.5 must be a mapping"),
        ({"schema_version": 2}, "schema_version 2 is not 1"),
    ],
)
def test_a_field_of_the_wrong_type_or_range_is_refused(change, match):
    with pytest.raises(RunLogError, match=match):
        run_log_record(**{**MINIMAL, **change})


def test_nullable_fields_take_null():
    nulls = {f.name: None for f in RUN_LOG_FIELDS if f.nullable}
    assert {"eval_metric", "reward_mean", "lr", "prompt_tokens", "response_tokens", *LOAD_KEYS} <= set(nulls)
    run_log_record(**{**MINIMAL, **nulls})


def test_every_field_is_documented_and_every_step_records_the_machine_load():
    assert all(f.doc and f.kind in {"int", "number", "str", "timing", "counts", "mapping"} for f in RUN_LOG_FIELDS)
    assert len(FIELDS_BY_NAME) == len(RUN_LOG_FIELDS)  # no field defined twice
    assert set(LOAD_KEYS) <= set(FIELDS_BY_NAME)


def test_simulated_records_pass_the_validator_and_round_trip_a_file(tmp_path, scenario_path):
    result = rlsim.simulate(rlsim.load_scenario(scenario_path("small_1gpu"), ["run.steps=3"]))
    for rec in result.records:
        validate_record(rec)
        assert rec["schema_version"] == SCHEMA_VERSION and set(rec["timing_s"]) <= {p.value for p in Phase}
    write_jsonl(tmp_path / "runlog.jsonl", result.records)
    assert list(read_jsonl(tmp_path / "runlog.jsonl")) == json.loads(json.dumps(result.records))


def test_a_file_line_that_breaks_the_record_names_the_line(tmp_path):
    rec = run_log_record(**MINIMAL)
    bad = {**rec, "step": 2, "cumulative_samples": "sixteen"}
    (tmp_path / "log.jsonl").write_text(json.dumps(rec) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(RunLogError, match=r"log.jsonl:2: cumulative_samples 'sixteen' must be an integer >= 0"):
        list(read_jsonl(tmp_path / "log.jsonl"))


def test_bench_columns_hold_every_phase_configuration_and_the_load():
    assert set(BENCH_REQUIRED_COLUMNS) <= set(BENCH_COLUMNS) and len(set(BENCH_COLUMNS)) == len(BENCH_COLUMNS)
    assert all(set(cols) <= set(BENCH_COLUMNS) for cols in BENCH_PHASE_COLUMNS.values())
    bench_only = set(OPTIMIZER_BENCH_PHASES) | set(DETOKENIZE_BENCH_PHASES)  # no run phase (real/offload, detokenize)
    assert set(BENCH_PHASE_COLUMNS) <= {p.value for p in Phase} | bench_only
    assert set(LOAD_KEYS) <= set(BENCH_COLUMNS)


def test_the_typed_record_lists_the_schemas_fields():
    """RunLogRecord (the type the simulator's records carry) and RUN_LOG_FIELDS (what validation checks) are one
    list: the same names, required exactly where the schema requires them, nullable where it allows null."""
    import typing

    from rlsim.io.records import RUN_LOG_FIELDS, RunLogRecord

    hints = typing.get_type_hints(RunLogRecord)
    assert list(hints) == [f.name for f in RUN_LOG_FIELDS]
    assert RunLogRecord.__required_keys__ == {f.name for f in RUN_LOG_FIELDS if f.required}
    for f in RUN_LOG_FIELDS:
        assert (type(None) in typing.get_args(hints[f.name])) == f.nullable, f.name
