"""ROLL's ``device_mapping`` strings read as device ids, never evaluated (ROLL evaluates them as Python:
alibaba/ROLL@v0.3.0 roll/configs/worker_config.py:312)."""

from __future__ import annotations

import re
from typing import Any

from rlsim.frameworks.adapter import ImportConfigError

_RANGE = re.compile(r"^list\(\s*range\(\s*(-?\d+)\s*,\s*(-?\d+)\s*(?:,\s*(-?\d+)\s*)?\)\s*\)$")
_LITERAL = re.compile(r"^\[\s*(?:-?\d+\s*(?:,\s*-?\d+\s*)*,?)?\]$")


def devices(value: Any, key: str) -> list[int] | None:
    """A ROLL device_mapping as its device ids, read and never evaluated: ``list(range(a, b[, s]))``, a literal
    list (``[0, 1, 2]``, as YAML or as text, or ``list([0, 1, 2])``), or a ``+`` of those; None for none."""
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(value)
    text = str(value).strip()
    out: list[int] = []
    for part in _split_plus(text):
        part = part.strip()
        inner = re.fullmatch(r"list\(\s*(\[.*\])\s*\)", part, re.S)  # list([0, 1, ...])
        part = inner[1] if inner else part
        m = _RANGE.match(part)
        if m:
            step = int(m[3]) if m[3] else 1
            if step == 0:
                raise ImportConfigError(f"{key}: {text!r}: range() with step 0; fix it")
            out += list(range(int(m[1]), int(m[2]), step))
        elif _LITERAL.match(part):
            out += [int(v) for v in re.findall(r"-?\d+", part)]
        else:
            raise ImportConfigError(
                f"{key}: {text!r} is not a device list rlsim reads without running it (list(range(a, b[, s])) or "
                "[0, 1, ...]); write it in one of those forms"
            )
    if len(set(out)) != len(out):
        raise ImportConfigError(f"{key}: {text!r} names a device twice; fix it")
    return out


def _split_plus(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if ch == "+" and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]
