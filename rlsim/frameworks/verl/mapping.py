"""verl (volcengine/verl) PPO/GRPO trainer configs as rlsim scenarios: the mapping ``TABLE``, ``read`` and
``to_scenario``.

Read at volcengine/verl commit b178a3cd56f58b2d502255daba591e92833930a7 (v0.7.0-125, 2026-01-29): the Hydra config
``verl/trainer/config/ppo_trainer.yaml`` and its parts (``actor/actor.yaml``, ``rollout/rollout.yaml`` (its
``max_num_seqs: 256``),
``data/legacy_data.yaml``, ``model/hf_model.yaml``) for the defaults, and ``verl/workers/fsdp_workers.py`` for the
batch semantics. A verl config is the nested YAML of that Hydra tree; the ``key=value`` overrides of a verl command
line are given with ``--set`` (dotted keys, applied before mapping).

Batch semantics (facts from that commit):

* ``data.train_batch_size`` counts prompts per step (P); each prompt gets ``actor_rollout_ref.rollout.n`` responses
  (G), so a step trains B = P x G responses.
* ``actor_rollout_ref.actor.ppo_mini_batch_size`` also counts prompts: the workers multiply it by rollout.n and
  divide it over the data-parallel ranks, so one optimizer step per mini-batch and
  train_batch_size / ppo_mini_batch_size mini-batches per step, each repeated ``ppo_epochs`` times.
* ``ppo_micro_batch_size_per_gpu`` counts responses per forward/backward on one GPU; the per-rank mini-batch
  (ppo_mini_batch_size x n / GPUs) must be a multiple of it (verl asserts this). With ``use_dynamic_bsz`` the
  micro-batches are instead packed up to ``ppo_max_token_len_per_gpu`` tokens.
* the hybrid engine colocates the trainer and the vLLM engine on all ``trainer.n_gpus_per_node x trainer.nnodes``
  GPUs and alternates them synchronously (rlsim placement colocated, schedule sync-colocated); its weight sync
  gathers every parameter whole on every rank, one tensor at a time (``weight_sync.transfer: per_tensor``).
* ``algorithm.adv_estimator`` gae trains a critic (rlsim algorithm ppo), the others do not (unless
  ``critic.enable``), remax adds a greedy rollout (rlsim.frameworks.verl.estimators); ``use_kl_loss`` or
  ``use_kl_in_reward`` needs the reference model's log-probs (rlsim algorithm.kl_reference).

* ``rollout.name`` sglang: SGLang 0.5.6 (verl's pin) with ``gpu_memory_utilization`` as its ``mem_fraction_static``
  and ``max_num_seqs`` as ``max_running_requests``, as verl's ``async_sglang_server.py`` passes them; verl's
  ``max_num_batched_tokens`` and ``enable_chunked_prefill`` are vLLM's and do not reach SGLang
  (rlsim.frameworks.sglang).

* ``actor.strategy`` megatron (``--config-name ppo_megatron_trainer``, or a YAML whose defaults name
  ``megatron_actor``): the layout of ``actor.megatron.*`` over the GPUs, micro-batches per data-parallel rank, no
  recomputation unless ``override_transformer_config.recompute_granularity`` says so (:func:`_megatron`).

* ``verl_version`` (not a verl key: ``--set verl_version=0.6.1``) names the release the config runs on: its pinned
  engines and the defaults it differs in from b178a3c (rlsim.frameworks.verl.releases).

Other verl keys are refused or listed as unused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlsim import catalog
from rlsim.catalog.hf_config import spec_from_path
from rlsim.frameworks import run_keys, sglang
from rlsim.frameworks.adapter import LAUNCH_NOTES, ImportConfigError, Row, Source, read_config
from rlsim.frameworks.common import as_float, as_int, assumed_workload, divisible, resolve_model
from rlsim.frameworks.launch import framework_command
from rlsim.frameworks.verl import estimators, memory_keys, releases
from rlsim.io.files import read_text
from rlsim.scenario.overrides import parse_scalar

VERSION_READ = "verl b178a3c (v0.7.0-125)"
SGLANG_VERSION = "0.5.6"  # verl b178a3c setup.py: the sglang extra pins sglang[srt,openai]==0.5.6
A = "actor_rollout_ref.actor."
MG = A + "megatron."  # verl's Megatron actor (strategy megatron)
REF_MG = "actor_rollout_ref.ref.megatron."
R = "actor_rollout_ref.rollout."
M = "actor_rollout_ref.model."

TABLE: tuple[Row, ...] = (
    Row("data.train_batch_size", 1024, "workload.prompts_per_step", "P: prompts per step"),
    Row(R + "n", 1, "workload.group_size", "G: responses per prompt (B = P x G)"),
    Row(A + "ppo_mini_batch_size", 256, "algorithm.mini_batches_per_step", "train_batch_size / ppo_mini_batch_size"),
    Row(A + "ppo_epochs", 1, "algorithm.epochs_per_step", "passes over the step's batch"),
    Row(A + "ppo_micro_batch_size_per_gpu", None, "training.micro_batch_size", "responses per micro-batch, unpacked"),
    Row(A + "use_dynamic_bsz", False, "training.sequence_packing", "true: micro-batches packed by tokens"),
    Row(A + "ppo_max_token_len_per_gpu", 16384, "training.packing_tokens", "with use_dynamic_bsz: tokens per bin"),
    Row(A + "ppo_micro_batch_size", None, "training.micro_batch_size", "deprecated global form: / GPUs (wins)"),
    Row(R + "log_prob_micro_batch_size_per_gpu", None, "training.logprob_micro_batch_size", "log-prob passes"),
    Row(R + "log_prob_micro_batch_size", None, "training.logprob_micro_batch_size", "deprecated global: / GPUs"),
    Row(R + "tensor_model_parallel_size", 2, "engine.tensor_parallel_size", "vLLM TP per replica"),
    Row(R + "gpu_memory_utilization", 0.5, "engine.gpu_memory_utilization", "of each GPU; SGLang mem_fraction_static"),
    Row(R + "max_num_seqs", 256, "engine.max_num_seqs", "running sequences; SGLang max_running_requests"),
    Row(R + "max_num_batched_tokens", 8192, "engine.max_num_batched_tokens", "vLLM: tokens per iteration"),
    Row(R + "enforce_eager", False, "engine.enforce_eager", "vLLM: true -> no CUDA graphs (true up to v0.5.0)"),
    Row(R + "layered_summon", False, "weight_sync.sleep_level", "vLLM: false -> 2 (weights discarded), true -> 1"),
    Row(R + "name", "vllm", "engine.behaviour", "vllm -> vllm-v1 (the V1 engine); sglang -> sglang-0.5"),
    Row("trainer.n_gpus_per_node", 8, "hardware.num_gpus, hardware.gpus_per_node", "num_gpus = per node x nnodes"),
    Row("trainer.nnodes", 1, "hardware.num_gpus", "placement colocated, schedule sync-colocated (hybrid engine)"),
    Row("data.max_prompt_length", 512, "workload.max_prompt_tokens", "and the assumed prompt length"),
    Row("data.max_response_length", 512, "workload.max_response_tokens", "and the assumed response lengths"),
    Row(A + "optim.lr", 1e-6, "learning.lr0", "learning.reference_batch = B (lr0 holds at this config's batch)"),
    Row("algorithm.adv_estimator", "gae", "algorithm.name", "gae -> ppo (critic); remax: greedy_baseline; else grpo"),
    Row(A + "use_kl_loss", False, "algorithm.kl_reference", "either KL option -> reference log-prob pass"),
    Row("algorithm.use_kl_in_reward", False, "algorithm.kl_reference", "either KL option -> reference log-prob pass"),
    Row(M + "path", None, "model", "a catalog name, alias or hf_id (Instruct/Chat: the base architecture)"),
    Row("critic.model.path", None, "algorithm.critic_model", "gae only; default: the policy's architecture"),
    Row("critic.strategy", None, "(a note)", "None: the actor's; megatron: priced with the actor's micro-batching"),
    Row("critic.model.use_remove_padding", False, "algorithm.critic_pad_to_cap", "fsdp critic: false pads to caps"),
    Row("critic.use_dynamic_bsz", None, "algorithm.critic_sequence_packing", "None: the actor's use_dynamic_bsz"),
    Row("critic.ppo_max_token_len_per_gpu", 32768, "algorithm.critic_packing_tokens", "with dynamic bsz: its budget"),
    Row("critic.ppo_micro_batch_size_per_gpu", None, "algorithm.critic_micro_batch_size", "without dynamic bsz"),
    Row(M + "enable_gradient_checkpointing", True, "training.activation_recompute", "true -> full, false -> none"),
    Row(M + "use_remove_padding", True, "training.remove_padding", "false: training.pad_to_cap (padded to caps)"),
    Row(R + "log_prob_max_token_len_per_gpu", None, "training.logprob_packing_tokens", "None: ppo_max_token_len"),
    Row(R + "log_prob_use_dynamic_bsz", None, "(a note)", "None: actor.use_dynamic_bsz; rlsim packs both alike"),
    Row("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", None, "(a note)", "the ref pass takes rollout's"),
    Row(A + "ulysses_sequence_parallel_size", 1, "training.ulysses_sequence_parallel_size", "fsdp: Ulysses SP"),
    Row(A + "fsdp_config.ulysses_sequence_parallel_size", 1, "training.ulysses_sequence_parallel_size", "v0.7"),
    Row(A + "entropy_from_logits_with_chunking", False, "(a note)", "entropy temporaries only: not priced"),
    Row(A + "fsdp_config.reshard_after_forward", True, "training.reshard_after_forward", "false: one gather a layer"),
    Row(A + "fsdp_config.fsdp_size", -1, "training.fsdp_shard_size", "below the GPUs: hybrid sharding"),
    *memory_keys.ROWS,
    Row(A + "strategy", "fsdp", "training.backend", "fsdp / fsdp2 -> fsdp; megatron -> megatron"),
    Row(MG + "tensor_model_parallel_size", 1, "training.tensor_parallel_size", "strategy megatron: TP"),
    Row(MG + "pipeline_model_parallel_size", 1, "training.pipeline_parallel_size", "strategy megatron: PP"),
    Row(MG + "virtual_pipeline_model_parallel_size", None, "training.virtual_pipeline_stages", "null: 1"),
    Row(MG + "context_parallel_size", 1, "training.context_parallel_size", "strategy megatron: CP"),
    Row(MG + "expert_model_parallel_size", 1, "training.expert_parallel_size", "strategy megatron: EP"),
    Row(MG + "expert_tensor_parallel_size", None, "training.expert_tensor_parallel_size", "null: TP (Megatron)"),
    Row(MG + "use_distributed_optimizer", True, "training.distributed_optimizer", "strategy megatron"),
    Row(MG + "use_remove_padding", True, "training.remove_padding", "strategy megatron: thd (real tokens)"),
    Row(MG + "override_transformer_config.recompute_granularity", None, "training.activation_recompute", "null: none"),
    Row(MG + "param_offload", False, "training.swap_params", "bf16 weights to host between phases"),
    Row(MG + "grad_offload", False, "(a note)", "moves nothing: the gradient buffer is freed with param_offload"),
    Row(MG + "optimizer_offload", False, "training.swap_optimizer", "master + moments to host between updates"),
    Row(A + "optim.override_optimizer_config.optimizer_cpu_offload", False, "training.offload_optimizer", "CPU Adam"),
    Row(
        A + "optim.override_optimizer_config.optimizer_offload_fraction",
        0.0,
        "training.offload_optimizer_fraction",
        "host share",
    ),
    Row(REF_MG + "tensor_model_parallel_size", 1, "(a note)", "the reference pass runs on the actor's layout"),
    Row(REF_MG + "pipeline_model_parallel_size", 1, "(a note)", "the reference pass runs on the actor's layout"),
    Row(A + "fsdp_config.param_offload", False, "training.swap_params", "fp32 shard to host between phases"),
    Row(A + "fsdp_config.optimizer_offload", False, "training.swap_optimizer", "Adam moments to host between updates"),
    Row(A + "fsdp_config.offload_policy", False, "training.offload_params, offload_optimizer", "FSDP2 CPU policy"),
    Row("trainer.test_freq", -1, "run.eval_every_steps", "> 0: validation every N steps and at the last"),
    Row("trainer.val_before_train", True, "run.eval_at_start", "validation before the first step"),
    Row(R + "val_kwargs.n", 1, "run.eval_group_size", "responses per validation prompt"),
    Row("trainer.save_freq", -1, "run.checkpoint_every_steps", "> 0: a save every N steps and at the last"),
)

ENTRY = "verl.trainer.main_ppo"
DAPO = "recipe.dapo.main_dapo"  # verl@v0.7.0 recipe/dapo: main_ppo's config with filter_groups (estimators)


def read(path: Path, entries: tuple[str, ...] = (ENTRY, DAPO)) -> dict[str, Any]:
    """A verl config: the Hydra YAML (its ``defaults:`` list names verl's own config parts, whose defaults TABLE
    holds), or a launch script / command line running ``python3 -m verl.trainer.main_ppo key=value ...`` (or
    another of ``entries``: rlsim.frameworks.verl.fully_async), whose overrides (``key=value``, ``+key=value``,
    ``++key=value``) apply over verl's defaults (rlsim.frameworks.launch reads the script as text; nothing in it
    is run)."""
    if path.suffix in (".yaml", ".yml", ".json"):
        data = read_config(path, "verl")
        if isinstance(data.get("defaults"), list):
            if any("megatron_actor" in str(entry) for entry in data.pop("defaults")):
                data.setdefault("actor_rollout_ref", {}).setdefault("actor", {}).setdefault("strategy", "megatron")
            data[LAUNCH_NOTES] = [f"verl defaults: {path.name}'s defaults list read as verl's own ({VERSION_READ})"]
        return data
    if not path.is_file():
        raise ImportConfigError(f"{path}: is not a file; give verl's config YAML or the launch script that runs it")
    text = read_text(path, "verl launch script")
    words, notes = framework_command(text, path.name, entries, path.parent)
    entry = " or ".join(entries)
    data: dict[str, Any] = {}
    for word in words:
        if word.startswith("--config-name"):
            name = word.partition("=")[2].strip("'\"")
            if "megatron" in name:  # ppo_megatron_trainer.yaml: megatron_actor's defaults (strategy megatron)
                data[A + "strategy"] = "megatron"
            continue
        if word.startswith(("--config-path", "hydra.", "~")):
            continue
        key, eq, value = word.lstrip("+").partition("=")
        if not eq or not key:
            raise ImportConfigError(f"{path.name}: {word!r} after {entry} is not a Hydra override (key=value)")
        data[key] = parse_scalar(value)
    if not data:
        raise ImportConfigError(f"{path.name}: {entry} runs with no key=value overrides; nothing to import")
    data[LAUNCH_NOTES] = [f"read from the {entry} command in {path.name}, over verl's defaults", *notes]
    return data


def _is_moe(name: Any) -> bool:
    """Whether the model a verl config names has experts (False when it cannot be resolved: the import says why
    later)."""
    try:
        resolved, _ = resolve_model(name, M + "path")
        spec = catalog.model(resolved) if not Path(resolved).exists() else spec_from_path(resolved)
    except (ImportConfigError, KeyError, ValueError, OSError):
        return False
    return int(spec.get("num_experts") or 0) > 0


def _megatron(src: Source, mini_samples: int, gpus: int, moe: bool) -> tuple[dict[str, Any], int, list[str]]:
    """verl's Megatron actor (``ppo_megatron_trainer.yaml``, ``actor/megatron_actor.yaml`` and
    ``engine/megatron.yaml`` at b178a3c): the layout from ``actor.megatron.*`` (expert TP null is TP, as Megatron-core
    reads it), micro-batches per data-parallel rank, recomputation from ``override_transformer_config``
    (recompute_granularity null: none), the distributed optimizer. Returns the training section, the responses per
    data-parallel rank of a mini-batch, and notes."""
    notes: list[str] = []
    tp, pp, cp = (
        as_int(src, MG + k)
        for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size")
    )
    dp = divisible(
        "trainer.n_gpus_per_node x nnodes", gpus, f"{MG}tensor x pipeline x context parallel sizes", tp * pp * cp
    )
    etp = src.get(MG + "expert_tensor_parallel_size")  # null: TP for a MoE model (Megatron-core), moot for a dense one
    granularity = src.get(MG + "override_transformer_config.recompute_granularity")
    if granularity not in (None, "full", "selective"):
        raise ImportConfigError(
            f"{MG}override_transformer_config.recompute_granularity: {granularity!r} is not full, selective or null"
        )
    if src.get(MG + "grad_offload"):  # read at verl@v0.7.0 megatron_workers.py:343, used nowhere
        notes.append(f"{MG}grad_offload: moves nothing in verl (the gradient buffer is freed with param_offload)")
    training: dict[str, Any] = {
        "backend": "megatron",
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": pp,
        "virtual_pipeline_stages": int(src.get(MG + "virtual_pipeline_model_parallel_size") or 1),
        "context_parallel_size": cp,
        "expert_parallel_size": as_int(src, MG + "expert_model_parallel_size"),
        "expert_tensor_parallel_size": int(etp) if etp is not None else (tp if moe else 1),
        "distributed_optimizer": bool(src.get(MG + "use_distributed_optimizer")),
        "activation_recompute": granularity or "none",
        "swap_params": bool(src.get(MG + "param_offload")),
        "swap_optimizer": bool(src.get(MG + "optimizer_offload")),
    }
    cpu_adam = A + "optim.override_optimizer_config.optimizer_cpu_offload"
    if src.get(cpu_adam):  # Megatron-Core's HybridDeviceOptimizer (megatron/core/optimizer/__init__.py:489-529)
        training["offload_optimizer"] = True
        fraction = src.get(A + "optim.override_optimizer_config.optimizer_offload_fraction")
        training["offload_optimizer_fraction"] = float(fraction) if fraction is not None else 0.0
    per_rank = divisible(f"{A}ppo_mini_batch_size x {R}n", mini_samples, "the data-parallel size", dp)
    notes.append(
        f"{A}strategy megatron: TP {tp} x PP {pp} x CP {cp} over {gpus} GPUs, data-parallel {dp}; "
        f"recompute {granularity or 'none'} ({MG}override_transformer_config)"
    )
    ref = [k for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size") if src.given(REF_MG + k)]
    if any(src.get(REF_MG + k) != src.get(MG + k) for k in ref):
        notes.append(f"{REF_MG}*: the reference model's own layout is not modelled; its pass runs on the actor's")
    return training, per_rank, notes


def _budget(src: Source, key: str, training: dict[str, Any]) -> int:
    """A dynamic-batch token budget: ``key`` per GPU, times the Ulysses size (fsdp: dp_actor.py:441, which rlsim's
    fsdp micro-batching applies itself) or the context-parallel size (Megatron: megatron_actor.py:207 and :763 at
    v0.7.0, :191 at v0.6.1; returned multiplied, as rlsim's Megatron bins are per data-parallel rank). verl requires
    the product to hold one padded sequence (max prompt + max response): rearrange_micro_batches asserts
    max_token_len >= the batch's width (volcengine/verl@v0.7.0:verl/utils/seqlen_balancing.py:382)."""
    budget = as_int(src, key)
    width = as_int(src, "data.max_prompt_length") + as_int(src, "data.max_response_length")
    megatron = training.get("backend") == "megatron"
    group = int(training.get("context_parallel_size" if megatron else "ulysses_sequence_parallel_size", 1))
    if budget * group < width:
        kind = "context-parallel" if megatron else "Ulysses"
        raise ImportConfigError(
            f"{key}: {budget} x {kind} size {group} is below data.max_prompt_length + data.max_response_length "
            f"({width}), which verl asserts against; raise it to {-(-width // group)} or more"
        )
    return budget * group if megatron else budget


def _training(src: Source, mini_samples: int, gpus: int, notes: list[str]) -> dict[str, Any]:
    """The ``training`` section: the actor's strategy (fsdp, fsdp2 or megatron), its micro-batches and offloading."""
    training: dict[str, Any] = {"backend": "fsdp"}
    strategy = src.get(A + "strategy")
    if strategy not in ("fsdp", "fsdp2", "megatron"):
        raise ImportConfigError(
            f"{A}strategy: {strategy!r} is not mapped (fsdp, fsdp2, megatron); use one of them or write the "
            "scenario's training section by hand"
        )
    if strategy == "megatron":
        training, per_rank, megatron_notes = _megatron(src, mini_samples, gpus, _is_moe(src.get(M + "path")))
        notes += megatron_notes
    else:  # Ulysses: the legacy fsdp_workers.py:171 reads actor.ulysses_sequence_parallel_size, v0.7.0's engine
        # workers fsdp_config's, which actor.py:293 fills from the actor's: the larger wins
        sp = max(
            as_int(src, A + "ulysses_sequence_parallel_size"),
            as_int(src, A + "fsdp_config.ulysses_sequence_parallel_size"),
        )
        dp = divisible("trainer.n_gpus_per_node x nnodes", gpus, f"{A}ulysses_sequence_parallel_size", sp)
        if sp > 1 and not src.get(M + "use_remove_padding"):  # actor.py:300-304 (v0.7.0) raises
            raise ImportConfigError(
                f"{A}ulysses_sequence_parallel_size {sp} needs {M}use_remove_padding true (verl refuses sequence "
                f"parallel on padded batches); --set {M}use_remove_padding=true"
            )
        if sp > 1:
            training["ulysses_sequence_parallel_size"] = sp
        per_rank = divisible(f"{A}ppo_mini_batch_size x {R}n", mini_samples, "the data-parallel groups (GPUs / SP)", dp)
        gpus = dp  # verl divides the deprecated global micro-batch sizes by the data-parallel groups too
    if src.get(A + "use_dynamic_bsz"):
        training.update(sequence_packing=True, micro_batch_size=1)
        training["packing_tokens"] = _budget(src, A + "ppo_max_token_len_per_gpu", training)
        if src.given(R + "log_prob_max_token_len_per_gpu"):  # rollout.yaml:95 (v0.7.0): ppo_max_token_len's
            training["logprob_packing_tokens"] = _budget(src, R + "log_prob_max_token_len_per_gpu", training)
        if src.given(R + "log_prob_use_dynamic_bsz") and not src.get(R + "log_prob_use_dynamic_bsz"):
            notes.append(f"{R}log_prob_use_dynamic_bsz false: the log-prob passes are packed like training in rlsim")
    else:
        micro_key = A + "ppo_micro_batch_size_per_gpu"
        if src.given(A + "ppo_micro_batch_size"):  # verl divides the deprecated global size by the GPUs
            micro_key = A + "ppo_micro_batch_size"
            micro = max(1, as_int(src, micro_key) // gpus)
        elif src.get(micro_key) is None:
            raise ImportConfigError(
                f"{micro_key}: not set (and use_dynamic_bsz is false); set it, e.g. --set {micro_key}=8"
            )
        else:
            micro = as_int(src, micro_key)
        divisible(f"{A}ppo_mini_batch_size x {R}n / GPUs", per_rank, micro_key + " (per GPU)", micro)
        training.update(sequence_packing=False, micro_batch_size=micro)
        # the Megatron actor packs by its engine's use_remove_padding (megatron_actor.py: thd), true by default
        padding_key = MG + "use_remove_padding" if strategy == "megatron" else M + "use_remove_padding"
        training["remove_padding"] = bool(src.get(padding_key))
        if src.given(R + "log_prob_micro_batch_size"):
            training["logprob_micro_batch_size"] = max(1, as_int(src, R + "log_prob_micro_batch_size") // gpus)
        elif src.given(R + "log_prob_micro_batch_size_per_gpu"):
            training["logprob_micro_batch_size"] = as_int(src, R + "log_prob_micro_batch_size_per_gpu")
    if strategy != "megatron":  # Megatron recomputes by override_transformer_config (_megatron)
        training["activation_recompute"] = "full" if src.get(M + "enable_gradient_checkpointing") else "none"
    memory_keys.read(src, training, notes, strategy)  # LoRA, the actor's dtype, the logits, the reference
    if strategy != "megatron":
        # param_offload / optimizer_offload swap between phases (verl@v0.7.0 fsdp_workers.py:905-945); fsdp2's
        # offload_policy is FSDP2's CPUOffloadPolicy and turns those two off (fsdp_workers.py:539-542)
        policy = strategy == "fsdp2" and bool(src.get(A + "fsdp_config.offload_policy"))
        training["offload_params"] = training["offload_optimizer"] = policy
        training["swap_params"] = not policy and bool(src.get(A + "fsdp_config.param_offload"))
        training["swap_optimizer"] = not policy and bool(src.get(A + "fsdp_config.optimizer_offload"))
        _fsdp_options(src, training, notes)
    return training


def _fsdp_options(src: Source, training: dict[str, Any], notes: list[str]) -> None:
    """verl's fsdp / fsdp2 actor: padding (``model.use_remove_padding`` false: every sequence padded to the caps,
    training.pad_to_cap), resharding, hybrid sharding (``fsdp_config.fsdp_size``) and entropy chunking (a note:
    it changes the entropy's fp32 temporaries, which rlsim does not price)."""
    if not src.get(M + "use_remove_padding"):
        training["remove_padding"] = False
        training["pad_to_cap"] = True
    if not src.get(A + "fsdp_config.reshard_after_forward"):  # fsdp_workers.py:512 SHARD_GRAD_OP; fsdp2 kwarg :550
        training["reshard_after_forward"] = False
    size = src.get(A + "fsdp_config.fsdp_size")
    gpus = as_int(src, "trainer.n_gpus_per_node") * as_int(src, "trainer.nnodes")
    if not isinstance(size, int) or isinstance(size, bool):
        raise ImportConfigError(f"{A}fsdp_config.fsdp_size: {size!r} is not a whole number (-1: all GPUs)")
    if 0 < size < gpus:  # fsdp_workers.py:99 create_device_mesh: a (replicas, shard) mesh, hybrid sharding
        training["fsdp_shard_size"] = size
    if src.get(A + "entropy_from_logits_with_chunking"):
        notes.append(
            f"{A}entropy_from_logits_with_chunking: the entropy's fp32 temporaries in chunks of 2048 tokens "
            "(verl/utils/torch_functional.py:241); same FLOPs, and rlsim's memory check prices the logits only"
        )
    if src.given("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"):
        notes.append(
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu: the reference pass is micro-batched "
            "like the old log-prob pass (training.logprob_micro_batch_size)"
        )


def _algorithm(src: Source, mini_batches: int, notes: list[str]) -> tuple[str, dict[str, Any]]:
    """(model, the ``algorithm`` section): the policy's catalog model, the estimator's passes
    (rlsim.frameworks.verl.estimators) and the critic's model and micro-batching where one runs."""
    fields = estimators.estimator(src, notes)
    model, model_notes = resolve_model(src.get(M + "path"), M + "path")
    notes += model_notes
    algorithm: dict[str, Any] = {
        **fields,
        "mini_batches_per_step": mini_batches,
        "epochs_per_step": as_int(src, A + "ppo_epochs"),
        "kl_reference": any([bool(src.get(A + "use_kl_loss")), bool(src.get("algorithm.use_kl_in_reward"))]),
    }
    if (dynamic := estimators.filter_groups(src, notes)) is not None:
        algorithm["dynamic_sampling"] = dynamic
    critic = fields["name"] == "ppo"
    if critic and src.given("critic.model.path"):
        algorithm["critic_model"], critic_notes = resolve_model(src.get("critic.model.path"), "critic.model.path")
        notes += [n.replace("model:", "critic model:", 1) for n in critic_notes]
    if critic:
        _critic(src, algorithm, notes)
    return model, algorithm


def _critic(src: Source, algorithm: dict[str, Any], notes: list[str]) -> None:
    """verl's dp critic with micro-batching of its own (verl@v0.7.0 verl/trainer/config/critic/dp_critic.yaml):
    ``model.use_remove_padding`` false by default (:44; dp_critic.py:69 then runs the batch padded to the caps),
    ``use_dynamic_bsz`` the actor's unless set (critic.yaml:62) with its own budget ``ppo_max_token_len_per_gpu``,
    32768 by default (:65), which its values pass shares (:68), else ``ppo_micro_batch_size_per_gpu``."""
    if (src.get("critic.strategy") or src.get(A + "strategy")) == "megatron":
        notes.append("critic.*: a Megatron critic is priced with the actor's micro-batching")
        return
    algorithm["critic_pad_to_cap"] = not bool(src.get("critic.model.use_remove_padding"))
    dynamic = src.get("critic.use_dynamic_bsz")
    packing = bool(src.get(A + "use_dynamic_bsz") if dynamic is None else dynamic)
    algorithm["critic_sequence_packing"] = packing
    if packing:
        algorithm["critic_packing_tokens"] = as_int(src, "critic.ppo_max_token_len_per_gpu")
    elif src.get("critic.ppo_micro_batch_size_per_gpu") is not None:
        algorithm["critic_micro_batch_size"] = as_int(src, "critic.ppo_micro_batch_size_per_gpu")


def _engine(src: Source, rollout_engine: str, notes: list[str]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(the ``engine`` section, the ``software`` section or None): the rollout's vLLM or SGLang engine."""
    if rollout_engine == "sglang":  # verl passes gpu_memory_utilization and max_num_seqs on (async_sglang_server.py)
        engine, software_section, sglang_notes = sglang.engine_section(
            as_int(src, R + "tensor_model_parallel_size"),
            as_float(src, R + "gpu_memory_utilization"),
            as_int(src, R + "max_num_seqs"),
            SGLANG_VERSION,
            f"{R}name sglang",
        )
        notes += sglang_notes
        return engine, software_section
    return {
        "tensor_parallel_size": as_int(src, R + "tensor_model_parallel_size"),
        "gpu_memory_utilization": as_float(src, R + "gpu_memory_utilization"),
        "max_num_seqs": as_int(src, R + "max_num_seqs"),
        # verl passes both to vLLM (vllm_rollout_spmd.py at v0.4.0-v0.6.1, vllm_async_server.py:274-278 at b178a3c)
        "max_num_batched_tokens": as_int(src, R + "max_num_batched_tokens"),
        "enforce_eager": bool(src.get(R + "enforce_eager")),
        "behaviour": "vllm-v1",
    }, None


def to_scenario(src: Source) -> tuple[dict[str, Any], list[str]]:
    """The scenario sections for a verl config, and the assumptions made."""
    notes: list[str] = []
    prompts = as_int(src, "data.train_batch_size")
    group = as_int(src, R + "n")
    mini = as_int(src, A + "ppo_mini_batch_size")
    mini_batches = divisible("data.train_batch_size", prompts, A + "ppo_mini_batch_size", mini)
    per_node, nnodes = as_int(src, "trainer.n_gpus_per_node"), as_int(src, "trainer.nnodes")
    gpus = per_node * nnodes
    training = _training(src, mini * group, gpus, notes)
    model, algorithm = _algorithm(src, mini_batches, notes)

    rollout_engine = src.get(R + "name")
    if rollout_engine not in ("vllm", "sglang"):
        raise ImportConfigError(
            f"{R}name: {rollout_engine!r} is not mapped (rlsim models vllm and sglang); --set {R}name=vllm to "
            "simulate vLLM"
        )
    max_prompt, max_response = as_int(src, "data.max_prompt_length"), as_int(src, "data.max_response_length")
    workload, length_notes = assumed_workload(prompts, group, max_prompt, max_response)
    notes += length_notes
    engine, software_section = _engine(src, rollout_engine, notes)
    sections = {
        "model": model,
        "hardware": {"num_gpus": gpus, "gpus_per_node": per_node, "placement": "colocated"},
        "engine": engine,
        "workload": workload,
        "algorithm": algorithm,
        "training": training,
        "schedule": {"mode": "sync-colocated"},
        "learning": {"lr0": as_float(src, A + "optim.lr"), "reference_batch": prompts * group},
        # the hybrid engine's rollout_mode: every rank gathers each parameter whole (FSDP full_tensor(), Megatron
        # per_tensor_generator) and its engine loads its slice, tensor by tensor (fsdp_workers.py:697-746 at v0.7.0,
        # :672-721 at v0.6.1; rlsim.trainer.sync_gathered)
        "weight_sync": {"transfer": "per_tensor"},
    }
    if rollout_engine == "vllm" and not src.get(R + "layered_summon"):
        # the hybrid engine sleeps at VLLM_SLEEP_LEVEL, 2 with vLLM >= 0.8.5: its weights are discarded, not copied
        # to host memory (b178a3c verl/third_party/vllm/__init__.py:33-49, vllm_rollout.py:91-95,
        # vllm_async_server.py:567-569); layered_summon keeps level 1
        sections["weight_sync"]["sleep_level"] = 2
    if software_section is not None:
        sections["software"] = software_section
    if (reward := estimators.reward(src, model, notes)) is not None:
        sections["reward"] = reward
    if run := run_keys.verl(src, notes):  # evaluation and checkpoints, beside the steps (rlsim.run.overheads)
        sections["run"] = run
    releases.apply(src, sections, notes)  # verl_version: the release's engines and defaults
    return sections, notes
