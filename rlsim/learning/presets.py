"""Learning presets: named, sourced learning models that an answer can be re-ranked under.

A preset says how one knob (the batch B = P x G, responses per prompt G at a fixed B, the learning-rate rule, the
staleness of an asynchronous run) moves the metric curve, with the values a published study measured. It is
anchored at the scenario's own curve: at the scenario's reference batch (and G, LR, staleness 0) the preset
leaves samples-to-target as the scenario has it, and replaces only how the knob moves the curve. ``decide``,
``sweep`` and ``plan`` rank under every preset that applies (:func:`applicable`) to show how much an answer rests
on the learning side.

This module holds the registry and its interface; each preset's values and source are in its entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from rlsim.errors import ScenarioError
from rlsim.schema import Scenario

Knob = Literal["batch", "group", "lr", "staleness"]


@dataclass(frozen=True)
class LearningPreset:
    """One named learning model: what it moves, where its values come from, and how it applies to a scenario."""

    name: str
    knob: Knob
    source: str  # the study and the table or figure the values come from
    summary: str  # one line: what the preset says
    # learning.* overrides (dotted keys, as ``--set`` takes them) anchored at the scenario's own curve
    build: Callable[[Scenario], dict[str, Any]]
    # whether the preset says anything about this scenario (a staleness preset only for an asynchronous run)
    applies: Callable[[Scenario], bool]
    seed_assumption: bool = False  # the seed paper's assumption (the default learning model's family member)


def _seed_batch(scenario: Scenario) -> dict[str, Any]:
    """The seed paper's invariance, as the scenario's learning section already states it: no overrides."""
    return {}


REGISTRY: dict[str, LearningPreset] = {
    "seed": LearningPreset(
        name="seed",
        knob="batch",
        source="arXiv 2608.29296 (the seed paper): curves in samples coincide over a bounded batch range with the "
        "LR retuned (sqrt for Adam)",
        summary="the scenario's own learning model (the seed paper's invariance where it is the default)",
        build=_seed_batch,
        applies=lambda scenario: scenario.learning.metric is not None and scenario.learning.target is not None,
        seed_assumption=True,
    ),
}


def applicable(scenario: Scenario) -> list[LearningPreset]:
    """The presets that say something about ``scenario``, in registry order."""
    return [p for p in REGISTRY.values() if p.applies(scenario)]


def preset_overrides(scenario: Scenario, name: str) -> dict[str, Any]:
    """The learning.* overrides that put ``scenario`` under the named preset."""
    if name not in REGISTRY:
        raise ScenarioError("learning preset", name, "is not a learning preset", f"use one of: {', '.join(REGISTRY)}")
    return REGISTRY[name].build(scenario)
