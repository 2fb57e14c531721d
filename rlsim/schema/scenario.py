"""The root of a scenario: :class:`Scenario` holds every section and derives what follows from its fields alone
(replicas, engine weight bytes per GPU, KV-cache capacity in tokens), its plain-data form and its digest.

Sizes are bytes, lengths tokens. What needs the catalogs or the models (loading, validation, overrides, the engine's
scheduler rules, the software release's behaviours) is rlsim.scenario's, above the layers it uses.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from rlsim.schema.sections import (
    Algorithm,
    Costs,
    Engine,
    Hardware,
    Learning,
    Plan,
    Reward,
    Run,
    Schedule,
    Software,
    Sweep,
    Training,
    WeightSync,
    Workload,
)
from rlsim.schema.specs import ModelSpec


@dataclass(frozen=True)
class Scenario:
    model: ModelSpec
    hardware: Hardware
    engine: Engine = Engine()
    workload: Workload = Workload()
    algorithm: Algorithm = Algorithm()
    reward: Reward = Reward()
    software: Software = Software()
    training: Training = Training()
    weight_sync: WeightSync = WeightSync()
    schedule: Schedule = Schedule()
    learning: Learning = Learning()
    costs: Costs = Costs()
    run: Run = Run()
    sweep: Sweep = Sweep()
    plan: Plan = Plan()
    name: str = "scenario"
    description: str = ""
    assumptions: tuple[str, ...] = ()

    # derived ---------------------------------------------------------------------------------------------
    @property
    def generated_per_step(self) -> int:
        """Responses the engines generate per step: P x G, or under dynamic sampling every round's
        ceil(batch_multiplier x P) x G; with algorithm.greedy_baseline (ReMax) P more."""
        w, ds = self.workload, self.algorithm.dynamic_sampling
        greedy = w.prompts_per_step if self.algorithm.greedy_baseline else 0  # ReMax's greedy call
        if ds is None:
            return w.responses_per_step + greedy
        return ds.prompts_per_call(w.prompts_per_step) * w.group_size * ds.rounds() + greedy

    @property
    def total_gpus(self) -> int:
        """Every GPU the run holds: the rollout and training GPUs, and the reward model's, PPO critic's and
        reference model's own."""
        alg = self.algorithm
        return self.hardware.num_gpus + (self.reward.num_gpus or 0) + (alg.critic_gpus or 0) + (alg.reference_gpus or 0)

    def pool_view(self, gpus: int) -> Scenario:
        """This scenario as a pool of ``gpus`` GPUs of its own sees it (algorithm.critic_gpus, reference_gpus): the
        training layout over those GPUs, so the training cost and memory models price a model there. Not
        validated: a view, not a run."""
        hw = dataclasses.replace(
            self.hardware, placement="separate", train_gpus=gpus, rollout_gpus=max(1, self.hardware.num_rollout_gpus)
        )
        return dataclasses.replace(self, hardware=hw)

    def critic_view(self) -> Scenario:
        """This scenario as the PPO critic's passes see it: the training section with the critic's own padding and
        micro-batching (algorithm.critic_*) where they are set; the scenario itself where none is. Not validated."""
        alg = self.algorithm
        changes: dict[str, Any] = {}
        if alg.critic_pad_to_cap is not None:  # verl: use_remove_padding false pads to the caps, true packs
            changes.update(pad_to_cap=alg.critic_pad_to_cap, remove_padding=not alg.critic_pad_to_cap)
        if alg.critic_sequence_packing is not None:
            changes["sequence_packing"] = alg.critic_sequence_packing
        if alg.critic_packing_tokens is not None:  # verl: forward_max_token_len_per_gpu follows the update's
            changes.update(packing_tokens=alg.critic_packing_tokens, logprob_packing_tokens=alg.critic_packing_tokens)
        if alg.critic_micro_batch_size is not None:
            micro = alg.critic_micro_batch_size
            changes.update(micro_batch_size=micro, logprob_micro_batch_size=micro)
        if not changes:
            return self
        return dataclasses.replace(self, training=dataclasses.replace(self.training, **changes))

    @property
    def critic_pool_gpus(self) -> int:
        """GPUs a PPO critic has apart from the training pool: its own (algorithm.critic_gpus), the reward model's
        (algorithm.critic_with_reward), else 0 (it runs on the training pool)."""
        alg = self.algorithm
        if alg.name != "ppo":
            return 0
        return int(alg.critic_gpus or (self.reward.num_gpus if alg.critic_with_reward else 0) or 0)

    @property
    def num_replicas(self) -> int:
        if self.engine.replicas is not None:
            return self.engine.replicas
        return self.hardware.num_rollout_gpus // self.engine.tensor_parallel_size

    @property
    def critic(self) -> ModelSpec:
        return self.algorithm.critic_model or self.model

    @property
    def engine_weight_bytes(self) -> float:
        """Bytes of the policy's weights in the engine (FP8 engines store one byte per parameter)."""
        per_param = self.engine.weight_bytes_per_param or self.model.dtype_bytes
        return self.model.num_params * per_param

    @property
    def engine_weight_bytes_per_gpu(self) -> float:
        """Engine weight bytes on each GPU: TP shards everything; expert parallelism shards the experts over the
        data-parallel ranks too."""
        tp = self.engine.tensor_parallel_size
        if not self.engine.expert_parallel:
            return self.engine_weight_bytes / tp
        experts = self.engine_weight_bytes * self.model.expert_params / self.model.num_params
        return (self.engine_weight_bytes - experts) / tp + experts / (tp * self.engine.data_parallel_size)

    @property
    def optimizer_steps_per_step(self) -> int:
        """Optimizer steps per RL step: (responses / train global batch, or algorithm.mini_batches_per_step) x
        epochs."""
        gbs = self.training.global_batch_size
        mini = self.workload.responses_per_step // gbs if gbs else self.algorithm.mini_batches_per_step
        return mini * self.algorithm.epochs_per_step

    @property
    def kv_capacity_tokens(self) -> int:
        """KV-cache tokens one replica holds: engine memory left after weights and activations."""
        tp = self.engine.tensor_parallel_size
        per_gpu = (
            self.hardware.engine_memory_bytes
            * (self.engine.gpu_memory_utilization - self.engine.activation_memory_fraction)
            - self.engine_weight_bytes_per_gpu
        )
        # sliding-window layers hold the window of every sequence that may run (vLLM's hybrid KV cache manager)
        kv_bytes = per_gpu * tp - self.engine.max_num_seqs * self.sliding_kv_bytes_per_seq
        kv_bytes -= self.recurrent_state_reserve_bytes(kv_bytes)
        return max(0, int(kv_bytes // self.kv_bytes_per_token))

    def recurrent_state_reserve_bytes(self, pool_bytes: float) -> float:
        """A hybrid's recurrent state taken from the KV pool: vLLM's hybrid allocator gives each running request
        its state as blocks of the same pool as the attention KV (a MambaSpec page per recurrent layer group; it
        requires a block per max_num_seqs at start, which NeMo RL's grpo-nano-v2-12b-1n8g-megatron recipe caps
        max_num_seqs for), so the requests that run at once share the pool with their states. Reserved: the
        states of as many sequences as fit at the longest context (state + longest x KV bytes per token each), at
        most max_num_seqs."""
        state = self.model.recurrent_state_bytes
        if state <= 0 or pool_bytes <= 0:
            return 0.0
        longest = self.workload.max_prompt_tokens + self.workload.max_response_tokens
        fit = int(pool_bytes // (state + longest * self.kv_bytes_per_token))
        return min(self.engine.max_num_seqs, fit) * state

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per token of the engine's full-attention layers (the model's K/V or MLA latent, at the
        cache's element size); sliding-window layers are in :attr:`sliding_kv_bytes_per_seq`."""
        return self._kv_bytes_all_layers * (1.0 - self.model.sliding_layer_fraction)

    @property
    def sliding_kv_bytes_per_seq(self) -> float:
        """KV bytes a running sequence holds in its sliding-window layers: the window's tokens, or the longest
        context when that is shorter (vLLM's hybrid KV manager allocates those layers' blocks as the sequence
        grows and frees the ones that leave the window; before, the whole window was charged, so Gemma 2's
        4,096-token window at 1,536-token contexts left verl's own gemma-2-2b example no KV cache at all)."""
        longest = self.workload.max_prompt_tokens + self.workload.max_response_tokens
        return self._kv_bytes_all_layers * self.model.sliding_layer_fraction * min(self.model.sliding_window, longest)

    @property
    def kv_replication(self) -> float:
        """How many times a replica's tensor-parallel ranks together hold each token's K/V over the model's one
        copy: a rank keeps max(1, kv_heads // TP) KV heads, replicating them when TP exceeds the heads (vLLM
        ModelConfig.get_num_kv_heads: vllm/config.py:1351-1363 in 0.10.0, vllm/config/model.py in 0.11.2 and 0.17.1;
        SGLang the same), and with MLA every rank keeps the whole latent (get_num_kv_heads returns 1, "during
        decode it becomes MQA"; decode context parallelism, which would split it, is off by default). Each rank
        also reads its copy in decode attention. The engine's TP is validated to split or replicate whole heads."""
        tp = self.engine.tensor_parallel_size
        m = self.model
        if m.uses_mla:
            return float(tp)
        return tp * max(1, m.num_kv_heads // tp) / m.num_kv_heads

    @property
    def _kv_bytes_all_layers(self) -> float:
        """Bytes per token over the replica's ranks (:attr:`kv_replication` copies) at the cache's element size."""
        per_copy = float(self.model.kv_bytes_per_token)
        if self.engine.kv_cache_dtype == "fp8":
            per_copy /= self.model.dtype_bytes
        return per_copy * self.kv_replication

    def to_dict(self) -> dict[str, Any]:
        return to_plain(self)

    def digest(self) -> str:
        """Short stable hash of the resolved scenario (used as run id and in report provenance); computed once per
        scenario (it is frozen), kept beside its fields (not one of them: equality and to_dict ignore it)."""
        cached = self.__dict__.get("_digest")
        if cached is None:
            # json.dumps(self.to_dict(), sort_keys=True, default=str), assembled from each section's text, which is
            # kept on the section: a plan's configurations share most of their sections (scenario.build._sections)
            parts = (f"{json.dumps(f.name)}: {_plain_json(getattr(self, f.name))}" for f in dataclasses.fields(self))
            text = "{" + ", ".join(sorted(parts)) + "}"
            cached = hashlib.sha256(text.encode()).hexdigest()[:12]
            object.__setattr__(self, "_digest", cached)
        return cached


def _plain_json(value: Any) -> str:
    """``json.dumps(to_plain(value), sort_keys=True, default=str)``, kept on a section (frozen) once computed."""
    if not dataclasses.is_dataclass(value):
        return json.dumps(to_plain(value), sort_keys=True, default=str)
    cached = value.__dict__.get("_plain_json")
    if cached is None:
        cached = json.dumps(to_plain(value), sort_keys=True, default=str)
        object.__setattr__(value, "_plain_json", cached)
    return cached


def to_plain(obj: Any) -> Any:
    """A section (or the scenario) as plain data: dicts, lists and scalars, as YAML holds it."""
    if dataclasses.is_dataclass(obj):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {k: to_plain(v) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return [to_plain(x) for x in obj]
    return obj
