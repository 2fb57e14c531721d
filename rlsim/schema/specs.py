"""Catalog specs and the bounds of scenario fields: a model's architecture (:class:`ModelSpec`) and an
accelerator's peak numbers (:class:`GPUSpec`), as ``rlsim/catalog/*.yaml`` holds them or a scenario spells them out.

Units live in field names (``_bytes``, ``_flops_per_s``, ``_bytes_per_s``); :func:`bounds` is the field metadata
(``ge`` / ``gt`` / ``le`` / ``lt``) that :func:`rlsim.scenario.build.check_bounds` enforces at load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

MAX_TOKENS = 100_000_000  # a bound on any length, so that numbers stay far inside int64 arithmetic


# an accelerator's peak rates (FLOP/s, bytes/s) and memory: from a megabyte (per second) to an exa-scale value;
# outside that a typo, and the step times underflow or overflow (1e-300 FLOP/s gave NaN step times)
MIN_RATE, MAX_RATE = 1e6, 1e21
MAX_OVERHEAD_S = 1e6  # a cost coefficient in seconds above 11.6 days is a typo, and near 1e308 times overflow


def bounds(**kw: Any) -> dict[str, Any]:
    """Field metadata: ge / gt / le / lt bounds, and doc."""
    return kw


@dataclass(frozen=True)
class ModelSpec:
    """Architecture and size of a causal LM (catalog entry or spelled out)."""

    name: str
    num_layers: int = field(metadata=bounds(ge=1, le=10_000))
    hidden_size: int = field(metadata=bounds(ge=1, le=1_000_000))
    num_attention_heads: int = field(metadata=bounds(ge=1, le=100_000))
    num_kv_heads: int = field(metadata=bounds(ge=1, le=100_000))
    head_dim: int = field(metadata=bounds(ge=1, le=100_000))
    vocab_size: int = field(metadata=bounds(ge=1, le=100_000_000))
    num_params: float = field(metadata=bounds(gt=0))
    num_active_params: float = field(metadata=bounds(gt=0))
    intermediate_size: int = field(default=0, metadata=bounds(ge=0))
    num_experts: int = field(default=0, metadata=bounds(ge=0))
    num_experts_per_token: int = field(default=0, metadata=bounds(ge=0))
    moe_intermediate_size: int = field(default=0, metadata=bounds(ge=0))
    # MoE layers: how many layers keep a dense MLP, and the always-active shared experts of each MoE layer
    num_dense_layers: int = field(default=0, metadata=bounds(ge=0))
    num_shared_experts: int = field(default=0, metadata=bounds(ge=0))
    # expert groups of a group-limited router with a score-correction bias (DeepSeek-V3 n_group, topk_method
    # noaux_tc), which vLLM routes through grouped_topk (rlsim.run.moe_decode); 0: plain top-k routing
    routing_groups: int = field(default=0, metadata=bounds(ge=0))
    # multi-head latent attention (DeepSeek-V2/V3): the KV cache holds one latent of kv_lora_rank plus the
    # decoupled RoPE key (qk_rope_head_dim) per token per layer, shared by all heads
    kv_lora_rank: int = field(default=0, metadata=bounds(ge=0))
    qk_rope_head_dim: int = field(default=0, metadata=bounds(ge=0))
    num_mtp_layers: int = field(default=0, metadata=bounds(ge=0))  # multi-token-prediction modules (draft heads)
    # sliding-window attention: num_sliding_layers of the layers attend to the last sliding_window tokens only
    # (Gemma 2 and gpt-oss: every other layer); the engine keeps only the window's KV for them
    sliding_window: int = field(default=0, metadata=bounds(ge=0, le=MAX_TOKENS))
    num_sliding_layers: int = field(default=0, metadata=bounds(ge=0))
    # hybrids (rlsim.catalog.hybrid): the layers with attention, which alone hold a KV cache (0: every layer), and
    # the recurrent layers (Mamba-2, Gated DeltaNet) that keep a fixed state per sequence instead: their number and
    # the state's bytes per sequence over all of them, whatever the sequence's length
    num_attention_layers: int = field(default=0, metadata=bounds(ge=0))
    num_recurrent_layers: int = field(default=0, metadata=bounds(ge=0))
    recurrent_state_bytes: float = field(default=0.0, metadata=bounds(ge=0))
    dtype: str = "bfloat16"
    tie_word_embeddings: bool = False
    hf_id: str = ""

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def uses_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V for every attention layer (:attr:`attention_layers`):
        2 * layers * kv_heads * head_dim * dtype bytes (docs/reference.md section 6); with
        MLA one latent per layer: layers * (kv_lora_rank + qk_rope_head_dim) * dtype bytes (DeepSeek-V2 paper,
        arXiv 2405.04434, section 2.1)."""
        if self.uses_mla:
            return self.num_layers * (self.kv_lora_rank + self.qk_rope_head_dim) * self.dtype_bytes
        return 2 * self.attention_layers * self.num_kv_heads * self.head_dim * self.dtype_bytes

    @property
    def attention_layers(self) -> int:
        """Layers with attention (and a KV cache): a hybrid's num_attention_layers, else every layer."""
        return self.num_attention_layers or self.num_layers

    @property
    def sliding_layer_fraction(self) -> float:
        """Share of the layers with sliding-window attention (0 when the model has no window)."""
        return self.num_sliding_layers / self.num_layers if self.sliding_window > 0 else 0.0

    @property
    def weight_bytes(self) -> float:
        return self.num_params * self.dtype_bytes

    @property
    def expert_params(self) -> float:
        """Parameters in routed experts (gate, up, down projections of every expert of every layer)."""
        return float(self.num_moe_layers * self.num_experts * 3 * self.hidden_size * self.moe_intermediate_size)

    @property
    def num_moe_layers(self) -> int:
        return self.num_layers - self.num_dense_layers if self.is_moe else 0


