"""verl keys that decide what a training GPU holds: LoRA, the actor's loaded dtype, the log-prob kernel and the
reference model's offload (read at volcengine/verl b178a3c, the mapping's commit; lines cited there).

* LoRA: ``actor_rollout_ref.model.lora_rank`` (fsdp: PEFT adapters on ``model.target_modules``, ``all-linear`` by
  default; ``verl/workers/fsdp_workers.py:434-470``) or ``model.lora.rank`` (megatron: Megatron-Bridge adapters on
  ``model.lora.target_modules``, linear_qkv / linear_proj / linear_fc1 / linear_fc2 by default,
  ``_generated_ppo_megatron_trainer.yaml:346-360``) -> training.lora_rank, lora_target_modules. Either worker
  takes the reference log-probs from the actor with the adapters off (fsdp_workers.py:1043,
  megatron_workers.py:839-841), so no reference copy is held.
* ``actor.fsdp_config.model_dtype`` (fp32 by default for the actor, fsdp_workers.py:324): bf16 loads the actor in
  bf16, its gradients and Adam moments with it -> training.param_dtype.
* fsdp with ``model.use_remove_padding``, ``actor.entropy_coeff`` 0 and ``calculate_entropy`` false
  (dp_actor.py:573): the log-probs come from the bf16 logits (dp_actor.py:258) through flash-attn's cross entropy
  with an in-place backward (:262, ``verl/utils/torch_functional.py`` logprobs_from_logits) ->
  training.inplace_logprobs; ``use_fused_kernels`` computes them without whole logits (taken as the same bound).
  The padded path slices the logits and the kernel's reshape copies the slice: not in place.
* the reference weights wait on the host and come to the GPU for the reference pass -> training.reference_on_host:
  fsdp always (FSDP CPU offload, fsdp_workers.py:524-526, 552), megatron with ``ref.megatron.param_offload``
  (megatron_workers.py:844-855).
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.adapter import ImportConfigError, Row, Source

A = "actor_rollout_ref.actor."
M = "actor_rollout_ref.model."
REF = "actor_rollout_ref.ref."
MEGATRON_LORA_TARGETS = ["linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"]

ROWS = (
    Row(M + "lora_rank", 0, "training.lora_rank", "fsdp: > 0 trains adapters of this rank, the base frozen"),
    Row(M + "target_modules", "all-linear", "training.lora_target_modules", "fsdp LoRA: PEFT module names"),
    Row(M + "lora.rank", 0, "training.lora_rank", "megatron: > 0 trains adapters of this rank, the base frozen"),
    Row(M + "lora.target_modules", MEGATRON_LORA_TARGETS, "training.lora_target_modules", "megatron LoRA"),
    Row(A + "fsdp_config.model_dtype", "fp32", "training.param_dtype", "bf16: parameters, gradients, Adam in bf16"),
    Row(A + "entropy_coeff", 0, "training.inplace_logprobs", "fsdp, 0: bf16 logits, in-place cross entropy"),
    Row(A + "calculate_entropy", False, "training.inplace_logprobs", "true: entropy from the logits (not in place)"),
    Row(M + "use_fused_kernels", False, "training.inplace_logprobs", "fsdp: log-probs without whole logits"),
    Row(REF + "fsdp_config.param_offload", False, "training.reference_on_host", "fsdp: on the host regardless"),
    Row(REF + "megatron.param_offload", False, "training.reference_on_host", "reference weights on the host"),
)

_DTYPES = {"fp32": "fp32", "float32": "fp32", "bf16": "bf16", "bfloat16": "bf16"}


def _targets(value: Any, key: str) -> str:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or not names:
        raise ImportConfigError(f"{key}: {value!r} is not a module name or a list of them; e.g. all-linear")
    return ",".join(names)


def read(src: Source, training: dict[str, Any], notes: list[str], strategy: str) -> None:
    """Set the memory-relevant training fields from the verl keys above."""
    megatron = strategy == "megatron"
    rank_key, targets_key = (
        (M + "lora.rank", M + "lora.target_modules") if megatron else (M + "lora_rank", M + "target_modules")
    )
    rank = src.get(rank_key)
    if not isinstance(rank, int) or isinstance(rank, bool) or rank < 0:
        raise ImportConfigError(f"{rank_key}: {rank!r} is not a LoRA rank (an integer, 0 for none)")
    if rank:
        training["lora_rank"] = rank
        training["lora_target_modules"] = _targets(src.get(targets_key), targets_key)
        notes.append(
            f"{rank_key} {rank}: LoRA; its weight sync is priced as the whole model's (verl syncs the adapters "
            "alone once the base is on the engines)"
        )
    # fsdp: verl wraps the reference in FSDP's CPU offload whatever the flag says (fsdp_workers.py:524-526, fsdp2
    # :552 "We force reference policy to use CPUOffload to save memory"); megatron: by ref.megatron.param_offload
    if not rank and (not megatron or src.get(REF + "megatron.param_offload")):
        src.get(REF + "fsdp_config.param_offload")  # read: the fsdp reference is on the host either way
        training["reference_on_host"] = True
        training["reference_streamed"] = not megatron  # FSDP CPU offload streams each layer's shard up
    if megatron:
        return
    dtype = src.get(A + "fsdp_config.model_dtype")
    if dtype is not None and str(dtype) not in _DTYPES:
        raise ImportConfigError(f"{A}fsdp_config.model_dtype: {dtype!r} is not one of {', '.join(_DTYPES)}")
    if dtype is not None and _DTYPES[str(dtype)] == "bf16":
        training["param_dtype"] = "bf16"
    entropy = src.get(A + "calculate_entropy") or (src.get(A + "entropy_coeff") or 0) != 0
    # the padded path slices the response's logits and the kernel's reshape copies the slice (not in place)
    if src.get(M + "use_remove_padding") and (src.get(M + "use_fused_kernels") or not entropy):
        training["inplace_logprobs"] = True
