"""TRL (huggingface/trl) GRPOConfig as an rlsim scenario: the mapping TABLE and ``to_scenario``.

Read at huggingface/trl commit f2cd57710ae345ea6428ae95363267fcf38a3dc8 (v1.9.0-26, 2026-07-24):
``trl/trainer/grpo_config.py`` (fields, defaults, ``__post_init__``), ``trl/trainer/grpo_trainer.py``
(``_prepare_inputs``: when it generates; ``_generate_and_score_completions``: when it recomputes old log-probs) and
``trl/scripts/vllm_serve.py`` (the server's defaults). The file is a GRPOConfig as YAML or JSON (the keys of the
``trl grpo --config`` YAML or of ``GRPOConfig(...)``), with the model in ``model_name_or_path`` (TRL's ModelConfig;
GRPOConfig itself has no model key).

Batch semantics (facts from that commit):

* one generation round produces ``generation_batch_size`` completions; unset, it is
  per_device_train_batch_size x num_processes x steps_per_generation, and steps_per_generation defaults to
  gradient_accumulation_steps (setting both is an error in TRL). It must be divisible by
  per_device_train_batch_size x num_processes and by ``num_generations`` (completions per prompt, G), so
  P = generation_batch_size / num_generations prompts per rlsim step.
* the round is split into steps_per_generation slices, one per micro-step; an optimizer step takes
  gradient_accumulation_steps micro-steps, so a round is steps_per_generation / gradient_accumulation_steps
  optimizer steps (rlsim mini-batches), and the whole round is reused ``num_iterations`` times (rlsim epochs).
* the trainer computes the old policy's log-probs in a separate pass when gradient_accumulation_steps is not a
  multiple of steps_per_generation x num_iterations, or with vLLM and vllm_importance_sampling_correction (default
  true).
* ``use_vllm`` false generates with transformers' ``generate`` (static batches; rlsim engine.static_batching);
  ``vllm_mode`` colocate shares the training GPUs (``trl/generation/vllm_generation.py``: vllm_tensor_parallel_size
  must divide the processes), server runs ``trl vllm-serve`` on GPUs of its own.

Launch facts TRL's config does not hold are taken as extra keys given with ``--set`` (defaults in ``LAUNCH``):
``num_processes`` (accelerate launch --num_processes; default 1, a plain ``python train.py``) and, for server mode,
``vllm_server_tensor_parallel_size`` / ``vllm_server_data_parallel_size`` / ``vllm_server_gpu_memory_utilization``
(``trl vllm-serve`` flags; defaults 1, 1, 0.9). ``max_prompt_length`` was removed from GRPOConfig in TRL 1.x (it was
512 in 0.x); when absent, prompts are assumed at most 512 tokens.
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.config_import import (
    ImportConfigError,
    Row,
    Source,
    as_float,
    as_int,
    assumed_workload,
    divisible,
)
from rlsim.frameworks.config_import import resolve_model as _resolve_model

VERSION_READ = "TRL f2cd577 (v1.9.0-26)"
LAUNCH = {
    "num_processes": 1,
    "vllm_server_tensor_parallel_size": 1,
    "vllm_server_data_parallel_size": 1,
    "vllm_server_gpu_memory_utilization": 0.9,
}
GEN = "generation_batch_size"
SPG = "steps_per_generation"
PDB = "per_device_train_batch_size"
GA = "gradient_accumulation_steps"

TABLE: tuple[Row, ...] = (
    Row("model_name_or_path", None, "model", "a catalog name, alias or hf_id (Instruct: the base architecture)"),
    Row("num_processes", LAUNCH["num_processes"], "hardware.num_gpus (train GPUs)", "not a TRL key: --set it"),
    Row(PDB, 8, "training.micro_batch_size", "completions per micro-step per GPU (padded, not packed)"),
    Row(GA, 1, "algorithm.mini_batches_per_step", "steps_per_generation / gradient_accumulation_steps"),
    Row(SPG, None, "workload.prompts_per_step", "default gradient_accumulation_steps; generation batch / G"),
    Row(GEN, None, "workload.prompts_per_step", "default per_device x num_processes x steps_per_generation; / G"),
    Row("num_generations", 8, "workload.group_size", "G: completions per prompt"),
    Row("num_iterations", 1, "algorithm.epochs_per_step", "passes over each generation round (mu)"),
    Row("use_vllm", False, "engine.static_batching, engine.behaviour", "false: transformers generate (static)"),
    Row("vllm_mode", "colocate", "hardware.placement, schedule.mode", "colocate / server (separate GPUs)"),
    Row("vllm_tensor_parallel_size", 1, "engine.tensor_parallel_size", "colocate mode"),
    Row("vllm_gpu_memory_utilization", 0.3, "engine.gpu_memory_utilization", "colocate mode"),
    Row("vllm_server_tensor_parallel_size", 1, "engine.tensor_parallel_size", "server mode; not a TRL key"),
    Row("vllm_server_data_parallel_size", 1, "hardware.rollout_gpus", "server mode: TP x DP GPUs; not a TRL key"),
    Row("vllm_server_gpu_memory_utilization", 0.9, "engine.gpu_memory_utilization", "server mode; not a TRL key"),
    Row("vllm_importance_sampling_correction", True, "algorithm.recompute_old_logprob", "with vLLM"),
    Row("max_prompt_length", 512, "workload.max_prompt_tokens", "TRL 0.x only; and the assumed prompt length"),
    Row("max_completion_length", 512, "workload.max_response_tokens", "and the assumed response lengths"),
    Row("learning_rate", 1e-6, "learning.lr0", "learning.reference_batch = completions per round"),
    Row("beta", 0.0, "algorithm.kl_reference", "beta > 0 loads the reference model"),
    Row("gradient_checkpointing", True, "training.activation_recompute", "true -> full, false -> none"),
)


# keys only a GRPOConfig has, and keys of TRL's other trainers' configs (trl/trainer/sft_config.py, dpo_config.py)
GRPO_ONLY = ("num_generations", "max_completion_length", "use_vllm", "vllm_mode", "generation_batch_size")
GRPO_ONLY += ("steps_per_generation", "num_iterations", "reward_funcs", "reward_weights")
OTHER_TRAINERS = {
    "dataset_text_field": "SFTConfig",
    "packing": "SFTConfig",
    "max_seq_length": "SFTConfig",
    "completion_only_loss": "SFTConfig",
    "assistant_only_loss": "SFTConfig",
    "rpo_alpha": "DPOConfig",
    "label_smoothing": "DPOConfig",
    "reference_free": "DPOConfig",
}


def check_trainer(flat: dict[str, Any], where: str = "the config") -> None:
    """Refuse a config of another TRL trainer (SFT, DPO) in one line: it has none of GRPOConfig's own keys and
    some of the other trainer's."""
    if any(k in flat for k in GRPO_ONLY):
        return
    other = {k: v for k, v in OTHER_TRAINERS.items() if k in flat}
    if other:
        kinds = " / ".join(sorted(set(other.values())))
        raise ImportConfigError(
            f"{where}: holds {', '.join(sorted(other))} ({kinds} keys) and none of GRPOConfig's own "
            f"({', '.join(GRPO_ONLY[:4])}, ...): not an RL trainer's config; rlsim imports TRL's GRPOConfig"
        )


