"""Launch scripts read as text and never run: the framework's command line out of a shell script.

People launch verl and OpenRLHF with shell scripts (``python3 -m verl.trainer.main_ppo key=value \\`` over many
lines, shell variables, arrays, ``bash -c "..."``, ``ray job submit ... -- python3 -m ...``). This module finds
the line that runs the framework's entry point and returns its arguments with the script's own assignments
expanded, splitting words with the standard library's ``shlex``. It interprets no more shell than that:

* assignments ``NAME=value`` (with ``export``, ``local``, ``readonly`` or ``declare``; inside ``if`` blocks too,
  taken as if run, in order) and arrays ``NAME=(a b c)``, possibly over several lines;
* expansion of ``$NAME``, ``${NAME}``, ``${NAME:-default}`` / ``${NAME-default}`` / ``${NAME:=default}``,
  ``"${NAME[@]}"`` and integer arithmetic ``$((...))`` (+ - * / % and parentheses over numbers and variables);
  ``: "${NAME:=default}"`` assigns as bash does; ``$@`` / ``$*`` / ``$1``.. (the script's own arguments) read as
  none, said in a note; a variable the script never assigns stays as written (``${NNODES}``), said in a note, so a
  key that needs its value is refused by the importer naming the key;
* command substitution (``$(...)``, backquotes) is never run: on the framework's command line it is refused in
  one line; a variable set by one (``WORK_DIR=$(pwd)``) stays as written where it is used, said in a note.
  Nothing else the script does (``source``, ``cd``, ``if`` conditions, functions, other commands) is run or
  read, and a line without a trailing backslash ends the command, as in bash.
"""

from __future__ import annotations

import ast
import operator
import re
import shlex
from dataclasses import dataclass, field

from rlsim.frameworks.adapter import ImportConfigError

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_ASSIGN = re.compile(rf"^\s*(?:(?:export|local|readonly|declare(?:\s+-\w+)?)\s+)?({_NAME})=(.*)$")
_ARRAY_START = re.compile(rf"^(?:(?:export|local|declare(?:\s+-\w+)?)\s+)?({_NAME})=\((.*)$")
_COMMENT = re.compile(r"(^|\s)#.*$")
_OPERATORS = {";", "&&", "||", "|", "&", "|&"}
_REDIRECT = re.compile(r"^\d*(>|>>|<|>&|<&|&>)")
_ARITH = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


