"""Reading a framework's own training config into an rlsim scenario (``rlsim import-config``).

A framework module (:mod:`rlsim.frameworks.verl`, :mod:`~rlsim.frameworks.trl`, :mod:`~rlsim.frameworks.openrlhf`,
:mod:`~rlsim.frameworks.nemo_rl`; :data:`FORMATS`) holds its mapping ``TABLE`` (framework key, its default in the
framework, the rlsim field it sets, the rule) and ``to_scenario(source)``, which reads the config through a
:class:`Source` and returns the scenario sections. A module may also define ``read(path)`` (a file form of its own:
OpenRLHF's argument lists, NeMo RL's ``defaults:`` chain), ``canonical(flat)`` (other spellings of its keys to the
TABLE's, and how each was spelled) and ``resolve(flat)`` (interpolations, after the overrides). This module does
what the formats share:

* read the file (YAML, or JSON, which YAML reads too) and flatten it to dotted keys (``data.train_batch_size``);
* apply the framework overrides (``--set KEY=VALUE``, dotted framework keys) before anything is mapped;
* track which keys the mapping read: every other key of the file is listed (stderr and ``assumptions``), never
  dropped silently; a key the mapping reads must be in the module's ``TABLE`` (so the TABLE is what the code does);
* the rlsim-side facts the framework config lacks, as documented defaults the scenario lists under
  ``assumptions``: the GPU (``DEFAULT_GPU``), prompt and response length distributions (:func:`length_assumptions`);
* resolve a Hugging Face model name to the rlsim catalog (:func:`resolve_model`);
* apply the rlsim overrides (``--scenario-set``) and validate the scenario once.

Bad input (a missing file, a contradiction between two keys, a model outside the catalog) raises
:class:`rlsim.errors.RlsimError` with one line naming the key(s) and the fix.
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from rlsim import catalog
from rlsim.catalog import VARIANT_SUFFIXES
from rlsim.errors import RlsimError, ScenarioError
from rlsim.io.files import load_yaml, read_text

DEFAULT_GPU = "H100-SXM"  # assumption: neither verl nor TRL configs name the GPU type
PROMPT_FRACTION = 0.5  # assumption: prompts fixed at half the framework's maximum prompt length
RESPONSE_MEAN_FRACTION = 0.5  # assumption: mean response length before clipping, as a fraction of the maximum
RESPONSE_SIGMA = 0.6  # assumption: standard deviation of log response length (as rlsim.frameworks.nemo_rl)
_MISSING = object()


class ImportConfigError(RlsimError, ValueError):
    """A framework config that cannot be read or mapped (the message names the key and the fix)."""


@dataclass(frozen=True)
class Row:
    """One line of a mapping TABLE: a framework key, its default in the framework (None: none), the rlsim field it
    sets and how."""

    key: str
    default: Any
    field: str
    rule: str


@dataclass
class Source:
    """A framework config as flat dotted keys, recording which keys were read and which framework defaults
    stood in for absent ones."""

    flat: dict[str, Any]
    table: tuple[Row, ...]
    framework: str
    used: set[str] = field(default_factory=set)
    defaults_used: dict[str, Any] = field(default_factory=dict)
    spelling: dict[str, str] = field(default_factory=dict)  # TABLE key -> how the file (or --set) spelled it
    legacy: bool = False  # the file spells its keys the framework's older way (canonical() says)

    def name(self, key: str) -> str:
        """``key`` as the user spelled it (messages name the key the user wrote)."""
        return self.spelling.get(key, key)

    def _row(self, key: str) -> Row:
        for row in self.table:
            if row.key == key:
                return row
        raise KeyError(f"{self.framework}: {key} is read but not in the mapping TABLE")  # a bug, not bad input

    def get(self, key: str, default: Any = _MISSING) -> Any:
        """The value of ``key``; when absent (or null), ``default`` if given, else the TABLE's framework default."""
        row = self._row(key)
        self.used.add(key)
        value = self.flat.get(key)
        if value is not None:
            return value
        fallback = row.default if default is _MISSING else default
        if fallback is not None:
            self.defaults_used[key] = fallback
        return fallback

    def given(self, key: str) -> bool:
        """Whether the file (or --set) gives ``key`` a value; reading it counts as using it."""
        self._row(key)
        self.used.add(key)
        return self.flat.get(key) is not None

    def unused(self) -> list[str]:
        return [k for k in self.flat if k not in self.used]


