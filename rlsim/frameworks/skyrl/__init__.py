"""SkyRL (NovaSky-AI/SkyRL, skyrl-train) as a framework adapter (:data:`ADAPTER`):
:mod:`~rlsim.frameworks.skyrl.mapping` reads a launch script running ``skyrl_train.entrypoints.main_base`` (or the
async and fully-async example trainers) with Hydra ``key=value`` overrides, or a YAML of them, into a scenario (its
docstring says what was read, at which commit; ``defaults.yaml`` holds the keys' defaults);
:mod:`~rlsim.frameworks.skyrl.emit` writes a planned scenario back as SkyRL keys.

May import: rlsim.frameworks' shared modules (adapter, basic, common, launch, sglang) and the layers below
frameworks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import EmitContext, FrameworkAdapter, Source
from rlsim.frameworks.skyrl import emit, mapping


class SkyRl(FrameworkAdapter):
    """SkyRL's trainer: Hydra ``key=value`` overrides over ppo_base_config.yaml."""

    name = "skyrl"
    table = mapping.TABLE
    version_read = mapping.VERSION_READ
    overrides = "hydra"
    recognisers = mapping.RECOGNISERS

    def read(self, path: Path) -> dict[str, Any]:
        return mapping.read(path)

    def to_scenario(self, source: Source) -> tuple[dict[str, Any], list[str]]:
        return mapping.to_scenario(source)

    def emit_keys(self, ctx: EmitContext) -> dict[str, Any]:
        return emit.emit_keys(ctx)


ADAPTER = SkyRl()
