"""slime (THUDM/slime) launch scripts as rlsim scenarios: the mapping ``TABLE``, ``read`` and ``to_scenario``.

Read at THUDM/slime@v0.3.1 (a6272da0d4f3d0a08520c99a2f3b4f6c887960dc): ``slime/utils/arguments.py`` (the flags and
their defaults, transcribed in ``defaults.yaml``), ``slime/ray/placement_group.py`` (the GPU pools),
``train.py`` / ``train_async.py`` (the schedule). The same launch form (bash arrays of flags, ``source
scripts/models/X.sh``, ``ray job submit ... -- python3 train.py``) serves slime's derivatives vime and miles, which
keep slime's argument parser; they are read as slime.

A slime launch script gathers its flags in bash arrays (``ROLLOUT_ARGS=(...)``) and runs ``python3 train.py
${MODEL_ARGS[@]} ...``, usually behind ``ray job submit ... --``; the model's architecture flags come from ``source
"${SCRIPT_DIR}/models/qwen3-4B.sh"``. :func:`read` inlines such a sourced file when it lies where the script says
(``${SCRIPT_DIR}`` is the script's folder), then reads the command with rlsim.frameworks.launch.

Facts (arguments.py line numbers at v0.3.1):

* ``--rollout-batch-size`` counts prompts per rollout step (P, required: :680), ``--n-samples-per-prompt`` the
  responses of each (G, :689); ``--global-batch-size`` counts samples per optimizer step (:692-695), so a step is
  P x G / global-batch-size optimizer steps; ``--num-steps-per-rollout`` says that count directly (:1907-1915).
* GPUs (placement_group.py:100-117): the actor trains on ``--actor-num-nodes`` x ``--actor-num-gpus-per-node``
  (1 x 8 by default: :39-41); ``--colocate`` puts the SGLang engines on those GPUs (``--rollout-num-gpus``
  defaults to them, :1887), otherwise the engines take ``--rollout-num-gpus`` GPUs of their own (no default: a
  script without it is refused). An engine spans ``--rollout-num-gpus-per-engine`` GPUs (its TP, :56). A PPO
  critic (``--advantage-estimator ppo``, :1847) shares the actor's GPUs (placement_group.py:135).
* ``train.py`` alternates generation and training; ``train_async.py`` generates rollout i+1 while training on
  rollout i and updates the engines' weights every ``--update-weights-interval`` steps (train_async.py:29-66;
  it asserts no ``--colocate``): rlsim async with that many steps of staleness.
* ``--rollout-max-response-len`` caps responses (SGLang's max_tokens, :363); ``--rollout-max-prompt-len`` filters
  prompts (:353); ``--sglang-server-concurrency`` caps the requests in flight per engine (512:
  sglang_utils/arguments.py:44; sglang_rollout.py:94), rlsim's max_num_seqs.

Not modelled, refused naming the flag: an external rollout (``--rollout-external-engine-addrs``),
``--debug-rollout-only`` / ``--debug-train-only``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rlsim.catalog.hf_config import ModelConfigError, spec_from_config
from rlsim.frameworks.adapter import LAUNCH_NOTES, ImportConfigError, Source
from rlsim.frameworks.basic import Facts, Recognisers, load_defaults, rows, sections
from rlsim.frameworks.common import as_float, as_int, divisible, resolve_model
from rlsim.frameworks.launch import framework_command
from rlsim.frameworks.slime import training as slime_training
from rlsim.io.files import read_text
from rlsim.scenario.overrides import parse_scalar
from rlsim.workload import keep_prior

VERSION_READ = "slime v0.3.1 (a6272da)"
SGLANG_PIN = "sglang 0.5.9 in slime v0.3.1 docker/Dockerfile.gb10:107"
ENTRY, ASYNC_ENTRY = "train.py", "train_async.py"
RECOGNISERS = Recognisers(
    "slime",
    entry_points=(ASYNC_ENTRY, ENTRY),
    keys=("rollout-batch-size", "n-samples-per-prompt", "actor-num-gpus-per-node", "rollout-num-gpus-per-engine"),
    suffixes=(".sh",),
)
ASYNC = "__rlsim_slime_async__"  # read() marks a train_async.py launch
DEFAULTS = load_defaults(__file__)
_SPEC = (
    ("rollout-batch-size", "workload.prompts_per_step", "P: prompts per rollout (required)"),
    ("n-samples-per-prompt", "workload.group_size", "G: responses per prompt"),
    ("global-batch-size", "algorithm.mini_batches_per_step", "samples per optimizer step: P x G / it"),
    ("num-steps-per-rollout", "algorithm.mini_batches_per_step", "optimizer steps per rollout (wins)"),
    ("actor-num-nodes", "hardware.train_gpus", "trainer GPUs = nodes x GPUs per node"),
    ("actor-num-gpus-per-node", "hardware.train_gpus, hardware.gpus_per_node", "trainer GPUs per node"),
    ("rollout-num-gpus", "hardware.rollout_gpus", "SGLang GPUs; --colocate: the actor's"),
    ("rollout-num-gpus-per-engine", "engine.tensor_parallel_size", "GPUs per SGLang engine"),
    ("colocate", "hardware.placement", "true: colocated, sync; false: separate pools"),
    ("rollout-max-prompt-len", "workload.max_prompt_tokens", "None: 1024 assumed (a note)"),
    ("rollout-max-response-len", "workload.max_response_tokens", "required by rlsim (SGLang max_tokens)"),
    ("sglang-mem-fraction-static", "engine.gpu_memory_utilization", "None: 0.85 assumed (a note)"),
    ("sglang-server-concurrency", "engine.max_num_seqs", "requests in flight per engine"),
    ("advantage-estimator", "algorithm.name", "ppo -> ppo (critic on the actor's GPUs); others -> grpo"),
    ("use-kl-loss", "algorithm.kl_reference", "reference log-prob pass"),
    ("lr", "learning.lr0", "learning.reference_batch = P x G"),
    ("update-weights-interval", "schedule.max_staleness", "train_async.py: steps between weight updates"),
    ("hf-checkpoint", "model", "catalog name; else the model built from MODEL_ARGS"),
    ("dynamic-sampling-filter-path", "algorithm.dynamic_sampling", "set: streaming replacement (mode replace)"),
    ("over-sampling-batch-size", "algorithm.dynamic_sampling", "prompts per submission (a note)"),
)
_MODEL_FLAGS = (
    "num-layers",
    "hidden-size",
    "ffn-hidden-size",
    "num-attention-heads",
    "num-query-groups",
    "kv-channels",
    "vocab-size",
    "num-experts",
    "moe-router-topk",
    "moe-ffn-hidden-size",
    "qk-layernorm",
    "add-qkv-bias",
    "untie-embeddings-and-output-weights",
)
TABLE = (
    rows(DEFAULTS, _SPEC)
    + rows(
        {},
        tuple(
            (k, "model", "MODEL_ARGS: the architecture, when hf-checkpoint is not in the catalog") for k in _MODEL_FLAGS
        ),
    )
    + slime_training.ROWS
)
REFUSED = {
    "rollout-external-engine-addrs": "an external rollout engine",
    "debug-rollout-only": "a rollout-only debug run",
    "debug-train-only": "a train-only debug run",
}
_SOURCE = re.compile(r"^\s*(?:source|\.)\s+[\"']?([^\"'\s]+)[\"']?\s*$")


def _inline_sources(text: str, folder: Path, notes: list[str]) -> str:
    """``text`` with each ``source FILE`` line replaced by that file's text, when FILE (``${SCRIPT_DIR}`` being
    the script's folder) lies there; otherwise the line stays (a note)."""
    out = []
    for line in text.splitlines():
        m = _SOURCE.match(line)
        if not m:
            out.append(line)
            continue
        name = re.sub(r"\$\{?SCRIPT_DIR\}?", str(folder.resolve()), m[1])
        target = Path(name) if Path(name).is_absolute() else folder.resolve() / name
        if "$" not in name and target.is_file():
            out.append(read_text(target, "sourced script"))
            notes.append(f"source {m[1]}: read from {target.name} beside the script")
        else:
            out.append(line)
            notes.append(f"source {m[1]}: not found beside the script; its flags (the model's MODEL_ARGS) are unread")
    return "\n".join(out)


