"""Cost models: seconds for each phase of an RL step, as pure functions behind one protocol.

The default is a roofline (docs/reference.md sections 6-7): catalog peak numbers times efficiency factors, plus fixed
overheads, all in ``Scenario.costs``, the one place the model reads them. A calibrated profile (``rlsim.run.profile``)
supplies fitted values for the same coefficients, folded into the scenario before the model is built
(``dataclasses.replace(scenario, costs=profile.apply(scenario.costs))``, rlsim.run.simulation.systems_scenario), so the
efficiencies measured on one device carry to another through the roofline.

Formulas (N = parameters, N_a = active parameters, L layers, H attention heads, d head dim, T tokens,
S2 = sum of squared sequence lengths, F and BW the pool's peak FLOP/s and HBM bytes/s):

* decode iteration (one replica of ``tp`` GPUs, batch b, K cached tokens):
  ``max((W(b) + K * kv_bytes) / (e_mem * tp * BW), (2 N_a b + 4 L H d K) / (e_dec * tp * F)) + o_iter + o_seq * b
  + tensor-parallel all-reduces`` where W(b) = weight bytes read; for MoE the routed experts read grow with b as
  1 - (1 - k/E)^b of them (each token picks k of E experts), streamed at ``moe_decode_memory_efficiency_factor`` of
  the dense GEMMs' bandwidth (grouped expert GEMMs with few tokens per expert). A hybrid (rlsim.catalog.hybrid)
  counts L, kv_bytes and K's FLOPs over its attention layers only and adds ``2 b S`` bytes: each sequence's
  recurrent state S (Mamba-2, Gated DeltaNet), read and written back every step whatever its length.
* prefill of a round: ``o_prefill + (2 N_a * sum(c) + 2 L H d * sum(c^2)) / (e_pre * tp * F)`` (causal attention).
* the engine's CPU work per iteration (``engine_coefficients``: a named behaviour or the costs fields) is added to
  the decode iteration (serial engine) or put as a floor under it (``floor_s``, overlapped engine); a behaviour with
  piecewise CUDA graphs adds ``eager_attention_s_per_layer x L`` (launch gaps around the eager attention); one
  without CUDA graphs (``engine.enforce_eager``) puts ``eager_host_s_per_layer x L`` (the host's kernel launches) as a
  floor under the GPU step: ``max(GPU step, host launches) + serial CPU work``. Two MoE
  behaviours (rlsim.run.moe_decode): ``shared_expert_overlap_max_tokens`` takes the shorter of the shared and routed
  experts' roofline times per MoE layer off iterations of that many tokens or fewer (a second CUDA stream), and
  ``unfused_grouped_topk_s_per_layer`` adds GPU time per MoE layer to models with ``routing_groups``.
* log-prob / values passes and training: ``rlsim.trainer.training`` (Megatron or FSDP layout: compute, exposed
  communication, pipeline bubble, optimizer update; formulas and sources in its docstring); a framework release's
  host traffic around the log-prob pass (``logprob_host_s``: NeMo RL v0.4.0's optimizer to host and back).
* weight sync: ``rlsim.trainer.sync`` (per-shard parallel transfer or broadcast, colocated copy and sleep / wake).
* reward: ``o_reward + reward_s_per_sample * samples`` on the CPU, or a reward model's forward pass on its GPUs
  (``rlsim.trainer.training.reward_model_s``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rlsim import catalog
from rlsim.engine.iteration import DecodeCoefficients, PrefillCoefficients
from rlsim.phases import Phase
from rlsim.run import moe_decode
from rlsim.scenario import engine_behaviour, software
from rlsim.schema import Costs, ModelSpec, Scenario
from rlsim.schema.specs import small_kernel_time_factor
from rlsim.trainer import sync, training
from rlsim.trainer.memory import memory


class CostModel(Protocol):
    """What the pipeline asks of a cost model. All results in seconds."""

    def decode_coefficients(self) -> DecodeCoefficients: ...

    def prefill_coefficients(self) -> PrefillCoefficients: ...

    def rollout_overhead_s(self, responses: int) -> float: ...

    def forward_s(self, model: ModelSpec, tokens: float, sq_tokens: float, num_sequences: int = 0) -> float: ...

    def train_s(
        self,
        model: ModelSpec,
        tokens: float,
        sq_tokens: float,
        optimizer_steps: int,
        epochs: int,
        num_sequences: int = 0,
    ) -> float: ...

    def critic_scale(self, phase: str) -> float: ...

    def on_pool(self, gpus: int) -> CostModel: ...

    def for_critic(self) -> CostModel: ...

    def reference_swap_s(self, model: ModelSpec) -> float: ...

    def logprob_host_s(self) -> float: ...

    def weight_sync_s(self) -> float: ...

    def engine_pause_s(self) -> float: ...

    def reward_s(self, num_samples: int, tokens: float = 0.0, sq_tokens: float = 0.0) -> float: ...


DEFAULT_COSTS = Costs()
ENGINE_KEYS = (
    "decode_memory_efficiency",
    "decode_iteration_overhead_s",
    "decode_per_seq_overhead_s",
    "tp_rank_overhead_s",
)


def engine_coefficients(scenario: Scenario) -> dict:
    """What the engine's software sets: the HBM efficiency its decode kernels reach, its CPU work per iteration
    and whether that work overlaps the GPU step. A named behaviour (``engine.behaviour``,
    rlsim/catalog/engines.yaml) supplies the values it has, except where ``scenario.costs`` sets one away from the
    schema's default (in the file, by ``--set`` or by a profile); the rest come from ``scenario.costs`` and
    ``engine.cpu_overlap``."""
    out = {k: getattr(scenario.costs, k) for k in ENGINE_KEYS}
    out["cpu_overlap"] = scenario.engine.cpu_overlap
    out["gpu_scaled"] = ()
    out["eager_attention_s_per_layer"] = 0.0  # full decode graphs unless the behaviour says otherwise
    out["shared_expert_overlap_max_tokens"] = 0  # the shared experts after the routed ones (rlsim.run.moe_decode)
    out["unfused_grouped_topk_s_per_layer"] = 0.0
    out["eager_host_s_per_layer"] = 0.0  # CUDA graphs: no host launch floor
    name = engine_behaviour(scenario)
    if name is not None:
        entry = catalog.engine(name)
        # a costs value set away from the schema default (the file, --set, a profile's fit) wins over the behaviour's
        out.update({k: float(entry[k]) for k in ENGINE_KEYS if k in entry and out[k] == getattr(DEFAULT_COSTS, k)})
        out["eager_attention_s_per_layer"] = float(entry.get("eager_attention_s_per_layer", 0.0))
        out["shared_expert_overlap_max_tokens"] = int(entry.get("shared_expert_overlap_max_tokens", 0))
        out["unfused_grouped_topk_s_per_layer"] = float(entry.get("unfused_grouped_topk_s_per_layer", 0.0))
        out["eager_host_s_per_layer"] = float(entry.get("eager_host_s_per_layer", 0.0))
        out["cpu_overlap"] = bool(entry.get("cpu_overlap", out["cpu_overlap"]))
        out["gpu_scaled"] = tuple(entry.get("gpu_scaled", ()))
    return out


def detokenize_s_per_token(scenario: Scenario) -> float:
    """Host seconds per generated token that an engine iteration adds for detokenizing: only with the engine core
    in the caller's process (``engine.in_process``), where output processing runs between GPU steps; whether it
    detokenizes is ``engine.detokenize``, else the framework release's choice (software.yaml ``detokenize``), else
    vLLM's default (on)."""
    engine = scenario.engine
    if not engine.in_process:
        return 0.0
    on = engine.detokenize
    if on is None:
        on = bool(software.framework_behaviours(scenario).get("detokenize", True))
    return scenario.costs.detokenize_per_token_s if on else 0.0


