"""The frameworks rlsim reads and writes, one :class:`~rlsim.frameworks.adapter.FrameworkAdapter` each, by their
``--format`` / ``--emit`` names.

The built-in adapters are the packages of ``rlsim/frameworks`` that define ``ADAPTER`` (verl, trl, openrlhf,
nemo_rl, slime, skyrl, prime_rl, areal, roll), found by scanning the package on first use, so a new framework
is its package plus its fixtures; :func:`register` adds one from elsewhere (a plugin, a test).
``python -m rlsim.frameworks.registry`` lists them.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import rlsim.frameworks as package
from rlsim.frameworks.adapter import FrameworkAdapter

# the order the docs and --help list them
BUILTIN_ORDER = ("verl", "trl", "openrlhf", "nemo-rl", "slime", "skyrl", "prime-rl", "areal", "roll")

_REGISTERED: dict[str, FrameworkAdapter] = {}
_SCANNED = False


def register(adapter: FrameworkAdapter) -> FrameworkAdapter:
    """Add (or replace) an adapter under its name."""
    if not isinstance(adapter, FrameworkAdapter):
        raise TypeError(f"{adapter!r} is not a FrameworkAdapter (rlsim.frameworks.adapter)")
    _REGISTERED[adapter.name] = adapter
    return adapter


def unregister(name: str) -> None:
    _REGISTERED.pop(name, None)


def _scan() -> None:
    """Registers the ADAPTER of every package of rlsim.frameworks, imported by name on first use (importing the
    registry loads no framework)."""
    global _SCANNED
    if _SCANNED:
        return
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if not info.ispkg:
            continue
        adapter = getattr(importlib.import_module(f"{package.__name__}.{info.name}"), "ADAPTER", None)
        if isinstance(adapter, FrameworkAdapter):
            _REGISTERED.setdefault(adapter.name, adapter)
    _SCANNED = True


def adapters() -> dict[str, FrameworkAdapter]:
    """Every adapter by name: the built-in ones in BUILTIN_ORDER, then the others by name."""
    _scan()
    order = [n for n in BUILTIN_ORDER if n in _REGISTERED] + sorted(set(_REGISTERED) - set(BUILTIN_ORDER))
    return {n: _REGISTERED[n] for n in order}


def names() -> tuple[str, ...]:
    return tuple(adapters())


def get(name: str) -> FrameworkAdapter:
    found = adapters().get(name)
    if found is None:
        raise KeyError(name)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlsim.frameworks.registry", description=__doc__.split("\n")[0])
    parser.parse_args(argv)
    for a in adapters().values():
        module = type(a).__module__
        sys.stdout.write(f"{a.name}: {module} ({a.overrides}; logs: {a.log_importer or '-'})\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
