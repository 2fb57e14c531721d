"""Words as bash expands them, never running anything: parameter expansion (every form launch scripts use), word
splitting of unquoted expansions, arrays, positional parameters (the script run with no arguments) and integer
arithmetic. A value rlsim cannot know (a command substitution, a variable the script never sets, one that two
branches set differently) is an :class:`Unknown`: the word keeps the expansion as written and the evaluator
(:mod:`rlsim.frameworks.shell.evaluate`) decides whether it matters. Semantics traced to the bash manual
(gnu.org/software/bash/manual, 3.5 Shell Expansions, 6.5 Shell Arithmetic).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rlsim.frameworks.shell.parse import parse, text_of

if TYPE_CHECKING:
    from tree_sitter import Node


@dataclass(frozen=True)
class Unknown:
    """A value rlsim does not know: ``kind`` is unset (the script never sets it), subst (a command substitution),
    branch (two branches set it differently) or other; ``roots`` are the variables a ``--set`` can give to decide
    it; ``text`` says why, for messages."""

    kind: str
    text: str
    roots: tuple[str, ...] = ()
    values: tuple[str, ...] = ()  # branch: the values the branches give


class Undecided(Exception):
    """A value, condition or arithmetic that depends on unknowns."""

    def __init__(self, unknowns: list[Unknown]):
        super().__init__("undecided")
        self.unknowns = unknowns


class Refused(Exception):
    """Bash the evaluator will not guess at; the message is one line."""


@dataclass
class State:
    """What a running bash would hold: scalars and arrays (``vars``), the unknown ones, exported names, functions,
    the positional parameters, the last framework command found and the notes."""

    vars: dict[str, Any] = field(default_factory=dict)  # str, or list[str] for an array
    unknown: dict[str, Unknown] = field(default_factory=dict)
    taint: dict[str, tuple[Unknown, ...]] = field(default_factory=dict)  # values holding unknowns as written
    exported: set[str] = field(default_factory=set)
    functions: dict[str, Any] = field(default_factory=dict)
    positional: list[str] = field(default_factory=list)
    frames: list[dict[str, Any]] = field(default_factory=list)  # a function's locals: their outer values
    found: Any = None
    status: bool | None = True
    doubt: Unknown | None = None  # the script may stop before here (an arithmetic error in one branch)

    def copy(self) -> State:
        new = copy.copy(self)
        new.vars = {k: list(v) if isinstance(v, list) else v for k, v in self.vars.items()}
        new.unknown, new.exported, new.functions = dict(self.unknown), set(self.exported), dict(self.functions)
        new.taint = dict(self.taint)
        new.positional, new.frames = list(self.positional), [dict(f) for f in self.frames]
        return new


_ABSENT = object()


class Fields:
    """The fields one word expands to: unquoted expansions split at blanks, quoted parts kept whole."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.cur = ""
        self.started = False

    def add(self, text: str) -> None:
        self.cur += text
        self.started = True

    def split(self, text: str) -> None:
        for part in re.findall(r"[ \t\n]+|[^ \t\n]+", text):
            if part[0] in " \t\n":
                self.flush()
            else:
                self.add(part)

    def flush(self) -> None:
        if self.started:
            self.out.append(self.cur)
        self.cur, self.started = "", False

    def done(self) -> list[str]:
        self.flush()
        return self.out


