"""NeMo RL recipe YAML keys as rlsim scenario fields: the key table of ``rlsim import-config --format nemo-rl``
(``TABLE``) and :func:`to_scenario`, which turns a resolved recipe (:mod:`rlsim.frameworks.nemo_rl.recipe_yaml`) into
the fields of the published-row mapping (:func:`rlsim.frameworks.nemo_rl.recipe.scenario_from_recipe`, whose
docstring holds the mapping's table and the facts read), so that a recipe and a published row of it map alike.
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks import run_keys, sglang
from rlsim.frameworks.adapter import ImportConfigError, Row, Source
from rlsim.frameworks.common import DEFAULT_GPU, as_float, as_int, divisible, resolve_model
from rlsim.frameworks.nemo_rl.recipe import PROMPT_TOKENS, NotExpressible, scenario_from_recipe
from rlsim.workload import keep_prior
from rlsim.workload.priors import response_prior

VERSION_READ = "NeMo RL 81aa43d (v0.7.0)"
G = "grpo."
PO = "policy."
MG = "policy.megatron_cfg."
DT = "policy.dtensor_cfg."
GEN = "policy.generation."
V = "policy.generation.vllm_cfg."
S = "policy.generation.sglang_cfg."
SGLANG_VERSION = "0.5.12.post1"  # NeMo RL 7ea279a pyproject.toml: the sglang extra pins sglang==0.5.12.post1
COL = "policy.generation.colocated."
ASYNC = "grpo.async_grpo."
AR = "async_rl."  # the single-controller loop's section (NeMo RL's SC entry point reads it instead of async_grpo)

TABLE: tuple[Row, ...] = (
    Row(G + "num_prompts_per_step", 32, "workload.prompts_per_step", "P: prompts per step"),
    Row(G + "num_generations_per_prompt", 16, "workload.group_size", "G: responses per prompt (B = P x G)"),
    Row(PO + "train_global_batch_size", 512, "training.global_batch_size", "one optimizer step each; divides B"),
    Row(PO + "train_micro_batch_size", 4, "training.micro_batch_size", "sequences (packed: bins) per micro-batch"),
    Row(PO + "logprob_batch_size", None, "training.logprob_micro_batch_size", "log-prob passes; default mbs"),
    Row(PO + "max_total_sequence_length", 512, "training.packing_tokens", "bin size; and the response cap"),
    Row(PO + "sequence_packing.enabled", True, "training.sequence_packing", "false: padded micro-batches"),
    Row(PO + "dynamic_batching.enabled", False, "training.sequence_packing", "true: micro-batches by token budget"),
    Row(PO + "dynamic_batching.train_mb_tokens", None, "training.packing_tokens", "dynamic batching: tokens / mbs"),
    Row(PO + "model_name", None, "model", "a catalog name, alias or hf_id (Instruct: the base architecture)"),
    Row(MG + "enabled", False, "training.backend", "megatron; exactly one of it and dtensor_cfg.enabled"),
    Row(MG + "tensor_model_parallel_size", 1, "training.tensor_parallel_size", "Megatron TP"),
    Row(MG + "pipeline_model_parallel_size", 1, "training.pipeline_parallel_size", "Megatron PP"),
    Row(MG + "context_parallel_size", 1, "training.context_parallel_size", "Megatron CP"),
    Row(MG + "expert_model_parallel_size", 1, "training.expert_parallel_size", "Megatron EP"),
    Row(MG + "activation_checkpointing", False, "training.activation_recompute", "true -> full, false -> none"),
    Row(MG + "fp8_cfg.enabled", False, "training.precision", "true -> fp8"),
    Row(MG + "optimizer.lr", 5e-6, "learning.lr0", "Megatron; learning.reference_batch = B"),
    Row(MG + "optimizer.use_precision_aware_optimizer", True, "training.precision_aware_optimizer", "bf16 remainders"),
    Row(MG + "distributed_data_parallel_config.grad_reduce_in_fp32", False, "training.grad_reduce_in_fp32", "bf16"),
    Row(MG + "optimizer.optimizer_cpu_offload", False, "training.offload_optimizer", "Megatron-Core hybrid CPU Adam"),
    Row(MG + "optimizer.optimizer_offload_fraction", 0.0, "training.offload_optimizer_fraction", "its host share"),
    Row(DT + "enabled", True, "training.backend", "fsdp (FSDP2); TP or CP > 1: a Megatron layout, noted"),
    Row(DT + "tensor_parallel_size", 1, "training.tensor_parallel_size", "DTensor TP"),
    Row(DT + "context_parallel_size", 1, "training.context_parallel_size", "DTensor CP"),
    Row(DT + "activation_checkpointing", False, "training.activation_recompute", "true -> full, false -> none"),
    Row(DT + "cpu_offload", False, "training.offload_params, offload_optimizer", "FSDP2 CPU offload (fsdp layout)"),
    Row(DT + "lora_cfg.enabled", False, "training.lora_rank", "true: LoRA of rank lora_cfg.dim (DTensor)"),
    Row(DT + "lora_cfg.dim", 8, "training.lora_rank", "the adapters' rank"),
    Row(DT + "lora_cfg.match_all_linear", True, "training.lora_target_modules", "true: all-linear"),
    Row(DT + "lora_cfg.target_modules", [], "training.lora_target_modules", "without match_all_linear"),
    Row(PO + "optimizer.kwargs.lr", 5e-6, "learning.lr0", "DTensor; learning.reference_batch = B"),
    Row(GEN + "backend", "vllm", "engine.behaviour", "vllm -> vllm-v1; sglang -> sglang-0.5; others refused"),
    Row(GEN + "max_new_tokens", None, "workload.max_response_tokens", "cap: least of it, max_model_len - prompt"),
    Row(V + "tensor_parallel_size", 1, "engine.tensor_parallel_size", "vLLM TP per engine"),
    Row(V + "pipeline_parallel_size", 1, "engine", "> 1 refused (not modelled)"),
    Row(V + "gpu_memory_utilization", 0.6, "engine.gpu_memory_utilization", "vLLM's fraction of each GPU"),
    Row(V + "max_model_len", None, "workload.max_response_tokens", "default max_total_sequence_length"),
    Row(V + "async_engine", False, "engine.max_num_seqs, in_process", "128 AsyncLLM, 1024 LLM (in process)"),
    Row(GEN + "stop_strings", None, "engine.detokenize", "set: true; else the release's (v0.4.0: true)"),
    Row(V + "skip_tokenizer_init", None, "engine.detokenize", "false: true; else the release's (v0.4.0: true)"),
    Row(V + "precision", None, "engine.precision", "fp8 -> fp8, else bf16"),
    Row(V + "enforce_eager", False, "engine.enforce_eager", "true: no CUDA graphs (vllm_worker.py:397 at v0.4.0)"),
    Row(GEN + "vllm_kwargs.max_num_seqs", None, "engine.max_num_seqs", "else vLLM's default for the engine"),
    Row(S + "tp_size", 1, "engine.tensor_parallel_size", "backend sglang: TP per engine"),
    Row(S + "pp_size", 1, "engine", "backend sglang: > 1 refused (not modelled)"),
    Row(S + "dp_size", 1, "engine", "backend sglang: > 1 refused (not modelled)"),
    Row(S + "mem_fraction_static", None, "engine.gpu_memory_utilization", "backend sglang: weights + KV, no acts"),
    Row(S + "max_running_requests", None, "engine.max_num_seqs", "backend sglang: unset -> 4096 (SGLang's pool)"),
    Row(S + "context_length", None, "workload.max_response_tokens", "backend sglang: as vllm_cfg.max_model_len"),
    Row(COL + "enabled", True, "hardware.placement", "true: colocated, sync-colocated; false: separate"),
    Row(COL + "resources.gpus_per_node", None, "hardware.rollout_gpus", "one node: vLLM's GPUs of it"),
    Row(COL + "resources.num_nodes", None, "hardware.rollout_gpus", "several nodes: vLLM's whole nodes"),
    Row("cluster.gpus_per_node", 1, "hardware.num_gpus, hardware.gpus_per_node", "num_gpus = per node x nodes"),
    Row("cluster.num_nodes", 1, "hardware.num_gpus", "num_gpus = per node x nodes"),
    Row(ASYNC + "enabled", False, "schedule.mode", "true: async (colocated false); loss decoupled_ppo"),
    Row(ASYNC + "max_trajectory_age_steps", 1, "schedule.max_staleness", "k"),
    Row(ASYNC + "in_flight_weight_updates", False, "schedule.in_flight_weight_updates", "async only"),
    Row(AR + "sampler.name", None, "schedule.mode", "single controller: a gate of K versions -> async K; 0 -> sync"),
    Row(AR + "sampler.max_lookahead_versions", 1, "schedule.max_staleness", "in_order: K"),
    Row(AR + "sampler.max_staleness_versions", 1, "schedule.max_staleness", "ready_first, weight_fifo, windowed: K"),
    Row(AR + "min_groups_for_streaming_train", None, "(a note)", "below P: partial batches, not modelled"),
    Row(G + "use_dynamic_sampling", False, "algorithm.dynamic_sampling", "DAPO rounds; keep rate assumed 1/3"),
    Row(G + "batch_multiplier", 1, "algorithm.dynamic_sampling.batch_multiplier", "prompts per round / P"),
    Row(G + "dynamic_sampling_max_gen_batches", 10, "algorithm.dynamic_sampling.max_gen_batches", "round limit"),
    Row(G + "max_rollout_turns", 1, "(refused)", "> 1 refused: multi-turn rollouts"),
    Row("env.should_use_nemo_gym", False, "(a note)", "Nemo Gym's servers score: the CPU reward; judges unpriced"),
    Row(G + "adv_estimator.name", "grpo", "algorithm.name", "grpo, gdpo, reinforce_plus_plus: grpo; opd refused"),
    Row("loss_fn.reference_policy_kl_penalty", 0.01, "algorithm.kl_reference", "> 0: reference on host"),
    Row("loss_fn.force_on_policy_ratio", False, "(check)", "true needs train_global_batch_size = B"),
    Row("loss_fn.use_importance_sampling_correction", False, "(check)", "async needs it true (NeMo RL asserts)"),
    Row(G + "val_period", 10, "run.eval_every_steps", "> 0: validation every N steps"),
    Row(G + "val_at_start", False, "run.eval_at_start", "validation before the first step"),
    Row(G + "val_at_end", False, "run.eval_at_end", "validation after the last step"),
    Row(G + "max_val_samples", 256, "run.eval_prompts", "validation prompts, one response each"),
    Row("checkpointing.enabled", True, "run.checkpoint_every_steps", "false: no saves"),
    Row("checkpointing.save_period", 10, "run.checkpoint_every_steps", "a save every N steps and at the last"),
)


def _not_ppo(src: Source) -> None:
    """NeMo RL's PPO (``examples/run_ppo.py``, its ``ppo:`` section and a ``value:`` model) has a value model and its
    passes, which this GRPO mapping does not read: refused rather than read as GRPO with no critic."""
    if any(k.startswith("ppo.") for k in src.flat) and not any(k.startswith(G) for k in src.flat):
        value = src.flat.get("value.model_name")
        raise ImportConfigError(
            "this is a NeMo RL PPO config (a ppo: section" + (f", value model {value}" if value else "") + "); "
            "rlsim reads NeMo RL's GRPO (grpo:) configs: its PPO value model and passes are not mapped "
            "(verl's and OpenRLHF's PPO are)"
        )


def _generation_backend(src: Source) -> bool:
    """Whether generation is SGLang (else vLLM); multi-turn rollouts and backends or layouts not modelled refused."""
    if as_int(src, G + "max_rollout_turns") > 1:
        raise ImportConfigError(
            f"{G}max_rollout_turns: multi-turn rollouts are not modelled; --set {G}max_rollout_turns=1"
        )
    backend = src.get(GEN + "backend")
    if backend not in ("vllm", "sglang"):
        raise ImportConfigError(
            f"{GEN}backend: {backend!r} is not modelled (rlsim models vllm and sglang); --set {GEN}backend=vllm"
        )
    sg = backend == "sglang"
    if sg:
        for key in ("pp_size", "dp_size"):
            if src.given(S + key) and as_int(src, S + key) > 1:
                raise ImportConfigError(f"{S}{key}: > 1 is not modelled; --set {S}{key}=1")
    return sg


def _estimator(src: Source, notes: list[str]) -> None:
    """``grpo.adv_estimator.name`` (NVIDIA-NeMo/RL@v0.7.0 nemo_rl/algorithms/grpo.py:1803-1834): grpo, gdpo
    (per-reward normalization) and reinforce_plus_plus turn the scores into advantages on the driver, critic-free:
    the passes of grpo. opd (on-policy distillation) adds teacher models' log-prob passes on worker groups of their
    own, which rlsim does not model: refused."""
    name = src.get(G + "adv_estimator.name")
    known = ("grpo", "gdpo", "reinforce_plus_plus")
    if name == "opd":
        raise ImportConfigError(
            f"{G}adv_estimator.name: opd (on-policy distillation) runs teacher models' log-prob passes on GPUs of "
            "their own, which rlsim does not model; --set grpo.adv_estimator.name=grpo to price the student alone"
        )
    if name not in known:
        raise ImportConfigError(
            f"{G}adv_estimator.name: {name!r} is not one of NeMo RL v0.7.0's ({', '.join(known)}, opd)"
        )
    if name != "grpo":
        notes.append(f"{G}adv_estimator.name {name}: advantages on the driver, critic-free: the passes of grpo")
    if src.get("env.should_use_nemo_gym"):  # v0.7.0 examples/nemo_gym: responses through vLLM's HTTP server
        notes.append(
            "env.should_use_nemo_gym: Nemo Gym's resource servers score the responses, priced as the CPU reward "
            "(costs.reward_*); a judge model they call is not priced; turns as grpo.max_rollout_turns says"
        )


def _batch(src: Source) -> tuple[int, int, int]:
    """(P, G, train_global_batch_size), checked as NeMo RL checks them."""
    prompts, group = as_int(src, G + "num_prompts_per_step"), as_int(src, G + "num_generations_per_prompt")
    gbs = as_int(src, PO + "train_global_batch_size")
    divisible(
        f"{G}num_prompts_per_step x num_generations_per_prompt", prompts * group, PO + "train_global_batch_size", gbs
    )
    if src.get("loss_fn.force_on_policy_ratio") and gbs != prompts * group:
        raise ImportConfigError(
            f"loss_fn.force_on_policy_ratio: true needs {PO}train_global_batch_size ({gbs}) == "
            f"{G}num_prompts_per_step x num_generations_per_prompt ({prompts * group}) (NeMo RL asserts it); "
            "change one of them"
        )
    return prompts, group, gbs


def _staleness(src: Source, prompts: int, colocated: bool, notes: list[str]) -> tuple[bool, int]:
    """(async GRPO enabled, staleness K): async GRPO's or the single controller's K, 0 for a synchronous loop."""
    is_async = bool(src.get(ASYNC + "enabled"))
    staleness = as_int(src, ASYNC + "max_trajectory_age_steps") if is_async else 0
    single, sc_notes = _single_controller(src, prompts)
    notes += sc_notes
    if single is not None:
        if is_async:
            raise ImportConfigError(
                f"{ASYNC}enabled and {AR}sampler are both set; NeMo RL's single controller reads {AR} and refuses "
                f"{ASYNC[:-1]}: set it to null"
            )
        staleness = single
    if staleness and colocated:
        key = f"{ASYNC}enabled: true" if is_async else f"{AR}sampler (a gate of {staleness} version(s))"
        raise ImportConfigError(
            f"{key} with {COL}enabled: true is not modelled (rlsim's async schedule needs separate "
            f"generation and training GPUs); --set {COL}enabled=false with resources"
        )
    if is_async:  # grpo.py async_grpo_train asserts both
        for key in (V + "async_engine", "loss_fn.use_importance_sampling_correction"):
            if not src.get(key):
                raise ImportConfigError(
                    f"{ASYNC}enabled: true needs {key}: true (NeMo RL asserts it); --set {key}=true or "
                    f"{ASYNC}enabled=false"
                )
    return is_async, staleness


def _megatron_enabled(src: Source) -> bool:
    """Whether the policy trains with Megatron (else DTensor): exactly one of the two must be enabled."""
    megatron, dtensor = bool(src.get(MG + "enabled")), bool(src.get(DT + "enabled"))
    if megatron == dtensor:
        raise ImportConfigError(
            f"{MG}enabled ({megatron}) and {DT}enabled ({dtensor}): NeMo RL needs exactly one of them true; "
            "--set one to false"
        )
    return megatron


def _lengths(src: Source, sg: bool, prompt_tokens: int) -> tuple[int, int, int, int]:
    """(max_total_sequence_length, max_model_len, max_new_tokens, the response cap after the assumed prompt)."""
    max_seq = as_int(src, PO + "max_total_sequence_length")
    length_key = S + "context_length" if sg else V + "max_model_len"
    max_model_len = as_int(src, length_key) if src.given(length_key) else max_seq
    max_new = as_int(src, GEN + "max_new_tokens") if src.given(GEN + "max_new_tokens") else max_seq
    if as_int(src, V + "pipeline_parallel_size") > 1:
        raise ImportConfigError(
            f"{V}pipeline_parallel_size: vLLM pipeline parallelism is not modelled; --set {V}pipeline_parallel_size=1"
        )
    cap = min(max_new, max_model_len - prompt_tokens, max_seq - prompt_tokens)
    if cap < 2:
        raise ImportConfigError(
            f"{PO}max_total_sequence_length ({max_seq}) leaves no room for responses after the assumed "
            f"{prompt_tokens}-token prompts; raise it"
        )
    return max_seq, max_model_len, max_new, cap


def _optional_fields(
    src: Source, fields: dict[str, Any], max_seq: int, megatron: bool, is_async: bool, notes: list[str]
) -> None:
    """Adds to ``fields`` the recipe's optional settings: dynamic sampling and batching, engine and log-prob sizes."""
    if src.get(G + "use_dynamic_sampling"):
        fields.update(
            recipe_dynamic_sampling=True,
            recipe_batch_multiplier=as_float(src, G + "batch_multiplier"),
            recipe_dynamic_sampling_max_gen_batches=as_int(src, G + "dynamic_sampling_max_gen_batches"),
            keep_rate_assumed=True,
        )
        notes.append(keep_prior.note(f"{G}use_dynamic_sampling"))
    if src.get(PO + "dynamic_batching.enabled"):
        fields.update(_dynamic_batching(src, max_seq, megatron, notes))
    if src.given(GEN + "vllm_kwargs.max_num_seqs"):
        fields["recipe_max_num_seqs"] = as_int(src, GEN + "vllm_kwargs.max_num_seqs")
    if src.given(PO + "logprob_batch_size"):
        fields["recipe_logprob_batch_size"] = as_int(src, PO + "logprob_batch_size")
    if is_async:
        fields["recipe_in_flight_weight_updates"] = bool(src.get(ASYNC + "in_flight_weight_updates"))


