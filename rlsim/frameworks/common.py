"""What the framework adapters share, by name: reading values of a config (:func:`as_int`, :func:`as_float`,
:func:`divisible`), the rlsim-side facts a framework config lacks (:data:`DEFAULT_GPU`, the length distributions of
:func:`assumed_workload`), a Hugging Face model name in rlsim's catalog (:func:`resolve_model`), a framework release
as a version (:func:`version_tuple`, :func:`version_after`), and the inverse's arithmetic on a planned scenario
(:func:`plan_divisible`, :func:`node_layout`, :func:`planned_lr`, :func:`note_unexpressed`, ...).

Bad input raises :class:`~rlsim.frameworks.adapter.ImportConfigError` (a plan the framework cannot express:
:class:`~rlsim.frameworks.adapter.EmitError`) with one line naming the key(s) and the fix.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlsim import catalog
from rlsim.catalog import VARIANT_SUFFIXES, hf_cache
from rlsim.frameworks import model_match
from rlsim.frameworks.adapter import MISSING, EmitContext, EmitError, ImportConfigError, Source
from rlsim.scenario import software
from rlsim.workload.lengths import lognormal_mean_for_clipped_mean
from rlsim.workload.lr_rules import lr_for_batch
from rlsim.workload.priors import response_prior

if TYPE_CHECKING:
    from rlsim.schema.scenario import Scenario

DEFAULT_GPU = "H100-SXM"  # assumption: neither verl nor TRL configs name the GPU type
PROMPT_FRACTION = 0.5  # assumption: prompts fixed at half the framework's maximum prompt length
RESPONSE_SIGMA = 0.6  # assumption: standard deviation of log response length (as rlsim.frameworks.nemo_rl.recipe)


# ---------------------------------------------------------------------------------------------- values


def short(value: Any) -> str:
    """``value`` as messages and assumptions quote it: JSON (a string as it is), at most 80 characters."""
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= 80 else text[:77] + "..."


def divisible(a_key: str, a: int, b_key: str, b: int) -> int:
    """``a // b``, refusing (naming both keys) when b does not divide a."""
    if b <= 0 or a % b:
        raise ImportConfigError(f"{a_key} ({a}) must be divisible by {b_key} ({b}); change one of them")
    return a // b


def as_int(source: Source, key: str) -> int:
    """``key``'s value as a positive whole number (one line naming the key otherwise)."""
    value = as_float(source, key, "a positive whole number")
    if not value.is_integer() or value < 1:
        raise ImportConfigError(
            f"{source.name(key)}: {value:g} must be a positive whole number; fix it in the file or with --set"
        )
    return int(value)


_EXPONENT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def as_float(source: Source, key: str, what: str = "a number") -> float:
    """``key``'s value as a finite number (one line naming the key otherwise). A plain ``3e-6`` is a string to
    YAML 1.1 (PyYAML) and a float to OmegaConf, whose loader adds an implicit float form without the dot (omegaconf
    2.3 _utils.get_yaml_loader), as verl's and NeMo RL's configs are read: such a string is that float here."""
    value = source.get(key)
    if isinstance(value, str) and _EXPONENT.fullmatch(value.strip()):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ImportConfigError(f"{source.name(key)}: {short(value)} must be {what}; fix it in the file or with --set")
    return float(value)


# ---------------------------------------------------------------------------------------------- models


# the folder of the file being imported (set by rlsim.frameworks.config_import): a model's config.json beside it is read
LAUNCH_DIR: ContextVar[Path | None] = ContextVar("LAUNCH_DIR", default=None)


