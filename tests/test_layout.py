"""The import directions of docs/design.md: rlsim never imports torch, vllm, calibrate or real; calibrate never
imports torch, vllm or real (it runs real's commands as programs); real never imports calibrate (both import
rlsim)."""

import ast
import re
from pathlib import Path

import pytest

from tests import import_graph

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
# of the packages listed for it, never a layer above, with any import (module level, under TYPE_CHECKING or inside a
# function). The schema (the scenario as pure data) is below every layer that reads it; the top-level modules errors
# and phases are below everything.
RLSIM_LAYERS = {
    "schema": set(),
    "host": set(),
    "io": set(),
    "workload": {"schema"},
    "engine": {"host"},
    "catalog": {"io"},
    "trainer": {"schema", "workload"},
    "scenario": {"schema", "catalog", "engine", "io", "trainer", "workload"},
    "learning": {"schema", "catalog", "engine", "io", "workload"},
    "run": {"schema", "host", "io", "workload", "engine", "catalog", "trainer", "scenario", "learning"},
    "frameworks": {"schema", "host", "io", "workload", "engine", "catalog", "trainer", "scenario", "learning"},
    "answers": {"schema", "host", "io", "workload", "engine", "catalog", "trainer", "scenario", "learning", "run"},
    "plan": {"schema", "host", "io", "workload", "engine", "catalog", "trainer", "scenario", "learning", "run"}
    | {"answers", "frameworks"},
}
BASE = {"errors", "phases", "__version__"}


def _rlsim_imports(path: Path) -> set[str]:
    """The rlsim packages (or top-level modules) a file imports, by the first name after ``rlsim.``: every import,
    at module level, under ``if TYPE_CHECKING:`` or inside a function."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
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
    """Each package's docstring says what it owns, and its ``May import:`` paragraph names exactly the layers of the
    table above (the table is checked against the imports by test_rlsim_layers)."""
    for package, layers in RLSIM_LAYERS.items():
        doc = ast.get_docstring(ast.parse((ROOT / "rlsim" / package / "__init__.py").read_text())) or ""
        assert len(doc) > 80, f"rlsim/{package}/__init__.py has no docstring saying what it owns"
        found = re.search(r"^May import:(.*?)(?:\n\s*\n|\Z)", doc, re.S | re.M)
        assert found, f"rlsim/{package}/__init__.py: no 'May import: rlsim.x, ...' paragraph"
        stated = set(re.findall(r"rlsim\.(\w+)", found.group(1))) - BASE
        assert stated == layers, f"rlsim/{package} states it may import {sorted(stated)}; its layers: {sorted(layers)}"


def test_no_import_cycles_between_modules():
    """No two modules of rlsim, calibrate or real import each other, directly or through others, by any import: at
    module level, under TYPE_CHECKING or inside a function (a package's ``__init__`` counts as a module)."""
    found = import_graph.cycles(import_graph.graph())
    assert not found, "modules that import each other: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_cycle_check_sees_each_kind_of_import():
    """The checker itself: a loop is a cycle; the graph it checks counts every kind of import, and an import runs
    its target's parent packages' ``__init__`` first."""
    assert import_graph.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_graph.cycles({"a": {"b"}, "b": set()}) == []
    whole = import_graph.graph()
    for kind in import_graph.KINDS:  # each kind adds edges the other two do not
        others = import_graph.graph(tuple(k for k in import_graph.KINDS if k != kind))
        assert any(whole[m] - others[m] for m in whole), f"no edge comes from {kind} imports alone"
    # rlsim.run.simulation imports rlsim.learning.curve, .model and .target: rlsim.learning's __init__ runs first
    assert "rlsim.learning" in whole["rlsim.run.simulation"]


def test_function_level_imports_keep_start_up_fast_and_say_so():
    """An import inside a function defers its work to the first call: worth it only where it keeps something heavy
    out of the module's import (tests/import_graph.py, HEAVY_PACKAGES), and then a comment says so. Any other belongs
    at the top, where the reader sees what the module depends on. Optional dependencies (``except ImportError``)
    are deferred by design."""
    found = [f for m in import_graph.modules() for f in import_graph.deferred_for_nothing(m)]
    assert not found, "function-level imports to move to the top or to explain:\n" + "\n".join(found)


def test_the_deferral_check_tells_heavy_from_light():
    assert import_graph.heavy({"pandas", "json", "rlsim.run.profile"}) == {"pandas"}
    assert import_graph.heavy({"rlsim.frameworks.verl.mapping"}) == {"rlsim.frameworks"}
    assert "pandas" in import_graph.loaded_by("rlsim.answers.sweep")
    # importing a module runs its parents' __init__ first: rlsim's loads the scenario (YAML), never a table
    assert import_graph.heavy(import_graph.loaded_by("rlsim.errors")) == {"yaml"}
    assert "pandas" not in import_graph.loaded_by("rlsim.run.simulation")


def test_no_module_over_800_lines_nor_function_over_80_but_the_kernel():
    """A cap for the reviewer's eye: a module of rlsim/, calibrate/ or real/ past 800 lines is probably more than one
    concept, a function of rlsim/ past 80 lines more than one screen. Modules are split by concept, never to pass
    the count. The kernel (rlsim/engine/kernel.py) is exempt: numba compiles its helpers inlined into one loop."""
    long = []
    for f in [p for pkg in ("rlsim", "calibrate", "real") for p in (ROOT / pkg).rglob("*.py")]:
        if f.name == "kernel.py":
            continue
        text = f.read_text()
        if len(text.splitlines()) > 800:
            long.append(f"{f.relative_to(ROOT)}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)) if f.is_relative_to(ROOT / "rlsim") else ():
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                long.append(f"{f.relative_to(ROOT)}: {node.name} {node.end_lineno - node.lineno + 1} lines")
    assert not long, "over the size rule: " + "; ".join(long)
