"""NeMo RL (NVIDIA-NeMo/RL) GRPO recipes as rlsim scenarios: the one mapping behind ``rlsim-calibrate published``
and ``rlsim import-config --format nemo-rl``.

``scenario_from_recipe(fields)`` maps the fields of a NeMo RL GRPO performance recipe (as the published step-time
tables and ``calibrate/published/data/rl_step_times_dev.csv`` spell them) to a scenario mapping; a recipe rlsim
cannot express raises :class:`NotExpressible` with the reason. ``to_scenario(source)`` (``rlsim import-config``)
reads a recipe YAML itself: ``read(path)`` follows its ``defaults:`` chain, ``resolve`` its ``${...}``
interpolations (both in :mod:`rlsim.frameworks.nemo_rl.recipe_yaml`), and the TABLE's keys become the same fields, so
both paths go through ``scenario_from_recipe`` (see "Recipe YAML" below).

Mapping (recipe field -> scenario field, and what NeMo RL does behind it, read at tags v0.4.0 / v0.5.0 / v0.6.0):

* model -> model (catalog name or alias)
* gpu -> hardware.gpu (a catalog name it contains; "H100" -> H100-SXM)
* num_gpus, colocated, gen_gpus, train_gpus -> hardware.num_gpus, placement, rollout_gpus, train_gpus (cluster and
  generation.colocated.resources)
* policy_mode on / async-Koff -> schedule sync-colocated or sync-separate / async, max_staleness K
  (grpo.async_grpo.max_trajectory_age_steps), collector prompt_groups (AsyncTrajectoryCollector: rlsim.run.collector)
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
* recipe_vllm_async_engine false -> engine.in_process (vllm.LLM's engine core in the worker's process:
  VLLM_ENABLE_V1_MULTIPROCESSING=0); recipe_detokenize (stop_strings, or vllm_cfg.skip_tokenizer_init false) ->
  engine.detokenize true, else the release's choice (software.yaml ``detokenize``: forced on at v0.4.0)
* the recipe's tag (or source_version) -> software {framework nemo-rl, framework_version}: the release's pinned vLLM,
  its behaviour and the release's own behaviours (rlsim/catalog/software.yaml: v0.4.0 pins vllm 0.10.0, piecewise
  decode graphs, and moves the optimizer to host every step; v0.5.0 pins 0.11.2; v0.6.0 pins 0.17.1, async
  scheduling on TP 1 engines); without a version (a recipe YAML) engine.behaviour vllm-v1
* train_tp, train_pp, train_cp, train_ep -> training.backend megatron with these sizes, expert_tensor_parallel 1, no
  virtual stages (policy.megatron_cfg); recipe_expert_parallel_size (megatron_cfg.expert_model_parallel_size read
  from the recipe) wins over train_ep where the published table and the recipe disagree
* gpus_per_node -> hardware.gpus_per_node (cluster.gpus_per_node: 8 on DGX H100, 4 on a GB200 compute tray); the
  NVLink domain then follows from hardware.multi_node_nvlink, left unset: collectives between GB200 trays ride
  their NICs (NCCL 2.27.5 uses multi-node NVLink only with the fabric's IMEX channels in the job and cuMem on, which
  neither release's launch sets up; the published GB200 rows behave so: docs/design.md "Topology")
* train_gbs (recipe_train_global_batch_size) -> training.global_batch_size (one optimizer.step per global batch
  (megatron_policy_worker.py))
* recipe_max_total_sequence_length -> training.packing_tokens; micro_batch_size 1 (sequence packing bins of
  max_total_sequence_length x train_micro_batch_size (1 in every recipe))
* recipe_logprob_batch_size -> training.logprob_micro_batch_size (logprob_mb_tokens = max_total_sequence_length x
  logprob_batch_size)
* recipe_activation_checkpointing -> training.activation_recompute full / none (megatron setup:
  recompute_granularity full, uniform, 1 layer)
* recipe_fp8_training -> training.precision fp8 (megatron_cfg.fp8_cfg)
* recipe_grad_reduce_in_fp32, recipe_precision_aware_optimizer -> training.grad_reduce_in_fp32 (default false:
  distributed_data_parallel_config), training.precision_aware_optimizer (default true: optimizer), Megatron only
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

Recipe YAML (``rlsim import-config --format nemo-rl``; its key ``TABLE`` and ``to_scenario`` live in
:mod:`rlsim.frameworks.nemo_rl.mapping`, the YAML reader in :mod:`rlsim.frameworks.nemo_rl.recipe_yaml`), read at
NVIDIA-NeMo/RL v0.7.0 (commit
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
from typing import Any

from rlsim import catalog
from rlsim.errors import RlsimError
from rlsim.frameworks.common import version_after
from rlsim.scenario import software
from rlsim.workload import keep_prior
from rlsim.workload.lengths import lognormal_mean_for_clipped_mean

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


def _length_source(fields: dict[str, Any], avg_gen: float) -> dict[str, str]:
    """workload.length_source and length_note: a published row's mean is stated by the source; a recipe's mapping
    (rlsim.frameworks.nemo_rl.mapping) assumes it from the prior at the cap and says so in avg_gen_len_source."""
    why = str(fields.get("avg_gen_len_source") or "")
    if why.startswith("assumed"):
        return {"length_source": "assumed", "length_note": why.removeprefix("assumed: ")}
    return {"length_source": "stated", "length_note": f"published mean {avg_gen:.0f} tokens ({why or 'the table'})"}


def _max_response(fields: dict[str, Any], max_seq: int, avg_gen: float) -> int:
    """The response cap: the least of the sequence length and max_model_len less the prompt, and max_new_tokens."""
    max_model_len = int(_num(fields, "recipe_max_model_len") or max_seq)
    max_response = min(max_seq, max_model_len) - PROMPT_TOKENS
    max_new = _num(fields, "max_new_tokens")
    if max_new is not None:
        max_response = min(max_response, int(max_new))
    if not 0 < avg_gen < max_response:
        raise NotExpressible(f"avg_gen_len {avg_gen} must lie between 0 and max_seq_len - prompt ({max_response})")
    return max_response


def vllm_async_engine(fields: dict[str, Any]) -> bool:
    """Whether the row's vLLM runs its async engine (AsyncLLM): async GRPO requires ``vllm_cfg.async_engine``; a
    synchronous row runs it where the recipe sets ``recipe_vllm_async_engine``, else the LLM class."""
    if str(fields.get("policy_mode", "on")).strip() != "on":
        return True
    return _flag(fields, "recipe_vllm_async_engine", False)


def _schedule(fields: dict[str, Any]) -> tuple[str, bool, dict[str, Any], bool]:
    """(policy_mode, colocated, the ``schedule`` section, whether vLLM runs its async engine)."""
    mode = str(fields.get("policy_mode", "on")).strip()
    colocated = _flag(fields, "colocated", True)
    if mode == "on":
        schedule: dict[str, Any] = {"mode": "sync-colocated" if colocated else "sync-separate"}
        async_engine = vllm_async_engine(fields)
    elif mode.startswith("async-") and mode.endswith("off") and mode[6:-3].isdigit():
        if colocated:
            raise NotExpressible("async GRPO needs separate generation and training GPUs (colocated is true)")
        # AsyncTrajectoryCollector: one prompt group at a time, P x k groups in flight (nemo_rl/algorithms/
        # async_utils.py:281-287, :451-506 at v0.4.0 / v0.5.0 / v0.6.0; async_utils/trajectory_collector.py:105-109
        # at v0.7.0): rlsim.run.collector
        collector = str(fields.get("recipe_async_collector") or "prompt_groups")  # batches: the single controller
        schedule = {"mode": "async", "max_staleness": int(mode[6:-3]), "collector": collector}
        if fields.get("recipe_in_flight_weight_updates") is not None:
            schedule["in_flight_weight_updates"] = _flag(fields, "recipe_in_flight_weight_updates")
        async_engine = vllm_async_engine(fields)  # True: NeMo RL's async GRPO requires vllm_cfg.async_engine
    else:
        raise NotExpressible(f"policy_mode {mode!r} is neither 'on' nor 'async-<k>off'")
    return mode, colocated, schedule, async_engine


def _hardware(fields: dict[str, Any], num_gpus: int, colocated: bool) -> dict[str, Any]:
    """The ``hardware`` section: the GPU, its count and node size, and the generation and training pools."""
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
    return hardware


def _engine(fields: dict[str, Any], version: str | None, gpu: str, async_engine: bool) -> dict[str, Any]:
    """The ``engine`` section: vLLM's TP, memory, precision and max_num_seqs (the recipe's, else vLLM's default)."""
    max_num_seqs = _num(fields, "recipe_max_num_seqs")
    if max_num_seqs is None:
        max_num_seqs = VLLM_ASYNC_ENGINE_MAX_NUM_SEQS if async_engine else llm_class_max_num_seqs(version, gpu)
    engine: dict[str, Any] = {
        "tensor_parallel_size": int(_num(fields, "gen_tp", 1) or 1),
        "gpu_memory_utilization": _num(fields, "recipe_gpu_memory_utilization", 0.6),
        "max_num_seqs": int(max_num_seqs),
        "precision": "fp8" if _flag(fields, "recipe_fp8_generation") else "bf16",
    }
    if version is None:
        engine["behaviour"] = "vllm-v1"
    # vllm.LLM runs its engine core in NeMo RL's worker process (VLLM_ENABLE_V1_MULTIPROCESSING=0,
    # nemo_rl/models/generation/vllm/vllm_worker.py:110 at v0.4.0, :112 at v0.5.0 / v0.6.0); AsyncLLM always
    # starts its own engine-core process
    engine["in_process"] = not async_engine
    engine["detokenize"] = _detokenizes(fields, version)
    if async_engine:
        engine["max_num_batched_tokens"] = VLLM_ASYNC_ENGINE_MAX_NUM_BATCHED_TOKENS
    return engine


