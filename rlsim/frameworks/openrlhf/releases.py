"""OpenRLHF releases v0.8.11 .. v0.11.0 for the importer: ``openrlhf_version`` (not an OpenRLHF argument;
``--set openrlhf_version=0.9.5``) names the release the arguments run on. The release's pinned vLLM comes from
rlsim/catalog/software.yaml (the scenario gets ``software: {framework: openrlhf, framework_version}``, which selects
the engine's behaviour: vLLM 0.10.2's piecewise graphs at v0.8.11, 0.11.0's full decode graphs at v0.9.0, 0.17.0's
async scheduling on a one-GPU engine from v0.9.5); this module holds what the release's own defaults change in the
imported scenario, each a field rlsim prices. Without ``openrlhf_version`` the mapping reads v0.11.0 (dotted
names) or v0.9.5 (flat names, rlsim.frameworks.openrlhf.args.LEGACY_DEFAULTS) and names no release.

Read at the tags of OpenRLHF/OpenRLHF (cited as tag:path:line):

* The engine class, and with it vLLM's batch limits (OpenRLHF passes neither max_num_seqs nor
  max_num_batched_tokens): v0.8.11 and v0.9.0 run ``vllm.LLM`` in sync mode (openrlhf/trainer/ray/vllm_engine.py:71)
  and ``AsyncLLMEngine.from_engine_args`` under ``--async_train`` (train_ppo_ray.py:56, vllm_engine_async.py:28-29);
  from v0.9.5 always ``AsyncLLMEngine`` (v0.9.5:vllm_engine.py:62-63, v0.11.0:vllm_engine.py:63-64). ``vllm.LLM``
  takes the LLM-class limits (1024 sequences, 16384 tokens on a GPU of >= 70 GiB: software.batch_defaults);
  AsyncLLM's usage context ENGINE_CONTEXT is not in vLLM's table, so SchedulerConfig's 128 sequences and 2048
  tokens apply (vllm 0.10.2 vllm/config/scheduler.py:185-190 and vllm/utils/__init__.py:87, 0.11.0
  scheduler.py:168-173 and utils/__init__.py:88, 0.17.0
  vllm/config/scheduler.py:42-43 with vllm/engine/arg_utils.py:2118-2124; v1/engine/async_llm.py:59 / :79 the
  default usage context): engine.max_num_seqs and engine.max_num_batched_tokens.
* ``train.micro_batch_size`` (flat ``micro_train_batch_size``) defaults 4 and ``rollout.micro_batch_size``
  (``micro_rollout_batch_size``) 8 up to v0.9.x (v0.8.11:openrlhf/cli/train_ppo_ray.py:338 and :323,
  v0.9.0:train_ppo_ray.py:338 and :323, v0.9.5:train_ppo_ray.py:352 and :337, v0.9.10:train_ppo_ray.py:387 and
  :368), 1 and 1 from v0.10.0, still in the flat spelling there (v0.10.0:train_ppo_ray.py:388 and :369;
  v0.10.2 and v0.11.0, dotted: train_ppo_ray.py:393 and :377): training.micro_batch_size and
  training.logprob_micro_batch_size (without dynamic batching).

Unchanged at these tags, so not release facts: ``vllm_sync_backend`` nccl (v0.8.11:train_ppo_ray.py:233,
v0.11.0:train_ppo_ray.py:240), ``enforce_eager`` false (v0.8.11:train_ppo_ray.py:236, v0.11.0:train_ppo_ray.py:243),
``packing_samples`` false (v0.8.11:train_ppo_ray.py:302, v0.11.0:train_ppo_ray.py:356), ``n_samples_per_prompt`` 1
(v0.8.11:train_ppo_ray.py:352, v0.11.0:train_ppo_ray.py:414), ``vllm_enable_sleep`` off and, on, level 1
(``sleep(level=1)``: v0.8.11:openrlhf/trainer/ray/vllm_engine.py:88-89,193-194; v0.11.0:vllm_engine.py:138-139,
310-311), colocation and async off. What moves step time between the releases without a field rlsim prices is
listed with file:line in calibrate/published/data/openrlhf_releases.md.
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.adapter import Row, Source
from rlsim.frameworks.common import DEFAULT_GPU, known_release, release_table
from rlsim.scenario import software

KEY = "openrlhf_version"

ROWS: tuple[Row, ...] = (
    Row(KEY, None, "software.framework_version", "not an OpenRLHF argument: --set it; unset: no release"),
)

ASYNC_LLM_ONLY_FROM = (0, 9, 5)  # AsyncLLMEngine in sync mode too
# vLLM's SchedulerConfig defaults, which AsyncLLM (usage context ENGINE_CONTEXT) keeps (see the docstring)
ASYNC_ENGINE_MAX_NUM_SEQS, ASYNC_ENGINE_MAX_NUM_BATCHED_TOKENS = 128, 2048
_FOUR_EIGHT = {"train.micro_batch_size": 4, "rollout.micro_batch_size": 8}  # v0.9.x and earlier
_ONE_ONE = {"train.micro_batch_size": 1, "rollout.micro_batch_size": 1}  # v0.10.0 and later
DEFAULTS: dict[str, dict[str, Any]] = {
    "0.8.11": _FOUR_EIGHT,
    "0.9.0": _FOUR_EIGHT,
    "0.9.5": _FOUR_EIGHT,
    "0.10.0": _ONE_ONE,
    "0.10.2": _ONE_ONE,
    "0.11.0": _ONE_ONE,
}


def release(version: Any) -> tuple[str, str | None]:
    """The known openrlhf release for ``version`` and the one-line warning when it is not known itself
    (rlsim.frameworks.common.known_release)."""
    return known_release("openrlhf", KEY, version, "0.9.5")


def table_for(table: tuple[Row, ...], flat: dict[str, Any]) -> tuple[Row, ...]:
    """``table`` with the defaults of the release ``openrlhf_version`` names (the same object without one)."""
    return release_table(table, flat, KEY, release, DEFAULTS)


def apply(src: Source, sections: dict[str, Any], notes: list[str]) -> None:
    """With ``openrlhf_version``: the release's software section (its pinned vLLM, with OpenRLHF's executor rule,
    selects the engine's behaviour in place of the mapping's vllm-v1) and the batch limits of its engine class."""
    if src.get(KEY) is None:
        return
    version = str(src.get(KEY))
    known, warning = release(version)
    notes += [warning] if warning else []
    sections["engine"].pop("behaviour", None)  # the release's pinned vLLM names it (rlsim/catalog/software.yaml)
    sections["software"] = {"framework": "openrlhf", "framework_version": version, "engine": "vllm"}
    pinned = software.pinned_engine_version("openrlhf", known)
    notes.append(f"OpenRLHF {known}: vLLM {pinned} (setup.py), its behaviour from rlsim/catalog/software.yaml")
    engine = sections["engine"]
    at = software.parse_version(known, "software.framework_version")
    if at >= ASYNC_LLM_ONLY_FROM or src.get("train.async_enable"):
        engine.update(
            max_num_seqs=ASYNC_ENGINE_MAX_NUM_SEQS, max_num_batched_tokens=ASYNC_ENGINE_MAX_NUM_BATCHED_TOKENS
        )
        notes.append(
            f"OpenRLHF {known}: AsyncLLMEngine without a usage context, vLLM's scheduler defaults: "
            f"{ASYNC_ENGINE_MAX_NUM_SEQS} sequences, {ASYNC_ENGINE_MAX_NUM_BATCHED_TOKENS} tokens per iteration"
        )
        return
    engine.update(software.batch_defaults(pinned, "llm_class", DEFAULT_GPU))  # vllm.LLM
    notes.append(
        f"OpenRLHF {known}: vllm.LLM's limits of vLLM {pinned}, {engine['max_num_seqs']} sequences and "
        f"{engine['max_num_batched_tokens']} tokens on a GPU of >= 70 GiB (below: --scenario-set "
        "engine.max_num_seqs=256 engine.max_num_batched_tokens=8192)"
    )
