"""NeMo RL (NVIDIA-NeMo/RL) GRPO recipes as rlsim scenarios: the one mapping behind ``rlsim-calibrate published``
and ``rlsim import-config --format nemo-rl``.

``scenario_from_recipe(fields)`` maps the fields of a NeMo RL GRPO performance recipe (as the published step-time
tables and ``calibrate/data/published/rl_step_times_dev.csv`` spell them) to a scenario mapping; a recipe rlsim
cannot express raises :class:`NotExpressible` with the reason. ``to_scenario(source)`` (``rlsim import-config``)
reads a recipe YAML itself: ``read(path)`` follows its ``defaults:`` chain, ``resolve`` its ``${...}``
interpolations (both in :mod:`rlsim.frameworks.nemo_rl_recipe`), and the TABLE's keys become the same fields, so
both paths go through ``scenario_from_recipe`` (see "Recipe YAML" below).

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
  NeMo RL builds the engine: 1024 for ``vllm.LLM`` (UsageContext.LLM_CLASS on >= 70 GiB GPUs other than the
  A100, 256 elsewhere: vllm/engine/arg_utils.py get_batch_defaults at the pinned release, rlsim/catalog/
  software.yaml), 128 for ``AsyncLLM`` (NeMo RL passes no usage context:
  SchedulerConfig.DEFAULT_MAX_NUM_SEQS, and 2048 batched tokens per iteration, DEFAULT_MAX_NUM_BATCHED_TOKENS);
  async GRPO always uses the async engine (vllm_worker_async.py)
* recipe_fp8_generation -> engine.precision fp8 (vllm_cfg.precision)
* the recipe's tag (or source_version) -> software {framework nemo-rl, framework_version}: the release's pinned vLLM
  and its behaviour (rlsim/catalog/software.yaml: v0.5.0 pins vllm 0.11.2, v0.6.0 pins 0.17.1: the V1 engine,
  vllm-v1); without a version (a recipe YAML) engine.behaviour vllm-v1
* train_tp, train_pp, train_cp, train_ep -> training.backend megatron with these sizes, expert_tensor_parallel 1, no
  virtual stages (policy.megatron_cfg); recipe_expert_parallel_size (megatron_cfg.expert_model_parallel_size read
  from the recipe) wins over train_ep where the published table and the recipe disagree
* gpus_per_node -> hardware.gpus_per_node (cluster.gpus_per_node: 8 on DGX H100, 4 on a GB200 compute tray); the
  NVLink domain then follows from the catalog and hardware.multi_node_nvlink (NCCL 2.27.5, pinned by NeMo RL
  v0.5.0 and v0.6.0, turns multi-node NVLink on by itself: collectives between the trays of one GB200 rack ride
  NVLink, groups beyond the rack the NICs; docs/design.md "Topology")
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
* recipe_dynamic_sampling -> algorithm.dynamic_sampling (DAPO: generation rounds of recipe_batch_multiplier x P
  prompts until P groups pass the filter, at most recipe_dynamic_sampling_max_gen_batches (default 10); grpo.py
  dynamic_sampling at v0.5.0); its keep rate from a ``dynamic_sampling_keep_rate`` column, refused without one
  (no recipe or table publishes it)
* prompts_per_step empty -> refused (multi-turn agent rows publish no prompts x generations per step)

Optional fields, absent from the published rows (which then map as above), set by the recipe YAML import:
``train_backend`` dtensor (policy.dtensor_cfg: FSDP2, training.backend fsdp; with TP or CP > 1 a Megatron layout of
those sizes, noted), ``recipe_train_micro_batch_size`` (micro_batch_size; default 1), ``recipe_sequence_packing``
(false: padded micro-batches of that many sequences), ``max_new_tokens`` and ``recipe_max_model_len`` (the
response cap is the least of max_new_tokens and max_model_len - prompt), ``recipe_in_flight_weight_updates``
(schedule.in_flight_weight_updates), ``gpus_per_node`` (hardware.gpus_per_node) and ``recipe_lr`` (learning.lr0 at
reference_batch P x G).

Recipe YAML (``rlsim import-config --format nemo-rl``), read at NVIDIA-NeMo/RL v0.7.0 (commit
81aa43dda4765b0429cf31dab44441e4e4383911): a recipe names its parent in ``defaults:`` (a path relative to the
recipe's directory, or a list of them; ``nemo_rl/utils/config.py`` load_config_with_inheritance): parents merge
first, in order, the child wins key by key, a section marked ``_override_: true`` replaces the parent's section
whole. ``${a.b}`` interpolations and the ``mul`` / ``div`` / ``max`` resolvers NeMo RL registers are resolved after
``--set`` (so an override of ``policy.max_total_sequence_length`` moves every key that refers to it). The TABLE's
defaults are the values of ``examples/configs/grpo_math_1B.yaml`` at that commit (NeMo RL configs spell every key;
the base recipe is where the performance recipes' chains end). Facts from that commit:

* ``nemo_rl/algorithms/grpo.py`` setup: colocated generation shares all ``cluster.gpus_per_node x num_nodes`` GPUs;
  non-colocated on one node takes ``generation.colocated.resources.gpus_per_node`` GPUs for vLLM (resources.num_nodes
  null or 1) and leaves the rest for training; on several nodes ``resources.num_nodes`` whole nodes
  (``resources.gpus_per_node`` must equal ``cluster.gpus_per_node``) and the other nodes train. It asserts
  ``force_on_policy_ratio`` only with train_global_batch_size == num_prompts_per_step x num_generations_per_prompt.
* ``grpo.py`` async_grpo_train asserts ``vllm_cfg.async_engine`` and ``loss_fn.use_importance_sampling_correction``.
* ``nemo_rl/models/policy/lm_policy.py``: exactly one of ``megatron_cfg.enabled`` / ``dtensor_cfg.enabled``.
* ``nemo_rl/models/policy/workers/dtensor_policy_worker.py`` train: one optimizer step per global batch of
  ``train_global_batch_size`` (the remainder of P x G is dropped; rlsim refuses a non-divisor).
* ``nemo_rl/models/generation/vllm/vllm_worker.py``: ``policy.generation.vllm_kwargs`` go to the vLLM engine
  (``max_num_seqs`` there is engine.max_num_seqs).
"""

