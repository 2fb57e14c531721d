"""TRL's releases: the GRPOConfig defaults of every release from 0.14.0 (the first with GRPOTrainer), read from
TRL's source at its tags by scripts/trl_defaults.py into ``trl_defaults.yaml``; which release a config's
``trl_version`` selects (without one: the newest release whose GRPOConfig has every option the config sets, from
the file's ``options`` table), the keys a release lacks, and the table of what changes between releases
(docs/import-config.md). What a release's options mean for the mapping is in :mod:`rlsim.frameworks.trl.mapping`.
The vLLM a release installs is in rlsim/catalog/software.yaml ``frameworks.trl`` (:func:`software_section`); what
moves step time between releases without an rlsim field is listed in calibrate/published/data/trl_releases.md.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import ImportConfigError, Source
from rlsim.frameworks.common import known_release, release_text, version_tuple
from rlsim.io.files import load_yaml, read_text
from rlsim.scenario import software

DEFAULTS_FILE = Path(__file__).with_name("trl_defaults.yaml")
FIRST_GRPO = "0.14.0"
# what a release without the option does, where rlsim reads the option: 0.14-0.15 have no num_iterations and use
# each generation round once (huggingface/trl@v0.14.0:trl/trainer/grpo_trainer.py:367-370, compute_loss on the
# completions _prepare_inputs just generated; the reuse came in v0.16.0:trl/trainer/grpo_trainer.py:391)
ABSENT_MEANS = {"num_iterations": 1}


# the colocated engine's token budget: vllm.LLM(max_num_batched_tokens=4096) from 0.19.0
# (huggingface/trl@v0.19.0:trl/trainer/grpo_trainer.py:668, v0.25.0:grpo_trainer.py:609,
# v1.0.0:trl/generation/vllm_generation.py:354, v1.9.0:vllm_generation.py:363); 0.18.0 passes none (vLLM's own)
BATCHED_TOKENS_FROM = (0, 19, 0)


@functools.cache
def releases() -> dict[str, dict[str, Any]]:
    """TRL release -> its GRPOConfig defaults and commit (trl_defaults.yaml, by scripts/trl_defaults.py)."""
    data = load_yaml(read_text(DEFAULTS_FILE, "TRL defaults"))
    return {str(v): row for v, row in data["versions"].items()}


@functools.cache
def _data() -> dict[str, Any]:
    return load_yaml(read_text(DEFAULTS_FILE, "TRL defaults"))


def options() -> dict[str, set[str]]:
    """GRPOConfig's own options -> the releases that have it (trl_defaults.yaml ``options``)."""
    order = sorted(releases(), key=version_tuple)
    out: dict[str, set[str]] = {}
    for option, runs in _data()["options"].items():
        have: set[str] = set()
        for run in runs:
            first, last = (version_tuple(v) for v in run.split("-"))
            have |= {v for v in order if first <= version_tuple(v) <= last}
        out[option] = have
    return out


def training_arguments() -> frozenset[str]:
    """transformers' TrainingArguments fields: every release accepts them (trl_defaults.yaml)."""
    return frozenset(_data()["training_arguments"])


@functools.cache
def other_trainer_options() -> dict[str, frozenset[str]]:
    """TRL's trainers that are not RL (SFTConfig, DPOConfig, ...) -> their options that no GRPOConfig has."""
    grpo = set(_data()["options"])
    return {cls: frozenset(set(keys) - grpo) for cls, keys in _data()["other_trainers"].items()}


@functools.cache
def grpo_only_options() -> frozenset[str]:
    """GRPOConfig's options that none of TRL's other trainers has: a config setting one is a GRPO run's."""
    others = set().union(*(set(keys) for keys in _data()["other_trainers"].values()))
    return frozenset(set(_data()["options"]) - others)


def _span(have: set[str]) -> str:
    order = sorted(have, key=version_tuple)
    return f"{order[0]}-{order[-1]}" if order else "none"


def release_for_keys(keys: set[str]) -> tuple[str, list[str]]:
    """The newest release whose GRPOConfig has every option among ``keys`` (the keys the config sets), and the
    note saying so; refused in one line when no single release has them all."""
    known = sorted(releases(), key=version_tuple)
    table = options()
    mine = {k: table[k] for k in sorted(keys) if k in table}  # what every release does is no constraint
    fits = [v for v in known if all(v in have for have in mine.values())]
    if not fits:
        narrow = sorted(mine.items(), key=lambda kv: len(kv[1]))
        a, b = next((x, y) for x in narrow for y in narrow if not (x[1] & y[1]))
        raise ImportConfigError(
            f"{a[0]} (TRL {_span(a[1])}) and {b[0]} (TRL {_span(b[1])}): no TRL release has both options; remove "
            "the one the TRL you run lacks, or --set trl_version to it"
        )
    chosen = fits[-1]
    limits = [k for k, have in mine.items() if known[-1] not in have or known[0] not in have]
    why = f" (options of {fits[0]}-{chosen} only: {', '.join(limits)})" if limits and chosen != known[-1] else ""
    return chosen, [
        f"trl_version: not given, so TRL {chosen}'s defaults, the newest release whose GRPOConfig has every option "
        f"the config sets{why}; --set trl_version=X.Y.Z as installed where the config runs"
    ]


