"""verl releases v0.4.0 .. v0.7.0 for the importer: ``verl_version`` (not a verl key; ``--set verl_version=0.5.0``)
names the release a config runs on. The release's pinned engines come from rlsim/catalog/software.yaml (the scenario
gets ``software: {framework: verl, framework_version}``, which selects the engine's behaviour); this module holds
what the release's own code and defaults change in the imported scenario, each a field rlsim prices. Without
``verl_version`` the mapping reads verl b178a3c (rlsim.frameworks.verl.mapping) and names no release.

Read at the tags of volcengine/verl (cited as tag:path:line):

* ``actor_rollout_ref.model.use_remove_padding`` defaults false up to v0.6.1 (v0.4.0:verl/trainer/config/
  ppo_trainer.yaml:35, v0.4.1:ppo_trainer.yaml:122, v0.5.0:ppo_trainer.yaml:68, v0.6.0 and v0.6.1:
  verl/trainer/config/model/hf_model.yaml:40) and true from v0.7.0 (v0.7.0:hf_model.yaml:40): false runs the fsdp
  actor on batches padded to the caps (training.pad_to_cap).
* ``rollout.max_num_seqs`` defaults 1024 at every tag (v0.4.0:ppo_trainer.yaml:119, v0.4.1:ppo_trainer.yaml:441,
  v0.5.0:rollout/rollout.yaml:50, v0.6.0 .. v0.7.0:rollout/rollout.yaml:68; b178a3c lowered it to 256), but up to
  v0.5.0 verl does not pass it to vLLM (v0.4.0:verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py:150-171,
  v0.5.0:vllm_rollout_spmd.py:165-187 build ``LLM(...)`` without it; the async server alike): the engine runs vLLM
  0.8.5's own limit (software.batch_defaults, ``llm_class``). From v0.6.0 it is passed (v0.6.0:
  vllm_rollout_spmd.py:203, v0.6.1:vllm_rollout_spmd.py:242, v0.7.0:vllm_async_server.py:300).
* ``rollout.mode`` defaults sync up to v0.6.1 (v0.4.0:ppo_trainer.yaml:100, v0.5.0:rollout.yaml:5,
  v0.6.0:rollout.yaml:8) and async at v0.7.0 (rollout.yaml:8; verl/workers/config/rollout.py:225-230 refuses sync).
  Sync runs ``vllm.LLM`` with the ``external_launcher`` executor in the trainer's process
  (v0.4.0:vllm_rollout_spmd.py:154, v0.6.1:vllm_rollout_spmd.py:235), for which vLLM turns its engine-core process
  off (vllm 0.8.5 vllm/config.py:1726-1729: engine.in_process), and asks for no detokenizing
  (``SamplingParams(detokenize=False)``: v0.4.0:vllm_rollout_spmd.py:185, v0.5.0:197, v0.6.0:223, v0.6.1:262:
  engine.detokenize false); async runs AsyncLLM, whose engine core is its own process.
* SGLang's weight update: one ``update_weights_from_tensor`` per tensor up to v0.4.1
  (v0.4.0:verl/workers/sharding_manager/fsdp_sglang.py:135-160), buckets of ``update_weights_bucket_megabytes``
  (512) from v0.5.0 (v0.5.0:fsdp_sglang.py:122-123, megatron_sglang.py:155-156; v0.7.0:
  verl/workers/rollout/sglang_rollout/sglang_rollout.py:174-187): weight_sync bucketed. vLLM loads per tensor at
  every tag (``model.load_weights(weights)``: v0.6.1:vllm_rollout_spmd.py:473-496, v0.7.0:vllm_rollout.py:234-268).

* ``rollout.enforce_eager`` defaults true up to v0.5.0 and false from v0.6.0 (see DEFAULTS): engine.enforce_eager,
  vLLM's decode without CUDA graphs (the eager variant of the pinned vLLM's behaviour, rlsim/catalog/engines.yaml).
* The hybrid engine sleeps at level 1 up to v0.5.0 and at level 2 from v0.6.0 (SLEEP_LEVEL_2_FROM):
  weight_sync.sleep_level.

What moves between these releases without a field rlsim prices is listed with file:line in
calibrate/published/data/verl_releases.md.
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.adapter import ImportConfigError, Row, Source
from rlsim.frameworks.common import DEFAULT_GPU, as_int, known_release, release_table
from rlsim.scenario import software

KEY = "verl_version"
M = "actor_rollout_ref.model."
R = "actor_rollout_ref.rollout."

ROWS: tuple[Row, ...] = (
    Row(KEY, None, "software.framework_version", "not a verl key: --set it; unset: b178a3c's defaults, no release"),
    Row(R + "mode", "async", "engine.in_process, detokenize", "with verl_version: sync -> vLLM LLM in process"),
    Row(R + "update_weights_bucket_megabytes", 512, "weight_sync.bucket_bytes", "with verl_version >= 0.5: SGLang"),
)

# the config defaults of each release that differ from b178a3c's (mapping.TABLE) and that rlsim prices
_SYNC_ERA = {M + "use_remove_padding": False, R + "max_num_seqs": 1024, R + "mode": "sync"}
# rollout.enforce_eager defaults true up to v0.5.0 (v0.4.0:ppo_trainer.yaml:112, v0.4.1:ppo_trainer.yaml:419,
# v0.5.0:rollout/rollout.yaml:35; passed to LLM, v0.4.0:vllm_rollout_spmd.py:156), false from v0.6.0 (rollout.yaml:38)
_EAGER_ERA = {**_SYNC_ERA, R + "enforce_eager": True}
DEFAULTS: dict[str, dict[str, Any]] = {
    "0.4.0": _EAGER_ERA,
    "0.4.1": _EAGER_ERA,
    "0.5.0": _EAGER_ERA,
    "0.6.0": _SYNC_ERA,
    "0.6.1": _SYNC_ERA,
    "0.7.0": {M + "use_remove_padding": True, R + "max_num_seqs": 1024, R + "mode": "async"},
}
PASSES_MAX_NUM_SEQS_FROM = (0, 6, 0)  # verl hands rollout.max_num_seqs to vLLM from v0.6.0
# the hybrid engine sleeps at level 1 up to v0.5.0 (v0.4.0:vllm_rollout_spmd.py:175, sharding_manager/
# fsdp_vllm.py:212; v0.5.0:fsdp_vllm.py:240), at VLLM_SLEEP_LEVEL 2 from v0.6.0 with vLLM >= 0.8.5
# (v0.6.0:verl/third_party/vllm/__init__.py:33-49, vllm_rollout_spmd.py:106-108)
SLEEP_LEVEL_2_FROM = (0, 6, 0)
SGLANG_BUCKETS_FROM = (0, 5, 0)  # SGLang's weight update in update_weights_bucket_megabytes buckets from v0.5.0


def release(version: Any) -> tuple[str, str | None]:
    """The known verl release for ``version`` and the one-line warning when it is not known itself
    (rlsim.frameworks.common.known_release)."""
    return known_release("verl", KEY, version, "0.6.1")


def table_for(table: tuple[Row, ...], flat: dict[str, Any]) -> tuple[Row, ...]:
    """``table`` with the defaults of the release ``verl_version`` names (unchanged without one)."""
    return release_table(table, flat, KEY, release, DEFAULTS)


def apply(src: Source, sections: dict[str, Any], notes: list[str]) -> None:
    """With ``verl_version``: the release's software section (its pinned engine selects the engine's behaviour)
    and what its code does to the engine and the weight sync (see the module docstring)."""
    if src.get(KEY) is None:
        return
    version = str(src.get(KEY))
    known, warning = release(version)
    notes += [warning] if warning else []
    at = software.parse_version(known, "software.framework_version")
    engine = sections["engine"]
    name = "sglang" if engine.get("behaviour") == "sglang-0.5" else "vllm"
    sections["software"] = {"framework": "verl", "framework_version": version, "engine": name}
    if name == "sglang":
        if at >= SGLANG_BUCKETS_FROM:
            mib = as_int(src, R + "update_weights_bucket_megabytes")
            sections["weight_sync"] = {"transfer": "bucketed", "bucket_bytes": float(mib << 20)}
            notes.append(f"verl {known}: SGLang's weights updated in {mib} MiB buckets (fsdp_sglang.py)")
        return
    del engine["behaviour"]  # the release's pinned vLLM names it (rlsim/catalog/software.yaml)
    mode = src.get(R + "mode")
    if mode not in ("sync", "async") or (mode == "sync" and at >= (0, 7, 0)):
        allowed = "async" if at >= (0, 7, 0) else "sync or async"
        raise ImportConfigError(f"{R}mode: {mode!r} is not a rollout mode of verl {known}; use {allowed}")
    if mode == "sync":  # vllm.LLM with the external_launcher executor, detokenize=False
        engine.update(in_process=True, detokenize=False)
    if at < SLEEP_LEVEL_2_FROM:  # sleep(level=1): the weights backed up to host memory and back
        sections["weight_sync"]["sleep_level"] = 1
    if at < PASSES_MAX_NUM_SEQS_FROM:
        pinned = software.pinned_engine_version("verl", known)
        engine["max_num_seqs"] = software.batch_defaults(pinned, "llm_class", DEFAULT_GPU)["max_num_seqs"]
        notes.append(
            f"{R}max_num_seqs: verl {known} does not pass it to vLLM; vLLM {pinned}'s own limit, "
            f"{engine['max_num_seqs']} on a GPU of >= 70 GiB (256 below: --scenario-set engine.max_num_seqs=256)"
        )