def resolve_model(name: Any, key: str) -> tuple[str, list[str]]:
    """The catalog name for a Hugging Face model name or path (``Qwen/Qwen3-8B``, ``~/models/Qwen2.5-7B-Instruct``):
    the name, else its last path part, matched against catalog names, aliases and hf_ids (with or without the
    organisation); else the model's own config.json: a local path, a folder beside the launch file, or the local
    Hugging Face cache (rlsim.catalog.hf_cache; never downloaded); else the last part without an Instruct / Chat /
    Base suffix (same architecture as the catalog model, noted); else a vision-language family is refused and a
    fine-tune resolves to the catalog model its name contains (rlsim.frameworks.model_match)."""
    if not isinstance(name, str) or not name:
        raise ImportConfigError(
            f"{key}: not set; name the model, e.g. --set {key}=Qwen/Qwen2.5-7B (one of rlsim/catalog/models.yaml)"
        )
    forms = _model_forms()
    tail = name.rstrip("/").rsplit("/", 1)[-1]
    for cand in (name, tail):
        if cand in forms:
            return forms[cand], []
    local = Path(name).expanduser()
    if (local / "config.json").is_file() or (local.suffix == ".json" and local.is_file()):
        return str(local.resolve()), [f"model: {name} read from its config.json (rlsim.catalog.hf_config)"]
    found = hf_cache.beside(name, LAUNCH_DIR.get())
    where = "beside the launch file"
    if found is None and not local.is_absolute():
        found, where = hf_cache.cached_config(name), f"in the local Hugging Face cache ({hf_cache.cache_root()})"
    if found is not None:
        return str(found.resolve()), [f"model: {name} read from its config.json {where}: {found}"]
    for suffix in VARIANT_SUFFIXES:
        base = tail[: -len(suffix)]
        if tail.endswith(suffix) and base in forms:
            return forms[base], [f"model: {name} simulated as catalog model {forms[base]} (same architecture)"]
    same = catalog.same_architecture()
    known = name if name in same else next((k for k in same if k.rsplit("/", 1)[-1] == tail), None)
    if known is not None:
        entry = same[known]
        note = f"; {entry['note']}" if entry.get("note") else ""
        return entry["as"], [
            f"model: {name} simulated as catalog model {entry['as']} (same architecture: "
            f"rlsim/catalog/same_architecture.yaml gives the source{note})"
        ]
    model_match.refuse_vision_language(name, key, forms)
    base, note = model_match.fine_tune_base(name, key, forms, same)
    if base:
        return base, [note]
    near = catalog.nearest_names(tail, catalog.model_names(aliases=False))
    hint = f"did you mean {' or '.join(near)}? " if near else ""
    raise ImportConfigError(
        f"{key}: {name!r} is not in rlsim's model catalog; {hint}--set {key}=NAME with one of: "
        + ", ".join(sorted(set(forms.values())))
        + f", or --set {key}=PATH with the model's Hugging Face config.json (or a folder holding it)"
    )


@cache
def _model_forms() -> dict[str, str]:
    """Every spelling of a catalog model (name, hf_id, aliases, each also without its organisation) -> its name."""
    forms: dict[str, str] = {}
    for name in catalog.model_names(aliases=False):
        entry = catalog.model(name)
        for form in (name, entry.get("hf_id"), *(entry.get("aliases") or ())):
            if form:
                forms.setdefault(str(form), name)
                forms.setdefault(str(form).rsplit("/", 1)[-1], name)
    return forms


# ---------------------------------------------------------------------------------------------- assumptions


def assumed_workload(prompts: int, group: int, max_prompt: int, max_response: int) -> tuple[dict[str, Any], list[str]]:
    """The scenario's workload section for P prompts of G responses from a config that gives only the length
    maxima (the distributions are :func:`length_assumptions`'), and the assumptions it makes."""
    prompt_length, response_length, notes = length_assumptions(max_prompt, max_response)
    prior = response_prior(max_response)
    workload = {
        "prompts_per_step": prompts,
        "group_size": group,
        "prompt_length": prompt_length,
        "response_length": response_length,
        "max_prompt_tokens": max_prompt,
        "max_response_tokens": max_response,
        "length_source": "assumed",
        "length_note": prior.note,
    }
    return workload, notes


