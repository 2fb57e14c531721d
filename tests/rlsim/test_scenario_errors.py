"""Bad scenario input is reported, never crashed on.

* CLI: ``rlsim run`` on a broken scenario exits 2 with exactly one ``rlsim: error:`` line on stderr that names the
  field path, shows the offending value and says how to fix it (no traceback, nothing on stdout).
* ``--set`` overrides reach the intended field with the intended type; the resolved YAML reloads to an equal scenario.
* Property: random mutations of the shipped scenarios either validate or raise ``ScenarioError`` (one line, naming a
  field); scenarios that validate simulate one step or raise ``RlsimError`` / ``EngineCapacityError``.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

import rlsim
from rlsim import catalog
from rlsim.answers.decide import parse_side
from rlsim.answers.sweep import parse_grid
from rlsim.engine.replica import EngineCapacityError
from rlsim.errors import RlsimError, ScenarioError, one_line
from rlsim.scenario import (
    Scenario,
    apply_overrides,
    dump_yaml,
    from_dict,
    load_scenario,
    parse_overrides,
    parse_scalar,
    split_assignment,
    with_overrides,
)

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
SMALL = SCENARIOS / "small_1gpu.yaml"
PAPER = SCENARIOS / "paper_grpo.yaml"


def _raw(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


# ------------------------------------------------------------------------------------------------------- CLI


def _set(dotted: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(d: dict[str, Any]) -> None:
        *head, last = dotted.split(".")
        node = d
        for part in head:
            node = node.setdefault(part, {})
        node[last] = value

    return mutate


def _all(*fns: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def mutate(d: dict[str, Any]) -> None:
        for f in fns:
            f(d)

    return mutate


# (base scenario, mutation of its dict or None, extra CLI args, raw file text or None, substrings stderr must hold)
_W = "scenario.yaml"
CLI_CASES = [
    pytest.param(
        SMALL,
        _set("bogus_section", 1),
        [],
        None,
        ["bogus_section: 1", "is not a known key", "use one of", "workload"],
        id="unknown-top-level-key",
    ),
    pytest.param(
        SMALL,
        _set("workload.promts_per_step", 32),
        [],
        None,
        ["workload.promts_per_step: 32", "is not a known key", "use one of", "prompts_per_step"],
        id="unknown-nested-key",
    ),
    pytest.param(
        SMALL,
        _set("run.steps", "ten"),
        [],
        None,
        ["run.steps: 'ten'", "must be an integer", "whole number"],
        id="steps-not-int",
    ),
    pytest.param(
        SMALL,
        _set("engine.max_num_seqs", 1.5),
        [],
        None,
        ["engine.max_num_seqs: 1.5", "must be an integer", "whole number"],
        id="max-num-seqs-float",
    ),
    pytest.param(
        PAPER,
        _set("algorithm.kl_reference", "yes"),
        [],
        None,
        ["algorithm.kl_reference: 'yes'", "must be true or false", "write algorithm.kl_reference: true"],
        id="kl-reference-string",
    ),
    pytest.param(
        SMALL,
        _set("workload.prompts_per_step", 0),
        [],
        None,
        ["workload.prompts_per_step: 0", "at least 1", "set workload.prompts_per_step"],
        id="prompts-zero",
    ),
    pytest.param(
        PAPER,
        _set("workload.prompts_per_step", -4),
        [],
        None,
        ["workload.prompts_per_step: -4", "at least 1", "set workload.prompts_per_step"],
        id="prompts-negative",
    ),
    pytest.param(
        SMALL,
        _set("learning.batch_multiplier", {"form": "critical_batch", "critical_batch": 512, "critical_power": 0}),
        [],
        None,
        ["learning.batch_multiplier.critical_power: 0", "learning.batch_multiplier.critical_power"],
        id="critical-power-zero",
    ),
    pytest.param(
        SMALL,
        _set("workload.group_size", 0),
        [],
        None,
        ["workload.group_size: 0", "at least 1", "set workload.group_size"],
        id="group-size-zero",
    ),
    pytest.param(
        SMALL,
        _all(_set("model", "Llama-3.1-70B"), _set("hardware.gpu", "L40S")),
        [],
        None,
        ["model: 'Llama-3.1-70B'", "GB of weights per GPU", "L40S", "raise engine.tensor_parallel_size"],
        id="model-does-not-fit-gpu",
    ),
    pytest.param(
        SMALL,
        _all(
            _set("workload.max_response_tokens", 10_000_000),
            _set("workload.response_length", {"dist": "fixed", "tokens": 10_000_000}),
        ),
        [],
        None,
        ["workload.max_response_tokens: 10000000", "KV cache", "lower the lengths"],
        id="sequence-exceeds-kv-cache",
    ),
    pytest.param(
        SMALL,
        _set("model", "Qwen9-1T"),
        [],
        None,
        ["model: 'Qwen9-1T'", "is not a catalog model", "did you mean", "Qwen2.5-7B", "config.json"],
        id="unknown-catalog-model",
    ),
    pytest.param(
        PAPER,
        _set("hardware.gpu", "H900"),
        [],
        None,
        ["hardware.gpu: 'H900'", "is not a catalog gpu", "use one of", "H100-SXM"],
        id="unknown-catalog-gpu",
    ),
    pytest.param(
        PAPER,
        _set("hardware.rollout_gpus", 40),
        [],
        None,
        ["hardware.num_gpus: 64", "must equal rollout_gpus (40) + train_gpus (16)", "add up"],
        id="separate-pools-do-not-add-up",
    ),
    pytest.param(
        SMALL,
        None,
        ["--set", "workload.prompts_per_step"],
        None,
        ["--set: 'workload.prompts_per_step'", "key=value", "run.steps=50"],
        id="set-without-equals",
    ),
    pytest.param(
        SMALL,
        None,
        ["--set", "workload..group_size=4"],
        None,
        ["--set: 'workload..group_size=4'", "empty part in the dotted key", "single dots"],
        id="set-empty-key-part",
    ),
    pytest.param(
        SMALL,
        None,
        ["--set", "workload.group_size=0"],
        None,
        ["workload.group_size: 0", "at least 1"],
        id="set-bad-value",
    ),
    pytest.param(
        SMALL,
        _set("workload.a\nb", 1),
        [],
        None,
        ["workload.a\\nb: 1", "is not a known key", "use one of"],
        id="newline-in-key-stays-one-line",
    ),
    pytest.param(
        None, None, [], None, ["scenario: 'scenario.yaml'", "is not a file", "give the path"], id="missing-file"
    ),
    pytest.param(
        None,
        None,
        [],
        "name: broken\nworkload: {prompts_per_step: 8\nrun:\n  steps: 2\n",
        ["scenario: 'scenario.yaml'", "is not valid YAML at line", "fix the YAML syntax"],
        id="yaml-syntax",
    ),
]


def _run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rlsim.cli", "run", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(("base", "mutate", "extra", "text", "expect"), CLI_CASES)
def test_cli_rejects_bad_input(tmp_path, base, mutate, extra, text, expect):
    if base is not None:
        raw = _raw(base)
        if mutate is not None:
            mutate(raw)
        (tmp_path / _W).write_text(yaml.safe_dump(raw, sort_keys=False))
    elif text is not None:
        (tmp_path / _W).write_text(text)
    proc = _run_cli(tmp_path, _W, *extra)  # relative path: the message shows it whole (values over 80 chars are cut)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].strip(), proc.stderr
    line = lines[0]
    assert line.startswith("rlsim: error: "), line
    for needle in expect:
        assert needle in line, (needle, line)
    # the message says how to fix it: "<field>: <value> <problem>; <fix>"
    assert "; " in line and line.split("; ", 1)[1].strip(), line


def test_cli_valid_scenario_exits_zero(tmp_path):
    """Positive control: the harness above does not see exit 2 for a good scenario."""
    (tmp_path / _W).write_text(SMALL.read_text())
    proc = _run_cli(tmp_path, _W, "--set", "run.steps=1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "rlsim: error" not in proc.stderr
    assert '"samples_per_s"' in proc.stdout


# ------------------------------------------------------------------------------------------------------- overrides


def test_set_overrides_reach_their_fields():
    plain = load_scenario(SMALL)
    s = load_scenario(SMALL, ["workload.prompts_per_step=256"])
    assert s.workload.prompts_per_step == 256
    assert s.workload.responses_per_step == 256 * plain.workload.group_size
    assert dataclasses.replace(s, workload=plain.workload) == plain  # nothing else moved

    s = load_scenario(SMALL, ["learning.lr0=1e-6"])  # YAML 1.1 reads 1e-6 as a string; rlsim reads a float
    assert type(s.learning.lr0) is float and s.learning.lr0 == 1e-6
    s = load_scenario(SMALL, ["learning.lr0=3e-7", "algorithm.kl_reference=true", "hardware.gpu=H200"])
    assert s.learning.lr0 == 3e-7
    assert s.algorithm.kl_reference is True
    assert s.hardware.gpu.name == "H200"
    assert s.hardware.gpu.memory_bytes == catalog.gpu("H200")["memory_bytes"]

    # one number of a catalog entry: the rest of the entry stays
    s = load_scenario(SMALL, ["model.num_layers=12"])
    assert s.model.num_layers == 12
    assert s.model.hidden_size == plain.model.hidden_size and s.model.num_layers != plain.model.num_layers

    # the dict form and with_overrides agree with the list form
    assert (
        load_scenario(SMALL, {"workload.prompts_per_step": 256})
        == load_scenario(SMALL, ["workload.prompts_per_step=256"])
        == with_overrides(plain, ["workload.prompts_per_step=256"])
    )

    with pytest.raises(ScenarioError, match=r"^workload\.prompts_per_step: 'many' must be an integer"):
        load_scenario(SMALL, ["workload.prompts_per_step=many"])
    with pytest.raises(ScenarioError, match=r"^workload: 3 is not a section"):
        load_scenario(SMALL, ["workload=3", "workload.group_size=4"])


# ------------------------------------------------------------------------------------------------------- grammar


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("64", 64),
        ("0.5", 0.5),
        ("1e-6", 1e-6),  # YAML 1.1 reads it as a string
        ("true", True),
        ("null", None),
        ("", ""),
        ("sqrt", "sqrt"),
        ("H100-SXM", "H100-SXM"),
        ("v1.2", "v1.2"),  # digits but not a number: stays text
        ("[64, 128]", [64, 128]),
        ("{a: 1", "{a: 1"),  # not YAML: stays text
    ],
)
def test_grammar_reads_values_as_yaml(text, value):
    got = parse_scalar(text)
    assert got == value and type(got) is type(value)


def test_grammar_splits_at_the_first_equals_and_strips():
    assert split_assignment(" workload.prompts_per_step = 64 ") == ("workload.prompts_per_step", "64")
    assert split_assignment("description=a=b") == ("description", "a=b")
    assert split_assignment("name=") == ("name", "")
    assert parse_overrides(["run.steps=5", "run.steps=7", "learning.lr_rule=none"]) == {
        "run.steps": 7,
        "learning.lr_rule": "none",
    }


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            "workload.prompts_per_step",
            "--set: 'workload.prompts_per_step' is not of the form key=value (no '='); write e.g. run.steps=50",
        ),
        ("=64", "--set: '=64' has an empty key before '='; write e.g. run.steps=50"),
        (
            "workload..prompts_per_step=64",
            "--set: 'workload..prompts_per_step=64' has an empty part in the dotted key 'workload..prompts_per_step'; "
            "separate parts by single dots, e.g. run.steps=50",
        ),
        (".run.steps=5", "has an empty part in the dotted key '.run.steps'"),
        ("run.=5", "has an empty part in the dotted key 'run.'"),
        ("run\nsteps", "--set: 'run\\nsteps' is not of the form key=value"),  # one line: the newline escaped
    ],
)
def test_grammar_errors_name_the_flag_the_text_and_a_fix(item, message):
    with pytest.raises(ScenarioError) as exc:
        parse_overrides([item])
    assert message in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize(
    ("parse", "flag"),
    [
        (lambda t: parse_overrides([t]), "--set"),
        (lambda t: parse_grid([t]), "--grid"),
        (lambda t: parse_side(t, "--baseline"), "--baseline"),
    ],
    ids=["set", "grid", "decide-side"],
)
def test_every_flag_uses_the_one_grammar(parse, flag):
    """--set, --grid and decide's sides read keys and values alike and refuse the same bad keys, naming their flag."""
    got = parse("workload.prompts_per_step = 1e-6")
    value = got["workload.prompts_per_step"]
    assert (value[0] if flag == "--grid" else value) == 1e-6
    for bad in ("workload..prompts_per_step=64", "=64", "workload.prompts_per_step"):
        with pytest.raises(ScenarioError, match=f"^{flag}: ") as exc:
            parse(bad)
        assert "e.g." in str(exc.value)