@dataclass(frozen=True)
class GPUSpec:
    """Peak numbers of one accelerator (dense bf16, SI units)."""

    name: str
    bf16_flops_per_s: float = field(metadata=bounds(ge=MIN_RATE, le=MAX_RATE))
    hbm_bandwidth_bytes_per_s: float = field(metadata=bounds(ge=MIN_RATE, le=MAX_RATE))
    memory_bytes: float = field(metadata=bounds(ge=1e6, le=1e18))
    link_bandwidth_bytes_per_s: float = field(metadata=bounds(ge=MIN_RATE, le=MAX_RATE))
    host_link_bandwidth_bytes_per_s: float = field(default=64e9, metadata=bounds(ge=MIN_RATE, le=MAX_RATE))
    # memory the driver reports (what vLLM's gpu_memory_utilization multiplies); None: memory_bytes
    device_memory_bytes: float | None = field(default=None, metadata=bounds(ge=1e6, le=1e18))
    # dense FP8 tensor peak; None: no FP8 tensor cores (FP8 training is refused there)
    fp8_flops_per_s: float | None = field(default=None, metadata=bounds(ge=MIN_RATE, le=MAX_RATE))
    # GPUs in one NVLink/NVSwitch domain of the standard system (8 for DGX/HGX, 72 for GB200 NVL72)
    nvlink_domain_size: int = field(default=8, metadata=bounds(ge=1, le=100_000))
    # GPUs of one node or compute tray, the unit a scheduler allocates and whose NICs it owns (8 for DGX/HGX, 4 for
    # a GB200 compute tray); None: the NVLink domain (one node per domain). A domain of several nodes (multi-node
    # NVLink) carries collectives between them only when the job sets it up (hardware.multi_node_nvlink)
    node_size: int | None = field(default=None, metadata=bounds(ge=1, le=100_000))
    # scale-out network per GPU, one direction (DGX H100: one 400 Gb/s NIC per GPU = 50 GB/s)
    nic_bandwidth_bytes_per_s: float = field(default=50e9, metadata=bounds(ge=MIN_RATE, le=MAX_RATE))
    # host (CPU) memory of one node of that standard system, bytes; None: unknown (offload is not checked against it)
    host_memory_bytes: float | None = field(default=None, metadata=bounds(ge=1e6, le=1e18))
    # What this GPU generation's software reaches, relative to Hopper (H100 SXM = 1), from published measurements
    # (rlsim/catalog/gpus.yaml gives each value's source): the costs' efficiencies are Hopper fractions of peak, and
    # these carry them to another generation instead of the peak ratio. train: Megatron / PyTorch training and
    # log-prob passes; gemm: the engine's prefill and decode GEMMs (best cuBLAS BF16 GEMM fraction); memory: decode's
    # HBM streaming fraction
    train_efficiency_factor: float = field(default=1.0, metadata=bounds(gt=0, le=10))
    gemm_efficiency_factor: float = field(default=1.0, metadata=bounds(gt=0, le=10))
    memory_efficiency_factor: float = field(default=1.0, metadata=bounds(gt=0, le=10))
    # NVIDIA streaming multiprocessors and their boost clock: the rate of small, latency-bound kernels (a thread
    # block per sequence and KV head, a per-rank all-reduce handshake) scales with SMs x clock, not with peak FLOPs
    # or HBM; None: Hopper's (H100 SXM: 132 SMs at 1.98 GHz; AMD compute units are not SMs, so left unset)
    sm_count: int | None = field(default=None, metadata=bounds(ge=1, le=100_000))
    boost_clock_hz: float | None = field(default=None, metadata=bounds(ge=1e8, le=1e10))
    vendor: str = ""
    # cpu: vLLM's CPU platform defaults apply (128-token KV blocks, max_num_batched_tokens 4096 per rank)
    platform: Literal["gpu", "cpu"] = "gpu"


HOPPER_SM_RATE = 132 * 1.98e9  # H100 SXM5: 132 SMs (H100 whitepaper), 1,980 MHz max boost (rlsim/catalog/gpus.yaml)


def small_kernel_time_factor(gpu: GPUSpec) -> float:
    """How much longer this GPU takes than an H100 SXM for latency-bound small kernels: Hopper's SMs x boost clock
    over this GPU's (A100: 132 x 1.98 / (108 x 1.41) = 1.72); 1.0 where the catalog lacks either number."""
    if gpu.sm_count is None or gpu.boost_clock_hz is None:
        return 1.0
    return HOPPER_SM_RATE / (gpu.sm_count * gpu.boost_clock_hz)


DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float8": 1}
