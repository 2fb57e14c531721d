"""NeMo RL (NVIDIA-NeMo/RL, v0.5-v0.6) GRPO recipes as rlsim scenarios.

``scenario_from_recipe(fields)`` maps the fields of a NeMo RL GRPO performance recipe (as the published step-time
tables and ``calibrate/data/published/rl_step_times_dev.csv`` spell them) to a scenario mapping; a recipe rlsim
cannot express raises :class:`NotExpressible` with the reason. The same mapping serves a user's own NeMo RL runs:
put their recipe's fields in a CSV row with these columns.

Mapping (recipe field -> scenario field, and what NeMo RL does behind it, read at tags v0.5.0 / v0.6.0):

* model -> model (catalog name or alias)
* gpu -> hardware.gpu (a catalog name it contains; "H100" -> H100-SXM)
* num_gpus, colocated, gen_gpus, train_gpus -> hardware.num_gpus, placement, rollout_gpus, train_gpus (cluster and
  generation.colocated.resources)
* policy_mode on / async-Koff -> schedule sync-colocated or sync-separate / async, max_staleness K
  (grpo.async_grpo.max_trajectory_age_steps)
* prompts_per_step, gens_per_prompt -> workload.prompts_per_step, group_size (grpo.num_prompts_per_step,
  num_generations_per_prompt)
* avg_gen_len, max_seq_len -> workload.response_length: lognormal (sigma ``RESPONSE_SIGMA``) whose mean after
  clipping at max_seq_len - prompt is avg_gen_len (published mean only; the shape is an assumption)
* (none) -> workload.prompt_length: fixed ``PROMPT_TOKENS`` (OpenMathInstruct-2 prompts with the cot template
  (assumption))
* gen_tp -> engine.tensor_parallel_size (gen_pp > 1 is refused) (policy.generation.vllm_cfg)
* recipe_gpu_memory_utilization -> engine.gpu_memory_utilization (vllm_cfg.gpu_memory_utilization)
* recipe_max_num_seqs, recipe_vllm_async_engine -> engine.max_num_seqs: the recipe's, else vLLM's default for how
  NeMo RL builds the engine: 1024 for ``vllm.LLM`` (UsageContext.LLM_CLASS on >= 70 GiB GPUs,
  vllm/engine/arg_utils.py get_batch_defaults), 128 for ``AsyncLLM`` (NeMo RL passes no usage context:
  SchedulerConfig.DEFAULT_MAX_NUM_SEQS); async GRPO always uses the async engine (vllm_worker_async.py)
* recipe_fp8_generation -> engine.precision fp8 (vllm_cfg.precision)
* (always) -> engine.behaviour vllm-v1 (NeMo RL v0.5.0 pins vllm 0.11.2, v0.6.0 pins 0.17.1: the V1 engine)
* train_tp, train_pp, train_cp, train_ep -> training.backend megatron with these sizes, expert_tensor_parallel 1, no
  virtual stages (policy.megatron_cfg)
* train_gbs (recipe_train_global_batch_size) -> training.global_batch_size (one optimizer.step per global batch
  (megatron_policy_worker.py))
* recipe_max_total_sequence_length -> training.packing_tokens; micro_batch_size 1 (sequence packing bins of
  max_total_sequence_length x train_micro_batch_size (1 in every recipe))
* recipe_logprob_batch_size -> training.logprob_micro_batch_size (logprob_mb_tokens = max_total_sequence_length x
  logprob_batch_size)
* recipe_activation_checkpointing -> training.activation_recompute full / none (megatron setup:
  recompute_granularity full, uniform, 1 layer)
* recipe_fp8_training -> training.precision fp8 (megatron_cfg.fp8_cfg)
* recipe_kl > 0 -> algorithm.kl_reference, training.reference_on_host (the reference weights live in host memory and
  are swapped in (use_reference_model))
* (always) -> algorithm.recompute_old_logprob ("policy logprobs" forward pass every step)
* colocated -> weight_sync.offload_trainer (offload_before_refit / offload_after_refit around generation)
* (always) -> weight_sync.transfer broadcast (separate: packed_broadcast_producer(src=0), training rank 0 broadcasts
  the whole model; colocated: every rank exports full HF tensors (export_hf_weights) for its engine's slice)
* recipe_dynamic_sampling -> refused (DAPO repeats generation until the batch fills; rounds per step are not
  published)
* prompts_per_step empty -> refused (multi-turn agent rows publish no prompts x generations per step)
"""

