"""Training systems model: the ``training`` section and how long an update or a log-prob pass takes on the
trainer's layout (whether the layout fits in memory, and the section's other rules: rlsim.trainer.memory). Two
backends, as the RL frameworks run them:

* ``megatron`` (NeMo RL, verl's Megatron workers): tensor (t), pipeline (p, with v virtual stages), context (c),
  expert (e, with expert tensor parallel et) and data parallel d = n / (t p c) over the n training GPUs, with the
  distributed optimizer. Time per optimizer step = compute + exposed communication (TP all-reduces, CP ring
  exchange beyond what attention hides, EP all-to-all, DP reduce-scatter / all-gather beyond what the last
  micro-batch hides, pipeline send/recv of the fill and drain) + pipeline bubble + optimizer update + overhead.
* ``fsdp`` (verl, OpenRLHF, TRL: ZeRO-3 / FSDP2): every layer's parameters all-gathered before its forward and
  backward, gradients reduce-scattered after its backward, for every micro-batch, prefetched so that only
  ``max(0, communication - compute)`` per layer and micro-batch is exposed, plus the first gather; optional CPU
  offload of the optimizer and parameters.

Units: seconds, bytes, FLOPs; token counts are per RL step unless named otherwise. Every function reads its
efficiencies and overheads from the scenario's ``costs`` section (``s.costs``): a calibrated profile's fitted
coefficients are folded into the scenario before it comes here (rlsim.run.simulation.systems_scenario).

Sources of the formulas (docs/reference.md section 11):

* Compute: 6 N_active FLOPs per trained token (2 forward, 4 backward) plus causal attention (half of 4 L H d per
  token pair); full activation recompute adds one forward, selective recompute the attention core again
  (Korthikanti et al. 2022, arXiv 2205.05198, section 5).
* Pipeline bubble of 1F1B with m micro-batches: (p-1)/(m+p-1) of the step, i.e. (p-1)/m of the ideal time;
  interleaved with v virtual stages (p-1)/(v m) (Narayanan et al. 2021, arXiv 2104.04473, section 2.2).
* Tensor parallel with sequence parallel: per layer two all-gather + reduce-scatter pairs forward and two
  backward, each moving (t-1)/t of the micro-batch's activations (Korthikanti et al. 2022, section 4.2.2); the
  same volume as two all-reduces (Shoeybi et al. 2019, arXiv 1909.08053).
* Expert parallel: each token's hidden state goes to its k experts and comes back, twice forward and twice
  backward (dispatch and combine); (e-1)/e of it leaves the GPU.
* Data parallel with the distributed optimizer: reduce-scatter of gradients and all-gather of parameters, each
  moving (g-1)/g of the bf16 parameters of a GPU's model shard; overlapped with the last micro-batch's backward
  and the next step's first forward (Megatron-LM ``overlap_grad_reduce`` / ``overlap_param_gather``, which
  reduce a bucket once its gradients are final, i.e. in the last micro-batch). Bytes per parameter in memory:
  6 + 12/d with the distributed optimizer, 18 without (bf16 weights, fp32 gradients, fp32 master weights and
  Adam moments; Megatron-LM ``docs/source/api-guide/dist_optimizer.md``).
* Activations per layer per micro-batch with sequence parallel and flash attention: 34 s h / t bytes (s tokens,
  Korthikanti et al. 2022 eq. 2 without the 5 a s^2 term that flash attention does not store); full
  recompute keeps only the layer input, 2 s h / t. 1F1B keeps p micro-batches in flight on the first stage.
* ZeRO-3 / FSDP: 3 x the model's bytes per GPU per micro-batch (all-gather forward and backward, reduce-scatter
  of gradients; FSDP2 regathers for every micro-batch of an accumulated step), per layer, overlapped with compute
  (Rajbhandari et al. 2020, arXiv 1910.02054); 16 bytes per parameter sharded over the group (fp32 master,
  gradients and Adam moments).

A collective's bandwidth is the NVLink bandwidth while its group stays in one NVLink domain and the GPU's NIC
bandwidth once it crosses domains (each GPU has its own NIC, so a ring over nodes runs at the NIC's speed), both
times ``costs.link_efficiency``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from rlsim.trainer import lora, offload
from rlsim.trainer.padding import padded_micro_batch_ratio

if TYPE_CHECKING:
    from rlsim.schema import ModelSpec, Scenario

ADAM_BYTES_PER_PARAM = 28.0  # fp32 master, m, v read+write, bf16 grad read, bf16 weight write
ACT_BYTES = 2  # bf16 activations and communication buffers
SEQ_PARALLEL_ACT_BYTES_PER_TOKEN_HIDDEN = 34.0  # Korthikanti et al. 2022, eq. 2 (flash attention: no 5as/h term)
LOGIT_BYTES = 4  # fp32 logits of the last stage


@dataclass(frozen=True)
class Layout:
    """Group sizes of a training layout over n GPUs."""

    n: int
    t: int = 1
    p: int = 1
    v: int = 1
    c: int = 1
    e: int = 1
    et: int = 1

    @property
    def d(self) -> int:
        """Data-parallel size of the dense parameters."""
        return self.n // (self.t * self.p * self.c)

    @property
    def d_expert(self) -> int:
        """Data-parallel size of the expert parameters (MoE parallel folding: experts over e x et of a stage)."""
        return max(1, self.n // (self.e * self.et * self.p))


def layout_of(scenario: Scenario) -> Layout:
    tr = scenario.training
    if tr.backend == "fsdp":  # Ulysses groups split each micro-batch by sequence: c of them, d = n / c data groups
        return Layout(n=scenario.hardware.num_train_gpus, c=tr.ulysses_sequence_parallel_size)
    return Layout(
        n=scenario.hardware.num_train_gpus,
        t=tr.tensor_parallel_size,
        p=tr.pipeline_parallel_size,
        v=tr.virtual_pipeline_stages,
        c=tr.context_parallel_size,
        e=tr.expert_parallel_size,
        et=tr.expert_tensor_parallel_size,
    )


@dataclass(frozen=True)
class TrainTime:
    """Seconds of one training phase (all its optimizer steps), by part; ``total_s`` is what the phase takes."""

    compute_s: float = 0.0
    tp_comm_s: float = 0.0
    cp_comm_s: float = 0.0  # exposed
    ep_comm_s: float = 0.0
    dp_comm_s: float = 0.0  # exposed
    fsdp_comm_s: float = 0.0  # exposed
    pp_bubble_s: float = 0.0
    pp_p2p_s: float = 0.0
    optimizer_s: float = 0.0
    overhead_s: float = 0.0
    micro_batches: int = 1  # per data-parallel rank and optimizer step
    host_swap_s: float = 0.0  # verl's param / optimizer offload: the states up before the phase and down after it

    @property
    def total_s(self) -> float:
        return sum(getattr(self, name) for name in _TIME_FIELDS)  # in field order, as ever (the same float sum)


_TIME_FIELDS = tuple(f.name for f in fields(TrainTime) if f.name.endswith("_s"))


# ---------------------------------------------------------------------------------------------------- helpers


def link_bandwidth(scenario: Scenario, span_gpus: int) -> float:
    """Per-GPU bandwidth of a collective whose group spans ``span_gpus`` consecutive GPUs."""
    hw = scenario.hardware
    bw = hw.gpu.link_bandwidth_bytes_per_s if span_gpus <= hw.nvlink_domain else hw.nic_bandwidth_bytes_per_s
    return bw * scenario.costs.link_efficiency


def latency_s(scenario: Scenario, span_gpus: int) -> float:
    """Fixed time of one collective: ``collective_latency_s`` inside an NVLink domain, ``internode_latency_s``
    once the group crosses domains (network round trips dominate small messages there)."""
    return (
        scenario.costs.collective_latency_s
        if span_gpus <= scenario.hardware.nvlink_domain
        else scenario.costs.internode_latency_s
    )


def ring_s(scenario: Scenario, nbytes: float, group: int, span_gpus: int) -> float:
    """All-gather or reduce-scatter over ``group`` GPUs: (g-1)/g of the bytes cross each GPU's link."""
    if group <= 1 or nbytes <= 0:
        return 0.0
    return (group - 1) / group * nbytes / link_bandwidth(scenario, span_gpus) + latency_s(scenario, span_gpus)