def length_assumptions(max_prompt: int, max_response: int) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Prompt and response length distributions for a config that gives only their maxima, and the assumptions:
    prompts at PROMPT_FRACTION of their maximum, responses lognormal (sigma RESPONSE_SIGMA) whose clipped mean is
    the reasoning prior's at the cap (rlsim.workload.priors)."""
    prompt_tokens = max(1, int(max_prompt * PROMPT_FRACTION))
    prior = response_prior(max_response)
    mean = lognormal_mean_for_clipped_mean(prior.mean_tokens, RESPONSE_SIGMA, max_response)
    prompt = {"dist": "fixed", "tokens": prompt_tokens}
    response = {"dist": "lognormal", "mean_tokens": mean, "sigma": RESPONSE_SIGMA}
    notes = [
        f"prompt lengths: fixed {prompt_tokens} tokens ({PROMPT_FRACTION:g} x the maximum {max_prompt}; the config "
        "gives only the maximum; --scenario-set workload.prompt_length.tokens=N to change)",
        f"response lengths: lognormal, sigma {RESPONSE_SIGMA:g}, mean {prior.mean_tokens:.0f} tokens after clipping "
        f"at {max_response} ({mean:.0f} before): the {prior.note}; the config gives only the maximum; "
        "--scenario-set workload.response_length.mean_tokens=N and workload.length_source=stated to state them",
    ]
    return prompt, response, notes


# ---------------------------------------------------------------------------------------------- versions

_NUMBER = r"(\d+)\.(\d+)(?:\.(\d+))?"  # major.minor[.patch]
_VERSION = re.compile(rf"v?{_NUMBER}(?:\.?(?:dev|rc|a|b|post)\d*|[+-][\w.+-]*)?")


def version_tuple(text: Any) -> tuple[int, int, int] | None:
    """A framework release as (major, minor, patch): ``0.18.0``, ``v0.18``, ``0.19.0rc1``, ``1.9.0.dev0``,
    ``0.18.2+cu128``; None for anything else (``1``, ``0.18foo``). Stricter than rlsim.scenario.software's
    parse_version, which reads the software catalog's versions and takes ``1`` or any suffix."""
    m = _VERSION.fullmatch(str(text).strip())
    return (int(m[1]), int(m[2]), int(m[3] or 0)) if m else None


def release_text(key: str, version: Any, example: str) -> tuple[int, int, int]:
    """The release a config's ``--set KEY=X.Y.Z`` names, as (major, minor, patch); refused naming ``key`` when it
    parsed as a number (``0.10`` reads as 0.1) or is not a version (``example`` shows the form)."""
    if isinstance(version, float):
        raise ImportConfigError(f"{key}: {version!r} reads as a number; write the release as X.Y.Z, e.g. {example}")
    parsed = version_tuple(version)  # stricter than the catalog's parse: 0.x6 is a typo, not 0.0.0
    if parsed is None:
        raise ImportConfigError(f"{key}: {str(version)!r} is not a version; --set {key}=X.Y.Z, e.g. {example}")
    return parsed


def known_release(framework: str, key: str, version: Any, example: str) -> tuple[str, str | None]:
    """The known release of ``framework`` for the ``version`` a config names with the non-framework key ``key``
    (``--set verl_version=0.5.0``): the nearest known one in rlsim/catalog/software.yaml and the one-line warning
    when it is not known itself. A version that does not parse is refused naming ``key`` (``example`` shows the
    form)."""
    release_text(key, version, example)
    found, _, warning = software.nearest("frameworks", framework, str(version), "software.framework_version")
    return found, warning


def release_table(table: tuple[Any, ...], flat: dict[str, Any], key: str, release: Any, defaults: dict) -> tuple:
    """``table`` (mapping Rows) with the defaults of the release the config's ``key`` names (``release(version)``
    gives the known release, ``defaults[release]`` its defaults by key); the same table without one."""
    if flat.get(key) is None:
        return table
    changed = defaults[release(flat[key])[0]]
    return tuple(dataclasses.replace(row, default=changed[row.key]) if row.key in changed else row for row in table)


def version_after(text: str, marker: str) -> str | None:
    """The major.minor[.patch] written right after ``marker`` in ``text`` (``@v`` in
    ``NVIDIA-NeMo/RL@v0.5.0:examples/...`` -> ``0.5.0``), as written; None when there is none."""
    m = re.search(re.escape(marker) + rf"(?P<version>{_NUMBER})", text)
    return m["version"] if m else None


# ---------------------------------------------------------------------------------------------- emit


def optimizer_steps_per_pass(scenario: Scenario) -> int:
    """Optimizer steps per pass over the step's batch (the frameworks' mini-batches)."""
    return scenario.optimizer_steps_per_step // scenario.algorithm.epochs_per_step


