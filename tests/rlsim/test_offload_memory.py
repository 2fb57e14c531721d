"""Oracle tests of offload (rlsim.trainer.offload) and the trainer's memory headroom (rlsim.trainer.headroom).

Every expected number is worked out here from the inputs and the mechanism (docs/frameworks.md, "Offload and memory
headroom"), on a toy GPU:

* host link 1e10 B/s at ``costs.host_link_efficiency`` 0.5: 5e9 B/s; CPU Adam 2e9 parameters/s; HBM 1e12 B/s.
* toy model: N = 1e9 parameters, 8 layers, hidden 1024, vocabulary 1000.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from rlsim.errors import ScenarioError
from rlsim.frameworks.config_import import import_config
from rlsim.scenario import from_dict
from rlsim.trainer import headroom, offload, training
from rlsim.trainer import memory as training_memory

N = 1e9
HOST_BW = 1e10 * 0.5
CPU_ADAM = 2e9
GPU = {
    "name": "toy",
    "bf16_flops_per_s": 1e15,
    "hbm_bandwidth_bytes_per_s": 1e12,
    "memory_bytes": 1e12,
    "link_bandwidth_bytes_per_s": 1e11,
    "nic_bandwidth_bytes_per_s": 1e10,
    "host_link_bandwidth_bytes_per_s": 1e10,
    "nvlink_domain_size": 8,
}
MODEL = {
    "name": "toy-1b",
    "num_layers": 8,
    "hidden_size": 1024,
    "num_attention_heads": 8,
    "num_kv_heads": 8,
    "head_dim": 128,
    "vocab_size": 1000,
    "num_params": N,
    "num_active_params": N,
}
CONFIGS = Path(__file__).parent / "fixtures" / "configs"


def _sections(name: str, gpu: Any) -> dict[str, Any]:
    """The toy model's scenario on ``gpu`` (the toy GPU's fields, or a catalog name), without costs."""
    return {
        "name": name,
        "model": dict(MODEL),
        "hardware": {"gpu": gpu, "num_gpus": 8, "placement": "colocated"},
        "engine": {"tensor_parallel_size": 1},
        "workload": {
            "prompts_per_step": 16,
            "group_size": 8,
            "prompt_length": {"dist": "fixed", "tokens": 512},
            "response_length": {"dist": "fixed", "tokens": 512},
            "max_prompt_tokens": 512,
            "max_response_tokens": 512,
        },
        "algorithm": {"name": "grpo"},
        "schedule": {"mode": "sync-colocated"},
    }


def _scn(over: dict[str, Any] | None = None):
    d: dict[str, Any] = {
        **_sections("toy", dict(GPU)),
        "costs": {
            "host_link_efficiency": 0.5,
            "cpu_adam_params_per_s": CPU_ADAM,
            "train_step_overhead_s": 0,
            "forward_overhead_s": 0,
        },
        "run": {"steps": 2},
    }
    d = copy.deepcopy(d)
    for dotted, value in (over or {}).items():
        *head, last = dotted.split(".")
        node = d
        for part in head:
            node = node.setdefault(part, {})
        node[last] = value
    return from_dict(d)


def _phase(s, forward_only: bool = False, steps: int = 1) -> training.TrainTime:
    return training.phase_time(s, s.model, 1e4, 0.0, optimizer_steps=steps, forward_only=forward_only)


MEGATRON = {"training.backend": "megatron"}


# ---------------------------------------------------------------------------------------------------- CPU Adam


def test_an_offloaded_megatron_optimizer_step_is_host_copies_plus_cpu_adam():
    """Megatron-Core's hybrid optimizer, all of it on the host: a rank's distributed-optimizer shard is N / 8 =
    1.25e8 parameters; each step moves the fp32 gradient down and the fp32 parameter up (8 bytes, 1e9 bytes in all:
    0.2 s at 5e9 B/s) and CPU Adam updates 1.25e8 parameters at 2e9 per second (0.0625 s): 0.2625 s a step, two
    steps 0.525 s. The GPU holds no optimizer state."""
    s = _scn({**MEGATRON, "training.offload_optimizer": True})
    shard = N / 8
    per_step = 8 * shard / HOST_BW + shard / CPU_ADAM
    assert per_step == pytest.approx(0.2625)
    assert _phase(s, steps=2).optimizer_s == pytest.approx(2 * 0.2625)
    assert training_memory.memory(s).optimizer_bytes == 0.0
    # without offload: GPU Adam streams 28 bytes per parameter through HBM, 28 x 1.25e8 / 1e12 = 3.5 ms a step
    assert _phase(_scn(MEGATRON), steps=2).optimizer_s == pytest.approx(2 * 28 * shard / 1e12)


def test_a_hybrid_fraction_splits_the_step_and_the_memory():
    """optimizer_offload_fraction 0.5: 6.25e7 parameters on the host (8 x 6.25e7 / 5e9 = 0.1 s of copies, 6.25e7 /
    2e9 = 0.03125 s of CPU Adam) and 6.25e7 on the GPU (28 x 6.25e7 / 1e12 = 1.75 ms): 0.13300 s. The GPU keeps half
    of the 12 bytes per parameter of optimizer state: 12 x 1.25e8 / 2 = 7.5e8 bytes; the host holds 16 bytes per
    offloaded parameter (fp32 parameter, gradient, two moments): 1e9 bytes."""
    s = _scn({**MEGATRON, "training.offload_optimizer": True, "training.offload_optimizer_fraction": 0.5})
    assert _phase(s).optimizer_s == pytest.approx(0.1 + 0.03125 + 0.00175)
    assert training_memory.memory(s).optimizer_bytes == pytest.approx(7.5e8)
    assert offload.trainer_host_bytes(s) == pytest.approx(16 * 6.25e7)


def test_a_swap_moves_only_the_optimizer_state_the_gpu_holds():
    """verl's Megatron optimizer_offload (swap) beside a CPU optimizer: the host-resident share never moves. The toy
    trainer's rank holds 1e9 / 8 = 1.25e8 parameters of optimizer state at 12 bytes: 1.5e9 bytes; at fraction 0.5 the
    swap moves half, 7.5e8 bytes; at 1.0 none, and the host then holds 16 x 1.25e8 (CPU Adam) + the 2 x 1e9 bf16
    parameter swap = 4e9 bytes, not the optimizer twice."""
    swap = {**MEGATRON, "training.swap_optimizer": True, "training.swap_params": True}
    assert offload.swap_bytes(_scn(swap), _scn(swap).model) == pytest.approx((2e9, 1.5e9))
    half = _scn({**swap, "training.offload_optimizer": True, "training.offload_optimizer_fraction": 0.5})
    assert offload.swap_bytes(half, half.model) == pytest.approx((2e9, 7.5e8))
    full = _scn({**swap, "training.offload_optimizer": True})
    assert offload.swap_bytes(full, full.model) == pytest.approx((2e9, 0.0))
    assert offload.trainer_host_bytes(full) == pytest.approx(16 * 1.25e8 + 2e9)


def test_deepspeed_cpu_adam_moves_an_fp32_gradient_down_and_a_bf16_parameter_up():
    """OpenRLHF's --adam_offload (ZeRO-Offload) on the fsdp backend over 8 GPUs: shard 1.25e8; 4 + 2 bytes per
    parameter over the link (0.15 s) and CPU Adam (0.0625 s): 0.2125 s. The GPU keeps bf16 parameters and gradients
    (4 x 1.25e8 = 5e8 bytes), the host the fp32 master, gradient, moments and a bf16 staging copy (18 x 1.25e8).
    FSDP2's CPUOffloadPolicy (offload_params too) moves its copies layer by layer in the passes: CPU Adam only."""
    s = _scn({"training.offload_optimizer": True})
    shard = N / 8
    assert _phase(s).optimizer_s == pytest.approx(6 * shard / HOST_BW + shard / CPU_ADAM)
    assert _phase(s).optimizer_s == pytest.approx(0.2125)
    mem = training_memory.memory(s)
    assert (mem.weights_grads_bytes, mem.optimizer_bytes) == (pytest.approx(4 * shard), 0.0)
    assert offload.trainer_host_bytes(s) == pytest.approx(18 * shard)
    policy = _scn({"training.offload_optimizer": True, "training.offload_params": True})
    assert _phase(policy).optimizer_s == pytest.approx(shard / CPU_ADAM)
    assert offload.trainer_host_bytes(policy) == pytest.approx(16 * shard)


