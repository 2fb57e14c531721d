"""TRL (huggingface/trl) GRPOConfig as an rlsim scenario: the mapping ``TABLE`` and ``to_scenario``.

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
(``trl vllm-serve`` flags; defaults 1, 1, 0.9). ``max_prompt_length`` was removed from GRPOConfig in TRL 0.28 (it was
512 before 0.26); when absent, prompts are assumed at most 512 tokens.

Versions: ``trl_version`` (``--set trl_version=0.18.0``, or the key in the file) selects that release's defaults,
read from TRL's source at its tags by scripts/trl_defaults.py into trl_defaults.yaml (0.14.0, the first GRPO
release, to 1.9.0); unset, the newest release's, said in a note. A release's behaviour follows from which options it
has: before 0.18 there is no ``vllm_mode`` (vLLM ran on GPUs of its own: ``vllm_device`` in 0.14-0.15, ``trl
vllm-serve`` in 0.16-0.17) and no ``steps_per_generation`` (0.17 generates once per optimizer step, over the
accumulated batch; 0.14-0.16 generate every micro-step's completions apart; 0.14's per_device_train_batch_size
counts prompts, each generating num_generations completions); before 0.23 no importance-sampling
correction, so no old log-prob pass unless the batch is reused. A key the release does not have is refused in
one line (TRL itself rejects it). With ``trl_version`` and vLLM the scenario gets ``software: {framework: trl}``:
the vLLM the release's ``vllm`` extra installs (rlsim/catalog/software.yaml ``frameworks.trl``) names the engine's
behaviour (rlsim.frameworks.trl.releases.software_section).

Launch: the file may also be the shell script or command line that runs ``accelerate launch [options] SCRIPT
--config GRPO.yaml [--key value ...]`` (open-r1's and TRL's documented form; rlsim.frameworks.launch reads it as
text, never runs it): the GRPO YAML named by ``--config``, the script's ``--key value`` overrides over it, and the
accelerate options ``--config_file`` (an accelerate config YAML), ``--num_processes``. ``accelerate_config`` (a
``--set`` key, or ``--config_file``) gives ``num_processes`` (the total over machines) and the distributed type
(DeepSpeed ZeRO stage, FSDP, DDP) when the command does not.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any

from rlsim.frameworks import run_keys
from rlsim.frameworks.adapter import ImportConfigError, Row, Source
from rlsim.frameworks.common import as_float, as_int, assumed_workload, divisible, resolve_model, version_tuple
from rlsim.frameworks.trl.launch import accelerate_settings
from rlsim.frameworks.trl.releases import (
    ABSENT_MEANS,
    check_release_keys,
    colocated_limits,
    options,
    release_for,
    releases,
    software_section,
    training_arguments,
)

VERSION_READ = "TRL f2cd577 (v1.9.0-26) and the defaults of every release 0.14.0-1.9.0"
LAUNCH = {
    "trl_version": None,
    "accelerate_config": None,
    "num_processes": 1,
    "vllm_server_tensor_parallel_size": 1,
    "vllm_server_data_parallel_size": 1,
    "vllm_server_gpu_memory_utilization": 0.9,
}
# the launch facts as the command-line flags that set them (accelerate launch; trl vllm-serve): emit writes them
# there, never into the GRPOConfig (TRL's parser refuses keys it does not know); None: not emitted
LAUNCH_FLAGS = {
    "trl_version": None,
    "accelerate_config": None,
    "num_processes": "accelerate launch --num_processes",
    "vllm_server_tensor_parallel_size": "trl vllm-serve --tensor_parallel_size",
    "vllm_server_data_parallel_size": "trl vllm-serve --data_parallel_size",
    "vllm_server_gpu_memory_utilization": "trl vllm-serve --gpu_memory_utilization",
}
GEN = "generation_batch_size"
SPG = "steps_per_generation"
PDB = "per_device_train_batch_size"
GA = "gradient_accumulation_steps"

TABLE: tuple[Row, ...] = (
    Row("model_name_or_path", None, "model", "a catalog name, alias or hf_id (Instruct: the base architecture)"),
    Row("trl_version", None, "(the defaults below)", "not a TRL key: --set it; unset: newest fitting the keys"),
    Row("accelerate_config", None, "hardware.num_gpus, training notes", "accelerate launch --config_file"),
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
    Row("vllm_enable_sleep_mode", False, "weight_sync.engine_sleeps, sleep_level", "colocate: sleep(level=2)"),
    Row("vllm_importance_sampling_correction", True, "algorithm.recompute_old_logprob", "with vLLM"),
    Row("max_prompt_length", None, "workload.max_prompt_tokens", "TRL < 0.28 only; and the assumed prompt length"),
    Row("max_completion_length", 256, "workload.max_response_tokens", "and the assumed response lengths"),
    Row("learning_rate", 1e-6, "learning.lr0", "learning.reference_batch = completions per round"),
    Row("beta", 0.0, "algorithm.kl_reference", "beta > 0 loads the reference model"),
    Row("gradient_checkpointing", True, "training.activation_recompute", "true -> full, false -> none"),
    Row("use_peft", False, "training.lora_rank", "true: LoRA of rank lora_r (ModelConfig)"),
    Row("lora_r", 16, "training.lora_rank", "the adapters' rank"),
    Row("lora_target_modules", None, "training.lora_target_modules", "None: PEFT's q_proj, v_proj"),
    Row("save_strategy", "steps", "run.checkpoint_every_steps", "steps: a save every save_steps; no: none"),
    Row("save_steps", 500, "run.checkpoint_every_steps", "optimizer steps, as rounds of generation"),
    Row("eval_strategy", "no", "run.eval_every_steps", "steps: evaluation every eval_steps"),
    Row("eval_steps", None, "run.eval_every_steps", "optimizer steps, as rounds of generation"),
    Row("eval_on_start", False, "run.eval_at_start", "an evaluation before the first step"),
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


def config_keys(flat: dict[str, Any]) -> set[str]:
    """The keys that say which releases a config fits: those set (not null), less a value every release takes
    (num_iterations 1: releases.ABSENT_MEANS)."""
    return {k for k, v in flat.items() if v is not None and not (k in ABSENT_MEANS and v == ABSENT_MEANS[k])}


def table_for(flat: dict[str, Any]) -> tuple[Row, ...]:
    """TABLE with the defaults of the release ``trl_version`` names, else of the newest release whose options
    hold the config's keys (a key the release lacks: what the release does, releases.ABSENT_MEANS, else none)."""
    row = releases()[release_for(flat.get("trl_version"), config_keys(flat))[0]]
    versioned = {k for r in releases().values() for k in r} - {"commit"}
    return tuple(
        dataclasses.replace(r, default=row.get(r.key, ABSENT_MEANS.get(r.key))) if r.key in versioned else r
        for r in TABLE
    )