def formats() -> dict[str, Any]:
    """``--format`` name -> its framework module (the adapters of rlsim.frameworks.registry)."""
    from rlsim.frameworks import registry

    return {name: adapter.load() for name, adapter in registry.adapters().items()}


@dataclass(frozen=True)
class Imported:
    """The result of an import: the scenario's plain data (validated) and the framework keys it did not use."""

    scenario: dict[str, Any]
    unused: dict[str, Any]


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"data": {"train_batch_size": 8}}`` -> ``{"data.train_batch_size": 8}``; lists stay values."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            out.update(flatten(value, dotted))
        else:
            out[dotted] = value
    return out


def read_config(path: Path, fmt: str) -> dict[str, Any]:
    """The mapping a YAML or JSON framework config holds."""
    if not path.is_file():
        raise ImportConfigError(f"{path}: is not a file; give the path of a {fmt} config (YAML or JSON)")
    text = read_text(path, f"{fmt} config")
    try:
        data = json.loads(text) if path.suffix == ".json" else load_yaml(text)
    except (yaml.YAMLError, json.JSONDecodeError):
        syntax = "JSON" if path.suffix == ".json" else "YAML"
        raise ImportConfigError(f"{path}: is not valid {syntax}; fix its syntax") from None
    if not isinstance(data, dict):
        raise ImportConfigError(f"{path}: must hold a mapping of {fmt} config keys; see tests/rlsim/fixtures/configs/")
    return data


def resolve_model(name: Any, key: str) -> tuple[str, list[str]]:
    """The catalog name for a Hugging Face model name or path (``Qwen/Qwen3-8B``, ``~/models/Qwen2.5-7B-Instruct``):
    the name, else its last path part, matched against catalog names, aliases and hf_ids (with or without the
    organisation), else the last part without an Instruct/Chat suffix (same architecture as the base, noted)."""
    if not isinstance(name, str) or not name:
        raise ImportConfigError(
            f"{key}: not set; name the model, e.g. --set {key}=Qwen/Qwen2.5-7B (one of rlsim/catalog/models.yaml)"
        )
    forms = _model_forms()
    tail = name.rstrip("/").rsplit("/", 1)[-1]
    for cand in (name, tail):
        if cand in forms:
            return forms[cand], []
    for suffix in VARIANT_SUFFIXES:
        base = tail[: -len(suffix)]
        if tail.endswith(suffix) and base in forms:
            return forms[base], [f"model: {name} simulated as catalog model {forms[base]} (same architecture)"]
    local = Path(name).expanduser()
    if (local / "config.json").is_file() or (local.suffix == ".json" and local.is_file()):
        return str(local.resolve()), [f"model: {name} read from its config.json (rlsim.catalog.hf_config)"]
    same = catalog.same_architecture()
    known = name if name in same else next((k for k in same if k.rsplit("/", 1)[-1] == tail), None)
    if known is not None:
        entry = same[known]
        note = f"; {entry['note']}" if entry.get("note") else ""
        return entry["as"], [
            f"model: {name} simulated as catalog model {entry['as']} (same architecture: "
            f"rlsim/catalog/same_architecture.yaml gives the source{note})"
        ]
    near = catalog.nearest_names(tail, catalog.model_names(aliases=False))
    hint = f"did you mean {' or '.join(near)}? " if near else ""
    raise ImportConfigError(
        f"{key}: {name!r} is not in rlsim's model catalog; {hint}--set {key}=NAME with one of: "
        + ", ".join(sorted(set(forms.values())))
        + f", or --set {key}=PATH with the model's Hugging Face config.json (or a folder holding it)"
    )


@cache
def _model_forms() -> dict[str, str]:
    """Every spelling of a catalog model (name, hf_id, aliases, each also without its organisation) -> its name."""
    forms: dict[str, str] = {}
    for name in catalog.model_names(aliases=False):
        entry = catalog.model(name)
        for form in (name, entry.get("hf_id"), *(entry.get("aliases") or ())):
            if form:
                forms.setdefault(str(form), name)
                forms.setdefault(str(form).rsplit("/", 1)[-1], name)
    return forms


