"""ROLL (alibaba/ROLL) RLVR pipeline configs as rlsim scenarios: the mapping ``TABLE``, ``read`` and
``to_scenario``.

Read at alibaba/ROLL@v0.3.0 (7f9d4d3873a87679c8d070085a4bd3bdeea7e589): ``roll/configs/base_config.py``,
``roll/pipeline/rlvr/rlvr_config.py``, ``roll/configs/worker_config.py``, ``roll/configs/training_args.py`` (the
fields and defaults, transcribed in ``defaults.yaml``).

A ROLL config is a Hydra YAML (``${response_length}`` references between its keys) whose roles (``actor_train``,
``actor_infer``, ``reference``, ``critic``, ``rewards``) each name their GPUs with a ``device_mapping`` string that
ROLL evaluates as Python (worker_config.py:312). rlsim never evaluates it: :func:`devices` reads
``list(range(a, b[, s]))``, literal lists, and their ``+``.

Facts:

* ``rollout_batch_size`` prompts per step (P; base_config.py:153), ``num_return_sequences_in_group`` responses
  each (G; rlvr_config.py:95), responses capped at ``response_length`` (or ``sequence_length`` less
  ``prompt_length``: base_config.py:272-278).
* GPUs: the union of the roles' device mappings. ``actor_infer``'s devices within ``actor_train``'s: one
  colocated pool, the engines on part of it where fewer (rlsim engine.replicas); disjoint: pools apart; any other
  overlap is refused naming both mappings. A vLLM engine spans ``strategy_config.tensor_parallel_size`` GPUs
  (worker_config.py:283-287).
* ``async_generation_ratio`` > 0 (base_config.py:502, :822) generates that many batches ahead (ROLL asserts >= 1:
  rlvr_config.py:222): rlsim async, staleness ceil(ratio).
* Optimizer steps per step: P x G samples over ``per_device_train_batch_size x gradient_accumulation_steps`` x
  the trainer's data-parallel ranks (GPUs / (TP x PP x CP)), each pass ``ppo_epochs`` times.
* The reference pass runs when ``enable_reference``, ``use_kl_loss`` or ``init_kl_coef > 0`` (0.2 by default:
  base_config.py:654-656); ``adv_estimator`` gae trains a critic (rlsim ppo).

Not modelled, refused naming the key: a device_mapping rlsim cannot read without running it, a reward worker on
GPUs of its own (``rewards.<domain>.device_mapping``: an LLM judge).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import LAUNCH_NOTES, ImportConfigError, Source, read_config
from rlsim.frameworks.basic import Facts, Recognisers, load_defaults, rows, sections
from rlsim.frameworks.common import as_float, as_int, divisible, resolve_model

VERSION_READ = "ROLL v0.3.0 (7f9d4d3)"
RECOGNISERS = Recognisers(
    "roll",
    entry_points=("examples/start_rlvr_pipeline.py", "start_rlvr_pipeline"),
    keys=("num_return_sequences_in_group", "actor_infer.device_mapping", "actor_train.device_mapping"),
    suffixes=(".yaml",),
)
AI, AT = "actor_infer.", "actor_train."
SC = AI + "strategy_args.strategy_config."
TC = AT + "strategy_args.strategy_config."
TA = AT + "training_args."
DEFAULTS = load_defaults(__file__)
TABLE = rows(
    DEFAULTS,
    (
        ("rollout_batch_size", "workload.prompts_per_step", "P: prompts per step"),
        ("num_return_sequences_in_group", "workload.group_size", "G: responses per prompt"),
        ("prompt_length", "workload.max_prompt_tokens", "prompt cap"),
        ("response_length", "workload.max_response_tokens", "response cap"),
        ("sequence_length", "workload.max_response_tokens", "without response_length: less prompt_length"),
        ("num_gpus_per_node", "hardware.gpus_per_node", "GPUs per node"),
        ("async_generation_ratio", "schedule.max_staleness", "> 0: async, staleness ceil(ratio)"),
        ("ppo_epochs", "algorithm.epochs_per_step", "passes over the step's batch"),
        ("adv_estimator", "algorithm.name", "gae -> ppo (critic); others -> grpo"),
        ("init_kl_coef", "algorithm.kl_reference", "> 0: the reference pass"),
        ("use_kl_loss", "algorithm.kl_reference", "true: the reference pass"),
        ("enable_reference", "algorithm.kl_reference", "true: the reference pass"),
        ("pretrain", "model", "a catalog name, alias or hf_id"),
        (AT + "device_mapping", "hardware.train_gpus", "list(range(a,b)) or a list: the trainer's GPUs"),
        (AI + "device_mapping", "hardware.rollout_gpus", "within actor_train's: colocated; disjoint: apart"),
        ("reference.device_mapping", "hardware.num_gpus", "counted in the union"),
        ("critic.device_mapping", "hardware.num_gpus", "counted in the union"),
        (AI + "strategy_args.strategy_name", "engine.behaviour", "vllm -> vllm-v1; sglang -> sglang-0.5"),
        (SC + "tensor_parallel_size", "engine.tensor_parallel_size", "vLLM TP (SGLang: tp_size)"),
        (SC + "gpu_memory_utilization", "engine.gpu_memory_utilization", "vLLM; None: 0.9"),
        (SC + "mem_fraction_static", "engine.gpu_memory_utilization", "SGLang; None: 0.9"),
        (TA + "learning_rate", "learning.lr0", "learning.reference_batch = P x G"),
        (TA + "per_device_train_batch_size", "algorithm.mini_batches_per_step", "samples per rank per micro-step"),
        (TA + "gradient_accumulation_steps", "algorithm.mini_batches_per_step", "micro-steps per optimizer step"),
        (TC + "tensor_model_parallel_size", "algorithm.mini_batches_per_step", "data-parallel ranks: GPUs / TP"),
        (TC + "pipeline_model_parallel_size", "algorithm.mini_batches_per_step", "... / PP"),
        (TC + "context_parallel_size", "algorithm.mini_batches_per_step", "... / CP"),
    ),
)
_RANGE = re.compile(r"^list\(\s*range\(\s*(-?\d+)\s*,\s*(-?\d+)\s*(?:,\s*(-?\d+)\s*)?\)\s*\)$")
_LITERAL = re.compile(r"^\[\s*(?:-?\d+\s*(?:,\s*-?\d+\s*)*,?)?\]$")


def devices(value: Any, key: str) -> list[int] | None:
    """A ROLL device_mapping as its device ids, read and never evaluated: ``list(range(a, b[, s]))``, a literal
    list (``[0, 1, 2]``, as YAML or as text, or ``list([0, 1, 2])``), or a ``+`` of those; None for none."""
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(value)
    text = str(value).strip()
    out: list[int] = []
    for part in _split_plus(text):
        part = part.strip()
        inner = re.fullmatch(r"list\(\s*(\[.*\])\s*\)", part, re.S)  # list([0, 1, ...])
        part = inner[1] if inner else part
        m = _RANGE.match(part)
        if m:
            step = int(m[3]) if m[3] else 1
            if step == 0:
                raise ImportConfigError(f"{key}: {text!r}: range() with step 0; fix it")
            out += list(range(int(m[1]), int(m[2]), step))
        elif _LITERAL.match(part):
            out += [int(v) for v in re.findall(r"-?\d+", part)]
        else:
            raise ImportConfigError(
                f"{key}: {text!r} is not a device list rlsim reads without running it (list(range(a, b[, s])) or "
                "[0, 1, ...]); write it in one of those forms"
            )
    if len(set(out)) != len(out):
        raise ImportConfigError(f"{key}: {text!r} names a device twice; fix it")
    return out


def _split_plus(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if ch == "+" and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def read(path: Path) -> dict[str, Any]:
    """A ROLL YAML (its ``hydra`` and ``defaults`` entries set aside)."""
    data = read_config(path, "roll")
    data.pop("hydra", None)
    data.pop("defaults", None)
    data[LAUNCH_NOTES] = [f"{path.name} read over ROLL's defaults ({VERSION_READ})"]
    return data


def _pools(src: Source) -> tuple[int, int, bool, int]:
    """(rollout GPUs, train GPUs, colocated, all GPUs) from the roles' device mappings."""
    train = devices(src.get(AT + "device_mapping"), src.name(AT + "device_mapping"))
    infer = devices(src.get(AI + "device_mapping"), src.name(AI + "device_mapping"))
    if not train or not infer:
        missing = AT if not train else AI
        raise ImportConfigError(f"{missing}device_mapping: not set (the role would run on CPU); set list(range(0,8))")
    union = set(train) | set(infer)
    for role in ("reference.", "critic."):
        union |= set(devices(src.get(role + "device_mapping"), src.name(role + "device_mapping")) or ())
    for key, value in src.flat.items():  # a reward worker on GPUs: an LLM judge or reward model of its own
        if key.startswith("rewards.") and key.endswith(".device_mapping") and value is not None:
            src.used.add(key)
            raise ImportConfigError(
                f"{key}: a reward worker on GPUs of its own ({value}) is not modelled (rlsim scores with a rule on "
                f"the CPU or OpenRLHF-style reward models); --set {key}=null to price the rule rewards alone"
            )
    if set(infer) <= set(train):
        return len(infer), len(train), True, len(union)
    if set(infer) & set(train):
        raise ImportConfigError(
            f"{AI}device_mapping and {AT}device_mapping share some GPUs but not all of the rollout's; rlsim models "
            "the rollout on the trainer's GPUs or on GPUs of its own"
        )
    return len(infer), len(train), False, len(union)