# ---------------------------------------------------------------------------------------------------- swaps


def test_verl_megatron_offload_swaps_the_states_around_each_phase():
    """verl's Megatron param_offload + optimizer_offload at TP 2 over 8 GPUs (data-parallel 4): the bf16 parameter
    buffer is N / 2 x 2 = 1e9 bytes, the optimizer's master and moments 12 x N / (2 x 4) = 1.5e9 bytes. An update
    brings both up and takes both down: 2 x 2.5e9 / 5e9 = 1.0 s; a log-prob pass moves the parameters only:
    2 x 1e9 / 5e9 = 0.4 s. Adam still runs on the GPU (28 x 1.25e8 / 1e12), and the update's peak memory is what
    it is without offload (everything is back on the GPU for it)."""
    over = {
        **MEGATRON,
        "training.tensor_parallel_size": 2,
        "training.swap_params": True,
        "training.swap_optimizer": True,
    }
    s = _scn(over)
    assert _phase(s).host_swap_s == pytest.approx(2 * (1e9 + 1.5e9) / HOST_BW)
    assert _phase(s).host_swap_s == pytest.approx(1.0)
    assert _phase(s, forward_only=True).host_swap_s == pytest.approx(0.4)
    assert _phase(s).optimizer_s == pytest.approx(28 * N / 8 / 1e12)
    plain = _scn({**MEGATRON, "training.tensor_parallel_size": 2})
    assert _phase(s).total_s == pytest.approx(_phase(plain).total_s + 1.0)
    assert training_memory.memory(s).total_bytes == training_memory.memory(plain).total_bytes
    assert offload.trainer_host_bytes(s) == pytest.approx(1e9 + 1.5e9)