def all_to_all_s(scenario: Scenario, nbytes: float, group: int, span_gpus: int) -> float:
    """All-to-all over ``group`` GPUs: a GPU sends 1/g of its ``nbytes`` to each peer, (g-1)/g in all; what goes
    to peers outside its NVLink domain (``hardware.nvlink_domain``: its node, or with multi-node NVLink the whole
    GB200 rack) rides its NIC, the rest NVLink, both at once. The group's GPUs are spread evenly over the
    ``span_gpus`` consecutive GPUs it covers."""
    if group <= 1 or nbytes <= 0:
        return 0.0
    hw = scenario.hardware
    domain = hw.nvlink_domain
    if span_gpus <= domain:
        out = (group - 1) / group * nbytes
        return out / (hw.gpu.link_bandwidth_bytes_per_s * scenario.costs.link_efficiency) + latency_s(
            scenario, span_gpus
        )
    remote = (span_gpus - domain) / span_gpus * nbytes  # to the peers in other domains
    local = (group - 1) / group * nbytes - remote
    t_nic = remote / (hw.nic_bandwidth_bytes_per_s * scenario.costs.link_efficiency)
    t_nvl = local / (hw.gpu.link_bandwidth_bytes_per_s * scenario.costs.link_efficiency)
    return max(t_nic, t_nvl) + latency_s(scenario, span_gpus)


