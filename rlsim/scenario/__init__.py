"""Scenario: everything one simulated RL run needs, as frozen dataclasses loaded from YAML.

Validation happens here and only here: unknown keys, types, ranges and cross-field consistency (the model must
fit the GPUs, one sequence must fit the KV cache of a replica). Every error is a :class:`ScenarioError` naming
the field path, the value, the rule and the fix. Units live in field names (``_tokens``, ``_s``, ``_bytes``).

Sections: ``model``, ``hardware``, ``engine``, ``workload``, ``algorithm``, ``training`` and ``weight_sync``
(``trainer_sections``; their costs are rlsim.trainer's), ``schedule``, ``learning``, ``costs``, ``run``; plus
free-text ``name``, ``description`` and ``assumptions`` (what the scenario assumes that is not measured or
published).
``model`` and ``hardware.gpu`` name a catalog entry (``rlsim/catalog/*.yaml``) or spell the numbers out.

Modules: ``specs`` (ModelSpec, GPUSpec, field bounds), ``sections`` (the other sections), ``schema`` (Scenario and
what it derives), ``rules`` (the engine's scheduler rules), ``build`` (from_dict: keys, types, bounds),
``validation`` (cross-field rules), ``section_rules`` (rules within one section), ``software`` (versions select
documented behaviours), ``overrides`` (the ``key=value`` grammar), ``yamlfile`` (load and dump YAML).
Import from ``rlsim.scenario``; the names below are its public interface. May import: rlsim.catalog, rlsim.engine,
rlsim.io, rlsim.trainer (the memory model says whether a layout fits), rlsim.workload.
"""

from rlsim.engine.scheduler import SchedulerRules
from rlsim.errors import ScenarioError
from rlsim.scenario.build import check_bounds, from_dict
from rlsim.scenario.overrides import apply_overrides, as_overrides, parse_overrides, parse_scalar, split_assignment
from rlsim.scenario.schema import Scenario
from rlsim.scenario.sections import (
    Algorithm,
    BatchMultiplier,
    Costs,
    Drift,
    DynamicSampling,
    Engine,
    Hardware,
    Learning,
    LengthDist,
    LengthPhase,
    MetricCurve,
    Plan,
    Reward,
    Run,
    Schedule,
    Software,
    Sweep,
    Workload,
)
from rlsim.scenario.specs import MAX_OVERHEAD_S, MAX_RATE, MAX_TOKENS, MIN_RATE, GPUSpec, ModelSpec
from rlsim.scenario.trainer_sections import Training, WeightSync
from rlsim.scenario.yamlfile import dump_yaml, load_scenario, read_scenario

__all__ = [
    "MAX_OVERHEAD_S",
    "MAX_RATE",
    "MAX_TOKENS",
    "MIN_RATE",
    "Algorithm",
    "BatchMultiplier",
    "Costs",
    "Drift",
    "DynamicSampling",
    "Engine",
    "GPUSpec",
    "Hardware",
    "LengthDist",
    "LengthPhase",
    "Learning",
    "MetricCurve",
    "ModelSpec",
    "Plan",
    "Reward",
    "Run",
    "Scenario",
    "ScenarioError",
    "Schedule",
    "Software",
    "SchedulerRules",
    "Sweep",
    "Training",
    "WeightSync",
    "Workload",
    "apply_overrides",
    "as_overrides",
    "check_bounds",
    "dump_yaml",
    "from_dict",
    "load_scenario",
    "parse_overrides",
    "parse_scalar",
    "read_scenario",
    "split_assignment",
]