def test_verl_fsdp_offload_swaps_the_fp32_shard_and_the_moments():
    """verl FSDP over 8 GPUs: the fp32 shard 4 x 1.25e8 = 5e8 bytes, the moments 8 x 1.25e8 = 1e9 bytes: an update
    2 x 1.5e9 / 5e9 = 0.6 s, a log-prob pass 2 x 5e8 / 5e9 = 0.2 s."""
    s = _scn({"training.swap_params": True, "training.swap_optimizer": True})
    assert _phase(s).host_swap_s == pytest.approx(0.6)
    assert _phase(s, forward_only=True).host_swap_s == pytest.approx(0.2)


# ---------------------------------------------------------------------------------------------------- host memory


def test_offload_is_refused_only_when_a_nodes_host_memory_does_not_hold_it():
    """ZeRO-Offload on 8 GPUs of one node: 18 x 1.25e8 = 2.25e9 bytes per GPU, 18e9 per node (the engine does not
    sleep, so its weights stay on the GPUs). A node of 10 GB is refused, naming the offload and the numbers; 20 GB
    holds it. A sleeping engine adds its bf16 weights, 2 x 1e9 per GPU: 8 x 4.25e9 = 34 GB over 20 GB."""
    base = {"training.offload_optimizer": True, "weight_sync.engine_sleeps": False}
    with pytest.raises(ScenarioError) as err:
        _scn({**base, "hardware.host_memory_bytes": 10e9})
    assert err.value.field == "training.offload_optimizer"
    assert "18 GB in one node's host memory" in str(err.value) and "over the node's 10 GB" in str(err.value)
    assert "hardware.host_memory_bytes" in str(err.value)
    s = _scn({**base, "hardware.host_memory_bytes": 20e9})
    assert offload.node_host_bytes(s)[0] == pytest.approx(18e9)
    with pytest.raises(ScenarioError, match="puts 34 GB"):
        _scn({"training.offload_optimizer": True, "hardware.host_memory_bytes": 20e9})
    # the catalog's host memory per node when the scenario gives none (DGX H100: 2 TB)
    h100 = from_dict({**_raw_h100(), "training": {"offload_optimizer": True}})
    assert offload.host_memory_bytes(h100) == 2.0e12


# ---------------------------------------------------------------------------------------------------- headroom


def _raw_h100() -> dict[str, Any]:
    return _sections("h100", "H100-SXM")


def _h100(params: float, **sections: dict[str, Any]):
    raw = _raw_h100()
    raw["model"] = {**MODEL, "num_params": params, "num_active_params": params}
    raw["hardware"] = {"gpu": "H100-SXM", "num_gpus": 2, "placement": "separate", "rollout_gpus": 1, "train_gpus": 1}
    raw["schedule"] = {"mode": "sync-separate"}
    for key, value in sections.items():
        raw[key] = {**raw.get(key, {}), **value}
    return from_dict(raw)


