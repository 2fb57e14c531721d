"""A planned scenario back in a framework's own terms: the keys to change (``rlsim plan ... --emit FMT``).

``emit(fmt, scenario, original, framework_set)`` turns the knobs a scenario plans (batch: P, G, optimizer steps per
step, epochs, micro-batches; the LR the learning section gives at the scenario's batch; GPUs and nodes; placement;
engine TP, replicas, gpu_memory_utilization, max_num_seqs; the training layout; the async schedule) into the keys of
the framework's config, by the inverse of the import mapping (each adapter's ``emit_keys``:
:mod:`rlsim.frameworks.verl`, ``trl``, ``openrlhf``, ``nemo_rl``; the facts and commits are in their mapping modules'
docstrings). The result (:class:`Emitted`):

* ``patch``: a nested mapping of framework keys. With ``original`` (the config the plan starts from, read as
  ``rlsim import-config`` reads it, ``framework_set`` being its ``--set`` items), only the keys whose value differs
  from what importing the original gives, spelled as the original spells them (TRL: generation_batch_size or
  steps_per_generation, whichever the original uses; OpenRLHF: the flat v0.9.5 names when the original uses them;
  verl: the deprecated global micro-batch keys when the original uses them). Without it, every key the scenario
  determines.
* ``overrides``: the same as the framework's command-line overrides: Hydra ``key=value`` for verl and NeMo RL
  (``++key=value`` where the original lacks the key), ``--key value`` for TRL and OpenRLHF (an OpenRLHF
  ``store_true`` flag set false cannot be written as an argument: ``notes`` says to remove it).
* ``notes``: each planned knob the framework (or rlsim's mapping of it) cannot express, named, e.g. TRL has no
  async schedule.
* ``launch`` (TRL): the launch facts that are not GRPOConfig keys (``num_processes``, the vLLM server's sizes), as
  the ``accelerate launch`` / ``trl vllm-serve`` flags that set them; TRL's parser refuses them in the config, so
  they are in neither the patch nor the overrides.

``write_emitted(emitted, fmt, out_dir)`` writes ``<fmt>_patch.yaml`` (``.json`` for OpenRLHF, whose YAML/JSON form
holds argparse dest names), ``<fmt>_overrides.sh`` (one shell line), ``trl_launch.sh`` when TRL's launch changes and,
when there are notes, ``<fmt>_notes.txt``.

A plan the framework's batch rules cannot express (e.g. verl's ppo_mini_batch_size counts prompts, so the optimizer
steps per step must divide P) raises :class:`EmitError` naming the scenario field and the framework key.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlsim.frameworks import registry
from rlsim.frameworks.adapter import MISSING, EmitContext, EmitError
from rlsim.frameworks.config_import import framework_flat, import_config, mapping_table
from rlsim.frameworks.openrlhf.args import parse_arguments
from rlsim.scenario import from_dict, parse_overrides
from rlsim.scenario.overrides import parse_scalar
from rlsim.schema.scenario import Scenario


def _hydra(fmt: str) -> bool:
    """Whether ``fmt``'s overrides are Hydra ``key=value`` items (its adapter says)."""
    return registry.get(fmt).overrides == "hydra"


@dataclass(frozen=True)
class Emitted:
    """What to change in a framework config: ``patch`` (nested framework keys), ``overrides`` (the same as
    command-line overrides), ``notes`` (planned knobs the framework cannot express, launch facts)."""

    patch: dict[str, Any]
    overrides: list[str]
    notes: list[str]
    # TRL: the launch facts that are not GRPOConfig keys, as the commands that take them (accelerate launch
    # --num_processes N; trl vllm-serve --tensor_parallel_size N ...): TRL's parser refuses them in the config
    launch: list[str] = field(default_factory=list)


def emit(fmt: str, scenario: Scenario, original: Path | None = None, framework_set: Sequence[str] = ()) -> Emitted:
    """The framework keys that express ``scenario`` (see the module docstring)."""
    if fmt not in registry.names():
        raise EmitError(f"--emit {fmt!r} is not supported; use one of: {', '.join(registry.names())}")
    adapter = registry.get(fmt)
    flat: dict[str, Any] | None = None
    spelling: dict[str, str] = {}
    legacy, base = False, None
    if original is not None:
        sets = parse_overrides(list(framework_set))
        _, flat, spelling, legacy, _ = framework_flat(Path(original), fmt, sets)
        base = from_dict(import_config(Path(original), fmt, sets).scenario)
    # the original's release's defaults (TRL's trl_version): an absent key reads as the import read it
    rows = mapping_table(adapter, flat)
    table = {row.key: row.default for row in rows}
    if legacy and rows is adapter.table:  # the old spelling's own defaults (OpenRLHF's flat names), unless a
        # named release gives its own (openrlhf_version)
        table.update(adapter.legacy_defaults)
    ctx = EmitContext(fmt, scenario, flat, spelling, legacy, base, table)
    desired = adapter.emit_keys(ctx)
    patch_flat: dict[str, Any] = {}
    for key, value in desired.items():
        if not _same(value, ctx.current(key)):
            patch_flat[_spell(ctx, key)] = value
    # launch facts that are not config keys (the adapter's launch_flags: TRL's): the framework's parser refuses
    # them in the config, so they go to the commands that take them
    flags = adapter.launch_flags
    facts = {k: patch_flat.pop(k) for k in list(patch_flat) if k in flags}
    launch = [f"{flags[k]} {_text(v)}" for k, v in facts.items() if flags[k]]
    if facts:
        where = f"{fmt.replace('-', '_')}_launch.sh"
        ctx.notes.append(f"{', '.join(facts)}: launch facts, not config keys: {'; '.join(launch)} ({where})")
    overrides = _overrides(ctx, patch_flat)
    return Emitted(_nest(patch_flat), overrides, ctx.notes, launch)


