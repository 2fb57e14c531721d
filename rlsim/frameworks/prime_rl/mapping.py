"""prime-rl (PrimeIntellect-ai/prime-rl) configs as rlsim scenarios: the mapping ``TABLE``, ``read`` and
``to_scenario``.

Read at PrimeIntellect-ai/prime-rl@v0.8.1.dev67 (559b44772e471d1538537b8805cc77f3824a5e64), the newest tag:
``packages/prime-rl-configs/src/prime_rl/configs/`` (``rl.py``, ``orchestrator.py``, ``inference.py``,
``trainer.py``: the fields and their defaults, transcribed in ``defaults.yaml``), ``docs/configuration.md`` (how
files compose) and ``CHANGELOG.md``.

prime-rl is launched as ``uv run rl @ configs/x/rl.toml``: TOML files introduced by ``@`` compose left to right,
deep-merged (``--trainer @ t.toml`` merges one under its section), and ``--a.b-c value`` flags (kebab-case,
dotted; ``--flag`` / ``--no-flag`` booleans) override them (docs/configuration.md:30-60). :func:`read` composes
them as that says (Python's tomllib reads TOML), from a TOML file or a launch script / command line.

Facts:

* ``orchestrator.batch_size`` counts samples, not prompts (orchestrator.py:508 "Samples to train on per step"),
  128 unless ``token_batch_size`` is set (:626-627); each example gets ``orchestrator.group_size`` rollouts (:517)
  and batch_size must divide by it (:629), so P = batch_size / group_size, G = group_size.
* Always disaggregated: the trainer and the vLLM servers have GPUs of their own. ``deployment`` single_node:
  ``num_train_gpus`` + ``num_infer_gpus`` (1 + 1: rl.py:177-194); multi_node: ``num_train_nodes`` and
  ``num_infer_nodes x num_infer_replicas`` nodes of ``gpus_per_node`` (8) GPUs (rl.py:197-216). Each server spans
  ``inference.vllm.tensor_parallel_size`` GPUs (inference.py:84), ``gpu_memory_utilization`` 0.9 (:102).
* Always asynchronous: the trainer runs exactly one step ahead of inference (CHANGELOG.md:31, v0.7.0, which
  removed ``max_async_level``; its old default 1 is now fixed): rlsim async, staleness 1. A config of an older
  release that sets ``max_async_level`` gets that staleness (0: synchronous, pools apart).
  ``orchestrator.max_off_policy_steps`` (8) bounds a rollout spanning several updates (a note).
* Responses are capped at ``orchestrator.train.sampling.max_completion_tokens``, else the sequence length
  (``seq_len``, shared, else ``orchestrator.seq_len`` 2048); prompts at the sequence length less that cap.
* Activation checkpointing is on by default (trainer.py:191 ``ac = ActivationCheckpointConfig()``, ``freq`` 1:
  every layer, :35): rlsim full recompute.
* No critic and no reference model: critic-free (rlsim grpo), no KL pass.

Not modelled, refused naming the key: token-based batching (``orchestrator.token_batch_size``), a run without
``[inference]`` (servers started by hand).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import LAUNCH_NOTES, ImportConfigError, Source
from rlsim.frameworks.basic import Facts, Recognisers, load_defaults, rows, sections
from rlsim.frameworks.common import as_float, as_int, divisible, resolve_model
from rlsim.frameworks.launch import framework_command
from rlsim.io.files import read_text
from rlsim.scenario.overrides import parse_scalar

VERSION_READ = "prime-rl v0.8.1.dev67 (559b447)"
ENTRY = "rl"
RECOGNISERS = Recognisers(
    "prime-rl",
    entry_points=("uv run rl", "rl @"),
    keys=("orchestrator.group_size", "orchestrator.batch_size", "deployment.num_infer_gpus", "trainer.optim.lr"),
    suffixes=(".toml",),
)
ORC = "orchestrator."
DP = "deployment."
V = "inference.vllm."
DEFAULTS = load_defaults(__file__)
TABLE = rows(
    DEFAULTS,
    (
        (ORC + "batch_size", "workload.prompts_per_step", "samples per step: P = batch_size / group_size"),
        (ORC + "token_batch_size", "(check)", "set: refused (token-based batching)"),
        (ORC + "group_size", "workload.group_size", "G: rollouts per example"),
        (ORC + "seq_len", "workload.max_prompt_tokens", "sequence cap (shared seq_len wins when this is unset)"),
        ("seq_len", "workload.max_prompt_tokens", "shared sequence cap"),
        (ORC + "train.sampling.max_completion_tokens", "workload.max_response_tokens", "None: the sequence cap"),
        (ORC + "max_off_policy_steps", "(a note)", "bounds a rollout spanning several updates"),
        (DP + "type", "hardware", "single_node or multi_node"),
        (DP + "gpus_per_node", "hardware.gpus_per_node", "multi_node: GPUs per node"),
        (DP + "num_train_gpus", "hardware.train_gpus", "single_node"),
        (DP + "num_infer_gpus", "hardware.rollout_gpus", "single_node"),
        (DP + "num_train_nodes", "hardware.train_gpus", "multi_node: x gpus_per_node"),
        (DP + "num_infer_nodes", "hardware.rollout_gpus", "multi_node: x replicas x gpus_per_node"),
        (DP + "num_infer_replicas", "hardware.rollout_gpus", "multi_node"),
        (V + "tensor_parallel_size", "engine.tensor_parallel_size", "per vLLM server"),
        ("inference.parallel.tp", "engine.tensor_parallel_size", "the same, as v0.8.0 spells it (default 1)"),
        (V + "gpu_memory_utilization", "engine.gpu_memory_utilization", "of each GPU"),
        (V + "max_num_seqs", "engine.max_num_seqs", "None: rlsim's vLLM default"),
        ("model.name", "model", "shared; else trainer.model.name"),
        ("trainer.model.name", "model", "a catalog name, alias or hf_id"),
        ("trainer.optim.lr", "learning.lr0", "learning.reference_batch = batch_size"),
        ("max_async_level", "schedule.max_staleness", "releases before v0.7.0; since: 1"),
        ("trainer.model.ac.freq", "training.activation_recompute", "on by default, every freq-th layer: full"),
    ),
)


def _tensor_parallel(src: Source, notes: list[str]) -> int:
    """Each vLLM server's tensor-parallel size: ``inference.vllm.tensor_parallel_size`` (the release read), or
    ``inference.parallel.tp`` as releases up to v0.8.0 spell it (prime-rl@v0.8.0
    packages/prime-rl-configs/src/prime_rl/configs/inference.py:26-27, passed to vLLM as tensor_parallel_size at
    :579); both given is refused."""
    old = "inference.parallel.tp"
    if not src.given(old):
        return as_int(src, V + "tensor_parallel_size")
    if src.given(V + "tensor_parallel_size"):
        raise ImportConfigError(
            f"{old} and {V}tensor_parallel_size: the same setting in two releases' spellings; keep one"
        )
    notes.append(f"{old}: prime-rl v0.8.0's spelling of {V}tensor_parallel_size")
    return as_int(src, old)


def _toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ImportConfigError(f"{path}: no such TOML file; give the path the command names (@ path)")
    try:
        return tomllib.loads(read_text(path, "prime-rl TOML"))
    except tomllib.TOMLDecodeError as exc:
        raise ImportConfigError(f"{path}: is not valid TOML ({exc}); fix its syntax") from None


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` deep-merged into ``base`` (docs/configuration.md: unset fields of an overlay keep the base's)."""
    out = dict(base)
    for key, value in over.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _find(name: str, folder: Path) -> Path:
    """A TOML the command names: beside the script, or under one of its parent folders (the repository root)."""
    for base in (folder, *folder.parents):
        if (base / name).is_file():
            return base / name
    return folder / name


