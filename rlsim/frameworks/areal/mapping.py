"""AReaL (inclusionAI/AReaL) configs as rlsim scenarios: the mapping ``TABLE``, ``read`` and ``to_scenario``.

Read at inclusionAI/AReaL@v1.0.4 (37d6c6400e99a05fa3409d6a067762a44df40d3b): ``areal/api/cli_args.py`` (the fields
and their defaults, transcribed in ``defaults.yaml``), ``areal/api/alloc_mode.py`` (allocation strings),
``areal/trainer/rl_trainer.py`` (which models run) and ``docs/en/tutorial/quickstart.md`` (the launch lines).

An AReaL experiment is an OmegaConf YAML (``${a.b}`` references between its keys) with ``key=value`` overrides on
the launch line: ``python3 -m areal.infra.launcher.local examples/math/gsm8k_rl.py --config gsm8k_grpo.yaml
rollout.backend=sglang:d2p1t1 ...`` (or the trainer script run directly, quickstart.md:22-140). :func:`read`
loads the YAML the ``--config`` names (beside the script or above it) and applies the overrides; the references
resolve after them.

Facts:

* ``train_dataset.batch_size`` prompts per step (P; cli_args.py:2584), ``gconfig.n_samples`` responses each (G;
  :166), capped at ``gconfig.max_new_tokens`` (:169); ``actor.ppo_n_minibatches`` optimizer steps (:1393).
* GPUs from the allocation strings (alloc_mode.py): ``rollout.backend`` ``sglang:d4p1t1`` is 4 data-parallel SGLang
  servers of TP 1 (d x p x t GPUs), ``actor.backend`` ``fsdp:d4p1t1`` the trainer's 4; the deprecated
  ``allocation_mode`` ``sglang:d4p1t1+d4p1t1`` gives both (generation + training). Rollout and training run on pools
  apart (decoupled), asynchronously: ``rollout.max_head_offpolicyness`` versions at most (:2034) is rlsim's
  staleness (0: synchronous, pools apart).
* ``actor.use_decoupled_loss`` (false: cli_args.py:1485) picks AReaL's decoupled PPO objective over the naive one
  under staleness: rlsim learning.staleness_loss decoupled_ppo / naive_ppo.
* The reference model runs when ``actor.kl_ctl > 0`` and a ``ref`` section is given (rl_trainer.py:179); a
  ``critic`` section means PPO with a critic (cli_args.py:2850).
* Engine: ``sglang.mem_fraction_static`` 0.9 / ``max_running_requests``; vLLM's ``gpu_memory_utilization`` 0.9 /
  ``max_num_seqs`` 256.

Not modelled, refused naming the key: engine pipeline parallelism (``p`` > 1 in the rollout's allocation).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import LAUNCH_NOTES, ImportConfigError, Source, read_config
from rlsim.frameworks.basic import (
    CONFIG_KEY,
    ENTRY_KEY,
    SCRIPT_KEY,
    Facts,
    Recognisers,
    hydra_launch,
    load_defaults,
    rows,
    sections,
)
from rlsim.frameworks.common import as_float, as_int, resolve_model

VERSION_READ = "AReaL v1.0.4 (37d6c64)"
LAUNCHERS = tuple(f"areal.{infra}launcher.{kind}" for infra in ("infra.", "") for kind in ("local", "ray", "slurm"))
RECOGNISERS = Recognisers(
    "areal",
    entry_points=LAUNCHERS,
    keys=("gconfig.n_samples", "rollout.max_head_offpolicyness", "actor.backend", "allocation_mode"),
    suffixes=(".yaml", ".sh"),
)
DEFAULTS = load_defaults(__file__)
TABLE = rows(
    DEFAULTS,
    (
        ("train_dataset.batch_size", "workload.prompts_per_step", "P: prompts per step"),
        ("train_dataset.max_length", "workload.max_prompt_tokens", "None: 1024 assumed (a note)"),
        ("gconfig.n_samples", "workload.group_size", "G: responses per prompt"),
        ("gconfig.max_new_tokens", "workload.max_response_tokens", "the response cap"),
        ("rollout.backend", "hardware.rollout_gpus, engine.tensor_parallel_size", "sglang:dDpPtT: D x P x T GPUs"),
        ("actor.backend", "hardware.train_gpus", "fsdp:dDpPtT (or megatron:...): D x P x T (x C) GPUs"),
        ("allocation_mode", "hardware", "deprecated: generation+training strings"),
        ("cluster.n_gpus_per_node", "hardware.gpus_per_node", "GPUs per node"),
        ("rollout.max_head_offpolicyness", "schedule.max_staleness", "0: sync (pools apart); k: async, k"),
        ("actor.path", "model", "a catalog name, alias or hf_id"),
        ("actor.optimizer.lr", "learning.lr0", "learning.reference_batch = P x G"),
        ("actor.ppo_n_minibatches", "algorithm.mini_batches_per_step", "optimizer steps per step"),
        ("actor.kl_ctl", "algorithm.kl_reference", "> 0 with a ref section: the reference pass"),
        ("actor.use_decoupled_loss", "learning.staleness_loss", "async: true -> decoupled_ppo, false -> naive_ppo"),
        ("sglang.mem_fraction_static", "engine.gpu_memory_utilization", "SGLang"),
        ("sglang.max_running_requests", "engine.max_num_seqs", "SGLang; None: derived"),
        ("vllm.gpu_memory_utilization", "engine.gpu_memory_utilization", "vLLM"),
        ("vllm.max_num_seqs", "engine.max_num_seqs", "vLLM"),
    ),
)
_PART = re.compile(r"([dptce])(\d+)")


def allocation(text: str, key: str) -> tuple[str, dict[str, int]]:
    """``sglang:d4p1t1`` -> ("sglang", {d: 4, p: 1, t: 1}); the backend may be absent (``d4p1t1``) or written with
    a dot (older AReaL: ``sglang.d4p1t1``)."""
    head, sep, dims = str(text).strip().rpartition(":") if ":" in str(text) else str(text).strip().rpartition(".")
    dims = dims if sep else str(text).strip()
    parts = dict((k, int(v)) for k, v in _PART.findall(dims))
    if not parts or _PART.sub("", dims):
        raise ImportConfigError(f"{key}: {text!r} is not an allocation string (backend:dNpNtN, e.g. sglang:d4p1t1)")
    return head, parts


def _gpus(dims: dict[str, int]) -> int:
    return dims.get("d", 1) * dims.get("p", 1) * dims.get("t", 1) * dims.get("c", 1)


def _find(name: str, folder: Path) -> Path:
    for base in (folder, *folder.parents):
        if (base / name).is_file():
            return base / name
    return folder / name


def read(path: Path) -> dict[str, Any]:
    """An AReaL YAML, or a launch line running it (module docstring): the YAML's keys with the overrides over
    them, as flat dotted keys where the line gives them."""
    if not path.is_file():
        raise ImportConfigError(f"{path}: is not a file; give AReaL's experiment YAML or its launch script")
    if path.suffix in (".yaml", ".yml", ".json"):
        data = read_config(path, "areal")
        data[LAUNCH_NOTES] = [f"{path.name} read over AReaL's defaults ({VERSION_READ})"]
        return data
    text = path.read_text(errors="replace")
    script = re.search(r"(\S+\.py)\s+--config", text)
    entries = LAUNCHERS + ((script[1].rsplit("/", 1)[-1],) if script else ())
    data = hydra_launch(path, entries, "AReaL")
    data.pop(ENTRY_KEY, None)
    data.pop(SCRIPT_KEY, None)
    configs = data.pop(CONFIG_KEY, [])
    notes = data.pop(LAUNCH_NOTES)
    if not configs:
        data[LAUNCH_NOTES] = notes
        return data
    config = _find(str(configs[-1]), path.parent)
    if not config.is_file():
        raise ImportConfigError(f"{path.name}: --config {configs[-1]} is not beside the script; give the YAML's path")
    base = read_config(config, "areal")
    base[LAUNCH_NOTES] = [*notes, f"--config {configs[-1]}: read from {config.name}"]
    base.update(data)  # flat dotted overrides: config_import flattens the nested YAML and these alike
    return base


def _engine(src: Source, backend: str, tp: int) -> tuple[str, float, int | None]:
    if backend == "sglang":
        seqs = src.get("sglang.max_running_requests")
        return (
            "sglang",
            as_float(src, "sglang.mem_fraction_static"),
            None if seqs is None else as_int(src, "sglang.max_running_requests"),
        )
    if backend == "vllm":
        return "vllm", as_float(src, "vllm.gpu_memory_utilization"), as_int(src, "vllm.max_num_seqs")
    raise ImportConfigError(f"rollout.backend: {backend!r} is not mapped (sglang or vllm)")


def to_scenario(src: Source) -> tuple[dict[str, Any], list[str]]:
    """The scenario sections of an AReaL experiment, and the assumptions made."""
    notes: list[str] = []
    legacy = src.get("allocation_mode")
    if legacy and not src.given("rollout.backend"):
        gen, _, train_text = str(legacy).partition("+")
        backend, gen_dims = allocation(gen, "allocation_mode")
        _, train_dims = allocation(train_text or gen, "allocation_mode")
        notes.append(f"allocation_mode {legacy}: deprecated; read as rollout.backend + actor.backend")
        src.get("actor.backend")
    else:
        if not src.given("rollout.backend"):
            raise ImportConfigError("rollout.backend: required (AReaL: e.g. sglang:d4p1t1); set it")
        if not src.given("actor.backend"):
            raise ImportConfigError("actor.backend: required (AReaL: e.g. fsdp:d4p1t1); set it")
        backend, gen_dims = allocation(src.get("rollout.backend"), "rollout.backend")
        _, train_dims = allocation(src.get("actor.backend"), "actor.backend")
    if gen_dims.get("p", 1) > 1:
        raise ImportConfigError(f"rollout.backend: p{gen_dims['p']}: engine pipeline parallelism is not modelled")
    tp = gen_dims.get("t", 1)
    engine, mem, seqs = _engine(src, backend, tp)
    prompts, group = as_int(src, "train_dataset.batch_size"), as_int(src, "gconfig.n_samples")
    if src.given("train_dataset.max_length"):
        max_prompt = as_int(src, "train_dataset.max_length")
    else:
        max_prompt = 1024
        notes.append("train_dataset.max_length unset (AReaL filters no prompt): 1024 tokens assumed")
    model, model_notes = resolve_model(src.get("actor.path"), "actor.path")
    notes += model_notes
    staleness = src.get("rollout.max_head_offpolicyness")
    if not isinstance(staleness, int) or isinstance(staleness, bool) or staleness < 0:
        raise ImportConfigError(
            f"rollout.max_head_offpolicyness: {staleness!r} must be 0 or a whole number of versions"
        )
    has_ref = any(k == "ref" or k.startswith("ref.") for k in src.flat)
    facts = Facts(
        model=model,
        prompts=prompts,
        group=group,
        max_prompt=max_prompt,
        max_response=as_int(src, "gconfig.max_new_tokens"),
        rollout_gpus=_gpus(gen_dims),
        train_gpus=_gpus(train_dims),
        colocated=False,
        tp=tp,
        engine=engine,
        gpu_memory_utilization=mem,
        max_num_seqs=seqs,
        mode="async" if staleness else "sync",
        staleness=staleness,
        lr=as_float(src, "actor.optimizer.lr"),
        algorithm="ppo" if any(k == "critic" or k.startswith("critic.") for k in src.flat) else "grpo",
        kl_reference=has_ref and as_float(src, "actor.kl_ctl") > 0,
        mini_batches=as_int(src, "actor.ppo_n_minibatches"),
        gpus_per_node=as_int(src, "cluster.n_gpus_per_node"),
        engine_note="sglang 0.5.10.post1 in AReaL v1.0.4 pyproject.toml:149",
    )
    if staleness:  # AReaL's two measured objectives (rlsim.learning.staleness: its staleness table)
        loss = "decoupled_ppo" if src.get("actor.use_decoupled_loss") else "naive_ppo"
        facts.extra["learning"] = {"staleness_loss": loss}
    out, more = sections(facts, "AReaL")
    return out, notes + more
