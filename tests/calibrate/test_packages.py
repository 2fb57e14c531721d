"""calibrate's packages: its top level holds only the command line and packages, and every package's docstring
names its modules and states what they may import (``May import: ...``, the grammar in calibrate/__init__.py),
checked here against every import of every module: at module level, under TYPE_CHECKING and inside functions
(tests/import_graph.py). Cycles between modules and deferred imports are tests/test_layout.py's, over every package."""

import ast
import re
from pathlib import Path

import pytest

from tests import import_graph

ROOT = Path(__file__).resolve().parents[2]
CALIBRATE = ROOT / "calibrate"
FIRST_PARTY = ("calibrate", "rlsim", "real")
TOP_LEVEL_FILES = {"__init__.py", "cli.py", "__main__.py"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for root in FIRST_PARTY for p in (ROOT / root).rglob("*.py")}
PACKAGES = sorted(_module_name(p) for p in CALIBRATE.rglob("__init__.py"))


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every first-party module ``path`` imports (module level, TYPE_CHECKING, functions), with its line."""
    return [(i.line, i.target) for i in import_graph.imports(_module_name(path)) if i.internal]


def _own_modules(package: str) -> dict[str, Path]:
    """The modules of ``package`` itself (its __init__ and the .py files beside it), not its subpackages'."""
    folder = ROOT.joinpath(*package.split("."))
    return {_module_name(p): p for p in sorted(folder.glob("*.py"))}


def _statement(package: str) -> tuple[str, list[str]]:
    """The package's docstring and the names of its ``May import:`` paragraph."""
    doc = ast.get_docstring(ast.parse(ROOT.joinpath(*package.split("."), "__init__.py").read_text())) or ""
    found = re.search(r"^May import:(.*?)(?:\n\s*\n|\Z)", doc, re.S | re.M)
    assert found, f"{package}/__init__.py: its docstring states no 'May import: NAME, NAME, ...'"
    names = [n.strip() for n in found.group(1).replace("\n", " ").split(",") if n.strip()]
    return doc, names


def _allowed(target: str, package: str, names: list[str]) -> bool:
    if target == package or (package != "calibrate" and target.startswith(package + ".")):
        return True  # the package's own modules
    if package == "calibrate" and target in _own_modules("calibrate"):
        return True
    return any(target == n or (n != "calibrate" and target.startswith(n + ".")) for n in names)


def test_top_level_holds_only_the_command_line_and_packages():
    extra = []
    for entry in sorted(CALIBRATE.iterdir()):
        if entry.name.startswith(".") or entry.name == "__pycache__":
            continue
        if entry.is_dir() and not (entry / "__init__.py").is_file():
            extra.append(f"{entry.name}/ (a folder that is not a package)")
        elif entry.is_file() and entry.name not in TOP_LEVEL_FILES:
            extra.append(entry.name)
    assert not extra, f"calibrate/ holds {', '.join(extra)}: put it in the package of its topic"


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_names_its_modules(package):
    doc, names = _statement(package)
    for name in names:
        assert name in MODULES and name != package, f"{package}: 'May import: {name}' names no other module"
    folder = ROOT.joinpath(*package.split("."))
    parts = [p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__")]
    parts += [d.name for d in folder.iterdir() if (d / "__init__.py").is_file()]
    unnamed = sorted(p for p in parts if f"``{p}``" not in doc)
    assert not unnamed, f"{package}/__init__.py does not say what its {', '.join(unnamed)} hold(s) (as ``name``)"


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_imports_only_what_it_states(package):
    _, names = _statement(package)
    bad = [
        f"{path.relative_to(ROOT)}:{line} imports {target}"
        for path in _own_modules(package).values()
        for line, target in _imports(path)
        if not _allowed(target, package, names)
    ]
    assert not bad, f"{package} may import {', '.join(names)}; but\n" + "\n".join(bad)


def test_the_root_module_is_at_the_bottom_and_the_statements_draw_no_cycle():
    root = [t for _, t in _imports(CALIBRATE / "__init__.py") if t.startswith("calibrate")]
    assert not root, f"calibrate/__init__.py imports {root}: every package imports it, so it imports none of them"
    graph = {
        p: {n for n in _statement(p)[1] if n in PACKAGES and n != "calibrate"} for p in PACKAGES if p != "calibrate"
    }
    done: set[str] = set()

    def visit(p: str, path: list[str]) -> None:
        assert p not in path, f"the packages' statements draw a cycle: {' -> '.join([*path[path.index(p) :], p])}"
        if p not in done:
            for q in sorted(graph[p]):
                visit(q, [*path, p])
            done.add(p)

    for p in sorted(graph):
        visit(p, [])