class Expander:
    """Expansion over a :class:`State`; ``seen`` collects the unknowns the last words met."""

    def __init__(self, state: State, where: str):
        self.state = state
        self.where = where
        self.seen: list[Unknown] = []
        self.notes: list[str] = []
        self.script_name = where

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # ---- variables -------------------------------------------------------------------------------------------
    def lookup(self, name: str) -> Any:
        """A variable's value (str or list), None when unset, or an Unknown."""
        st = self.state
        if name.isdigit():
            if name != "0" and not st.frames:
                self.note("the script is read as run with no arguments ($1, $@ ... empty)")
            return (
                self.script_name
                if name == "0"
                else (st.positional[int(name) - 1] if int(name) <= len(st.positional) else None)
            )
        if name in ("@", "*"):
            if not st.frames:
                self.note("the script is read as run with no arguments ($1, $@ ... empty)")
            return list(st.positional)
        if name == "#":
            return str(len(st.positional))
        if name == "?":
            return "0"
        if name in ("$", "!", "RANDOM", "-", "_", "SECONDS", "LINENO", "PPID"):
            return Unknown("other", f"${name} is known only when the script runs", ())
        if name in st.unknown:
            return st.unknown[name]
        if name in st.vars:  # a value holding unknowns: --set of the variable itself decides it too
            self.seen.extend(Unknown(u.kind, u.text, (name, *u.roots), u.values) for u in st.taint.get(name, ()))
            return st.vars[name]
        return Unknown("unset", f"${name} is not set by the script", (name,))

    def scalar(self, name: str, value: Any, index: str | None = None) -> Any:
        if isinstance(value, list):
            if index in ("@", "*"):
                return value
            pos = 0 if index is None else self.arith_text(index)
            return value[pos] if -len(value) <= pos < len(value) else None
        if index not in (None, "0", "@", "*"):
            return None
        return [value] if index in ("@", "*") and value is not None else value

    def assign(self, name: str, value: Any, taint: tuple[Unknown, ...] = ()) -> None:
        st = self.state
        st.taint.pop(name, None)
        if taint:
            st.taint[name] = taint
        if isinstance(value, Unknown):
            st.unknown[name] = value
            st.vars.pop(name, None)
        else:
            st.unknown.pop(name, None)
            st.vars[name] = value

    # ---- words -----------------------------------------------------------------------------------------------
    def words(self, nodes: list[Node]) -> list[str]:
        out: list[str] = []
        for node in nodes:
            if node.type != "comment":
                out += self.word(node)
        return out

    def word(self, node: Node) -> list[str]:
        f = Fields()
        self.into(node, f, False)
        return f.done()

    def string(self, node: Node) -> str:
        """One word as an assignment's value expands (no splitting)."""
        f = Fields()
        self.into(node, f, True)
        return f.cur

    def unknown_text(self, node: Node, unk: Unknown, f: Fields) -> None:
        self.seen.append(unk)
        f.add(text_of(node))

    def into(self, node: Node, f: Fields, quoted: bool) -> None:
        t = node.type
        if t in ("word", "number", "extglob_pattern", "regex", "special_variable_name", "variable_name"):
            text = text_of(node)
            f.add(text if quoted else re.sub(r"\\(.)", r"\1", text, flags=re.S))
        elif t == "raw_string":
            f.add(text_of(node)[1:-1])
        elif t == "ansi_c_string":
            f.add(_ansi_c(text_of(node)[2:-1]))
        elif t in ("string", "translated_string"):
            inner = node if t == "string" else node.named_children[0]
            mark = len(f.out), f.started
            f.started = True
            empty_at = self._gaps(inner, f, True, strip=1)
            if empty_at and len(f.out) == mark[0] and f.cur == "":
                f.started = mark[1]  # "$@" / "${A[@]}" of nothing: no word at all
        elif t == "concatenation":
            self._gaps(node, f, quoted, strip=0)
        elif t == "simple_expansion":
            self.parameter(node, f, quoted)
        elif t == "expansion":
            self.parameter(node, f, quoted)
        elif t == "arithmetic_expansion":
            try:
                value = str(self.arith_nodes([c for c in node.named_children]))
            except Undecided as exc:
                self.seen.extend(exc.unknowns)
                f.add(text_of(node))
                return
            f.add(value) if quoted else f.split(value)
        elif t == "command_substitution" and re.fullmatch(r"\$\(\(.*\)\)", text_of(node), re.S):
            # tree-sitter-bash 0.25 reads $((...)) inside ${X:+...} as $( (...) ); bash reads arithmetic
            try:
                value = str(self.arith_text(text_of(node)[3:-2]))
            except Undecided as exc:
                self.seen.extend(exc.unknowns)
                f.add(text_of(node))
                return
            f.add(value) if quoted else f.split(value)
        elif t in ("command_substitution", "process_substitution"):
            self.unknown_text(node, Unknown("subst", f"{text_of(node)[:60]} is a command substitution, not run"), f)
        elif t == "brace_expression":
            f.add(text_of(node))
        else:
            f.add(text_of(node))

    def _gaps(self, node: Node, f: Fields, quoted: bool, strip: int) -> bool:
        """A string's or concatenation's parts in order, text between child nodes taken literally; whether an
        empty "$@" form was all of it."""
        src = node.text or b""
        base = node.start_byte
        pos = strip
        only_at = True
        end = len(src) - strip
        for child in node.children:
            if not child.is_named:
                continue
            gap = src[pos : child.start_byte - base].decode("utf-8", "surrogateescape")
            if gap:
                only_at = False
                f.add(_dq(gap) if quoted else gap)
            if child.type == "string_content":
                only_at = only_at and not child.text
                f.add(_dq(text_of(child)) if quoted else text_of(child))
            else:
                only_at = only_at and _is_at(child)
                self.into(child, f, quoted)
            pos = child.end_byte - base
        gap = src[pos:end].decode("utf-8", "surrogateescape")
        if gap:
            only_at = False
            f.add(_dq(gap) if quoted else gap)
        return only_at

    # ---- parameters ------------------------------------------------------------------------------------------
    def parameter(self, node: Node, f: Fields, quoted: bool) -> None:
        kids = [c for c in node.children if c.type not in ("${", "}", "$")]
        prefix = ""
        if kids and not kids[0].is_named and kids[0].type in ("#", "!"):
            prefix, kids = kids[0].type, kids[1:]
        if not kids:
            f.add(text_of(node))
            return
        target, rest = kids[0], kids[1:]
        index = None
        if target.type == "subscript":
            name = text_of(target.child_by_field_name("name"))
            index = text_of(target.child_by_field_name("index"))
        else:
            name = text_of(target)
        value = self.lookup(name)
        if isinstance(value, Unknown) and value.kind == "unset" and index in ("@", "*"):
            value = []  # bash exports no arrays: one the script does not set is empty
        if not isinstance(value, Unknown):
            value = self.scalar(name, value, index)
        if prefix == "!":
            if isinstance(value, str) and re.fullmatch(r"[A-Za-z_]\w*", value):
                value = self.scalar(value, self.lookup(value))
            else:
                value = Unknown("other", f"{text_of(node)} is an indirection rlsim does not follow")
        if prefix == "#":
            if isinstance(value, Unknown):
                return self.unknown_text(node, value, f)
            n = len(value) if isinstance(value, list) else len(value or "")
            return f.add(str(n))
        if not rest:
            return self.emit(
                node, value, f, quoted, at=index in ("@", "*") or name in ("@", "*"), star=index == "*" or name == "*"
            )
        op = rest[0].type
        operand = rest[1:]
        if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            return self._default(node, name, value, index, op, operand, f, quoted)
        if isinstance(value, Unknown):
            return self.unknown_text(node, value, f)
        items = value if isinstance(value, list) else [value or ""]
        if op in ("#", "##", "%", "%%"):
            pat = self.pattern(operand)
            items = [_trim(v, pat, op) for v in items]
        elif op in ("/", "//", "/#", "/%"):
            split = next((i for i, c in enumerate(operand) if not c.is_named and c.type == "/"), len(operand))
            pat = self.pattern(operand[:split])
            sub = Fields()
            self._gaps_range(node, operand[split + 1 :], sub, True)
            items = [_replace(v, pat, sub.cur, op) for v in items]
        elif op in ("^^", ",,", "^", ","):
            conv = {"^^": str.upper, ",,": str.lower}.get(op)
            items = [conv(v) if conv else (v[:1].upper() if op == "^" else v[:1].lower()) + v[1:] for v in items]
        elif op == ":":
            parts = [p for p in operand if p.is_named]
            off = self.arith_nodes(parts[:1])
            length = self.arith_nodes(parts[1:2]) if len(parts) > 1 else None
            items = [_substr(v, off, length) for v in items]
        else:
            return self.unknown_text(node, Unknown("other", f"{text_of(node)} is an expansion rlsim does not read"), f)
        return self.emit(
            node, items if isinstance(value, list) else items[0], f, quoted, at=index in ("@", "*"), star=index == "*"
        )

    def _default(
        self, node: Node, name: str, value: Any, index: str | None, op: str, operand: list, f: Fields, quoted: bool
    ) -> None:
        """``${X:-word}`` and the other forms that test whether X is set (``-`` ``=`` ``+`` ``?``, with or without
        the colon that also tests for empty)."""
        unset = value is None or (op.startswith(":") and value in ("", []))
        if isinstance(value, Unknown):
            if value.kind != "unset":
                return self.unknown_text(node, value, f)
            unset = True  # the script's own default for a variable it does not set
        if op.endswith("+"):
            if not unset:
                self._gaps_range(node, operand, f, quoted)
            return
        if not unset:
            return self.emit(node, value, f, quoted, at=index in ("@", "*"), star=index == "*")
        if op.endswith("?"):
            return self.unknown_text(
                node, Unknown("other", f"{text_of(node)}: the script stops when {name} is unset"), f
            )
        if op.endswith("="):
            sub = Fields()
            self._gaps_range(node, operand, sub, True)
            self.assign(name, sub.cur)
        self._gaps_range(node, operand, f, quoted)
        return

    def _gaps_range(self, node: Node, parts: list[Node], f: Fields, quoted: bool) -> None:
        """The word of ``${X:-word}``: its parts with the literal text between them (up to the closing brace)."""
        if not parts:
            return
        src = node.text or b""
        base = node.start_byte
        pos = parts[0].start_byte - base
        for child in parts:
            gap = src[pos : child.start_byte - base].decode()
            if gap:
                f.add(gap) if quoted else f.split(gap)
            if child.is_named:
                self.into(child, f, quoted)
            else:
                f.add(text_of(child))
            pos = child.end_byte - base

    def emit(self, node: Node, value: Any, f: Fields, quoted: bool, at: bool = False, star: bool = False) -> None:
        if isinstance(value, Unknown):
            return self.unknown_text(node, value, f)
        if value is None:
            return
        if isinstance(value, list):
            if quoted and (star or not at):
                f.add(" ".join(value) if star else (value[0] if value else ""))
                return
            for k, item in enumerate(value):
                if quoted:
                    if k:
                        f.flush()
                        f.started = True
                    f.add(item)
                else:
                    f.split(" " + item if k else item)
                    if k < len(value) - 1:
                        pass
            return
        f.add(value) if quoted else f.split(value)

    def pattern(self, nodes: list[Node]) -> str:
        """A glob pattern from the nodes of ``${X#pattern}`` (quoted parts match literally)."""
        out = ""
        for node in nodes:
            if not node.is_named:
                out += text_of(node)
            elif node.type in ("string", "raw_string", "ansi_c_string"):
                out += _glob_escape(self.string(node))
            elif node.type in ("word", "regex", "extglob_pattern", "number"):
                out += text_of(node)
            elif node.type == "concatenation":
                out += self.pattern(list(node.children))
            else:
                out += _glob_escape(self.string(node))
        return out

    # ---- arithmetic ------------------------------------------------------------------------------------------
    def arith_text(self, text: str) -> int:
        tree = parse(f"(( {text} ))")
        stmt = tree.named_children[0] if tree.named_children else None
        if stmt is None or tree.has_error:
            raise Refused(f"{self.where}: {text!r} is not integer arithmetic bash reads")
        return self.arith_nodes(list(stmt.named_children))

    def arith_nodes(self, nodes: list[Node]) -> int:
        value = 0
        for node in nodes:
            if node.type != "comment":
                value = self.arith(node)
        return value

    def arith(self, node: Node, depth: int = 0) -> int:
        t = node.type
        if t == "number":
            return _number(text_of(node), self.where)
        if t in ("variable_name", "word"):
            name = text_of(node)
            return _number(name, self.where) if name[:1].isdigit() else self.arith_var(name, depth)
        if t in ("simple_expansion", "expansion", "string", "concatenation", "raw_string"):
            seen = len(self.seen)
            text = self.string(node)
            if len(self.seen) > seen:
                raise Undecided(self.seen[seen:])
            return self.arith_text(text) if text.strip() else 0
        if t == "parenthesized_expression":
            return self.arith_nodes(list(node.named_children))
        if t == "arithmetic_expansion":
            return self.arith_nodes(list(node.named_children))
        if t == "command_substitution":
            raise Undecided([Unknown("subst", f"{text_of(node)[:60]} is a command substitution, not run")])
        if t == "unary_expression":
            op = node.children[0].type
            if op in ("++", "--"):
                target = text_of(node.named_children[-1])
                value = self.arith_var(target, depth) + (1 if op == "++" else -1)
                self.assign(target, str(value))
                return value
            x = self.arith(node.named_children[-1], depth)
            return {"-": -x, "+": x, "!": int(not x), "~": ~x}.get(op, x)
        if t == "postfix_expression":
            target = text_of(node.named_children[0])
            old = self.arith_var(target, depth)
            self.assign(target, str(old + (1 if node.children[-1].type == "++" else -1)))
            return old
        if t == "ternary_expression":
            cond = self.arith(node.child_by_field_name("condition"), depth)
            return self.arith(node.child_by_field_name("consequence" if cond else "alternative"), depth)
        if t == "variable_assignment":
            value = self.arith(node.child_by_field_name("value"), depth)
            self.assign(text_of(node.child_by_field_name("name")), str(value))
            return value
        if t == "binary_expression":
            op = node.child_by_field_name("operator")
            op_t = op.type if op is not None else node.children[1].type
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if op_t in ("=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^=", "**="):
                target = text_of(left)
                value = self.arith(right, depth)
                if op_t != "=":
                    value = _binop(op_t[:-1], self.arith_var(target, depth), value, self.where)
                self.assign(target, str(value))
                return value
            if op_t == "**":  # right-associative in bash; the grammar nests it to the left
                chain = [right]
                while left.type == "binary_expression" and _op(left) == "**":
                    chain.insert(0, left.child_by_field_name("right"))
                    left = left.child_by_field_name("left")
                value = self.arith(chain[-1], depth)
                for node_ in reversed([left, *chain[:-1]]):
                    value = _binop("**", self.arith(node_, depth), value, self.where)
                return value
            a = self.arith(left, depth)
            if op_t == "&&":
                return int(bool(a) and bool(self.arith(right, depth)))
            if op_t == "||":
                return int(bool(a) or bool(self.arith(right, depth)))
            return _binop(op_t, a, self.arith(right, depth), self.where)
        raise Refused(f"{self.where}: {text_of(node)!r} is arithmetic rlsim does not read; write the number")

    def arith_var(self, name: str, depth: int) -> int:
        name = name.lstrip("$")
        if name in self.state.taint:
            raise Undecided(list(self.state.taint[name]))
        value = self.lookup(name)
        if isinstance(value, list):
            value = value[0] if value else ""
        if isinstance(value, Unknown) and value.kind == "unset" and depth > 0:
            return 0  # a name inside a variable's value: bash reads an unset one as 0
        if isinstance(value, Unknown):
            if value.kind == "branch" and any(not re.fullmatch(r"\s*-?\d*\s*", v) for v in value.values):
                self.state.doubt = Unknown(
                    "branch", f"arithmetic over ${name} stops bash in one branch: {value.text}", value.roots
                )
            raise Undecided([value])
        if value is None or value.strip() == "":
            return 0
        if re.fullmatch(r"\s*-?\d+\s*", value):
            return int(value)
        if depth > 20:
            raise Refused(f"{self.where}: ${name} refers to itself in arithmetic")
        if not re.fullmatch(r"[\w\s+\-*/%()<>=!&|^~?:,#]*", value):
            raise Refused(f"{self.where}: ${name} holds {value!r}, which bash's arithmetic refuses (the script stops)")
        for token in re.findall(r"(?<![\w#])\d[\w#]*", value):
            _number(token, f"{self.where}: ${name}")
        tree = parse(f"(( {value} ))")
        if tree.has_error or not tree.named_children:
            raise Refused(f"{self.where}: ${name} holds {value!r}, not an integer expression")
        return self.arith_nodes_depth(list(tree.named_children[0].named_children), depth + 1)

    def arith_nodes_depth(self, nodes: list[Node], depth: int) -> int:
        value = 0
        for node in nodes:
            value = self.arith(node, depth)
        return value


