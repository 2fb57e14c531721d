"""Fuzzing the three CLIs with damaged inputs: mutated scenarios and logs, truncated, binary, empty, deeply nested
and huge files. Every case must end in exit 0 or a clean exit 2 (an RlsimError's one line, or argparse's usage
error), never an uncaught exception (a traceback); every case that exits 0 with ``--json`` prints strict JSON.

The cases are generated from ``RLSIM_FUZZ_SEED`` (default 0, so a CI run is reproducible; a failure message gives
the case's index and what was mutated) and ``RLSIM_FUZZ_CASES`` (default 2,400 over the three CLIs: rlsim 1,500,
rlsim-calibrate 500, rlsim-real 400). The commands run in-process (``main(argv)``), as a subprocess each would
cost a second of start-up; the simulator's memory limit is set to about 50,000 responses per step so that a
mutation to a huge batch is refused by the footprint check (rlsim.host.footprint) instead of running for minutes.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import random
import traceback
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlsim.host import footprint

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
FIXTURES = ROOT / "tests" / "calibrate" / "fixtures"
SEED = int(os.environ.get("RLSIM_FUZZ_SEED", "0"))
TOTAL = int(os.environ.get("RLSIM_FUZZ_CASES", "2400"))
SHARE = {"rlsim": 1500 / 2400, "rlsim-calibrate": 500 / 2400, "rlsim-real": 400 / 2400}

ODD_VALUES: list[Any] = [
    0, -1, 1, 2, -0.5, 0.5, 1e-308, 1e308, -1e308, 1e30, 2**63, -(2**63), 10**400, float("nan"), float("inf"),
    float("-inf"), True, False, None, "", "x", "0", "1e3", "nan", "🙂", "a" * 5000, [], [1, 2], {}, {"a": 1},
    [[[[[]]]]], "H100-SXM", "fixed", "sqrt", "grpo", "async", 64, 1024, 7.5,
]  # fmt: skip


def _odd(rng: random.Random) -> Any:
    v = rng.choice(ODD_VALUES)
    return rng.uniform(-1e6, 1e6) if rng.random() < 0.1 else v


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value in a nested mapping/list."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _get(node: Any, path: tuple) -> Any:
    for p in path:
        node = node[p]
    return node


def mutate(doc: Any, rng: random.Random, n: int) -> tuple[Any, list[str]]:
    """``n`` random edits of a parsed YAML/JSON document: delete, replace by an odd value, rename a key, add an
    unknown key, move a value from elsewhere, or wrap a value in a list."""
    what = []
    for _ in range(n):
        paths = _paths(doc)
        if not paths:
            doc, _ = {"x": _odd(rng)}, what.append("replaced the document")
            continue
        path = rng.choice(paths)
        parent, key = _get(doc, path[:-1]), path[-1]
        op = rng.choice(("delete", "odd", "odd", "odd", "rename", "add", "move", "wrap"))
        if op == "delete":
            del parent[key]
        elif op == "odd":
            parent[key] = _odd(rng)
        elif op == "rename" and isinstance(parent, dict):
            parent[f"{key}_x" if rng.random() < 0.5 else str(key)[:-1] or "k"] = parent.pop(key)
        elif op == "add" and isinstance(parent, dict):
            parent[rng.choice(("extra", "unknown_key", "seed", "tokens"))] = _odd(rng)
        elif op == "move":
            parent[key] = copy.deepcopy(_get(doc, rng.choice(paths)) if rng.random() < 0.9 else doc)
        else:
            parent[key] = [parent[key]]
        what.append(f"{op} {'.'.join(map(str, path))}")
    return doc, what


def damage_text(text: str, rng: random.Random) -> tuple[bytes, str]:
    """A file-level damage: truncated, bytes flipped, binary, empty, deeply nested, huge, or duplicated."""
    data = text.encode()
    kind = rng.choice(("truncate", "flip", "binary", "empty", "nest", "huge", "double", "nul"))
    if kind == "truncate":
        return data[: rng.randrange(0, max(1, len(data)))], kind
    if kind == "flip":
        b = bytearray(data)
        for _ in range(rng.randint(1, 20)):
            if b:
                b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b), kind
    if kind == "binary":
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 4096))), kind
    if kind == "empty":
        return b"", kind
    if kind == "nest":
        depth = rng.choice((100, 1000, 20000))
        text = "[" * depth + "]" * depth if rng.random() < 0.5 else "a:\n" + "{" * depth
        return text.encode(), kind
    if kind == "huge":
        return data * rng.choice((50, 500)), kind
    if kind == "nul":
        return data.replace(b"\n", b"\n\x00", 1), kind
    return data + data, kind


def _strict(text: str) -> Any:
    def refuse(name: str) -> None:
        raise ValueError(f"non-JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def _call(main, argv: list[str]) -> tuple[int, str, str, str | None]:
    """Run ``main(argv)`` in-process: (exit code, stdout, stderr, traceback of an uncaught exception or None)."""
    out, err = io.StringIO(), io.StringIO()
    tb = None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        rc = exc.code if isinstance(exc.code, int) else 2
    except BaseException:  # noqa: BLE001 - any other escape is the traceback this test exists to find
        rc, tb = -1, traceback.format_exc()
    return rc, out.getvalue(), err.getvalue(), tb


def _check(rc: int, out: str, err: str, tb: str | None, json_out: bool) -> str | None:
    """What is wrong with a case's outcome, or None."""
    if tb is not None:
        return "traceback:\n" + tb[-3000:]
    if "Traceback (most recent call last)" in err:
        return "a traceback on stderr:\n" + err[-3000:]
    if rc not in (0, 2):
        return f"exit {rc}: {err[-500:]}"
    if rc == 2 and not err.strip():
        return "exit 2 without a message"
    if rc == 0 and json_out:
        try:
            _strict(out)
        except ValueError as exc:
            return f"exit 0 but stdout is not strict JSON ({exc}): {out[:300]!r}"
    return None