def _detokenizes(fields: dict[str, Any], version: str | None) -> bool:
    """Whether vLLM detokenizes: the config asks for text (stop strings, skip_tokenizer_init false), else the
    release's choice (software.yaml ``detokenize``; no release named: the latest known's)."""
    if _flag(fields, "recipe_detokenize", False):
        return True
    return bool(software.release_behaviours("nemo-rl", version).get("detokenize", False))


def _recipe_training(fields: dict[str, Any], max_seq: int, notes: list[str]) -> tuple[dict[str, Any], bool]:
    """(the ``training`` section with its global and log-prob batch sizes, whether a KL reference is kept)."""
    gbs = _num(fields, "recipe_train_global_batch_size") or _num(fields, "train_gbs")
    training = _training(fields, max_seq, notes)
    if gbs is not None:
        training["global_batch_size"] = int(gbs)
    lp = _num(fields, "recipe_logprob_batch_size")
    if lp is not None:
        training["logprob_micro_batch_size"] = int(lp)
    kl = (_num(fields, "recipe_kl", 0.0) or 0.0) > 0
    training["reference_on_host"] = kl
    return training, kl


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
    max_response = _max_response(fields, max_seq, avg_gen)
    mode, colocated, schedule, async_engine = _schedule(fields)
    hardware = _hardware(fields, num_gpus, colocated)
    version = framework_version(fields)
    engine = _engine(fields, version, hardware["gpu"], async_engine)
    notes: list[str] = []
    training, kl = _recipe_training(fields, max_seq, notes)
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
            **_length_source(fields, avg_gen),
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
    if schedule["mode"] == "async":
        # async_grpo_train asserts use_importance_sampling_correction, and prev_logprobs are the trainer's: AReaL's
        # decoupled objective (nemo_rl/algorithms/grpo.py at 7ea279a; rlsim.learning.staleness)
        out.setdefault("learning", {})["staleness_loss"] = "decoupled_ppo"
    if steps is not None:
        out["run"] = {"steps": steps}
    return out


