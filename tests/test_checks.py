"""What a reviewer checks before reading a change, run by the README's test command (and so by CI): ruff's lint
and format rules (pyproject.toml [tool.ruff]) over the whole tree, and mypy over the schema, scenario, run and plan
layers (pyproject.toml [tool.mypy]). The import cycles and layers are tests/test_layout.py's."""

import subprocess
import sys

import pytest

from tests.conftest import ROOT


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_ruff_lint_passes():
    out = _run("ruff", "check", ".")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_ruff_format_leaves_every_file_as_it_is():
    out = _run("ruff", "format", "--check", ".")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


@pytest.mark.slow
def test_mypy_passes_on_the_typed_layers():
    out = _run("mypy")
    assert out.returncode == 0 and "Success" in out.stdout, out.stdout[-6000:] + out.stderr[-2000:]
