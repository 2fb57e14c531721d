"""OpenRLHF's arguments as a user has them: the launch command or argument list (``read``, ``parse_arguments``) and
the flat flag names of v0.9.5 and earlier as their dotted successors (``LEGACY``, ``canonical``), with that
release's defaults and length flags (``legacy_default``, ``length_caps``). :mod:`rlsim.frameworks.openrlhf.mapping`'s
docstring says what was read at which commit.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import LAUNCH_NOTES, ImportConfigError, Source, read_config
from rlsim.frameworks.common import as_int
from rlsim.frameworks.launch import framework_command
from rlsim.io.files import read_text
from rlsim.scenario.overrides import parse_scalar

MODULE = "openrlhf.cli.train_ppo_ray"

# flat names (v0.9.5, commit c0e2ee2) -> their dotted successors (v0.11.0)
LEGACY: dict[str, str] = {
    "rollout_batch_size": "rollout.batch_size",
    "n_samples_per_prompt": "rollout.n_samples_per_prompt",
    "train_batch_size": "train.batch_size",
    "max_epochs": "train.max_epochs",
    "micro_train_batch_size": "train.micro_batch_size",
    "micro_rollout_batch_size": "rollout.micro_batch_size",
    "packing_samples": "ds.packing_samples",
    "use_dynamic_batch": "train.dynamic_batch_enable",
    "train_max_tokens_per_gpu": "train.max_tokens_per_gpu",
    "actor_num_nodes": "actor.num_nodes",
    "actor_num_gpus_per_node": "actor.num_gpus_per_node",
    "ref_num_nodes": "ref.num_nodes",
    "ref_num_gpus_per_node": "ref.num_gpus_per_node",
    "critic_num_nodes": "critic.num_nodes",
    "critic_num_gpus_per_node": "critic.num_gpus_per_node",
    "colocate_all_models": "train.colocate_all",
    "colocate_actor_ref": "train.colocate_actor_ref",
    "colocate_critic_reward": "train.colocate_critic_reward",
    "vllm_num_engines": "vllm.num_engines",
    "vllm_tensor_parallel_size": "vllm.tensor_parallel_size",
    "vllm_gpu_memory_utilization": "vllm.gpu_memory_utilization",
    "enable_prefix_caching": "vllm.enable_prefix_caching",
    "enforce_eager": "vllm.enforce_eager",
    "async_train": "train.async_enable",
    "async_queue_size": "train.async_queue_size",
    "vllm_generate_batch_size": "rollout.vllm_generate_batch_size",
    "advantage_estimator": "algo.advantage.estimator",
    "init_kl_coef": "algo.kl.init_coef",
    "dynamic_filtering": "algo.dynamic_filtering_enable",
    "dynamic_filtering_reward_range": "algo.dynamic_filtering_range",
    "max_len": "data.max_len",
    "generate_max_len": "rollout.max_new_tokens",
    "max_new_tokens": "rollout.max_new_tokens",
    "actor_learning_rate": "actor.adam.lr",
    "pretrain": "actor.model_name_or_path",
    "critic_pretrain": "critic.model_name_or_path",
    "reward_pretrain": "reward.model_name_or_path",
    "reward_num_nodes": "reward.num_nodes",
    "reward_num_gpus_per_node": "reward.num_gpus_per_node",
    "remote_rm_url": "reward.remote_url",
    "gradient_checkpointing": "actor.gradient_checkpointing_enable",
    "zero_stage": "ds.zero_stage",
    "adam_offload": "ds.adam_offload",
    "lora_rank": "ds.lora.rank",
    "target_modules": "ds.lora.target_modules",
    "overlap_comm": "ds.overlap_comm",
    "ds_tensor_parallel_size": "ds.tensor_parallel_size",
    "ring_attn_size": "ds.ring_attn_size",
    "eval_steps": "eval.steps",
    "eval_dataset": "eval.dataset",
    "eval_n_samples_per_prompt": "eval.n_samples_per_prompt",
    "save_steps": "ckpt.save_steps",
}
# the flat name a dotted key is written with (generate_max_len, v0.9.5's, for rollout.max_new_tokens)
FLAT_NAMES: dict[str, str] = {dotted: flat for flat, dotted in LEGACY.items() if flat != "max_new_tokens"}
# defaults of v0.9.5 that differ from v0.11.0's, for a file in the flat spelling
LEGACY_DEFAULTS: dict[str, Any] = {
    "train.micro_batch_size": 4,
    "rollout.micro_batch_size": 8,
    "prompt_max_len": 1024,
    "rollout.max_new_tokens": 1024,
}


def read(path: Path) -> dict[str, Any]:
    """The arguments in ``path``: YAML / JSON of dest names, else a command line or one ``--flag value`` per line."""
    if path.suffix in (".yaml", ".yml", ".json"):
        return read_config(path, "openrlhf")
    if not path.is_file():
        raise ImportConfigError(
            f"{path}: is not a file; give the train_ppo_ray command line, one --flag value per line, or YAML / JSON"
        )
    return parse_arguments(read_text(path, "openrlhf arguments"), str(path))


def parse_arguments(text: str, where: str = "arguments") -> dict[str, Any]:
    """``--rollout.batch_size 1024 --train.colocate_all`` -> ``{"rollout.batch_size": 1024, "train.colocate_all":
    True}``: a flag takes the words up to the next ``--flag`` (none: true; several: a list); ``--flag=value`` too;
    a flag given twice keeps its last value (as argparse does)."""
    notes: list[str] = []
    if MODULE in text:  # a launch script: its variables, arrays, bash -c and ray job submit read as text
        words, notes = framework_command(text, where, (MODULE,), Path(where).parent)
    else:
        try:
            words = shlex.split(text.replace("\\\n", " "), comments=True)
        except ValueError as exc:
            raise ImportConfigError(f"{where}: cannot be split into shell words ({exc}); fix the quoting") from None
    out: dict[str, Any] = {}
    flag: str | None = None
    values: list[Any] = []

    def done() -> None:
        if flag is not None:  # a flag given twice: the last wins, as with argparse
            out[flag] = True if not values else values[0] if len(values) == 1 else list(values)

    for word in words:
        if word.startswith("--") and len(word) > 2:
            done()
            name, eq, value = word[2:].partition("=")
            flag, values = name, ([parse_scalar(value)] if eq else [])
        elif flag is None:
            raise ImportConfigError(
                f"{where}: {word!r} is not a --flag; give the {MODULE} command line (a launch script: its "
                "variables and arrays are expanded) or one --flag value per line"
            )
        else:
            values.append(parse_scalar(word))
    done()
    if not out:
        raise ImportConfigError(
            f"{where}: holds no --flag; give the {MODULE} arguments, e.g. --rollout.batch_size 1024"
        )
    if notes:
        out[LAUNCH_NOTES] = notes
    return out


def canonical(flat: dict[str, Any], where: str) -> tuple[dict[str, Any], dict[str, str]]:
    """Flat (v0.9.5) names renamed to the dotted TABLE names, and how each key is spelled (for a file in the flat
    spelling, every TABLE key's flat name, so that messages and defaults name the flags the user has); one key in
    both spellings is refused naming both."""
    out: dict[str, Any] = {}
    spelling: dict[str, str] = {}
    for key, value in flat.items():
        dotted = LEGACY.get(key, key)
        if dotted in out:
            first = spelling.get(dotted, dotted)
            raise ImportConfigError(f"{where}: {first} and {key} give the same OpenRLHF argument; keep one of them")
        out[dotted] = value
        if dotted != key:
            spelling[dotted] = key
    if spelling:
        for dotted, flat_name in FLAT_NAMES.items():
            spelling.setdefault(dotted, flat_name)
    return out, spelling


def legacy_default(src: Source, key: str) -> Any:
    """``key``'s value, absent: the flat spelling's default (LEGACY_DEFAULTS) for a legacy file, else the TABLE's
    (with openrlhf_version: that release's)."""
    named = src.get("openrlhf_version") is not None  # a named release's defaults win (releases.table_for)
    return src.get(key, LEGACY_DEFAULTS[key]) if src.legacy and not named else src.get(key)


def length_caps(src: Source) -> tuple[int, int, list[str]]:
    """(max prompt tokens, max response tokens, notes): v0.9.5's prompt_max_len / generate_max_len when the file
    uses them, else v0.10's data.max_len with rollout.max_new_tokens (None: half of max_len each, assumed)."""
    n = src.name
    new_key = "rollout.max_new_tokens"
    old_style = src.given("prompt_max_len") or (src.given(new_key) and n(new_key) == "generate_max_len")
    if src.legacy and (old_style or not (src.given("data.max_len") or src.given(new_key))):
        prompt = (
            as_int(src, "prompt_max_len") if src.given("prompt_max_len") else int(legacy_default(src, "prompt_max_len"))
        )
        response = as_int(src, new_key) if src.given(new_key) else int(legacy_default(src, new_key))
        return prompt, response, []
    if src.given("prompt_max_len"):
        raise ImportConfigError(
            f"prompt_max_len is a v0.9.5 flag; with the dotted flags give {n('data.max_len')} (prompt + response) "
            f"and {n(new_key)}"
        )
    total = as_int(src, "data.max_len")
    if src.given(new_key):
        response = as_int(src, new_key)
        if response >= total:
            raise ImportConfigError(
                f"{n(new_key)} ({response}) must be less than {n('data.max_len')} ({total}), which also holds the "
                "prompt; change one of them"
            )
        return total - response, response, []
    prompt = total // 2
    return (
        prompt,
        total - prompt,
        [
            f"{n('data.max_len')} {total} split half prompt, half response ({n(new_key)} unset: OpenRLHF generates up "
            "to max_len - the prompt's length)"
        ],
    )