def _nested(key: str, value: Any) -> dict[str, Any]:
    out: dict[str, Any] = value
    for part in reversed(key.split(".")):
        out = {part: out}
    return out


def compose(words: list[str], folder: Path, where: str) -> tuple[dict[str, Any], list[str]]:
    """The config the ``rl`` command's words give: ``@ file`` / ``--section @ file`` merged in order, then
    ``--a.b-c value`` flags (module docstring); and the files read."""
    data: dict[str, Any] = {}
    files: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        section = None
        if word.startswith("--") and i + 2 < len(words) + 1 and i + 1 < len(words) and words[i + 1] == "@":
            section, i = word[2:].replace("-", "_"), i + 1
            word = "@"
        if word == "@":
            if i + 1 >= len(words):
                raise ImportConfigError(f"{where}: '@' names no TOML file; write @ path/to/config.toml")
            path = _find(words[i + 1], folder)
            files.append(words[i + 1])
            loaded = _toml(path)
            data = merge(data, _nested(section, loaded) if section else loaded)
            i += 2
            continue
        if word.startswith("@"):
            raise ImportConfigError(f"{where}: {word!r}: write '@ {word[1:]}' (prime-rl needs the space)")
        if not word.startswith("--"):
            raise ImportConfigError(f"{where}: {word!r} after rl is neither '@ file' nor a --flag")
        key = word[2:].replace("-", "_")
        value: Any = True
        if i + 1 < len(words) and not words[i + 1].startswith("--") and words[i + 1] != "@":
            value, i = parse_scalar(words[i + 1]), i + 1
        elif key.startswith("no_") or ".no_" in key:
            head, _, tail = key.rpartition("no_")
            key, value = head + tail, False
        data = merge(data, _nested(key, value))
        i += 1
    return data, files


