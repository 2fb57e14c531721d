"""A model spec from its own description: a Hugging Face ``config.json`` (or the model folder holding one).

RL recipes name models the catalog may not hold; their ``config.json`` says everything the simulator needs. This
module reads the architectures RL recipes use and derives the parameter counts the way the checkpoints hold them
(embeddings, per layer attention + MLP or experts + norms, final norm, untied LM head), so a spec read here
agrees with the published count (tests/rlsim/test_hf_config.py: within 1% for every fixture in
rlsim/catalog/hf_configs, each with its source, which the catalog serves as entries). ``model_type`` selects the family:

* dense, gated MLP: ``llama`` (Llama 2/3/3.1/3.2/3.3; ``attention_bias`` / ``mlp_bias`` counted when set),
  ``seed_oss`` (``attention_bias`` on q, k, v; ``attention_out_bias`` on the output projection),
  ``mistral``, ``qwen2`` (bias on q, k, v), ``qwen3`` (q/k norms), ``phi3`` (fused q/k/v, same count), ``gemma2``
  and ``gemma3_text`` / ``gemma3`` (four norms per layer; Gemma 3 q/k norms; a multimodal config's
  ``text_config``, the vision tower not counted);
* mixture of experts: ``mixtral``, ``qwen2_moe`` (a shared expert with its gate), ``qwen3_moe``, ``gpt_oss``
  (biases on attention and experts, attention sinks, router bias), ``deepseek_v2`` / ``deepseek_v3`` (multi-head
  latent attention, shared experts, the first ``first_k_dense_replace`` layers dense; the multi-token-prediction
  module, ``num_nextn_predict_layers``, is recorded as ``num_mtp_layers`` and not counted, as the catalog does),
  ``glm4_moe`` (GLM-4.5: DeepSeek's dense-first layers and shared experts around grouped-query attention, biased
  q, k, v when ``attention_bias``, an expert-score bias per router);
* hybrids (rlsim.catalog.hybrid): ``nemotron_h`` (Mamba-2 / attention / MLP blocks) and ``qwen3_next``, Qwen3.5
  (``qwen3_5`` / ``qwen3_5_moe``, read from their ``text_config``): gated linear attention with every n-th layer
  full attention.

A ``text_config`` is read by its own ``model_type``; one rlsim does not read is refused naming it (never read as
another family: a Qwen3.5 MoE read as Gemma 3 came in as a 1.26B dense model).

Sliding-window layers come from ``layer_types`` when the config lists them, else from the family's pattern
(Gemma 2 every other layer, Gemma 3 all but every ``sliding_window_pattern``-th, Mistral / Mixtral / Phi-3 every
layer when ``sliding_window`` is set, Qwen2 the layers from ``max_window_layers`` on when
``use_sliding_window``). Anything else is refused in one line naming the families read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from rlsim.catalog.hybrid import HYBRID, TEXT_OF, HybridConfigError, hybrid_spec
from rlsim.errors import RlsimError

DENSE = ("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3_text", "seed_oss")
MOE = ("mixtral", "qwen2_moe", "qwen3_moe", "gpt_oss", "deepseek_v2", "deepseek_v3", "glm4_moe")
_DEEPSEEK_MOE = ("deepseek_v2", "deepseek_v3", "glm4_moe")  # first_k_dense_replace dense layers, shared experts
# attention_bias biases q, k and v only: transformers 5.19.0 modeling_glm4_moe.py:197 (o_proj bias=False) and
# modeling_seed_oss.py:178 (o_proj bias=attention_out_bias)
_QKV_ONLY_BIAS = ("glm4_moe", "seed_oss")
FAMILIES = DENSE + MOE + ("gemma3",)
_GEMMA = ("gemma2", "gemma3_text")
_QKV_BIAS = ("qwen2", "qwen2_moe")  # bias on q, k and v, with no config field saying so
_QK_NORM = ("qwen3", "qwen3_moe", "gemma3_text")
_DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "float32": "float32", "bf16": "bfloat16", "fp16": "float16"}


class ModelConfigError(RlsimError, ValueError):
    """A config.json that cannot be read as a model spec."""


def read_config(path: str | Path) -> tuple[dict[str, Any], Path]:
    """The parsed ``config.json`` at ``path`` (the file, or a folder holding it) and the file's path."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "config.json"
    if not p.is_file():
        raise ModelConfigError(f"{path}: no config.json there; give a Hugging Face config.json or a model folder")
    try:
        cfg = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelConfigError(f"{p}: not valid JSON ({exc}); give the model's config.json as published") from None
    if not isinstance(cfg, dict):
        raise ModelConfigError(f"{p}: holds no mapping; give the model's config.json as published")
    return cfg, p


