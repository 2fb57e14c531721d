"""The frameworks rlsim reads and writes, one :class:`~rlsim.frameworks.adapter.FrameworkAdapter` each, by their
``--format`` / ``--emit`` names.

The built-in adapters are the packages of ``rlsim/frameworks`` that define ``ADAPTER`` (verl, trl, openrlhf,
nemo_rl, slime, skyrl, prime_rl, areal, roll), found by scanning the package on first use, so a new framework
is its package plus its fixtures; :func:`register` adds one from elsewhere (a plugin, a test).
``python -m rlsim.frameworks.registry`` lists them.

:func:`recognise` says what a file is without ``--format`` (rlsim.frameworks.detect): each adapter's ``detect``, then
the frameworks rlsim does not read (``detect.NOT_READ``, less those an adapter of the same name now reads), then the
trainers that are not RL; :func:`choose` picks the adapter or refuses in one line naming what was recognised.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import pkgutil
import sys
from pathlib import Path

import rlsim.frameworks as package
from rlsim.frameworks import detect
from rlsim.frameworks.adapter import FrameworkAdapter, ImportConfigError

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


def recognise(path: Path) -> list[detect.Found]:
    """What ``path`` is: one Found per framework recognised (several: the file is ambiguous); a trainer that is
    not RL only when no RL framework is recognised; [] when nothing is."""
    probe = detect.Probe.of(path)
    if probe is None:
        return []
    mine = [f for a in adapters().values() if (f := a.detect(probe)) is not None]
    found = [f for f in mine if f.trainer is None]
    found += [
        f for name, signs in detect.NOT_READ.items() if name not in _REGISTERED and (f := detect.first(probe, signs))
    ]
    if found:
        unique: dict[str, detect.Found] = {}
        for f in found:
            unique.setdefault(f.framework, f)
        return list(unique.values())
    other = next((f for f in mine if f.trainer is not None), None) or detect.first(probe, detect.NOT_RL)
    return [other] if other else []


def choose(path: Path, fmt: str | None) -> tuple[str, str | None]:
    """The adapter name that reads ``path`` (``fmt`` when given; else the one recognised) and a note on how it was
    recognised (None with --format); refused in one line when the file is another framework's, not an RL run's,
    ambiguous, or not recognised without --format."""
    found = recognise(path)
    if fmt is not None and (not found or any(f.fmt == fmt and f.trainer is None for f in found)):
        return fmt, None
    reads = ", ".join(names())
    if len(found) > 1:
        both = " and ".join(f.what().split(" ", 1)[1] for f in found)
        raise ImportConfigError(f"{path.name}: looks like {both}; pass --format to say which (rlsim reads {reads})")
    if not found:
        if not path.is_file():
            near = path.parent.is_dir() and difflib.get_close_matches(
                path.name, [p.name for p in path.parent.iterdir()], 1
            )
            hint = f"did you mean {path.parent / near[0]}? " if near else ""
            raise ImportConfigError(
                f"{path}: is not a file; {hint}give the framework's training config or launch script"
            )
        raise ImportConfigError(
            f"{path.name}: no framework recognised (by an entry point such as verl.trainer.main_ppo, "
            f"openrlhf.cli.train_ppo_ray, trl grpo, run_grpo_math.py, or a config's keys); pass --format ({reads})"
        )
    f = found[0]
    if f.trainer is not None:
        raise ImportConfigError(
            f"{path.name}: this is {f.what()}, not an RL trainer's config; rlsim imports RL runs ({reads})"
        )
    if f.fmt is None:
        raise ImportConfigError(f"{path.name}: this is {f.what()}; rlsim reads {reads}, not {f.framework}")
    if fmt is not None:
        raise ImportConfigError(
            f"{path.name}: this is {f.what()}, not {fmt}; use --format {f.fmt} (or leave --format out)"
        )
    return f.fmt, f"read as {f.framework} (--format {f.fmt}): {f.evidence}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlsim.frameworks.registry", description=__doc__.split("\n")[0])
    parser.parse_args(argv)
    for a in adapters().values():
        module = type(a).__module__
        sys.stdout.write(f"{a.name}: {module} ({a.overrides}; logs: {a.log_importer or '-'})\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
