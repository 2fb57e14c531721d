"""TRL's launch as a user has it: the shell script or command line running ``accelerate launch [options] SCRIPT
--config GRPO.yaml [--key value ...]``, ``torchrun [options] SCRIPT ...`` (or ``-m MODULE``) or ``trl grpo --config
GRPO.yaml ...`` (``read``; rlsim.frameworks.launch reads it as text, never runs it) and the accelerate config file
it names (``accelerate_settings``). :mod:`rlsim.frameworks.trl.mapping`'s docstring says what
each part means.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import LAUNCH_NOTES, ImportConfigError, read_config
from rlsim.frameworks.launch import framework_command
from rlsim.io.files import load_yaml, read_text

ENTRIES = ("accelerate", "torchrun", "trl")  # tried in this order; trl: the ``trl grpo`` command
# accelerate launch options that take no value (accelerate/commands/launch.py, store_true)
ACCELERATE_FLAGS = {"--multi_gpu", "--use_deepspeed", "--use_fsdp", "--use_megatron_lm", "--cpu", "-m", "--module"}
ACCELERATE_FLAGS |= {"--no_python", "--debug", "--quiet", "-q", "--tpu", "--use_xpu", "--same_network"}
# torchrun options that take no value (torch/distributed/run.py, store_true / action=check_env)
TORCHRUN_FLAGS = {"--standalone", "-m", "--module", "--no-python", "--no_python", "--run-path", "--run_path"}


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
    """A GRPOConfig as YAML / JSON (a key given twice takes its last value, as TRL's ``yaml.safe_load`` of the
    config does: huggingface/trl@v0.16.0:trl/scripts/utils.py:182), or a launch script or command line running
    ``accelerate launch ... --config GRPO.yaml`` (module docstring)."""
    if path.suffix in (".yaml", ".yml", ".json"):
        return read_config(path, "trl", last_duplicate=True)
    if not path.is_file():
        raise ImportConfigError(f"{path}: is not a file; give TRL's GRPO config (YAML / JSON) or its accelerate launch")
    text = read_text(path, "TRL launch script")
    entry, words, notes = _command(text, path.name)
    launch: dict[str, Any] = {}
    i = 0
    flags = TORCHRUN_FLAGS if entry == "torchrun" else ACCELERATE_FLAGS
    while entry != "trl" and i < len(words) and words[i].startswith("-"):  # the launcher's options, up to the script
        key, value = _option(words[i])
        i += 1
        if key in flags:
            continue
        if value is None and i < len(words):
            value, i = words[i], i + 1
        launch[key.lstrip("-").replace("-", "_")] = value
    if entry == "trl":
        words, i = ["trl grpo", *words], 0
    if i >= len(words):
        raise ImportConfigError(f"{path.name}: {entry} names no training script")
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
            data = read_config(_find(value, path), "trl", last_duplicate=True)
        else:
            overrides[key] = load_yaml(value) if value else value  # TRL's parser types them by the field
    data.update(overrides)
    if "config_file" in launch:
        data.setdefault("accelerate_config", str(_find(launch["config_file"], path)))
    if "num_processes" in launch:
        data.setdefault("num_processes", _count(launch, "num_processes", path))
    if "nproc_per_node" in launch:  # torchrun: processes per node x nodes
        nodes = _count(launch, "nnodes", path) if "nnodes" in launch else 1
        data.setdefault("num_processes", _count(launch, "nproc_per_node", path) * nodes)
    how = f"the {entry} launch of {script}" if entry != "trl" else "the trl grpo command"
    data[LAUNCH_NOTES] = [f"read from {how} in {path.name}", *notes]
    return data


def _command(text: str, where: str) -> tuple[str, list[str], list[str]]:
    """(launcher, the words after ``accelerate launch`` / ``torchrun`` / ``trl grpo``, notes): the first launcher
    of ENTRIES the script runs."""
    for entry in ENTRIES:
        try:
            words, notes = framework_command(text, where, (entry,))
        except ImportConfigError:
            continue
        if entry == "accelerate":
            if not words or words[0] != "launch":
                raise ImportConfigError(f"{where}: runs accelerate without launch; give the accelerate launch command")
            return entry, words[1:], notes
        if entry == "trl":
            if not words or words[0] != "grpo":
                sub = words[0] if words else "nothing"
                raise ImportConfigError(f"{where}: runs trl {sub}, not trl grpo; rlsim imports TRL's GRPO runs")
            return entry, words[1:], notes
        return entry, words, notes
    raise ImportConfigError(
        f"{where}: runs no accelerate launch, torchrun or trl grpo; give TRL's GRPO config (YAML / JSON) or its launch"
    )


def _count(launch: dict[str, Any], key: str, path: Path) -> int:
    try:
        return int(launch[key])
    except (TypeError, ValueError):
        raise ImportConfigError(
            f"{path.name}: --{key} {launch[key]!r} is not a number; --set num_processes=N (the training processes)"
        ) from None


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