def _train_fields(src: Source, megatron: bool) -> dict[str, Any]:
    """The training fields of the published mapping: Megatron's layout and settings, or DTensor's."""
    if megatron:
        return dict(
            train_backend="megatron",
            train_tp=as_int(src, MG + "tensor_model_parallel_size"),
            train_pp=as_int(src, MG + "pipeline_model_parallel_size"),
            train_cp=as_int(src, MG + "context_parallel_size"),
            train_ep=as_int(src, MG + "expert_model_parallel_size"),
            recipe_activation_checkpointing=bool(src.get(MG + "activation_checkpointing")),
            recipe_fp8_training=bool(src.get(MG + "fp8_cfg.enabled")),
            recipe_lr=as_float(src, MG + "optimizer.lr"),
            recipe_precision_aware_optimizer=bool(src.get(MG + "optimizer.use_precision_aware_optimizer")),
            recipe_grad_reduce_in_fp32=bool(src.get(MG + "distributed_data_parallel_config.grad_reduce_in_fp32")),
        )
    return dict(
        train_backend="dtensor",
        train_tp=as_int(src, DT + "tensor_parallel_size"),
        train_cp=as_int(src, DT + "context_parallel_size"),
        recipe_activation_checkpointing=bool(src.get(DT + "activation_checkpointing")),
        recipe_lr=as_float(src, PO + "optimizer.kwargs.lr"),
    )


