"""The cross-field rules of a scenario: the model fits the GPUs, one sequence fits the KV cache of a replica, the
schedule matches the placement, the length distributions and the learning model are consistent. Order matters:
the first broken rule is reported, as a :class:`ScenarioError` naming the field, the value, the rule and the fix.
The rules that read one section alone (a model spec, the length distributions, the learning model) live in
``section_rules``; the training section's in rlsim.trainer.memory.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rlsim import catalog
from rlsim.errors import ScenarioError, suggest
from rlsim.scenario import software
from rlsim.scenario.rules import scheduler_rules
from rlsim.scenario.section_rules import validate_learning, validate_lengths, validate_model
from rlsim.trainer import memory as training_memory

if TYPE_CHECKING:
    from rlsim.schema.scenario import Scenario
    from rlsim.schema.specs import ModelSpec


def validate(scenario: Scenario) -> None:
    """Cross-field rules. Order matters: the first broken rule is reported."""
    validate_model(scenario.model, "model")
    if scenario.algorithm.critic_model is not None:
        validate_model(scenario.algorithm.critic_model, "algorithm.critic_model")
    validate_lengths(scenario.workload)
    _validate_placement(scenario)
    _validate_schedule(scenario)
    _validate_engine_layout(scenario)
    software.resolve(scenario)  # an unreadable version or an unknown framework is refused here
    _validate_engine_settings(scenario)
    _validate_group_size(scenario)
    _validate_dynamic_sampling(scenario)
    _validate_critic_pool(scenario)
    _validate_reward(scenario)
    validate_learning(scenario.learning)
    _validate_prices(scenario)
    _validate_mini_batches(scenario)
    # memory: engine weights, KV cache, trainer state
    _validate_engine_memory(scenario)
    training_memory.validate(scenario)


def _validate_placement(scenario: Scenario) -> None:
    """``hardware.placement``: separate pools must be given and add up to num_gpus; shared GPUs take no pools."""
    hw = scenario.hardware
    if hw.placement == "separate":
        for key in ("rollout_gpus", "train_gpus"):
            if getattr(hw, key) is None:
                raise ScenarioError(
                    f"hardware.{key}", None, "is required with placement: separate", f"set hardware.{key}"
                )
        assert hw.rollout_gpus is not None and hw.train_gpus is not None  # required (above)
        if hw.rollout_gpus + hw.train_gpus != hw.num_gpus:
            raise ScenarioError(
                "hardware.num_gpus",
                hw.num_gpus,
                f"must equal rollout_gpus ({hw.rollout_gpus}) + train_gpus ({hw.train_gpus})",
                "make the pools add up to num_gpus",
            )
    elif hw.rollout_gpus is not None or hw.train_gpus is not None:
        raise ScenarioError(
            "hardware.placement",
            hw.placement,
            "shares all GPUs; rollout_gpus/train_gpus are unused",
            "remove them or set hardware.placement: separate",
        )


def _validate_schedule(scenario: Scenario) -> None:
    """``schedule``: the mode's placement, a staleness only (and at least 1) for mode async, the fully-async fields
    only for mode fully-async."""
    sched = scenario.schedule
    want = "colocated" if sched.mode == "sync-colocated" else "separate"
    if scenario.hardware.placement != want:
        raise ScenarioError(
            "schedule.mode",
            sched.mode,
            f"needs hardware.placement: {want}",
            f"set hardware.placement: {want} or choose another schedule.mode",
        )
    if sched.mode == "async" and sched.max_staleness < 1:
        raise ScenarioError(
            "schedule.max_staleness",
            sched.max_staleness,
            "must be at least 1 for mode async",
            "set schedule.max_staleness: 1 (one-step off-policy) or use mode sync-separate",
        )
    if sched.mode != "async" and sched.max_staleness != 0:
        raise ScenarioError(
            "schedule.max_staleness",
            sched.max_staleness,
            f"has no meaning for mode {sched.mode}",
            "set it to 0 or use mode async",
        )
    if sched.mode != "async" and sched.collector != "batches":
        raise ScenarioError(
            "schedule.collector",
            sched.collector,
            f"has no meaning for mode {sched.mode} (async only)",
            "set it to batches or use mode async",
        )
    fully = {"sync_every": 1, "staleness_threshold": 0.0, "partial_rollout": False}
    for name, default in fully.items():
        if sched.mode != "fully-async" and getattr(sched, name) != default:
            raise ScenarioError(
                f"schedule.{name}",
                getattr(sched, name),
                f"has no meaning for mode {sched.mode} (fully-async only)",
                f"set it to {str(default).lower()} or use mode fully-async",
            )


def _validate_tp_heads(model: ModelSpec, tp: int) -> None:
    """vLLM splits the attention heads over the engine's TP ranks and refuses a TP that does not divide them; the KV
    heads are split when TP divides them and replicated when they divide TP (ModelConfig.verify_with_parallel_config,
    vllm/config/model.py in 0.11.2, and the models' attention layers); MLA keeps one latent whatever the TP."""
    if tp <= 1:
        return
    heads, kv = model.num_attention_heads, model.num_kv_heads
    if heads % tp:
        raise ScenarioError(
            "engine.tensor_parallel_size",
            tp,
            f"must divide {model.name}'s {heads} attention heads (vLLM refuses it)",
            f"choose a divisor of {heads}",
        )
    if not model.uses_mla and ((kv >= tp and kv % tp) or (kv < tp and tp % kv)):
        raise ScenarioError(
            "engine.tensor_parallel_size",
            tp,
            f"and {model.name}'s {kv} KV heads must divide one another (vLLM splits or replicates whole heads)",
            f"choose a TP that divides {kv} or a multiple of it",
        )


def _validate_engine_layout(scenario: Scenario) -> None:
    """The engine's parallel sizes, MTP speculation and replicas against the model and the rollout GPUs."""
    hw, eng = scenario.hardware, scenario.engine
    tp = eng.tensor_parallel_size
    if hw.num_rollout_gpus % tp:
        raise ScenarioError(
            "engine.tensor_parallel_size",
            tp,
            f"must divide the rollout GPUs ({hw.num_rollout_gpus})",
            "choose a divisor",
        )
    _validate_tp_heads(scenario.model, tp)
    if eng.data_parallel_size > 1 and not eng.expert_parallel:
        raise ScenarioError(
            "engine.data_parallel_size",
            eng.data_parallel_size,
            "without expert parallelism data-parallel ranks are independent replicas",
            "set engine.expert_parallel: true (MoE models), or use engine.replicas",
        )
    if eng.expert_parallel and not scenario.model.is_moe:
        raise ScenarioError(
            "engine.expert_parallel",
            True,
            f"needs a mixture-of-experts model ({scenario.model.name} is dense)",
            "remove it",
        )
    if hw.num_rollout_gpus % (tp * eng.data_parallel_size):
        raise ScenarioError(
            "engine.data_parallel_size",
            eng.data_parallel_size,
            f"x tensor_parallel_size {tp} must divide the rollout GPUs ({hw.num_rollout_gpus})",
            "choose sizes whose product divides the rollout GPUs",
        )
    if eng.speculative_tokens > 0 and scenario.model.num_mtp_layers < 1:
        raise ScenarioError(
            "engine.speculative_tokens",
            eng.speculative_tokens,
            f"needs multi-token-prediction modules; {scenario.model.name} has none (model.num_mtp_layers 0)",
            "set it to 0, or use a model that ships MTP modules (DeepSeek-V3)",
        )
    if eng.replicas is not None and eng.replicas * tp > hw.num_rollout_gpus:
        raise ScenarioError(
            "engine.replicas",
            eng.replicas,
            f"x tensor_parallel_size {tp} needs more than the {hw.num_rollout_gpus} rollout GPUs",
            "lower engine.replicas or add GPUs",
        )


def _validate_engine_settings(scenario: Scenario) -> None:
    """``engine.behaviour`` names a catalog entry (with ``enforce_eager``, one with an eager variant); the
    activation reserve stays below the memory utilization."""
    eng = scenario.engine
    if eng.behaviour is not None and eng.behaviour not in catalog.engine_names():
        raise ScenarioError(
            "engine.behaviour",
            eng.behaviour,
            "is not a named engine behaviour",
            suggest(eng.behaviour, catalog.engine_names()) + " (rlsim/catalog/engines.yaml), or remove it",
        )
    if eng.enforce_eager:
        software.behaviour(scenario)  # a ScenarioError where the behaviour has no eager variant
    if eng.activation_memory_fraction >= eng.gpu_memory_utilization:
        raise ScenarioError(
            "engine.activation_memory_fraction",
            eng.activation_memory_fraction,
            f"must be below gpu_memory_utilization ({eng.gpu_memory_utilization})",
            "lower it or raise engine.gpu_memory_utilization",
        )


def _validate_group_size(scenario: Scenario) -> None:
    """``workload.group_size``: grpo normalizes advantages within a group, so it needs two responses or more;
    ReMax (algorithm.greedy_baseline) and batch-whitened REINFORCE (group_baseline false) do not."""
    alg = scenario.algorithm
    if alg.name == "grpo" and alg.group_baseline and not alg.greedy_baseline and scenario.workload.group_size < 2:
        raise ScenarioError(
            "workload.group_size",
            scenario.workload.group_size,
            "must be at least 2 for grpo (advantages are normalized within a group)",
            "set workload.group_size: 8, say",
        )


def _validate_prices(scenario: Scenario) -> None:
    """``plan.prices``: every GPU's price per hour is above 0."""
    for gpu, price in scenario.plan.prices.items():
        if not price > 0:
            raise ScenarioError(
                f"plan.prices.{gpu}", price, "must be a price above 0 (US dollars per GPU-hour)", "write e.g. 2.5"
            )


def _validate_mini_batches(scenario: Scenario) -> None:
    """``algorithm.mini_batches_per_step`` divides the responses per step."""
    if scenario.workload.responses_per_step % scenario.algorithm.mini_batches_per_step:
        raise ScenarioError(
            "algorithm.mini_batches_per_step",
            scenario.algorithm.mini_batches_per_step,
            f"must divide the responses per step ({scenario.workload.responses_per_step} = P x G)",
            "choose a divisor of P x G",
        )


def _validate_engine_memory(scenario: Scenario) -> None:
    """The engine's memory: weights per GPU, a token budget for every running sequence, the longest sequence's KV."""
    hw, eng = scenario.hardware, scenario.engine
    tp = eng.tensor_parallel_size
    gpu_mem = hw.engine_memory_bytes
    budget = gpu_mem * (eng.gpu_memory_utilization - eng.activation_memory_fraction)
    weights_per_gpu = scenario.engine_weight_bytes_per_gpu
    if weights_per_gpu >= budget:
        raise ScenarioError(
            "model",
            scenario.model.name,
            f"needs {weights_per_gpu / 1e9:.1f} GB of weights per GPU at tensor_parallel_size {tp}, "
            f"over the engine's {budget / 1e9:.1f} GB of {hw.memory_text}",
            "raise engine.tensor_parallel_size, use a larger GPU or a smaller model",
        )
    rules = scheduler_rules(scenario)
    tokens = rules.max_num_batched_tokens  # set whenever chunked prefill is (SchedulerRules checks it)
    if rules.chunked_prefill and tokens is not None and tokens < eng.max_num_seqs:
        raise ScenarioError(
            "engine.max_num_batched_tokens",
            eng.max_num_batched_tokens,
            f"is below engine.max_num_seqs ({eng.max_num_seqs}): with chunked prefill every running sequence's "
            "decode token must fit one iteration (vLLM refuses it too)",
            f"raise it to at least {eng.max_num_seqs}, or lower engine.max_num_seqs",
        )
    cap = scenario.kv_capacity_tokens // rules.block_size * rules.block_size  # whole blocks
    longest = scenario.workload.max_prompt_tokens + scenario.workload.max_response_tokens + 1
    if cap < longest:
        raise ScenarioError(
            "workload.max_response_tokens",
            scenario.workload.max_response_tokens,
            f"plus max_prompt_tokens ({scenario.workload.max_prompt_tokens}) does not fit one replica's KV "
            f"cache of {cap} tokens",
            "raise engine.tensor_parallel_size or engine.gpu_memory_utilization, or lower the lengths",
        )


def _validate_critic_pool(scenario: Scenario) -> None:
    """``algorithm.critic_gpus`` / ``reference_gpus``: a PPO critic's or the reference model's own pool, which the
    training layout must divide."""
    ref = scenario.algorithm.reference_gpus
    if ref is not None and not scenario.algorithm.kl_reference:
        raise ScenarioError(
            "algorithm.reference_gpus",
            ref,
            "is set but there is no reference pass (kl_reference false)",
            "remove it or set algorithm.kl_reference: true",
        )
    tr = scenario.training
    parallel = (
        1 if tr.backend == "fsdp" else tr.tensor_parallel_size * tr.pipeline_parallel_size * tr.context_parallel_size
    )
    if ref is not None and ref % parallel:
        raise ScenarioError(
            "algorithm.reference_gpus",
            ref,
            f"is not a multiple of the training layout's tensor x pipeline x context parallel size ({parallel})",
            "give the reference a multiple of it",
        )
    if scenario.algorithm.critic_with_reward:
        if (
            scenario.algorithm.name != "ppo"
            or scenario.reward.model is None
            or not scenario.reward.num_gpus
            or scenario.algorithm.critic_gpus
        ):
            raise ScenarioError(
                "algorithm.critic_with_reward",
                True,
                "needs ppo, a reward model on GPUs of its own (reward.model, reward.num_gpus) and no critic_gpus",
                "set those, or remove it",
            )
    n = scenario.algorithm.critic_gpus
    if n is None:
        return
    if scenario.algorithm.name != "ppo":
        raise ScenarioError(
            "algorithm.critic_gpus", n, "is set but the algorithm has no critic (grpo)", "remove it or use ppo"
        )
    tr = scenario.training
    model_parallel = (
        1 if tr.backend == "fsdp" else tr.tensor_parallel_size * tr.pipeline_parallel_size * tr.context_parallel_size
    )
    if n % model_parallel:
        raise ScenarioError(
            "algorithm.critic_gpus",
            n,
            f"is not a multiple of the training layout's tensor x pipeline x context parallel size ({model_parallel})",
            "give the critic a multiple of it",
        )


def _validate_dynamic_sampling(scenario: Scenario) -> None:
    if scenario.algorithm.greedy_baseline and scenario.schedule.mode not in ("sync-colocated", "sync-separate"):
        raise ScenarioError(
            "algorithm.greedy_baseline",
            True,
            f"(ReMax) is modelled for the synchronous schedules only (verl runs it in its synchronous trainer), not "
            f"schedule.mode {scenario.schedule.mode}",
            "use schedule.mode sync-colocated or sync-separate, or remove it",
        )
    ds = scenario.algorithm.dynamic_sampling
    if ds is None:
        return
    if ds.rounds() > ds.max_gen_batches:
        raise ScenarioError(
            "algorithm.dynamic_sampling.keep_rate",
            ds.keep_rate,
            f"with batch_multiplier {ds.batch_multiplier:g} needs {ds.rounds()} generation rounds per step, more than "
            f"max_gen_batches {ds.max_gen_batches} (NeMo RL stops the run with an error there)",
            "raise algorithm.dynamic_sampling.batch_multiplier or max_gen_batches",
        )
    if scenario.schedule.mode in ("async", "fully-async") and ds.mode == "rounds":
        raise ScenarioError(
            "algorithm.dynamic_sampling",
            "set",
            "in rounds is modelled for the synchronous schedules only (rounds of whole batches, each scored before "
            "the next)",
            "use schedule.mode sync-colocated or sync-separate, dynamic_sampling.mode replace, or remove it",
        )


def _validate_reward(scenario: Scenario) -> None:
    rw = scenario.reward
    if rw.model is None:
        for key in ("num_gpus",):
            if getattr(rw, key) is not None:
                raise ScenarioError(f"reward.{key}", getattr(rw, key), "needs reward.model", "name the reward model")
        if rw.tensor_parallel_size != 1:
            raise ScenarioError(
                "reward.tensor_parallel_size", rw.tensor_parallel_size, "needs reward.model", "name the reward model"
            )
        return
    validate_model(rw.model, "reward.model")
    tp = rw.tensor_parallel_size
    gpus = rw.num_gpus if rw.num_gpus is not None else scenario.hardware.num_train_gpus
    where = "reward.num_gpus" if rw.num_gpus is not None else "the training GPUs (reward.num_gpus unset)"
    if gpus % tp:
        raise ScenarioError("reward.tensor_parallel_size", tp, f"must divide {where} ({gpus})", "choose a divisor")
    per_gpu = rw.model.num_params * rw.model.dtype_bytes / tp
    memory = scenario.hardware.engine_memory_bytes
    if per_gpu > 0.9 * memory:
        raise ScenarioError(
            "reward.tensor_parallel_size",
            tp,
            f"leaves {per_gpu / 1e9:.1f} GB of {rw.model.name} weights per GPU, more than 90% of "
            f"{scenario.hardware.memory_text}",
            f"raise it to {math.ceil(rw.model.num_params * rw.model.dtype_bytes / (0.9 * memory))} or more",
        )
