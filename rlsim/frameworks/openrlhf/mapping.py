"""OpenRLHF (OpenRLHF/OpenRLHF) ``train_ppo_ray`` arguments as an rlsim scenario: the mapping ``TABLE`` and
``to_scenario`` (the arguments as a user has them, and their flat v0.9.5 names: :mod:`rlsim.frameworks.openrlhf.args`).

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

from dataclasses import dataclass
from typing import Any

from rlsim.frameworks import run_keys
from rlsim.frameworks.adapter import ImportConfigError, Row, Source
from rlsim.frameworks.common import as_float, as_int, assumed_workload, divisible, resolve_model
from rlsim.frameworks.openrlhf import releases
from rlsim.frameworks.openrlhf.args import legacy_default, length_caps
from rlsim.workload import keep_prior

VERSION_READ = "OpenRLHF 3c3be62 (v0.11.0; flat names of v0.9.5 c0e2ee2)"
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
    Row("ds.packing_samples", False, "training.remove_padding", "false: training.pad_micro_batches (to longest)"),
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
    Row("vllm.enforce_eager", False, "engine.enforce_eager", "true: no CUDA graphs (vllm_engine.py:268, v0.11.0)"),
    Row("train.async_enable", False, "schedule.mode", "true: async (vLLM on GPUs of its own)"),
    Row("train.async_queue_size", 1, "schedule.max_staleness", "rollouts ahead of the trainer (k)"),
    Row("train.partial_rollout_enable", False, "schedule.in_flight_weight_updates", "async only"),
    Row("algo.advantage.is_correction_enable", False, "learning.staleness_loss", "async: true -> decoupled_ppo"),
    Row("rollout.vllm_generate_batch_size", None, "(check)", "> rollout.batch_size needs async (oversampling)"),
    Row("algo.advantage.estimator", "gae", "algorithm.name", "gae -> ppo (critic); the others -> grpo"),
    Row("algo.kl.init_coef", 0.01, "algorithm.kl_reference", "> 0: the reference model and its pass"),
    Row("actor.policy_loss_type", "ppo", "(a note)", "gspo: the loss's arithmetic only, the passes of ppo"),
    Row(
        "algo.dynamic_filtering_enable",
        False,
        "algorithm.dynamic_sampling",
        "true: mode replace; keep 1/3 assumed",
    ),
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
    Row("ds.zero_stage", 2, "training.zero_stage", "backend fsdp at this ZeRO stage (0: as 1, noted)"),
    Row("ds.overlap_comm", False, "training.overlap_communication", "ZeRO-1/2 gradient reduction beside backward"),
    Row("ds.adam_offload", False, "training.offload_optimizer", "DeepSpeed CPU Adam"),
    Row("ds.lora.rank", 0, "training.lora_rank", "> 0: LoRA (actor and critic); the reference stays its own"),
    Row("ds.lora.target_modules", "all-linear", "training.lora_target_modules", "PEFT module names"),
    Row("ds.tensor_parallel_size", 1, "training.tensor_parallel_size", "> 1: a Megatron layout (AutoTP), noted"),
    Row("ds.ring_attn_size", 1, "training.context_parallel_size", "> 1: a Megatron layout (ring attention), noted"),
    Row("eval.steps", -1, "run.eval_every_steps", "> 0 with eval.dataset: evaluation every N steps"),
    Row("eval.dataset", None, "run.eval_every_steps", "no dataset: no evaluation"),
    Row("eval.n_samples_per_prompt", 4, "run.eval_group_size", "responses per evaluation prompt"),
    Row("ckpt.save_steps", -1, "run.checkpoint_every_steps", "> 0: a save every N steps"),
)


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
        model, model_notes = resolve_model(src.get(key), n(key))
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


@dataclass(frozen=True)
class _Sizes:
    """The rollout, engine and actor sizes of the arguments (:func:`_sizes`)."""

    prompts: int
    group: int
    samples: int
    engines: int
    tp: int
    actor_per_node: int
    actor_gpus: int
    actor_key: str
    ring: int
    ds_tp: int
    micro: int
    mini: int
    rollout_micro: int


def _sizes(src: Source) -> _Sizes:
    """The batch, engine and actor sizes, checked as OpenRLHF and DeepSpeed check them."""
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
    micro = as_int(src, micro_key) if src.given(micro_key) else int(legacy_default(src, micro_key))
    # DeepSpeed: train_batch_size == micro x accumulation x data-parallel ranks
    divisible(n("train.batch_size"), train_batch, f"{n(micro_key)} x data-parallel actor GPUs ({dp})", micro * dp)
    mini = divisible(
        f"{n('rollout.batch_size')} x {n('rollout.n_samples_per_prompt')}", samples, n("train.batch_size"), train_batch
    )
    rmicro_key = "rollout.micro_batch_size"
    rollout_micro = as_int(src, rmicro_key) if src.given(rmicro_key) else int(legacy_default(src, rmicro_key))
    if samples // rollout_micro < dp:  # train_ppo_ray.py asserts it
        raise ImportConfigError(
            f"{n('rollout.batch_size')} x {n('rollout.n_samples_per_prompt')} / {n(rmicro_key)} ({samples} / "
            f"{rollout_micro}) must be at least the data-parallel actor GPUs ({actor_key} / ring x TP = {dp}) "
            "(OpenRLHF asserts it); change one of them"
        )
    return _Sizes(
        prompts,
        group,
        samples,
        engines,
        tp,
        actor_per_node,
        actor_gpus,
        actor_key,
        ring,
        ds_tp,
        micro,
        mini,
        rollout_micro,
    )


def _check_generate_batch(src: Source, prompts: int, is_async: bool, notes: list[str]) -> None:
    """Refuses a vLLM generate batch above rollout.batch_size without async (as OpenRLHF does), else notes it."""
    n = src.name
    gen_key = "rollout.vllm_generate_batch_size"
    if src.given(gen_key) and as_int(src, gen_key) > prompts:
        if not is_async:
            raise ImportConfigError(
                f"{n(gen_key)} ({as_int(src, gen_key)}) > {n('rollout.batch_size')} ({prompts}) needs "
                f"{n('train.async_enable')} (OpenRLHF asserts it); change one of them"
            )
        notes.append(f"{n(gen_key)} {as_int(src, gen_key)} > {prompts}: oversampling is not modelled (P = {prompts})")


def _reference(src: Source, colocate: bool) -> tuple[bool, bool]:
    """(kl, colocate_ref): whether the reference model exists and shares the actor's GPUs (its layout checked)."""
    n = src.name
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
    return kl, colocate_ref