def words_to_flags(words: list[str], where: str) -> dict[str, Any]:
    """``--flag value`` / ``--flag`` (true) / ``--flag a b`` (a list) words as flag -> value."""
    data: dict[str, Any] = {}
    key = None
    for word in words:
        if word.startswith("--"):
            key, eq, value = word[2:].partition("=")
            data[key] = parse_scalar(value) if eq else True
            if eq:
                key = None
        elif key is None:
            raise ImportConfigError(f"{where}: {word!r} follows no --flag; slime takes --flag value arguments")
        elif data[key] is True:
            data[key] = parse_scalar(word)
        else:
            data[key] = [*(data[key] if isinstance(data[key], list) else [data[key]]), parse_scalar(word)]
    return data


def read(path: Path) -> dict[str, Any]:
    """A slime launch script (or a file of its flags): the flags of its ``train.py`` / ``train_async.py``
    command, the sourced model file inlined (module docstring); nothing is run."""
    if not path.is_file():
        raise ImportConfigError(f"{path}: is not a file; give the slime launch script (python3 train.py ...)")
    notes: list[str] = []
    text = _inline_sources(read_text(path, "slime launch script"), path.parent, notes)
    try:
        words, launch_notes = framework_command(text, path.name, (ASYNC_ENTRY,))
        is_async = True
    except ImportConfigError as exc:
        if "runs no " not in str(exc):
            raise
        words, launch_notes = framework_command(text, path.name, (ENTRY, ASYNC_ENTRY))
        is_async = False
    data = words_to_flags(words, path.name)
    entry = ASYNC_ENTRY if is_async else ENTRY
    data[LAUNCH_NOTES] = [f"read from the {entry} command in {path.name}, over slime's defaults", *notes, *launch_notes]
    if is_async:
        data[ASYNC] = True
    return data