def _write(path: Path, doc: Any, rng: random.Random, fmt: str) -> str:
    """Write a mutated document as YAML or JSON lines; sometimes damage the file instead."""
    if fmt == "yaml":
        try:
            text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
        except Exception:  # noqa: BLE001 - an unrepresentable mutation: write its repr, also a bad input
            text = repr(doc)
    else:
        text = "\n".join(json.dumps(line, allow_nan=True) for line in doc)
    if rng.random() < 0.15:
        data, kind = damage_text(text, rng)
        path.write_bytes(data)
        return f"file {kind}"
    path.write_text(text)
    return "file intact"


@pytest.fixture(autouse=True)
def _small_memory(monkeypatch):
    # about 50,000 responses per step fit: a mutated huge batch is refused by the footprint check (module docstring)
    monkeypatch.setattr(footprint, "available_bytes", lambda: footprint.BASE_BYTES + footprint.BYTES_PER_RESPONSE * 5e4)


@pytest.fixture
def said_first(monkeypatch):
    """The order of a run's estimate and its simulation, as events (no clock): ``estimate`` when rlsim.cli's
    before-hook gets the footprint and prints it (the README's promise: an estimate on stderr before any run over
    a minute; LONG_S 0 here, so every run's is printed), ``simulate`` when a timeline's pipeline starts."""
    from rlsim import cli
    from rlsim.run import timeline

    events: list[str] = []
    say, pipeline = cli._say_if_long, timeline.run_pipeline
    monkeypatch.setattr(cli, "LONG_S", 0.0)
    monkeypatch.setattr(footprint, "LONG_S", 0.0)

    def said(fp):
        events.append("estimate")
        say(fp)

    def simulated(*args, **kwargs):
        events.append("simulate")
        return pipeline(*args, **kwargs)

    monkeypatch.setattr(cli, "_say_if_long", said)
    monkeypatch.setattr(timeline, "run_pipeline", simulated)
    return events