def _algorithm(src: Source, estimator: str, mini: int, kl: bool, notes: list[str]) -> dict[str, Any]:
    """The ``algorithm`` section: the estimator's algorithm, its batches and passes, and gae's critic model."""
    n = src.name
    algorithm: dict[str, Any] = {
        "name": ESTIMATORS[estimator],
        "mini_batches_per_step": mini,
        "epochs_per_step": as_int(src, "train.max_epochs"),
        "kl_reference": kl,
        "recompute_old_logprob": True,
    }
    loss = src.get("actor.policy_loss_type")
    if loss not in ("ppo", "gspo"):  # train_ppo_ray.py:420 at v0.11.0
        raise ImportConfigError(f"{n('actor.policy_loss_type')}: {loss!r} is not ppo or gspo (OpenRLHF's choices)")
    if loss == "gspo":
        notes.append(f"{n('actor.policy_loss_type')} gspo: sequence-level ratios; the same passes as ppo")
    if estimator == "reinforce":  # REINFORCE++ whitens over the batch: one sample per prompt is valid (v0.11.0
        algorithm["group_baseline"] = False  # train_ppo_ray.py:612 asserts n > 1 for the group estimators only)
    if estimator == "gae":
        if src.given("critic.model_name_or_path"):
            algorithm["critic_model"], critic_notes = resolve_model(
                src.get("critic.model_name_or_path"), n("critic.model_name_or_path")
            )
            notes += [c.replace("model:", "critic model:", 1) for c in critic_notes]
        else:
            notes.append(
                "critic: the policy's architecture (OpenRLHF starts the critic from the reward model; --set "
                f"{n('critic.model_name_or_path')}=NAME for another)"
            )
    return algorithm


