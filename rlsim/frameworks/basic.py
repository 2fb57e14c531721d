"""What the adapters of slime, SkyRL, prime-rl, AReaL and ROLL share: a framework's documented defaults read from
the package's ``defaults.yaml`` (:func:`load_defaults`, :func:`rows`), the scenario's sections from the few facts
those adapters map (:class:`Facts` -> :func:`sections`), the emit side's defaults-first key set
(:func:`with_defaults`), the format's recognisers kept as data (:class:`Recognisers`: the entry points and
characteristic keys that identify a file as that framework's, for the registry's detection hook) and the adapter
class whose work is its package's ``mapping`` and ``emit`` modules (:class:`PackageAdapter`).

Each of those frameworks launches its rollout engines (vLLM or SGLang) beside a trainer; what differs is where the
batch, group, pools and engine come from, which each package's ``mapping`` says with its sources.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import yaml

from rlsim.frameworks import sglang
from rlsim.frameworks.adapter import (
    LAUNCH_NOTES,
    MISSING,
    EmitContext,
    FrameworkAdapter,
    ImportConfigError,
    Row,
    Source,
)
from rlsim.frameworks.common import assumed_workload
from rlsim.frameworks.launch import framework_command
from rlsim.io.files import read_text
from rlsim.scenario.overrides import parse_scalar

if TYPE_CHECKING:
    from rlsim.schema.scenario import Scenario


@dataclass(frozen=True)
class Recognisers:
    """How a file says it is this framework's: entry-point strings on a launch line and keys (dotted) that only
    its configs hold. Data for the registry's format detection (``--format`` optional)."""

    format: str
    entry_points: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()


class PackageAdapter(FrameworkAdapter):
    """An adapter whose reading and mapping are its package's ``mapping`` module (``read``, ``to_scenario``,
    ``TABLE``, ``VERSION_READ``, ``RECOGNISERS``) and whose emitting is its ``emit`` module (``emit_keys``): a
    subclass names the two modules (``mapping = ...``, ``emitter = ...``) and its format's override style."""

    mapping: ModuleType
    emitter: ModuleType

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        module = cls.__dict__.get("mapping")
        if module is not None:
            cls.table = module.TABLE
            cls.version_read = module.VERSION_READ
            cls.recognisers = module.RECOGNISERS

    def read(self, path: Path) -> dict[str, Any]:
        return self.mapping.read(path)  # type: ignore[no-any-return]

    def to_scenario(self, source: Source) -> tuple[dict[str, Any], list[str]]:
        return self.mapping.to_scenario(source)  # type: ignore[no-any-return]

    def emit_keys(self, ctx: EmitContext) -> dict[str, Any]:
        return self.emitter.emit_keys(ctx)  # type: ignore[no-any-return]


def load_defaults(package_file: str) -> dict[str, Any]:
    """The ``defaults.yaml`` beside ``package_file``: framework key -> documented default (its header cites the
    framework's defaults file at the tag read)."""
    data = yaml.safe_load((Path(package_file).parent / "defaults.yaml").read_text())
    return dict(data.get("defaults") or {})


def rows(defaults: dict[str, Any], spec: tuple[tuple[str, str, str], ...]) -> tuple[Row, ...]:
    """Mapping rows (key, rlsim field, rule) with each key's default from ``defaults`` (None: none)."""
    return tuple(Row(key, defaults.get(key), fld, rule) for key, fld, rule in spec)