def _said_first(events: list[str], err: str) -> str | None:
    """What breaks the promise in a run case's events and stderr, or None."""
    if "simulate" not in events:
        return None
    if "estimate" not in events or events.index("estimate") > events.index("simulate"):
        return f"simulated before its estimate (events {events[:4]})"
    if "rlsim: note:" not in err:
        return "no estimate on stderr"
    return None


def _cases(cli: str) -> range:
    return range(max(1, round(TOTAL * SHARE[cli])))


def _rng(cli: str, i: int) -> random.Random:
    return random.Random(f"{SEED}:{cli}:{i}")


def _where(failure: str) -> str:
    """A failure's last frame inside the project and its exception line: how failures are grouped."""
    lines = failure.splitlines()
    frames = [ln.strip() for ln in lines if ln.strip().startswith('File "') and "/site-packages/" not in ln]
    return (frames[-1] if frames else "") + " -> " + (lines[-1] if lines else "")


def _fail(failures: list[str], cli: str, n: int) -> None:
    groups: dict[str, list[str]] = {}
    for f in failures:
        groups.setdefault(_where(f), []).append(f)
    summary = "\n".join(f"  {len(v)} x {k}" for k, v in groups.items())
    head = f"{len(failures)} of {n} {cli} fuzz cases failed (RLSIM_FUZZ_SEED={SEED}), by place:\n{summary}"
    assert not failures, head + "\nfirst of each:\n" + "\n\n".join(v[0][-2500:] for v in groups.values())


def _report_count(cli: str, n: int, outcomes: dict[int, int]) -> None:
    print(f"fuzz {cli}: {n} cases, exit codes {dict(sorted(outcomes.items()))}")  # shown with -s / in -rA


@pytest.mark.slow
def test_fuzz_rlsim(tmp_path, said_first):
    from rlsim import cli

    docs = [(p, yaml.safe_load(p.read_text())) for p in SCENARIOS]
    weights = [1 if "paper" in p.name else 3 for p, _ in docs]  # the paper's scenario is the slowest to simulate
    failures, outcomes = [], {}
    cases = _cases("rlsim")
    for i in cases:
        rng = _rng("rlsim", i)
        src, doc = rng.choices(docs, weights)[0]
        doc, what = mutate(json.loads(json.dumps(doc)), rng, rng.choice((1, 1, 1, 2, 3)))
        path = tmp_path / f"s{i}.yaml"
        what.append(_write(path, doc, rng, "yaml"))
        roll = rng.random()
        if roll < 0.8:
            argv = ["run", str(path), "--json", "--set", "run.steps=2", "--set", "run.until_target=false"]
            if rng.random() < 0.2:
                key = rng.choice(["workload.prompts_per_step", "workload.group_size", "run.seed", "engine.max_num_seqs",
                                  "learning.target", "hardware.num_gpus", "nope.key", "workload"])  # fmt: skip
                argv += ["--set", f"{key}={rng.choice(['0', '-3', '1e400', 'nan', 'abc', '', '[1', '5', '1e9'])}"]
            elif rng.random() < 0.03:  # the extremes: huge groups, a slow device with a small cache
                argv += [
                    "--set",
                    f"workload.group_size={rng.choice([2000, 100000])}",
                    "--set",
                    "hardware.gpu=CPU-2core",
                ]
        elif roll < 0.9:
            candidate = rng.choice(["workload.prompts_per_step=32", "x=1", "workload.group_size=0", "=",
                                    "learning.lr_rule=cubic", "workload.prompts_per_step=32,run.seed=1"])  # fmt: skip
            argv = ["decide", str(path), "--baseline", "workload.prompts_per_step=16", "--json", "--set", "run.steps=2",
                    "--candidate", candidate]  # fmt: skip
        elif roll < 0.92:  # a small plan: 3 LR rules x the async pool splits at one P and TP, no finalists
            argv = ["plan", str(path), "--json", "--grid", "workload.prompts_per_step=16", "--schedules", "async-1",
                    "--grid", "engine.tensor_parallel_size=1", "--finalists", "0", "--workers", "1"]  # fmt: skip
            if rng.random() < 0.3:
                argv += rng.choice([["--price", "H100-SXM=abc"], ["--deadline-h", "-1"], ["--objective", "cost"],
                                    ["--gpu-types", "Z80"], ["--max-gpus", "0"], ["--grid", "nope.key=1"]])  # fmt: skip
        else:
            out = tmp_path / f"r{i}"
            argv = ["run", str(src), "--set", "run.steps=2", "--set", "run.until_target=false", "-o", str(out)]
            rc, *_ = _call(cli.main, argv)
            victim = rng.choice(sorted(out.iterdir())) if rc == 0 and out.is_dir() else None
            if victim is not None:
                data, kind = damage_text(victim.read_text(errors="replace"), rng)
                victim.write_bytes(data)
                what.append(f"{kind} {victim.name}")
            argv = ["report", str(out), "-o", str(tmp_path / f"r{i}.html")]
        said_first.clear()
        rc, stdout, err, tb = _call(cli.main, argv)
        outcomes[rc] = outcomes.get(rc, 0) + 1
        problem = _check(rc, stdout, err, tb, "--json" in argv)
        if problem is None and argv[0] == "run":  # a long run says so first: the estimate, before any step
            problem = _said_first(said_first, err)
        if problem:
            failures.append(f"case {i} ({src.name}: {'; '.join(what)}; argv {argv[:1] + argv[2:]}): {problem}")
    _report_count("rlsim", len(cases), outcomes)
    _fail(failures, "rlsim", len(cases))


