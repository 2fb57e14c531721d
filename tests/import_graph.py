"""The import graph of rlsim, calibrate and real, read from the source with ast (nothing is imported).

Each module's edges are the project modules it imports, with where the import stands: ``module`` (run when the
module is imported), ``type`` (under ``if TYPE_CHECKING:``) or ``function`` (run when the function is called).
``from a.b import c`` names module ``a.b.c`` when that is a module, else ``a.b`` (its ``__init__``); importing a
package runs its ``__init__``, so a package's own imports of its submodules are edges too.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from keyword import iskeyword
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("rlsim", "calibrate", "real")


@dataclass(frozen=True)
class Import:
    target: str  # a project module (dotted), or a third-party top-level name
    where: str  # module, type or function
    line: int
    internal: bool


@cache
def modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).rglob("*.py")):
            name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = p
    return out


def _resolve(name: str) -> str | None:
    mods = modules()
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for child in node.body:
                lines |= set(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


@cache
def imports(module: str) -> tuple[Import, ...]:
    """Every import of ``module``, in source order."""
    path = modules()[module]
    tree = ast.parse(path.read_text())
    typed = _type_checking_lines(tree)
    out: list[Import] = []

    def add(names: list[str], node: ast.stmt, where: str) -> None:
        for n in names:
            target = _resolve(n)
            if target is not None and target != module:
                out.append(Import(target, where, node.lineno, True))
            elif target is None:
                out.append(Import(n.split(".")[0], where, node.lineno, False))

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                where = "function" if in_function else "type" if child.lineno in typed else "module"
                if isinstance(child, ast.Import):
                    add([a.name for a in child.names], child, where)
                else:
                    base = child.module or ""
                    if child.level:
                        pkg = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                        pkg = pkg[: len(pkg) - child.level + 1]
                        base = ".".join(pkg + ([base] if base else []))
                    mods = modules()
                    add([f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in child.names], child, where)
            visit(child, inner)

    visit(tree, False)
    return tuple(out)


KINDS = ("module", "type", "function")


def graph(kinds: tuple[str, ...] = KINDS) -> dict[str, set[str]]:
    """Module -> the project modules it imports, counting the imports of the given kinds, with the packages whose
    ``__init__`` such an import runs first (the target's parents, but for the importing module's own)."""
    out: dict[str, set[str]] = {}
    for m in modules():
        own = {".".join(m.split(".")[:k]) for k in range(1, m.count(".") + 1)}
        edges: set[str] = set()
        for i in imports(m):
            if i.internal and i.where in kinds:
                parts = i.target.split(".")
                edges |= {i.target} | {".".join(parts[:k]) for k in range(1, len(parts))} - own - {m}
        out[m] = {e for e in edges if e in modules()}
    return out


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(g.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def loaded_by(module: str) -> set[str]:
    """What importing ``module`` runs: the project modules and third-party top-level names reached through
    module-level imports, with each module's parent packages (their ``__init__`` runs first)."""
    seen: set[str] = set()
    third: set[str] = set()
    todo = [module]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        parts = m.split(".")
        todo += [".".join(parts[:k]) for k in range(1, len(parts)) if ".".join(parts[:k]) in modules()]
        for i in imports(m):
            if i.where != "module":
                continue
            if i.internal:
                todo.append(i.target)
            else:
                third.add(i.target)
    return seen | third


# What a module's import may defer to the first call that needs it: third-party packages that take tens of
# milliseconds to import (python -X importtime on the development VM: torch 3.5 s, transformers 2.5 s, gguf 1.5 s,
# numba 0.68 s, pandas 0.64 s, scipy 0.19 s, numpy 93 ms, ray 74 ms, simpy 40 ms, tqdm 38 ms, plotly 25 ms, yaml
# 19 ms), and rlsim.frameworks (every adapter and its mapping tables, 54 ms), which `rlsim run` never needs.
HEAVY_PACKAGES = frozenset(
    {"numpy", "pandas", "scipy", "simpy", "numba", "plotly", "tqdm", "ray", "torch", "transformers", "gguf", "vllm"}
    | {"kaleido", "accelerate", "tokenizers", "pyarrow", "yaml", "hypothesis", "matplotlib"}
)
HEAVY_MODULES = ("rlsim.frameworks",)


def heavy(names: set[str]) -> set[str]:
    """The heavy packages (and project packages) among loaded ``names``."""
    out = {n for n in names if n in HEAVY_PACKAGES}
    return out | {h for h in HEAVY_MODULES for n in names if n == h or n.startswith(h + ".")}


def optional_import_lines(module: str) -> set[int]:
    """Lines of imports guarded by ``except ImportError`` (an optional dependency, deferred by design)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(modules()[module].read_text())):
        if isinstance(node, ast.Try):
            caught = set()
            for handler in node.handlers:
                kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
                caught |= {k.id for k in kinds if isinstance(k, ast.Name)}
            if caught & {"ImportError", "ModuleNotFoundError"}:
                for child in node.body:
                    lines |= set(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def deferred_for_nothing(module: str) -> list[str]:
    """The function-level imports of ``module`` that keep nothing heavy out of its import, or say nothing of why:
    each as ``module:line target (what it defers)``."""
    source = modules()[module].read_text().splitlines()
    base = loaded_by(module)
    optional = optional_import_lines(module)
    found = []
    by_line: dict[int, set[str]] = {}
    for i in imports(module):
        if i.where == "function" and i.line not in optional:
            added = loaded_by(i.target) - base if i.internal else {i.target} - base
            by_line.setdefault(i.line, set()).update(heavy(added))
    for line, kept_out in sorted(by_line.items()):
        said = "#" in source[line - 1] or _comment_over_block(source, line)
        if not kept_out or not said:
            why = f"keeps out {', '.join(sorted(kept_out))}, unsaid" if kept_out else "keeps nothing heavy out"
            found.append(f"{module}:{line} {source[line - 1].strip()} ({why})")
    return found


def _comment_over_block(source: list[str], line: int) -> bool:
    """Whether a comment stands over the block of imports that holds line ``line`` (1-based): the lines above it
    that are imports, their parenthesized names or blank are the block; the line above the block is the comment."""
    k = line - 2
    while k >= 0:
        text = source[k].strip()
        name = text.rstrip(",")  # a name inside an import's parentheses, never a statement such as `pass`
        in_parentheses = text == ")" or (name.isidentifier() and not iskeyword(name))
        if text.startswith(("from ", "import ")) or not text or in_parentheses:
            k -= 1
            continue
        return text.startswith("#")
    return False
