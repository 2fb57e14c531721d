"""TRL's launch as a user has it: the shell script or command line running ``accelerate launch [options] SCRIPT
--config GRPO.yaml [--key value ...]`` (``read``; rlsim.frameworks.launch reads it as text, never runs it) and the
accelerate config file it names (``accelerate_settings``). :mod:`rlsim.frameworks.trl.mapping`'s docstring says what
each part means.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import LAUNCH_NOTES, ImportConfigError, read_config
from rlsim.frameworks.launch import framework_command
from rlsim.io.files import load_yaml, read_text

ENTRY = "accelerate"
# accelerate launch options that take no value (accelerate/commands/launch.py, store_true)
ACCELERATE_FLAGS = {"--multi_gpu", "--use_deepspeed", "--use_fsdp", "--use_megatron_lm", "--cpu", "-m", "--module"}
ACCELERATE_FLAGS |= {"--no_python", "--debug", "--quiet", "-q", "--tpu", "--use_xpu", "--same_network"}


def _option(word: str) -> tuple[str, str | None]:
    key, eq, value = word.partition("=")
    return key, (value if eq else None)


def _find(path_text: str, where: Path) -> Path:
    """A path on the command line: as given (from the working directory), else from the script's folder or one
    of its parents (launch scripts name files from the repository's root)."""
    given = Path(path_text)
    if given.is_absolute() or given.is_file():
        return given
    for base in [where.parent, *where.parent.parents]:
        if (base / given).is_file():
            return base / given
    raise ImportConfigError(
        f"{where.name}: {path_text} is not a file (looked from the working directory and from {where.parent} up); "
        "run from the folder the command runs from, or give the file with --set"
    )


def read(path: Path) -> dict[str, Any]:
    """A GRPOConfig as YAML / JSON, or a launch script or command line running ``accelerate launch ... --config
    GRPO.yaml`` (module docstring)."""
    if path.suffix in (".yaml", ".yml", ".json"):
        return read_config(path, "trl")
    if not path.is_file():
        raise ImportConfigError(f"{path}: is not a file; give TRL's GRPO config (YAML / JSON) or its accelerate launch")
    words, notes = framework_command(read_text(path, "TRL launch script"), path.name, (ENTRY,))
    if not words or words[0] != "launch":
        raise ImportConfigError(f"{path.name}: runs accelerate without launch; give the accelerate launch command")
    words = words[1:]
    launch: dict[str, Any] = {}
    i = 0
    while i < len(words) and words[i].startswith("-"):  # accelerate's own options, up to the script
        key, value = _option(words[i])
        i += 1
        if key in ACCELERATE_FLAGS:
            continue
        if value is None and i < len(words):
            value, i = words[i], i + 1
        launch[key.lstrip("-").replace("-", "_")] = value
    if i >= len(words):
        raise ImportConfigError(f"{path.name}: accelerate launch names no training script")
    script, args = words[i], words[i + 1 :]
    data: dict[str, Any] = {}
    overrides: dict[str, Any] = {}
    j = 0
    while j < len(args):
        key, value = _option(args[j])
        j += 1
        if not key.startswith("--"):
            raise ImportConfigError(f"{path.name}: {args[j - 1]!r} after {script} is not a --key value argument")
        if value is None:
            if j < len(args) and not args[j].startswith("--"):
                value, j = args[j], j + 1
            else:
                value = "true"
        key = key[2:].replace("-", "_")
        if key == "config":
            data = read_config(_find(value, path), "trl")
        else:
            overrides[key] = load_yaml(value) if value else value  # TRL's parser types them by the field
    data.update(overrides)
    if "config_file" in launch:
        data.setdefault("accelerate_config", str(_find(launch["config_file"], path)))
    if "num_processes" in launch:
        data.setdefault("num_processes", int(launch["num_processes"]))
    data[LAUNCH_NOTES] = [f"read from the accelerate launch of {script} in {path.name}", *notes]
    return data


def accelerate_settings(path_text: str) -> tuple[dict[str, Any], list[str]]:
    """What an accelerate config file says of the processes and the sharding."""
    path = Path(path_text)
    if not path.is_file():
        raise ImportConfigError(f"accelerate_config: {path_text} is not a file; give accelerate's config YAML")
    cfg = read_config(path, "accelerate")
    kind = str(cfg.get("distributed_type", "NO"))
    stage = (cfg.get("deepspeed_config") or {}).get("zero_stage")
    notes = [f"accelerate config {path.name}: distributed_type {kind}" + (f", ZeRO stage {stage}" if stage else "")]
    if kind == "DEEPSPEED" and stage is not None and int(stage) < 3:
        notes.append(
            f"training: ZeRO-{stage} keeps whole parameters on every GPU; rlsim prices ZeRO-3 / FSDP full sharding "
            "(more gathers per micro-batch, less memory)"
        )
    elif kind not in ("DEEPSPEED", "FSDP"):
        notes.append(
            f"training: {kind} keeps whole parameters, gradients and optimizer states on every GPU; rlsim prices "
            "FSDP full sharding (less memory than it needs)"
        )
    out: dict[str, Any] = {}
    if cfg.get("num_processes") is not None:
        out["num_processes"] = int(cfg["num_processes"])
    return out, notes