@dataclass
class Facts:
    """What a framework config says of a run, in rlsim's terms (an adapter fills it, :func:`sections` maps it)."""

    model: str | dict[str, Any]
    prompts: int
    group: int
    max_prompt: int
    max_response: int
    rollout_gpus: int
    train_gpus: int
    colocated: bool
    tp: int = 1
    engine: str = "vllm"  # vllm | sglang
    gpu_memory_utilization: float = 0.9
    max_num_seqs: int | None = 256
    mode: str = "sync"  # sync | async | fully-async
    staleness: int = 0
    sync_every: int = 1
    partial_rollout: bool = False
    lr: float = 1e-6
    algorithm: str = "grpo"
    kl_reference: bool = False
    mini_batches: int = 1
    epochs: int = 1
    gpus_per_node: int | None = None
    engine_note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def sections(f: Facts, who: str) -> tuple[dict[str, Any], list[str]]:
    """The scenario's sections for ``f`` (``who``: the framework, for notes), and the assumptions made."""
    if f.rollout_gpus % f.tp:
        raise ImportConfigError(
            f"{who}: the rollout's {f.rollout_gpus} GPUs are not a whole number of engines of TP {f.tp}; change one"
        )
    workload, notes = assumed_workload(f.prompts, f.group, f.max_prompt, f.max_response)
    if f.engine == "sglang":
        engine, _, sg_notes = sglang.engine_section(f.tp, f.gpu_memory_utilization, f.max_num_seqs, "0.5", who)
        notes += [n.replace("SGLang 0.5 ", f"SGLang ({f.engine_note or 'its pinned release'}) ") for n in sg_notes]
    else:
        engine = {"tensor_parallel_size": f.tp, "gpu_memory_utilization": f.gpu_memory_utilization}
        if f.max_num_seqs is not None:  # None: rlsim's vLLM default
            engine["max_num_seqs"] = f.max_num_seqs
        engine["behaviour"] = "vllm-v1"
    if f.colocated:
        gpus = max(f.rollout_gpus, f.train_gpus)
        hardware: dict[str, Any] = {"num_gpus": gpus, "placement": "colocated"}
        if f.rollout_gpus != gpus:  # engines on a part of the pool (ROLL: actor_infer's devices within actor_train's)
            engine["replicas"] = f.rollout_gpus // f.tp
        if f.train_gpus != gpus:
            raise ImportConfigError(
                f"{who}: the trainer runs on {f.train_gpus} of {gpus} colocated GPUs; rlsim trains on all"
            )
    else:
        hardware = {
            "num_gpus": f.rollout_gpus + f.train_gpus,
            "placement": "separate",
            "rollout_gpus": f.rollout_gpus,
            "train_gpus": f.train_gpus,
        }
    if f.gpus_per_node:
        hardware["gpus_per_node"] = f.gpus_per_node
    if f.mode == "fully-async":
        schedule: dict[str, Any] = {
            "mode": "fully-async",
            "sync_every": f.sync_every,
            "staleness_threshold": float(f.staleness),
            "partial_rollout": f.partial_rollout,
        }
    elif f.mode == "async" and f.staleness >= 1:
        schedule = {"mode": "async", "max_staleness": f.staleness}
    else:
        schedule = {"mode": "sync-colocated" if f.colocated else "sync-separate"}
    if schedule["mode"] != "sync-colocated" and f.colocated:
        raise ImportConfigError(
            f"{who}: an asynchronous schedule needs the rollout on GPUs of its own; rlsim has no colocated async"
        )
    out = {
        "model": f.model,
        "hardware": hardware,
        "engine": engine,
        "workload": workload,
        "algorithm": {
            "name": f.algorithm,
            "mini_batches_per_step": f.mini_batches,
            "epochs_per_step": f.epochs,
            "kl_reference": f.kl_reference,
        },
        "schedule": schedule,
        "learning": {"lr0": f.lr, "reference_batch": f.prompts * f.group},
    }
    for key, value in f.extra.items():
        out.setdefault(key, {}).update(value)
    return out, notes


def with_defaults(ctx: EmitContext, defaults: dict[str, Any], keys: dict[str, Any]) -> dict[str, Any]:
    """Without an original, the documented defaults (keys with one) overlaid with ``keys``: the emitted file
    carries the framework's defaults for the keys the scenario does not set. With one, ``keys`` alone (the
    original's own values stand for the rest)."""
    if ctx.flat is not None:
        return keys
    return {**{k: v for k, v in defaults.items() if v is not None and v != ""}, **keys}


_INTERP = re.compile(r"\$\{([A-Za-z_][\w.]*)\}")