from __future__ import annotations

import math
import re
from typing import Any

from rlsim import catalog, software
from rlsim.errors import RlsimError
from rlsim.frameworks.config_import import (
    DEFAULT_GPU,
    ImportConfigError,
    Row,
    Source,
    as_float,
    as_int,
    divisible,
    resolve_model,
)
from rlsim.frameworks.nemo_rl_recipe import read, resolve  # noqa: F401  (import-config calls them on this module)
from rlsim.lengths import lognormal_mean_for_clipped_mean

PROMPT_TOKENS = 128  # assumption: math prompts of OpenMathInstruct-2 with NeMo RL's cot template
RESPONSE_SIGMA = 0.6  # assumption: standard deviation of log response length (one value for every row)
VLLM_ASYNC_ENGINE_MAX_NUM_SEQS = 128
# AsyncLLM built without a usage context takes SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS (vllm/config/
# scheduler.py in 0.11.2 and 0.17.1); the LLM class gets 16384 on >= 70 GiB GPUs (the vllm-v1 behaviour's default)
VLLM_ASYNC_ENGINE_MAX_NUM_BATCHED_TOKENS = 2048


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
    dynamic = _dynamic_sampling(fields)
    prompts = _need(fields, "prompts_per_step", "multi-turn agent rows publish no prompts x generations per step")
    group = _need(fields, "gens_per_prompt", "the generations per prompt are not published")
    if (_num(fields, "gen_pp", 1) or 1) > 1:
        raise NotExpressible("vLLM pipeline parallelism (gen_pp > 1) is not modelled")
    num_gpus = int(_need(fields, "num_gpus", "the GPU count is needed"))
    max_seq = int(_num(fields, "recipe_max_total_sequence_length") or _need(fields, "max_seq_len", "needed"))
    avg_gen = _need(fields, "avg_gen_len", "the mean response length is needed")
    max_model_len = int(_num(fields, "recipe_max_model_len") or max_seq)
    max_response = min(max_seq, max_model_len) - PROMPT_TOKENS
    max_new = _num(fields, "max_new_tokens")
    if max_new is not None:
        max_response = min(max_response, int(max_new))
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
        if fields.get("recipe_in_flight_weight_updates") is not None:
            schedule["in_flight_weight_updates"] = _flag(fields, "recipe_in_flight_weight_updates")
        async_engine = True  # NeMo RL's async GRPO requires vllm_cfg.async_engine
    else:
        raise NotExpressible(f"policy_mode {mode!r} is neither 'on' nor 'async-<k>off'")
    hardware: dict[str, Any] = {"gpu": gpu_name(fields.get("gpu", "")), "num_gpus": num_gpus}
    if _num(fields, "gpus_per_node") is not None:
        hardware["gpus_per_node"] = int(_num(fields, "gpus_per_node"))  # type: ignore[arg-type]
    if colocated:
        hardware["placement"] = "colocated"
    else:
        hardware.update(
            placement="separate",
            rollout_gpus=int(_need(fields, "gen_gpus", "separate pools need the generation GPU count")),
            train_gpus=int(_need(fields, "train_gpus", "separate pools need the training GPU count")),
        )
    version = framework_version(fields)
    max_num_seqs = _num(fields, "recipe_max_num_seqs")
    if max_num_seqs is None:
        max_num_seqs = (
            VLLM_ASYNC_ENGINE_MAX_NUM_SEQS if async_engine else llm_class_max_num_seqs(version, hardware["gpu"])
        )
    engine: dict[str, Any] = {
        "tensor_parallel_size": int(_num(fields, "gen_tp", 1) or 1),
        "gpu_memory_utilization": _num(fields, "recipe_gpu_memory_utilization", 0.6),
        "max_num_seqs": int(max_num_seqs),
        "precision": "fp8" if _flag(fields, "recipe_fp8_generation") else "bf16",
    }
    if version is None:
        engine["behaviour"] = "vllm-v1"
    if async_engine:
        engine["max_num_batched_tokens"] = VLLM_ASYNC_ENGINE_MAX_NUM_BATCHED_TOKENS
    gbs = _num(fields, "recipe_train_global_batch_size") or _num(fields, "train_gbs")
    notes: list[str] = []
    training = _training(fields, max_seq, notes)
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
            f"{avg_gen:.0f} ({fields.get('avg_gen_len_source') or 'published'})",
            *notes,
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
    if version is not None:  # the release's pinned vLLM and its behaviours (rlsim/catalog/software.yaml)
        out["software"] = {"framework": "nemo-rl", "framework_version": version, "engine": "vllm"}
    if dynamic is not None:
        out["algorithm"]["dynamic_sampling"] = dynamic
    lr = _num(fields, "recipe_lr")
    if lr is not None:
        out["learning"] = {"lr0": lr, "reference_batch": int(prompts) * int(group)}
    if steps is not None:
        out["run"] = {"steps": steps}
    return out


