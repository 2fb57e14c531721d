"""Launch scripts read as bash reads them and never run: the framework's command line out of a shell script.

People launch verl, OpenRLHF and TRL with shell scripts (``python3 -m verl.trainer.main_ppo key=value \\`` over
many lines, variables with defaults, arrays, ``case`` on the device, functions, ``bash -c "..."``, ``ray job
submit ... -- python3 -m ...``). :mod:`rlsim.frameworks.shell` parses the script with bash's grammar (tree-sitter
with tree-sitter-bash: it reads 213 of the 214 launch scripts of verl v0.7.0, OpenRLHF v0.11.0 and slime v0.3.1 where
bashlex fails on 97, having no arrays and no ``$((...))``; :mod:`~rlsim.frameworks.shell.parse`) and evaluates it
without running anything (:mod:`~rlsim.frameworks.shell.evaluate`, :mod:`~rlsim.frameworks.shell.expand`):

* assignments (with ``export`` / ``local`` / ``declare`` / ``readonly``), arrays (``A=(...)``, ``A+=(...)``,
  ``"${A[@]}"``, ``${#A[@]}``), every parameter expansion (``:-`` ``-`` ``:=`` ``=`` ``:+`` ``+`` ``#`` ``##``
  ``%`` ``%%`` ``/`` ``//``, ``${#X}``, nested and quoted), arithmetic (``$((...))``, ``((...))``, ``let``);
* the script is read as run with no arguments (``NUM_GPUS=${1:-8}`` gives 8), said in a note;
* ``if`` / ``case`` / ``[[ ]]`` / ``[ ]`` / ``test`` / ``&&`` / ``||`` decided by value where the values are known;
  where one depends on a variable the script does not set, every branch is read, and a word of the framework
  command that the branches make differently is refused naming the variable and the values, unless
  ``--set NAME=value`` gives that variable (a ``--set`` whose NAME the script uses as a shell variable sets it
  before the script is read; :func:`shell_sets`);
* functions, ``source`` / ``.`` of a file beside the script (or up the repository it sits in; not found: a
  note), here-documents fed to bash, ``bash -c``, ``eval``; the entry point found after any launcher (``srun``,
  ``torchrun``, ``deepspeed``, ``accelerate launch``, ``python -m``, ``uv run``, ``nohup``, ``env A=B``, ``ray job
  submit ... --``);
* a command substitution (``$(...)``, backquotes) is never run: on the framework's command line it is refused in
  one line; a variable set by one (``WORK_DIR=$(pwd)``) stays as written where it is used, said in a note, and so
  does a variable the script never sets (``${NNODES}``), so a key that needs its value is refused by the importer
  naming the key.
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import ImportConfigError
from rlsim.frameworks.shell.evaluate import evaluate
from rlsim.frameworks.shell.expand import Refused
from rlsim.frameworks.shell.parse import parse, variable_names

_SETS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("shell_sets", default=None)
_USED: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("shell_sets_used", default=None)


@contextlib.contextmanager
def shell_sets(sets: dict[str, Any]) -> Iterator[set[str]]:
    """While open, launch scripts read with the ``--set`` items whose NAME is a shell variable name; yields the
    names a script used (config_import takes those out of the framework keys)."""
    used: set[str] = set()
    tokens = _SETS.set({k: v for k, v in sets.items() if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)}), _USED.set(used)
    try:
        yield used
    finally:
        _SETS.reset(tokens[0])
        _USED.reset(tokens[1])


def _shell_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def framework_command(
    text: str, where: str, markers: tuple[str, ...], base: Path | None = None
) -> tuple[list[str], list[str]]:
    """The words after the framework's entry point (``markers``: ``verl.trainer.main_ppo``) in the last command
    of the script that runs it, evaluated (module docstring), and notes on what was assumed. ``base``: the
    script's folder, for ``source``. A refusal and every note are one line (the script's own text in them too)."""
    try:
        words, notes = _command(text, where, markers, base)
    except ImportConfigError as exc:
        raise ImportConfigError(" ".join(str(exc).split())) from None
    return words, [" ".join(n.split()) for n in notes]


def _command(text: str, where: str, markers: tuple[str, ...], base: Path | None) -> tuple[list[str], list[str]]:
    given = _SETS.get() or {}
    names = variable_names(parse(text)) if given else set()
    sets = {k: _shell_value(v) for k, v in given.items() if k in names or re.search(rf"\$\{{?[#!]?{k}\b", text)}
    used = _USED.get()
    if used is not None:
        used.update(sets)
    try:
        ev = evaluate(text, where, markers, base, sets)
    except Refused as exc:
        raise ImportConfigError(str(exc)) from None
    except RecursionError:
        raise ImportConfigError(f"{where}: nests deeper than rlsim reads; simplify the script") from None
    launch = ev.state.found
    if launch is None and ev.stopped:
        raise ImportConfigError(
            f"{where}: stops at {ev.stopped} before it runs {' or '.join(markers)}; give what it checks "
            "(--set NAME=VALUE of the script's variable)"
        )
    if launch is None:
        raise ImportConfigError(f"{where}: runs no {' or '.join(markers)}; give the launch script or config that does")
    if launch.branch is not None:
        raise ImportConfigError(f"{where}: {launch.branch.text}; {_pick(launch.branch)}")
    notes = list(ev.notes) if any("no arguments" in n for n in ev.notes) else []
    notes = [n for n in ev.notes if "no arguments" not in n or notes]
    for unk in launch.unknowns:
        if unk.kind in ("branch", "parse"):
            raise ImportConfigError(f"{where}: {unk.text}; {_pick(unk)}")
        if unk.kind == "subst" and "command substitution" in unk.text and not unk.roots and _direct(unk, launch):
            written = unk.text.split(" is a command substitution")[0]
            form = "(`...`)" if written.startswith("`") else "($(...))"
            raise ImportConfigError(f"{where}: {written}: a command substitution {form} is not run; write its value")
    for unk in launch.unknowns:
        _add(notes, f"{unk.text}; left as written")
    for name in sets:
        final = ev.state.vars.get(name, sets[name])
        later = f"; the script then sets it itself ({name}={final})" if final != sets[name] else ""
        _add(notes, f"--set {name}={sets[name]}: the script's shell variable {name}, set before it is read{later}")
    return [a for a in launch.words if a != ""], notes


def _direct(unk: Any, launch: Any) -> bool:
    written = unk.text.split(" is a command substitution")[0]
    return any(written in w for w in launch.words)


def _pick(unk: Any) -> str:
    if not unk.roots:
        return "write the value in the script"
    hint = ""
    for name in _SETS.get() or {}:
        near = difflib.get_close_matches(name, unk.roots, n=1, cutoff=0.75)
        if near and name not in unk.roots:
            hint = f" (--set {name}: not a variable of the script; did you mean {near[0]}?)"
    return "pick the branch with " + " / ".join(f"--set {r}=VALUE" for r in unk.roots) + hint


def _add(notes: list[str], text: str) -> None:
    if text not in notes:
        notes.append(text)
