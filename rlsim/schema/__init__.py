"""Schema: a scenario as pure data, the bottom layer of rlsim.

Owns the scenario's sections and :class:`Scenario` as frozen dataclasses, the field bounds (metadata that
rlsim.scenario.build enforces), and what derives from the fields alone (replicas, KV-cache capacity, the digest).
Units live in field names (``_tokens``, ``_s``, ``_bytes``). Modules: ``specs`` (ModelSpec, GPUSpec, bounds),
``sections`` (every other section), ``scenario`` (Scenario, its plain form and digest).

Loading, validation, overrides and what needs the catalogs (scheduler rules, software behaviours, memory checks)
are rlsim.scenario's, above the layers it uses.

May import: nothing of rlsim.
"""

from rlsim.schema.family import CurveFamily, FamilyTable
from rlsim.schema.scenario import Scenario, to_plain
from rlsim.schema.sections import (
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
    LrRule,
    MetricCurve,
    Plan,
    Reward,
    Run,
    Schedule,
    Software,
    Sweep,
    Training,
    WeightSync,
    Workload,
)
from rlsim.schema.specs import MAX_OVERHEAD_S, MAX_RATE, MAX_TOKENS, MIN_RATE, GPUSpec, ModelSpec

__all__ = [
    "MAX_OVERHEAD_S",
    "MAX_RATE",
    "MAX_TOKENS",
    "MIN_RATE",
    "Algorithm",
    "BatchMultiplier",
    "Costs",
    "CurveFamily",
    "Drift",
    "DynamicSampling",
    "Engine",
    "FamilyTable",
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
    "Schedule",
    "Software",
    "Sweep",
    "Training",
    "WeightSync",
    "Workload",
    "to_plain",
]