def active_expert_params(m: ModelSpec) -> float:
    return m.expert_params * m.num_experts_per_token / m.num_experts if m.is_moe else 0.0


def packing_tokens(scenario: Scenario) -> int:
    tr = scenario.training
    return tr.packing_tokens or (scenario.workload.max_prompt_tokens + scenario.workload.max_response_tokens)


def _micro_batches(
    scenario: Scenario, lay: Layout, tokens_per_opt: float, seqs_per_opt: float, forward_only: bool
) -> int:
    """Micro-batches per data-parallel rank in one optimizer step (or one log-prob pass). Packed, by a token budget
    as verl's dynamic batch size forms them (volcengine/verl@v0.7.0:verl/utils/seqlen_balancing.py:387, the same at
    v0.6.1:300): ceil(the rank's tokens / the budget), never more than the rank's sequences; the budget of a
    log-prob pass is ``logprob_packing_tokens`` (verl log_prob_max_token_len_per_gpu), and an fsdp Ulysses group
    of c GPUs packs c budgets (dp_actor.py:441, max_token_len x ulysses size). verl balances the step's tokens over
    the ranks first (ray_trainer.py:1106 _balance_batch), so every rank holds the mean. Unpacked: the rank's
    sequences / micro_batch_size (the log-prob pass: logprob_micro_batch_size)."""
    tr = scenario.training
    mbs = (tr.logprob_micro_batch_size or tr.micro_batch_size) if forward_only else tr.micro_batch_size
    if tr.sequence_packing or seqs_per_opt <= 0:
        budget = (tr.logprob_packing_tokens if forward_only else None) or packing_tokens(scenario)
        group = lay.c if tr.backend == "fsdp" else 1
        m = math.ceil(tokens_per_opt / lay.d / (mbs * budget * group))
        if seqs_per_opt > 0:
            m = min(m, math.ceil(seqs_per_opt / lay.d))
        return max(1, m)
    return max(1, math.ceil(seqs_per_opt / lay.d / mbs))


