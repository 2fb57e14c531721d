"""Errors raised on bad user input. Each names the field path, the value and the rule, and says how to fix it."""

from __future__ import annotations


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
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        msg = f"{field}: {shown} {problem}"
        if fix:
            msg += f"; {fix}"
        super().__init__(one_line(msg))


def one_line(text: str) -> str:
    """Escape line breaks so that an error message (which may echo user text) stays on one line."""
    lines = text.splitlines() or [""]
    return "\\n".join(lines)


class ProfileError(RlsimError, ValueError):
    """A profile file is missing, malformed or of an unsupported schema version."""


def run_command(prog: str, args: object, interrupted: str = "interrupted") -> int:
    """Run a parsed CLI command (``args.func(args)``): bad input (an RlsimError) prints one line
    ``PROG: error: ...`` on stderr and returns 2; Ctrl-C returns 130. Shared by rlsim, rlsim-real, rlsim-calibrate."""
    import sys

    try:
        return args.func(args)  # type: ignore[attr-defined]
    except RlsimError as exc:
        print(f"{prog}: error: {one_line(str(exc))}", file=sys.stderr)  # noqa: T201 - the CLIs' error channel
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: {interrupted}", file=sys.stderr)  # noqa: T201
        return 130
