"""A launch script as bash's own grammar reads it: tree-sitter with tree-sitter-bash (parsed, never run).

Why this grammar: tree-sitter-bash (github.com/tree-sitter/tree-sitter-bash, 0.25) is the bash grammar editors
and GitHub's code navigation use, maintained, with wheels for every platform on PyPI. Over the launch scripts of
verl v0.7.0 (``examples/**/*.sh``, 129 files), OpenRLHF v0.11.0 (``examples/scripts``, 17) and slime v0.3.1
(``scripts/*.sh``, 68) it parses 213 of 214 without an error node (the one: a slurm script with an unbalanced
here-string), and 139 of 139 of verl's newest (b178a3c). ``bashlex`` (a port of bash's own parser) fails on 97 of
the 214: it has no arrays (``A=(...)``) and raises NotImplementedError on ``$((...))`` and ``case`` items, which
launch scripts are made of.
"""

from __future__ import annotations

from functools import lru_cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


def parse(text: str) -> Node:
    """The script's syntax tree (``program``); a part bash's grammar cannot read is an ``ERROR`` node in it."""
    return _parser().parse(text.encode("utf-8", "surrogateescape")).root_node


def text_of(node: Node) -> str:
    return node.text.decode("utf-8", "surrogateescape") if node.text is not None else ""


def line_of(node: Node) -> int:
    return node.start_point[0] + 1


def errors(root: Node) -> list[Node]:
    """The parts of the tree the grammar could not read (outermost first)."""
    out: list[Node] = []
    if not root.has_error:
        return out
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            out.append(node)
            continue
        if node.has_error:
            stack.extend(reversed(node.children))
    return out


def variable_names(root: Node) -> set[str]:
    """Every name the script assigns or expands (``variable_name`` nodes), not words that merely look alike
    (``--num_generations=8``, ``rollout.n=5``)."""
    out: set[str] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "variable_name":
            out.add(text_of(node))
        stack.extend(node.children)
    return out
