"""ROLL's launch scripts, pipelines other than RLVR, and GPU reward workers, read at alibaba/ROLL@v0.3.0
(7f9d4d3873a87679c8d070085a4bd3bdeea7e589).

* Launch scripts: ``examples/<dir>/run_*.sh`` runs ``python examples/start_<pipeline>_pipeline.py --config_path
  P --config_name N``; the start script composes ``N.yaml`` with Hydra ``initialize(config_path=P)``
  (examples/start_rlvr_pipeline.py:21-22, start_agentic_pipeline.py:21-22), a path Hydra takes relative to the
  start script, so the YAML is ``examples/P/N.yaml``. The scripts set ``CONFIG_PATH=$(basename $(dirname $0))``:
  their own folder, so the YAML beside them (:func:`read_launch`).
* Agentic pipeline (start_agentic_pipeline.py; ``train_env_manager`` in the config): ``rollout_batch_size`` counts
  trajectories and must be a multiple of ``train_env_manager.group_size`` (roll/pipeline/agentic/
  agentic_config.py:330-336); the trajectories of a group share an env seed (:122-124, default group_size 1):
  P = rollout_batch_size / group_size prompts of G = group_size (:func:`agentic_batch`).
* DPO / SFT / distill pipelines (roll/pipeline/dpo/dpo_config.py:40-47 ``chosen_key`` / ``rejected_key``) train
  without a rollout: refused naming the pipeline (:func:`refuse_other_pipelines`).
* A reward worker with a ``device_mapping`` (roll/pipeline/rlvr/rewards/llm_judge_reward_worker.py: an LLM judge
  that generates a verdict per response) runs in the generate schedulers, loaded before generation and offloaded
  after it (rlvr_pipeline.py:522-526, :557-563): on GPUs within the trainer's it is rlsim's reward model on the
  training pool (reward.model without num_gpus); on GPUs of no other role, reward.num_gpus of its own
  (:func:`judge`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import ImportConfigError, Source
from rlsim.frameworks.common import as_int, resolve_model
from rlsim.frameworks.launch import framework_command
from rlsim.frameworks.roll.devices import devices
from rlsim.io.files import read_text

STARTS = ("start_rlvr_pipeline.py", "start_agentic_pipeline.py")
OTHER_STARTS = {"dpo": "DPO", "sft": "SFT", "distill": "distillation", "rlvr_vl": "vision-language RLVR"}
_SELF_DIR = re.compile(r"^\s*(?:export\s+)?(\w+)=[\"']?\$\(\s*basename\s+[\"']?\$\(\s*dirname\s+[\"']?\$0[\"']?\s*\)")


def read_launch(path: Path) -> Path:
    """The YAML a ROLL launch script composes (module docstring); refusals name what is missing."""
    text = read_text(path, "ROLL launch script")
    path = path.resolve()  # its folder's name is the config path
    other = re.search(r"\bstart_(\w+?)_pipeline\.py\b", text)
    if other and f"start_{other[1]}_pipeline.py" not in STARTS:
        what = OTHER_STARTS.get(other[1], other[1])
        raise ImportConfigError(
            f"{path.name}: runs start_{other[1]}_pipeline.py, ROLL's {what} pipeline, not an RL rollout run; "
            "rlsim models RLVR and agentic runs (start_rlvr_pipeline.py, start_agentic_pipeline.py)"
        )
    words, _ = framework_command(text, path.name, STARTS)
    args = {"--config_path": "config", "--config_name": "sppo_config"}  # the start scripts' argparse defaults
    for i, word in enumerate(words):
        key, eq, value = word.partition("=")
        if key in args:
            args[key] = value if eq else (words[i + 1] if i + 1 < len(words) else "")
    where, name = args["--config_path"], args["--config_name"]
    if "$" in where:  # set by a command substitution the reader does not run
        var = where.strip("${}\"'")
        own = {m[1] for m in map(_SELF_DIR.match, text.splitlines()) if m}
        if var not in own:
            raise ImportConfigError(
                f"{path.name}: --config_path {where} is not known without running the script; --set {var}=FOLDER "
                "(the folder under examples/ holding the YAML)"
            )
        where = path.parent.name  # $(basename $(dirname $0)): the script's own folder
    config = path.parent.parent / where / f"{name}.yaml"
    if not config.is_file():
        raise ImportConfigError(
            f"{path.name}: composes {where}/{name}.yaml under the examples folder ({config}), which is not there; "
            "give that YAML"
        )
    return config


def refuse_other_pipelines(src: Source) -> None:
    """A DPO config (chosen_key / rejected_key, no actor_infer) is not an RL rollout run."""
    if any(k in src.flat for k in ("chosen_key", "rejected_key")) and not src.flat.get("actor_infer.device_mapping"):
        src.used.update(k for k in ("chosen_key", "rejected_key") if k in src.flat)
        raise ImportConfigError(
            "chosen_key / rejected_key: a ROLL DPO config (start_dpo_pipeline.py: preference pairs, no rollout) is "
            "not an RL rollout run; rlsim models RLVR and agentic pipelines"
        )


def agentic_batch(src: Source, notes: list[str]) -> tuple[int, int] | None:
    """(P, G) of an agentic config (module docstring), None for an RLVR one."""
    if not any(k.startswith("train_env_manager.") for k in src.flat):
        return None
    trajectories = as_int(src, "rollout_batch_size")
    key = "train_env_manager.group_size"
    group = int(src.flat.get(key, 1) or 1)  # EnvManagerConfig.group_size: 1 (agentic_config.py:122-124)
    src.used.add(key)
    if group < 1 or trajectories % group:
        raise ImportConfigError(
            f"rollout_batch_size {trajectories} must be a multiple of {key} {group} (ROLL asserts it: "
            "agentic_config.py:330-336); change one"
        )
    notes.append(
        f"agentic pipeline: rollout_batch_size {trajectories} trajectories in groups of {key} {group}: "
        f"{trajectories // group} prompts (env seeds) x {group}; a multi-turn trajectory is priced as one response "
        "up to the sequence cap (env steps and turn re-prefills are not priced apart)"
    )
    return trajectories // group, group


def judge(src: Source, train: set[int], infer: set[int], others: set[int]) -> tuple[dict[str, Any], list[str], int]:
    """The reward section for reward workers on GPUs (module docstring), its notes, and the GPUs it adds."""
    mapped = [
        k for k, v in src.flat.items() if k.startswith("rewards.") and k.endswith(".device_mapping") and v is not None
    ]
    if not mapped:
        return {}, [], 0
    if len(mapped) > 1:
        raise ImportConfigError(
            f"{', '.join(mapped)}: more than one reward worker on GPUs; rlsim prices one reward model; --set all but "
            "one of them to null"
        )
    key = mapped[0]
    src.used.add(key)
    role = key[: -len("device_mapping")]
    gpus = set(devices(src.flat[key], key) or ())
    name_key = role + "model_args.model_name_or_path"
    tp_key = role + "strategy_args.strategy_config.tensor_parallel_size"
    src.used.update((name_key, tp_key))
    model, notes = resolve_model(src.flat.get(name_key), name_key)
    tp = int(src.flat.get(tp_key) or 1)
    src.used.add(role + "generating_args.max_new_tokens")
    tokens = src.flat.get(role + "generating_args.max_new_tokens")
    verdict = f"; its verdict of up to {tokens} generated tokens is not priced" if tokens else ""
    if gpus <= train:
        notes.append(
            f"{key}: a reward model on {len(gpus)} of the trainer's {len(train)} GPUs, priced as rlsim's reward model "
            f"on the training pool (a forward pass over prompt + response after the rollout; ROLL scores during "
            f"generation on its own {len(gpus)}{' beside the engines' if not gpus & infer else ''}){verdict}"
        )
        return {"reward": {"model": model, "tensor_parallel_size": tp}}, notes, 0
    if not gpus & (train | infer | others):
        notes.append(f"{key}: a reward model on {len(gpus)} GPUs of its own (reward.num_gpus){verdict}")
        return {"reward": {"model": model, "tensor_parallel_size": tp, "num_gpus": len(gpus)}}, notes, len(gpus)
    raise ImportConfigError(
        f"{key}: the reward worker's GPUs ({src.flat[key]}) lie partly in the trainer's; rlsim prices a reward model "
        "on the training pool or on GPUs of its own; move them"
    )