def test_apply_overrides_leaves_its_input_alone():
    raw = {"model": "Qwen2.5-0.5B", "workload": {"prompts_per_step": 8, "group_size": 4}}
    before = copy.deepcopy(raw)
    out = apply_overrides(raw, {"workload.prompts_per_step": 64, "model.num_layers": 2, "run.steps": 3})
    assert raw == before
    assert out["workload"] == {"prompts_per_step": 64, "group_size": 4}
    assert out["model"] == {"base": "Qwen2.5-0.5B", "num_layers": 2}  # one number of a catalog entry
    assert out["run"] == {"steps": 3}
    with pytest.raises(ScenarioError, match=r"^workload\.group_size: 4 is not a section; cannot set"):
        apply_overrides(raw, {"workload.group_size.x": 1})


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
@pytest.mark.parametrize(
    "overrides", [[], ["workload.prompts_per_step=64", "learning.lr0=2e-6", "run.seed=7"]], ids=["as-is", "overridden"]
)
def test_resolved_yaml_round_trips(path, overrides):
    s = load_scenario(path, overrides)
    again = from_dict(yaml.safe_load(dump_yaml(s)))
    assert isinstance(again, Scenario)
    assert again == s
    assert again.digest() == s.digest()
    if overrides:
        assert s.digest() != load_scenario(path).digest()
    # assembled from the sections' kept texts, the digest is the hash of the whole resolved scenario's JSON
    whole = json.dumps(s.to_dict(), sort_keys=True, default=str)
    assert s.digest() == hashlib.sha256(whole.encode()).hexdigest()[:12]


