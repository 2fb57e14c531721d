"""SkyRL (NovaSky-AI/SkyRL, skyrl-train) configs as rlsim scenarios: the mapping ``TABLE``, ``read`` and
``to_scenario``.

Read at NovaSky-AI/SkyRL@skyrl_train-v0.4.0 (332c7cbcc4f4fad20ca71d94c5bb33d84035da09), under ``skyrl-train/``:
``skyrl_train/config/ppo_base_config.yaml`` (the defaults, generated into ``defaults.yaml`` with their lines),
``skyrl_train/utils/utils.py`` (the batch and placement rules), ``docs/tutorials/fully_async.rst`` and
``examples/async/README.md`` (the two asynchronous trainers).

SkyRL is launched as ``uv run --isolated --extra vllm -m skyrl_train.entrypoints.main_base key=value ...``: Hydra
overrides over the base config, read as verl's are (rlsim.frameworks.launch; nothing is run). A YAML of the same
keys is read as the overrides.

Facts:

* ``trainer.train_batch_size`` counts prompts (P), each with ``generator.n_samples_per_prompt`` responses (G);
  ``trainer.policy_mini_batch_size`` also counts prompts, so a step is train_batch_size / policy_mini_batch_size
  optimizer steps (utils.py validate_batch_sizes: "Each prompt in train_batch_size creates n_samples_per_prompt
  total samples"; the divisibility is asserted), each repeated ``update_epochs_per_batch`` times.
* GPUs: the policy trains on ``placement.policy_num_nodes x policy_num_gpus_per_node``; the engines take
  ``num_inference_engines x`` their TP x PP x DP GPUs. ``colocate_all`` (true by default) puts them on the same
  GPUs, and SkyRL asserts the two counts are equal (utils.py:345-356); otherwise the pools are apart, the
  reference model on a pool of its own unless ``colocate_policy_ref``, the critic (gae) on its own.
* ``skyrl_train.entrypoints.main_base`` alternates generation and training; ``examples.async.main_async`` is
  one-step off-policy (README: rlsim async, staleness 1); ``examples.fully_async.main_fully_async`` trains a step
  whenever ``policy_mini_batch_size`` groups are ready, pauses the engines, updates their weights in flight and
  resumes the responses (fully_async.rst:68, :104, :127), at most ``fully_async.max_staleness_steps`` steps
  behind (:196 of the base config): rlsim fully-async, a sync every step, that staleness, partial rollouts.
* ``generator.backend`` vllm or sglang, ``gpu_memory_utilization``, ``max_num_seqs``; responses capped at
  ``generator.sampling_params.max_generate_length``, prompts at ``trainer.max_prompt_length``.

Not modelled, refused naming the key: remote engines (``generator.run_engines_locally: false``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import ImportConfigError, Source, read_config
from rlsim.frameworks.basic import ENTRY_KEY, Facts, Recognisers, hydra_launch, load_defaults, rows, sections
from rlsim.frameworks.common import as_float, as_int, divisible, resolve_model
from rlsim.workload import keep_prior

VERSION_READ = "SkyRL skyrl_train-v0.4.0 (332c7cb)"
ENTRY = "skyrl_train.entrypoints.main_base"
ASYNC_ENTRY = "examples.async.main_async"
FULLY_ASYNC_ENTRY = "examples.fully_async.main_fully_async"
# Example modules whose main builds BasePPOExp (or a subclass changing only its trainer's reward post-processing or
# its generator) over the same ppo_base_config and runs its synchronous loop, as main_base does (skyrl-train/
# examples/algorithms/dapo/main_dapo.py:72-84, mini_swe_agent/main_mini_swe.py:10-29, and the others named here at
# the tag): read as main_base, their own work noted.
BASE_LIKE = {
    "examples.algorithms.dapo.main_dapo": "DAPO's soft overlong penalty on the rewards (a CPU step, not priced)",
    "examples.tis_correction.main_tis_dapo": "DAPO's overlong penalty with TIS correction (not priced)",
    "examples.flash_rl.main_dapo_flashrl": "DAPO with FlashRL's quantized rollout (priced unquantized)",
    "examples.algorithms.custom_advantage_estimator.main_custom_adv_est": "a custom advantage (on the driver)",
    "examples.algorithms.custom_policy_loss.main_custom_policy_loss": "a custom policy loss (same passes)",
    "examples.llm_as_a_judge.main_llm_judge": "an LLM judge called over HTTP (its time not priced)",
    "examples.multiply.main_multiply": "its own environment (a rule reward)",
    "examples.mini_swe_agent.main_mini_swe": (
        "mini-swe-agent's generator: a multi-turn agent trajectory in a sandbox, priced as one response up to "
        "max_generate_length (sandbox steps and turn re-prefills not priced)"
    ),
    "examples.terminal_bench.entrypoints.main_tbench": (
        "Terminal-Bench's generator: multi-turn agent trajectories, priced as one response each (sandbox steps not "
        "priced)"
    ),
}
ENTRIES = (FULLY_ASYNC_ENTRY, ASYNC_ENTRY, ENTRY, *BASE_LIKE)
RECOGNISERS = Recognisers(
    "skyrl",
    entry_points=ENTRIES + ("skyrl_train.entrypoints",),
    keys=("generator.n_samples_per_prompt", "trainer.placement.colocate_all", "generator.num_inference_engines"),
    suffixes=(".sh", ".yaml"),
)
PL = "trainer.placement."
G_ = "generator."
DEFAULTS = load_defaults(__file__)
TABLE = rows(
    DEFAULTS,
    (
        ("trainer.train_batch_size", "workload.prompts_per_step", "P: prompts per step (fully async: the mini-batch)"),
        (G_ + "n_samples_per_prompt", "workload.group_size", "G: responses per prompt"),
        ("trainer.policy_mini_batch_size", "algorithm.mini_batches_per_step", "prompts: train_batch_size / it"),
        ("trainer.update_epochs_per_batch", "algorithm.epochs_per_step", "passes over the step's batch"),
        (PL + "colocate_all", "hardware.placement", "true: one pool, sync; false: pools apart"),
        (PL + "colocate_policy_ref", "algorithm.reference_gpus", "false, pools apart, KL: the ref's own pool"),
        (PL + "policy_num_nodes", "hardware.train_gpus", "train GPUs = nodes x GPUs per node"),
        (PL + "policy_num_gpus_per_node", "hardware.train_gpus", "train GPUs per node"),
        (PL + "critic_num_nodes", "algorithm.critic_gpus", "gae, pools apart: the critic's own pool"),
        (PL + "critic_num_gpus_per_node", "algorithm.critic_gpus", "gae, pools apart"),
        (PL + "ref_num_nodes", "algorithm.reference_gpus", "its own pool (see colocate_policy_ref)"),
        (PL + "ref_num_gpus_per_node", "algorithm.reference_gpus", "its own pool"),
        (G_ + "num_inference_engines", "hardware.rollout_gpus", "rollout GPUs = engines x TP x PP x DP"),
        (G_ + "inference_engine_tensor_parallel_size", "engine.tensor_parallel_size", "per engine"),
        (G_ + "inference_engine_pipeline_parallel_size", "hardware.rollout_gpus", "> 1 refused (no engine PP)"),
        (G_ + "inference_engine_data_parallel_size", "hardware.rollout_gpus", "engines x DP replicas"),
        (G_ + "backend", "engine.behaviour", "vllm -> vllm-v1; sglang -> sglang-0.5"),
        (G_ + "gpu_memory_utilization", "engine.gpu_memory_utilization", "of each GPU"),
        (G_ + "max_num_seqs", "engine.max_num_seqs", "running sequences per engine"),
        ("trainer.max_prompt_length", "workload.max_prompt_tokens", "and the assumed prompt length"),
        (G_ + "sampling_params.max_generate_length", "workload.max_response_tokens", "the response cap"),
        ("trainer.policy.model.path", "model", "a catalog name, alias or hf_id"),
        ("trainer.policy.optimizer_config.lr", "learning.lr0", "learning.reference_batch = P x G"),
        ("trainer.algorithm.advantage_estimator", "algorithm.name", "gae -> ppo (critic); others -> grpo"),
        ("trainer.algorithm.use_kl_loss", "algorithm.kl_reference", "either KL option: reference pass"),
        ("trainer.algorithm.use_kl_in_reward", "algorithm.kl_reference", "either KL option: reference pass"),
        ("trainer.algorithm.dynamic_sampling.type", "algorithm.dynamic_sampling", "filter: rounds; replace refused"),
        ("trainer.algorithm.dynamic_sampling.max_sample_batches", "algorithm.dynamic_sampling.max_gen_batches", ""),
        ("trainer.fully_async.max_staleness_steps", "schedule.staleness_threshold", "fully async: steps behind"),
        (G_ + "run_engines_locally", "(check)", "false (remote engines) refused"),
    ),
)


def read(path: Path) -> dict[str, Any]:
    """A SkyRL YAML of overrides, or a launch script running one of :data:`ENTRIES` with ``key=value`` words."""
    if not path.is_file():
        raise ImportConfigError(f"{path}: is not a file; give the SkyRL launch script (uv run ... -m {ENTRY} ...)")
    if path.suffix in (".yaml", ".yml", ".json"):
        return read_config(path, "skyrl")
    return hydra_launch(path, ENTRIES, "SkyRL")


def _own_pools(src: Source, colocate: bool, estimator: Any, kl: bool) -> dict[str, Any]:
    """The reference's and critic's pools of their own (algorithm fields), when the pools are apart."""
    out: dict[str, Any] = {}
    if colocate:  # every model on the one pool: the ref's and critic's sizes are the policy's (utils.py:345-370)
        for key in ("critic_num_nodes", "critic_num_gpus_per_node", "ref_num_nodes", "ref_num_gpus_per_node"):
            src.given(PL + key)
        return out
    if kl and not src.get(PL + "colocate_policy_ref"):
        out["reference_gpus"] = as_int(src, PL + "ref_num_nodes") * as_int(src, PL + "ref_num_gpus_per_node")
    if estimator == "gae":
        out["critic_gpus"] = as_int(src, PL + "critic_num_nodes") * as_int(src, PL + "critic_num_gpus_per_node")
    return out


def _dynamic_sampling(src: Source, entry: str, notes: list[str]) -> dict[str, Any]:
    """``trainer.algorithm.dynamic_sampling.type`` filter: batches of train_batch_size prompts are generated and
    their zero-std groups dropped until train_batch_size groups are kept, at most ``max_sample_batches`` (-1: no
    limit) batches (skyrl_train/trainer.py:230-231, :1117-1175): rlsim's rounds with multiplier 1, the keep rate
    the framework cannot say (rlsim.workload.keep_prior's, marked assumed). replace (good groups copied over bad
    ones) is refused."""
    kind = src.get("trainer.algorithm.dynamic_sampling.type")
    if kind in (None, "null", "none"):
        return {}
    key = "trainer.algorithm.dynamic_sampling.type"
    if kind != "filter" or entry == FULLY_ASYNC_ENTRY:
        raise ImportConfigError(
            f"{key}: {kind!r}{' with ' + entry if kind == 'filter' else ''} is not modelled (rlsim prices the filter "
            "strategy of the synchronous trainers); set it null or filter"
        )
    most = as_int(src, "trainer.algorithm.dynamic_sampling.max_sample_batches")
    notes.append(keep_prior.note(key))
    return keep_prior.assumed(
        {"mode": "rounds", "batch_multiplier": 1, "max_gen_batches": most if most > 0 else 10_000}
    )


def to_scenario(src: Source) -> tuple[dict[str, Any], list[str]]:
    """The scenario sections of a SkyRL config, and the assumptions made."""
    src.used.add(ENTRY_KEY)
    entry = src.flat.get(ENTRY_KEY, ENTRY)
    notes: list[str] = []
    if src.get(G_ + "run_engines_locally") is False:
        raise ImportConfigError(f"{G_}run_engines_locally: false (remote engines) is not modelled; set it true")
    prompts, group = as_int(src, "trainer.train_batch_size"), as_int(src, G_ + "n_samples_per_prompt")
    mini = as_int(src, "trainer.policy_mini_batch_size")
    if entry == FULLY_ASYNC_ENTRY:
        if prompts != mini:
            notes.append(f"trainer.train_batch_size {prompts}: fully async trains each mini-batch of {mini} prompts")
        prompts = mini
    steps = divisible("trainer.train_batch_size", prompts, "trainer.policy_mini_batch_size", mini)
    if as_int(src, G_ + "inference_engine_pipeline_parallel_size") > 1:
        raise ImportConfigError(f"{G_}inference_engine_pipeline_parallel_size: engine PP is not modelled; set 1")
    tp = as_int(src, G_ + "inference_engine_tensor_parallel_size")
    rollout = as_int(src, G_ + "num_inference_engines") * tp * as_int(src, G_ + "inference_engine_data_parallel_size")
    per_node = as_int(src, PL + "policy_num_gpus_per_node")
    train = as_int(src, PL + "policy_num_nodes") * per_node
    colocate = bool(src.get(PL + "colocate_all"))
    if colocate and rollout != train:  # utils.py:345-356 asserts it
        raise ImportConfigError(
            f"{PL}policy_num_nodes x policy_num_gpus_per_node ({train}) must equal {G_}num_inference_engines x "
            f"TP x DP ({rollout}) with {PL}colocate_all (SkyRL asserts it); change one of them"
        )
    estimator = src.get("trainer.algorithm.advantage_estimator")
    kl = bool(src.get("trainer.algorithm.use_kl_loss")) or bool(src.get("trainer.algorithm.use_kl_in_reward"))
    algorithm_extra = _own_pools(src, colocate, estimator, kl)
    backend = src.get(G_ + "backend")
    if backend not in ("vllm", "sglang"):
        raise ImportConfigError(f"{G_}backend: {backend!r} is not mapped (vllm or sglang)")
    model, model_notes = resolve_model(src.get("trainer.policy.model.path"), "trainer.policy.model.path")
    notes += model_notes
    mode, staleness = "sync", 0
    if entry in BASE_LIKE:
        notes.append(f"{entry}: SkyRL's synchronous trainer (BasePPOExp, ppo_base_config) with {BASE_LIKE[entry]}")
    sampling = _dynamic_sampling(src, entry, notes)
    if sampling:
        algorithm_extra["dynamic_sampling"] = sampling
    if entry == ASYNC_ENTRY:
        mode, staleness = "async", 1
        notes.append(f"{ASYNC_ENTRY}: one-step off-policy (examples/async/README.md): rlsim async, staleness 1")
    elif entry == FULLY_ASYNC_ENTRY:
        mode, staleness = "fully-async", as_int(src, "trainer.fully_async.max_staleness_steps")
    if mode != "sync" and colocate:
        raise ImportConfigError(f"{PL}colocate_all: {entry} runs the engines apart; set it false")
    facts = Facts(
        model=model,
        prompts=prompts,
        group=group,
        max_prompt=as_int(src, "trainer.max_prompt_length"),
        max_response=as_int(src, G_ + "sampling_params.max_generate_length"),
        rollout_gpus=rollout,
        train_gpus=train,
        colocated=colocate,
        tp=tp,
        engine=backend,
        gpu_memory_utilization=as_float(src, G_ + "gpu_memory_utilization"),
        max_num_seqs=as_int(src, G_ + "max_num_seqs"),
        mode=mode,
        staleness=staleness,
        partial_rollout=True,
        lr=as_float(src, "trainer.policy.optimizer_config.lr"),
        algorithm="ppo" if estimator == "gae" else "grpo",
        kl_reference=kl,
        mini_batches=steps,
        epochs=as_int(src, "trainer.update_epochs_per_batch"),
        gpus_per_node=per_node,
        engine_note="SkyRL's sglang extra",
        extra={"algorithm": algorithm_extra} if algorithm_extra else {},
    )
    if estimator not in ("gae", "grpo"):
        notes.append(f"trainer.algorithm.advantage_estimator {estimator}: critic-free, priced as grpo (same passes)")
    out, more = sections(facts, "SkyRL")
    return out, notes + more
