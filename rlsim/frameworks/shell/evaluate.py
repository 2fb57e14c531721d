"""A launch script evaluated as bash would run it, without running anything (:func:`evaluate`): its statements in
order over a :class:`~rlsim.frameworks.shell.expand.State`; ``if`` / ``case`` / ``[[ ]]`` / ``test`` / ``&&`` /
``||`` decided by value where the values are known; where they are not, every branch is read from a copy of the
state and the copies are merged (a variable the branches set differently becomes an Unknown naming the condition
and the values); functions called with their arguments and ``local``; ``for`` / ``while`` loops run (at most
10,000 turns); ``source`` / ``.`` of a file beside the script; ``bash -c`` and ``bash <<EOF`` read as scripts of
their own; ``exit`` ends the branch. Every other command is never run: its words are expanded and, when one of them
is the framework's entry point, they are the framework command (the last one the script reaches wins).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlsim.frameworks.shell.decide import Launch, _merge, _test, _why
from rlsim.frameworks.shell.expand import Expander, Refused, State, Undecided, Unknown, matches
from rlsim.frameworks.shell.parse import errors, line_of, parse, text_of

if TYPE_CHECKING:
    from tree_sitter import Node

_LOOP_LIMIT = 10_000
_STEP_LIMIT = 200_000  # statements evaluated in all: nested loops stop here
_DEPTH_LIMIT = 64
_COMPOUND = {"if_statement", "case_statement", "for_statement", "c_style_for_statement", "while_statement",
             "compound_statement", "subshell", "function_definition", "do_group", "elif_clause", "else_clause",
             "case_item"}  # fmt: skip


class _Exit(Exception):
    pass


class _Return(Exception):
    pass


class _Break(Exception):
    def __init__(self, continuing: bool):
        super().__init__("loop")
        self.continuing = continuing


class Evaluator(Expander):
    def __init__(self, where: str, markers: tuple[str, ...], base: Path | None, sets: dict[str, str]):
        super().__init__(State(), where)
        self.markers = markers
        self.base = base
        self.sets = sets
        self.used_sets: set[str] = set()
        self.depth = 0
        self.steps = 0
        self.stopped = ""  # where the script's last exit was reached, and under which condition

    # ---- statements ------------------------------------------------------------------------------------------
    def run_script(self, text: str, where: str) -> None:
        root = parse(text)
        try:
            self.block(root.children)
        except (_Exit, _Break, _Return):
            pass

    def block(self, nodes: list[Node]) -> None:
        for node in nodes:
            if not node.is_named or node.type in ("comment", "heredoc_body"):
                continue
            if node.type == "ERROR" or (node.has_error and node.type not in _COMPOUND):
                self.broken(node)
            else:
                self.stmt(node)

    def broken(self, node: Node) -> None:
        """A statement bash's grammar cannot read: skipped, with a note; the variables it would set become
        unknown, and a framework command in it is refused."""
        bad = (errors(node) or [node])[0]
        snippet = " ".join(text_of(node).split())[:60] or "(missing)"
        text = f"line {line_of(bad)} ({snippet!r}) is not bash the grammar reads"
        self.note(f"{self.where} {text}; skipped")
        for name in re.findall(r"(?:^|[\s;(])([A-Za-z_]\w*)(?:\[[^]]*\])?\+?=", text_of(node)):
            self.assign(name, Unknown("parse", f"${name} is set on {text}"))
        if any(m in text_of(node) for m in self.markers):
            self.state.found = Launch((), (), Unknown("parse", f"the command on {text}"))
        self.state.status = None

    def stmt(self, node: Node) -> None:
        t = node.type
        st = self.state
        self.steps += 1
        if self.steps > _STEP_LIMIT:
            raise Refused(f"{self.where} line {line_of(node)}: the script runs past {_STEP_LIMIT:,} statements (loops)")
        if t == "variable_assignment":
            self.assignment(node)
            st.status = True
        elif t == "variable_assignments":
            for child in node.named_children:
                self.assignment(child)
            st.status = True
        elif t == "declaration_command":
            self.declaration(node)
        elif t == "unset_command":
            for child in node.named_children:
                name = text_of(child)
                if not name.startswith("-"):
                    st.vars.pop(name, None)
                    st.unknown.pop(name, None)
                    st.functions.pop(name, None)
        elif t == "command":
            self.command(node)
        elif t == "redirected_statement":
            self.redirected(node)
        elif t in ("pipeline", "subshell", "compound_statement", "do_group"):
            kids = node.named_children
            if t == "compound_statement" and node.children and node.children[0].type == "((":
                self.arith_statement(kids)
            elif t == "subshell":
                saved = st.copy()
                try:
                    self.block(kids)
                except _Exit:
                    pass
                found = self.state.found
                self.state = saved
                self.state.found = found
            else:
                self.block(kids)
        elif t == "list":
            self.and_or(node)
        elif t == "negated_command":
            self.block(node.named_children)
            st = self.state
            st.status = None if st.status is None else not st.status
        elif t == "test_command":
            st.status = self.test_node(node)
        elif t == "function_definition":
            st.functions[text_of(node.child_by_field_name("name"))] = node.child_by_field_name("body")
            st.status = True
        elif t == "if_statement":
            self.if_statement(node)
        elif t == "case_statement":
            self.case_statement(node)
        elif t == "for_statement":
            self.for_statement(node)
        elif t == "c_style_for_statement":
            self.c_for(node)
        elif t == "while_statement":
            self.while_statement(node)
        # comments and anything else: nothing bash would change that the framework command depends on

    def assignment(self, node: Node, local: bool = False, given: Any = None) -> None:
        target = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        append = any(c.type == "+=" for c in node.children)
        index = None
        if target is not None and target.type == "subscript":
            name = text_of(target.child_by_field_name("name"))
            index = text_of(target.child_by_field_name("index"))
        else:
            name = text_of(target) if target is not None else text_of(node).split("=")[0]
        if local and self.state.frames and name not in self.state.frames[-1]:
            self.state.frames[-1][name] = self.state.unknown.get(name, self.state.vars.get(name, None))
        if value is not None and value.type == "array":
            start = len(self.seen)
            items = self.words(value.named_children)
            met = self.seen[start:]
            old = self.state.vars.get(name)
            old = old if isinstance(old, list) else ([old] if old is not None else [])
            if append and name in self.state.unknown:
                return
            if any(u.kind in ("branch", "parse") or (u.kind == "subst" and not u.roots) for u in met):
                first = next(u for u in met if u.kind in ("branch", "parse", "subst"))
                self.set_value(name, Unknown(first.kind, first.text, first.roots, first.values))
                return
            taint = tuple(dict.fromkeys((*self.state.taint.get(name, ()), *met) if append else met))
            self.set_value(name, (old + items) if append else items, taint)
            return
        start = len(self.seen)
        if given is not None:
            text = given[0]
            self.seen.extend(given[1])
        else:
            text = self.string(value) if value is not None else ""
        if len(self.seen) > start:
            unk = self._merge_unknowns(self.seen[start:])
            if not any(u.kind == "branch" or (u.kind == "subst" and not u.roots) for u in self.seen[start:]):
                self.set_value(name, text, tuple(dict.fromkeys(self.seen[start:])))  # kept as written
                return
            if unk.kind == "subst":
                unk = Unknown("subst", f"${name} is set by a command substitution, which is not run", (name,))
            self.set_value(name, unk)
            return
        if index is not None:
            arr = self.state.vars.get(name)
            arr = list(arr) if isinstance(arr, list) else ([arr] if arr is not None else [])
            try:
                pos = self.arith_text(index)
            except Undecided as exc:
                self.set_value(name, exc.unknowns[0])
                return
            while len(arr) <= pos:
                arr.append("")
            arr[pos] = (arr[pos] + text) if append else text
            self.set_value(name, arr)
            return
        if append:
            old = self.state.vars.get(name)
            if isinstance(old, list):
                self.set_value(name, [*old, text])
                return
            text = (old or "") + text
        self.set_value(name, text)

    def _merge_unknowns(self, unknowns: list[Unknown]) -> Unknown:
        first = unknowns[0]
        roots = tuple(dict.fromkeys(r for u in unknowns for r in u.roots))
        return Unknown(first.kind, first.text, roots)

    def set_value(self, name: str, value: Any, taint: tuple[Unknown, ...] = ()) -> None:
        if (isinstance(value, Unknown) or taint) and name in self.sets:
            self.used_sets.add(name)
            self.note(f"{name}: the script sets it by what it cannot know; --set {name}={self.sets[name]} taken")
            value, taint = self.sets[name], ()
        self.assign(name, value, taint)

    def declaration(self, node: Node) -> None:
        kind = node.children[0].type
        values: dict[int, Any] = {}
        for k, child in enumerate(node.named_children):  # every word expanded before any is assigned
            value = child.child_by_field_name("value") if child.type == "variable_assignment" else None
            if value is not None and value.type != "array":
                start = len(self.seen)
                values[k] = (self.string(value), self.seen[start:])
        for k, child in enumerate(node.named_children):
            if child.type == "variable_assignment":
                self.assignment(
                    child,
                    local=kind in ("local", "declare", "typeset") and bool(self.state.frames),
                    given=values.get(k),
                )
                name_node = child.child_by_field_name("name")
                name = text_of(name_node)
            elif child.type == "variable_name":
                name = text_of(child)
                if kind in ("local", "declare", "typeset") and self.state.frames and name not in self.state.frames[-1]:
                    self.state.frames[-1][name] = self.state.vars.get(name)
                    self.state.vars.pop(name, None)
                    self.state.unknown.pop(name, None)
            else:
                continue
            if kind == "export":
                self.state.exported.add(name.split("[")[0])
        self.state.status = True

    def arith_statement(self, nodes: list[Node]) -> None:
        try:
            self.state.status = bool(self.arith_nodes(nodes))
        except Undecided:
            self.state.status = None

    def and_or(self, node: Node) -> None:
        """``a && b || c`` (left-associative): each command run or not by the status before it; a status rlsim
        cannot decide forks the rest of the chain."""
        items: list[tuple[str, Node]] = []
        while node.type == "list":
            kids = node.children
            items.insert(0, (kids[1].type, kids[2]))
            node = kids[0]
        self.stmt(node)
        self._chain(items, 0, node)

    def _chain(self, items: list[tuple[str, Node]], i: int, first: Node) -> None:
        while i < len(items):
            status = self.state.status
            if status is None:
                branches = [lambda v=v, k=i: self._then_chain(v, items, k, first) for v in (True, False)]
                self.fork(branches, f"`{text_of(first)[:60]}`", line_of(first), self._cond_unknowns)
                return
            op, cmd = items[i]
            if (op == "&&") == status:
                self.stmt(cmd)
            i += 1

    def _then_chain(self, status: bool, items: list[tuple[str, Node]], i: int, first: Node) -> None:
        self.state.status = status
        self._chain(items, i, first)

    # ---- commands --------------------------------------------------------------------------------------------
    def command(self, node: Node, heredoc: str | None = None) -> None:
        st = self.state
        prefix = [c for c in node.named_children if c.type == "variable_assignment"]
        name_node = node.child_by_field_name("name")
        args = [c for c, f in _fields(node) if f == "argument" and c.type != "comment"]
        words: list[str] = []
        unknowns: list[list[Unknown]] = []  # per word, the unknowns it holds
        for part in ([name_node] if name_node is not None else []) + args:
            start = len(self.seen)
            got = self.word(part)
            words += got
            unknowns += [self.seen[start:]] * len(got)
        if not words:
            for child in prefix:
                self.assignment(child)
            st.status = True
            return
        saved = {}
        if prefix:  # A=B cmd: the assignments hold for the command only
            for child in prefix:
                n = text_of(child.child_by_field_name("name"))
                saved[n] = (st.vars.get(n), st.unknown.get(n))
                self.assignment(child)
        try:
            self.run_words(words, unknowns, node, heredoc)
        finally:
            for n, (v, u) in saved.items():
                self.state.vars.pop(n, None)
                self.state.unknown.pop(n, None)
                if v is not None:
                    self.state.vars[n] = v
                if u is not None:
                    self.state.unknown[n] = u

    def run_words(self, words: list[str], per_word: list[list[Unknown]], node: Node, heredoc: str | None) -> None:
        st = self.state
        unknowns = [u for us in per_word for u in us]
        cmd = words[0]
        st.status = True
        if cmd in st.functions:
            if isinstance(st.functions[cmd], Unknown):
                st.doubt = st.functions[cmd]
                return
            return self.call(cmd, words[1:], node)
        if cmd in ("exit",):
            self.stopped = _stop_text(node)
            raise _Exit
        if cmd == "return":
            raise _Return
        if cmd in ("break", "continue"):
            raise _Break(cmd == "continue")
        if cmd in ("false",):
            st.status = False
            return
        if cmd in ("test", "["):
            st.status = self.test_words(words[1:-1] if cmd == "[" else words[1:], unknowns)
            return
        if cmd in ("source", ".") and len(words) > 1:
            return self.source(words[1], words[2:], unknowns, node)
        if cmd == "shift":
            n = int(words[1]) if len(words) > 1 and words[1].isdigit() else 1
            st.positional = st.positional[n:]
            return
        if cmd == "set" and "--" in words:
            st.positional = words[words.index("--") + 1 :]
            return
        if cmd == "let":
            for expr in words[1:]:
                try:
                    st.status = bool(self.arith_text(expr))
                except Undecided:
                    st.status = None
            return
        if cmd == "eval" and not unknowns:
            return self.nested(" ".join(words[1:]), "eval", node)
        inner = _inline_script(words)
        if inner is not None:
            return self.nested(inner, "bash -c", node, subshell=True)
        if heredoc is not None and cmd.rsplit("/", 1)[-1] in ("bash", "sh") and len(words) == 1:
            return self.nested(heredoc, "a here-document", node, subshell=True)
        at = _entry(words, self.markers)
        if at is not None:
            st.found = Launch(tuple(words[at:]), tuple(dict.fromkeys(u for us in per_word[at:] for u in us)), st.doubt)

    def call(self, name: str, args: list[str], node: Node) -> None:
        if self.depth > _DEPTH_LIMIT:
            raise Refused(f"{self.where} line {line_of(node)}: {name} calls itself past {_DEPTH_LIMIT} levels")
        st = self.state
        body = st.functions[name]
        saved_pos = st.positional
        st.positional = list(args)
        st.frames.append({})
        self.depth += 1
        try:
            self.stmt(body)
        except _Return:
            pass
        finally:
            self.depth -= 1
            st = self.state
            frame = st.frames.pop() if st.frames else {}
            for n, old in frame.items():
                st.vars.pop(n, None)
                st.unknown.pop(n, None)
                if isinstance(old, Unknown):
                    st.unknown[n] = old
                elif old is not None:
                    st.vars[n] = old
            st.positional = saved_pos

    def nested(self, text: str, what: str, node: Node, subshell: bool = False) -> None:
        if self.depth > _DEPTH_LIMIT:
            raise Refused(f"{self.where} line {line_of(node)}: {what} nests past {_DEPTH_LIMIT} levels")
        root = parse(text)
        saved = self.state.copy() if subshell else None
        if subshell:  # a new bash: only what the script exported
            st = self.state
            st.vars = {k: v for k, v in st.vars.items() if k in st.exported and not isinstance(v, list)}
            st.unknown = {k: v for k, v in st.unknown.items() if k in st.exported}
            st.functions, st.positional, st.frames = {}, [], []
        self.depth += 1
        try:
            self.block(root.children)
        except _Exit:
            pass
        finally:
            self.depth -= 1
            if saved is not None:
                found = self.state.found
                self.state = saved
                self.state.found = found

    def source(self, name: str, args: list[str], unknowns: list[Unknown], node: Node) -> None:
        path = self._find(name) if not unknowns else None
        tail = re.sub(r"^.*\$\{?\w+\}?/", "", name)
        if path is None and unknowns and tail != name:  # ${SCRIPT_DIR}/models/x.sh: the layout beside the script
            path = self._find(tail)
            if path is not None:
                self.note(f"source {name}: read as {tail} beside {self.where} ({unknowns[0].text})")
        if path is None:
            self.note(f"source {name}: not found beside {self.where}; read on without it")
            return
        saved = self.state.positional
        if args:
            self.state.positional = list(args)
        self.depth += 1
        try:
            if self.depth > _DEPTH_LIMIT:
                raise Refused(f"{self.where}: source nests past {_DEPTH_LIMIT} levels")
            self.block(parse(path.read_text(errors="replace")).children)
        finally:
            self.depth -= 1
            if args:
                self.state.positional = saved

    def _find(self, name: str) -> Path | None:
        if self.base is None:
            return None
        given = Path(name)
        if given.is_absolute():
            return given if given.is_file() else None
        for folder in [self.base, *self.base.parents][:6]:  # the script's folder, then the repository it sits in
            if (folder / given).is_file():
                return folder / given
        return None

    def redirected(self, node: Node) -> None:
        body = node.child_by_field_name("body")
        heredoc = None
        for child in node.named_children:
            if child.type == "heredoc_redirect":
                heredoc = self.heredoc(child)
        if body is None:
            return
        if body.type == "command":
            self.command(body, heredoc)
        else:
            self.stmt(body)

    def heredoc(self, node: Node) -> str:
        start = next((c for c in node.named_children if c.type == "heredoc_start"), None)
        body = next((c for c in node.named_children if c.type == "heredoc_body"), None)
        if body is None:
            return ""
        if start is not None and re.search(r"['\"\\]", text_of(start)):
            return text_of(body)  # a quoted delimiter: the body as written
        out = ""
        pos = body.start_byte
        src = body.text or b""
        for child in body.named_children:
            out += _unescape(src[pos - body.start_byte : child.start_byte - body.start_byte].decode())
            if child.type != "heredoc_content":
                out += self.string(child)
            else:
                out += _unescape(text_of(child))
            pos = child.end_byte
        return out + _unescape(src[pos - body.start_byte :].decode())

    # ---- conditions and branches -----------------------------------------------------------------------------
    _cond_unknowns: list[Unknown] = []

    def if_statement(self, node: Node) -> None:
        clauses: list[tuple[list[Node], list[Node]]] = []
        cond: list[Node] = []
        body: list[Node] = []
        part = "cond"
        for child in node.children:
            if child.type in ("if", "fi", ";", "&"):
                continue
            if child.type == "then":
                part = "body"
            elif child.type in ("elif_clause", "else_clause"):
                pass
            elif part == "cond":
                cond.append(child)
            else:
                body.append(child)
        clauses.append((cond, body))
        for child in node.named_children:
            if child.type == "elif_clause":
                c, b, part = [], [], "cond"
                for k in child.children:
                    if k.type == "then":
                        part = "body"
                    elif k.type not in ("elif", ";", "&"):
                        (c if part == "cond" else b).append(k)
                clauses.append((c, b))
            elif child.type == "else_clause":
                clauses.append(([], [k for k in child.children if k.type != "else"]))
        self.clauses(clauses, node)

    def clauses(self, clauses: list[tuple[list[Node], list[Node]]], node: Node) -> None:
        for k, (cond, body) in enumerate(clauses):
            if not cond:  # else
                self.block(body)
                return
            start = len(self.seen)
            self.block(cond)
            status = self.state.status
            if status is None:
                unknowns = self.seen[start:] or [Unknown("other", "a condition rlsim cannot decide")]
                rest = clauses[k + 1 :]
                self.fork(
                    [lambda b=body: self.block(b), lambda r=rest: self.clauses(r, node) if r else None],
                    f"`{' '.join(text_of(c) for c in cond)[:60]}`",
                    line_of(cond[0]),
                    unknowns,
                )
                return
            if status:
                self.block(body)
                return
        self.state.status = True

    def case_statement(self, node: Node) -> None:
        value_node = node.child_by_field_name("value")
        start = len(self.seen)
        value = self.string(value_node)
        unknowns = self.seen[start:]
        items = [c for c in node.named_children if c.type == "case_item"]
        parsed = []
        for item in items:
            pats, body, in_body = [], [], False
            for k, f in _fields(item):
                if f == "value" and not in_body:
                    pats.append(k)
                elif k.type == ")":
                    in_body = True
                elif in_body and k.is_named:
                    body.append(k)
            parsed.append((pats, body))
        if unknowns:
            branches = [lambda b=b: self.block(b) for _, b in parsed]
            if not any(self.pattern([p]) == "*" for pats, _ in parsed for p in pats):
                branches.append(lambda: None)
            self.fork(branches, f"`case {text_of(value_node)}`", line_of(node), unknowns)
            return
        for pats, body in parsed:
            if any(matches(value, self.pattern([p])) for p in pats):
                self.block(body)
                return

    def fork(self, branches: list, what: str, line: int, unknowns: list[Unknown]) -> None:
        """Every branch from a copy of the state; the copies merged (module docstring)."""
        roots = tuple(dict.fromkeys(r for u in unknowns for r in u.roots))
        for name in roots:
            if name in self.sets:  # decided by --set NAME=value
                self.used_sets.add(name)
        base = self.state
        results: list[State] = []
        for run in branches:
            self.state = base.copy()
            try:
                run()
            except _Exit:
                continue
            except (_Break, _Return):
                pass
            results.append(self.state)
        if not results:
            self.state = base
            raise _Exit
        why = _why(unknowns, roots)
        self.state = _merge(results, what, line, why, roots, base)

    def test_node(self, node: Node) -> bool | None:
        double = node.children[0].type == "[["
        tokens: list[tuple[str, bool, bool]] = []  # text, an operator, quoted
        start = len(self.seen)
        self._tokens(node, tokens, double)
        unknowns = self.seen[start:]
        self._cond_unknowns = unknowns
        if unknowns:
            return None
        return _test(tokens, double, self)

    def _tokens(self, node: Node, out: list, double: bool) -> None:
        for child in node.children:
            t = child.type
            if t in ("[", "]", "[[", "]]"):
                continue
            if t in ("binary_expression", "unary_expression", "parenthesized_expression", "negated_command"):
                self._tokens(child, out, double)
            elif t == "test_operator" or not child.is_named:
                out.append((text_of(child), True, False))
            elif double:
                quoted = t in ("string", "raw_string", "ansi_c_string")
                value = self.string(child)
                out.append(
                    (
                        value if quoted or t not in ("word", "extglob_pattern", "regex") else text_of(child),
                        False,
                        quoted,
                    )
                )
            else:
                out += [(w, False, False) for w in self.word(child)]

    def test_words(self, words: list[str], unknowns: list[Unknown]) -> bool | None:
        self._cond_unknowns = unknowns
        if unknowns:
            return None
        ops = {"!", "(", ")", "-a", "-o", "=", "==", "!=", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "<", ">"}
        tokens = [(w, w in ops or bool(re.fullmatch(r"-[a-zA-Z]", w)), False) for w in words]
        return _test(tokens, False, self)

    def for_statement(self, node: Node) -> None:
        var = text_of(node.child_by_field_name("variable"))
        values = [c for c, f in _fields(node) if f == "value"]
        body = node.child_by_field_name("body")
        start = len(self.seen)
        items = self.words(values) if values else list(self.state.positional)
        if len(self.seen) > start:
            self.fork([lambda: self.stmt(body), lambda: None], f"`for {var} in ...`", line_of(node), self.seen[start:])
            return
        for item in items[:_LOOP_LIMIT]:
            self.assign(var, item)
            try:
                self.stmt(body)
            except _Break as b:
                if not b.continuing:
                    break

    def c_for(self, node: Node) -> None:
        init, cond, update = (node.child_by_field_name(k) for k in ("initializer", "condition", "update"))
        body = node.child_by_field_name("body")
        try:
            if init is not None:
                self.arith(init)
            for _ in range(_LOOP_LIMIT):
                if cond is not None and not self.arith(cond):
                    return
                try:
                    self.stmt(body)
                except _Break as b:
                    if not b.continuing:
                        return
                if update is not None:
                    self.arith(update)
        except Undecided as exc:
            self.fork([lambda: self.stmt(body), lambda: None], "`for ((...))`", line_of(node), exc.unknowns)

    def while_statement(self, node: Node) -> None:
        until = node.children[0].type == "until"
        conds = [c for c, f in _fields(node) if f == "condition" and c.is_named]
        body = node.child_by_field_name("body")
        for _ in range(_LOOP_LIMIT):
            start = len(self.seen)
            self.block(conds)
            status = self.state.status
            if status is None:
                self.note(f"line {line_of(node)}: a loop whose condition rlsim cannot decide; its body read once")
                self.fork([lambda: self.stmt(body), lambda: None], "`while ...`", line_of(node), self.seen[start:])
                return
            if status == until:
                return
            try:
                self.stmt(body)
            except _Break as b:
                if not b.continuing:
                    return
        self.note(f"line {line_of(node)}: a loop ran {_LOOP_LIMIT} turns; read no further")


def _stop_text(node: Node) -> str:
    """``line N (exit 1 under `if [ -z "$X" ]`)``: an exit and the condition it sits under."""
    cond = node.parent
    while cond is not None and cond.type not in ("if_statement", "list", "case_statement"):
        cond = cond.parent
    under = ""
    if cond is not None:
        under = " ".join(text_of(cond).split())
        under = f" under `{under[: under.find('then') if 'then' in under else 60][:60].strip()}`"
    return f"line {line_of(node)} ({' '.join(text_of(node).split())[:30]}{under})"


def _unescape(text: str) -> str:
    """A here-document's text: a backslash escapes only $ ` \\ and a newline."""
    return re.sub(r"\\([$`\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _fields(node: Node) -> list[tuple[Node, str | None]]:
    return [(c, node.field_name_for_child(i)) for i, c in enumerate(node.children)]


def _inline_script(words: list[str]) -> str | None:
    """The script of ``bash -c STRING`` anywhere in a command (after a launcher: ``srun ... bash -c``)."""
    for k in range(len(words) - 2):
        if words[k].rsplit("/", 1)[-1] in ("bash", "sh") and words[k + 1] == "-c":
            return words[k + 2]
    return None


def _entry(words: list[str], markers: tuple[str, ...]) -> int | None:
    """The arguments after the entry point in a command's words; ``ray job submit ... -- COMMAND`` unwrapped, any
    launcher before it (``srun``, ``torchrun``, ``python -m``, ``uv run``, ``nohup``, ``env A=B``) passed over."""
    start = 0
    if "--" in words and any(w.rsplit("/", 1)[-1] == "ray" for w in words[: words.index("--")]):
        start = words.index("--") + 1
    for k in range(start, len(words)):
        if words[k] in markers or any(words[k].endswith("/" + m) for m in markers):
            return k + 1
    return None


def evaluate(
    text: str, where: str, markers: tuple[str, ...], base: Path | None = None, sets: dict[str, str] | None = None
) -> Evaluator:
    """The script evaluated (module docstring); the result holds the last framework command (``state.found``),
    the notes and which ``sets`` it used."""
    ev = Evaluator(where, markers, base, dict(sets or {}))
    for name, value in ev.sets.items():
        ev.state.vars[name] = value
        ev.state.exported.add(name)
    ev.run_script(text, where)
    return ev