def _op(node: Node) -> str:
    op = node.child_by_field_name("operator")
    return op.type if op is not None else node.children[1].type


def _is_at(node: Node) -> bool:
    text = text_of(node)
    return text in ("$@", "${@}", "$*") or bool(re.fullmatch(r"\$\{\w+\[[@]\]\}", text))


def _dq(text: str) -> str:
    """Text inside double quotes: a backslash escapes only $ ` " \\ and a newline."""
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _ansi_c(text: str) -> str:
    table = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"', "r": "\r", "a": "\a", "e": "\x1b"}
    return re.sub(r"\\(.)", lambda m: table.get(m.group(1), "\\" + m.group(1)), text)


def _number(text: str, where: str) -> int:
    try:
        if "#" in text:
            base, digits = text.split("#", 1)
            return int(digits, int(base))
        if re.fullmatch(r"0[xX][0-9a-fA-F]+", text):
            return int(text, 16)
        if re.fullmatch(r"0[0-7]+", text):
            return int(text, 8)
        return int(text)
    except ValueError:
        raise Refused(f"{where}: {text!r} is not a number bash reads") from None


def _binop(op: str, a: int, b: int, where: str) -> int:
    if op in ("/", "%") and b == 0:
        raise Refused(f"{where}: division by 0 in the script's arithmetic")
    if op == "/":
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    if op == "%":
        r = abs(a) % abs(b)
        return r if a >= 0 else -r
    if op == "**":
        if b < 0:
            raise Refused(f"{where}: a negative exponent in the script's arithmetic")
        return a**b
    table = {
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "<<": lambda: a << b, ">>": lambda: a >> b,
        "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b, "<": lambda: int(a < b), ">": lambda: int(a > b),
        "<=": lambda: int(a <= b), ">=": lambda: int(a >= b), "==": lambda: int(a == b), "!=": lambda: int(a != b),
        ",": lambda: b,
    }  # fmt: skip
    if op not in table:
        raise Refused(f"{where}: the operator {op!r} is arithmetic rlsim does not read; write the number")
    return table[op]()


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def glob_regex(pattern: str) -> str:
    """A bash glob (``*`` ``?`` ``[...]``, backslash escapes) as a Python regex."""
    out, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out += re.escape(pattern[i + 1])
            i += 2
            continue
        if c == "*":
            out += ".*"
        elif c == "?":
            out += "."
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                out += re.escape(c)
            else:
                body = pattern[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out += "[" + body.replace("\\", "\\\\") + "]"
                i = end
        else:
            out += re.escape(c)
        i += 1
    return out


def matches(text: str, pattern: str) -> bool:
    return re.fullmatch(glob_regex(pattern), text, re.S) is not None


def _trim(value: str, pat: str, op: str) -> str:
    rx = re.compile(glob_regex(pat), re.S)
    spans = range(len(value) + 1) if op in ("#", "%") else range(len(value), -1, -1)
    for n in spans:
        if op.startswith("#") and rx.fullmatch(value[:n]):
            return value[n:]
        if op.startswith("%") and rx.fullmatch(value[len(value) - n :]):
            return value[: len(value) - n]
    return value


def _replace(value: str, pat: str, rep: str, op: str) -> str:
    if not pat:
        return value
    rx = re.compile(glob_regex(pat), re.S)
    if op == "/#":
        for n in range(len(value), -1, -1):
            if rx.fullmatch(value[:n]):
                return rep + value[n:]
        return value
    if op == "/%":
        for n in range(len(value) + 1):
            if rx.fullmatch(value[n:]):
                return value[:n] + rep
        return value
    out, i = "", 0
    while i <= len(value):
        hit = next((e for e in range(len(value), i, -1) if rx.fullmatch(value[i:e])), None)
        if hit is None:
            if i < len(value):
                out += value[i]
            i += 1
            continue
        out += rep
        i = hit
        if op == "/":
            return out + value[i:]
    return out


def _substr(value: str, off: int, length: int | None) -> str:
    if off < 0:
        off = max(len(value) + off, 0)
    if length is None:
        return value[off:]
    end = off + length if length >= 0 else len(value) + length
    return value[off:end]