@dataclass
class _Shell:
    where: str
    scalars: dict[str, str] = field(default_factory=dict)
    arrays: dict[str, list[str]] = field(default_factory=dict)
    substituted: set[str] = field(default_factory=set)  # set by a command substitution, not run: left as written
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def value(self, name: str) -> str | None:
        """The variable's value; None when the script does not set it, or sets it by running something."""
        if name in self.substituted:
            self.note(f"${name} is set by a command substitution, which is not run; left as written")
            return None
        return self.scalars.get(name)

    def arith(self, text: str) -> str:
        def ev(node: ast.AST) -> int:
            if isinstance(node, ast.Expression):
                return ev(node.body)
            if isinstance(node, ast.Constant) and isinstance(node.value, int):
                return node.value
            if isinstance(node, ast.Name):
                got = self.value(node.id)
                if got is None or not got.strip().lstrip("-").isdigit():
                    raise ImportConfigError(f"{self.where}: $(({text})) uses {node.id}, which holds no integer")
                return int(got)
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
                return -ev(node.operand)
            if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
                return _ARITH[type(node.op)](ev(node.left), ev(node.right))
            raise ImportConfigError(f"{self.where}: $(({text})) is more arithmetic than rlsim reads; write the number")

        expr = re.sub(r"\$\{?(" + _NAME + r")\}?", r"\1", text).replace("/", "//")
        try:
            tree = ast.parse(expr.strip(), mode="eval")
        except SyntaxError:
            raise ImportConfigError(f"{self.where}: $(({text})) is not integer arithmetic rlsim reads") from None
        return str(ev(tree))

    def expand(self, text: str) -> str:
        """``text`` with every expansion done, quotes kept for shlex (module docstring)."""
        out: list[str] = []
        i, quoted = 0, False
        while i < len(text):
            ch = text[i]
            if ch == "'" and not quoted:
                end = text.find("'", i + 1)
                end = len(text) - 1 if end < 0 else end
                out.append(text[i : end + 1])
                i = end + 1
                continue
            if ch == "\\" and i + 1 < len(text):
                out.append(text[i : i + 2])
                i += 2
                continue
            if ch == '"':
                quoted = not quoted
                out.append(ch)
                i += 1
                continue
            if ch == "`":
                raise ImportConfigError(f"{self.where}: a command substitution (`...`) is not run; write its value")
            if ch != "$":
                out.append(ch)
                i += 1
                continue
            rest = text[i + 1 :]
            if rest.startswith("(("):
                end = _matching(text, i + 1)
                out.append(self.arith(text[i + 3 : end - 1]))
                i = end + 1
                continue
            if rest.startswith("("):
                raise ImportConfigError(f"{self.where}: a command substitution ($(...)) is not run; write its value")
            if rest[:1] in ("@", "*") or rest[:1].isdigit() or rest.startswith(("{@}", "{*}")):
                self.note("the script's own arguments ($@, $1, ...) read as none")
                i += 2 if not rest.startswith("{") else 4
                continue
            m = re.match(rf"\{{({_NAME})\[[@*]\]\}}", rest)
            if m:
                words = self.arrays.get(m.group(1), [])
                joined = " ".join(shlex.quote(w) for w in words)
                out.append(f'"{joined}"' if quoted else joined)
                i += 1 + m.end()
                continue
            m = _default_form(rest) or re.match(rf"\{{({_NAME})\}}", rest)
            m = m or re.match(rf"({_NAME})", rest)
            if not m:
                out.append(ch)
                i += 1
                continue
            name = m.group(1)
            value = self.value(name)
            if value is None and m.re.groups == 3:
                value = self.expand_word(m.group(3))
                if m.group(2).endswith("="):
                    self.scalars[name] = value
            if value is None:
                if name not in self.substituted:
                    self.note(f"${name} is not set by the script; left as written")
                out.append("$" + m.group(0))
            elif quoted:
                out.append(re.sub(r'(["\\$`])', r"\\\1", value))
            else:
                out.append(" ".join(shlex.quote(w) for w in value.split()))
            i += 1 + m.end()
        return "".join(out)

    def expand_word(self, text: str) -> str:
        return " ".join(_split(self.expand(text), self.where))


def _default_form(rest: str) -> re.Match[str] | None:
    """``{NAME:-word}`` (or ``-``, ``:=``, ``=``) at the start of ``rest``, its word up to the brace that closes the
    form: a word may hold expansions of its own (``${HOME:-"${ROOT}/x"}``)."""
    head = re.match(rf"\{{({_NAME})(:?[-=])", rest)
    if not head:
        return None
    depth = 0
    for j in range(head.end(), len(rest)):
        depth += {"{": 1, "}": -1}.get(rest[j], 0)
        if depth < 0:
            return re.compile(rf"\{{({_NAME})(:?[-=])(.{{{j - head.end()}}})\}}", re.S).match(rest)
    return None


def _matching(text: str, start: int) -> int:
    """The index of the ``)`` that closes the ``(`` at ``start``."""
    depth = 0
    for j in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        if depth == 0:
            return j
    raise ImportConfigError("an unclosed $( in the script; fix its parentheses")