def _need(c: dict[str, Any], key: str, family: str) -> Any:
    if c.get(key) is None:
        raise ModelConfigError(f"config.json ({family}) lacks {key}; give the file as published")
    return c[key]


def _sliding_layers(c: dict[str, Any], family: str, layers: int) -> int:
    if isinstance(c.get("layer_types"), list):
        return sum(1 for t in c["layer_types"] if t == "sliding_attention")
    if not c.get("sliding_window"):
        return 0
    if family == "gemma2":
        return layers // 2
    if family == "gemma3_text":
        pattern = int(c.get("sliding_window_pattern") or 6)
        return layers - layers // pattern
    if family in ("mistral", "mixtral", "phi3"):
        return layers
    if family in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe") and c.get("use_sliding_window"):
        return max(0, layers - int(c.get("max_window_layers") or 0))
    return 0


def _moe_layers(c: dict[str, Any], family: str, layers: int) -> list[bool]:
    """Per layer, whether it holds experts."""
    if family in ("mixtral", "gpt_oss"):
        return [True] * layers
    if family in ("qwen2_moe", "qwen3_moe"):
        step = int(c.get("decoder_sparse_step") or 1)
        dense = set(c.get("mlp_only_layers") or ())
        return [i not in dense and (i + 1) % step == 0 for i in range(layers)]
    if family in _DEEPSEEK_MOE:
        first, freq = int(c.get("first_k_dense_replace") or 0), int(c.get("moe_layer_freq") or 1)
        return [i >= first and i % freq == 0 for i in range(layers)]
    return [False] * layers


class _Mlp(NamedTuple):
    """One config's MLP: widths, expert counts and parameters per layer (dense and with experts)."""

    moe: list[bool]  # per layer, whether it holds experts
    experts: int
    top_k: int
    dense_width: int
    expert_width: int
    per_expert: int
    shared_experts: int
    dense_mlp: int
    moe_mlp: int


