"""ROLL (alibaba/ROLL) as a framework adapter (:data:`ADAPTER`): :mod:`~rlsim.frameworks.roll.mapping` reads an
RLVR pipeline's Hydra YAML, its per-role device mappings parsed and never evaluated, into a scenario (its docstring
says what was read, at which commit; ``defaults.yaml`` holds the keys' defaults); :mod:`~rlsim.frameworks.roll.emit`
writes a planned scenario back as ROLL keys.

May import: rlsim.frameworks' shared modules (adapter, basic, common, launch, sglang) and the layers below
frameworks.
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.basic import PackageAdapter, resolve_references
from rlsim.frameworks.roll import emit, mapping


class Roll(PackageAdapter):
    """ROLL's RLVR pipeline: Hydra YAML, ``key=value`` overrides."""

    name = "roll"
    overrides = "hydra"
    mapping = mapping
    emitter = emit

    def resolve(self, flat: dict[str, Any]) -> dict[str, Any]:
        return resolve_references(flat)


ADAPTER = Roll()
