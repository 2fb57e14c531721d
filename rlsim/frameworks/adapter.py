"""The contract between rlsim and a framework it reads and writes: :class:`FrameworkAdapter`, and the types its
methods take and return.

An adapter says, for one framework (verl, TRL, OpenRLHF, NeMo RL, or one registered from elsewhere):

* how a file becomes nested keys (:meth:`FrameworkAdapter.read`; a launch script's notes under
  :data:`LAUNCH_NOTES`), how other spellings of its keys become the TABLE's (:meth:`~FrameworkAdapter.canonical`),
  how interpolations resolve after the overrides (:meth:`~FrameworkAdapter.resolve`) and which defaults hold for
  the release the config names (:meth:`~FrameworkAdapter.table_for`);
* its mapping: ``table`` (one :class:`Row` per framework key it reads) and :meth:`~FrameworkAdapter.to_scenario`,
  which reads the keys through a :class:`Source` and returns the scenario's sections;
* the inverse: :meth:`~FrameworkAdapter.emit_keys`, the framework keys that express a planned scenario, given an
  :class:`EmitContext` (the plan and, when given, the original config);
* how a file of its own is recognised without ``--format`` (:meth:`~FrameworkAdapter.detect`: its entry point, its
  keys; rlsim.frameworks.detect);
* how its overrides are written (``overrides``, ``new_key_prefix``, ``switch_flags``, ``launch_flags``), the
  module reading its metrics logs (``log_importer``, in :mod:`rlsim.frameworks.logs`) and its table in
  docs/import-config.md (:meth:`~FrameworkAdapter.docs_table`).

The required members are checked when an adapter is made (the abstract methods by :class:`abc.ABC`, the class
attributes by ``__init__``); every optional one has a default that does nothing special (documented on the member),
so :mod:`rlsim.frameworks.config_import` and :mod:`rlsim.frameworks.emit` call every adapter the same way.
"""

from __future__ import annotations

import dataclasses
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import yaml

from rlsim.errors import RlsimError
from rlsim.frameworks.detect import NOT_READ, Found, Probe, first
from rlsim.io.files import load_yaml, read_text

if TYPE_CHECKING:
    from rlsim.schema.scenario import Scenario


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # no value: neither given nor defaulted (Source.get's default, EmitContext.current)
LAUNCH_NOTES = "__rlsim_launch_notes__"  # read() puts what it assumed reading a launch script under this key


class ImportConfigError(RlsimError, ValueError):
    """A framework config that cannot be read or mapped (the message names the key and the fix)."""


class EmitError(RlsimError, ValueError):
    """A planned scenario the framework's batch rules cannot express (the message names both sides)."""


@dataclass(frozen=True)
class Row:
    """One line of a mapping table: a framework key, its default in the framework (None: none), the rlsim field it
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

    def get(self, key: str, default: Any = MISSING) -> Any:
        """The value of ``key``; when absent (or null), ``default`` if given, else the TABLE's framework default."""
        row = self._row(key)
        self.used.add(key)
        value = self.flat.get(key)
        if value is not None:
            return value
        fallback = row.default if default is MISSING else default
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


@dataclass
class EmitContext:
    """What :meth:`FrameworkAdapter.emit_keys` expresses: the planned ``scenario`` and, when given, the original
    config (``flat``: its TABLE-spelled keys; ``spelling``: how it spells them; ``legacy``: in the framework's older
    spelling; ``base``: its import; ``table``: the defaults of its release). ``notes`` collects what the framework
    cannot say."""

    fmt: str
    scenario: Scenario
    flat: dict[str, Any] | None
    spelling: dict[str, str]
    legacy: bool
    base: Scenario | None
    table: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def current(self, key: str) -> Any:
        """The original's value of ``key`` (absent: the framework default of the TABLE); MISSING without one."""
        if self.flat is None:
            return MISSING
        value = self.flat.get(key)
        if value is None:
            return self.table.get(key)
        return value

    def has(self, key: str) -> bool:
        return self.flat is not None and self.flat.get(key) is not None

    def changed(self, get: Callable[[Scenario], Any], default: Any) -> bool:
        """Whether the plan's value differs from the original's import (without an original: from ``default``)."""
        was = get(self.base) if self.base is not None else default
        return get(self.scenario) != was