def _text_family(cfg: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The config to read and its family: a multimodal config's ``text_config`` by its own ``model_type`` (Gemma 3's
    when it names none); an unread family is refused naming it and the keys a spelled-out model needs, never read
    as another family."""
    family = str(cfg.get("model_type") or "")
    text = cfg.get("text_config")
    if isinstance(text, dict) and (family == "gemma3" or family not in FAMILIES + HYBRID):
        inner = str(text.get("model_type") or TEXT_OF.get(family) or ("gemma3_text" if family == "gemma3" else ""))
        dtype = text.get("torch_dtype") or text.get("dtype") or cfg.get("torch_dtype") or cfg.get("dtype")
        cfg, family = {**text, "torch_dtype": dtype}, inner or f"{family or '(none)'} (its text_config names none)"
    if family not in FAMILIES + HYBRID:
        raise ModelConfigError(
            f"config.json model_type {family or '(none)'!r} is not one rlsim reads ({', '.join(FAMILIES + HYBRID)}); "
            "spell the model out in the scenario (model: {num_layers: ..., hidden_size: ..., num_attention_heads: "
            "..., num_kv_heads: ..., head_dim: ..., vocab_size: ..., num_params: ..., num_active_params: ...}, "
            "and num_experts, num_experts_per_token, moe_intermediate_size for experts)"
        )
    return cfg, family


def _attention(c: dict[str, Any], family: str, h: int, heads: int, mla: bool) -> tuple[int, int, int]:
    """Attention parameters per layer, the head dimension and the KV heads (multi-head latent attention or not)."""
    kv = int(c.get("num_key_value_heads") or heads)
    hd = int(c.get("head_dim") or h // heads)
    if mla:
        nope, rope, v = int(c["qk_nope_head_dim"]), int(c["qk_rope_head_dim"]), int(c["v_head_dim"])
        q_rank, kv_rank = int(c.get("q_lora_rank") or 0), int(c["kv_lora_rank"])
        q = h * q_rank + q_rank + q_rank * heads * (nope + rope) if q_rank else h * heads * (nope + rope)
        attn = q + h * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + v) + heads * v * h
        hd, kv = nope + rope, heads
    else:
        attn = 2 * h * heads * hd + 2 * h * kv * hd
        if family in _QKV_BIAS or c.get("attention_bias"):
            o_bias = c.get("attention_out_bias") if family in _QKV_ONLY_BIAS else c.get("attention_bias")
            attn += heads * hd + 2 * kv * hd + (h if o_bias else 0)
        if family in _QK_NORM or (family == "glm4_moe" and c.get("use_qk_norm")):
            attn += 2 * hd
        if family == "gpt_oss":
            attn += heads  # attention sinks
    return attn, hd, kv


def _mlp(c: dict[str, Any], family: str, h: int, layers: int) -> _Mlp:
    """The MLP of every layer: dense width, experts, shared experts."""
    moe = _moe_layers(c, family, layers)
    experts = int(c.get("num_local_experts") or c.get("num_experts") or c.get("n_routed_experts") or 0)
    top_k = int(c.get("num_experts_per_tok") or c.get("experts_per_token") or 0)
    dense_width = int(c.get("intermediate_size") or 0)
    if family in ("mixtral", "gpt_oss"):
        expert_width, dense_width = dense_width, 0
    else:
        expert_width = int(c.get("moe_intermediate_size") or 0)
    per_expert = 3 * h * expert_width + (2 * expert_width + h if family == "gpt_oss" else 0)
    # a bias per expert: gpt-oss's router, DeepSeek's noaux_tc and GLM-4.5's e_score_correction_bias
    biased = family == "gpt_oss" or _biased(c, family)
    router = h * experts + (experts if biased else 0)
    shared_experts, shared = 0, 0
    if family == "qwen2_moe" and c.get("shared_expert_intermediate_size"):
        width = int(c["shared_expert_intermediate_size"])
        shared, shared_experts = 3 * h * width + h, round(width / expert_width) if expert_width else 0
    elif family in _DEEPSEEK_MOE:
        shared_experts = int(c.get("n_shared_experts") or 0)
        shared = shared_experts * 3 * h * expert_width
    dense_mlp = 3 * h * dense_width + (2 * dense_width + h if c.get("mlp_bias") else 0)
    moe_mlp = experts * per_expert + router + shared
    return _Mlp(moe, experts, top_k, dense_width, expert_width, per_expert, shared_experts, dense_mlp, moe_mlp)


def _biased(c: dict[str, Any], family: str) -> bool:
    """Whether the router carries a per-expert score-correction bias (DeepSeek noaux_tc, GLM-4.5's
    e_score_correction_bias)."""
    return family == "glm4_moe" or c.get("topk_method") == "noaux_tc"


def spec_from_config(cfg: dict[str, Any], name: str, hf_id: str = "") -> dict[str, Any]:
    """An rlsim model spec (the mapping a scenario's ``model:`` takes) from a parsed config.json."""
    cfg, family = _text_family(cfg)
    if family in HYBRID:
        dtype = _DTYPES.get(str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"), "bfloat16")
        try:
            spec = hybrid_spec(cfg, family, 4 if dtype == "float32" else 2)
        except HybridConfigError as exc:
            raise ModelConfigError(str(exc)) from None
        spec.pop("layer_params")
        absent = dict.fromkeys(("num_experts", "num_experts_per_token", "moe_intermediate_size", "num_dense_layers"), 0)
        absent |= dict.fromkeys(("num_shared_experts", "kv_lora_rank", "qk_rope_head_dim", "num_mtp_layers"), 0)
        absent["routing_groups"] = 0
        absent |= {"sliding_window": 0, "num_sliding_layers": 0}
        return {"name": name, "hf_id": hf_id, **absent, **spec, "dtype": dtype}
    c = cfg
    h, layers = int(_need(c, "hidden_size", family)), int(_need(c, "num_hidden_layers", family))
    heads, vocab = int(_need(c, "num_attention_heads", family)), int(_need(c, "vocab_size", family))
    mla = family in ("deepseek_v2", "deepseek_v3") and bool(c.get("kv_lora_rank"))

    # attention and the norms around it, per layer
    attn, hd, kv = _attention(c, family, h, heads, mla)
    norms = (4 if family in _GEMMA else 2) * h

    # MLP: dense width, experts, shared experts
    mlp = _mlp(c, family, h, layers)
    experts, top_k, expert_width = mlp.experts, mlp.top_k, mlp.expert_width

    tied = bool(c.get("tie_word_embeddings", family in _GEMMA))
    n_moe = sum(mlp.moe)
    total = vocab * h * (1 if tied else 2) + h + layers * (attn + norms) + n_moe * mlp.moe_mlp
    total += (layers - n_moe) * mlp.dense_mlp
    active = total - n_moe * max(0, experts - top_k) * mlp.per_expert
    dtype = _DTYPES.get(str(c.get("torch_dtype") or c.get("dtype") or "bfloat16"), "bfloat16")
    sliding = _sliding_layers(c, family, layers)
    return {
        "name": name,
        "hf_id": hf_id,
        "num_layers": layers,
        "hidden_size": h,
        "num_attention_heads": heads,
        "num_kv_heads": kv,
        "head_dim": hd,
        "vocab_size": vocab,
        "intermediate_size": mlp.dense_width if layers > n_moe else 0,
        "num_experts": experts if n_moe else 0,
        "num_experts_per_token": top_k if n_moe else 0,
        "moe_intermediate_size": expert_width if n_moe else 0,
        "num_dense_layers": layers - n_moe if n_moe else 0,
        "num_shared_experts": mlp.shared_experts,
        # a biased router vLLM sends through grouped_topk (DeepSeek noaux_tc, GLM-4.5): n_group (rlsim.run.moe_decode)
        "routing_groups": int(c.get("n_group") or 1) if n_moe and family in _DEEPSEEK_MOE and _biased(c, family) else 0,
        "kv_lora_rank": int(c["kv_lora_rank"]) if mla else 0,
        "qk_rope_head_dim": int(c["qk_rope_head_dim"]) if mla else 0,
        "num_mtp_layers": int(c.get("num_nextn_predict_layers") or 0),
        "sliding_window": int(c.get("sliding_window") or 0) if sliding else 0,
        "num_sliding_layers": sliding,
        "dtype": dtype,
        "tie_word_embeddings": tied,
        "num_params": float(total),
        "num_active_params": float(active),
    }


def spec_from_path(path: str | Path) -> dict[str, Any]:
    """The spec of the config.json at ``path`` (a file or a model folder), named after its folder (a hub cache
    snapshot after its model: ``models--Qwen--Qwen3-8B/snapshots/REV`` -> ``Qwen3-8B``)."""
    cfg, file = read_config(path)
    name, hf_id = file.parent.name or "model", str(cfg.get("_name_or_path") or "")
    repo = file.parent.parent.parent.name  # a hub cache snapshot: models--ORG--NAME/snapshots/REVISION/
    if file.parent.parent.name == "snapshots" and repo.startswith("models--") and repo.count("--") >= 2:
        org, _, name = repo.removeprefix("models--").partition("--")
        hf_id = hf_id or f"{org}/{name}"
    return spec_from_config(cfg, name, hf_id)
