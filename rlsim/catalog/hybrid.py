"""Hybrid architectures from their config.json: a model described by its layer mix, each layer type counted and
priced on its own.

Two kinds of hybrid are read:

* Mamba-Transformer, ``model_type`` ``nemotron_h`` (Nemotron-H, Nemotron Nano 2): ``hybrid_override_pattern`` (or
  ``layers_block_type``) names every block, ``M`` a Mamba-2 mixer, ``*`` self-attention, ``-`` an MLP (squared-ReLU
  up and down projections, no gate); transformers 5.19.0 models/nemotron_h/configuration_nemotron_h.py
  (``_pattern_to_list``, and its defaults for the keys a config leaves out: ``n_groups`` 8, ``conv_kernel`` 4,
  ``use_conv_bias`` true, ``mamba_proj_bias`` / ``attention_bias`` / ``mlp_bias`` false, untied embeddings).
  Mixture-of-experts blocks (``E``, Nemotron 3) are refused: their experts have no gate, which rlsim's expert
  count (three matrices each) does not describe.
* Gated linear attention, ``qwen3_next`` and Qwen3.5 (``qwen3_5_text`` / ``qwen3_5_moe_text``, the ``text_config``
  of ``qwen3_5`` / ``qwen3_5_moe``): ``layer_types`` (or every ``full_attention_interval``-th layer) says which
  layers hold gated attention (q projection doubled for the output gate, q/k norms) and which a Gated DeltaNet
  (transformers 5.19.0 models/qwen3_5_moe/modeling_qwen3_5_moe.py Qwen3_5MoeGatedDeltaNet: in_proj_qkv, in_proj_z,
  in_proj_b, in_proj_a, a depthwise conv1d without bias, dt_bias, A_log, a per-head gated norm, out_proj); every
  layer has an MLP, or experts with one shared expert and its sigmoid gate (qwen3_next, qwen3_5_moe_text).

Per layer type: parameters (so the spec's totals are the checkpoint's), whether it holds a KV cache (attention only)
and the fixed state a recurrent layer keeps per sequence instead, independent of the sequence's length. The state
is what vLLM allocates per request (vllm-project/vllm vllm/model_executor/layers/mamba/mamba_utils.py,
MambaStateShapeCalculator): Mamba-2 a conv state of (conv_kernel - 1) x (intermediate + 2 n_groups d_state) and an
SSM state of n_heads x head_dim x d_state; Gated DeltaNet a conv state of (kernel - 1) x (2 key_dim + value_dim)
and a state of num_v_heads x head_k_dim x head_v_dim. The conv state is kept in the model's dtype, the SSM state
in ``mamba_ssm_cache_dtype`` when the config names one (Nemotron-H's ``float32``; vLLM's ``--mamba-ssm-cache-dtype``),
else the model's. The spec records ``num_attention_layers`` (KV cache and attention FLOPs over the context),
``num_recurrent_layers`` and ``recurrent_state_bytes`` (per sequence, all recurrent layers); rlsim.run.costs
prices decode with that state read and written back each step instead of a KV cache growing with the length, and
Scenario.recurrent_state_reserve_bytes takes the states of the sequences that can run from the KV pool.
Not modelled per layer type: tensor-parallel all-reduces (two per layer, where a Nemotron-H block has one) and
training activations (a transformer layer's, for every block).
"""

from __future__ import annotations

from typing import Any

from rlsim.errors import RlsimError

NEMOTRON_H = "nemotron_h"
GATED_DELTA = ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")
HYBRID = (NEMOTRON_H, *GATED_DELTA)
# the multimodal wrappers whose language model is their text_config
TEXT_OF = {"qwen3_5": "qwen3_5_text", "qwen3_5_moe": "qwen3_5_moe_text"}
_PATTERN = {"M": "mamba2", "*": "attention", "-": "mlp", "E": "moe"}
_BLOCK_TYPES = {"linear_attention": "mamba2", "full_attention": "attention", "mlp": "mlp", "moe": "moe"}
_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "bf16": 2, "fp16": 2, "fp32": 4}

# the keys each family is read from, named when one is missing
NEEDS = {
    NEMOTRON_H: (
        "hidden_size",
        "vocab_size",
        "num_attention_heads",
        "hybrid_override_pattern",
        "mamba_num_heads",
        "mamba_head_dim",
        "ssm_state_size",
        "intermediate_size",
    ),
    "qwen3_next": (
        "hidden_size",
        "vocab_size",
        "num_hidden_layers",
        "num_attention_heads",
        "linear_num_key_heads",
        "linear_num_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
    ),
}
NEEDS["qwen3_5_text"] = NEEDS["qwen3_5_moe_text"] = NEEDS["qwen3_next"]


