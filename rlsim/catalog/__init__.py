"""Catalogs of GPUs and models, as data files with the source of every number.

``gpus.yaml`` and ``models.yaml`` live beside this module. Lookups return plain dicts (copies) that
``rlsim.scenario`` turns into ``GPUSpec`` / ``ModelSpec``; the ``source``/``notes``/``verify`` keys carry
provenance and are dropped there.
"""

from __future__ import annotations

import copy
from functools import cache
from importlib import resources
from typing import Any

import yaml


@cache
def _load(kind: str) -> dict[str, dict[str, Any]]:
    text = resources.files(__name__).joinpath(f"{kind}.yaml").read_text()
    entries = yaml.safe_load(text) or {}
    table: dict[str, dict[str, Any]] = {}
    for name, entry in entries.items():
        table[name] = entry
        for alias in entry.get("aliases", ()) or ():
            table[alias] = entry
    return table


def _get(kind: str, name: str) -> dict[str, Any]:
    table = _load(kind)
    if name not in table:
        raise KeyError(name)
    entry = copy.deepcopy(table[name])
    entry["name"] = name
    return entry


def gpu(name: str) -> dict[str, Any]:
    """The catalog entry of a GPU (KeyError if unknown)."""
    return _get("gpus", name)


def model(name: str) -> dict[str, Any]:
    """The catalog entry of a model (KeyError if unknown); aliases resolve to their entry."""
    return _get("models", name)


def gpu_names() -> list[str]:
    return list(_load("gpus"))


def model_names() -> list[str]:
    return list(_load("models"))


def sources(kind: str, name: str) -> dict[str, Any]:
    """Provenance of a catalog entry: its ``source`` mapping and ``verify`` flag."""
    entry = _get("gpus" if kind == "gpu" else "models", name)
    return {"source": entry.get("source", {}), "verify": bool(entry.get("verify", False))}
