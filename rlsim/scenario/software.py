"""Software versions as an input: the scenario's ``software`` section names the RL framework and the inference
engine with their versions, and each version selects documented behaviours (``rlsim/catalog/software.yaml``, each
with its source at the tag): a framework release pins an engine release, an engine release names its behaviour in
``rlsim/catalog/engines.yaml`` (CPU loop, scheduler defaults: block size, chunked prefill, prefix caching, token
budget) and its batch limits by usage context (:func:`batch_defaults`: ``vllm serve`` or ``vllm.LLM``, a big GPU or
not), which the published-benchmark mapping applies; a scenario's own ``engine.max_num_seqs`` is what it says.

An unknown version takes the nearest known one, the latest known at or below it (else the earliest known), with a
one-line warning (:func:`warnings`, printed by ``rlsim run``); one newer than every known release takes the latest
known release's behaviours and its warning says so. What the scenario sets itself wins: an explicit
``engine.behaviour`` stays (:func:`behaviour`). Nothing is written into the scenario, so an override of
``software.*`` (a sweep over versions) takes effect like any other field.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import yaml

from rlsim import catalog
from rlsim.catalog import LOADER
from rlsim.errors import ScenarioError

if TYPE_CHECKING:
    from rlsim.schema.scenario import Scenario


@cache
def table() -> dict[str, Any]:
    return yaml.load(resources.files("rlsim.catalog").joinpath("software.yaml").read_text(), Loader=LOADER)


def parse_version(text: str, path: str) -> tuple[int, int, int]:
    """``"0.11.2"``, ``"v0.5"`` or ``"0.17.1rc1"`` -> (0, 11, 2) / (0, 5, 0) / (0, 17, 1)."""
    version = _version(str(text))
    if version is None:
        raise ScenarioError(path, text, "is not a version", "write it as X.Y.Z, e.g. 0.11.2")
    return version


@lru_cache(maxsize=1024)
def _version(text: str) -> tuple[int, int, int] | None:
    """Cached: every scenario a plan builds sorts the catalog's releases by version (20,710 parses in a
    1,090-configuration plan)."""
    m = re.fullmatch(r"\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?\S*\s*", text)
    if m is None:
        return None
    major, minor, patch = (int(x) for x in m.groups(default="0"))
    return major, minor, patch


def nearest(kind: str, name: str, version: str, path: str) -> tuple[str, dict[str, Any], str | None]:
    """The known release of ``name`` (an engine or a framework) for ``version``: (release, entry, warning or None)."""
    known = table()[kind].get(name)
    if known is None:
        raise ScenarioError(
            path.rsplit("_", 1)[0],
            name,
            "has no versions in the software catalog",
            f"use one of: {', '.join(table()[kind])}",
        )
    want = parse_version(version, path)
    releases = sorted(known, key=lambda r: parse_version(r, path))
    at_or_below = [r for r in releases if parse_version(r, path) <= want]
    pick = at_or_below[-1] if at_or_below else releases[0]
    warning = None
    known_text = f"({', '.join(releases)} known; rlsim/catalog/software.yaml)"
    if want > parse_version(releases[-1], path):
        warning = (
            f"{name} {version} is newer than rlsim's software catalog knows: using the latest known release's "
            f"behaviours, {pick}'s; what changed since is not modelled {known_text}"
        )
    elif parse_version(pick, path) != want:
        warning = (
            f"{name} {version} is not in rlsim's software catalog: using {pick}'s behaviours, the nearest known "
            + known_text
        )
    return pick, dict(known[pick]), warning


def resolve(scenario: Scenario) -> tuple[str | None, list[str]]:
    """What the software section selects: (the engine release's named behaviour, or None without a release; the
    warnings of releases taken as their nearest known one)."""
    sw = scenario.software
    warns: list[str] = []
    engine_version = sw.engine_version
    framework: dict[str, Any] = {}
    if sw.framework is not None:
        if sw.framework_version is None:
            raise ScenarioError(
                "software.framework_version",
                None,
                f"is required with framework {sw.framework}",
                "give the release, e.g. 0.5.0",
            )
        release, framework, warning = nearest(
            "frameworks", sw.framework, sw.framework_version, "software.framework_version"
        )
        warns += [warning] if warning else []
        # the engine the release runs, and others it pins for another rollout backend (verl's sglang extra)
        pins = {framework.get("engine"): framework.get("engine_version"), **(framework.get("other_engines") or {})}
        if sw.engine not in pins:
            raise ScenarioError(
                "software.engine",
                sw.engine,
                f"is not what {sw.framework} {release} runs ({', '.join(map(str, pins))})",
                f"set software.engine: {framework.get('engine')}",
            )
        engine_version = engine_version or pins[sw.engine]
    if engine_version is None:
        return None, warns
    _, entry, warning = nearest("engines", sw.engine, engine_version, "software.engine_version")
    warns += [warning] if warning else []
    overlap = entry.get("async_scheduling")  # the release's overlapped loop, on the executors that allow it
    if overlap is not None and executor(scenario, framework) in overlap["executors"]:
        return overlap["behaviour"], warns
    return entry["behaviour"], warns


def executor(scenario: Scenario, framework: dict[str, Any]) -> str:
    """The engine's executor (vLLM's ``distributed_executor_backend``): the framework release's rule
    (``vllm_executor``: one for a single-GPU engine, one for more), else vLLM's own default: ``uni`` for one GPU,
    ``mp`` within a node, ``ray`` across nodes (vllm/config/parallel.py)."""
    gpus = scenario.engine.tensor_parallel_size
    rule = framework.get("vllm_executor")
    if rule is not None:
        return rule["single_gpu" if gpus == 1 else "multi_gpu"]
    if gpus == 1:
        return "uni"
    return "mp" if gpus <= scenario.hardware.node_gpus else "ray"


def framework_behaviours(scenario: Scenario) -> dict[str, Any]:
    """What the framework release does that moves step time (its ``behaviours`` in software.yaml, each with its
    source at the tag; the nearest known release's); {} without a framework."""
    sw = scenario.software
    if sw.framework is None or sw.framework_version is None:
        return {}
    return release_behaviours(sw.framework, sw.framework_version)


def release_behaviours(framework: str, version: str | None) -> dict[str, Any]:
    """The ``behaviours`` of ``framework``'s release ``version`` in software.yaml (the nearest known release's;
    None: the latest known's), for an importer that must decide a scenario field the release decides."""
    path = "software.framework_version"
    if version is None:
        version = max(table()["frameworks"][framework], key=lambda r: parse_version(r, path))
    return dict(nearest("frameworks", framework, version, path)[1].get("behaviours") or {})


def behaviour(scenario: Scenario) -> str | None:
    """The named engine behaviour in force: the scenario's ``engine.behaviour``, else what its software selects;
    with ``engine.enforce_eager`` that behaviour's eager variant (:func:`eager_variant`)."""
    if scenario.engine.behaviour is not None or (
        scenario.software.framework is None and scenario.software.engine_version is None
    ):
        return eager_variant(scenario, scenario.engine.behaviour)
    return eager_variant(scenario, resolve(scenario)[0])


def eager_variant(scenario: Scenario, name: str | None) -> str | None:
    """``name`` itself, or with ``engine.enforce_eager`` the behaviour its ``eager`` key names (engines.yaml: the
    same release decoding without CUDA graphs; an eager behaviour names itself). A ScenarioError where there is
    no behaviour or it has no eager variant."""
    if not scenario.engine.enforce_eager:
        return name
    if name is None:
        raise ScenarioError(
            "engine.enforce_eager",
            True,
            "needs a named engine behaviour to make eager",
            "set engine.behaviour: vllm-v1-eager, or software.engine / engine_version",
        )
    variant = catalog.engine(name).get("eager")
    if variant is None:
        raise ScenarioError(
            "engine.enforce_eager",
            True,
            f"has no eager variant of engine behaviour {name} (rlsim/catalog/engines.yaml `eager`)",
            "remove engine.enforce_eager, or set engine.behaviour: vllm-v1-eager",
        )
    return str(variant)


def warnings(scenario: Scenario) -> list[str]:
    """The one-line warnings of the scenario's software resolution (unknown versions)."""
    if scenario.software.framework is None and scenario.software.engine_version is None:
        return []
    return resolve(scenario)[1]


V1_REFERENCE_RELEASE = "0.11.2"  # the vLLM V1 release whose defaults apply where a scenario names none


def big_gpu(gpu: str, memory_bytes: float | None = None) -> bool:
    """Whether vLLM gives ``gpu`` its larger batch defaults: >= 70 GiB and not an A100 (vllm/engine/arg_utils.py
    get_batch_defaults; the A100 is excluded by name, PR #17885). ``memory_bytes`` (what the driver reports)
    defaults to the catalog entry's."""
    if memory_bytes is None:
        spec = catalog.gpu(gpu)
        memory_bytes = spec.get("device_memory_bytes") or spec["memory_bytes"]
    return memory_bytes >= 70 * 2**30 and "a100" not in gpu.lower()


def batch_defaults(engine_version: str, context: str, gpu: str, memory_bytes: float | None = None) -> dict[str, int]:
    """``max_num_seqs`` and ``max_num_batched_tokens`` (when the release records it) an engine release starts with
    in a usage context (``openai_api_server`` for ``vllm serve``, ``llm_class`` for ``vllm.LLM``) on ``gpu``
    (:func:`big_gpu`): the nearest known release's (:func:`nearest`)."""
    _, entry, _ = nearest("engines", "vllm", engine_version, "software.engine_version")
    limits = entry.get("batch_defaults")
    if limits is None:
        return {"max_num_seqs": int(entry.get("max_num_seqs", 256))}
    size = "big" if big_gpu(gpu, memory_bytes) else "other"
    return {k: int(v) for k, v in limits[context][size].items()}


def pinned_engine_version(framework: str, version: str | None) -> str:
    """The engine release a framework release pins (its nearest known release's); no release: the reference V1."""
    if version is None:
        return V1_REFERENCE_RELEASE
    return nearest("frameworks", framework, version, "software.framework_version")[1]["engine_version"]