def _sglang_engine(src: Source, raw: dict[str, Any], notes: list[str]) -> None:
    """Sets ``raw``'s engine and software sections to the SGLang engine NeMo RL's sglang_cfg starts."""
    if not src.given(S + "mem_fraction_static"):
        raise ImportConfigError(f"{S}mem_fraction_static is not set; give it (NeMo RL passes it to SGLang)")
    max_running = as_int(src, S + "max_running_requests") if src.given(S + "max_running_requests") else None
    raw["engine"], raw["software"], sg_notes = sglang.engine_section(
        as_int(src, S + "tp_size"),
        as_float(src, S + "mem_fraction_static"),
        max_running,
        SGLANG_VERSION,
        f"{GEN}backend sglang",
    )
    notes += sg_notes


def _cpu_offload(src: Source, raw: dict[str, Any], megatron: bool, notes: list[str]) -> None:
    """Sets ``raw``'s training offload for DTensor's cpu_offload (refused beyond the fsdp layout)."""
    if not megatron and src.get(DT + "cpu_offload"):
        # FSDP2's CPUOffloadPolicy keeps parameters, gradients and optimizer states on the host between uses
        if raw.get("training", {}).get("backend") != "fsdp":
            raise ImportConfigError(
                f"{DT}cpu_offload: true with DTensor TP or CP > 1 is not modelled (rlsim offloads its fsdp layout "
                "only); set it false or the DTensor parallel sizes to 1"
            )
        raw["training"].update(offload_params=True, offload_optimizer=True)
        notes.append(f"{DT}cpu_offload: parameters and optimizer states offloaded to the host (FSDP2)")
    if megatron and src.get(MG + "optimizer.optimizer_cpu_offload"):
        # Megatron-Core's HybridDeviceOptimizer; NeMo RL asserts a fraction of 1.0 (NVIDIA-NeMo/RL@v0.7.0
        # nemo_rl/models/megatron/setup.py:880-893; v0.6.0 :518-531; v0.5.0 megatron_policy_worker.py:713-724)
        fraction = as_float(src, MG + "optimizer.optimizer_offload_fraction")
        raw["training"].update(offload_optimizer=True, offload_optimizer_fraction=fraction)
        notes.append(f"{MG}optimizer.optimizer_cpu_offload: {fraction:.0%} of the optimizer state steps on the CPU")