def _compute_s(
    scenario: Scenario,
    model: ModelSpec,
    tokens: float,
    sq_tokens: float,
    n: int,
    forward_only: bool,
    linear_tokens: float | None = None,
) -> tuple[float, float]:
    """(compute seconds, of which attention) over ``n`` GPUs for ``tokens`` trained (or forwarded) tokens; the
    linear layers run on ``linear_tokens`` where padding makes them more (training.pad_to_cap). A recomputed
    forward (activation recompute) is a forward: the log-prob pass's kernels, at ``forward_compute_efficiency``;
    the forward and backward of training at ``train_compute_efficiency``."""
    gpu, tr = scenario.hardware.gpu, scenario.training
    lin = tokens if linear_tokens is None else linear_tokens
    expert = 2.0 * active_expert_params(model) * lin
    dense = 2.0 * model.num_active_params * lin - expert
    attn = 0.5 * 4.0 * model.attention_layers * model.num_attention_heads * model.head_dim * sq_tokens
    fwd_eff = scenario.costs.forward_compute_efficiency * gpu.train_efficiency_factor
    if forward_only:
        passes_linear, passes_attn, eff = 1.0, 1.0, scenario.costs.forward_compute_efficiency
        re_linear = re_attn = 0.0
    else:
        re_linear, re_attn = {"none": (0.0, 0.0), "selective": (0.0, 1.0), "full": (1.0, 1.0)}[tr.activation_recompute]
        passes_linear, passes_attn, eff = lora.linear_passes(tr), 3.0, scenario.costs.train_compute_efficiency
    eff = eff * gpu.train_efficiency_factor  # the costs are Hopper fractions; this GPU generation's share of them
    if tr.precision == "fp8" and not forward_only:
        gemm_peak = (
            (gpu.fp8_flops_per_s or gpu.bf16_flops_per_s)
            * scenario.costs.fp8_train_compute_efficiency
            * gpu.train_efficiency_factor
        )
    else:
        gemm_peak = gpu.bf16_flops_per_s * eff
    attn_peak = gpu.bf16_flops_per_s * eff
    # the recomputed forward: at the forward efficiency (FP8 GEMMs at the FP8 training peak, as the training ones)
    re_gemm_peak = gemm_peak if tr.precision == "fp8" else gpu.bf16_flops_per_s * fwd_eff
    re_attn_peak = gpu.bf16_flops_per_s * fwd_eff
    moe = scenario.costs.moe_compute_efficiency_factor
    t_dense = passes_linear * dense / (n * gemm_peak) + re_linear * dense / (n * re_gemm_peak)
    t_expert = passes_linear * expert / (n * gemm_peak * moe) + re_linear * expert / (n * re_gemm_peak * moe)
    t_attn = passes_attn * attn / (n * attn_peak) + re_attn * attn / (n * re_attn_peak)
    return t_dense + t_expert + t_attn, t_attn


def _optimizer_s(scenario: Scenario, shard_params: float) -> float:
    """One optimizer step over a rank's ``shard_params``: GPU Adam streams its state through HBM at
    ``costs.optimizer_memory_efficiency`` of its bandwidth; the share that ``training.offload_optimizer`` puts on
    the host goes over the host link and through CPU Adam (rlsim.trainer.offload.cpu_optimizer_s)."""
    on_host = offload.cpu_adam_fraction(scenario)
    hbm = scenario.hardware.gpu.hbm_bandwidth_bytes_per_s * scenario.costs.optimizer_memory_efficiency
    gpu = ADAM_BYTES_PER_PARAM * (1.0 - on_host) * shard_params / hbm
    return gpu + offload.cpu_optimizer_s(scenario, shard_params)


# ---------------------------------------------------------------------------------------------------- time


# An unfused SwiGLU (Megatron's glu: silu(x0) * x1 in two kernels, bias_activation_fusion off) against the fused
# bias_swiglu kernel, in elements of the MLP intermediate I per token and layer. Forward: silu reads x0 and writes
# s, the product reads s and x1 and writes the output (5 I) where the fused kernel reads x and writes the output
# (3 I): 2 more. Backward: the product's two gradients (read 2 I, write I, twice), silu's (read the gradient and
# x0, write I) and chunk's backward concatenating both into 2 I (read 2 I, write 2 I) (13 I) where the fused
# backward reads the gradient and x and writes 2 I (5 I): 8 more.
UNFUSED_SWIGLU_FORWARD_ELEMENTS = 2.0
UNFUSED_SWIGLU_BACKWARD_ELEMENTS = 8.0