class HybridConfigError(RlsimError, ValueError):
    """A hybrid config.json that cannot be read as a model spec."""


def _need(c: dict[str, Any], key: str, family: str) -> Any:
    if c.get(key) is None:
        raise HybridConfigError(
            f"config.json ({family}) lacks {key}; a {family} model is read from {', '.join(NEEDS[family])}: give "
            "the file as published"
        )
    return c[key]


def layer_mix(c: dict[str, Any], family: str) -> list[str]:
    """Per layer its type: ``mamba2``, ``attention``, ``mlp``, ``moe`` (Nemotron-H blocks), or ``gdn`` /
    ``attention`` (the token mixer of a gated-linear-attention layer, each followed by its MLP or experts)."""
    if family == NEMOTRON_H:
        if isinstance(c.get("layers_block_type"), list):
            return [_BLOCK_TYPES.get(str(t), str(t)) for t in c["layers_block_type"]]
        pattern = str(_need(c, "hybrid_override_pattern", family))
        bad = sorted(set(pattern) - set(_PATTERN))
        if bad:
            raise HybridConfigError(
                f"config.json hybrid_override_pattern has {''.join(bad)!r}; each block is M (Mamba-2), * (attention), "
                "- (MLP) or E (experts)"
            )
        return [_PATTERN[ch] for ch in pattern]
    layers = int(_need(c, "num_hidden_layers", family))
    types = c.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        return ["attention" if t == "full_attention" else "gdn" for t in types]
    interval = int(c.get("full_attention_interval") or 4)
    return ["attention" if (i + 1) % interval == 0 else "gdn" for i in range(layers)]