def planned_lr(scenario: Scenario) -> float:
    """learning.lr0 scaled by learning.lr_rule from learning.reference_batch to the scenario's responses per step."""
    return lr_for_batch(scenario.learning, scenario.workload.responses_per_step)


def node_layout(ctx: EmitContext, gpus: int, per_node_key: str, framework_default: int) -> tuple[int, int]:
    """(GPUs per node, nodes) for ``gpus``: hardware.gpus_per_node, else the original's, else the framework's
    default; a count below one node is one node of that many GPUs."""
    per_node = ctx.scenario.hardware.gpus_per_node
    if per_node is None:
        cur = ctx.current(per_node_key)
        per_node = int(cur) if cur is not MISSING and cur else framework_default
    if gpus <= per_node:
        return gpus, 1
    if gpus % per_node:
        raise EmitError(
            f"{gpus} GPUs are not a whole number of {per_node}-GPU nodes ({per_node_key}); set "
            "hardware.gpus_per_node to a divisor"
        )
    return per_node, gpus // per_node


def plan_divisible(a_field: str, a: int, b_what: str, b: int, framework: str) -> int:
    """``a // b``, refusing (naming the plan's field and the framework's rule) when b does not divide a."""
    if b <= 0 or a % b:
        raise EmitError(f"{a_field} ({a}) must be divisible by {b_what} ({b}) for {framework}; change the plan")
    return a // b


def packing_token_budget(scenario: Scenario) -> int:
    """Tokens per GPU per micro-step with sequence packing: the bin (training.packing_tokens, else the longest
    sequence) times training.micro_batch_size."""
    tr = scenario.training
    tokens = tr.packing_tokens or (scenario.workload.max_prompt_tokens + scenario.workload.max_response_tokens)
    return tokens * tr.micro_batch_size


def note_unexpressed(ctx: EmitContext, framework: str, *, asynchronous: bool, max_num_seqs: bool, pp: bool) -> None:
    """Adds to ``ctx.notes`` the planned knobs ``framework`` has no key for: an async schedule (unless
    ``asynchronous``), engine.max_num_seqs (unless ``max_num_seqs``), pipeline parallelism (unless ``pp``), changed
    length caps, dynamic sampling (NeMo RL's aside) and a reward model."""
    s = ctx.scenario
    if not asynchronous and s.schedule.mode == "async":
        ctx.notes.append(
            f"schedule.mode async (max_staleness {s.schedule.max_staleness}): {framework} has no async schedule here"
        )
    if s.schedule.mode == "fully-async":  # no emitter writes verl's fully_async_main keys (async_training.*)
        sched = s.schedule
        ctx.notes.append(
            f"schedule.mode fully-async (sync_every {sched.sync_every}, staleness_threshold "
            f"{sched.staleness_threshold:g}, partial_rollout {str(sched.partial_rollout).lower()}): not written as "
            f"{framework} keys; verl runs it with fully_async_main and its async_training.* keys"
        )
    if not max_num_seqs and ctx.changed(lambda x: x.engine.max_num_seqs, 256):
        ctx.notes.append(f"engine.max_num_seqs {s.engine.max_num_seqs}: {framework} has no key for it")
    if not pp and s.training.pipeline_parallel_size > 1:
        ctx.notes.append(f"training.pipeline_parallel_size {s.training.pipeline_parallel_size}: {framework} has none")
    if ctx.changed(lambda x: (x.workload.max_prompt_tokens, x.workload.max_response_tokens), MISSING) and (
        ctx.base is not None
    ):
        ctx.notes.append("workload.max_prompt_tokens / max_response_tokens: length caps are not emitted")
    ds = s.algorithm.dynamic_sampling
    if ds is not None and framework != "NeMo RL":
        ctx.notes.append(f"algorithm.dynamic_sampling (keep rate {ds.keep_rate:g}): not emitted for {framework}")
    if s.reward.model is not None:
        where = f"{s.reward.num_gpus} GPUs of its own" if s.reward.num_gpus else "the training GPUs"
        ctx.notes.append(f"reward.model {s.reward.model.name} on {where}: not emitted (set the framework's reward)")