def llm_class_max_num_seqs(version: str | None, gpu: str, memory_bytes: float | None = None) -> int:
    """``vllm.LLM``'s max_num_seqs at the vLLM release NeMo RL ``version`` pins, on ``gpu`` (rlsim.software)."""
    engine_version = software.pinned_engine_version("nemo-rl", version)
    return software.batch_defaults(engine_version, "llm_class", gpu, memory_bytes)["max_num_seqs"]


def framework_version(fields: dict[str, Any]) -> str | None:
    """The NeMo RL release of a row: the recipe's tag (``NVIDIA-NeMo/RL@v0.5.0:...``), else the table's
    ``source_version`` (``NeMo RL v0.6 perf table`` -> 0.6), else None (a recipe YAML: vLLM V1 assumed)."""
    m = re.search(r"@v(\d+\.\d+(?:\.\d+)?)", str(fields.get("recipe") or ""))
    if m is None:
        m = re.search(r"NeMo RL v(\d+\.\d+(?:\.\d+)?)", str(fields.get("source_version") or ""))
    return m.group(1) if m else None


def _dynamic_sampling(fields: dict[str, Any]) -> dict[str, Any] | None:
    """``algorithm.dynamic_sampling`` of a DAPO row (recipe_dynamic_sampling): the recipe's batch_multiplier and
    dynamic_sampling_max_gen_batches, and the filter's keep rate, which no recipe or table publishes (it depends on
    the data and the model): a ``dynamic_sampling_keep_rate`` column, or the row is refused naming it. The import
    of a recipe YAML leaves it for ``--scenario-set algorithm.dynamic_sampling.keep_rate=R``."""
    if not _flag(fields, "recipe_dynamic_sampling"):
        return None
    out: dict[str, Any] = {
        "batch_multiplier": _num(fields, "recipe_batch_multiplier") or 1.0,
        "max_gen_batches": int(_num(fields, "recipe_dynamic_sampling_max_gen_batches") or 10),
    }
    keep = _num(fields, "dynamic_sampling_keep_rate")
    if keep is not None:
        out["keep_rate"] = keep
    elif not fields.get("keep_rate_from_scenario_set"):
        raise NotExpressible(
            "dynamic sampling (DAPO): the filter's keep rate (prompt groups with reward std > 0) is not published; "
            "add a dynamic_sampling_keep_rate column (NeMo RL logs dynamic_sampling_num_gen_batches)"
        )
    return out