def assumed_workload(prompts: int, group: int, max_prompt: int, max_response: int) -> tuple[dict[str, Any], list[str]]:
    """The scenario's workload section for P prompts of G responses from a config that gives only the length
    maxima (the distributions are :func:`length_assumptions`'), and the assumptions it makes."""
    prompt_length, response_length, notes = length_assumptions(max_prompt, max_response)
    workload = {
        "prompts_per_step": prompts,
        "group_size": group,
        "prompt_length": prompt_length,
        "response_length": response_length,
        "max_prompt_tokens": max_prompt,
        "max_response_tokens": max_response,
    }
    return workload, notes


def length_assumptions(max_prompt: int, max_response: int) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Prompt and response length distributions for a config that gives only their maxima, and the assumptions."""
    prompt_tokens = max(1, int(max_prompt * PROMPT_FRACTION))
    mean = max(1.0, max_response * RESPONSE_MEAN_FRACTION)
    prompt = {"dist": "fixed", "tokens": prompt_tokens}
    response = {"dist": "lognormal", "mean_tokens": mean, "sigma": RESPONSE_SIGMA}
    notes = [
        f"prompt lengths: fixed {prompt_tokens} tokens ({PROMPT_FRACTION:g} x the maximum {max_prompt}; the config "
        "gives only the maximum; --scenario-set workload.prompt_length.tokens=N to change)",
        f"response lengths: lognormal, mean {mean:g} tokens before clipping at {max_response}, sigma "
        f"{RESPONSE_SIGMA:g} (the config gives only the maximum; "
        "--scenario-set workload.response_length.mean_tokens=N)",
    ]
    return prompt, response, notes


def divisible(a_key: str, a: int, b_key: str, b: int) -> int:
    """``a // b``, refusing (naming both keys) when b does not divide a."""
    if b <= 0 or a % b:
        raise ImportConfigError(f"{a_key} ({a}) must be divisible by {b_key} ({b}); change one of them")
    return a // b


def as_int(source: Source, key: str) -> int:
    """``key``'s value as a positive whole number (one line naming the key otherwise)."""
    value = as_float(source, key, "a positive whole number")
    if not value.is_integer() or value < 1:
        raise ImportConfigError(
            f"{source.name(key)}: {value:g} must be a positive whole number; fix it in the file or with --set"
        )
    return int(value)


def as_float(source: Source, key: str, what: str = "a number") -> float:
    """``key``'s value as a finite number (one line naming the key otherwise)."""
    value = source.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ImportConfigError(f"{source.name(key)}: {_short(value)} must be {what}; fix it in the file or with --set")
    return float(value)


LAUNCH_NOTES = "__rlsim_launch_notes__"  # a module's read() puts what it assumed reading a launch script here


def _check_set_keys(module: Any, fmt: str, flat: dict[str, Any], sets: dict[str, Any]) -> None:
    """Refuse a ``--set`` key that is neither in the file nor in rlsim's mapping of ``fmt`` but is a near miss of
    one (a typo that would otherwise be one more "not used" key): one line, with the key it likely meant. A key far
    from every known one is a framework key rlsim does not map, taken and listed as unused."""
    known = {row.key for row in module.TABLE} | set(flat)
    for key in sets:
        if key in known or any(k.startswith(key + ".") for k in known):
            continue
        near = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.85)
        if near:
            raise ImportConfigError(
                f"--set {key}: not a key of the file or of rlsim's {fmt} mapping; did you mean {near[0]}? "
                f"(--set {near[0]}=...)"
            )


def framework_flat(
    path: Path, fmt: str, framework_set: dict[str, Any] | None = None
) -> tuple[Any, dict[str, Any], dict[str, str], bool, list[str]]:
    """The module for ``fmt`` and the config as flat TABLE-spelled keys with ``framework_set`` applied and
    interpolations resolved; also how each renamed key was spelled, whether the file used the legacy spelling,
    and what reading a launch script assumed (rlsim.frameworks.launch)."""
    modules = formats()
    if fmt not in modules:
        near = difflib.get_close_matches(fmt, list(modules), n=1)
        hint = f"did you mean {near[0]}? " if near else ""
        raise ImportConfigError(f"--format {fmt!r} is not supported; {hint}use one of: {', '.join(modules)}")
    module = modules[fmt]
    data = module.read(path) if hasattr(module, "read") else read_config(path, fmt)
    read_notes = list(data.pop(LAUNCH_NOTES, []))
    flat = flatten(data)
    canonical = getattr(module, "canonical", None)
    spelling: dict[str, str] = {}
    legacy = False
    if canonical is not None:
        flat, spelling = canonical(flat, str(path.name))
        legacy = bool(spelling)
    sets = flatten_sets(framework_set or {})
    if canonical is not None:
        sets, set_spelling = canonical(sets, "--set")
        spelling.update(set_spelling)
    _check_set_keys(module, fmt, flat, sets)
    for key, value in sets.items():
        for old in [k for k in flat if k.startswith(key + ".")]:  # --set a.b=x replaces the section a.b
            del flat[old]
        flat[key] = value
    resolve = getattr(module, "resolve", None)
    if resolve is not None:
        flat = resolve(flat)
    return module, flat, spelling, legacy, read_notes


