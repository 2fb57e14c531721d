"""Scenario: loading, checking and resolving a scenario, the schema's data made a run's input.

The sections and :class:`Scenario` are pure data in rlsim.schema (re-exported here, the public interface). This
package reads them from YAML and plain dicts with strict validation: unknown keys, types, ranges and cross-field
consistency (the model must fit the GPUs, one sequence must fit the KV cache of a replica). Every error is a
:class:`ScenarioError` naming the field path, the value, the rule and the fix. It also resolves what needs the
catalogs: the engine's scheduler rules and the software release's behaviours.

Sections: ``model``, ``hardware``, ``engine``, ``workload``, ``algorithm``, ``reward``, ``software``, ``training``,
``weight_sync``, ``schedule``, ``learning``, ``costs``, ``run``, ``sweep``, ``plan``; plus free-text ``name``,
``description`` and ``assumptions`` (what the scenario assumes that is not measured or published).
``model`` and ``hardware.gpu`` name a catalog entry (``rlsim/catalog/*.yaml``) or spell the numbers out.

Modules: ``build`` (from_dict, with_overrides: keys, types, bounds), ``validation`` (cross-field rules),
``section_rules`` (rules within one section), ``rules`` (the engine's scheduler rules), ``software`` (versions select
documented behaviours), ``overrides`` (the ``key=value`` grammar), ``yamlfile`` (load and dump YAML).
Import from ``rlsim.scenario``; the names below are its public interface.

May import: rlsim.schema, rlsim.catalog, rlsim.engine, rlsim.io, rlsim.trainer (the memory model says whether a
layout fits), rlsim.workload, rlsim.errors, rlsim.phases.
"""

from rlsim.engine.scheduler import SchedulerRules
from rlsim.errors import ScenarioError
from rlsim.scenario.build import check_bounds, from_dict, with_overrides
from rlsim.scenario.overrides import apply_overrides, as_overrides, parse_overrides, parse_scalar, split_assignment
from rlsim.scenario.rules import scheduler_rules
from rlsim.scenario.software import behaviour as engine_behaviour
from rlsim.scenario.yamlfile import dump_yaml, load_scenario, read_scenario
from rlsim.schema import (
    MAX_OVERHEAD_S,
    MAX_RATE,
    MAX_TOKENS,
    MIN_RATE,
    Algorithm,
    BatchMultiplier,
    Costs,
    Drift,
    DynamicSampling,
    Engine,
    GPUSpec,
    Hardware,
    Learning,
    LengthDist,
    LengthPhase,
    LrRule,
    MetricCurve,
    ModelSpec,
    Plan,
    Reward,
    Run,
    Scenario,
    Schedule,
    Software,
    Sweep,
    Training,
    WeightSync,
    Workload,
)

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
    "LrRule",
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
    "engine_behaviour",
    "from_dict",
    "load_scenario",
    "parse_overrides",
    "parse_scalar",
    "read_scenario",
    "scheduler_rules",
    "split_assignment",
    "with_overrides",
]
