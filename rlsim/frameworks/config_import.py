"""Reading a framework's own training config into an rlsim scenario (``rlsim import-config``).

Each framework is an adapter (:class:`rlsim.frameworks.adapter.FrameworkAdapter`, found by
:mod:`rlsim.frameworks.registry`): its mapping ``table`` (framework key, its default in the framework, the rlsim
field it sets, the rule) and ``to_scenario(source)``, which reads the config through a
:class:`~rlsim.frameworks.adapter.Source` and returns the scenario sections, with the hooks ``read`` (a file form of
its own: OpenRLHF's argument lists, NeMo RL's ``defaults:`` chain), ``canonical`` (other spellings of its keys) and
``resolve`` (interpolations, after the overrides). This module does what the formats share:

* read the file through the adapter and flatten it to dotted keys (``data.train_batch_size``);
* apply the framework overrides (``--set KEY=VALUE``, dotted framework keys) before anything is mapped; a
  ``--set NAME=VALUE`` whose NAME a launch script uses as a shell variable sets it before the script is read
  (rlsim.frameworks.launch.shell_sets);
* track which keys the mapping read: every other key of the file is listed (stderr and ``assumptions``), never
  dropped silently; a key the mapping reads must be in the adapter's table (so the table is what the code does);
* the rlsim-side facts the framework config lacks, as documented defaults the scenario lists under
  ``assumptions``: the GPU (:data:`~rlsim.frameworks.common.DEFAULT_GPU`), prompt and response length
  distributions (:func:`~rlsim.frameworks.common.length_assumptions`);
* apply the rlsim overrides (``--scenario-set``) and validate the scenario once.

Bad input (a missing file, a contradiction between two keys, a model outside the catalog) raises
:class:`~rlsim.frameworks.adapter.ImportConfigError` with one line naming the key(s) and the fix.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlsim.errors import ScenarioError
from rlsim.frameworks import registry
from rlsim.frameworks.adapter import LAUNCH_NOTES, FrameworkAdapter, ImportConfigError, Row, Source
from rlsim.frameworks.common import DEFAULT_GPU, LAUNCH_DIR, short
from rlsim.frameworks.gpu_fit import fitting_hardware, label
from rlsim.frameworks.launch import shell_sets
from rlsim.scenario import apply_overrides, from_dict, software


@dataclass(frozen=True)
class Imported:
    """The result of an import: the scenario's plain data (validated), the framework keys it did not use and the
    format it was read as."""

    scenario: dict[str, Any]
    unused: dict[str, Any]
    fmt: str = ""
    warnings: list[str] = field(default_factory=list)  # what the user must see on stderr (a GPU stood in)


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


def _check_set_keys(adapter: FrameworkAdapter, fmt: str, flat: dict[str, Any], sets: dict[str, Any]) -> None:
    """Refuse a ``--set`` key that is neither in the file nor in rlsim's mapping of ``fmt`` but is a near miss of
    one (a typo that would otherwise be one more "not used" key): one line, with the key it likely meant. A key far
    from every known one is a framework key rlsim does not map, taken and listed as unused."""
    known = {row.key for row in adapter.table} | set(flat)
    for key in sets:
        if key in known or any(k.startswith(key + ".") for k in known):
            continue
        near = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.85)
        if near:
            raise ImportConfigError(
                f"--set {key}: not a key of the file or of rlsim's {fmt} mapping; did you mean {near[0]}? "
                f"(--set {near[0]}=...)"
            )


def check_format(fmt: str | None) -> None:
    """Refuse a --format that names no adapter, with the near miss."""
    adapters = registry.adapters()
    if fmt is not None and fmt not in adapters:
        near = difflib.get_close_matches(fmt, list(adapters), n=1)
        hint = f"did you mean {near[0]}? " if near else ""
        raise ImportConfigError(f"--format {fmt!r} is not supported; {hint}use one of: {', '.join(adapters)}")


def framework_flat(
    path: Path, fmt: str | None, framework_set: dict[str, Any] | None = None
) -> tuple[FrameworkAdapter, dict[str, Any], dict[str, str], bool, list[str]]:
    """The adapter for ``fmt`` (None: the one the file is recognised as, registry.choose) and the config as flat
    TABLE-spelled keys with ``framework_set`` applied and interpolations resolved; also how each renamed key was
    spelled, whether the file used the legacy spelling, and what reading it assumed (rlsim.frameworks.launch), the
    recognition first."""
    check_format(fmt)
    fmt, how = registry.choose(path, fmt)
    adapter = registry.get(fmt)
    with shell_sets(framework_set or {}) as shell_names:  # --set NAME=value of a launch script's shell variable
        data = adapter.read(path)
    read_notes = ([how] if how else []) + list(data.pop(LAUNCH_NOTES, []))
    flat, spelling = adapter.canonical(flatten(data), str(path.name))
    legacy = bool(spelling)
    framework_only = {k: v for k, v in (framework_set or {}).items() if k not in shell_names}
    sets, set_spelling = adapter.canonical(flatten_sets(framework_only), "--set")
    spelling.update(set_spelling)
    _check_set_keys(adapter, fmt, flat, sets)
    for key, value in sets.items():
        for old in [k for k in flat if k.startswith(key + ".")]:  # --set a.b=x replaces the section a.b
            del flat[old]
        flat[key] = value
    return adapter, adapter.resolve(flat), spelling, legacy, read_notes


def mapping_table(adapter: FrameworkAdapter, flat: dict[str, Any] | None) -> tuple[Row, ...]:
    """The adapter's table with the defaults of the framework release the config names (TRL's ``trl_version``:
    ``table_for``), so that import and emit read an absent key the same way."""
    return adapter.table_for(flat or {})


def flatten_sets(framework_set: dict[str, Any]) -> dict[str, Any]:
    """``--set`` items as flat dotted keys (a mapping value spreads over its section)."""
    out: dict[str, Any] = {}
    for key, value in framework_set.items():
        out.update(flatten(value, key) if isinstance(value, dict) and value else {key: value})
    return out


def import_config(
    path: Path,
    fmt: str | None,
    framework_set: dict[str, Any] | None = None,
    scenario_set: dict[str, Any] | None = None,
) -> Imported:
    """Read ``path`` as a ``fmt`` config (None: the framework the file is recognised as), apply ``framework_set``
    (dotted framework keys), map it, apply ``scenario_set`` (dotted rlsim keys) and validate the scenario."""
    adapter, flat, spelling, legacy, read_notes = framework_flat(path, fmt, framework_set)
    fmt = adapter.name
    source = Source(flat, mapping_table(adapter, flat), fmt, spelling=spelling, legacy=legacy)
    token = LAUNCH_DIR.set(path.resolve().parent)
    try:
        sections, notes = adapter.to_scenario(source)
    finally:
        LAUNCH_DIR.reset(token)
    sections.setdefault("hardware", {}).setdefault("gpu", DEFAULT_GPU)
    # no framework config names the GPU type: the default stands in unless --scenario-set names one
    gpu_assumed = sections["hardware"]["gpu"] == DEFAULT_GPU and "hardware.gpu" not in (scenario_set or {})
    gpu_note = f"hardware.gpu: {DEFAULT_GPU} (the {fmt} config does not name the GPU type; --scenario-set it)"
    gpu_notes = [] if "hardware.gpu" in (scenario_set or {}) else [gpu_note]
    unused = {source.name(k): flat[k] for k in source.unused()}
    assumptions = [
        f"imported from {path.name} (--format {fmt}; mapping of {adapter.version_read})",
        *gpu_notes,
        *read_notes,
        *notes,
    ]
    if source.defaults_used:
        assumptions.append(
            f"{fmt} defaults for keys the file does not set: "
            + ", ".join(f"{source.name(k)}={v}" for k, v in sorted(source.defaults_used.items()))
        )
    assumptions += [f"{fmt} key not used (no rlsim field): {k} = {short(v)}" for k, v in unused.items()]
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
    warnings: list[str] = []
    try:
        warnings += software.warnings(from_dict(raw))  # a release the catalog lacks: the nearest known one's
    except ScenarioError as exc:
        if not (gpu_assumed and (fits := fitting_hardware(raw, DEFAULT_GPU, most=1))):
            assumed = (
                f"; the file names no GPU, so {DEFAULT_GPU} was assumed (--scenario-set hardware.gpu=NAME for the one "
                "it runs on)"
                if gpu_assumed
                else ""
            )
            fix = f"(set an rlsim field with --scenario-set {exc.field}=VALUE)"
            raise ImportConfigError(f"the imported scenario is invalid: {exc} {fix}{assumed}") from None
        # the file names no GPU and the default does not hold it: the smallest catalog GPU that does stands in
        hardware = fits[0]
        note = (
            f"hardware.gpu: {label(hardware)}, the smallest catalog GPU that holds this run (the file names no GPU and "
            f"{DEFAULT_GPU}, the default, does not: {exc.problem}); --scenario-set hardware.gpu=NAME for yours"
        )
        if "host_memory_bytes" in hardware and "host_memory_bytes" not in raw.get("hardware", {}):
            note += f"; host memory per node {hardware['host_memory_bytes'] / 1e9:.0f} GB as on a {DEFAULT_GPU} node"
        raw["hardware"] = hardware
        raw["assumptions"] = [note if a == gpu_note else a for a in raw["assumptions"]]
        warnings.append(note)
    return Imported(raw, unused, fmt, warnings)
    return Imported(raw, unused, fmt)


IMPORT_SET = "import-config --set "


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def framework_sets(assumptions: list[str]) -> list[str]:
    """The ``--set`` items an imported scenario was imported with (its assumptions record them)."""
    return [a.removeprefix(IMPORT_SET) for a in assumptions if a.startswith(IMPORT_SET)]