def _training(fields: dict[str, Any], max_seq: int, notes: list[str]) -> dict[str, Any]:
    """The ``training`` section: Megatron (the published recipes) or DTensor (FSDP2) with the recipe's sizes."""
    packing = _flag(fields, "recipe_sequence_packing", True)
    micro = int(_num(fields, "recipe_train_micro_batch_size", 1) or 1)
    tp, cp = int(_num(fields, "train_tp", 1) or 1), int(_num(fields, "train_cp", 1) or 1)
    common: dict[str, Any] = {
        "micro_batch_size": micro,
        "sequence_packing": packing,
        "activation_recompute": "full" if _flag(fields, "recipe_activation_checkpointing") else "none",
        "precision": "fp8" if _flag(fields, "recipe_fp8_training") else "bf16",
        "distributed_optimizer": True,
    }
    if packing:
        common["packing_tokens"] = max_seq
    backend = str(fields.get("train_backend") or "megatron").strip()
    if backend == "dtensor" and tp == cp == 1:
        return {"backend": "fsdp", **common}
    if backend == "dtensor":
        notes.append(
            f"DTensor TP {tp} x CP {cp} simulated as a Megatron layout of those sizes (rlsim's fsdp is DP only)"
        )
    elif backend != "megatron":
        raise NotExpressible(f"train_backend {backend!r} is neither megatron nor dtensor")
    return {
        "backend": "megatron",
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": int(_num(fields, "train_pp", 1) or 1),
        "context_parallel_size": cp,
        # the recipe's size where a row carries it (what ran; a table cell can disagree), else the table's
        "expert_parallel_size": int(_num(fields, "recipe_expert_parallel_size") or _num(fields, "train_ep", 1) or 1),
        **common,
    }


# ------------------------------------------------------------------------------------------- recipe YAML import

VERSION_READ = "NeMo RL 81aa43d (v0.7.0)"
G = "grpo."
PO = "policy."
MG = "policy.megatron_cfg."
DT = "policy.dtensor_cfg."
GEN = "policy.generation."
V = "policy.generation.vllm_cfg."
COL = "policy.generation.colocated."
ASYNC = "grpo.async_grpo."
RESPONSE_MEAN_FRACTION = 0.5  # assumption: the clipped mean response length, as a fraction of the cap