def read(path: Path) -> dict[str, Any]:
    """A prime-rl TOML, or a launch script / command line running ``rl @ a.toml ...`` (composed as prime-rl
    does; nothing is run)."""
    if path.suffix == ".toml":
        data = _toml(path)
        data[LAUNCH_NOTES] = [f"{path.name} read over prime-rl's defaults ({VERSION_READ})"]
        return data
    if not path.is_file():
        raise ImportConfigError(f"{path}: is not a file; give the prime-rl TOML or the command (uv run rl @ x.toml)")
    words, notes = framework_command(read_text(path, "prime-rl command"), path.name, (ENTRY,))
    data, files = compose(words, path.parent, path.name)
    data[LAUNCH_NOTES] = [f"read from the rl command in {path.name} ({' then '.join(files) or 'flags only'})", *notes]
    return data


def _gpus(src: Source) -> tuple[int, int, int]:
    """(rollout GPUs, train GPUs, GPUs per node) of the deployment."""
    kind = src.get(DP + "type")
    per_node = as_int(src, DP + "gpus_per_node")
    if kind == "single_node":
        return as_int(src, DP + "num_infer_gpus"), as_int(src, DP + "num_train_gpus"), per_node
    if kind != "multi_node":
        raise ImportConfigError(f"{DP}type: {kind!r} is not single_node or multi_node; fix it")
    if not src.given(DP + "num_train_nodes"):
        raise ImportConfigError(f"{DP}num_train_nodes: required with multi_node (prime-rl: rl.py:200); set it")
    if not src.given(DP + "num_infer_nodes"):
        raise ImportConfigError(
            f"{DP}num_infer_nodes: unset (prime-rl then takes inference.deployment's); --set {DP}num_infer_nodes=N"
        )
    infer_nodes = as_int(src, DP + "num_infer_nodes") * as_int(src, DP + "num_infer_replicas")
    return infer_nodes * per_node, as_int(src, DP + "num_train_nodes") * per_node, per_node


def to_scenario(src: Source) -> tuple[dict[str, Any], list[str]]:
    """The scenario sections of a prime-rl config, and the assumptions made."""
    notes: list[str] = []
    if src.given(ORC + "token_batch_size"):
        raise ImportConfigError(f"{ORC}token_batch_size: token-based batching is not modelled; set {ORC}batch_size")
    if not any(k == "inference" or k.startswith("inference.") for k in src.flat):
        raise ImportConfigError("[inference]: absent, so rl starts no inference server; add [inference] to simulate it")
    src.used.update(k for k in src.flat if k == "inference")
    samples, group = as_int(src, ORC + "batch_size"), as_int(src, ORC + "group_size")
    prompts = divisible(f"{ORC}batch_size (samples)", samples, f"{ORC}group_size", group)
    rollout, train, per_node = _gpus(src)
    seq = (
        as_int(src, ORC + "seq_len")
        if src.given(ORC + "seq_len") or not src.given("seq_len")
        else as_int(src, "seq_len")
    )
    if src.given(ORC + "train.sampling.max_completion_tokens"):
        response = as_int(src, ORC + "train.sampling.max_completion_tokens")
    else:
        response = seq
        notes.append(f"{ORC}train.sampling.max_completion_tokens unset: responses capped at the sequence length {seq}")
    prompt = seq - response if seq > response else seq
    if seq <= response:
        notes.append(f"prompt cap: the sequence length {seq} (the response cap {response} leaves none)")
    name_key = "model.name" if src.given("model.name") else "trainer.model.name"
    model, model_notes = resolve_model(src.get(name_key), name_key)
    notes += model_notes
    staleness = as_int(src, "max_async_level") if src.given("max_async_level") and src.get("max_async_level") else 1
    if src.given("max_async_level") and not src.get("max_async_level"):
        staleness = 0
    notes.append(
        f"prime-rl: the trainer runs one step ahead of inference (CHANGELOG.md:31): async, staleness {staleness}; "
        f"{ORC}max_off_policy_steps {src.get(ORC + 'max_off_policy_steps')} bounds a rollout spanning several updates"
    )
    max_seqs = src.get(V + "max_num_seqs")
    facts = Facts(
        model=model,
        prompts=prompts,
        group=group,
        max_prompt=prompt,
        max_response=response,
        rollout_gpus=rollout,
        train_gpus=train,
        colocated=False,
        tp=_tensor_parallel(src, notes),
        gpu_memory_utilization=as_float(src, V + "gpu_memory_utilization"),
        max_num_seqs=as_int(src, V + "max_num_seqs") if max_seqs is not None else None,
        mode="async" if staleness else "sync",
        staleness=staleness,
        lr=as_float(src, "trainer.optim.lr"),
        gpus_per_node=per_node,
    )
    src.used.update(k for k in src.flat if k == "trainer.model.ac")
    if as_int(src, "trainer.model.ac.freq") > 1:
        notes.append("trainer.model.ac.freq > 1: checkpointing every few layers, priced as every layer (full)")
    facts.extra["training"] = {"activation_recompute": "full"}
    out, more = sections(facts, "prime-rl")
    return out, notes + more
