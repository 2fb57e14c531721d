"""Building a scenario from plain data (as read from YAML): catalog names expanded, unknown keys, types and each
field's bounds checked, then the cross-field rules of :mod:`rlsim.scenario.validation`. Every error is a
:class:`ScenarioError` naming the field path, the value, the rule and the fix.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

from rlsim import catalog
from rlsim.catalog.hf_config import ModelConfigError, spec_from_path
from rlsim.errors import ScenarioError, suggest
from rlsim.scenario import validation
from rlsim.scenario.overrides import apply_overrides, as_overrides
from rlsim.schema.scenario import Scenario, to_plain
from rlsim.schema.sections import Learning
from rlsim.schema.specs import GPUSpec, ModelSpec


def from_dict(raw: dict[str, Any]) -> Scenario:
    """Build and validate a scenario from plain data (as read from YAML)."""
    if not isinstance(raw, dict):
        raise ScenarioError("scenario", raw, "must be a mapping of sections", "see scenarios/*.yaml")
    data = dict(raw)
    if "model" not in data:
        raise ScenarioError("model", None, "is required", "name a catalog model, e.g. model: Qwen2.5-7B")
    if "hardware" not in data or not isinstance(data.get("hardware"), dict) or "gpu" not in data["hardware"]:
        raise ScenarioError("hardware.gpu", None, "is required", "name a catalog GPU, e.g. gpu: H100-SXM")
    scenario = _build(Scenario, data, "")
    validation.validate(scenario)
    return scenario


def with_overrides(scenario: Scenario, overrides: dict[str, Any] | list[str]) -> Scenario:
    """A new scenario: ``scenario`` with dotted-key overrides applied (``{"workload.prompts_per_step": 256}`` or
    ``["workload.prompts_per_step=256"]``), validated once."""
    return from_dict(apply_overrides(scenario.to_dict(), as_overrides(overrides)))


def with_learning(scenario: Scenario, overrides: dict[str, Any]) -> Scenario:
    """``scenario`` with ``learning.*`` overrides applied: only the learning section is rebuilt and validated (no other
    rule reads it), what a sweep over LR rules needs a thousand times. Any other key is refused (a bug)."""
    if any(not k.startswith("learning.") for k in overrides):
        raise ValueError(f"with_learning takes learning.* keys only, not {sorted(overrides)}")
    raw = apply_overrides({"learning": to_plain(scenario.learning)}, overrides)
    learning = _build(Learning, raw["learning"], "learning")
    validation.validate_learning(learning)
    return dataclasses.replace(scenario, learning=learning)


def _resolve_spec(kind: str, value: Any, path: str) -> dict[str, Any]:
    """Expand a catalog name (or a mapping with ``base: NAME``) into a full spec mapping."""
    lookup = catalog.model if kind == "model" else catalog.gpu
    names = catalog.model_names if kind == "model" else catalog.gpu_names
    if isinstance(value, str):
        try:
            return lookup(value)
        except KeyError:
            pass
        if kind == "model" and (value.endswith(".json") or Path(value).expanduser().is_dir()):
            try:
                return spec_from_path(value)
            except ModelConfigError as exc:
                raise ScenarioError(path, value, "cannot be read as a model's config.json", str(exc)) from None
        near = catalog.nearest_names(value, names())
        fix = f"did you mean {' or '.join(near)}? " if near else ""
        if kind == "model":
            raise ScenarioError(
                path,
                value,
                "is not a catalog model",
                f"{fix}Give a catalog name ({', '.join(catalog.model_names(aliases=False))}), the path of the "
                "model's Hugging Face config.json (or of the model folder holding one), or its fields",
            )
        raise ScenarioError(path, value, f"is not a catalog {kind}", f"{fix}use one of: {', '.join(names())}")
    if isinstance(value, dict):
        value = dict(value)
        base = value.pop("base", None)
        if base is not None:
            merged = _resolve_spec(kind, base, f"{path}.base")
            merged.update(value)
            return merged
        return value
    raise ScenarioError(path, value, f"must be a catalog {kind} name or a mapping", f"e.g. {path}: {names()[0]}")


def check_key_path(key: str, value: Any = None) -> None:
    """Refuse a dotted scenario key (``--grid``, ``--set``, decide's sides) whose path names no field, before any
    work, with the nearest known key; a path below a field that is not a section (a mapping such as plan.prices,
    a list) is not checked further."""
    cls: Any = Scenario
    done: list[str] = []
    for part in key.split("."):
        if cls is None:
            return
        fields = {f.name: f for f in dataclasses.fields(cls)}
        if part not in fields:
            raise ScenarioError(".".join([*done, part]), value, "is not a known key", suggest(part, fields))
        tp = _type_hints(cls)[part]
        if typing.get_origin(tp) in (Union, types.UnionType):
            tp = next((a for a in typing.get_args(tp) if a is not type(None)), tp)
        cls = tp if dataclasses.is_dataclass(tp) else None
        done.append(part)


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)  # resolving string annotations costs ~0.2 ms a class: once each


SECTION_CACHE_SIZE = 512
_sections: dict[tuple[type, str, str], Any] = {}


def _build(cls: type, data: Any, path: str) -> Any:
    """Construct dataclass ``cls`` from a mapping, checking keys, types and per-field bounds. A top-level section
    built before from equal data is reused (frozen, so shared safely): a plan or sweep builds thousands of scenarios
    that differ in a few sections, and converting every field of every section was a quarter of a plan's time
    (cProfile of a 1,090-configuration plan: 3.9 of 13.4 s in from_dict). Errors are not cached."""
    if path and "." not in path and dataclasses.is_dataclass(cls):
        try:
            key = (cls, path, json.dumps(data, sort_keys=True))
        except (TypeError, ValueError):  # not plain data: build it as it is
            return _build_now(cls, data, path)
        hit = _sections.get(key)
        if hit is None:
            hit = _build_now(cls, data, path)
            if len(_sections) >= SECTION_CACHE_SIZE:
                _sections.clear()
            _sections[key] = hit
        return hit
    return _build_now(cls, data, path)


def _build_now(cls: type, data: Any, path: str) -> Any:
    where = path or "scenario"
    if not isinstance(data, dict):
        raise ScenarioError(where, data, "must be a mapping", f"write {where} as key: value lines")
    hints = _type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [key for key in data if key not in fields]
    if unknown:
        key = unknown[0]
        raise ScenarioError(
            f"{path}.{key}" if path else str(key), data[key], "is not a known key", suggest(key, fields)
        )
    kwargs: dict[str, Any] = {}
    for name, f in fields.items():
        fpath = f"{path}.{name}" if path else name
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ScenarioError(fpath, None, "is required", f"add {fpath} to the scenario")
            continue
        kwargs[name] = _convert(hints[name], data[name], fpath, f.metadata)
    return cls(**kwargs)


def _convert(tp: Any, value: Any, path: str, meta: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return _convert(args[0], value, path, meta)
    if tp is ModelSpec or tp is GPUSpec:
        kind = "model" if tp is ModelSpec else "gpu"
        spec = _resolve_spec(kind, value, path)
        spec.setdefault("name", value if isinstance(value, str) else "custom")
        for extra in ("source", "notes", "verify", "aliases"):
            spec.pop(extra, None)
        return _build(tp, spec, path)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):  # a section's class (a hint is never an instance)
        return _build(tp, value, path)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            raise ScenarioError(path, value, "is not allowed", suggest(value, [str(a) for a in allowed]))
        return value
    if origin is dict:
        if not isinstance(value, dict):
            raise ScenarioError(path, value, "must be a mapping", f"write {path} as key: value lines")
        inner = typing.get_args(tp)[1]
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ScenarioError(f"{path}.{k}", k, "must be a string key", "quote the key")
            out[k] = _convert(inner, v, f"{path}.{k}", {})
        return out
    if tp is Any:
        if isinstance(value, (dict, list)):
            raise ScenarioError(path, value, "must be a single value", "give a number, string or boolean")
        return value
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ScenarioError(path, value, "must be a list", f"write {path}: [..]")
        inner = typing.get_args(tp)[0]
        return tuple(_convert(inner, v, f"{path}[{i}]", {}) for i, v in enumerate(value))
    if tp is bool:
        if not isinstance(value, bool):
            raise ScenarioError(path, value, "must be true or false", f"write {path}: true or false")
        return value
    if tp is int:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or (isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()))
        ):
            raise ScenarioError(path, value, "must be an integer", f"write a whole number for {path}")
        value = int(value)
    elif tp is float:
        # NaN, infinities and integers past the largest float (math.isfinite would raise OverflowError) fail this
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not abs(value) <= sys.float_info.max:
            raise ScenarioError(path, value, "must be a finite number", f"write a number for {path}")
        value = float(value)
    elif tp is str:
        if not isinstance(value, str):
            raise ScenarioError(path, value, "must be a string", f"quote the value of {path}")
        return value
    check_bounds(value, path, meta)
    return value


def check_bounds(value: float, path: str, meta: Any) -> None:
    for key, op, word in (
        ("ge", lambda a, b: a >= b, "at least"),
        ("gt", lambda a, b: a > b, "greater than"),
        ("le", lambda a, b: a <= b, "at most"),
        ("lt", lambda a, b: a < b, "less than"),
    ):
        bound = meta.get(key) if meta else None
        if bound is not None and not op(value, bound):
            raise ScenarioError(path, value, f"must be {word} {bound}", f"set {path} to a value {word} {bound}")