def moe_weight_fraction(num_experts: int, experts_per_token: int, batch: np.ndarray) -> np.ndarray:
    """Expected fraction of a layer's experts touched by ``batch`` tokens routed to k of E experts uniformly."""
    if num_experts == 0:
        return np.ones_like(np.asarray(batch, dtype=float))
    return 1.0 - (1.0 - experts_per_token / num_experts) ** np.asarray(batch, dtype=float)


def attention_flops_per_token_context(m: ModelSpec, full_layers_only: bool = False) -> float:
    """FLOPs of QK^T and AV for one query token against one cached token: 4 L H d over the attention layers (a
    hybrid's recurrent layers attend to nothing), or over the full-attention layers only (sliding-window layers see
    at most the window)."""
    layers = m.attention_layers * (1.0 - m.sliding_layer_fraction) if full_layers_only else m.attention_layers
    return 4.0 * layers * m.num_attention_heads * m.head_dim


@dataclass(frozen=True)
class RooflineCostModel:
    """Roofline costs for one scenario, with its coefficients (``scenario.costs``). Other coefficients (a profile's
    fitted ones, a fit's candidates) come in a scenario of their own: ``dataclasses.replace(scenario, costs=...)``."""

    scenario: Scenario

    @classmethod
    def from_scenario(cls, scenario: Scenario) -> RooflineCostModel:
        return cls(scenario)

    @property
    def costs(self) -> Costs:
        """The coefficients in use: the scenario's."""
        return self.scenario.costs

    # -- helpers -----------------------------------------------------------------------------------------
    @property
    def _tp(self) -> int:
        return self.scenario.engine.tensor_parallel_size

    @property
    def _engine_peak_flops(self) -> float:
        gpu = self.scenario.hardware.gpu
        if self.scenario.engine.precision == "fp8" and gpu.fp8_flops_per_s:
            return gpu.fp8_flops_per_s
        return gpu.bf16_flops_per_s

    def _allreduce_s(self, nbytes: np.ndarray | float, num_gpus: int) -> np.ndarray | float:
        """Ring all-reduce: 2 (n-1)/n of the bytes cross each GPU's link, plus latency (rlsim.trainer.training)."""
        if num_gpus <= 1:
            return 0.0 * np.asarray(nbytes)
        bw = training.link_bandwidth(self.scenario, num_gpus)
        return 2.0 * (num_gpus - 1) / num_gpus * np.asarray(nbytes) / bw + training.latency_s(self.scenario, num_gpus)

    # -- rollout -----------------------------------------------------------------------------------------
    def decode_coefficients(self) -> DecodeCoefficients:
        """Per-iteration decode cost for batches 0..max_num_seqs (per generated token under speculative decoding).

        With MTP speculative decoding (``engine.speculative_tokens`` k, acceptance a) an iteration runs the k draft
        passes of the MTP module and verifies k + 1 tokens per sequence in one target pass; it yields
        1 + a + ... + a^k tokens per sequence on average, and the coefficients are the iteration's cost divided by
        that (the engine kernel advances one token per sequence per step). With expert parallelism over
        ``engine.data_parallel_size`` attention ranks, a rank reads its TP share of the dense weights and its share
        of the experts the tokens of all ranks touch, and each MoE layer adds a dispatch and a combine all-to-all.
        """
        s, c, m = self.scenario, self.costs, self.scenario.model
        gpu = s.hardware.gpu
        eng_cfg = s.engine
        b = np.arange(eng_cfg.max_num_seqs + 1, dtype=float)
        k = eng_cfg.speculative_tokens
        tokens = b * (k + 1)  # tokens each iteration runs through the target model
        dp = eng_cfg.data_parallel_size if eng_cfg.expert_parallel else 1
        eng = engine_coefficients(s)
        # the efficiencies are Hopper's fractions of peak; the GPU's factors carry them to its generation
        bw = self._tp * gpu.hbm_bandwidth_bytes_per_s * eng["decode_memory_efficiency"] * gpu.memory_efficiency_factor
        flops = self._tp * self._engine_peak_flops * c.decode_compute_efficiency * gpu.gemm_efficiency_factor
        per_param = s.engine_weight_bytes / m.num_params
        expert_bytes = m.expert_params * per_param
        # experts touched by the tokens of every rank (they step together), a rank reading its 1/dp of them; the
        # grouped expert GEMMs stream their weights at a fraction of the dense GEMMs' bandwidth
        expert_read = expert_bytes * moe_weight_fraction(m.num_experts, m.num_experts_per_token, tokens * dp) / dp
        weight_read = (s.engine_weight_bytes - expert_bytes) + expert_read / c.moe_decode_memory_efficiency_factor
        # two all-reduces per layer of the batch's hidden states under tensor parallelism
        comm = 2 * m.num_layers * self._allreduce_s(tokens * m.hidden_size * m.dtype_bytes, self._tp)
        if dp > 1:
            moe_layers = m.num_layers - m.num_dense_layers
            sent = tokens * m.num_experts_per_token * m.hidden_size * m.dtype_bytes / self._tp
            comm = comm + 2 * moe_layers * self._all_to_all_s(sent, dp * self._tp)
        # sliding-window layers: each sequence reads and attends to the window (contexts beyond it)
        window_attn = attention_flops_per_token_context(m) * m.sliding_layer_fraction * m.sliding_window
        # a hybrid's recurrent layers read their fixed state and write it back each step (rlsim.catalog.hybrid)
        mem_a = (weight_read + b * (s.sliding_kv_bytes_per_seq + 2.0 * m.recurrent_state_bytes)) / bw
        cmp_a = (2.0 * m.num_active_params * tokens + window_attn * tokens) / flops
        # a release that runs the shared experts on a second stream beside the routed ones hides the shorter of the
        # two: both lines drop by it (exactly the iteration's max less it, as the max is at least the hidden time)
        hidden = moe_decode.shared_expert_hidden_s(
            m, tokens, per_param, expert_read / c.moe_decode_memory_efficiency_factor, bw, flops,
            eng["shared_expert_overlap_max_tokens"],
        )  # fmt: skip
        mem_a, cmp_a = np.maximum(mem_a - hidden, 0.0), np.maximum(cmp_a - hidden, 0.0)
        if k:
            head_params = m.vocab_size * m.hidden_size
            module_bytes = (s.engine_weight_bytes / m.num_layers + head_params * per_param) * m.num_mtp_layers
            module_flops = 2.0 * (m.num_active_params / m.num_layers + head_params) * m.num_mtp_layers
            mem_a = mem_a + k * module_bytes / bw
            cmp_a = cmp_a + k * module_flops * b / flops
        per_token = 1.0 / self.tokens_per_iteration
        over = self._decode_overheads(b, comm)
        return DecodeCoefficients(
            mem_intercept_s=mem_a * per_token,
            mem_slope_s_per_token=s.kv_bytes_per_token / bw * per_token,
            compute_intercept_s=cmp_a * per_token,
            compute_slope_s_per_token=attention_flops_per_token_context(m, True) * (k + 1) / flops * per_token,
            **{key: value * per_token for key, value in over.items()},
        )

    @property
    def tokens_per_iteration(self) -> float:
        """Mean tokens a sequence gains per decode iteration: 1 + a + ... + a^k with k speculative tokens."""
        k, a = self.scenario.engine.speculative_tokens, self.scenario.engine.speculative_acceptance_rate
        return float(sum(a**i for i in range(k + 1)))

    def _all_to_all_s(self, nbytes: np.ndarray, num_gpus: int) -> np.ndarray:
        """All-to-all over ``num_gpus`` GPUs (rlsim.trainer.training.all_to_all_s) for an array of per-GPU byte
        counts."""
        one = training.all_to_all_s(self.scenario, 1.0, num_gpus, num_gpus)
        lat = training.latency_s(self.scenario, num_gpus)
        return np.where(nbytes > 0, (one - lat) * nbytes + lat, 0.0)

    def _decode_overheads(self, b: np.ndarray, tp_comm: np.ndarray | float) -> dict[str, np.ndarray]:
        """CPU work of an iteration added to the GPU step (serial engine) or as a floor under it (overlapped)."""
        cpu_cost = engine_coefficients(self.scenario)
        # the behaviour's overheads that are GPU work (engines.yaml gpu_scaled) scale with the GPU's small-kernel rate
        slow = small_kernel_time_factor(self.scenario.hardware.gpu)
        scale = {k: (slow if k in cpu_cost["gpu_scaled"] else 1.0) for k in ENGINE_KEYS}
        cpu = (
            cpu_cost["decode_iteration_overhead_s"] * scale["decode_iteration_overhead_s"]
            + cpu_cost["decode_per_seq_overhead_s"] * scale["decode_per_seq_overhead_s"] * b
            + cpu_cost["tp_rank_overhead_s"]
            * scale["tp_rank_overhead_s"]
            * (self.scenario.engine.tensor_parallel_size - 1)
        )
        # an in-process engine core detokenizes each iteration's new tokens before the next iteration (host CPU)
        cpu = cpu + detokenize_s_per_token(self.scenario) * self.tokens_per_iteration * b
        # piecewise CUDA graphs: each layer's eager attention leaves launch gaps on the GPU, serial in either loop
        gaps = cpu_cost["eager_attention_s_per_layer"] * self.scenario.model.num_layers
        # an unfused grouped top-k router's kernels (rlsim.run.moe_decode): GPU work, serial with the layer
        topk_scale = slow if "unfused_grouped_topk_s_per_layer" in cpu_cost["gpu_scaled"] else 1.0
        gaps = gaps + moe_decode.grouped_topk_s(
            self.scenario.model, cpu_cost["unfused_grouped_topk_s_per_layer"] * topk_scale
        )
        # no CUDA graphs (enforce_eager): the GPU step cannot end before the host has launched every layer's
        # kernels, a floor under its GPU time (roofline, all-reduces, gaps); host CPU, not scaled by the GPU
        host = cpu_cost["eager_host_s_per_layer"] * self.scenario.model.num_layers
        if cpu_cost["cpu_overlap"]:
            # the overlapped CPU work and the launches share the host thread
            return {"overhead_s": tp_comm + gaps + 0.0 * b, "floor_s": cpu + host - tp_comm - gaps}
        if host > 0.0:
            return {"overhead_s": cpu + tp_comm + gaps, "floor_s": host - tp_comm - gaps + 0.0 * b}
        return {"overhead_s": cpu + tp_comm + gaps}

    def prefill_coefficients(self) -> PrefillCoefficients:
        c, m = self.costs, self.scenario.model
        gpu = self.scenario.hardware.gpu
        flops = self._tp * self._engine_peak_flops * c.prefill_compute_efficiency * gpu.gemm_efficiency_factor
        return PrefillCoefficients(
            overhead_s=c.prefill_overhead_s,
            per_token_s=2.0 * m.num_active_params / flops,
            # every layer attends causally over the prompt: exact for sliding-window layers while the prompt is
            # within the window (an upper bound beyond it)
            per_token_sq_s=0.5 * attention_flops_per_token_context(m) / flops,
        )

    def rollout_overhead_s(self, responses: int) -> float:
        """Per-step host work around the engine for a step of ``responses`` responses."""
        return self.costs.rollout_overhead_s + self.costs.rollout_s_per_sample * responses

    # -- trainer (rlsim.trainer.training) and weight sync (rlsim.trainer.sync)
    # ------------------------------------------
    def on_pool(self, gpus: int) -> RooflineCostModel:
        """The same costs on a pool of ``gpus`` GPUs of its own (the critic's or the reference model's): the pool's
        view of the scenario keeps its coefficients."""
        return RooflineCostModel(self.scenario.pool_view(gpus))

    def for_critic(self) -> RooflineCostModel:
        """The same costs as the PPO critic's passes see the scenario (Scenario.critic_view: its own padding and
        micro-batching); this model itself where the critic has none of its own."""
        view = self.scenario.critic_view()
        return self if view is self.scenario else RooflineCostModel(view)

    def critic_scale(self, phase: str) -> float:
        """The PPO critic's ``values`` / ``train_critic`` pass against the policy's of the same shape."""
        c = self.costs
        return c.critic_forward_time_scale if phase == Phase.VALUES.value else c.critic_train_time_scale

    def forward_s(self, model: ModelSpec, tokens: float, sq_tokens: float, num_sequences: int = 0) -> float:
        return training.phase_time(
            self.scenario, model, tokens, sq_tokens, forward_only=True, num_sequences=num_sequences
        ).total_s + self._unfused_activation_s(model, tokens, forward_only=True)

    def _unfused_activation_s(self, model: ModelSpec, tokens: float, forward_only: bool) -> float:
        """The framework release trains ``model`` without the fused SwiGLU kernel (software.yaml
        ``bias_activation_fusion``: model-name prefix -> false): its extra HBM traffic
        (rlsim.trainer.training.unfused_swiglu_s)."""
        fusion = software.framework_behaviours(self.scenario).get("bias_activation_fusion") or {}
        names = (model.name.lower(), model.hf_id.lower().rsplit("/", 1)[-1])
        unfused = any(not on and name.startswith(prefix.lower()) for prefix, on in fusion.items() for name in names)
        return training.unfused_swiglu_s(self.scenario, model, tokens, forward_only) if unfused else 0.0

    def train_s(
        self,
        model: ModelSpec,
        tokens: float,
        sq_tokens: float,
        optimizer_steps: int,
        epochs: int,
        num_sequences: int = 0,
    ) -> float:
        return training.phase_time(
            self.scenario, model, tokens, sq_tokens, optimizer_steps, epochs, num_sequences=num_sequences
        ).total_s + epochs * self._unfused_activation_s(model, tokens, forward_only=False)

    def reference_swap_s(self, model: ModelSpec) -> float:
        """Host traffic of swapping a host-resident reference model in for the reference pass."""
        return training.reference_swap_s(self.scenario, model)

    def logprob_host_s(self) -> float:
        """Host traffic the framework release adds around the log-prob pass: NeMo RL v0.4.0 moves the optimizer
        state to host memory before it and back before training, every step (software.yaml
        ``offload_optimizer_every_step``); colocated, the weight sync's trainer offload already moves it."""
        s = self.scenario
        if not software.framework_behaviours(s).get("offload_optimizer_every_step"):
            return 0.0
        if s.hardware.placement == "colocated" and s.weight_sync.offload_trainer:
            return 0.0
        host_bw = s.hardware.gpu.host_link_bandwidth_bytes_per_s * s.costs.host_link_efficiency
        return 2.0 * memory(s).optimizer_bytes / host_bw

    def weight_sync_s(self) -> float:
        return sync.weight_sync_time(self.scenario).total_s

    def engine_pause_s(self) -> float:
        """Engine stall of an in-flight weight update (async)."""
        return sync.weight_sync_time(self.scenario).engine_pause_s

    def reward_s(self, num_samples: int, tokens: float = 0.0, sq_tokens: float = 0.0) -> float:
        """Scoring ``num_samples`` samples (``tokens`` prompt + response tokens, ``sq_tokens`` their squares): the
        reward model's forward pass when the scenario has one (rlsim.trainer.training.reward_model_s), else the CPU
        reward's overhead and per-sample cost."""
        if self.scenario.reward.model is not None:
            return training.reward_model_s(self.scenario, tokens, sq_tokens)
        return self.costs.reward_overhead_s + self.costs.reward_s_per_sample * num_samples