def _check_option_spelling(src: Source) -> None:
    """A key that is no release's GRPOConfig option nor a TrainingArguments field but nearly one (TRL's parser
    refuses it where it runs) is refused naming the option it likely meant; a key far from all of them (open-r1's
    script arguments, ModelConfig's) is listed as not used."""
    known = set(options()) | training_arguments() | {row.key for row in TABLE}
    for key in src.flat:
        if key in known or "." in key:
            continue
        near = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.85)
        if near:
            raise ImportConfigError(
                f"{src.name(key)}: is not an option of any TRL release read (0.14.0-"
                f"{max(releases(), key=version_tuple)}); did you mean {near[0]}?"
            )


def _check_launch_spelling(src: Source) -> None:
    """A launch key (not a TRL key, so TRL's own parser would not catch it) spelled nearly right is refused in one
    line naming the right spelling: a silent ``trl_versoin`` would take another release's defaults."""
    known = {row.key for row in TABLE}
    for key in src.flat:
        if key in known:
            continue
        near = difflib.get_close_matches(key, list(LAUNCH), n=1, cutoff=0.85)
        if near:
            raise ImportConfigError(f"{key}: is not a key rlsim reads; did you mean {near[0]}? (--set {near[0]}=...)")


def _processes(src: Source, notes: list[str]) -> tuple[int, list[str]]:
    """(num_processes, the accelerate config's notes): as --set, else the accelerate config's, else TRL's default."""
    accel: dict[str, Any] = {}
    accel_notes: list[str] = []
    if src.given("accelerate_config"):
        accel, accel_notes = accelerate_settings(str(src.get("accelerate_config")))
        notes += accel_notes
    if src.given("num_processes"):
        procs = as_int(src, "num_processes")
    elif "num_processes" in accel:
        procs = accel["num_processes"]
        notes.append(f"num_processes: {procs} (the accelerate config's)")
    else:
        procs = as_int(src, "num_processes")
        notes.append(
            f"num_processes: {procs} (TRL's config has no key for it; --set num_processes=N as given to accelerate "
            "launch, or accelerate_config=FILE)"
        )
    return procs, accel_notes