from __future__ import annotations

import math
from typing import Any

from rlsim import catalog
from rlsim.errors import RlsimError
from rlsim.lengths import lognormal_mean_for_clipped_mean

PROMPT_TOKENS = 128  # assumption: math prompts of OpenMathInstruct-2 with NeMo RL's cot template
RESPONSE_SIGMA = 0.6  # assumption: standard deviation of log response length (one value for every row)
VLLM_LLM_CLASS_MAX_NUM_SEQS = 1024
VLLM_ASYNC_ENGINE_MAX_NUM_SEQS = 128


class NotExpressible(RlsimError, ValueError):
    """A recipe that rlsim cannot express as a fixed-batch GRPO step (the message says why)."""


def _num(fields: dict[str, Any], key: str, default: float | None = None) -> float | None:
    value = fields.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        raise NotExpressible(f"{key} = {value!r} is not a number") from None


def _flag(fields: dict[str, Any], key: str, default: bool = False) -> bool:
    value = fields.get(key)
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return default
    if isinstance(value, str):
        if value.strip().lower() in ("true", "1", "yes"):
            return True
        if value.strip().lower() in ("false", "0", "no"):
            return False
        raise NotExpressible(f"{key} = {value!r} is not true or false")
    return bool(value)


def _need(fields: dict[str, Any], key: str, why: str) -> float:
    value = _num(fields, key)
    if value is None:
        raise NotExpressible(f"no {key}: {why}")
    return value


def model_name(name: str) -> str:
    """The catalog entry for a published model name (exact name or alias)."""
    name = str(name).strip()
    try:
        return catalog.model(name)["name"]
    except KeyError:
        raise NotExpressible(f"model {name!r} is not in the catalog (add it to rlsim/catalog/models.yaml)") from None


def gpu_name(text: str) -> str:
    """The catalog GPU a published hardware string names ("DGX-H100 (H100 80GB)" -> H100-SXM)."""
    text = str(text)
    names = sorted(catalog.gpu_names(), key=len, reverse=True)
    for name in names:
        if name.lower() in text.lower():
            return name
    for name in names:
        stem = name.split("-")[0]
        if stem.lower() in text.lower() and len(stem) >= 3:
            return name
    raise NotExpressible(f"hardware {text!r} names no catalog GPU")


