"""Errors raised on bad user input. Each names the field path, the value and the rule, and says how to fix it."""

from __future__ import annotations

import difflib
import reprlib


class RlsimError(Exception):
    """Base class for errors the CLI reports in one line with exit status 2."""


class ScenarioError(RlsimError, ValueError):
    """A scenario field is invalid.

    The message reads ``<field>: <value!r> <what is wrong>; <how to fix>`` so that one line tells the user where,
    what and how.
    """

    def __init__(self, field: str, value: object, problem: str, fix: str = "") -> None:
        self.field = field
        self.value = value
        self.problem = problem
        self.fix = fix
        shown = _short_repr(value)
        msg = f"{field}: {shown} {problem}"
        if fix:
            msg += f"; {fix}"
        super().__init__(one_line(msg))


def _short_repr(value: object) -> str:
    """repr(value) in at most 80 characters, never building the whole repr of a huge value."""
    r = reprlib.Repr()
    r.maxlist = r.maxtuple = r.maxdict = r.maxset = 6
    r.maxstring = r.maxother = 60
    r.maxlevel = 3
    shown = r.repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def one_line(text: str) -> str:
    """Escape line breaks so that an error message (which may echo user text) stays on one line."""
    lines = text.splitlines() or [""]
    return "\\n".join(lines)


class NotTextError(RlsimError, ValueError):
    """An input file that should be text is binary or not UTF-8."""


class LogImportError(RlsimError, ValueError):
    """A framework's metrics log that cannot be read: missing, of an unknown format, without one readable step or
    without the batch size (``rlsim.frameworks.logs``)."""


class ProfileError(RlsimError, ValueError):
    """A profile file is missing, malformed or of an unsupported schema version."""


def suggest(given: object, known: object) -> str:
    """``did you mean X? use one of: ...``: the nearest of ``known`` to ``given`` first, when one is near (the fix
    part of a ScenarioError for a misspelt key or value)."""
    names = [str(k) for k in known]  # type: ignore[attr-defined]
    near = difflib.get_close_matches(str(given), names, n=1, cutoff=0.6)
    return (f"did you mean {near[0]}? " if near else "") + f"use one of: {', '.join(names)}"