def mapping_table(module: Any, flat: dict[str, Any] | None) -> tuple[Row, ...]:
    """The module's TABLE with the defaults of the framework release the config names (TRL's ``trl_version``:
    ``table_for``), so that import and emit read an absent key the same way."""
    table_for = getattr(module, "table_for", None)
    return table_for(flat or {}) if table_for is not None else module.TABLE


def flatten_sets(framework_set: dict[str, Any]) -> dict[str, Any]:
    """``--set`` items as flat dotted keys (a mapping value spreads over its section)."""
    out: dict[str, Any] = {}
    for key, value in framework_set.items():
        out.update(flatten(value, key) if isinstance(value, dict) and value else {key: value})
    return out


def import_config(
    path: Path, fmt: str, framework_set: dict[str, Any] | None = None, scenario_set: dict[str, Any] | None = None
) -> Imported:
    """Read ``path`` as a ``fmt`` config, apply ``framework_set`` (dotted framework keys), map it, apply
    ``scenario_set`` (dotted rlsim keys) and validate the scenario."""
    from rlsim.scenario import apply_overrides, from_dict

    module, flat, spelling, legacy, read_notes = framework_flat(path, fmt, framework_set)
    source = Source(flat, mapping_table(module, flat), fmt, spelling=spelling, legacy=legacy)
    sections, notes = module.to_scenario(source)
    sections.setdefault("hardware", {}).setdefault("gpu", DEFAULT_GPU)
    gpu_note = f"hardware.gpu: {DEFAULT_GPU} (the {fmt} config does not name the GPU type; --scenario-set it)"
    gpu_notes = [] if "hardware.gpu" in (scenario_set or {}) else [gpu_note]
    unused = {source.name(k): flat[k] for k in source.unused()}
    assumptions = [
        f"imported from {path.name} (--format {fmt}; mapping of {module.VERSION_READ})",
        *gpu_notes,
        *read_notes,
        *notes,
    ]
    if source.defaults_used:
        assumptions.append(
            f"{fmt} defaults for keys the file does not set: "
            + ", ".join(f"{source.name(k)}={v}" for k, v in sorted(source.defaults_used.items()))
        )
    assumptions += [f"{fmt} key not used (no rlsim field): {k} = {_short(v)}" for k, v in unused.items()]
    # the --set items the import needed, verbatim: rlsim plan --emit --original reads them back (framework_sets)
    assumptions += [f"{IMPORT_SET}{k}={_plain(v)}" for k, v in (framework_set or {}).items()]
    raw = {
        "name": path.stem,
        "description": f"{fmt} config {path.name} as an rlsim scenario (rlsim import-config)",
        "assumptions": assumptions,
        **sections,
    }
    if scenario_set:
        raw = apply_overrides(raw, scenario_set)
        raw["assumptions"] = [*raw["assumptions"], *(f"--scenario-set {k}={v}" for k, v in scenario_set.items())]
    try:
        from_dict(raw)
    except ScenarioError as exc:
        raise ImportConfigError(
            f"the imported scenario is invalid: {exc} (set an rlsim field with --scenario-set {exc.field}=VALUE)"
        ) from None
    return Imported(raw, unused)


IMPORT_SET = "import-config --set "


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def framework_sets(assumptions: list[str]) -> list[str]:
    """The ``--set`` items an imported scenario was imported with (its assumptions record them)."""
    return [a.removeprefix(IMPORT_SET) for a in assumptions if a.startswith(IMPORT_SET)]


def _short(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= 80 else text[:77] + "..."