# ------------------------------------------------------------------------------------------------------- property

BASES = {"small_1gpu": _raw(SMALL), "paper_grpo": _raw(PAPER)}

# Non-empty: an empty top-level key is reported with an empty field path (": None is not a known key").
_KEY_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=5)
_KNOWN_KEYS = sorted(
    {
        f.name
        for cls in (
            rlsim.scenario.Scenario,
            rlsim.scenario.Hardware,
            rlsim.scenario.Engine,
            rlsim.scenario.Workload,
            rlsim.scenario.LengthDist,
            rlsim.scenario.Algorithm,
            rlsim.scenario.Schedule,
            rlsim.scenario.Learning,
            rlsim.scenario.Costs,
            rlsim.scenario.Run,
            rlsim.scenario.ModelSpec,
            rlsim.scenario.Drift,
        )
        for f in dataclasses.fields(cls)
    }
    | {"base"}
)
RANDOM_VALUES = st.one_of(
    st.integers(-(10**9), 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(_KEY_TEXT, st.integers(), max_size=2),
)
# Near-valid values, so that mutations also reach the cross-field rules and the simulator.
PLAUSIBLE_VALUES = st.one_of(
    st.integers(0, 64),
    st.sampled_from([0.0, 0.5, 0.95, 1.0, 1.5, 2048, 1e-6, 1e6]),
    st.sampled_from(catalog.model_names() + catalog.gpu_names()),
    st.sampled_from(
        [
            "fixed",
            "uniform",
            "lognormal",
            "empirical",
            "colocated",
            "separate",
            "sync-colocated",
            "sync-separate",
            "async",
            "grpo",
            "ppo",
            "sqrt",
            "linear",
            "none",
            "float8",
            "float32",
        ]
    ),
    st.lists(st.floats(0, 4096), min_size=1, max_size=4),
    st.fixed_dictionaries({"base": st.sampled_from(catalog.model_names() + catalog.gpu_names())}),
)
VALUES = st.one_of(RANDOM_VALUES, PLAUSIBLE_VALUES)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside nested dicts and lists (not the root)."""
    out: list[tuple] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        out.append(prefix + (k,))
        out.extend(_paths(v, prefix + (k,)))
    return out


def _containers(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if isinstance(node, dict) else []
    if isinstance(node, dict):
        for k, v in node.items():
            out.extend(_containers(v, prefix + (k,)))
    return out


def _get(node: Any, path: tuple) -> Any:
    for k in path:
        node = node[k]
    return node


@st.composite
def mutated_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    name = draw(st.sampled_from(sorted(BASES)))
    d = copy.deepcopy(BASES[name])
    if draw(st.booleans()):  # spell the catalog entries out so mutations reach their numbers
        d["model"] = catalog.model(d["model"])
    if draw(st.booleans()):
        d["hardware"]["gpu"] = catalog.gpu(d["hardware"]["gpu"])
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["delete", "add", "replace", "replace"]))
        if op == "add":
            where = draw(st.sampled_from(_containers(d)))
            key = draw(st.one_of(_KEY_TEXT, st.sampled_from(_KNOWN_KEYS), st.integers(-3, 3)))
            _get(d, where)[key] = draw(VALUES)
            continue
        paths = _paths(d)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = _get(d, path[:-1])
        if op == "delete":
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(VALUES)
    note(f"base={name}")
    return d


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(mutated_scenarios())
def test_mutated_scenarios_validate_or_raise_scenario_error(raw):
    note(repr(raw))
    try:
        s = from_dict(raw)
    except ScenarioError as exc:
        event("ScenarioError")
        msg = str(exc)
        assert len(msg.splitlines()) == 1, msg  # any line break (\n, \r, \x85, U+2028, ...) is escaped
        field = str(exc.field)
        assert field, msg
        assert msg.startswith(one_line(f"{field}: ")), msg
        return
    assert isinstance(s, Scenario)
    w, hw = s.workload, s.hardware
    # keep the one-step simulation bounded in time
    if not (
        w.responses_per_step <= 4096
        and w.max_response_tokens <= 20000
        and hw.num_gpus <= 4096
        and s.num_replicas <= 256
        and w.responses_per_step * w.max_response_tokens / min(s.engine.max_num_seqs, w.responses_per_step) <= 5e7
    ):
        event("valid, too big to simulate")
        return
    try:
        result = rlsim.simulate(with_overrides(s, {"run.steps": 1}))
    except (RlsimError, EngineCapacityError) as exc:
        event(f"simulate raised {type(exc).__name__}")
        return
    result.summary()  # what the CLI prints next
    event("simulated")


# ------------------------------------------------------------------------------------------------------- regressions
# Inputs that once escaped validation (plain TypeError/ValueError, or a multi-line message); now ScenarioErrors.


def test_unknown_keys_of_mixed_types_raise_scenario_error():
    raw = _raw(SMALL)
    raw["workload"].update({1: 2, "foo": 3})  # YAML: workload: {1: 2, foo: 3, ...} (was: TypeError from sorted())
    with pytest.raises(ScenarioError, match=r"^workload\.(1|foo): .* is not a known key; use one of"):
        from_dict(raw)
    raw = _raw(SMALL)
    raw[7] = "x"  # a non-string top-level key names itself
    with pytest.raises(ScenarioError, match=r"^7: 'x' is not a known key"):
        from_dict(raw)


@pytest.mark.parametrize(
    "overrides",
    [
        ["workload.response_length.high=1e20"],  # was: numpy "high is out of bounds for int64" in simulate
        ["workload.prompt_length={dist: uniform, low: 0, high: 100000000000000000000}"],
        ["run.seed=100000000000000000000000000000"],
    ],
    ids=["uniform-high-1e20", "prompt-uniform-high-10**20", "seed-10**29"],
)
def test_out_of_range_integers_raise_scenario_error(overrides):
    with pytest.raises(ScenarioError, match=r"must be at most"):
        rlsim.simulate(load_scenario(SMALL, [*overrides, "run.steps=1"]))


def test_overflowing_empirical_weights_raise_scenario_error():
    # their sum overflows to inf; was: numpy "probabilities do not sum to 1" in simulate
    overrides = {
        "workload.response_length": {"dist": "empirical", "bin_edges": [1, 10, 20], "weights": [1e308, 1e308]},
        "run.steps": 1,
    }
    with pytest.raises(ScenarioError, match=r"^workload\.response_length\.weights: .* finite positive sum"):
        rlsim.simulate(load_scenario(SMALL, overrides))


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (_set("workload.a\nb", 3), "workload.a"),
        (_set("workload.a\r\nb", 3), "workload.a"),
        (_all(_set("model", "Llama-3.1-70B"), _set("hardware.gpu", {"base": "L40S", "name": "my\ngpu"})), "model"),
    ],
    ids=["newline-in-key", "crlf-in-key", "newline-in-gpu-name"],
)
def test_error_message_is_one_line_for_any_input(mutate, field):
    raw = _raw(SMALL)
    mutate(raw)
    with pytest.raises(ScenarioError) as info:
        from_dict(raw)
    msg = str(info.value)
    assert msg.startswith(field) and "\n" not in msg and "\r" not in msg, msg


def test_small_metric_exponent_is_refused_with_the_reason():
    with pytest.raises(RlsimError, match="more than 1e30 samples"):
        rlsim.simulate(load_scenario(PAPER, ["learning.metric.exponent=1e-6", "run.steps=1"])).summary()


def test_an_integer_past_the_largest_float_is_not_a_finite_number():
    """YAML reads 1 followed by 400 zeros as an int; as a float field it was an OverflowError traceback (found by
    the fuzz test)."""
    from rlsim.scenario import load_scenario

    with pytest.raises(ScenarioError, match="must be a finite number"):
        load_scenario(SCENARIOS / "small_1gpu.yaml", {"engine.gpu_memory_utilization": 10**400})
