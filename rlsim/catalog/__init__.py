"""Catalogs of GPUs, models and inference-engine behaviours, as data files with the source of every number.

``gpus.yaml``, ``models.yaml`` and ``engines.yaml`` (named inference-engine behaviours) live beside this module;
``fitted.yaml`` lists every constant of them (and of the schema's ``costs`` defaults) fitted on published rows, with
its prior and provenance (:func:`fitted_constants`, :func:`prior_values`).
Lookups return plain dicts (copies) that ``rlsim.scenario`` turns into ``GPUSpec`` / ``ModelSpec``; the
``source``/``notes``/``verify`` keys carry provenance and are dropped there.

May import: rlsim.io, rlsim.errors, rlsim.phases.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import json
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

import yaml

from rlsim.catalog.hf_config import spec_from_config

# libyaml's parser when PyYAML has it: the catalog files parse in 6 ms instead of 60 (the same data:
# tests/rlsim/test_startup.py compares the two)
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def _load(kind: str) -> dict[str, dict[str, Any]]:
    text = resources.files(__name__).joinpath(f"{kind}.yaml").read_text()
    entries = yaml.load(text, Loader=LOADER) or {}
    if kind == "models":
        entries = {**_config_models(entries), **entries}
    table: dict[str, dict[str, Any]] = {}
    for name, entry in entries.items():
        table[name] = entry
        for alias in entry.get("aliases", ()) or ():
            table[alias] = entry
    return table


def _config_models(entries: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Models the catalog holds as their published config.json (``hf_configs/NAME/config.json``, each with its
    source in ``hf_configs/SOURCES.yaml``), read by rlsim.catalog.hf_config; a hand-written entry of models.yaml for the
    same model (its name or hf_id) wins."""
    folder = resources.files(__name__).joinpath("hf_configs")
    sources = yaml.load(folder.joinpath("SOURCES.yaml").read_text(), Loader=LOADER) or {}
    known = {str(f) for e in entries.values() for f in (e.get("hf_id"), *(e.get("aliases") or ()))} | set(entries)
    out: dict[str, dict[str, Any]] = {}
    for name, src in sources.items():
        hf_id = str(src.get("hf_id") or "")
        if name in known or hf_id in known:
            continue
        spec = spec_from_config(json.loads(folder.joinpath(name, "config.json").read_text()), name, hf_id)
        spec["aliases"] = [hf_id] if hf_id else []
        spec["source"] = {k: src.get(k) for k in ("config_source", "params_source") if src.get(k)}
        spec["notes"] = "read from its config.json by rlsim.catalog.hf_config"
        out[name] = spec
    return out


@cache
def same_architecture() -> dict[str, dict[str, Any]]:
    """Published model names whose architecture is a catalog model's (same_architecture.yaml): name -> ``as``,
    ``source`` and an optional ``note``."""
    text = resources.files(__name__).joinpath("same_architecture.yaml").read_text()
    return yaml.load(text, Loader=LOADER) or {}


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


_ENGINE_OVERRIDES: dict[str, dict[str, Any]] = {}


def engine(name: str) -> dict[str, Any]:
    """The catalog entry of a named engine behaviour (KeyError if unknown), with any values set by
    ``engine_overrides`` (calibrate fits a behaviour's coefficients that way). A behaviour that ``extends`` another
    takes that one's values (with its overrides) and replaces those it states."""
    entry = _get("engines", name)
    parent = entry.pop("extends", None)
    if parent is not None:
        entry = {**engine(parent), **entry}
    entry.update(_ENGINE_OVERRIDES.get(name, {}))
    return entry


@contextlib.contextmanager
def engine_overrides(values: dict[str, dict[str, Any]]) -> Iterator[None]:
    """Within the block, ``engine(name)`` returns the entry with ``values[name]`` applied."""
    saved = dict(_ENGINE_OVERRIDES)
    for name, v in values.items():
        _ENGINE_OVERRIDES[name] = {**_ENGINE_OVERRIDES.get(name, {}), **v}
    try:
        yield
    finally:
        _ENGINE_OVERRIDES.clear()
        _ENGINE_OVERRIDES.update(saved)


def fitted_constants() -> dict[str, dict[str, Any]]:
    """Every constant fitted on published rows (``fitted.yaml``): ``costs.FIELD`` or ``engines.BEHAVIOUR.FIELD`` ->
    its entry (``value`` rlsim uses, ``prior`` before any fit, ``prior_source``, ``mechanism``, ``fitted_on``,
    ``command``, ``date``)."""
    return copy.deepcopy(_load("fitted"))


def prior_values() -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(costs fields, {behaviour: {field: value}}) with every fitted constant at its prior: what
    ``engine_overrides`` and a scenario's ``costs`` take to score a model that saw no published row."""
    costs: dict[str, Any] = {}
    engines: dict[str, dict[str, Any]] = {}
    for name, entry in _load("fitted").items():
        kind, _, rest = name.partition(".")
        if kind == "costs":
            costs[rest] = entry["prior"]
        else:
            behaviour, _, key = rest.rpartition(".")
            engines.setdefault(behaviour, {})[key] = entry["prior"]
    return costs, engines


@cache
def _systems_error() -> dict[str, Any]:
    text = resources.files(__name__).joinpath("systems_error.yaml").read_text()
    return yaml.load(text, Loader=LOADER) or {}


def systems_error() -> dict[str, Any]:
    """``systems_error.yaml`` (written by scripts/accuracy.py): ``method``, ``date`` and ``rows``, each development
    row's held-out step-time error with its ``release``, ``gpu`` and ``family`` (rlsim.run.systems_error)."""
    return copy.deepcopy(_systems_error())


def engine_names() -> list[str]:
    return list(_load("engines"))


def gpu_names() -> list[str]:
    return list(_load("gpus"))


# checkpoint suffixes whose architecture is the catalog model's (fine-tuned or re-cast weights, or the pretrained
# base of an instruct release: the same config.json shapes, e.g. Qwen3-8B-Base and Qwen3-8B)
VARIANT_SUFFIXES = ("-Instruct", "-instruct", "-Chat", "-chat", "-it", "-Base", "-base")
VARIANT_SUFFIXES += ("-bf16", "-BF16", "-fp8", "-FP8")  # re-cast weights


def nearest_names(value: str, names: list[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``names`` close to ``value``, for a "did you mean" line: compared without an organisation,
    case and a VARIANT_SUFFIXES suffix first (``Qwen/Qwen2-7b-Instruct`` -> ``Qwen2-7B``), then by spelling."""

    def key(name: str) -> str:
        tail = name.rsplit("/", 1)[-1]
        for suffix in VARIANT_SUFFIXES:
            tail = tail.removesuffix(suffix)
        return tail.lower()

    keyed: dict[str, str] = {}
    for name in names:
        keyed.setdefault(key(name), name)
    exact = [keyed[key(value)]] if key(value) in keyed else []
    close = [keyed[k] for k in difflib.get_close_matches(key(value), list(keyed), n=n, cutoff=0.5)]
    return list(dict.fromkeys(exact + close))[:n]


def model_names(aliases: bool = True) -> list[str]:
    """The catalog's model names, with every alias (default) or the entries' own names only."""
    table = _load("models")
    return list(table) if aliases else [n for n, e in table.items() if n not in (e.get("aliases") or ())]


def sources(kind: str, name: str) -> dict[str, Any]:
    """Provenance of a catalog entry: its ``source`` mapping and ``verify`` flag."""
    entry = _get("gpus" if kind == "gpu" else "models", name)
    return {"source": entry.get("source", {}), "verify": bool(entry.get("verify", False))}
