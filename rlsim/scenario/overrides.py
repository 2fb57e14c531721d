"""Dotted-key overrides: ``--set key=value`` text read into ``{"section.field": value}`` and applied to a
scenario's plain data before it is validated.
"""

from __future__ import annotations

from typing import Any

import yaml

from rlsim.errors import ScenarioError


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """Parse ``a.b=c`` strings; values are read as YAML scalars (numbers, booleans, null, strings)."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ScenarioError("--set", item, "is not of the form key=value", "write e.g. run.steps=50")
        key, _, text = item.partition("=")
        key = key.strip()
        if not key:
            raise ScenarioError("--set", item, "has an empty key", "write e.g. run.steps=50")
        out[key] = parse_scalar(text.strip())
    return out


def parse_scalar(text: str) -> Any:
    try:
        value = yaml.safe_load(text) if text else ""
    except yaml.YAMLError:
        return text
    if isinstance(value, str):
        try:  # YAML 1.1 reads "1e-6" as a string
            return float(value) if any(ch.isdigit() for ch in value) else value
        except ValueError:
            return value
    return value


def _set_path(raw: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node: Any = raw
    for i, part in enumerate(parts[:-1]):
        nxt = node.get(part) if isinstance(node, dict) else None
        if isinstance(nxt, str) and part in ("model", "gpu", "critic_model"):
            nxt = {"base": nxt}  # override one number of a catalog entry
        elif nxt is None:
            nxt = {}
        elif not isinstance(nxt, dict):
            raise ScenarioError(".".join(parts[: i + 1]), nxt, "is not a section", f"cannot set {dotted}")
        node[part] = nxt
        node = nxt
    node[parts[-1]] = value
