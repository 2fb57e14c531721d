"""How a branch is decided or merged (:mod:`rlsim.frameworks.shell.evaluate` runs the statements): ``test`` /
``[ ]`` / ``[[ ]]`` over expanded words (bash manual 6.4 Bash Conditional Expressions; a file test is never
decided), and the merge of the states that the branches of an undecided condition leave (a variable, function or
framework command they make differently becomes an Unknown naming the condition and the values).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rlsim.frameworks.shell.expand import Refused, State, Unknown, matches


@dataclass(frozen=True)
class Launch:
    """A framework command the script runs: its words and the unknowns in them; ``branch`` when branches the
    script cannot decide run different commands (the reason)."""

    words: tuple[str, ...]
    unknowns: tuple[Unknown, ...] = ()
    branch: Unknown | None = None


def _why(unknowns: list[Unknown], roots: tuple[str, ...]) -> str:
    texts = list(dict.fromkeys(u.text if len(u.text) < 160 else u.text[:157] + "..." for u in unknowns))
    return "; ".join(texts[:2]) or "a value rlsim cannot know"


def _merge(results: list[State], what: str, line: int, why: str, roots: tuple[str, ...], base: State) -> State:
    out = results[0]
    if len(results) == 1:
        return out
    names = set().union(*(set(r.vars) | set(r.unknown) for r in results))
    for name in names:
        values = [(r.unknown.get(name, r.vars.get(name)), r.taint.get(name)) for r in results]
        if all(v == values[0] for v in values):
            continue
        shown = " or ".join(dict.fromkeys(_show(v) for v, _ in values))
        text = f"{name} is {shown} depending on {what} (line {line}), where {why}"
        out.vars.pop(name, None)
        out.taint.pop(name, None)
        shown_values = tuple(
            x for v, _ in values for x in (v.values if isinstance(v, Unknown) else (v if isinstance(v, str) else "",))
        )
        out.unknown[name] = Unknown("branch", text, roots, shown_values)
    for k in set().union(*(set(r.functions) for r in results)):
        if any(r.functions.get(k) != out.functions.get(k) for r in results):
            out.functions[k] = Unknown("branch", f"function {k} differs by {what} (line {line}), where {why}", roots)
    for r in results[1:]:
        out.exported |= r.exported
    if any(r.doubt is not None for r in results):
        out.doubt = next(r.doubt for r in results if r.doubt is not None)
    launches = [r.found for r in results]
    if any(f != launches[0] for f in launches):
        ran = [f for f in launches if f is not None and f != base.found] or [f for f in launches if f is not None]
        if len(set(ran)) == 1 and all(f in (None, base.found, ran[0]) for f in launches) and base.found is None:
            out.found = ran[0]
        else:
            out.found = Launch(
                (), (), Unknown("branch", f"the command it runs depends on {what} (line {line}), where {why}", roots)
            )
    statuses = {r.status for r in results}
    out.status = statuses.pop() if len(statuses) == 1 else None
    return out


def _show(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, Unknown):
        return "unknown"
    if isinstance(value, list):
        return "(" + " ".join(value) + ")"
    return repr(value) if value == "" or " " in value else value


_BINARY = {"=", "==", "!=", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "<", ">", "=~", "-nt", "-ot", "-ef"}


def _test(tokens: list[tuple[str, bool, bool]], double: bool, ev: Any) -> bool | None:
    """``test`` / ``[ ]`` / ``[[ ]]`` over expanded tokens (text, operator, quoted): ! ( ) -a -o && ||, unary and
    binary operators; a file test is not decided (None)."""
    pos = 0

    def peek() -> tuple[str, bool, bool] | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> tuple[str, bool, bool]:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def disj() -> bool | None:
        left = conj()
        while peek() is not None and peek()[1] and peek()[0] in ("-o", "||"):
            take()
            right = conj()
            left = True if (left or right) else (None if None in (left, right) else False)
        return left

    def conj() -> bool | None:
        left = neg()
        while peek() is not None and peek()[1] and peek()[0] in ("-a", "&&"):
            take()
            right = neg()
            left = False if (left is False or right is False) else (None if None in (left, right) else True)
        return left

    def neg() -> bool | None:
        tok = peek()
        if tok is not None and tok[1] and tok[0] == "!" and pos + 1 < len(tokens):
            take()
            value = neg()
            return None if value is None else not value
        return prim()

    def prim() -> bool | None:
        tok = peek()
        if tok is None:
            return False
        if tok[1] and tok[0] == "(":
            take()
            value = disj()
            if peek() is not None and peek()[0] == ")":
                take()
            return value
        if pos + 2 < len(tokens) + 0 and tokens[pos + 1][1] and tokens[pos + 1][0] in _BINARY:
            left = take()[0]
            op = take()[0]
            right, _, quoted = take()
            return _binary(left, op, right, quoted, double, ev)
        if tok[1] and re.fullmatch(r"-[a-zA-Z]", tok[0]) and pos + 1 < len(tokens):
            op = take()[0]
            operand = take()[0]
            if op == "-n":
                return operand != ""
            if op == "-z":
                return operand == ""
            if op == "-v":
                return operand in ev.state.vars
            return None  # -f -d -e ...: the file system, not known
        return take()[0] != ""

    try:
        value = disj()
    except (IndexError, TypeError):
        raise Refused(f"{ev.where}: a test rlsim cannot read ({' '.join(t[0] for t in tokens)[:60]})") from None
    return value


def _binary(left: str, op: str, right: str, quoted: bool, double: bool, ev: Any) -> bool | None:
    if op in ("=", "==", "!="):
        same = matches(left, right) if double and not quoted else left == right
        return same if op != "!=" else not same
    if op == "=~":
        try:
            return re.search(right, left) is not None
        except re.error:
            return None
    if op in ("<", ">"):
        return (left < right) if op == "<" else (left > right)
    if op in ("-nt", "-ot", "-ef"):
        return None
    try:
        a = ev.arith_text(left) if double else int(left)
        b = ev.arith_text(right) if double else int(right)
    except ValueError:
        raise Refused(f"{ev.where}: [ {left} {op} {right} ] compares a value that is not an integer") from None
    return {"-eq": a == b, "-ne": a != b, "-lt": a < b, "-le": a <= b, "-gt": a > b, "-ge": a >= b}[op]