def test_the_headroom_admits_a_trainer_the_flat_ninety_percent_refused():
    """FSDP on one H100 (separate from the engine): 4.5e9 parameters x 16 bytes = 72e9, plus activations of one
    1024-token micro-batch under full recompute (1024 x 2 x 1024 x 8 layer inputs + 1024 x 34 x 1024 for the
    recomputed layer + 1024 x 1000 x 4 of logits) and two gathered layers (2 x 4.5e9 / 8 x 2): 74.31e9 bytes. The
    flat 90% of the datasheet's 80 GB is 72e9: refused. The headroom: the 85.0e9 bytes CUDA reports, less 1.27 GiB
    outside PyTorch, over 1 + (51 / 46.18 - 1) of fragmentation: 75.73e9: admitted."""
    params = 4.5e9
    act = 1024 * 2 * 1024 * 8 + 1024 * 34 * 1024 + 1024 * 1000 * 4 + 2 * (params / 8 * 2)
    need = 16 * params + act
    assert need == pytest.approx(74.31e9, rel=1e-3)
    budget = (85.0e9 - 1.27 * 2**30) * 46.18 / 51
    assert budget == pytest.approx(75.73e9, rel=1e-3)
    with pytest.raises(ScenarioError, match="over the 72.0 GB"):
        _h100(params, training={"memory_fraction": 0.9})
    s = _h100(params)
    mem = training_memory.resident_memory(s)
    assert mem.total_bytes == pytest.approx(need)
    assert mem.budget_bytes == pytest.approx(budget)
    assert mem.fits


def test_a_colocated_engine_keeps_its_share_of_the_trainers_gpu():
    """Colocated on an H100: an engine that sleeps keeps its own 1.27 GiB outside PyTorch and its CUDA graph pool,
    1,503,657,984 bytes at hidden 7168 scaled to the toy's 1024 (2.148e8), so the trainer has (85.0e9 - 2 x 1.27 GiB
    - 2.148e8) / 1.10434 = 74.30e9; one that does not sleep keeps gpu_memory_utilization 0.6 of the 85.0e9:
    (85.0e9 - 1.27 GiB - 51e9) / 1.10434 = 29.55e9."""
    frag = 51 / 46.18
    sleeps = from_dict(_raw_h100())
    graphs = 1_503_657_984 * 1024 / 7168
    assert headroom.budget_bytes(sleeps) == pytest.approx((85.0e9 - 2 * 1.27 * 2**30 - graphs) / frag)
    assert headroom.budget_bytes(sleeps) == pytest.approx(74.30e9, rel=1e-3)
    awake = from_dict(
        {**_raw_h100(), "weight_sync": {"engine_sleeps": False}, "engine": {"gpu_memory_utilization": 0.6}}
    )
    assert headroom.budget_bytes(awake) == pytest.approx((85.0e9 - 1.27 * 2**30 - 0.6 * 85.0e9) / frag)
    assert headroom.budget_bytes(awake) == pytest.approx(29.55e9, rel=1e-3)


# ---------------------------------------------------------------------------------------------------- mappings


def test_the_frameworks_offload_keys_map_to_their_mechanisms():
    """NeMo RL's Megatron optimizer_cpu_offload (fraction 1.0, the only one it allows) -> CPU Adam; verl's FSDP
    param_offload / optimizer_offload -> swaps; verl fsdp2's offload_policy -> FSDP2 CPUOffloadPolicy (and not the
    swaps, which verl turns off under it)."""
    mg = "policy.megatron_cfg."
    sets = {
        mg + "enabled": True,
        "policy.dtensor_cfg.enabled": False,
        mg + "optimizer.optimizer_cpu_offload": True,
        mg + "optimizer.optimizer_offload_fraction": 1.0,
    }
    tr = import_config(CONFIGS / "nemo_rl" / "grpo_math_1B.yaml", "nemo-rl", sets).scenario["training"]
    assert tr["offload_optimizer"] is True and tr["offload_optimizer_fraction"] == 1.0
    fsdp = "actor_rollout_ref.actor.fsdp_config."
    verl = CONFIGS / "verl_grpo_qwen3_8b.yaml"
    tr = import_config(verl, "verl", {fsdp + "param_offload": True, fsdp + "optimizer_offload": True}).scenario[
        "training"
    ]
    assert (tr["swap_params"], tr["swap_optimizer"], tr["offload_params"], tr["offload_optimizer"]) == (
        True,
        True,
        False,
        False,
    )
    sets = {"actor_rollout_ref.actor.strategy": "fsdp2", fsdp + "offload_policy": True, fsdp + "param_offload": True}
    tr = import_config(verl, "verl", sets).scenario["training"]
    assert (tr["swap_params"], tr["offload_params"], tr["offload_optimizer"]) == (False, True, True)


def test_offload_fields_that_contradict_each_other_are_refused():
    with pytest.raises(ScenarioError, match="backend fsdp offloads all of it or none") as err:
        _scn({"training.offload_optimizer": True, "training.offload_optimizer_fraction": 0.5})
    assert err.value.field == "training.offload_optimizer_fraction"
    with pytest.raises(ScenarioError, match="already keeps on the host") as err:
        _scn({"training.offload_params": True, "training.swap_params": True})
    assert err.value.field == "training.swap_params"
