"""Two vLLM-release mechanisms of the MoE decode path (issue 56), as values of the engine behaviours
(rlsim/catalog/engines.yaml) that rlsim.run.costs adds to its decode roofline.

* Shared-expert overlap (behaviour ``shared_expert_overlap_max_tokens``). From vLLM 0.11.1 (PR #26440, refined by
  #28406) ``SharedFusedMoE`` runs the shared expert on an auxiliary CUDA stream while the routed experts run, when the
  iteration has at most ``VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD`` = 256 tokens (vllm@v0.11.2:
  vllm/model_executor/layers/fused_moe/layer.py:328-341, 1697-1705; vllm/envs.py:1483-1492; vllm@v0.17.1:
  vllm/model_executor/layers/fused_moe/runner/default_moe_runner.py:246-255); 0.10.0 and 0.11.0 run it after them
  on the same stream. Priced per MoE layer as the shorter of the two streams' roofline times, each the max of its
  weight-read time (the shared expert's weights are read every iteration, the routed experts' read share is
  rlsim.run.costs.moe_weight_fraction's at the grouped GEMMs' bandwidth) and its FLOP time (2 x params x tokens);
  the iteration's GPU time drops by that, times the MoE layers.
* Unfused grouped top-k (behaviour ``unfused_grouped_topk_s_per_layer``). vLLM 0.10.0 routes a group-limited,
  score-corrected router (DeepSeek-V3: n_group 8, topk_group 4, e_score_correction_bias) through the torch.compiled
  Python ``grouped_topk`` (vllm@v0.10.0:vllm/model_executor/layers/fused_moe/fused_moe.py:917-974, about 6-10 small
  kernels); 0.10.2 and later through one fused CUDA kernel when the bias is present (PR #23274;
  vllm@v0.10.2:vllm/model_executor/layers/fused_moe/fused_moe.py:955-968; vllm@v0.11.2:...:1319-1359 folds the
  sigmoid and the bias into it). The behaviour states the extra GPU time per MoE layer per decode iteration on an
  H100; a model pays it only with ``routing_groups`` > 0 (rlsim.schema.specs.ModelSpec).
"""

from __future__ import annotations

import numpy as np

from rlsim.schema import ModelSpec

_MLP_MATRICES = 3  # gate, up and down projections of a SwiGLU expert


def shared_expert_hidden_s(
    model: ModelSpec,
    tokens: np.ndarray,
    per_param: float,
    routed_read_bytes: np.ndarray,
    bw: float,
    flops: float,
    max_tokens: int,
) -> np.ndarray:
    """GPU time per decode iteration (per batch entry of ``tokens``) that the shared experts hide under the routed
    experts when the engine overlaps them for iterations of at most ``max_tokens`` tokens (0: never).

    ``per_param`` is the engine's weight bytes per parameter, ``routed_read_bytes`` the routed experts' reads of the
    iteration over all MoE layers (already divided by the grouped GEMMs' bandwidth fraction), ``bw`` and ``flops``
    the replica's decode HBM bandwidth and FLOP rate, as rlsim.run.costs.RooflineCostModel.decode_coefficients has
    them."""
    tokens = np.asarray(tokens, dtype=float)
    if max_tokens <= 0 or model.num_shared_experts == 0 or model.num_moe_layers == 0:
        return np.zeros_like(tokens)
    expert_params = _MLP_MATRICES * model.hidden_size * model.moe_intermediate_size
    shared_params = model.num_shared_experts * expert_params
    shared_s = np.maximum(shared_params * per_param / bw, 2.0 * shared_params * tokens / flops)
    routed_flops = 2.0 * model.num_experts_per_token * expert_params * tokens
    routed_s = np.maximum(np.asarray(routed_read_bytes) / model.num_moe_layers / bw, routed_flops / flops)
    hidden = model.num_moe_layers * np.minimum(shared_s, routed_s)
    return np.where((tokens > 0) & (tokens <= max_tokens), hidden, 0.0)


def grouped_topk_s(model: ModelSpec, per_layer_s: float) -> float:
    """Extra GPU time per decode iteration of an unfused grouped top-k router: ``per_layer_s`` (already scaled to
    the GPU) x the MoE layers, for a model with grouped routing only."""
    return per_layer_s * model.num_moe_layers if model.routing_groups > 0 else 0.0
