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


# rlsim's layers, lowest first (docs/design.md, "Layout of rlsim"): a package may import its own modules and those
# of the packages listed for it, never a layer above. The top-level modules errors and phases are below everything.
# Imports for annotations only (under ``if TYPE_CHECKING:``) do not count: the engine, workload and trainer models
# take a scenario as an argument, and the scenario's validation asks the trainer's memory model whether it fits.
RLSIM_LAYERS = {
    "host": set(),
    "io": set(),
    "workload": set(),
    "engine": {"host"},
    "catalog": {"io"},
    "trainer": {"workload"},
    "scenario": {"catalog", "engine", "io", "trainer", "workload"},
    "learning": {"catalog", "engine", "io", "scenario", "workload"},
    "run": {"host", "io", "workload", "engine", "catalog", "trainer", "scenario", "learning"},
    "frameworks": {"host", "io", "workload", "engine", "catalog", "trainer", "scenario", "learning"},
    "answers": {"host", "io", "workload", "engine", "catalog", "trainer", "scenario", "learning", "run"},
    "plan": {"host", "io", "workload", "engine", "catalog", "trainer", "scenario", "learning", "run", "answers"}
    | {"frameworks"},
}
BASE = {"errors", "phases", "__version__"}


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for child in node.body:
                lines |= set(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _rlsim_imports(path: Path) -> set[str]:
    """The rlsim packages (or top-level modules) a file imports at run time, by the first name after ``rlsim.``."""
    tree = ast.parse(path.read_text())
    annotations_only = _type_checking_lines(tree)
    names = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in annotations_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "rlsim":
            parts = node.module.split(".")
            names |= {a.name for a in node.names} if len(parts) == 1 else {parts[1]}
        elif isinstance(node, ast.Import):
            names |= {a.name.split(".")[1] for a in node.names if a.name.startswith("rlsim.")}
    return names


def test_rlsim_is_packages_not_a_flat_folder():
    top = sorted(p.name for p in (ROOT / "rlsim").glob("*.py"))
    assert top == ["__init__.py", "cli.py", "errors.py", "phases.py"]
    assert set(RLSIM_LAYERS) == {p.name for p in (ROOT / "rlsim").iterdir() if (p / "__init__.py").exists()}


@pytest.mark.parametrize("package", sorted(RLSIM_LAYERS))
def test_rlsim_layers(package):
    allowed = RLSIM_LAYERS[package] | BASE | {package}
    for f in (ROOT / "rlsim" / package).rglob("*.py"):
        bad = _rlsim_imports(f) - allowed
        assert not bad, f"{f.relative_to(ROOT)} imports rlsim.{sorted(bad)}: above its layer ({package})"


def test_each_package_says_what_it_owns_and_may_import():
    for package in RLSIM_LAYERS:
        doc = ast.get_docstring(ast.parse((ROOT / "rlsim" / package / "__init__.py").read_text())) or ""
        assert len(doc) > 80, f"rlsim/{package}/__init__.py has no docstring saying what it owns"


def test_no_rlsim_module_over_500_lines_nor_function_over_80_but_the_kernel():
    """Issue 31's size rule, over rlsim/: a module someone can read in one sitting, a function on one screen. The
    kernel (rlsim/engine/kernel.py) is exempt: numba compiles its helpers inlined into one event loop."""
    long = []
    for f in (ROOT / "rlsim").rglob("*.py"):
        if f.name == "kernel.py":
            continue
        text = f.read_text()
        if len(text.splitlines()) > 500:
            long.append(f"{f.relative_to(ROOT)}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                long.append(f"{f.relative_to(ROOT)}: {node.name} {node.end_lineno - node.lineno + 1} lines")
    assert not long, "over the size rule: " + "; ".join(long)
