"""SkyRL (NovaSky-AI/SkyRL, skyrl-train) as a framework adapter (:data:`ADAPTER`):
:mod:`~rlsim.frameworks.skyrl.mapping` reads a launch script running ``skyrl_train.entrypoints.main_base`` (or the
async and fully-async example trainers) with Hydra ``key=value`` overrides, or a YAML of them, into a scenario (its
docstring says what was read, at which commit; ``defaults.yaml`` holds the keys' defaults);
:mod:`~rlsim.frameworks.skyrl.emit` writes a planned scenario back as SkyRL keys.

May import: rlsim.frameworks' shared modules (adapter, basic, common, launch, sglang) and the layers below
frameworks.
"""

from __future__ import annotations

from rlsim.frameworks.basic import PackageAdapter
from rlsim.frameworks.skyrl import emit, mapping


class SkyRl(PackageAdapter):
    """SkyRL's trainer: Hydra ``key=value`` overrides over ppo_base_config.yaml."""

    name = "skyrl"
    overrides = "hydra"
    mapping = mapping
    emitter = emit


ADAPTER = SkyRl()
