"""OpenRLHF (OpenRLHF/OpenRLHF) ``train_ppo_ray`` arguments as an rlsim scenario: the mapping TABLE and
``to_scenario``.

Read at OpenRLHF/OpenRLHF commit 3c3be6234e0cb353e76bb8019947db9dfe99fca7 (v0.11.0, 2026-08-13):
``openrlhf/cli/train_ppo_ray.py`` (the argparse flags, their defaults, the checks after parsing and the placement of
the models in ``train``), ``openrlhf/utils/deepspeed/deepspeed.py`` (gradient accumulation),
``openrlhf/trainer/ray/ppo_actor.py`` (``ppo_train``: the replay buffer in micro-batches, an optimizer step every
``accumulated_gradient`` of them, ``max_epochs`` passes) and ``openrlhf/trainer/ppo_trainer_async.py`` (the rollout
queue). Since v0.10.2 the flags are dotted (``--rollout.batch_size``); the TABLE uses these names. The flat names of
earlier releases (``--rollout_batch_size``, ``--pretrain``, ...) are read as their dotted successors (``LEGACY``,
read at v0.9.5, commit c0e2ee2473cd115863630599cc3d51917d4b7c3e), with that release's defaults where they differ
(``LEGACY_DEFAULTS``); a file that gives one key in both spellings is refused.

The file (``read``) is what a user has: the launch command (``python3 -m openrlhf.cli.train_ppo_ray --flag value
...``, as in the example scripts, backslash continuations and ``#`` comments allowed; everything before the module
name, such as ``ray job submit ... --``, is skipped), or one ``--flag value`` per line; a flag without a value is a
``store_true`` flag set. A ``.yaml`` / ``.yml`` / ``.json`` file instead holds the argparse dest names as keys
(nested or dotted: ``rollout: {batch_size: 1024}`` or ``rollout.batch_size: 1024``).

Batch semantics (facts from that commit):

* ``rollout.batch_size`` prompts per rollout (P), each sampled ``rollout.n_samples_per_prompt`` times (G): a step
  makes B = P x G samples.
* ``train.batch_size`` counts samples per optimizer step: DeepSpeed accumulates train.batch_size /
  (train.micro_batch_size x data-parallel actor GPUs) micro-batches (DeepSpeed checks that this is whole), so a step
  is B / train.batch_size optimizer steps, repeated ``train.max_epochs`` times. Data-parallel actor GPUs are
  actor.num_nodes x actor.num_gpus_per_node / (ds.ring_attn_size x ds.tensor_parallel_size).
* ``train.colocate_all`` (synchronous) puts the vLLM engines, actor, reference and critic on the actor's GPUs
  (it asserts actor GPUs == vllm.num_engines x vllm.tensor_parallel_size); otherwise the engines have GPUs of their
  own and the reference, critic and reward models theirs (rlsim: separate pools, the reward model on its own GPUs
  (rlsim's ``reward`` section), the critic on its own (``algorithm.critic_gpus``) or on the reward model's
  (``train.colocate_critic_reward``: ``algorithm.critic_with_reward``), the reference on its own
  (``algorithm.reference_gpus``) unless
  ``train.colocate_actor_ref``). In async mode
  (``train.async_enable``) colocate_all colocates only the DeepSpeed models; the
  generator runs at most ``train.async_queue_size`` rollouts ahead of the trainer (rlsim max_staleness) and one
  rollout is finished before the next starts (schedule.streaming false); ``train.partial_rollout_enable`` lets
  weight updates land while vLLM generates (schedule.in_flight_weight_updates).
* the reference model exists when ``algo.kl.init_coef`` > 0; ``algo.advantage.estimator`` gae trains a critic
  (rlsim ppo), the others (reinforce, rloo, reinforce_baseline, group_norm, dr_grpo) are critic-free (rlsim grpo).
  The actor always computes the old log-probs when it makes experience (rlsim recompute_old_logprob).
* ``data.max_len`` caps prompt + response; ``rollout.max_new_tokens`` (None: max_len - the prompt) caps the
  response. v0.9.5 and earlier had ``prompt_max_len`` and ``generate_max_len`` instead.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlsim.frameworks.config_import import (
    LAUNCH_NOTES,
    ImportConfigError,
    Row,
    Source,
    as_float,
    as_int,
    assumed_workload,
    divisible,
    read_config,
)
from rlsim.frameworks.config_import import resolve_model as _resolve_model
from rlsim.frameworks.launch import framework_command
from rlsim.frameworks.registry import Adapter
from rlsim.scenario.overrides import parse_scalar

if TYPE_CHECKING:
    from rlsim.frameworks.emit_keys import _Ctx

SWITCH_FLAGS = True  # booleans are store_true flags: emit writes --flag for true and a note to remove it for false
# the adapter (rlsim.frameworks.registry): this module's import mapping, emit_keys and docs table
ADAPTER = Adapter("openrlhf", __name__, overrides="flags", log_importer="calibrate.importers.openrlhf")

VERSION_READ = "OpenRLHF 3c3be62 (v0.11.0; flat names of v0.9.5 c0e2ee2)"
MODULE = "openrlhf.cli.train_ppo_ray"
ESTIMATORS = {
    "gae": "ppo",
    "reinforce": "grpo",
    "rloo": "grpo",
    "reinforce_baseline": "grpo",
    "group_norm": "grpo",
    "dr_grpo": "grpo",
}

TABLE: tuple[Row, ...] = (
    Row("rollout.batch_size", 1024, "workload.prompts_per_step", "P: prompts per rollout"),
    Row("rollout.n_samples_per_prompt", 1, "workload.group_size", "G: samples per prompt (B = P x G)"),
    Row("train.batch_size", 128, "algorithm.mini_batches_per_step", "samples per optimizer step: B / train.batch_size"),
    Row("train.max_epochs", 1, "algorithm.epochs_per_step", "passes over the rollout"),
    Row("train.micro_batch_size", 1, "training.micro_batch_size", "samples per GPU per micro-step (flat: 4)"),
    Row("rollout.micro_batch_size", 1, "training.logprob_micro_batch_size", "make-experience passes (flat: 8)"),
    Row("ds.packing_samples", False, "training.remove_padding", "alone: micro_batch_size samples each, unpadded"),
    Row("train.dynamic_batch_enable", False, "training.sequence_packing", "true: bins of train.max_tokens_per_gpu"),
    Row("train.max_tokens_per_gpu", 16192, "training.packing_tokens", "with dynamic batch"),
    Row("actor.num_nodes", 1, "hardware.train_gpus", "actor GPUs = nodes x GPUs per node"),
    Row("actor.num_gpus_per_node", 8, "hardware.gpus_per_node", "actor GPUs = nodes x GPUs per node"),
    Row("ref.num_nodes", 1, "algorithm.reference_gpus", "own pool unless colocated (then must equal the actor's)"),
    Row(
        "ref.num_gpus_per_node",
        8,
        "algorithm.reference_gpus",
        "own pool unless colocated (then must equal the actor's)",
    ),
    Row("critic.num_nodes", 1, "algorithm.critic_gpus", "gae, not colocated: the critic's own pool (x per node)"),
    Row("critic.num_gpus_per_node", 8, "algorithm.critic_gpus", "gae, not colocated: the critic's own pool"),
    Row("train.colocate_critic_reward", False, "algorithm.critic_with_reward", "true: the critic on the reward's GPUs"),
    Row("train.colocate_all", False, "hardware.placement", "true (sync): colocated; false: separate pools"),
    Row("train.colocate_actor_ref", False, "(check)", "the reference on the actor's GPUs"),
    Row("vllm.num_engines", None, "engine.replicas", "required (rlsim models vLLM generation)"),
    Row("vllm.tensor_parallel_size", 1, "engine.tensor_parallel_size", "vLLM TP per engine"),
    Row("vllm.gpu_memory_utilization", 0.95, "engine.gpu_memory_utilization", "vLLM's fraction of each GPU"),
    Row("vllm.enable_prefix_caching", False, "engine.prefix_caching", "as given (OpenRLHF passes it to vLLM)"),
    Row("train.async_enable", False, "schedule.mode", "true: async (vLLM on GPUs of its own)"),
    Row("train.async_queue_size", 1, "schedule.max_staleness", "rollouts ahead of the trainer (k)"),
    Row("train.partial_rollout_enable", False, "schedule.in_flight_weight_updates", "async only"),
    Row("rollout.vllm_generate_batch_size", None, "(check)", "> rollout.batch_size needs async (oversampling)"),
    Row("algo.advantage.estimator", "gae", "algorithm.name", "gae -> ppo (critic); the others -> grpo"),
    Row("algo.kl.init_coef", 0.01, "algorithm.kl_reference", "> 0: the reference model and its pass"),
    Row("algo.dynamic_filtering_enable", False, "algorithm.dynamic_sampling", "true: mode replace; keep rate given"),
    Row("algo.dynamic_filtering_range", (0.0, 1.0), "algorithm.dynamic_sampling", "mean rewards kept (a note)"),
    Row("data.max_len", 2048, "workload.max_prompt_tokens", "prompt + response cap"),
    Row("rollout.max_new_tokens", None, "workload.max_response_tokens", "None: max_len - prompt (half each assumed)"),
    Row("prompt_max_len", None, "workload.max_prompt_tokens", "v0.9.5 and earlier (flat, default 1024)"),
    Row("actor.adam.lr", 1e-6, "learning.lr0", "learning.reference_batch = B"),
    Row("actor.model_name_or_path", None, "model", "a catalog name, alias or hf_id (Instruct: the base architecture)"),
    Row("critic.model_name_or_path", None, "algorithm.critic_model", "gae; default: the policy's architecture"),
    Row("reward.model_name_or_path", None, "reward.model", "a forward pass over every sample (catalog name)"),
    Row("reward.num_nodes", 1, "reward.num_gpus", "GPUs of its own = nodes x GPUs per node (not colocate_all)"),
    Row("reward.num_gpus_per_node", 8, "reward.num_gpus", "GPUs of its own = nodes x GPUs per node"),
    Row("reward.remote_url", None, "(note)", "a remote reward: priced as the CPU reward"),
    Row("actor.gradient_checkpointing_enable", False, "training.activation_recompute", "true -> full, false -> none"),
    Row("ds.zero_stage", 2, "training.backend", "fsdp (full sharding; stages below 3 noted)"),
    Row("ds.adam_offload", False, "training.offload_optimizer", "DeepSpeed CPU Adam"),
    Row("ds.tensor_parallel_size", 1, "training.tensor_parallel_size", "> 1: a Megatron layout (AutoTP), noted"),
    Row("ds.ring_attn_size", 1, "training.context_parallel_size", "> 1: a Megatron layout (ring attention), noted"),
)

# flat names (v0.9.5, commit c0e2ee2) -> their dotted successors (v0.11.0)
LEGACY: dict[str, str] = {
    "rollout_batch_size": "rollout.batch_size",
    "n_samples_per_prompt": "rollout.n_samples_per_prompt",
    "train_batch_size": "train.batch_size",
    "max_epochs": "train.max_epochs",
    "micro_train_batch_size": "train.micro_batch_size",
    "micro_rollout_batch_size": "rollout.micro_batch_size",
    "packing_samples": "ds.packing_samples",
    "use_dynamic_batch": "train.dynamic_batch_enable",
    "train_max_tokens_per_gpu": "train.max_tokens_per_gpu",
    "actor_num_nodes": "actor.num_nodes",
    "actor_num_gpus_per_node": "actor.num_gpus_per_node",
    "ref_num_nodes": "ref.num_nodes",
    "ref_num_gpus_per_node": "ref.num_gpus_per_node",
    "critic_num_nodes": "critic.num_nodes",
    "critic_num_gpus_per_node": "critic.num_gpus_per_node",
    "colocate_all_models": "train.colocate_all",
    "colocate_actor_ref": "train.colocate_actor_ref",
    "colocate_critic_reward": "train.colocate_critic_reward",
    "vllm_num_engines": "vllm.num_engines",
    "vllm_tensor_parallel_size": "vllm.tensor_parallel_size",
    "vllm_gpu_memory_utilization": "vllm.gpu_memory_utilization",
    "enable_prefix_caching": "vllm.enable_prefix_caching",
    "async_train": "train.async_enable",
    "async_queue_size": "train.async_queue_size",
    "vllm_generate_batch_size": "rollout.vllm_generate_batch_size",
    "advantage_estimator": "algo.advantage.estimator",
    "init_kl_coef": "algo.kl.init_coef",
    "dynamic_filtering": "algo.dynamic_filtering_enable",
    "dynamic_filtering_reward_range": "algo.dynamic_filtering_range",
    "max_len": "data.max_len",
    "generate_max_len": "rollout.max_new_tokens",
    "max_new_tokens": "rollout.max_new_tokens",
    "actor_learning_rate": "actor.adam.lr",
    "pretrain": "actor.model_name_or_path",
    "critic_pretrain": "critic.model_name_or_path",
    "reward_pretrain": "reward.model_name_or_path",
    "reward_num_nodes": "reward.num_nodes",
    "reward_num_gpus_per_node": "reward.num_gpus_per_node",
    "remote_rm_url": "reward.remote_url",
    "gradient_checkpointing": "actor.gradient_checkpointing_enable",
    "zero_stage": "ds.zero_stage",
    "adam_offload": "ds.adam_offload",
    "ds_tensor_parallel_size": "ds.tensor_parallel_size",
    "ring_attn_size": "ds.ring_attn_size",
}
# the flat name a dotted key is written with (generate_max_len, v0.9.5's, for rollout.max_new_tokens)
FLAT_NAMES: dict[str, str] = {dotted: flat for flat, dotted in LEGACY.items() if flat != "max_new_tokens"}
# defaults of v0.9.5 that differ from v0.11.0's, for a file in the flat spelling
LEGACY_DEFAULTS: dict[str, Any] = {
    "train.micro_batch_size": 4,
    "rollout.micro_batch_size": 8,
    "prompt_max_len": 1024,
    "rollout.max_new_tokens": 1024,
}


def read(path: Path) -> dict[str, Any]:
    """The arguments in ``path``: YAML / JSON of dest names, else a command line or one ``--flag value`` per line."""
    if path.suffix in (".yaml", ".yml", ".json"):
        return read_config(path, "openrlhf")
    if not path.is_file():
        raise ImportConfigError(
            f"{path}: is not a file; give the train_ppo_ray command line, one --flag value per line, or YAML / JSON"
        )
    from rlsim.io.files import read_text

    return parse_arguments(read_text(path, "openrlhf arguments"), str(path))


def parse_arguments(text: str, where: str = "arguments") -> dict[str, Any]:
    """``--rollout.batch_size 1024 --train.colocate_all`` -> ``{"rollout.batch_size": 1024, "train.colocate_all":
    True}``: a flag takes the words up to the next ``--flag`` (none: true; several: a list); ``--flag=value`` too;
    a flag given twice keeps its last value (as argparse does)."""
    notes: list[str] = []
    if MODULE in text:  # a launch script: its variables, arrays, bash -c and ray job submit read as text
        words, notes = framework_command(text, where, (MODULE,))
    else:
        try:
            words = shlex.split(text.replace("\\\n", " "), comments=True)
        except ValueError as exc:
            raise ImportConfigError(f"{where}: cannot be split into shell words ({exc}); fix the quoting") from None
    out: dict[str, Any] = {}
    flag: str | None = None
    values: list[Any] = []

    def done() -> None:
        if flag is not None:  # a flag given twice: the last wins, as with argparse
            out[flag] = True if not values else values[0] if len(values) == 1 else list(values)

    for word in words:
        if word.startswith("--") and len(word) > 2:
            done()
            name, eq, value = word[2:].partition("=")
            flag, values = name, ([parse_scalar(value)] if eq else [])
        elif flag is None:
            raise ImportConfigError(
                f"{where}: {word!r} is not a --flag; give the {MODULE} command line (a launch script: its "
                "variables and arrays are expanded) or one --flag value per line"
            )
        else:
            values.append(parse_scalar(word))
    done()
    if not out:
        raise ImportConfigError(
            f"{where}: holds no --flag; give the {MODULE} arguments, e.g. --rollout.batch_size 1024"
        )
    if notes:
        out[LAUNCH_NOTES] = notes
    return out


def canonical(flat: dict[str, Any], where: str) -> tuple[dict[str, Any], dict[str, str]]:
    """Flat (v0.9.5) names renamed to the dotted TABLE names, and how each key is spelled (for a file in the flat
    spelling, every TABLE key's flat name, so that messages and defaults name the flags the user has); one key in
    both spellings is refused naming both."""
    out: dict[str, Any] = {}
    spelling: dict[str, str] = {}
    for key, value in flat.items():
        dotted = LEGACY.get(key, key)
        if dotted in out:
            first = spelling.get(dotted, dotted)
            raise ImportConfigError(f"{where}: {first} and {key} give the same OpenRLHF argument; keep one of them")
        out[dotted] = value
        if dotted != key:
            spelling[dotted] = key
    if spelling:
        for dotted, flat_name in FLAT_NAMES.items():
            spelling.setdefault(dotted, flat_name)
    return out, spelling


def _default(src: Source, key: str) -> Any:
    return src.get(key, LEGACY_DEFAULTS[key]) if src.legacy else src.get(key)


def _reward(src: Source, policy: str, colocated: bool, notes: list[str]) -> dict[str, Any] | None:
    """The ``reward`` section: a reward model (``reward.model_name_or_path``) scores every sample with a forward
    pass, on the actor's GPUs under colocate_all (sync), else on reward.num_nodes x reward.num_gpus_per_node GPUs
    of its own (shared with the critic under colocate_critic_reward). A remote reward (``reward.remote_url``) or
    none: the CPU reward of ``costs.reward_*``."""
    n = src.name
    key = "reward.model_name_or_path"
    if src.given("reward.remote_url") or not src.given(key):
        if src.given("reward.remote_url"):
            src.get("reward.remote_url")
            notes.append(f"{n('reward.remote_url')}: a remote reward, priced as the CPU reward (costs.reward_*)")
        return None
    try:
        model, model_notes = _resolve_model(src.get(key), n(key))
        notes += [c.replace("model:", "reward model:", 1) for c in model_notes]
    except ImportConfigError:
        model = policy
        notes.append(
            f"reward model {src.get(key)!r} is not in rlsim's catalog: the policy's architecture; --set {n(key)}=NAME "
            "for another"
        )
    out: dict[str, Any] = {"model": model}
    if colocated:
        notes.append(f"reward model on the actor's GPUs ({n('train.colocate_all')})")
    else:
        out["num_gpus"] = as_int(src, "reward.num_nodes") * as_int(src, "reward.num_gpus_per_node")
        notes.append(
            f"reward model on {out['num_gpus']} GPUs of its own (ZeRO-3 in OpenRLHF; rlsim: copies of "
            "reward.tensor_parallel_size 1)"
        )
    return out


def to_scenario(src: Source) -> tuple[dict[str, Any], list[str]]:
    """The scenario sections for OpenRLHF train_ppo_ray arguments, and the assumptions made."""
    notes: list[str] = []
    n = src.name
    prompts, group = as_int(src, "rollout.batch_size"), as_int(src, "rollout.n_samples_per_prompt")
    samples = prompts * group
    if src.get("vllm.num_engines") in (None, 0):
        raise ImportConfigError(
            f"{n('vllm.num_engines')}: not set (or 0); rlsim models vLLM generation: give it, e.g. "
            f"--set {n('vllm.num_engines')}=4"
        )
    engines, tp = as_int(src, "vllm.num_engines"), as_int(src, "vllm.tensor_parallel_size")
    actor_nodes, actor_per_node = as_int(src, "actor.num_nodes"), as_int(src, "actor.num_gpus_per_node")
    actor_gpus = actor_nodes * actor_per_node
    ring, ds_tp = as_int(src, "ds.ring_attn_size"), as_int(src, "ds.tensor_parallel_size")
    actor_key = f"{n('actor.num_nodes')} x {n('actor.num_gpus_per_node')}"
    dp = divisible(actor_key, actor_gpus, f"{n('ds.ring_attn_size')} x {n('ds.tensor_parallel_size')}", ring * ds_tp)
    train_batch = as_int(src, "train.batch_size")
    micro_key = "train.micro_batch_size"
    micro = as_int(src, micro_key) if src.given(micro_key) else int(_default(src, micro_key))
    # DeepSpeed: train_batch_size == micro x accumulation x data-parallel ranks
    divisible(n("train.batch_size"), train_batch, f"{n(micro_key)} x data-parallel actor GPUs ({dp})", micro * dp)
    mini = divisible(
        f"{n('rollout.batch_size')} x {n('rollout.n_samples_per_prompt')}", samples, n("train.batch_size"), train_batch
    )
    rmicro_key = "rollout.micro_batch_size"
    rollout_micro = as_int(src, rmicro_key) if src.given(rmicro_key) else int(_default(src, rmicro_key))
    if samples // rollout_micro < dp:  # train_ppo_ray.py asserts it
        raise ImportConfigError(
            f"{n('rollout.batch_size')} x {n('rollout.n_samples_per_prompt')} / {n(rmicro_key)} ({samples} / "
            f"{rollout_micro}) must be at least the data-parallel actor GPUs ({actor_key} / ring x TP = {dp}) "
            "(OpenRLHF asserts it); change one of them"
        )
    colocate, is_async = bool(src.get("train.colocate_all")), bool(src.get("train.async_enable"))
    gen_key = "rollout.vllm_generate_batch_size"
    if src.given(gen_key) and as_int(src, gen_key) > prompts:
        if not is_async:
            raise ImportConfigError(
                f"{n(gen_key)} ({as_int(src, gen_key)}) > {n('rollout.batch_size')} ({prompts}) needs "
                f"{n('train.async_enable')} (OpenRLHF asserts it); change one of them"
            )
        notes.append(f"{n(gen_key)} {as_int(src, gen_key)} > {prompts}: oversampling is not modelled (P = {prompts})")
    kl = as_float(src, "algo.kl.init_coef") > 0
    colocate_ref = bool(src.get("train.colocate_actor_ref"))
    if kl and (colocate or colocate_ref):
        for part in ("num_nodes", "num_gpus_per_node"):
            ref, act = as_int(src, f"ref.{part}"), as_int(src, f"actor.{part}")
            if ref != act:
                raise ImportConfigError(
                    f"{n(f'ref.{part}')} ({ref}) must equal {n(f'actor.{part}')} ({act}) when the reference is "
                    "colocated with the actor (OpenRLHF asserts it); change one of them"
                )
    estimator = src.get("algo.advantage.estimator")
    if estimator not in ESTIMATORS:
        raise ImportConfigError(
            f"{n('algo.advantage.estimator')}: {estimator!r} is not one of {', '.join(ESTIMATORS)}; fix it"
        )
    model, model_notes = _resolve_model(src.get("actor.model_name_or_path"), n("actor.model_name_or_path"))
    notes += model_notes
    algorithm: dict[str, Any] = {
        "name": ESTIMATORS[estimator],
        "mini_batches_per_step": mini,
        "epochs_per_step": as_int(src, "train.max_epochs"),
        "kl_reference": kl,
        "recompute_old_logprob": True,
    }
    if estimator == "gae":
        if src.given("critic.model_name_or_path"):
            algorithm["critic_model"], critic_notes = _resolve_model(
                src.get("critic.model_name_or_path"), n("critic.model_name_or_path")
            )
            notes += [c.replace("model:", "critic model:", 1) for c in critic_notes]
        else:
            notes.append(
                "critic: the policy's architecture (OpenRLHF starts the critic from the reward model; --set "
                f"{n('critic.model_name_or_path')}=NAME for another)"
            )

    reward = _reward(src, model, colocate and not is_async, notes)

    hardware: dict[str, Any] = {"gpus_per_node": actor_per_node}
    if colocate and not is_async:
        if actor_gpus != engines * tp:  # train_ppo_ray.py asserts it
            raise ImportConfigError(
                f"{actor_key} ({actor_gpus}) must equal {n('vllm.num_engines')} x {n('vllm.tensor_parallel_size')} "
                f"({engines * tp}) with {n('train.colocate_all')} (OpenRLHF asserts it); change one of them"
            )
        hardware.update(num_gpus=actor_gpus, placement="colocated")
        schedule: dict[str, Any] = {"mode": "sync-colocated"}
    else:
        hardware.update(
            num_gpus=engines * tp + actor_gpus, placement="separate", rollout_gpus=engines * tp, train_gpus=actor_gpus
        )
        if is_async:
            schedule = {
                "mode": "async",
                "max_staleness": as_int(src, "train.async_queue_size"),
                "streaming": False,
                "in_flight_weight_updates": bool(src.get("train.partial_rollout_enable")),
            }
            if colocate:
                notes.append(f"{n('train.colocate_all')} in async mode colocates only the DeepSpeed models (OpenRLHF)")
        else:
            schedule = {"mode": "sync-separate"}
        others = []
        if kl and not colocate_ref and not colocate:  # its own placement group, beside the actor (ppo_trainer.py)
            ref_gpus = as_int(src, "ref.num_nodes") * as_int(src, "ref.num_gpus_per_node")
            algorithm["reference_gpus"] = ref_gpus
            notes.append(
                f"reference model on {ref_gpus} GPUs of its own ({n('ref.num_nodes')} x {n('ref.num_gpus_per_node')}): "
                "its log-prob pass beside the actor's"
            )
        elif kl and not colocate_ref:
            others.append(f"reference {as_int(src, 'ref.num_nodes') * as_int(src, 'ref.num_gpus_per_node')}")
        critic_gpus = as_int(src, "critic.num_nodes") * as_int(src, "critic.num_gpus_per_node")
        with_reward = bool(src.get("train.colocate_critic_reward")) and reward is not None and "num_gpus" in reward
        if estimator == "gae" and with_reward:  # one placement group for both (OpenRLHF asserts equal sizes)
            algorithm["critic_with_reward"] = True
            notes.append(
                f"critic on the reward model's {reward['num_gpus']} GPUs ({n('train.colocate_critic_reward')}): its "
                "values pass after the reward model's forward there, its training beside the actor's"
            )
        elif estimator == "gae" and (colocate or src.get("train.colocate_critic_reward")):
            others.append(f"critic {critic_gpus}")
        elif estimator == "gae":  # its own placement group, its passes beside the actor's (ppo_trainer.py)
            algorithm["critic_gpus"] = critic_gpus
            notes.append(
                f"critic on {critic_gpus} GPUs of its own ({n('critic.num_nodes')} x {n('critic.num_gpus_per_node')}): "
                "its values pass beside the actor's log-probs, its training beside the actor's"
            )
        if others:
            notes.append(
                f"GPUs of their own for the {' and '.join(others)}: not counted; rlsim runs their passes on the "
                "training GPUs"
            )

    training: dict[str, Any] = {"backend": "fsdp"}
    if ring > 1 or ds_tp > 1:
        training = {"backend": "megatron", "tensor_parallel_size": ds_tp, "context_parallel_size": ring}
        notes.append(
            f"DeepSpeed AutoTP {ds_tp} x ring attention {ring} simulated as a Megatron layout of those sizes "
            "(rlsim's fsdp is data-parallel only)"
        )
    zero = src.get("ds.zero_stage")
    if zero not in (0, 1, 2, 3) or isinstance(zero, bool):
        raise ImportConfigError(
            f"{n('ds.zero_stage')}: {zero!r} must be 0, 1, 2 or 3; fix it in the file or with --set"
        )
    if zero < 3:
        notes.append(f"{n('ds.zero_stage')} {zero}: simulated as full sharding (ZeRO-3 / FSDP)")
    if src.get("train.dynamic_batch_enable"):
        training.update(
            sequence_packing=True, micro_batch_size=1, packing_tokens=as_int(src, "train.max_tokens_per_gpu")
        )
        src.get("ds.packing_samples")  # OpenRLHF turns packing on with dynamic batching
    else:
        training.update(sequence_packing=False, micro_batch_size=micro)
        if src.get("ds.packing_samples"):
            training["remove_padding"] = True
            notes.append(
                f"{n('ds.packing_samples')} without dynamic batch: {micro} samples per micro-batch, packed without "
                "padding (training.remove_padding)"
            )
    training["logprob_micro_batch_size"] = rollout_micro
    training["activation_recompute"] = "full" if src.get("actor.gradient_checkpointing_enable") else "none"
    training["offload_optimizer"] = bool(src.get("ds.adam_offload"))

    max_prompt, max_response, length_notes = _lengths(src)
    notes += length_notes
    workload, assumed = assumed_workload(prompts, group, max_prompt, max_response)
    notes += assumed
    sections = {
        "model": model,
        "hardware": hardware,
        "engine": {
            "tensor_parallel_size": tp,
            "replicas": engines,
            "gpu_memory_utilization": as_float(src, "vllm.gpu_memory_utilization"),
            "prefix_caching": bool(src.get("vllm.enable_prefix_caching")),
            "behaviour": "vllm-v1",
        },
        "workload": workload,
        "algorithm": algorithm,
        "training": training,
        "schedule": schedule,
        "learning": {"lr0": as_float(src, "actor.adam.lr"), "reference_batch": samples},
    }
    if reward is not None:
        sections["reward"] = reward
    if src.get("algo.dynamic_filtering_enable"):
        # samples_generator.py _generate_vllm (3c3be62): a group whose mean reward falls outside the range is
        # dropped and one new prompt dispatched at once, until rollout.batch_size groups pass
        low, high = src.get("algo.dynamic_filtering_range") or (0.0, 1.0)
        algorithm["dynamic_sampling"] = {"mode": "replace"}
        notes.append(
            f"{n('algo.dynamic_filtering_enable')}: streaming replacement of groups whose mean reward is outside "
            f"({low:g}, {high:g}); the share kept depends on the data and the model: --scenario-set "
            "algorithm.dynamic_sampling.keep_rate=R (OpenRLHF logs dynamic_filtering_pass_rate, in percent)"
        )
    return sections, notes


def _lengths(src: Source) -> tuple[int, int, list[str]]:
    """(max prompt tokens, max response tokens, notes): v0.9.5's prompt_max_len / generate_max_len when the file
    uses them, else v0.10's data.max_len with rollout.max_new_tokens (None: half of max_len each, assumed)."""
    n = src.name
    new_key = "rollout.max_new_tokens"
    old_style = src.given("prompt_max_len") or (src.given(new_key) and n(new_key) == "generate_max_len")
    if src.legacy and (old_style or not (src.given("data.max_len") or src.given(new_key))):
        prompt = as_int(src, "prompt_max_len") if src.given("prompt_max_len") else int(_default(src, "prompt_max_len"))
        response = as_int(src, new_key) if src.given(new_key) else int(_default(src, new_key))
        return prompt, response, []
    if src.given("prompt_max_len"):
        raise ImportConfigError(
            f"prompt_max_len is a v0.9.5 flag; with the dotted flags give {n('data.max_len')} (prompt + response) "
            f"and {n(new_key)}"
        )
    total = as_int(src, "data.max_len")
    if src.given(new_key):
        response = as_int(src, new_key)
        if response >= total:
            raise ImportConfigError(
                f"{n(new_key)} ({response}) must be less than {n('data.max_len')} ({total}), which also holds the "
                "prompt; change one of them"
            )
        return total - response, response, []
    prompt = total // 2
    return (
        prompt,
        total - prompt,
        [
            f"{n('data.max_len')} {total} split half prompt, half response ({n(new_key)} unset: OpenRLHF generates up "
            "to max_len - the prompt's length)"
        ],
    )


# ------------------------------------------------------------------------------------------- emit


def emit_keys(ctx: _Ctx) -> dict[str, Any]:
    from rlsim.frameworks.emit_keys import _common_notes, _divide, _lr, _nodes, _opt_steps, _packing_tokens

    s, hw, tr = ctx.s, ctx.s.hardware, ctx.s.training
    d: dict[str, Any] = {}
    P, G, B = s.workload.prompts_per_step, s.workload.group_size, s.workload.responses_per_step
    train_batch = _divide("workload P x G", B, "the optimizer steps per step", _opt_steps(s), "OpenRLHF")
    d["rollout.batch_size"], d["rollout.n_samples_per_prompt"] = P, G
    d["train.batch_size"] = train_batch
    d["train.max_epochs"] = s.algorithm.epochs_per_step
    train_gpus = hw.num_train_gpus
    per_node, nodes = _nodes(ctx, train_gpus, "actor.num_gpus_per_node", 8)
    d["actor.num_nodes"], d["actor.num_gpus_per_node"] = nodes, per_node
    tp = s.engine.tensor_parallel_size
    d["vllm.num_engines"] = s.num_replicas
    d["vllm.tensor_parallel_size"] = tp
    d["vllm.gpu_memory_utilization"] = s.engine.gpu_memory_utilization
    if s.engine.prefix_caching is not None:
        d["vllm.enable_prefix_caching"] = s.engine.prefix_caching
    if s.num_replicas * tp != hw.num_rollout_gpus:
        ctx.notes.append(
            f"engine.replicas {s.num_replicas} x TP {tp} != {hw.num_rollout_gpus} rollout GPUs: OpenRLHF's engines "
            "use vllm.num_engines x vllm.tensor_parallel_size GPUs"
        )
    colocated = hw.placement == "colocated"
    d["train.colocate_all"] = colocated
    is_async = s.schedule.mode == "async"
    d["train.async_enable"] = is_async
    if is_async:
        d["train.async_queue_size"] = s.schedule.max_staleness
        d["train.partial_rollout_enable"] = s.schedule.in_flight_weight_updates
        if s.schedule.streaming:
            ctx.notes.append("schedule.streaming: OpenRLHF's generator finishes a rollout before the next starts")
    ref_with_actor = colocated or bool(ctx.current("train.colocate_actor_ref") is True)
    if s.algorithm.kl_reference and ref_with_actor:  # OpenRLHF asserts equal sizes
        d["ref.num_nodes"], d["ref.num_gpus_per_node"] = nodes, per_node
    if s.algorithm.name == "ppo" and colocated:
        d["critic.num_nodes"], d["critic.num_gpus_per_node"] = nodes, per_node
    if tr.backend == "megatron":
        d["ds.tensor_parallel_size"] = tr.tensor_parallel_size
        d["ds.ring_attn_size"] = tr.context_parallel_size
        if tr.expert_parallel_size > 1:
            ctx.notes.append(f"training.expert_parallel_size {tr.expert_parallel_size}: OpenRLHF has none")
    else:
        d["ds.tensor_parallel_size"] = 1
        d["ds.ring_attn_size"] = 1
    dp = train_gpus // (tr.tensor_parallel_size * tr.context_parallel_size) if tr.backend == "megatron" else train_gpus
    if tr.sequence_packing:
        d["train.dynamic_batch_enable"] = True
        d["ds.packing_samples"] = True
        d["train.max_tokens_per_gpu"] = _packing_tokens(s)
    else:
        d["train.dynamic_batch_enable"] = False
        d["train.micro_batch_size"] = tr.micro_batch_size
        _divide(
            "OpenRLHF train.batch_size",
            train_batch,
            "training.micro_batch_size x data-parallel GPUs",
            tr.micro_batch_size * dp,
            "OpenRLHF (DeepSpeed)",
        )
    if tr.logprob_micro_batch_size is not None:
        d["rollout.micro_batch_size"] = tr.logprob_micro_batch_size
    d["actor.gradient_checkpointing_enable"] = tr.activation_recompute != "none"
    d["ds.adam_offload"] = tr.offload_optimizer
    d["actor.adam.lr"] = _lr(s)
    _common_notes(ctx, "OpenRLHF", asynchronous=True, max_num_seqs=False, pp=False)
    return d


def docs_table() -> str:
    """The mapping table of docs/import-config.md (rlsim.frameworks.registry): each key with its v0.9.5 flat name
    and, where the flat spelling's default differs, that default too."""

    def cell(value: Any) -> str:
        return "—" if value is None else f"`{value}`"

    lines = ["| framework key | flat name (v0.9.5) | default | rlsim field | rule |", "|---|---|---|---|---|"]
    for row in TABLE:
        flat = ", ".join(f"`{name}`" for name, key in LEGACY.items() if key == row.key) or "—"
        default = cell(row.default)
        if row.key in LEGACY_DEFAULTS and LEGACY_DEFAULTS[row.key] != row.default:
            default += f" (flat: `{LEGACY_DEFAULTS[row.key]}`)"
        field = row.field if row.field.startswith("(") else f"`{row.field}`"
        lines.append(f"| `{row.key}` | {flat} | {default} | {field} | {row.rule} |")
    return "\n".join(lines)