TABLE: tuple[Row, ...] = (
    Row(G + "num_prompts_per_step", 32, "workload.prompts_per_step", "P: prompts per step"),
    Row(G + "num_generations_per_prompt", 16, "workload.group_size", "G: responses per prompt (B = P x G)"),
    Row(PO + "train_global_batch_size", 512, "training.global_batch_size", "one optimizer step each; divides B"),
    Row(PO + "train_micro_batch_size", 4, "training.micro_batch_size", "sequences (packed: bins) per micro-batch"),
    Row(PO + "logprob_batch_size", None, "training.logprob_micro_batch_size", "log-prob passes; default mbs"),
    Row(PO + "max_total_sequence_length", 512, "training.packing_tokens", "bin size; and the response cap"),
    Row(PO + "sequence_packing.enabled", True, "training.sequence_packing", "false: padded micro-batches"),
    Row(PO + "model_name", None, "model", "a catalog name, alias or hf_id (Instruct: the base architecture)"),
    Row(MG + "enabled", False, "training.backend", "megatron; exactly one of it and dtensor_cfg.enabled"),
    Row(MG + "tensor_model_parallel_size", 1, "training.tensor_parallel_size", "Megatron TP"),
    Row(MG + "pipeline_model_parallel_size", 1, "training.pipeline_parallel_size", "Megatron PP"),
    Row(MG + "context_parallel_size", 1, "training.context_parallel_size", "Megatron CP"),
    Row(MG + "expert_model_parallel_size", 1, "training.expert_parallel_size", "Megatron EP"),
    Row(MG + "activation_checkpointing", False, "training.activation_recompute", "true -> full, false -> none"),
    Row(MG + "fp8_cfg.enabled", False, "training.precision", "true -> fp8"),
    Row(MG + "optimizer.lr", 5e-6, "learning.lr0", "Megatron; learning.reference_batch = B"),
    Row(DT + "enabled", True, "training.backend", "fsdp (FSDP2); TP or CP > 1: a Megatron layout, noted"),
    Row(DT + "tensor_parallel_size", 1, "training.tensor_parallel_size", "DTensor TP"),
    Row(DT + "context_parallel_size", 1, "training.context_parallel_size", "DTensor CP"),
    Row(DT + "activation_checkpointing", False, "training.activation_recompute", "true -> full, false -> none"),
    Row(PO + "optimizer.kwargs.lr", 5e-6, "learning.lr0", "DTensor; learning.reference_batch = B"),
    Row(GEN + "backend", "vllm", "engine.behaviour", "vllm -> vllm-v1; others refused"),
    Row(GEN + "max_new_tokens", None, "workload.max_response_tokens", "cap: least of it, max_model_len - prompt"),
    Row(V + "tensor_parallel_size", 1, "engine.tensor_parallel_size", "vLLM TP per engine"),
    Row(V + "pipeline_parallel_size", 1, "engine", "> 1 refused (not modelled)"),
    Row(V + "gpu_memory_utilization", 0.6, "engine.gpu_memory_utilization", "vLLM's fraction of each GPU"),
    Row(V + "max_model_len", None, "workload.max_response_tokens", "default max_total_sequence_length"),
    Row(V + "async_engine", False, "engine.max_num_seqs", "vLLM default: 128 AsyncLLM, 1024 LLM"),
    Row(V + "precision", None, "engine.precision", "fp8 -> fp8, else bf16"),
    Row(GEN + "vllm_kwargs.max_num_seqs", None, "engine.max_num_seqs", "else vLLM's default for the engine"),
    Row(COL + "enabled", True, "hardware.placement", "true: colocated, sync-colocated; false: separate"),
    Row(COL + "resources.gpus_per_node", None, "hardware.rollout_gpus", "one node: vLLM's GPUs of it"),
    Row(COL + "resources.num_nodes", None, "hardware.rollout_gpus", "several nodes: vLLM's whole nodes"),
    Row("cluster.gpus_per_node", 1, "hardware.num_gpus, hardware.gpus_per_node", "num_gpus = per node x nodes"),
    Row("cluster.num_nodes", 1, "hardware.num_gpus", "num_gpus = per node x nodes"),
    Row(ASYNC + "enabled", False, "schedule.mode", "true: async (needs colocated false)"),
    Row(ASYNC + "max_trajectory_age_steps", 1, "schedule.max_staleness", "k"),
    Row(ASYNC + "in_flight_weight_updates", False, "schedule.in_flight_weight_updates", "async only"),
    Row(G + "use_dynamic_sampling", False, "algorithm.dynamic_sampling", "DAPO rounds; keep rate: --scenario-set"),
    Row(G + "batch_multiplier", 1, "algorithm.dynamic_sampling.batch_multiplier", "prompts per round / P"),
    Row(G + "dynamic_sampling_max_gen_batches", 10, "algorithm.dynamic_sampling.max_gen_batches", "round limit"),
    Row(G + "max_rollout_turns", 1, "(refused)", "> 1 refused: multi-turn rollouts"),
    Row("loss_fn.reference_policy_kl_penalty", 0.01, "algorithm.kl_reference", "> 0: reference on host"),
    Row("loss_fn.force_on_policy_ratio", False, "(check)", "true needs train_global_batch_size = B"),
    Row("loss_fn.use_importance_sampling_correction", False, "(check)", "async needs it true (NeMo RL asserts)"),
)


