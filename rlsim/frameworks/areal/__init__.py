"""AReaL (inclusionAI/AReaL) as a framework adapter (:data:`ADAPTER`): :mod:`~rlsim.frameworks.areal.mapping`
reads its OmegaConf YAML and the ``key=value`` overrides of its launch line, allocation strings included, into a
scenario (its docstring says what was read, at which commit; ``defaults.yaml`` holds the keys' defaults);
:mod:`~rlsim.frameworks.areal.emit` writes a planned scenario back as AReaL keys.

May import: rlsim.frameworks' shared modules (adapter, basic, common, launch, sglang) and the layers below
frameworks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import EmitContext, FrameworkAdapter, Source
from rlsim.frameworks.areal import emit, mapping
from rlsim.frameworks.basic import resolve_references


class Areal(FrameworkAdapter):
    """AReaL's experiments: OmegaConf YAML with Hydra-style ``key=value`` overrides."""

    name = "areal"
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


ADAPTER = Areal()