def to_scenario(src: Source) -> tuple[dict[str, Any], list[str]]:
    """The scenario sections for a TRL GRPOConfig, and the assumptions made."""
    check_trainer(src.flat)
    notes: list[str] = []
    if not src.given("num_processes"):
        notes.append(
            f"num_processes: {LAUNCH['num_processes']} (TRL's config has no key for it; --set num_processes=N as "
            "given to accelerate launch)"
        )
    procs, per_device, accum = as_int(src, "num_processes"), as_int(src, PDB), as_int(src, GA)
    group = as_int(src, "num_generations")
    if src.given(GEN) and src.given(SPG):
        raise ImportConfigError(f"{GEN} and {SPG} are both set; TRL allows one of them: remove one")
    if src.given(GEN):
        generations = as_int(src, GEN)
        steps_per_gen = divisible(GEN, generations, f"{PDB} x num_processes", per_device * procs)
    else:
        steps_per_gen = as_int(src, SPG) if src.given(SPG) else as_int(src, GA)
        generations = per_device * procs * steps_per_gen
    prompts = divisible(f"{GEN} ({PDB} x num_processes x {SPG})", generations, "num_generations", group)
    mini_batches = divisible(SPG, steps_per_gen, GA, accum)
    iterations = as_int(src, "num_iterations")

    model, model_notes = _resolve_model(src.get("model_name_or_path"), "model_name_or_path")
    notes += model_notes
    use_vllm = bool(src.get("use_vllm"))
    engine: dict[str, Any] = {}
    hardware: dict[str, Any] = {"num_gpus": procs, "placement": "colocated"}
    schedule = "sync-colocated"
    if not use_vllm:
        engine.update(static_batching=True, tensor_parallel_size=1)
        notes.append("use_vllm false: transformers generate, one static batch per round on each training GPU")
    else:
        engine["behaviour"] = "vllm-v1"
        mode = src.get("vllm_mode")
        if mode == "colocate":
            engine["tensor_parallel_size"] = as_int(src, "vllm_tensor_parallel_size")
            # trl/generation/vllm_generation.py: the TP groups must split the processes evenly
            divisible("num_processes", procs, "vllm_tensor_parallel_size", engine["tensor_parallel_size"])
            engine["gpu_memory_utilization"] = as_float(src, "vllm_gpu_memory_utilization")
        elif mode == "server":
            tp = as_int(src, "vllm_server_tensor_parallel_size")
            rollout_gpus = tp * as_int(src, "vllm_server_data_parallel_size")
            engine["tensor_parallel_size"] = tp
            engine["gpu_memory_utilization"] = as_float(src, "vllm_server_gpu_memory_utilization")
            hardware = {
                "num_gpus": procs + rollout_gpus,
                "placement": "separate",
                "rollout_gpus": rollout_gpus,
                "train_gpus": procs,
            }
            schedule = "sync-separate"
            notes.append(
                f"vllm_mode server: trl vllm-serve on {rollout_gpus} GPU(s) of its own (--set "
                "vllm_server_tensor_parallel_size / vllm_server_data_parallel_size as given to trl vllm-serve)"
            )
        else:
            raise ImportConfigError(f"vllm_mode: {mode!r} must be colocate or server; fix it in the file or --set")
    recompute = accum % (steps_per_gen * iterations) != 0 or (
        use_vllm and bool(src.get("vllm_importance_sampling_correction"))
    )
    if not src.given("max_prompt_length"):
        notes.append("max_prompt_length: 512 (not a TRL 1.x key; TRL 0.x's default)")
    max_prompt, max_response = as_int(src, "max_prompt_length"), as_int(src, "max_completion_length")
    workload, length_notes = assumed_workload(prompts, group, max_prompt, max_response)
    notes += length_notes
    notes.append("training: FSDP full sharding stands for TRL's DeepSpeed ZeRO-3 / FSDP (accelerate config)")
    sections = {
        "model": model,
        "hardware": hardware,
        "engine": engine,
        "workload": workload,
        "algorithm": {
            "name": "grpo",
            "mini_batches_per_step": mini_batches,
            "epochs_per_step": iterations,
            "kl_reference": as_float(src, "beta") > 0,
            "recompute_old_logprob": recompute,
        },
        "training": {
            "backend": "fsdp",
            "micro_batch_size": per_device,
            "sequence_packing": False,
            "activation_recompute": "full" if src.get("gradient_checkpointing") else "none",
        },
        "schedule": {"mode": schedule},
        "learning": {"lr0": as_float(src, "learning_rate"), "reference_batch": generations},
    }
    return sections, notes