def release_for(version: Any, keys: set[str] | None = None) -> tuple[str, list[str]]:
    """The release whose defaults apply to ``version`` (the newest release at or below it; without a version,
    the newest whose options hold ``keys``: :func:`release_for_keys`), and notes."""
    known = sorted(releases(), key=version_tuple)
    newest = known[-1]
    if version is None:
        return release_for_keys(keys or set())
    wanted = release_text("trl_version", version, "0.27.0")
    if wanted < version_tuple(FIRST_GRPO):
        raise ImportConfigError(
            f"trl_version: TRL {version} has no GRPOTrainer (it came in {FIRST_GRPO}); use a later TRL"
        )
    at_or_below = [v for v in known if version_tuple(v) <= wanted]
    chosen = at_or_below[-1]
    notes = [
        f"trl_version {version}: TRL {chosen}'s defaults (trl_defaults.yaml, commit {releases()[chosen]['commit'][:9]})"
    ]
    if wanted > version_tuple(newest):
        notes.append(f"trl_version {version} is newer than the newest release read ({newest}): its defaults assumed")
    return chosen, notes


def check_release_keys(src: Source, version: str) -> None:
    """Refuse a key the release does not have (TRL's argument parser rejects it)."""
    row = releases()[version]
    known = {k for r in releases().values() for k in r} - {"commit"}
    for key in sorted(known - set(row)):
        if key in ABSENT_MEANS and src.flat.get(key) == ABSENT_MEANS[key]:
            continue  # the release's own behaviour (num_iterations 1 before 0.16): said by the mapping
        if src.flat.get(key) is not None:
            since = [v for v in sorted(releases(), key=version_tuple) if key in releases()[v]]
            when = f"it is in {since[0]}-{since[-1]}" if since else "no release read has it"
            raise ImportConfigError(
                f"{src.name(key)}: TRL {version} has no such option ({when}); remove it or --set trl_version to the "
                "release the config was written for"
            )


def release_changes_table() -> str:
    """Markdown: the releases at which a default rlsim reads changes, or an option comes or goes (docs/import-config.md
    holds this table; a test keeps it in step with trl_defaults.yaml)."""
    lines = ["| TRL release | what changes |", "|---|---|"]
    before: dict[str, Any] | None = None
    for version in sorted(releases(), key=version_tuple):
        row = {k: v for k, v in releases()[version].items() if k != "commit"}
        if before is None:
            text = "first GRPO release: " + ", ".join(f"`{k}` {v}" for k, v in row.items())
        else:
            parts = [f"`{k}` {before[k]} -> {v}" for k, v in row.items() if k in before and before[k] != v]
            parts += [f"`{k}` added ({v})" for k, v in row.items() if k not in before]
            parts += [f"`{k}` removed" for k in before if k not in row]
            text = ", ".join(parts)
        if text:
            lines.append(f"| {version} | {text} |")
        before = row
    return "\n".join(lines) + "\n"


def software_section(src: Source, sections: dict[str, Any], notes: list[str]) -> None:
    """With ``trl_version`` and vLLM: ``software: {framework: trl, framework_version}``, whose entry in
    rlsim/catalog/software.yaml (``frameworks.trl``) names the vLLM the release's ``vllm`` extra installs and so the
    engine's behaviour (the importer's fixed ``vllm-v1`` is dropped); a release the catalog lacks takes the nearest
    known one with its one-line warning. Without vLLM (transformers generate) no engine release applies."""
    version = src.get("trl_version")
    engine = sections["engine"]
    if version is None or engine.get("static_batching"):
        return
    found, warning = known_release("trl", "trl_version", version, "0.27.0")
    entry = software.table()["frameworks"]["trl"][found]
    notes += [warning] if warning else []
    engine.pop("behaviour", None)
    sections["software"] = {"framework": "trl", "framework_version": str(version), "engine": "vllm"}
    notes.append(f"trl_version {version}: vLLM {entry['engine_version']} (TRL {found}'s vllm extra, software.yaml)")


def colocated_limits(version: str, per_device: int, tp: int, steps_per_gen: int, accum: int) -> dict[str, int]:
    """The colocated vLLM's batch limits as GRPOTrainer builds it at every release with ``vllm_mode`` (0.18.0+):
    max_num_seqs = per_device_train_batch_size x vllm_tensor_parallel_size x gradient_accumulation_steps up to
    0.19.1 (v0.18.0:trl/trainer/grpo_trainer.py:651-653, v0.19.1:grpo_trainer.py:661-663), x steps_per_generation
    from 0.20.0 (v0.20.0:grpo_trainer.py:839-841, v0.25.0:grpo_trainer.py:601-603, v1.0.0:grpo_trainer.py:742-744,
    v1.9.0:grpo_trainer.py:1091-1093), and from 0.19.0 max_num_batched_tokens 4096 (:data:`BATCHED_TOKENS_FROM`)."""
    rounds = max(1, steps_per_gen) if version_tuple(version) >= (0, 20, 0) else accum
    limits = {"max_num_seqs": per_device * tp * rounds}
    if version_tuple(version) >= BATCHED_TOKENS_FROM:
        limits["max_num_batched_tokens"] = 4096
    return limits