def to_scenario(src: Source) -> tuple[dict[str, Any], list[str]]:
    """The scenario sections for a NeMo RL GRPO recipe YAML, and the assumptions made: its keys become the fields
    of :func:`scenario_from_recipe` (the published mapping)."""
    notes: list[str] = []
    if as_int(src, G + "max_rollout_turns") > 1:
        raise ImportConfigError(
            f"{G}max_rollout_turns: multi-turn rollouts are not modelled; --set {G}max_rollout_turns=1"
        )
    backend = src.get(GEN + "backend")
    if backend != "vllm":
        raise ImportConfigError(
            f"{GEN}backend: {backend!r} is not modelled (rlsim models vLLM); --set {GEN}backend=vllm"
        )
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
    per_node, nodes = as_int(src, "cluster.gpus_per_node"), as_int(src, "cluster.num_nodes")
    colocated = bool(src.get(COL + "enabled"))
    gen_gpus, train_gpus = _pools(src, per_node, nodes, colocated)
    is_async = bool(src.get(ASYNC + "enabled"))
    if is_async and colocated:
        raise ImportConfigError(
            f"{ASYNC}enabled: true with {COL}enabled: true is not modelled (rlsim's async schedule needs separate "
            f"generation and training GPUs); --set {COL}enabled=false with resources, or {ASYNC}enabled=false"
        )
    if is_async:  # grpo.py async_grpo_train asserts both
        for key in (V + "async_engine", "loss_fn.use_importance_sampling_correction"):
            if not src.get(key):
                raise ImportConfigError(
                    f"{ASYNC}enabled: true needs {key}: true (NeMo RL asserts it); --set {key}=true or "
                    f"{ASYNC}enabled=false"
                )
    megatron, dtensor = bool(src.get(MG + "enabled")), bool(src.get(DT + "enabled"))
    if megatron == dtensor:
        raise ImportConfigError(
            f"{MG}enabled ({megatron}) and {DT}enabled ({dtensor}): NeMo RL needs exactly one of them true; "
            "--set one to false"
        )
    model, model_notes = resolve_model(src.get(PO + "model_name"), PO + "model_name")
    notes += model_notes
    max_seq = as_int(src, PO + "max_total_sequence_length")
    max_model_len = as_int(src, V + "max_model_len") if src.given(V + "max_model_len") else max_seq
    max_new = as_int(src, GEN + "max_new_tokens") if src.given(GEN + "max_new_tokens") else max_seq
    if as_int(src, V + "pipeline_parallel_size") > 1:
        raise ImportConfigError(
            f"{V}pipeline_parallel_size: vLLM pipeline parallelism is not modelled; --set {V}pipeline_parallel_size=1"
        )
    cap = min(max_new, max_model_len - PROMPT_TOKENS, max_seq - PROMPT_TOKENS)
    if cap < 2:
        raise ImportConfigError(
            f"{PO}max_total_sequence_length ({max_seq}) leaves no room for responses after the assumed "
            f"{PROMPT_TOKENS}-token prompts; raise it"
        )
    fields: dict[str, Any] = {
        "model": model,
        "gpu": DEFAULT_GPU,
        "num_gpus": per_node * nodes,
        "gpus_per_node": per_node,
        "colocated": colocated,
        "gen_gpus": gen_gpus,
        "train_gpus": train_gpus,
        "policy_mode": f"async-{as_int(src, ASYNC + 'max_trajectory_age_steps')}off" if is_async else "on",
        "prompts_per_step": prompts,
        "gens_per_prompt": group,
        "avg_gen_len": RESPONSE_MEAN_FRACTION * cap,
        "avg_gen_len_source": f"assumed: {RESPONSE_MEAN_FRACTION:g} x the cap; the recipe gives only the maximum",
        "recipe_max_total_sequence_length": max_seq,
        "recipe_max_model_len": max_model_len,
        "max_new_tokens": max_new,
        "gen_tp": as_int(src, V + "tensor_parallel_size"),
        "recipe_gpu_memory_utilization": as_float(src, V + "gpu_memory_utilization"),
        "recipe_vllm_async_engine": bool(src.get(V + "async_engine")),
        "recipe_fp8_generation": str(src.get(V + "precision")).lower() == "fp8",
        "recipe_train_global_batch_size": gbs,
        "recipe_train_micro_batch_size": as_int(src, PO + "train_micro_batch_size"),
        "recipe_sequence_packing": bool(src.get(PO + "sequence_packing.enabled")),
        "recipe_kl": as_float(src, "loss_fn.reference_policy_kl_penalty"),
    }
    if src.get(G + "use_dynamic_sampling"):
        fields.update(
            recipe_dynamic_sampling=True,
            recipe_batch_multiplier=as_float(src, G + "batch_multiplier"),
            recipe_dynamic_sampling_max_gen_batches=as_int(src, G + "dynamic_sampling_max_gen_batches"),
            keep_rate_from_scenario_set=True,
        )
        notes.append(
            f"{G}use_dynamic_sampling: the filter's keep rate is data-dependent and not in the recipe; "
            "--scenario-set algorithm.dynamic_sampling.keep_rate=R (fraction of prompt groups with reward std > 0)"
        )
    if src.given(GEN + "vllm_kwargs.max_num_seqs"):
        fields["recipe_max_num_seqs"] = as_int(src, GEN + "vllm_kwargs.max_num_seqs")
    if src.given(PO + "logprob_batch_size"):
        fields["recipe_logprob_batch_size"] = as_int(src, PO + "logprob_batch_size")
    if is_async:
        fields["recipe_in_flight_weight_updates"] = bool(src.get(ASYNC + "in_flight_weight_updates"))
    if megatron:
        fields.update(
            train_backend="megatron",
            train_tp=as_int(src, MG + "tensor_model_parallel_size"),
            train_pp=as_int(src, MG + "pipeline_model_parallel_size"),
            train_cp=as_int(src, MG + "context_parallel_size"),
            train_ep=as_int(src, MG + "expert_model_parallel_size"),
            recipe_activation_checkpointing=bool(src.get(MG + "activation_checkpointing")),
            recipe_fp8_training=bool(src.get(MG + "fp8_cfg.enabled")),
            recipe_lr=as_float(src, MG + "optimizer.lr"),
        )
    else:
        fields.update(
            train_backend="dtensor",
            train_tp=as_int(src, DT + "tensor_parallel_size"),
            train_cp=as_int(src, DT + "context_parallel_size"),
            recipe_activation_checkpointing=bool(src.get(DT + "activation_checkpointing")),
            recipe_lr=as_float(src, PO + "optimizer.kwargs.lr"),
        )
    try:
        raw = scenario_from_recipe(fields)
    except NotExpressible as exc:
        raise ImportConfigError(f"the recipe cannot be expressed: {exc}") from None
    for key in ("name", "description"):
        raw.pop(key, None)
    notes += [f"{a} (as rlsim-calibrate published maps NeMo RL recipes)" for a in raw.pop("assumptions", [])]
    return raw, notes


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
