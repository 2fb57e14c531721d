"""The import directions of docs/design.md: rlsim never imports torch, vllm, calibrate or real; calibrate never
imports torch, vllm or real (it runs real's commands as programs); real never imports calibrate (both import
rlsim)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {
    "rlsim": {"torch", "vllm", "calibrate", "real", "transformers"},
    "calibrate": {"torch", "vllm", "real", "transformers"},
    "real": {"calibrate"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_import_directions(package):
    files = list((ROOT / package).rglob("*.py"))
    assert files
    for f in files:
        bad = _imports(f) & FORBIDDEN[package]
        assert not bad, f"{f.relative_to(ROOT)} imports {bad}"


def test_rlsim_has_no_print():
    for f in (ROOT / "rlsim").rglob("*.py"):
        if f.name == "cli.py":
            continue
        calls = [
            n
            for n in ast.walk(ast.parse(f.read_text()))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
        ]
        assert not calls, f"{f.name} prints; the library returns data and the CLI prints"