def scenario_from_recipe(fields: dict[str, Any], steps: int | None = None) -> dict[str, Any]:
    """A scenario mapping for one NeMo RL GRPO recipe (see the module docstring for the mapping)."""
    if _flag(fields, "recipe_dynamic_sampling"):
        raise NotExpressible(
            "dynamic sampling (DAPO) repeats generation until the batch fills; the generation rounds per step "
            "are not published"
        )
    prompts = _need(fields, "prompts_per_step", "multi-turn agent rows publish no prompts x generations per step")
    group = _need(fields, "gens_per_prompt", "the generations per prompt are not published")
    if (_num(fields, "gen_pp", 1) or 1) > 1:
        raise NotExpressible("vLLM pipeline parallelism (gen_pp > 1) is not modelled")
    num_gpus = int(_need(fields, "num_gpus", "the GPU count is needed"))
    max_seq = int(_num(fields, "recipe_max_total_sequence_length") or _need(fields, "max_seq_len", "needed"))
    avg_gen = _need(fields, "avg_gen_len", "the mean response length is needed")
    max_response = max_seq - PROMPT_TOKENS
    if not 0 < avg_gen < max_response:
        raise NotExpressible(f"avg_gen_len {avg_gen} must lie between 0 and max_seq_len - prompt ({max_response})")
    mode = str(fields.get("policy_mode", "on")).strip()
    colocated = _flag(fields, "colocated", True)
    if mode == "on":
        schedule: dict[str, Any] = {"mode": "sync-colocated" if colocated else "sync-separate"}
        async_engine = _flag(fields, "recipe_vllm_async_engine", False)
    elif mode.startswith("async-") and mode.endswith("off") and mode[6:-3].isdigit():
        if colocated:
            raise NotExpressible("async GRPO needs separate generation and training GPUs (colocated is true)")
        schedule = {"mode": "async", "max_staleness": int(mode[6:-3])}
        async_engine = True  # NeMo RL's async GRPO requires vllm_cfg.async_engine
    else:
        raise NotExpressible(f"policy_mode {mode!r} is neither 'on' nor 'async-<k>off'")
    hardware: dict[str, Any] = {"gpu": gpu_name(fields.get("gpu", "")), "num_gpus": num_gpus}
    if colocated:
        hardware["placement"] = "colocated"
    else:
        hardware.update(
            placement="separate",
            rollout_gpus=int(_need(fields, "gen_gpus", "separate pools need the generation GPU count")),
            train_gpus=int(_need(fields, "train_gpus", "separate pools need the training GPU count")),
        )
    max_num_seqs = _num(fields, "recipe_max_num_seqs")
    if max_num_seqs is None:
        max_num_seqs = VLLM_ASYNC_ENGINE_MAX_NUM_SEQS if async_engine else VLLM_LLM_CLASS_MAX_NUM_SEQS
    engine = {
        "tensor_parallel_size": int(_num(fields, "gen_tp", 1) or 1),
        "gpu_memory_utilization": _num(fields, "recipe_gpu_memory_utilization", 0.6),
        "max_num_seqs": int(max_num_seqs),
        "precision": "fp8" if _flag(fields, "recipe_fp8_generation") else "bf16",
        "behaviour": "vllm-v1",
    }
    gbs = _num(fields, "recipe_train_global_batch_size") or _num(fields, "train_gbs")
    training: dict[str, Any] = {
        "backend": "megatron",
        "tensor_parallel_size": int(_num(fields, "train_tp", 1) or 1),
        "pipeline_parallel_size": int(_num(fields, "train_pp", 1) or 1),
        "context_parallel_size": int(_num(fields, "train_cp", 1) or 1),
        "expert_parallel_size": int(_num(fields, "train_ep", 1) or 1),
        "micro_batch_size": 1,
        "sequence_packing": True,
        "packing_tokens": max_seq,
        "activation_recompute": "full" if _flag(fields, "recipe_activation_checkpointing") else "none",
        "precision": "fp8" if _flag(fields, "recipe_fp8_training") else "bf16",
        "distributed_optimizer": True,
    }
    if gbs is not None:
        training["global_batch_size"] = int(gbs)
    lp = _num(fields, "recipe_logprob_batch_size")
    if lp is not None:
        training["logprob_micro_batch_size"] = int(lp)
    kl = (_num(fields, "recipe_kl", 0.0) or 0.0) > 0
    training["reference_on_host"] = kl
    response_mean = lognormal_mean_for_clipped_mean(avg_gen, RESPONSE_SIGMA, max_response)
    model = model_name(fields.get("model", ""))
    out: dict[str, Any] = {
        "name": f"nemo-rl {model} {num_gpus}x{hardware['gpu']} {mode}",
        "description": str(fields.get("recipe", "")),
        "assumptions": [
            f"prompt length fixed at {PROMPT_TOKENS} tokens",
            f"response lengths lognormal, sigma {RESPONSE_SIGMA}, clipped at {max_response}, clipped mean "
            f"{avg_gen:.0f} (published)",
        ],
        "model": model,
        "hardware": hardware,
        "engine": engine,
        "workload": {
            "prompts_per_step": int(prompts),
            "group_size": int(group),
            "prompt_length": {"dist": "fixed", "tokens": PROMPT_TOKENS},
            "response_length": {"dist": "lognormal", "mean_tokens": response_mean, "sigma": RESPONSE_SIGMA},
            "max_prompt_tokens": PROMPT_TOKENS,
            "max_response_tokens": max_response,
        },
        "algorithm": {"name": "grpo", "kl_reference": kl, "recompute_old_logprob": True},
        "training": training,
        "weight_sync": {"transfer": "broadcast", "offload_trainer": colocated},
        "schedule": schedule,
    }
    if steps is not None:
        out["run"] = {"steps": steps}
    return out