def to_scenario(src: Source) -> tuple[dict[str, Any], list[str]]:
    """The scenario sections for a NeMo RL GRPO recipe YAML, and the assumptions made: its keys become the fields
    of :func:`scenario_from_recipe` (the published mapping)."""
    notes: list[str] = []
    _not_ppo(src)
    sg = _generation_backend(src)
    _estimator(src, notes)
    prompts, group, gbs = _batch(src)
    per_node, nodes = as_int(src, "cluster.gpus_per_node"), as_int(src, "cluster.num_nodes")
    colocated = bool(src.get(COL + "enabled"))
    gen_gpus, train_gpus = _pools(src, per_node, nodes, colocated)
    is_async, staleness = _staleness(src, prompts, colocated, notes)
    megatron = _megatron_enabled(src)
    model, model_notes = resolve_model(src.get(PO + "model_name"), PO + "model_name")
    notes += model_notes
    max_seq, max_model_len, max_new, cap = _lengths(src, sg, PROMPT_TOKENS)
    fields: dict[str, Any] = {
        "model": model,
        "gpu": DEFAULT_GPU,
        "num_gpus": per_node * nodes,
        "gpus_per_node": per_node,
        "colocated": colocated,
        "gen_gpus": gen_gpus,
        "train_gpus": train_gpus,
        "policy_mode": f"async-{staleness}off" if staleness else "on",
        "prompts_per_step": prompts,
        "gens_per_prompt": group,
        "avg_gen_len": response_prior(cap).mean_tokens,
        "avg_gen_len_source": f"assumed: the {response_prior(cap).note}; the recipe gives only the maximum",
        "recipe_max_total_sequence_length": max_seq,
        "recipe_max_model_len": max_model_len,
        "max_new_tokens": max_new,
        "gen_tp": as_int(src, S + "tp_size" if sg else V + "tensor_parallel_size"),
        "recipe_gpu_memory_utilization": as_float(src, V + "gpu_memory_utilization"),
        "recipe_vllm_async_engine": bool(src.get(V + "async_engine")),
        "recipe_detokenize": src.get(GEN + "stop_strings") is not None or src.get(V + "skip_tokenizer_init") is False,
        "recipe_fp8_generation": str(src.get(V + "precision")).lower() == "fp8",
        "recipe_train_global_batch_size": gbs,
        "recipe_train_micro_batch_size": as_int(src, PO + "train_micro_batch_size"),
        "recipe_sequence_packing": bool(src.get(PO + "sequence_packing.enabled")),
        "recipe_kl": as_float(src, "loss_fn.reference_policy_kl_penalty"),
    }
    if staleness and not is_async:  # the single controller's sampler, not async GRPO's prompt-group collector
        fields["recipe_async_collector"] = "batches"
    _optional_fields(src, fields, max_seq, megatron, is_async, notes)
    fields.update(_train_fields(src, megatron))
    try:
        raw = scenario_from_recipe(fields)
    except NotExpressible as exc:
        raise ImportConfigError(f"the recipe cannot be expressed: {exc}") from None
    for key in ("name", "description"):
        raw.pop(key, None)
    if sg:  # the engine NeMo RL's sglang_cfg starts (nemo_rl/models/generation/sglang at 7ea279a)
        _sglang_engine(src, raw, notes)
    elif src.get(V + "enforce_eager"):  # to vllm.LLM (v0.6.0:nemo_rl/models/generation/vllm/vllm_worker.py:554)
        raw["engine"]["enforce_eager"] = True
    notes += [f"{a} (as rlsim-calibrate published maps NeMo RL recipes)" for a in raw.pop("assumptions", [])]
    _cpu_offload(src, raw, megatron, notes)
    if not megatron and src.get(DT + "lora_cfg.enabled"):  # automodel/setup.py:663-672; the reference stays its own
        targets = src.get(DT + "lora_cfg.target_modules")
        every = src.get(DT + "lora_cfg.match_all_linear") or not targets
        raw["training"].update(
            lora_rank=as_int(src, DT + "lora_cfg.dim"),
            lora_target_modules="all-linear" if every else ",".join(map(str, targets)),
            lora_reference_in_base=False,
        )
    if run := run_keys.nemo_rl(src, notes):  # evaluation and checkpoints, beside the steps (rlsim.run.overheads)
        raw.setdefault("run", {}).update(run)
    return raw, notes


