"""NeMo RL recipe YAML as NeMo RL reads it: the ``defaults:`` chain (``nemo_rl/utils/config.py``
load_config_with_inheritance: parents first, the child wins key by key, ``_override_: true`` replaces a section) and
the ``${...}`` interpolations with the ``mul`` / ``div`` / ``max`` resolvers NeMo RL registers (the adapter's ``read``
and ``resolve``). The mapping of the resolved keys to a scenario is :mod:`rlsim.frameworks.nemo_rl.mapping`'s.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import ImportConfigError, read_config
from rlsim.scenario.overrides import parse_scalar


def read(path: Path) -> dict[str, Any]:
    """The recipe at ``path`` merged with its ``defaults:`` chain (parents first, in order; the child wins; a
    section with ``_override_: true`` replaces the parent's); a cycle or a missing parent is refused naming the
    file."""
    return _read_chain(Path(path), ())


def _read_chain(path: Path, seen: tuple[Path, ...]) -> dict[str, Any]:
    key = path.resolve()
    if key in seen:
        chain = " -> ".join(p.name for p in (*seen, key))
        raise ImportConfigError(f"{path}: defaults chain has a cycle ({chain}); remove one of the defaults: entries")
    if seen and not path.is_file():
        raise ImportConfigError(
            f"{seen[-1]}: defaults: {path} is not a file (paths are relative to the recipe's directory); fix the path"
        )
    config = read_config(path, "nemo-rl")
    parents = config.pop("defaults", None)
    if parents is None:
        return config
    if isinstance(parents, str):
        parents = [parents]
    if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
        raise ImportConfigError(f"{path}: defaults must be a path or a list of paths to parent recipes")
    merged: dict[str, Any] = {}
    for parent in parents:
        parent_path = Path(parent) if parent.startswith("/") else path.parent / parent
        merged = _merge(merged, _read_chain(parent_path, (*seen, key)))
    return _merge(merged, config)


def _merge(base: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """OmegaConf-style merge: mappings merge key by key, anything else (null included) replaces."""
    out = dict(base)
    for key, value in child.items():
        if isinstance(value, dict):
            value = dict(value)
            override = value.pop("_override_", False)
            if not override and isinstance(out.get(key), dict):
                out[key] = _merge(out[key], value)
                continue
            out[key] = _merge({}, value)
        else:
            out[key] = value
    return out


_INTERP = re.compile(r"\$\{")
RESOLVERS = {"mul": lambda a, b: a * b, "div": lambda a, b: a / b, "max": lambda a, b: max(a, b)}


def resolve(flat: dict[str, Any]) -> dict[str, Any]:
    """Every ``${a.b}`` (and ``${mul:x, y}``, ``${div:..}``, ``${max:..}``) in the values replaced by what it names.
    A value that cannot be resolved (it names no key, a cycle, another resolver) stays as written: an unused key is
    listed so, a mapped one is refused by its check naming the key."""
    out = dict(flat)
    for key in flat:
        try:
            out[key] = _value(out, key, ())
        except ImportConfigError:
            out[key] = flat[key]
    return out


def _value(flat: dict[str, Any], key: str, stack: tuple[str, ...]) -> Any:
    value = flat[key]
    if not isinstance(value, str) or "${" not in value:
        return value
    if key in stack:
        raise ImportConfigError(f"{key}: its interpolation refers back to itself ({' -> '.join((*stack, key))})")
    return _interpolate(flat, value, (*stack, key))


def _interpolate(flat: dict[str, Any], text: str, stack: tuple[str, ...]) -> Any:
    """``text`` with its interpolations resolved: a text that is one interpolation keeps the value's type."""
    parts: list[Any] = []
    i = 0
    while i < len(text):
        m = _INTERP.search(text, i)
        if m is None:
            parts.append(text[i:])
            break
        parts.append(text[i : m.start()])
        end = _closing(text, m.end(), stack[-1])
        parts.append(_expression(flat, text[m.end() : end].strip(), stack))
        i = end + 1
    parts = [p for p in parts if p != ""]
    if len(parts) == 1:
        return parts[0]
    return "".join(str(p) for p in parts)


def _closing(text: str, start: int, key: str) -> int:
    depth = 1
    for j in range(start, len(text)):
        if text.startswith("${", j):
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    raise ImportConfigError(f"{key}: {text!r} has an unclosed ${{; fix the interpolation")


def _expression(flat: dict[str, Any], expr: str, stack: tuple[str, ...]) -> Any:
    name, colon, rest = expr.partition(":")
    if colon and name in RESOLVERS:
        args = [_argument(flat, a.strip(), stack) for a in _split_args(rest)]
        try:
            return RESOLVERS[name](*args)
        except TypeError:
            raise ImportConfigError(f"{stack[-1]}: ${{{expr}}} needs two numbers; fix the values it names") from None
    if colon:
        raise ImportConfigError(f"{stack[-1]}: resolver {name!r} is not one NeMo RL registers (mul, div, max)")
    if expr not in flat:
        raise ImportConfigError(
            f"{stack[-1]}: ${{{expr}}} names no key of the config; fix the interpolation or --set it"
        )
    return _value(flat, expr, stack)


def _argument(flat: dict[str, Any], text: str, stack: tuple[str, ...]) -> Any:
    if "${" in text:
        return _interpolate(flat, text, stack)
    return parse_scalar(text)


def _split_args(text: str) -> list[str]:
    """Split resolver arguments at top-level commas."""
    args, depth, cur = [], 0, ""
    for j, ch in enumerate(text):
        if text.startswith("${", j):
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur)
            cur = ""
        else:
            cur += ch
    args.append(cur)
    return args