def swiglu_width(model: ModelSpec) -> float:
    """SwiGLU intermediate elements per token over all layers: dense layers' intermediate size, MoE layers' expert
    intermediate size x (the k routed experts + the shared ones)."""
    if not model.is_moe:
        return float(model.num_layers * model.intermediate_size)
    moe_layers = model.num_layers - model.num_dense_layers
    per_moe = model.moe_intermediate_size * (model.num_experts_per_token + model.num_shared_experts)
    return float(model.num_dense_layers * model.intermediate_size + moe_layers * per_moe)


def unfused_swiglu_s(scenario: Scenario, model: ModelSpec, tokens: float, forward_only: bool) -> float:
    """Seconds an unfused SwiGLU adds to a pass over ``tokens``: its extra HBM traffic (bf16 elements above),
    spread over the training GPUs (t, p, c and d split the tokens and the intermediate), at the HBM peak. Training
    runs the forward again under full activation recompute."""
    if forward_only:
        elements = UNFUSED_SWIGLU_FORWARD_ELEMENTS
    else:
        forwards = 2.0 if scenario.training.activation_recompute == "full" else 1.0
        elements = forwards * UNFUSED_SWIGLU_FORWARD_ELEMENTS + UNFUSED_SWIGLU_BACKWARD_ELEMENTS
    nbytes = elements * ACT_BYTES * swiglu_width(model) * tokens
    return nbytes / (layout_of(scenario).n * scenario.hardware.gpu.hbm_bandwidth_bytes_per_s)


def reference_weight_bytes(scenario: Scenario, model: ModelSpec) -> float:
    """bf16 weights of a frozen copy of ``model`` on one training GPU, sharded like the trained one."""
    lay = layout_of(scenario)
    if scenario.training.backend == "fsdp":
        return model.num_params / lay.n * ACT_BYTES
    dense = (model.num_params - model.expert_params) / (lay.t * lay.p)
    return (dense + model.expert_params / (lay.e * lay.et * lay.p)) * ACT_BYTES


def reference_swap_s(scenario: Scenario, model: ModelSpec) -> float:
    """Host traffic of swapping a host-resident reference model in and out of the trainer's GPUs: policy weights
    out, reference in, policy back (3 x a GPU's bf16 shard)."""
    if not scenario.training.reference_on_host:
        return 0.0
    host_bw = scenario.hardware.gpu.host_link_bandwidth_bytes_per_s * scenario.costs.host_link_efficiency
    copies = 1.0 if scenario.training.reference_streamed else 3.0  # streamed: FSDP CPU offload, up once
    return copies * reference_weight_bytes(scenario, model) / host_bw


def phase_time(
    scenario: Scenario,
    model: ModelSpec,
    tokens: float,
    sq_tokens: float,
    optimizer_steps: int = 1,
    epochs: int = 1,
    forward_only: bool = False,
    num_sequences: int = 0,
) -> TrainTime:
    """Seconds of a training phase (``forward_only``: one log-prob / values pass) over the step's ``tokens``
    (prompt + response, summed) and ``sq_tokens`` (sum of squared sequence lengths)."""
    if scenario.training.backend == "megatron":
        t = _megatron_time(scenario, model, tokens, sq_tokens, optimizer_steps, epochs, forward_only, num_sequences)
    else:
        t = _fsdp_time(scenario, model, tokens, sq_tokens, optimizer_steps, epochs, forward_only, num_sequences)
    swap = offload.phase_swap_s(scenario, model, forward_only)
    return dataclasses.replace(t, host_swap_s=swap) if swap else t


def reward_model_s(scenario: Scenario, tokens: float, sq_tokens: float) -> float:
    """One forward pass of ``s.reward.model`` over the scored samples' ``tokens`` (prompt + response, summed;
    ``sq_tokens`` their squares) on its GPUs (``reward.num_gpus``, or the training pool's): the GPUs' compute as
    for a log-prob pass (:func:`_compute_s`, forward only), each copy of ``tensor_parallel_size`` GPUs with its two
    all-reduces per layer of its share of the hidden states, plus ``costs.forward_overhead_s``. Zero without a
    reward model (the CPU reward of ``costs.reward_*`` is the pipeline's)."""
    rw = scenario.reward
    model = rw.model
    if model is None:
        return 0.0
    n = rw.num_gpus or scenario.hardware.num_train_gpus
    compute, _ = _compute_s(scenario, model, tokens, sq_tokens, n, forward_only=True)
    tp = rw.tensor_parallel_size
    copies = n // tp
    comm = 2 * model.num_layers * ring_s(scenario, 2 * tokens / copies * model.hidden_size * ACT_BYTES, tp, tp)
    return scenario.costs.forward_overhead_s + compute + comm