def llm_class_max_num_seqs(version: str | None, gpu: str, memory_bytes: float | None = None) -> int:
    """``vllm.LLM``'s max_num_seqs at the vLLM release NeMo RL ``version`` pins, on ``gpu``
    (rlsim.scenario.software)."""
    engine_version = software.pinned_engine_version("nemo-rl", version)
    return software.batch_defaults(engine_version, "llm_class", gpu, memory_bytes)["max_num_seqs"]


def framework_version(fields: dict[str, Any]) -> str | None:
    """The NeMo RL release of a row: the recipe's tag (``NVIDIA-NeMo/RL@v0.5.0:...``), else the table's
    ``source_version`` (``NeMo RL v0.6 perf table`` -> 0.6), else None (a recipe YAML: vLLM V1 assumed)."""
    found = version_after(str(fields.get("recipe") or ""), "@v")
    return found or version_after(str(fields.get("source_version") or ""), "NeMo RL v")


def _dynamic_sampling(fields: dict[str, Any]) -> dict[str, Any] | None:
    """``algorithm.dynamic_sampling`` of a DAPO row (recipe_dynamic_sampling): the recipe's batch_multiplier and
    dynamic_sampling_max_gen_batches, and the filter's keep rate, which no recipe or table publishes (it depends on
    the data and the model): a ``dynamic_sampling_keep_rate`` column, or the row is refused naming it. The import
    of a recipe YAML (``keep_rate_assumed``) takes rlsim.workload.keep_prior's, marked assumed."""
    if not _flag(fields, "recipe_dynamic_sampling"):
        return None
    out: dict[str, Any] = {
        "batch_multiplier": _num(fields, "recipe_batch_multiplier") or 1.0,
        "max_gen_batches": int(_num(fields, "recipe_dynamic_sampling_max_gen_batches") or 10),
    }
    keep = _num(fields, "dynamic_sampling_keep_rate")
    if keep is not None:
        out["keep_rate"] = keep
    elif fields.get("keep_rate_assumed"):
        out = keep_prior.assumed(out)
    else:
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
    if packing:  # NeMo RL's bins hold max_total_sequence_length tokens (dynamic batching: its token budget)
        common["packing_tokens"] = int(_num(fields, "recipe_packing_tokens", max_seq) or max_seq)
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
        # the base recipe's (grpo_math_1B.yaml, v0.4.0-v0.7.0): bf16 gradient buffer, precision-aware optimizer
        "grad_reduce_in_fp32": _flag(fields, "recipe_grad_reduce_in_fp32", False),
        "precision_aware_optimizer": _flag(fields, "recipe_precision_aware_optimizer", True),
        **common,
    }