def read_config(path: Path, fmt: str, last_duplicate: bool = False) -> dict[str, Any]:
    """The mapping a YAML or JSON framework config holds (the default :meth:`FrameworkAdapter.read`). A key given
    twice is refused, or with ``last_duplicate`` (a framework reading its YAML with ``yaml.safe_load``) takes its
    last value, as that framework does."""
    if not path.is_file():
        raise ImportConfigError(f"{path}: is not a file; give the path of a {fmt} config (YAML or JSON)")
    text = read_text(path, f"{fmt} config")
    try:
        data = json.loads(text) if path.suffix == ".json" else load_yaml(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        problem = getattr(exc, "problem", None)
        mark = getattr(exc, "problem_mark", None)
        if last_duplicate and problem and problem.startswith("duplicate key") and "&" not in text:
            return last_value_yaml(text)  # no anchors, so no aliases to expand: plain safe_load is bounded
        syntax = "JSON" if path.suffix == ".json" else "YAML"
        where = f" ({problem}, line {mark.line + 1})" if problem and mark else ""
        raise ImportConfigError(f"{path}: is not valid {syntax}{where}; fix its syntax") from None
    if not isinstance(data, dict):
        raise ImportConfigError(f"{path}: must hold a mapping of {fmt} config keys; see tests/rlsim/fixtures/configs/")
    return data


def last_value_yaml(text: str) -> dict[str, Any]:
    """``text`` as ``yaml.safe_load`` reads it (a key given twice: its last value); {} for anything but a mapping."""
    data = yaml.safe_load(text)
    return data if isinstance(data, dict) else {}


def _cell(value: Any) -> str:
    return "—" if value is None else f"`{value}`"


def _field(text: str) -> str:
    return text if text.startswith("(") else f"`{text}`"


class FrameworkAdapter(ABC):
    """One framework, read into scenarios and written back (module docstring). A subclass sets the class
    attributes ``name``, ``table`` and ``version_read`` and defines :meth:`to_scenario` and :meth:`emit_keys`; the
    other members are optional, each with the default documented on it."""

    # required
    name: ClassVar[str]  # the --format / --emit name
    table: ClassVar[tuple[Row, ...]]  # one Row per framework key the mapping reads
    version_read: ClassVar[str]  # what was read, at which commit (imported scenarios' assumptions say it)
    # optional, with their defaults
    overrides: ClassVar[Literal["hydra", "flags"]] = "flags"  # key=value (Hydra) or --key value (argparse) words
    new_key_prefix: ClassVar[str] = ""  # Hydra: the prefix of an override the original lacks (NeMo RL's "++")
    switch_flags: ClassVar[bool] = False  # argparse: booleans are store_true flags (--flag; a note for false)
    # keys read as launch facts, not config keys -> the command-line flag that sets each (None: not emitted): emit
    # writes them to the launch commands, never into the patch (TRL's num_processes: accelerate launch)
    launch_flags: ClassVar[Mapping[str, str | None]] = {}
    legacy_defaults: ClassVar[Mapping[str, Any]] = {}  # a legacy spelling's defaults where they differ (canonical)
    # rlsim.frameworks.logs.<module> reading the framework's metrics logs into run logs (rlsim check,
    # rlsim-calibrate import): the module's FORMAT
    log_importer: ClassVar[str | None] = None

    def __init__(self) -> None:
        missing = [attr for attr in ("name", "table", "version_read") if not getattr(self, attr, None)]
        if missing:
            raise TypeError(f"framework adapter {type(self).__name__}: sets no {', '.join(missing)}")

    @abstractmethod
    def to_scenario(self, source: Source) -> tuple[dict[str, Any], list[str]]:
        """The scenario's sections for the config read through ``source``, and the assumptions made."""

    @abstractmethod
    def emit_keys(self, ctx: EmitContext) -> dict[str, Any]:
        """The framework keys (TABLE-spelled, dotted) that express ``ctx.scenario``; notes go to ``ctx.notes``."""

    def detect(self, probe: Probe) -> Found | None:
        """Whether ``probe`` is a file this adapter reads: a Found (``fmt`` this adapter's name) naming the entry
        point or keys that say so (with ``trainer`` set: its framework's, but a trainer that is not RL), else None.
        Default: the signs rlsim.frameworks.detect.NOT_READ keeps under the adapter's name (those it refused before
        the adapter was registered), else None (the adapter is used only when --format names it)."""
        found = first(probe, NOT_READ.get(self.name, ()))
        return dataclasses.replace(found, fmt=self.name) if found else None

    def found(self, framework: str, evidence: str | None) -> Found | None:
        """A Found for this adapter when ``evidence`` is not empty (a helper for :meth:`detect`)."""
        return Found(framework, evidence, self.name) if evidence else None

    def read(self, path: Path) -> dict[str, Any]:
        """The nested keys a file holds. Default: a YAML or JSON mapping (:func:`read_config`). An adapter reading
        launch scripts or its framework's own file forms overrides it, putting its notes under LAUNCH_NOTES."""
        return read_config(path, self.name)

    def canonical(self, flat: dict[str, Any], where: str) -> tuple[dict[str, Any], dict[str, str]]:
        """``flat`` with other spellings of the keys renamed to the TABLE's, and how each renamed key was spelled
        (a non-empty spelling marks the config as legacy). Default: no other spellings."""
        return flat, {}

    def resolve(self, flat: dict[str, Any]) -> dict[str, Any]:
        """``flat`` with its interpolations resolved, after the overrides. Default: none to resolve."""
        return flat

    def table_for(self, flat: dict[str, Any]) -> tuple[Row, ...]:
        """The table with the defaults of the framework release ``flat`` names, so that import and emit read an
        absent key the same way. Default: ``table``."""
        return self.table

    def render_patch(self, patch: dict[str, Any]) -> tuple[str, str] | None:
        """The emitted patch in the framework's own file form, as (file suffix, text): prime-rl's TOML. Default:
        None (YAML; OpenRLHF's JSON)."""
        return None

    def docs_table(self) -> str:
        """The markdown table of the mapping in docs/import-config.md. Default: one row per table row (framework
        key, default, rlsim field, rule)."""
        lines = ["| framework key | default | rlsim field | rule |", "|---|---|---|---|"]
        lines += [f"| `{r.key}` | {_cell(r.default)} | {_field(r.field)} | {r.rule} |" for r in self.table]
        return "\n".join(lines)