def _megatron_time(s, model, tokens, sq_tokens, optimizer_steps, epochs, forward_only, num_sequences):
    lay = layout_of(s)
    steps = 1 if forward_only else optimizer_steps
    passes = 1 if forward_only else epochs
    tok_opt = tokens * passes / steps  # tokens per optimizer step
    m = _micro_batches(s, lay, tok_opt, num_sequences * passes / steps, forward_only)
    compute, attn = _compute_s(s, model, tokens * passes, sq_tokens * passes, lay.n, forward_only)
    # tensor parallel: 2 collectives per layer forward, 2 backward (+2 for a recomputed forward)
    tp_ops = 2 if forward_only else (6 if s.training.activation_recompute == "full" else 4)
    layers_per_stage = model.num_layers / lay.p
    tokens_per_tp_group = tok_opt / (lay.d * lay.c)
    tp_per_op = ring_s(s, 2 * tokens_per_tp_group * model.hidden_size * ACT_BYTES, lay.t, lay.t)
    tp = steps * tp_ops * layers_per_stage * (tp_per_op + (m - 1) * latency_s(s, lay.t) * (lay.t > 1))
    # context parallel: ring exchange of K and V (forward; twice backward), hidden behind attention compute
    cp = 0.0
    if lay.c > 1:
        kv_bytes = 2 * model.num_kv_heads * model.head_dim * ACT_BYTES * tok_opt / (lay.d * lay.c * lay.t)
        volume = (1 if forward_only else 3) * layers_per_stage * kv_bytes * (lay.c - 1)
        cp_raw = steps * volume / link_bandwidth(s, lay.t * lay.c)
        cp = max(0.0, cp_raw - attn)
    # expert parallel: dispatch + combine, forward and backward
    ep = 0.0
    if model.is_moe and lay.e > 1:
        ep_ops = 2 if forward_only else (6 if s.training.activation_recompute == "full" else 4)
        tokens_per_gpu = tok_opt * lay.p / lay.n
        nbytes = tokens_per_gpu * model.num_experts_per_token * model.hidden_size * ACT_BYTES
        moe_layers_per_stage = model.num_moe_layers / lay.p
        ep = steps * ep_ops * moe_layers_per_stage * all_to_all_s(s, nbytes, lay.e, lay.e * lay.et)
    # pipeline: bubble of the fill and drain, and the send/recv of activations there
    bubble = p2p = 0.0
    if lay.p > 1:
        bubble = (compute + tp + ep) * (lay.p - 1) / (lay.v * m)
        act = tok_opt / (lay.d * m) / (lay.c * lay.t) * model.hidden_size * ACT_BYTES
        span = lay.n // lay.p * 2
        hops = (1 if forward_only else 2) * (lay.p - 1)
        p2p = steps * hops * (act / link_bandwidth(s, span) + latency_s(s, span))
    dp = opt = 0.0
    overhead = s.costs.forward_overhead_s if forward_only else steps * s.costs.train_step_overhead_s
    if not forward_only:
        dense_params = (model.num_params - model.expert_params) / (lay.t * lay.p)
        expert_params = model.expert_params / (lay.e * lay.et * lay.p)
        # LoRA: only the adapters' gradients are reduced and stepped (rlsim.trainer.lora)
        dense_params, expert_params = lora.trained(
            model, s.training, dense_params, expert_params, lay.t * lay.p, lay.e * lay.et * lay.p
        )
        g_dense, g_exp = lay.d * lay.c, lay.d_expert
        span = lay.n // lay.p
        rs = ring_s(s, dense_params * ACT_BYTES, g_dense, span) + ring_s(s, expert_params * ACT_BYTES, g_exp, span)
        ag = rs  # the all-gather moves what the reduce-scatter moved (an all-reduce is the two together)
        if s.training.overlap_communication:
            # the last micro-batch's backward (recomputed forward included) hides the reduce-scatter, the next
            # step's first forward the all-gather
            last_mb = compute / steps / m
            forwards = 4.0 if s.training.activation_recompute == "full" else 3.0  # forward-equivalents per mb
            exposed = max(0.0, rs - (forwards - 1.0) / forwards * last_mb) + max(0.0, ag - last_mb / forwards)
        else:
            exposed = rs + ag
        dp = steps * exposed
        if s.training.distributed_optimizer:
            shard = dense_params / g_dense + expert_params / g_exp
        else:
            shard = dense_params + expert_params
        opt = steps * _optimizer_s(s, shard)
    return TrainTime(
        compute_s=compute,
        tp_comm_s=tp,
        cp_comm_s=cp,
        ep_comm_s=ep,
        dp_comm_s=dp,
        pp_bubble_s=bubble,
        pp_p2p_s=p2p,
        optimizer_s=opt,
        overhead_s=overhead,
        micro_batches=m,
    )


