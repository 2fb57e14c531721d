"""ROLL (alibaba/ROLL) as a framework adapter (:data:`ADAPTER`): :mod:`~rlsim.frameworks.roll.mapping` reads an
RLVR pipeline's Hydra YAML, its per-role device mappings parsed and never evaluated, into a scenario (its docstring
says what was read, at which commit; ``defaults.yaml`` holds the keys' defaults); :mod:`~rlsim.frameworks.roll.emit`
writes a planned scenario back as ROLL keys.

May import: rlsim.frameworks' shared modules (adapter, basic, common, launch, sglang) and the layers below
frameworks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import EmitContext, FrameworkAdapter, Source
from rlsim.frameworks.basic import resolve_references
from rlsim.frameworks.roll import emit, mapping


class Roll(FrameworkAdapter):
    """ROLL's RLVR pipeline: Hydra YAML, ``key=value`` overrides."""

    name = "roll"
    table = mapping.TABLE
    version_read = mapping.VERSION_READ
    overrides = "hydra"
    recognisers = mapping.RECOGNISERS

    def read(self, path: Path) -> dict[str, Any]:
        return mapping.read(path)

    def resolve(self, flat: dict[str, Any]) -> dict[str, Any]:
        return resolve_references(flat)

    def to_scenario(self, source: Source) -> tuple[dict[str, Any], list[str]]:
        return mapping.to_scenario(source)

    def emit_keys(self, ctx: EmitContext) -> dict[str, Any]:
        return emit.emit_keys(ctx)


ADAPTER = Roll()