def _dynamic_batching(src: Source, max_seq: int, megatron: bool, notes: list[str]) -> dict[str, Any]:
    """``policy.dynamic_batching`` (nemo_rl/models/policy/lm_policy.py at 7ea279a): micro-batches of sequences
    sorted by length up to ``train_mb_tokens`` tokens each (default max_total_sequence_length x
    train_micro_batch_size), exclusive of sequence packing and of pipeline parallelism (NeMo RL asserts both). Priced
    as packed bins holding the same tokens per micro-batch; its padding of each sequence to a multiple of
    ``sequence_length_round`` is not priced."""
    if src.get(PO + "sequence_packing.enabled"):
        raise ImportConfigError(
            f"{PO}dynamic_batching.enabled and {PO}sequence_packing.enabled are both true; NeMo RL allows one "
            f"(lm_policy.py asserts it): --set {PO}sequence_packing.enabled=false"
        )
    if megatron and as_int(src, MG + "pipeline_model_parallel_size") > 1:
        raise ImportConfigError(
            f"{PO}dynamic_batching.enabled needs {MG}pipeline_model_parallel_size 1 (NeMo RL asserts it); change one"
        )
    micro = as_int(src, PO + "train_micro_batch_size")
    budget = (
        as_int(src, PO + "dynamic_batching.train_mb_tokens")
        if src.given(PO + "dynamic_batching.train_mb_tokens")
        else max_seq * micro
    )
    notes.append(
        f"{PO}dynamic_batching: micro-batches of up to {budget} tokens, priced as {micro} packed bin(s) of "
        f"{max(1, budget // micro)} tokens (the padding to sequence_length_round is not priced)"
    )
    return {"recipe_sequence_packing": True, "recipe_packing_tokens": max(1, budget // micro)}


GATED = {"in_order": "max_lookahead_versions", "ready_first": "max_staleness_versions"}
GATED |= {"weight_fifo": "max_staleness_versions", "windowed": "max_staleness_versions"}


def _single_controller(src: Source, prompts: int) -> tuple[int | None, list[str]]:
    """The staleness K of NeMo RL's single-controller loop (``async_rl``; nemo_rl/algorithms/async_utils/
    staleness_sampler.py at 7ea279a): in_order lets generation run ``max_lookahead_versions`` dispatch batches ahead
    of the trainer, ready_first and weight_fifo ``max_staleness_versions``; windowed never gates generation and
    drops groups older than ``max_staleness_versions`` (that surplus is not priced). K >= 1 is rlsim's async
    schedule with max_staleness K, 0 a synchronous one. None: the recipe has no ``async_rl`` section."""
    name = src.get(AR + "sampler.name")
    if name is None:
        return None, []
    if name not in GATED:
        raise ImportConfigError(
            f"{AR}sampler.name: {name!r} is not modelled (in_order, ready_first, weight_fifo, windowed are); a custom "
            "sampler's staleness is unknown to rlsim"
        )
    key = AR + "sampler." + GATED[name]
    k = src.get(key)
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ImportConfigError(f"{key}: {k!r} must be a whole number >= 0 (0: synchronous); fix it or --set it")
    notes = [f"{AR}sampler {name}, {GATED[name]} {k}: " + (f"async, max_staleness {k}" if k else "synchronous")]
    if name == "windowed":
        notes.append(
            f"{AR}sampler windowed: generation is not gated; groups older than {k} version(s) are dropped "
            "and their generation is not priced"
        )
    floor = src.get(AR + "min_groups_for_streaming_train")
    if isinstance(floor, int) and not isinstance(floor, bool) and floor < prompts:
        notes.append(
            f"{AR}min_groups_for_streaming_train {floor} < P {prompts}: the trainer may start on partial batches; "
            "rlsim trains on whole steps of P groups"
        )
    return k, notes


def _pools(src: Source, per_node: int, nodes: int, colocated: bool) -> tuple[int | None, int | None]:
    """(generation GPUs, training GPUs) of a non-colocated recipe, by NeMo RL's rules (grpo.py setup)."""
    if colocated:
        return None, None
    res_gpus_key, res_nodes_key = COL + "resources.gpus_per_node", COL + "resources.num_nodes"
    res_nodes = as_int(src, res_nodes_key) if src.given(res_nodes_key) else None
    if nodes == 1:
        if not src.given(res_gpus_key):
            raise ImportConfigError(
                f"{res_gpus_key}: not set; on one node (cluster.num_nodes 1) non-colocated generation needs it "
                f"(NeMo RL asserts it), e.g. --set {res_gpus_key}={max(1, per_node // 2)}"
            )
        gen = as_int(src, res_gpus_key)
        if res_nodes not in (None, 1):
            raise ImportConfigError(
                f"{res_nodes_key} ({res_nodes}) must be 1 or null when cluster.num_nodes is 1 (NeMo RL asserts it)"
            )
        if gen >= per_node:
            raise ImportConfigError(
                f"{res_gpus_key} ({gen}) must be less than cluster.gpus_per_node ({per_node}): training needs the "
                "rest of the node; change one of them"
            )
        return gen, per_node - gen
    if res_nodes is None:
        raise ImportConfigError(
            f"{res_nodes_key}: not set; with cluster.num_nodes {nodes} non-colocated generation takes whole nodes "
            f"(NeMo RL asserts it), e.g. --set {res_nodes_key}=1"
        )
    res_gpus = as_int(src, res_gpus_key) if src.given(res_gpus_key) else None
    if res_gpus != per_node:
        raise ImportConfigError(
            f"{res_gpus_key} ({res_gpus}) must equal cluster.gpus_per_node ({per_node}) when cluster.num_nodes > 1 "
            "(NeMo RL asserts it); change one of them"
        )
    if res_nodes >= nodes:
        raise ImportConfigError(
            f"{res_nodes_key} ({res_nodes}) must be less than cluster.num_nodes ({nodes}): training needs nodes "
            "of its own; change one of them"
        )
    return res_nodes * per_node, (nodes - res_nodes) * per_node