def _fsdp_time(s, model, tokens, sq_tokens, optimizer_steps, epochs, forward_only, num_sequences):
    lay = layout_of(s)
    n, hw, tr = lay.n, s.hardware, s.training
    steps = 1 if forward_only else optimizer_steps
    passes = 1 if forward_only else epochs
    tok_opt = tokens * passes / steps
    m = _micro_batches(s, lay, tok_opt, num_sequences * passes / steps, forward_only)
    linear = padded_tokens(s, tokens, num_sequences) * padded_micro_batch_ratio(s, forward_only) * passes
    compute, _ = _compute_s(s, model, tokens * passes, sq_tokens * passes, n, forward_only, linear_tokens=linear)
    recompute = 1.0 if tr.activation_recompute == "full" else 0.0
    fwd_layer = compute / (steps * m * model.num_layers) / (1.0 if forward_only else lora.linear_passes(tr) + recompute)
    comm = 0.0
    f = shard_group(s)
    if n > 1 and tr.zero_stage == 3:
        layer_bytes = model.num_params / model.num_layers * ACT_BYTES
        ag = ring_s(s, layer_bytes, f, f)
        # LoRA: only the adapters' gradients are reduce-scattered (rlsim.trainer.lora)
        rs = (
            ag
            if not tr.lora_rank
            else ring_s(s, sum(lora.trained(model, tr, 0, 0, 1, 1)) * ACT_BYTES / model.num_layers, f, f)
        )
        if f < n:  # hybrid sharding: each gradient shard all-reduced across the n / f replicas (their GPUs strided
            rs += 2.0 * ring_s(s, layer_bytes / f, n // f, n)  # by f over all n), every backward
        if tr.offload_params:  # the shard comes up from the host before each gather
            ag += layer_bytes / f / (hw.gpu.host_link_bandwidth_bytes_per_s * s.costs.host_link_efficiency)
            rs += layer_bytes / f / (hw.gpu.host_link_bandwidth_bytes_per_s * s.costs.host_link_efficiency)
        per_mb = max(0.0, ag - fwd_layer)
        if not forward_only:  # the backward gathers again unless the forward kept the layer (reshard_after_forward)
            again = ag if tr.reshard_after_forward else 0.0
            per_mb += max(0.0, again + rs - (2.0 + recompute) * fwd_layer)
        # + the first layer's gather, never hidden; training: + the last reduce-scatter (the first layer's
        # gradients, the backward's end: no compute is left to hide it)
        comm = steps * (m * model.num_layers * per_mb + ag + (0.0 if forward_only else rs))
    elif n > 1 and not forward_only:
        comm = steps * zero12_comm_s(s, model, m, (2.0 + recompute) * fwd_layer * model.num_layers)
    opt = 0.0
    overhead = s.costs.forward_overhead_s if forward_only else steps * s.costs.train_step_overhead_s
    if not forward_only:
        opt = steps * _optimizer_s(
            s, sum(lora.trained(model, tr, model.num_params, 0, 1, 1)) / (f if tr.zero_stage == 3 else n)
        )
    sp = ulysses_s(s, model, tok_opt, m, forward_only) * steps
    return TrainTime(
        compute_s=compute, cp_comm_s=sp, fsdp_comm_s=comm, optimizer_s=opt, overhead_s=overhead, micro_batches=m
    )


def shard_group(s: Scenario) -> int:
    """GPUs an fsdp layout shards its parameters, gradients and optimizer state over: ``training.fsdp_shard_size``
    (verl fsdp_config.fsdp_size: a (replicas, shard) device mesh and FSDP's hybrid sharding below the training GPUs,
    volcengine/verl@v0.7.0:verl/workers/fsdp_workers.py:99-122), else all the training GPUs."""
    n = s.hardware.num_train_gpus
    return min(n, s.training.fsdp_shard_size or n)


def padded_tokens(s: Scenario, tokens: float, num_sequences: int) -> float:
    """Tokens the linear layers run on: ``num_sequences`` x (max_prompt_tokens + max_response_tokens) under
    ``training.pad_to_cap`` (verl without use_remove_padding: its agent loop pads every prompt and response to
    their caps, volcengine/verl@v0.7.0:verl/experimental/agent_loop/agent_loop.py:546-570, v0.6.1:419-442, and
    dp_actor.py:276 runs the model on the padded batch), else the real ``tokens``."""
    w = s.workload
    if s.training.pad_to_cap and num_sequences > 0:
        return max(tokens, float(num_sequences) * (w.max_prompt_tokens + w.max_response_tokens))
    return tokens


def zero12_comm_s(s: Scenario, model: ModelSpec, m: int, backward_s: float) -> float:
    """Exposed communication of one optimizer step under ZeRO-1 / ZeRO-2 (``training.zero_stage`` 1 or 2), the bf16
    parameters whole on every GPU: the gradients reduce-scattered over the n GPUs, every micro-batch under ZeRO-2
    (it reduces at each micro-step, deepspeedai/DeepSpeed@v0.19.5:deepspeed/runtime/engine.py:2857-2859 and
    zero/stage_1_and_2.py:1737-1741) and once at the step's end under ZeRO-1 (engine.py:2861-2864); hidden behind
    that micro-batch's backward (``backward_s``) when ``training.overlap_communication`` (DeepSpeed overlap_comm),
    else serial; then the updated bf16 partitions all-gathered after the optimizer step
    (stage_1_and_2.py:2370, all_gather_dp_groups), never hidden. Each collective moves (n-1)/n of the model's bf16
    bytes whatever n is: this part does not shrink with more GPUs."""
    n = layout_of(s).n
    full = ring_s(s, model.num_params * ACT_BYTES, n, n)
    reduce = max(0.0, full - backward_s) if s.training.overlap_communication else full
    reductions = m if s.training.zero_stage == 2 else 1
    return reductions * reduce + full


def ulysses_s(s: Scenario, model: ModelSpec, tok_opt: float, m: int, forward_only: bool) -> float:
    """Ulysses sequence parallel over c = ``training.ulysses_sequence_parallel_size`` GPUs (verl's fsdp
    workers), one optimizer step: around every attention layer four all-to-alls, q, k and v gathered by sequence
    and scattered by head before it, the output back after it (volcengine/verl@v0.7.0:
    verl/models/transformers/monkey_patch.py:93-115); k and v repeated to c heads when the model has fewer KV
    heads (monkey_patch.py:87). The backward runs them again, a full recompute once more; on the attention's
    critical path, so exposed. Each GPU holds 1/c of a micro-batch's tokens."""
    c = s.training.ulysses_sequence_parallel_size
    if c <= 1:
        return 0.0
    tokens_gpu_mb = tok_opt / layout_of(s).n / m
    hd, kv = model.head_dim, max(model.num_kv_heads, c)
    per_layer = 2 * all_to_all_s(s, tokens_gpu_mb * model.num_attention_heads * hd * ACT_BYTES, c, c)
    per_layer += 2 * all_to_all_s(s, tokens_gpu_mb * kv * hd * ACT_BYTES, c, c)
    runs = 1.0 if forward_only else (3.0 if s.training.activation_recompute == "full" else 2.0)
    return runs * m * model.num_layers * per_layer