def _segments(words: list[str]) -> list[list[str]]:
    """Words split at ; && || | & (separate commands), redirections dropped."""
    out: list[list[str]] = [[]]
    skip = False
    for w in words:
        if w in _OPERATORS:
            out.append([])
            skip = False
        elif skip:
            skip = False
        elif _REDIRECT.match(w):
            skip = not re.search(r"[>&<]\S+$", w)  # '> file' takes the next word, '>file' or '2>&1' does not
        elif not skip:
            out[-1].append(w)
    return [s for s in out if s]


def _split(text: str, where: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError as exc:
        raise ImportConfigError(f"{where}: cannot be split into shell words ({exc}); fix the quoting") from None


def _entry_words(words: list[str], markers: tuple[str, ...], sh: _Shell) -> list[str] | None:
    """The arguments after the marker in a command's words, unwrapping ``bash -c STRING`` (after any launcher:
    ``srun ... bash -c``) and ``ray job submit ... -- COMMAND``."""
    for k in range(len(words) - 2):
        if words[k].rsplit("/", 1)[-1] in ("bash", "sh") and words[k + 1] == "-c":
            return _from_text(words[k + 2], markers, sh)[0]
    if "--" in words and any(w.rsplit("/", 1)[-1] == "ray" for w in words[: words.index("--")]):
        words = words[words.index("--") + 1 :]
    for k, w in enumerate(words):
        if w in markers or any(w.endswith("/" + m) for m in markers):
            return words[k + 1 :]
    return None


def _names_marker(line: str, markers: tuple[str, ...]) -> bool:
    """Whether a word of ``line`` (split as written, nothing expanded) is the entry point, or a string that holds
    it (``bash -c "..."``): a path or a substitution that merely contains the marker's text is not."""
    if not any(mark in line for mark in markers):
        return False
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return True  # unbalanced quotes: the expanding split names the problem
    ends = tuple("/" + m for m in markers)
    # a quoted string holding words (bash -c "...") runs the marker when one of its words does
    return any(w in markers or w.endswith(ends) or (" " in w and _names_marker(w, markers)) for w in words if w)


def _from_text(text: str, markers: tuple[str, ...], sh: _Shell) -> tuple[list[str] | None, _Shell]:
    where = sh.where
    lines = text.replace("\\\r\n", " ").replace("\\\n", " ").splitlines()
    found: list[str] | None = None
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        i += 1
        if not stripped or stripped.startswith("#"):
            continue
        m = _ARRAY_START.match(stripped)
        if m:  # NAME=( ... ), possibly over several lines; comments dropped line by line
            body = _COMMENT.sub("", m.group(2))
            while ")" not in body and i < len(lines):
                body += " " + _COMMENT.sub("", lines[i].strip())
                i += 1
            sh.arrays[m.group(1)] = _split(sh.expand(body[: body.rfind(")")]), where)
            continue
        m = _ASSIGN.match(stripped)
        runs = _names_marker(stripped, markers)
        if m and not runs:
            try:
                words = _split(sh.expand(m.group(2)), where)
                sh.scalars[m.group(1)] = words[0] if words else ""
                sh.substituted.discard(m.group(1))
            except ImportConfigError:
                sh.substituted.add(m.group(1))
            continue
        if stripped.startswith(": ") and not runs:  # `: "${NAME:=default}"`: the null command's assignments
            try:
                sh.expand(stripped[2:])
            except ImportConfigError:
                pass
            continue
        if not runs:
            continue  # another command: never run, never read
        for seg in _segments(_split(sh.expand(stripped), where)):
            args = _entry_words(seg, markers, sh)
            if args is not None:
                found = args
    return found, sh


def framework_command(text: str, where: str, markers: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The words after the framework's entry point (``markers``: ``verl.trainer.main_ppo``) on the last line of
    the script that runs it, expanded (module docstring), and notes on what was assumed."""
    args, sh = _from_text(text, markers, _Shell(where))
    if args is None:
        raise ImportConfigError(f"{where}: runs no {' or '.join(markers)}; give the launch script or config that does")
    return [a for a in args if a != ""], sh.notes