@dataclasses.dataclass(frozen=True)
class _Round:
    """One generation round's sizes (:func:`_round`)."""

    per_device: int
    accum: int
    group: int
    steps_per_gen: int
    prompts: int
    mini_batches: int
    optimizer_batch: int
    iterations: int


def _round(src: Source, version: str, has: dict[str, Any], procs: int, notes: list[str]) -> _Round:
    """The generation round: its completions, prompts, optimizer steps and passes, by the release's batch rules."""
    per_device, accum = as_int(src, PDB), as_int(src, GA)
    group = as_int(src, "num_generations")
    if version_tuple(version) < (0, 15, 0):
        # 0.14 counts prompts per device, each repeated num_generations times (huggingface/trl@v0.14.0:
        # trl/trainer/grpo_config.py:159-165, grpo_trainer.py:469); 0.15 made it completions (cf97133, #2776)
        notes.append(f"TRL {version}: {PDB} counts prompts; {per_device} x {group} = {per_device * group} completions")
        per_device *= group
    if src.given(GEN) and src.given(SPG):
        raise ImportConfigError(f"{GEN} and {SPG} are both set; TRL allows one of them: remove one")
    if src.given(GEN):
        generations = as_int(src, GEN)
        steps_per_gen = divisible(GEN, generations, f"{PDB} x num_processes", per_device * procs)
    elif SPG in has or version_tuple(version) >= (0, 17, 0):
        # 0.17 generates once per optimizer step over the accumulated batch: steps_per_generation's default
        steps_per_gen = as_int(src, SPG) if src.given(SPG) else accum
        generations = per_device * procs * steps_per_gen
    else:
        steps_per_gen = 0  # below one optimizer step
        generations = per_device * procs
        notes.append(
            f"TRL {version} generates each micro-step's completions apart ({PDB} x num_processes = {generations}) "
            f"and accumulates {accum} of them into one optimizer step: an rlsim step is one generation round"
        )
    prompts = divisible(f"{GEN} ({PDB} x num_processes x {SPG})", generations, "num_generations", group)
    mini_batches = divisible(SPG, steps_per_gen, GA, accum) if steps_per_gen else 1
    optimizer_batch = generations if steps_per_gen else generations * accum
    iterations = as_int(src, "num_iterations")
    if "num_iterations" not in has:
        notes.append(f"TRL {version} has no num_iterations: each generation round is used once")
    return _Round(per_device, accum, group, steps_per_gen, prompts, mini_batches, optimizer_batch, iterations)


def _generation(
    src: Source, version: str, has: dict[str, Any], procs: int, notes: list[str]
) -> tuple[bool, dict[str, Any], dict[str, Any], str]:
    """(use_vllm, engine, hardware, schedule mode): transformers generate, vLLM colocated, or vLLM served apart."""
    use_vllm = bool(src.get("use_vllm"))
    engine: dict[str, Any] = {}
    hardware: dict[str, Any] = {"num_gpus": procs, "placement": "colocated"}
    schedule = "sync-colocated"
    if not use_vllm:
        engine.update(static_batching=True, tensor_parallel_size=1)
        notes.append("use_vllm false: transformers generate, one static batch per round on each training GPU")
    else:
        engine["behaviour"] = "vllm-v1"
        mode = src.get("vllm_mode") if "vllm_mode" in has else "server"
        if "vllm_mode" not in has:
            notes.append(f"TRL {version} has no vllm_mode: vLLM runs on GPUs of its own (server)")
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
    return use_vllm, engine, hardware, schedule