def _nemotron(c: dict[str, Any], dtype_bytes: int) -> dict[str, Any]:
    f = NEMOTRON_H
    mix = layer_mix(c, f)
    if "moe" in mix:
        raise HybridConfigError(
            "config.json (nemotron_h) has mixture-of-experts blocks (E); rlsim reads Nemotron-H with Mamba-2, "
            "attention and MLP blocks only: spell the model out in the scenario (model: {num_layers: ..., "
            "num_params: ..., num_active_params: ..., ...})"
        )
    h, vocab = int(_need(c, "hidden_size", f)), int(_need(c, "vocab_size", f))
    heads = int(_need(c, "num_attention_heads", f))
    kv = int(c.get("num_key_value_heads") or heads)
    hd = int(c.get("head_dim") or h // heads)
    m_heads, m_hd = int(_need(c, "mamba_num_heads", f)), int(_need(c, "mamba_head_dim", f))
    d_state = int(_need(c, "ssm_state_size", f))
    groups = int(c.get("n_groups") or c.get("mamba_n_groups") or 8)
    kernel = int(c.get("conv_kernel") or c.get("mamba_d_conv") or 4)
    inter = m_heads * m_hd  # the Mamba mixer's width (transformers NemotronHMamba2Mixer: num_heads x head_dim)
    conv_dim = inter + 2 * groups * d_state
    proj_bias = bool(c.get("mamba_proj_bias") or c.get("use_bias"))
    conv_bias = c.get("use_conv_bias", c.get("mamba_conv_bias", True))
    mamba = (
        h * (2 * inter + 2 * groups * d_state + m_heads)  # in_proj: z, x, B, C, dt
        + conv_dim * kernel  # depthwise conv1d
        + (conv_dim if conv_bias else 0)
        + 3 * m_heads  # dt_bias, A_log, D
        + inter  # gated RMSNorm
        + inter * h  # out_proj
        + ((2 * inter + 2 * groups * d_state + m_heads) + h if proj_bias else 0)
    )
    attn = 2 * h * heads * hd + 2 * h * kv * hd + ((heads + 2 * kv) * hd + h if c.get("attention_bias") else 0)
    width = int(_need(c, "intermediate_size", f))
    mlp = 2 * h * width + (width + h if c.get("mlp_bias") else 0)
    per_type = {"mamba2": mamba + h, "attention": attn + h, "mlp": mlp + h}  # each block has its pre-norm
    tied = bool(c.get("tie_word_embeddings", False))
    total = vocab * h * (1 if tied else 2) + h + sum(per_type[t] for t in mix)
    ssm_bytes = _BYTES.get(str(c.get("mamba_ssm_cache_dtype") or ""), dtype_bytes)
    state = conv_dim * (kernel - 1) * dtype_bytes + m_heads * m_hd * d_state * ssm_bytes
    n_mamba = mix.count("mamba2")
    return {
        "num_layers": len(mix),
        "hidden_size": h,
        "num_attention_heads": heads,
        "num_kv_heads": kv,
        "head_dim": hd,
        "vocab_size": vocab,
        "intermediate_size": width,
        "num_attention_layers": mix.count("attention"),
        "num_recurrent_layers": n_mamba,
        "recurrent_state_bytes": float(n_mamba * state),
        "tie_word_embeddings": tied,
        "num_params": float(total),
        "num_active_params": float(total),
        "layer_params": {t: per_type[t] for t in ("mamba2", "attention", "mlp")},
    }


def _gated_delta(c: dict[str, Any], family: str, dtype_bytes: int) -> dict[str, Any]:
    mix = layer_mix(c, family)
    h, vocab = int(_need(c, "hidden_size", family)), int(_need(c, "vocab_size", family))
    heads = int(_need(c, "num_attention_heads", family))
    kv = int(c.get("num_key_value_heads") or heads)
    hd = int(c.get("head_dim") or h // heads)
    k_heads, v_heads = int(_need(c, "linear_num_key_heads", family)), int(_need(c, "linear_num_value_heads", family))
    k_dim, v_dim = int(_need(c, "linear_key_head_dim", family)), int(_need(c, "linear_value_head_dim", family))
    kernel = int(c.get("linear_conv_kernel_dim") or 4)
    key, value = k_heads * k_dim, v_heads * v_dim
    conv_dim = 2 * key + value
    gdn = h * conv_dim + h * value + 2 * h * v_heads + conv_dim * kernel + 2 * v_heads + v_dim + value * h
    gated_q = 2 if c.get("attn_output_gate", True) else 1  # q_proj yields the query and its output gate
    attn = gated_q * h * heads * hd + 2 * h * kv * hd + heads * hd * h + 2 * hd
    if c.get("attention_bias"):
        attn += gated_q * heads * hd + 2 * kv * hd + h
    experts = int(c.get("num_experts") or 0) if family != "qwen3_5_text" else 0
    top_k = int(c.get("num_experts_per_tok") or 0) if experts else 0
    expert_width = int(c.get("moe_intermediate_size") or 0)
    per_expert = 3 * h * expert_width
    shared_width = int(c.get("shared_expert_intermediate_size") or 0) if experts else 0
    moe = experts * per_expert + h * experts + (3 * h * shared_width + h if shared_width else 0)
    dense_width = int(c.get("intermediate_size") or 0)
    dense = 3 * h * dense_width
    only_dense = set(c.get("mlp_only_layers") or ()) if experts else set(range(len(mix)))
    step = int(c.get("decoder_sparse_step") or 1)
    has_experts = [i not in only_dense and (i + 1) % step == 0 for i in range(len(mix))]
    n_moe = sum(has_experts)
    tied = bool(c.get("tie_word_embeddings", False))
    mixers = sum(gdn if t == "gdn" else attn for t in mix)
    total = vocab * h * (1 if tied else 2) + h + mixers + 2 * h * len(mix) + n_moe * moe + (len(mix) - n_moe) * dense
    active = total - n_moe * max(0, experts - top_k) * per_expert
    ssm_bytes = _BYTES.get(str(c.get("mamba_ssm_cache_dtype") or ""), dtype_bytes)
    state = conv_dim * (kernel - 1) * dtype_bytes + v_heads * k_dim * v_dim * ssm_bytes
    n_gdn = mix.count("gdn")
    return {
        "num_layers": len(mix),
        "hidden_size": h,
        "num_attention_heads": heads,
        "num_kv_heads": kv,
        "head_dim": hd,
        "vocab_size": vocab,
        "intermediate_size": dense_width if len(mix) > n_moe else 0,
        "num_experts": experts if n_moe else 0,
        "num_experts_per_token": top_k if n_moe else 0,
        "moe_intermediate_size": expert_width if n_moe else 0,
        "num_dense_layers": len(mix) - n_moe if n_moe else 0,
        "num_shared_experts": round(shared_width / expert_width) if shared_width and expert_width else 0,
        "num_attention_layers": mix.count("attention"),
        "num_recurrent_layers": n_gdn,
        "recurrent_state_bytes": float(n_gdn * state),
        "num_mtp_layers": int(c.get("mtp_num_hidden_layers") or c.get("num_nextn_predict_layers") or 0),
        "tie_word_embeddings": tied,
        "num_params": float(total),
        "num_active_params": float(active),
        "layer_params": {"gdn": gdn, "attention": attn},
    }


def hybrid_spec(c: dict[str, Any], family: str, dtype_bytes: int) -> dict[str, Any]:
    """The spec fields of a hybrid config (``family`` one of HYBRID), with ``layer_params``: parameters of one
    layer of each type (mixer and its norms for Nemotron-H blocks; the token mixer alone for gated DeltaNet
    models), which the caller drops."""
    if family == NEMOTRON_H:
        return _nemotron(c, dtype_bytes)
    return _gated_delta(c, family, dtype_bytes)