def _model(src: Source, notes: list[str]) -> str | dict[str, Any]:
    """The catalog model --hf-checkpoint names, else the model MODEL_ARGS describe (Megatron's architecture flags
    as the Hugging Face config they stand for: qwen3 with --qk-layernorm, qwen2 with --add-qkv-bias, else llama;
    with --num-experts the MoE form)."""
    name = src.get("hf-checkpoint")
    described = [src.given(flag) for flag in _MODEL_FLAGS][0]  # the architecture flags count as read either way
    try:
        model, model_notes = resolve_model(name, "hf-checkpoint")
        notes += model_notes
        return model
    except ImportConfigError:
        if not described:
            raise
    experts = src.get("num-experts")
    qk, qkv = src.get("qk-layernorm"), src.get("add-qkv-bias")
    family = ("qwen3" if qk else "qwen2" if qkv else "llama") if not experts else ("qwen3_moe" if qk else "qwen2_moe")
    heads = as_int(src, "num-attention-heads")
    cfg = {
        "model_type": family,
        "num_hidden_layers": as_int(src, "num-layers"),
        "hidden_size": as_int(src, "hidden-size"),
        "intermediate_size": as_int(src, "ffn-hidden-size") if src.given("ffn-hidden-size") else 0,
        "num_attention_heads": heads,
        "num_key_value_heads": src.get("num-query-groups") or heads,
        "head_dim": src.get("kv-channels") or as_int(src, "hidden-size") // heads,
        "vocab_size": as_int(src, "vocab-size"),
        "tie_word_embeddings": not bool(src.get("untie-embeddings-and-output-weights")),
    }
    if experts:
        cfg.update(num_experts=experts, num_experts_per_tok=src.get("moe-router-topk"))
        cfg["moe_intermediate_size"] = src.get("moe-ffn-hidden-size")
    tail = str(name or "slime-model").rstrip("/").rsplit("/", 1)[-1]
    try:
        spec = spec_from_config(cfg, tail)
    except (ModelConfigError, KeyError, TypeError, ValueError) as exc:
        raise ImportConfigError(f"MODEL_ARGS: cannot be read as a model ({exc}); --set hf-checkpoint=NAME") from None
    notes.append(
        f"model: {name} is not in the catalog; built from the script's MODEL_ARGS as a {family} model of "
        f"{spec['num_params'] / 1e9:.2f}B parameters (rlsim.catalog.hf_config)"
    )
    return spec