def to_scenario(src: Source) -> tuple[dict[str, Any], list[str]]:
    """The scenario sections of a ROLL RLVR config, and the assumptions made."""
    notes: list[str] = []
    prompts, group = as_int(src, "rollout_batch_size"), as_int(src, "num_return_sequences_in_group")
    max_prompt = as_int(src, "prompt_length")
    if src.given("response_length"):
        max_response = as_int(src, "response_length")
    elif src.given("sequence_length"):
        max_response = as_int(src, "sequence_length") - max_prompt
    else:
        raise ImportConfigError("response_length: not set, nor sequence_length (ROLL requires one); set it")
    rollout, train, colocated, union = _pools(src)
    if union > (train if colocated else rollout + train):
        notes.append(
            f"device mappings: {union} GPUs in all; the reference / critic GPUs beyond the pools are not priced apart"
        )
    engine = src.get(AI + "strategy_args.strategy_name")
    if engine not in ("vllm", "sglang"):
        raise ImportConfigError(f"{AI}strategy_args.strategy_name: {engine!r} is not mapped (vllm or sglang)")
    tp_key = SC + "tensor_parallel_size"
    tp = as_int(src, tp_key) if engine == "vllm" or src.given(tp_key) else int(src.flat.get(SC + "tp_size") or 1)
    mem_key = SC + ("gpu_memory_utilization" if engine == "vllm" else "mem_fraction_static")
    mem = as_float(src, mem_key) if src.given(mem_key) else 0.9
    ratio = as_float(src, "async_generation_ratio")
    per_rank = as_int(src, TA + "per_device_train_batch_size") * as_int(src, TA + "gradient_accumulation_steps")
    split = as_int(src, TC + "tensor_model_parallel_size") * as_int(src, TC + "pipeline_model_parallel_size")
    dp = divisible(f"{AT}device_mapping GPUs", train, "TP x PP x CP", split * as_int(src, TC + "context_parallel_size"))
    steps = divisible(
        "rollout_batch_size x num_return_sequences_in_group",
        prompts * group,
        "samples per optimizer step (per_device_train_batch_size x gradient_accumulation_steps x data-parallel ranks)",
        per_rank * dp,
    )
    kl = bool(src.get("enable_reference")) or bool(src.get("use_kl_loss")) or as_float(src, "init_kl_coef") > 0
    model, model_notes = resolve_model(src.get("pretrain"), "pretrain")
    notes += model_notes
    facts = Facts(
        model=model,
        prompts=prompts,
        group=group,
        max_prompt=max_prompt,
        max_response=max_response,
        rollout_gpus=rollout,
        train_gpus=train,
        colocated=colocated,
        tp=tp,
        engine=engine,
        gpu_memory_utilization=mem,
        max_num_seqs=None,
        mode="async" if ratio > 0 else "sync",
        staleness=math.ceil(ratio),
        lr=as_float(src, TA + "learning_rate"),
        algorithm="ppo" if src.get("adv_estimator") == "gae" else "grpo",
        kl_reference=kl,
        mini_batches=steps,
        epochs=as_int(src, "ppo_epochs"),
        gpus_per_node=as_int(src, "num_gpus_per_node"),
        engine_note="ROLL's pinned SGLang",
    )
    out, more = sections(facts, "ROLL")
    return out, notes + more
