"""Wrong files given to the three CLIs: one line naming the file and the fix, exit 2, no traceback (issue 13's
list: binary and non-UTF-8 inputs, header-only and non-numeric bench tables, a run directory that is a file)."""

import subprocess
import sys

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