def _log_lines(path: Path) -> list[Any]:
    if path.suffix == ".csv":
        import csv

        with path.open() as f:
            return list(csv.DictReader(f))
    out = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(json.JSONDecodeError):  # the verl fixture has a broken line on purpose
            out.append(json.loads(line))
    return out


def test_fuzz_rlsim_calibrate(tmp_path):
    from calibrate import cli

    sources = {
        "verl": FIXTURES / "verl_grpo.jsonl",
        "openrlhf": FIXTURES / "openrlhf.jsonl",
        "trl": FIXTURES / "trl.csv",
        "nemo-rl": FIXTURES / "nemo_rl.jsonl",
    }
    logs = {k: _log_lines(p) for k, p in sources.items()}
    failures, outcomes = [], {}
    cases = _cases("rlsim-calibrate")
    for i in cases:
        rng = _rng("rlsim-calibrate", i)
        fmt = rng.choice(sorted(sources))
        lines, what = mutate(json.loads(json.dumps(logs[fmt])), rng, rng.randint(1, 4))
        path = tmp_path / f"l{i}{sources[fmt].suffix}"
        if sources[fmt].suffix == ".csv" and isinstance(lines, list) and all(isinstance(r, dict) for r in lines):
            import csv

            cols = sorted({str(k) for r in lines for k in r})
            with path.open("w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
                w.writeheader()
                w.writerows({str(k): v for k, v in r.items()} for r in lines)
            if rng.random() < 0.15:
                data, kind = damage_text(path.read_text(), rng)
                path.write_bytes(data)
                what.append(f"file {kind}")
        else:
            what.append(_write(path, lines if isinstance(lines, list) else [lines], rng, "jsonl"))
        argv = ["import", str(path), "--format", fmt, "-o", str(tmp_path / f"o{i}.jsonl")]
        if rng.random() < 0.3:
            argv += [rng.choice(["--prompts-per-step", "--group-size"]), rng.choice(["0", "-1", "8", "x", "1e9"])]
        rc, stdout, err, tb = _call(cli.main, argv)
        outcomes[rc] = outcomes.get(rc, 0) + 1
        problem = _check(rc, stdout, err, tb, False)
        if problem:
            failures.append(f"case {i} ({fmt}: {'; '.join(what)}; argv {argv}): {problem}")
    _report_count("rlsim-calibrate", len(cases), outcomes)
    _fail(failures, "rlsim-calibrate", len(cases))


VLLM_LATENCY = {"avg_latency": 1.5, "latencies": [1.4, 1.5, 1.6], "percentiles": {"50": 1.5}}
VLLM_THROUGHPUT = {
    "model_id": "HuggingFaceTB/SmolLM2-135M",
    "elapsed_time": 10.0,
    "num_requests": 100,
    "total_num_tokens": 50000,
    "requests_per_second": 10.0,
    "tokens_per_second": 5000.0,
}


def test_fuzz_rlsim_real(tmp_path):
    from real import cli

    failures, outcomes = [], {}
    cases = _cases("rlsim-real")
    for i in cases:
        rng = _rng("rlsim-real", i)
        files, what = [], []
        kinds = [("latency_bs8_in32_out128.json", VLLM_LATENCY), ("throughput.json", VLLM_THROUGHPUT)]
        for j, (name, doc) in enumerate(rng.sample(kinds, rng.randint(1, 2))):
            doc, w = mutate(json.loads(json.dumps(doc)), rng, rng.randint(1, 3))
            path = tmp_path / f"{i}_{j}_{name}"
            text = json.dumps(doc, allow_nan=True)
            if rng.random() < 0.2:
                data, kind = damage_text(text, rng)
                path.write_bytes(data)
                w.append(f"file {kind}")
            else:
                path.write_text(text)
            files.append(str(path))
            what += w
        argv = ["import-vllm-bench", *files, "-o", str(tmp_path / f"t{i}")]
        rc, stdout, err, tb = _call(cli.main, argv)
        outcomes[rc] = outcomes.get(rc, 0) + 1
        problem = _check(rc, stdout, err, tb, False)
        if problem:
            failures.append(f"case {i} ({'; '.join(what)}): {problem}")
    _report_count("rlsim-real", len(cases), outcomes)
    _fail(failures, "rlsim-real", len(cases))


def test_the_mutator_changes_documents_and_is_reproducible():
    """The harness itself: a case is the same for a seed, different across cases, and a mutation changes the
    document (a fuzz test that mutated nothing would pass vacuously)."""
    doc = yaml.safe_load(SCENARIOS[0].read_text())
    a = mutate(json.loads(json.dumps(doc)), random.Random("0:x:1"), 2)
    b = mutate(json.loads(json.dumps(doc)), random.Random("0:x:1"), 2)
    c = mutate(json.loads(json.dumps(doc)), random.Random("0:x:2"), 2)
    assert repr(a) == repr(b) and repr(a) != repr(c)
    changed = sum(repr(mutate(json.loads(json.dumps(doc)), random.Random(i), 1)[0]) != repr(doc) for i in range(50))
    assert changed >= 40


class _Stop(Exception):
    pass


def test_a_long_run_says_so_before_it_starts(monkeypatch, capsys):
    """The issue's case: 100,000 responses per prompt ran past a minute with nothing on stderr (its engine thrashes,
    and the plain rate per response said 28 s). Its estimate, with rlsim.run.probe's measured rate, is printed
    before the first step is simulated; the simulation is stopped there, so no clock is read here."""
    from rlsim import cli
    from rlsim.run import timeline

    monkeypatch.setattr(footprint, "available_bytes", lambda: 64 * 2**30)
    events: list[str] = []
    monkeypatch.setattr(timeline, "run_pipeline", lambda *a, **k: (events.append("simulate"), _raise())[1])
    say = cli._say_if_long
    monkeypatch.setattr(cli, "_say_if_long", lambda fp: (events.append(fp.seconds), say(fp)))
    argv = ["run", str(ROOT / "scenarios" / "paper_grpo.yaml"), "--set", "workload.group_size=100000"]
    with pytest.raises(_Stop):
        cli.main(argv)
    assert events[-1] == "simulate" and isinstance(events[0], float) and events[0] > footprint.LONG_S
    assert "rlsim: note: 12,800,000 responses per step" in capsys.readouterr().err
    # the plain rate alone (128 x 100,000 responses, the run's 24 steps and its band's) says under a minute
    assert footprint.estimate(12_800_000, 24).seconds < footprint.LONG_S


def _raise():
    raise _Stop