def write_emitted(emitted: Emitted, fmt: str, out_dir: Path) -> list[Path]:
    """Write the patch (YAML; JSON for OpenRLHF), the overrides (one shell line) and the notes; the paths written."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise EmitError(f"{out_dir}: is a file; give a directory for the emitted patch")
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = fmt.replace("-", "_")
    rendered = registry.get(fmt).render_patch(emitted.patch)
    if rendered is not None:  # the framework's own file form (prime-rl: TOML)
        patch = out_dir / f"{stem}_patch{rendered[0]}"
        patch.write_text(rendered[1])
    elif fmt == "openrlhf":
        patch = out_dir / f"{stem}_patch.json"
        patch.write_text(json.dumps(emitted.patch, indent=2) + "\n")
    else:
        patch = out_dir / f"{stem}_patch.yaml"
        patch.write_text(yaml.safe_dump(emitted.patch, sort_keys=False, width=120) if emitted.patch else "{}\n")
    overrides = out_dir / f"{stem}_overrides.sh"
    overrides.write_text(" ".join(emitted.overrides) + "\n")
    written = [patch, overrides]
    if emitted.launch:
        launch = out_dir / f"{stem}_launch.sh"
        launch.write_text("".join(f"{line}\n" for line in emitted.launch))
        written.append(launch)
    if emitted.notes:
        notes = out_dir / f"{stem}_notes.txt"
        notes.write_text("".join(f"- {n}\n" for n in emitted.notes))
        written.append(notes)
    return written


def parse_emitted_overrides(fmt: str, overrides: Sequence[str], launch: Sequence[str] = ()) -> dict[str, Any]:
    """``overrides`` as ``rlsim import-config --set`` items take them (dotted key -> value): Hydra ``key=value``
    (``+``/``++`` prefixes dropped) or ``--key value`` words (a flag without a value is true); TRL's ``launch``
    lines give their launch facts back under the keys the import reads (``num_processes`` ...)."""
    facts = {}
    flags = registry.get(fmt).launch_flags
    for line in launch:
        command, _, value = line.rpartition(" ")
        key = next(k for k, flag in flags.items() if flag == command)
        facts[key] = parse_scalar(value)
    if facts:
        return {**parse_emitted_overrides(fmt, overrides), **facts}
    out: dict[str, Any] = {}
    if _hydra(fmt):
        for item in overrides:
            key, _, text = item.lstrip("+").partition("=")
            out[key] = parse_scalar(text)
        return out
    words = [w for item in overrides for w in item.split()]
    if not words:
        return {}
    # the --key value words as OpenRLHF's argument reader reads them (argparse's rules, shared by TRL)
    return parse_arguments(" ".join(words), "overrides")


# --------------------------------------------------------------------------------------------------- shared


def _same(a: Any, b: Any) -> bool:
    if b is MISSING:
        return False
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=0.0)
    return a == b


def _spell(ctx: EmitContext, key: str) -> str:
    if key in ctx.spelling:
        return ctx.spelling[key]
    if ctx.fmt == "openrlhf" and ctx.legacy:
        ctx.notes.append(f"{key}: has no flat (v0.9.5) flag; written with its dotted name")
    return key


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in flat.items():
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_text(v) for v in value) + "]"
    text = str(value)
    return f"'{text}'" if any(ch in text for ch in " \t'\"$;&|") else text


def _overrides(ctx: EmitContext, patch_flat: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key, value in patch_flat.items():
        if _hydra(ctx.fmt):
            absent = ctx.flat is not None and key not in ctx.flat and _canonical(ctx, key) not in ctx.flat
            # a key the original lacks: the adapter's NEW_KEY_PREFIX (NeMo RL's ++, Hydra's add-or-override)
            new_key = registry.get(ctx.fmt).new_key_prefix
            fresh = ctx.flat is None and bool(new_key) and ctx.table.get(key) is None
            prefix = new_key if (absent or fresh) else ""
            out.append(f"{prefix}{key}={_text(value)}")
        elif registry.get(ctx.fmt).switch_flags and isinstance(value, bool):
            if value:
                out.append(f"--{key}")
            else:
                ctx.notes.append(f"--{key}: remove it from the command line (a store_true flag; the patch sets false)")
        elif isinstance(value, (list, tuple)):
            out.append(f"--{key} " + " ".join(_text(v) for v in value))
        else:
            out.append(f"--{key} {_text(value)}")
    return out


def _canonical(ctx: EmitContext, spelled: str) -> str:
    for key, name in ctx.spelling.items():
        if name == spelled:
            return key
    return spelled


__all__ = ["Emitted", "EmitError", "emit", "parse_emitted_overrides", "write_emitted"]