def _dynamic_sampling(src: Source, facts: Facts, notes: list[str]) -> None:
    """``--dynamic-sampling-filter-path`` (sglang_rollout.py:393-446 at v0.3.1): streaming replacement."""
    if not src.get("dynamic-sampling-filter-path"):
        return
    over = as_int(src, "over-sampling-batch-size") if src.given("over-sampling-batch-size") else facts.prompts
    facts.extra["algorithm"] = {"dynamic_sampling": keep_prior.assumed({"mode": "replace"})}
    notes.append(keep_prior.note("dynamic-sampling-filter-path"))
    notes.append(
        f"dynamic-sampling-filter-path: slime submits {over} prompts (over-sampling-batch-size) whenever fewer "
        f"than {facts.prompts} groups are kept or in flight, drops the groups the filter rejects and aborts the "
        "rest once enough pass (sglang_rollout.py:404-446): priced as streaming replacement at the keep rate"
    )


def to_scenario(src: Source) -> tuple[dict[str, Any], list[str]]:
    """The scenario sections for a slime launch, and the assumptions made."""
    src.used.add(ASYNC)
    for flag, what in REFUSED.items():
        if src.flat.get(flag):
            raise ImportConfigError(f"--{flag}: {what} is not modelled by rlsim; remove it to simulate slime's own")
    notes: list[str] = []
    if not src.given("rollout-batch-size"):
        raise ImportConfigError("--rollout-batch-size: not set (slime requires it); --set rollout-batch-size=N")
    prompts, group = as_int(src, "rollout-batch-size"), as_int(src, "n-samples-per-prompt")
    if src.given("num-steps-per-rollout"):
        steps = as_int(src, "num-steps-per-rollout")
    elif src.given("global-batch-size"):
        steps = divisible(
            "rollout-batch-size x n-samples-per-prompt",
            prompts * group,
            "global-batch-size",
            as_int(src, "global-batch-size"),
        )
    else:
        steps = 1
        notes.append("global-batch-size and num-steps-per-rollout unset: one optimizer step per rollout assumed")
    per_node = as_int(src, "actor-num-gpus-per-node")
    train_gpus = as_int(src, "actor-num-nodes") * per_node
    colocate = bool(src.get("colocate"))
    is_async = bool(src.flat.get(ASYNC))
    if is_async and colocate:
        raise ImportConfigError("--colocate: train_async.py refuses colocation (train_async.py:11); remove one")
    if colocate:
        rollout_gpus = as_int(src, "rollout-num-gpus") if src.given("rollout-num-gpus") else train_gpus
    elif not src.given("rollout-num-gpus"):
        raise ImportConfigError("--rollout-num-gpus: not set and no --colocate; slime needs the engines' GPU count")
    else:
        rollout_gpus = as_int(src, "rollout-num-gpus")
    if not src.given("rollout-max-response-len"):
        raise ImportConfigError("--rollout-max-response-len: not set; rlsim needs the response cap (--set ...=N)")
    max_prompt = as_int(src, "rollout-max-prompt-len") if src.given("rollout-max-prompt-len") else 1024
    if not src.given("rollout-max-prompt-len"):
        notes.append("rollout-max-prompt-len unset (slime does not cap prompts): 1024 tokens assumed")
    if src.given("sglang-mem-fraction-static"):
        mem = as_float(src, "sglang-mem-fraction-static")
    else:
        mem = 0.85
        notes.append("sglang-mem-fraction-static unset (SGLang derives it from the GPU's memory): 0.85 assumed")
    estimator = src.get("advantage-estimator")
    interval = as_int(src, "update-weights-interval")
    facts = Facts(
        model=_model(src, notes),
        prompts=prompts,
        group=group,
        max_prompt=max_prompt,
        max_response=as_int(src, "rollout-max-response-len"),
        rollout_gpus=rollout_gpus,
        train_gpus=train_gpus,
        colocated=colocate,
        tp=as_int(src, "rollout-num-gpus-per-engine"),
        engine="sglang",
        gpu_memory_utilization=mem,
        max_num_seqs=as_int(src, "sglang-server-concurrency"),
        mode="async" if is_async else "sync",
        staleness=interval if is_async else 0,
        lr=as_float(src, "lr"),
        algorithm="ppo" if estimator == "ppo" else "grpo",
        kl_reference=bool(src.get("use-kl-loss")),
        mini_batches=steps,
        gpus_per_node=per_node,
        engine_note=SGLANG_PIN,
    )
    _dynamic_sampling(src, facts, notes)
    if estimator not in ("ppo", "grpo"):
        notes.append(f"advantage-estimator {estimator}: critic-free, priced as grpo (same passes)")
    out, more = sections(facts, "slime")
    out["training"] = {**out.get("training", {}), **slime_training.training(src, facts.kl_reference)}
    return out, notes + more