def _placement(
    src: Source, z: _Sizes, colocate: bool, is_async: bool, notes: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``hardware`` and ``schedule`` sections: one pool under colocate_all (sync), else vLLM's GPUs apart."""
    n = src.name
    hardware: dict[str, Any] = {"gpus_per_node": z.actor_per_node}
    if colocate and not is_async:
        if z.actor_gpus != z.engines * z.tp:  # train_ppo_ray.py asserts it
            raise ImportConfigError(
                f"{z.actor_key} ({z.actor_gpus}) must equal {n('vllm.num_engines')} x "
                f"{n('vllm.tensor_parallel_size')} ({z.engines * z.tp}) with {n('train.colocate_all')} (OpenRLHF "
                "asserts it); change one of them"
            )
        hardware.update(num_gpus=z.actor_gpus, placement="colocated")
        return hardware, {"mode": "sync-colocated"}
    hardware.update(
        num_gpus=z.engines * z.tp + z.actor_gpus,
        placement="separate",
        rollout_gpus=z.engines * z.tp,
        train_gpus=z.actor_gpus,
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
    return hardware, schedule


def _own_pools(
    src: Source,
    algorithm: dict[str, Any],
    reward: dict[str, Any] | None,
    estimator: str,
    kl: bool,
    colocate: bool,
    colocate_ref: bool,
    notes: list[str],
) -> None:
    """Adds to ``algorithm`` the reference's and critic's GPUs of separate pools (a note for those not counted)."""
    n = src.name
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


def _training(src: Source, z: _Sizes, notes: list[str]) -> dict[str, Any]:
    """The ``training`` section: DeepSpeed as fsdp (AutoTP / ring attention: a Megatron layout) and its batching."""
    n = src.name
    training: dict[str, Any] = {"backend": "fsdp"}
    if z.ring > 1 or z.ds_tp > 1:
        training = {"backend": "megatron", "tensor_parallel_size": z.ds_tp, "context_parallel_size": z.ring}
        notes.append(
            f"DeepSpeed AutoTP {z.ds_tp} x ring attention {z.ring} simulated as a Megatron layout of those sizes "
            "(rlsim's fsdp is data-parallel only)"
        )
    zero = src.get("ds.zero_stage")
    if zero not in (0, 1, 2, 3) or isinstance(zero, bool):
        raise ImportConfigError(
            f"{n('ds.zero_stage')}: {zero!r} must be 0, 1, 2 or 3; fix it in the file or with --set"
        )
    if training["backend"] == "fsdp":  # ZeRO's communication and memory by stage (rlsim.trainer.training)
        training["zero_stage"] = max(1, zero)
        training["overlap_communication"] = bool(src.get("ds.overlap_comm"))
        if zero == 0:
            notes.append(
                f"{n('ds.zero_stage')} 0: simulated as ZeRO-1 (gradients reduced once per step; the optimizer state "
                "priced sharded, which stage 0 does not do)"
            )
    elif zero < 3:
        notes.append(f"{n('ds.zero_stage')} {zero}: the Megatron layout's distributed optimizer stands for it")
    if src.get("train.dynamic_batch_enable"):
        training.update(
            sequence_packing=True, micro_batch_size=1, packing_tokens=as_int(src, "train.max_tokens_per_gpu")
        )
        src.get("ds.packing_samples")  # OpenRLHF turns packing on with dynamic batching
    else:
        training.update(sequence_packing=False, micro_batch_size=z.micro)
        if src.get("ds.packing_samples"):
            training["remove_padding"] = True
            notes.append(
                f"{n('ds.packing_samples')} without dynamic batch: {z.micro} samples per micro-batch, packed without "
                "padding (training.remove_padding)"
            )
        elif training["backend"] == "fsdp":  # experience.py make_experience_batch: right-padded to the longest
            training["pad_micro_batches"] = True
    training["logprob_micro_batch_size"] = z.rollout_micro
    training["activation_recompute"] = "full" if src.get("actor.gradient_checkpointing_enable") else "none"
    training["offload_optimizer"] = bool(src.get("ds.adam_offload"))
    rank = src.get("ds.lora.rank")
    # LoRA: PEFT adapters (models/actor.py:177); the reference model is launched without them (ray/launcher.py:105-118)
    if isinstance(rank, int) and not isinstance(rank, bool) and rank > 0:
        targets = src.get("ds.lora.target_modules")
        training.update(
            lora_rank=rank,
            lora_target_modules=targets if isinstance(targets, str) else ",".join(map(str, targets)),
            lora_reference_in_base=False,
        )
    return training


def to_scenario(src: Source) -> tuple[dict[str, Any], list[str]]:
    """The scenario sections for OpenRLHF train_ppo_ray arguments, and the assumptions made."""
    notes: list[str] = []
    n = src.name
    z = _sizes(src)
    colocate, is_async = bool(src.get("train.colocate_all")), bool(src.get("train.async_enable"))
    _check_generate_batch(src, z.prompts, is_async, notes)
    kl, colocate_ref = _reference(src, colocate)
    estimator = src.get("algo.advantage.estimator")
    if estimator not in ESTIMATORS:
        raise ImportConfigError(
            f"{n('algo.advantage.estimator')}: {estimator!r} is not one of {', '.join(ESTIMATORS)}; fix it"
        )
    model, model_notes = resolve_model(src.get("actor.model_name_or_path"), n("actor.model_name_or_path"))
    notes += model_notes
    algorithm = _algorithm(src, estimator, z.mini, kl, notes)

    reward = _reward(src, model, colocate and not is_async, notes)

    hardware, schedule = _placement(src, z, colocate, is_async, notes)
    if not (colocate and not is_async):
        _own_pools(src, algorithm, reward, estimator, kl, colocate, colocate_ref, notes)
    training = _training(src, z, notes)

    max_prompt, max_response, length_notes = length_caps(src)
    notes += length_notes
    workload, assumed = assumed_workload(z.prompts, z.group, max_prompt, max_response)
    notes += assumed
    sections = {
        "model": model,
        "hardware": hardware,
        "engine": {
            "tensor_parallel_size": z.tp,
            "replicas": z.engines,
            "gpu_memory_utilization": as_float(src, "vllm.gpu_memory_utilization"),
            "prefix_caching": bool(src.get("vllm.enable_prefix_caching")),
            "behaviour": "vllm-v1",
            "enforce_eager": bool(src.get("vllm.enforce_eager")),
        },
        "workload": workload,
        "algorithm": algorithm,
        "training": training,
        "schedule": schedule,
        "learning": {"lr0": as_float(src, "actor.adam.lr"), "reference_batch": z.samples},
        # broadcast_to_vllm: per parameter, ZeRO-3 gathers it whole and rank 0 broadcasts it to every vLLM rank, or
        # (colocate_all) every rank shares a clone by CUDA IPC (openrlhf/trainer/ray/ppo_actor.py:103, 408-480 at
        # v0.11.0; rlsim.trainer.sync_gathered)
        "weight_sync": {"transfer": "per_tensor"},
    }
    # async: old log-probs recomputed by the actor; is_correction_enable weighs each token by the clamped exp(old -
    # vLLM's), AReaL's decoupled objective (3c3be62; rlsim.learning.staleness). Without it, neither measured form.
    if is_async and src.get("algo.advantage.is_correction_enable"):
        sections["learning"]["staleness_loss"] = "decoupled_ppo"
    elif is_async:
        notes.append(
            f"{n('train.async_enable')} without {n('algo.advantage.is_correction_enable')}: staleness unweighted, "
            "neither of AReaL's measured losses; learning.staleness_loss stays stretch (docs/learning.md)"
        )
    if reward is not None:
        sections["reward"] = reward
    if src.get("algo.dynamic_filtering_enable"):
        # samples_generator.py _generate_vllm (3c3be62): a group whose mean reward falls outside the range is
        # dropped and one new prompt dispatched at once, until rollout.batch_size groups pass
        low, high = src.get("algo.dynamic_filtering_range") or (0.0, 1.0)
        algorithm["dynamic_sampling"] = keep_prior.assumed({"mode": "replace"})
        notes.append(
            f"{n('algo.dynamic_filtering_enable')}: streaming replacement of groups whose mean reward is outside "
            f"({low:g}, {high:g}) (OpenRLHF logs the share kept as dynamic_filtering_pass_rate, in percent)"
        )
        notes.append(keep_prior.note(n("algo.dynamic_filtering_enable")))
    releases.apply(src, sections, notes)  # openrlhf_version: the release's vLLM and defaults
    if run := run_keys.openrlhf(src, notes):  # evaluation and checkpoints, beside the steps (rlsim.run.overheads)
        sections["run"] = run
    return sections, notes