def _weight_sync(src: Source, colocated: bool) -> dict[str, Any]:
    """vLLM's weight update: one call per parameter at every release read, the gathered full tensor
    (``load_weights([(name, param)])`` colocated, ``vllm_client.update_named_param`` to the server: huggingface/
    trl@v0.25.0:trl/trainer/grpo_trainer.py _move_model_to_vllm, v1.0.0:trl/generation/vllm_generation.py:400-404,
    428-431, 480-513). The colocated engine sleeps between rounds only with vllm_enable_sleep_mode (default false,
    0.23.0-1.9.0), and then at level 2: weights discarded, no host copy (v0.25.0:grpo_trainer.py:616,1298;
    v1.0.0:vllm_generation.py:360,723)."""
    if not colocated:  # the server's GPUs are its own: nothing to sleep for
        return {"transfer": "per_tensor"}
    sleeps = bool(src.get("vllm_enable_sleep_mode"))
    return {"transfer": "per_tensor", "engine_sleeps": sleeps, **({"sleep_level": 2} if sleeps else {})}


def to_scenario(src: Source) -> tuple[dict[str, Any], list[str]]:
    """The scenario sections for a TRL GRPOConfig, and the assumptions made."""
    check_trainer(src.flat)
    _check_launch_spelling(src)
    _check_option_spelling(src)
    version, notes = release_for(src.get("trl_version"), config_keys(src.flat))
    check_release_keys(src, version)
    has = releases()[version]
    procs, accel_notes = _processes(src, notes)
    r = _round(src, version, has, procs, notes)

    model, model_notes = resolve_model(src.get("model_name_or_path"), "model_name_or_path")
    notes += model_notes
    use_vllm, engine, hardware, schedule = _generation(src, version, has, procs, notes)
    if use_vllm and hardware["placement"] == "colocated":  # the LLM's limits as GRPOTrainer builds it
        engine.update(colocated_limits(version, r.per_device, engine["tensor_parallel_size"], r.steps_per_gen, r.accum))
    recompute = r.accum % (max(1, r.steps_per_gen) * r.iterations) != 0 or (
        use_vllm and bool(src.get("vllm_importance_sampling_correction"))
    )
    if src.get("max_prompt_length") is None:
        notes.append(f"max_prompt_length: 512 assumed (TRL {version} does not truncate prompts; 0.14-0.25's default)")
        max_prompt = 512
    else:
        max_prompt = as_int(src, "max_prompt_length")
    max_response = as_int(src, "max_completion_length")
    workload, length_notes = assumed_workload(r.prompts, r.group, max_prompt, max_response)
    notes += length_notes
    if not accel_notes:
        notes.append("training: FSDP full sharding stands for TRL's DeepSpeed ZeRO-3 / FSDP (accelerate config)")
    sections = {
        "model": model,
        "hardware": hardware,
        "engine": engine,
        "workload": workload,
        "algorithm": {
            "name": "grpo",
            "mini_batches_per_step": r.mini_batches,
            "epochs_per_step": r.iterations,
            "kl_reference": as_float(src, "beta") > 0,
            "recompute_old_logprob": recompute,
        },
        "training": {
            "backend": "fsdp",
            "micro_batch_size": r.per_device,
            "sequence_packing": False,
            "activation_recompute": "full" if src.get("gradient_checkpointing") else "none",
        },
        "schedule": {"mode": schedule},
        "learning": {"lr0": as_float(src, "learning_rate"), "reference_batch": r.optimizer_batch},
    }
    if use_vllm:  # weights loaded one tensor at a time, both modes; the colocated engine sleeps only when asked
        sections["weight_sync"] = _weight_sync(src, hardware["placement"] == "colocated")
    if src.get("use_peft"):  # model_config.py:103-121 (f2cd577); the reference is the base (grpo_trainer.py:959)
        targets = src.get("lora_target_modules")
        if targets is None:
            notes.append("lora_target_modules None: PEFT's default for Llama / Qwen models, q_proj and v_proj")
        sections["training"].update(
            lora_rank=as_int(src, "lora_r"),
            lora_target_modules="q_proj,v_proj"
            if targets is None
            else (targets if isinstance(targets, str) else ",".join(map(str, targets))),
        )
    # evaluation and checkpoints, beside the steps (rlsim.run.overheads)
    if run := run_keys.trl(src, r.mini_batches * r.iterations, r.group, notes):
        sections["run"] = run
    software_section(src, sections, notes)  # with trl_version: the release's vLLM names the engine's behaviour
    return sections, notes