def resolve_references(flat: dict[str, Any]) -> dict[str, Any]:
    """OmegaConf-style ``${a.b}`` references between the keys of ``flat`` resolved (a whole-value reference takes
    the referenced value's type; a resolver such as ``${oc.env:HOME}`` or an unknown key stays as written)."""
    out = dict(flat)
    for _ in range(8):  # references to references
        changed = False
        for key, value in out.items():
            if not isinstance(value, str) or "${" not in value:
                continue
            whole = _INTERP.fullmatch(value.strip())
            if whole and whole[1] in out and whole[1] != key:
                out[key], changed = out[whole[1]], True
                continue
            new = _INTERP.sub(lambda m, k=key: str(out[m[1]]) if m[1] in out and m[1] != k else m[0], value)
            if new != value:
                out[key], changed = new, True
        if not changed:
            break
    return out


def count_gpus(f: Facts) -> int:
    return f.rollout_gpus + (0 if f.colocated else f.train_gpus)


def keep_original(ctx: EmitContext, d: dict[str, Any], key: str, get: Callable[[Scenario], Any]) -> None:
    """Where the plan keeps the original's value of what ``key`` says (``get``), the original's spelling of it
    stays (a local checkpoint path, an unset prompt cap): ``key`` is dropped from ``d`` or set to the original's."""
    if ctx.base is None or ctx.changed(get, None):
        return
    current = ctx.current(key)
    if current is MISSING or current is None:
        d.pop(key, None)
    else:
        d[key] = current


def hydra_launch(path: Path, entries: tuple[str, ...], who: str) -> dict[str, Any]:
    """A launch script's ``key=value`` overrides after one of ``entries`` (``+`` / ``++`` prefixes dropped), read
    with rlsim.frameworks.launch as verl's are; the entry that ran under :data:`ENTRY_KEY`, notes under
    LAUNCH_NOTES. ``--config-name`` / ``--config-path`` / ``--config`` words are kept under ``CONFIG_KEY``."""
    text = read_text(path, f"{who} launch script")
    words, notes = framework_command(text, path.name, entries)
    entry = next((e for e in entries if _runs(text, e)), entries[0])
    data: dict[str, Any] = {ENTRY_KEY: entry}
    configs: list[str] = []
    pending = False
    for word in words:
        if pending:
            configs.append(word)
            pending = False
            continue
        if word.startswith("--config"):
            if "=" in word:
                configs.append(word.partition("=")[2])
            else:
                pending = True
            continue
        if word.startswith(("hydra.", "~")):
            continue
        key, eq, value = word.lstrip("+").partition("=")
        if not eq or not key:
            if word.endswith(".py") and not data.get(SCRIPT_KEY):  # AReaL: the trainer script after the launcher
                data[SCRIPT_KEY] = word
                continue
            raise ImportConfigError(f"{path.name}: {word!r} after {entry} is not an override (key=value)")
        data[key] = parse_scalar(value)
    if configs:
        data[CONFIG_KEY] = configs
    data[LAUNCH_NOTES] = [f"read from the {entry} command in {path.name}, over {who}'s defaults", *notes]
    return data


ENTRY_KEY = "__rlsim_entry__"
CONFIG_KEY = "__rlsim_config_files__"
SCRIPT_KEY = "__rlsim_script__"


def _runs(text: str, entry: str) -> bool:
    return re.search(rf"(^|[\s/]){re.escape(entry)}(\s|$)", text, re.M) is not None


def toml_text(data: dict[str, Any]) -> str:
    """A nested mapping of scalars and lists as TOML (tables after the keys of their parent)."""
    lines: list[str] = []

    def scalar(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (int, float)):
            return repr(value)
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(scalar(v) for v in value) + "]"
        return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'

    def table(node: dict[str, Any], prefix: str) -> None:
        plain = {k: v for k, v in node.items() if not isinstance(v, dict)}
        if prefix and (plain or not node):
            lines.append(f"\n[{prefix}]")
        lines.extend(f"{k} = {scalar(v)}" for k, v in plain.items() if v is not None)
        for key, value in node.items():
            if isinstance(value, dict):
                table(value, f"{prefix}.{key}" if prefix else key)

    table(data, "")
    return "\n".join(lines).lstrip("\n") + "\n"
