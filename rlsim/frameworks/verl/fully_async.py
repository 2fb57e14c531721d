"""verl's fully-async trainer (``fully_async_main``) as a scenario of ``schedule.mode: fully-async``
(rlsim.run.fully_async simulates it).

Read at volcengine/verl@v0.7.0, ``recipe/fully_async_policy`` (V; the same code moved to
``verl/experimental/fully_async_policy`` after it, and both entry points are read):

* the config is ``V/config/fully_async_ppo_trainer.yaml``: verl's ``ppo_trainer`` with an ``async_training`` section
  (``staleness_threshold`` 0.1, ``trigger_parameter_sync_step`` 4, ``require_batches`` 1, ``partial_rollout`` true,
  ``use_rollout_log_probs`` true, ``compute_prox_log_prob`` false: lines 12-28) and the rollouter's own pool
  (``rollout.nnodes`` 1, ``rollout.n_gpus_per_node`` 8: lines 45-48); ``trainer.nnodes`` x ``n_gpus_per_node`` is the
  trainer's pool alone (V/fully_async_main.py:52), so the placement is separate.
* a trainer update takes ``require_batches x ppo_mini_batch_size`` prompts (V/fully_async_trainer.py:110), so that is
  a step's P, in ``require_batches`` mini-batches (optimizer steps); ``data.train_batch_size`` is not read (docs/
  advance/fully_async.md: "not effective").
* with ``use_rollout_log_probs`` and no ``compute_prox_log_prob`` the trainer takes the rollout's log-probs as the
  old ones (V/ray_trainer.py:375, :390): no old log-prob pass.
* the weight sync: the checkpoint engine (``async_training.checkpoint_engine.enable`` true, 4096 MiB buckets:
  lines 31-36; ``weight_sync.transfer: bucketed`` with ``host_staged``), else rank 0's broadcast tensor by tensor
  (``per_tensor``); rlsim.trainer.sync_gathered.
* the rollouter keeps at most 16 prompts per server in flight (V/fully_async_rollouter.py:187): an engine replica
  runs at most 16 x n sequences (``engine.max_num_seqs`` capped there).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import ImportConfigError, Row, Source
from rlsim.frameworks.common import as_float, as_int
from rlsim.frameworks.verl import mapping

ENTRIES = ("recipe.fully_async_policy.fully_async_main", "verl.experimental.fully_async_policy.fully_async_main")
MARK = "__rlsim_verl_fully_async__"  # read() puts the entry point that ran under this key
AT = "async_training."
PROMPTS_PER_SERVER = 16  # V/fully_async_rollouter.py:187 (rlsim.run.fully_async hands over the pool in such waves)

TABLE: tuple[Row, ...] = (
    Row(AT + "require_batches", 1, "workload.prompts_per_step", "fully_async_main: P = require_batches x mini-batch"),
    Row(AT + "trigger_parameter_sync_step", 4, "schedule.sync_every", "fully_async_main: updates per weight sync"),
    Row(AT + "staleness_threshold", 0.1, "schedule.staleness_threshold", "fully_async_main: prompts ahead, fraction"),
    Row(AT + "partial_rollout", True, "schedule.partial_rollout", "fully_async_main: resume on the new weights"),
    Row(AT + "use_rollout_log_probs", True, "algorithm.recompute_old_logprob", "true: the rollout's log-probs"),
    Row(AT + "compute_prox_log_prob", False, "algorithm.recompute_old_logprob", "true: the trainer's pass again"),
    Row("rollout.nnodes", 1, "hardware.rollout_gpus", "fully_async_main: the rollouter's own nodes"),
    Row("rollout.n_gpus_per_node", 8, "hardware.rollout_gpus", "fully_async_main: rollout_gpus = per node x nnodes"),
    Row(
        AT + "checkpoint_engine.enable", True, "weight_sync.transfer", "true: bucketed, host_staged; false: per_tensor"
    ),
    Row(AT + "checkpoint_engine.device_buffer_size_M", 4096, "weight_sync.bucket_bytes", "MiB per bucket"),
)


def read(path: Path) -> dict[str, Any]:
    """A verl config, marked as fully-async when it is a launch script running ``fully_async_main`` or a YAML with
    an ``async_training`` section; otherwise as rlsim.frameworks.verl.mapping reads it."""
    if path.suffix in (".yaml", ".yml", ".json"):
        data = mapping.read(path)
        if isinstance(data.get("async_training"), dict):
            data[MARK] = "fully_async_ppo_trainer"
        return data
    try:
        data = mapping.read(path, ENTRIES)
    except ImportConfigError as exc:
        if "runs no " not in str(exc):
            raise
        return mapping.read(path)
    data[MARK] = "fully_async_main"
    return data


def runs(src: Source) -> bool:
    return bool(src.flat.get(MARK))


def _flag(src: Source, key: str) -> bool:
    value = src.get(key)
    if not isinstance(value, bool):
        raise ImportConfigError(f"{src.name(key)}: {value!r} must be true or false; fix it in the file or with --set")
    return value


def to_scenario(src: Source) -> tuple[dict[str, Any], list[str]]:
    """The scenario sections of a fully-async verl config: verl's trainer mapping on a step of require_batches
    mini-batches, then the two pools, the schedule and the log-prob source."""
    src.used.add(MARK)
    mini = as_int(src, mapping.A + "ppo_mini_batch_size")
    require = as_int(src, AT + "require_batches")
    prompts = mini * require
    notes = [
        f"fully_async_main: a step is one trainer update of {AT}require_batches {require} x ppo_mini_batch_size "
        f"{mini} = {prompts} prompts (verl@v0.7.0 recipe/fully_async_policy/fully_async_trainer.py:110)"
    ]
    if src.given("data.train_batch_size") and src.get("data.train_batch_size") != prompts:
        notes.append(f"data.train_batch_size {src.get('data.train_batch_size')}: not read by fully_async_main")
    inner = dataclasses.replace(src, flat={**src.flat, "data.train_batch_size": prompts})  # shares `used`
    sections, base_notes = mapping.to_scenario(inner)
    notes += base_notes
    hw = sections["hardware"]
    train_gpus = hw["num_gpus"]
    rollout_gpus = as_int(src, "rollout.nnodes") * as_int(src, "rollout.n_gpus_per_node")
    hw.update(
        num_gpus=train_gpus + rollout_gpus, placement="separate", rollout_gpus=rollout_gpus, train_gpus=train_gpus
    )
    threshold = as_float(src, AT + "staleness_threshold")
    if threshold < 0:
        raise ImportConfigError(f"{src.name(AT + 'staleness_threshold')}: {threshold:g} must be 0 or more")
    sections["schedule"] = {
        "mode": "fully-async",
        "sync_every": as_int(src, AT + "trigger_parameter_sync_step"),
        "staleness_threshold": threshold,
        "partial_rollout": _flag(src, AT + "partial_rollout"),
    }
    prox = _flag(src, AT + "compute_prox_log_prob")
    sections["algorithm"]["recompute_old_logprob"] = prox or not _flag(src, AT + "use_rollout_log_probs")
    if prox:
        notes.append(
            f"{AT}compute_prox_log_prob: the old log-prob pass is priced; the actor's copies to and from host "
            "memory around it (ray_trainer.py:381-387) are not"
        )
    # the checkpoint engine (on by default, lines 31-36) or the per-tensor broadcast (rlsim.trainer.sync_gathered)
    if _flag(src, AT + "checkpoint_engine.enable"):
        buffer = as_int(src, AT + "checkpoint_engine.device_buffer_size_M") * 2**20
        sections["weight_sync"] = {"transfer": "bucketed", "host_staged": True, "bucket_bytes": float(buffer)}
    else:
        sections["weight_sync"] = {"transfer": "per_tensor"}
    group = sections["workload"]["group_size"]
    cap = PROMPTS_PER_SERVER * group
    if sections["engine"]["max_num_seqs"] > cap:
        sections["engine"]["max_num_seqs"] = cap
        notes.append(
            f"engine.max_num_seqs {cap}: the rollouter keeps {PROMPTS_PER_SERVER} prompts of {group} responses in "
            "flight per server (fully_async_rollouter.py:187)"
        )
    return sections, notes
