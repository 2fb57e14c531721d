"""The frameworks rlsim reads and writes, one adapter each: a module of ``rlsim/frameworks`` that defines
``ADAPTER`` (an :class:`Adapter`) holds everything about its framework:

* the import mapping: ``TABLE`` (rows of framework key, its default, the rlsim field, the rule), ``to_scenario``,
  ``VERSION_READ`` (what was read, at which commit), and the optional hooks ``read`` (a file or launch script into
  nested keys), ``canonical`` (renamed keys), ``resolve`` (interpolations), ``table_for`` (per-release defaults);
* the emit inverse: ``emit_keys(ctx)``, the framework keys that express a planned scenario
  (:mod:`rlsim.frameworks.emit_keys` holds the shared helpers);
* the run-log importer's keys: the name of the ``calibrate.importers`` module that reads the framework's metrics
  (rlsim never imports calibrate; calibrate's importers find their modules here);
* its documentation table: :func:`docs_table` renders ``TABLE`` (a module's ``docs_table`` replaces it), and
  ``docs/import-config.md`` holds each between ``<!-- generated: NAME -->`` markers (``python -m
  rlsim.frameworks.registry --write-docs`` rewrites them; a test keeps them in step).

The registry finds the adapters by scanning the package on first use, so a new framework is its module plus its
fixtures; :func:`register` adds one from elsewhere (a plugin, a test).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

DOCS = Path(__file__).resolve().parents[2] / "docs" / "import-config.md"


@dataclass(frozen=True)
class Adapter:
    """One framework: its ``--format`` / ``--emit`` name and where its parts are (module docstring)."""

    name: str
    module: str  # the dotted module holding TABLE, to_scenario, VERSION_READ, emit_keys and the hooks
    overrides: Literal["hydra", "flags"] = "flags"  # key=value (verl, NeMo RL) or --key value (TRL, OpenRLHF)
    log_importer: str | None = None  # calibrate.importers.<module> reading its metrics logs into run logs

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)


_REGISTERED: dict[str, Adapter] = {}
_SCANNED = False


def register(adapter: Adapter) -> Adapter:
    """Add (or replace) an adapter; the module it names must be importable."""
    module = adapter.load()
    for attr in ("TABLE", "to_scenario", "VERSION_READ"):
        if not hasattr(module, attr):
            raise ValueError(f"framework adapter {adapter.name!r}: {adapter.module} has no {attr}")
    _REGISTERED[adapter.name] = adapter
    return adapter


def unregister(name: str) -> None:
    _REGISTERED.pop(name, None)


def _scan() -> None:
    global _SCANNED
    if _SCANNED:
        return
    import rlsim.frameworks as package

    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name == "registry":
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        adapter = getattr(module, "ADAPTER", None)
        if isinstance(adapter, Adapter):
            _REGISTERED.setdefault(adapter.name, adapter)
    _SCANNED = True


BUILTIN_ORDER = ("verl", "trl", "openrlhf", "nemo-rl")  # the order the docs and --help list them


def adapters() -> dict[str, Adapter]:
    """Every adapter by name: the built-in ones in BUILTIN_ORDER, then the others by name."""
    _scan()
    order = [n for n in BUILTIN_ORDER if n in _REGISTERED] + sorted(set(_REGISTERED) - set(BUILTIN_ORDER))
    return {n: _REGISTERED[n] for n in order}


def names() -> tuple[str, ...]:
    return tuple(adapters())


def get(name: str) -> Adapter:
    found = adapters().get(name)
    if found is None:
        raise KeyError(name)
    return found


def emitter(name: str) -> Callable[[Any], dict[str, Any]]:
    return get(name).load().emit_keys


# ---------------------------------------------------------------------------------------------- docs


def _cell(value: Any) -> str:
    return "—" if value is None else f"`{value}`"


def _field(field: str) -> str:
    return field if field.startswith("(") else f"`{field}`"


def docs_table(name: str) -> str:
    """The markdown table of an adapter's mapping: its module's ``docs_table()`` if it has one, else one row per
    TABLE row (framework key, default, rlsim field, rule)."""
    module = get(name).load()
    custom = getattr(module, "docs_table", None)
    if custom is not None:
        return custom()
    lines = ["| framework key | default | rlsim field | rule |", "|---|---|---|---|"]
    lines += [f"| `{r.key}` | {_cell(r.default)} | {_field(r.field)} | {r.rule} |" for r in module.TABLE]
    return "\n".join(lines)


MARK = re.compile(r"<!-- generated: (?P<name>[\w-]+) -->\n.*?<!-- /generated -->", re.S)


def render_docs(text: str) -> str:
    """``text`` with every ``<!-- generated: NAME -->`` block replaced by NAME's table."""
    return MARK.sub(lambda m: f"<!-- generated: {m['name']} -->\n{docs_table(m['name'])}\n<!-- /generated -->", text)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m rlsim.frameworks.registry", description=__doc__.split("\n")[0])
    parser.add_argument("--write-docs", action="store_true", help=f"rewrite the generated tables in {DOCS.name}")
    args = parser.parse_args(argv)
    if args.write_docs:
        DOCS.write_text(render_docs(DOCS.read_text()))
        sys.stdout.write(f"wrote {DOCS}\n")
    else:
        for a in adapters().values():
            sys.stdout.write(f"{a.name}: {a.module} ({a.overrides}; logs: {a.log_importer or '-'})\n")
    return 0


if __name__ == "__main__":  # run as a script: use the package's module, whose classes the adapters were made with
    from rlsim.frameworks import registry as _registry

    raise SystemExit(_registry.main())
