"""AReaL (inclusionAI/AReaL) as a framework adapter (:data:`ADAPTER`): :mod:`~rlsim.frameworks.areal.mapping`
reads its OmegaConf YAML and the ``key=value`` overrides of its launch line, allocation strings included, into a
scenario (its docstring says what was read, at which commit; ``defaults.yaml`` holds the keys' defaults);
:mod:`~rlsim.frameworks.areal.emit` writes a planned scenario back as AReaL keys.

May import: rlsim.frameworks' shared modules (adapter, basic, common, launch, sglang) and the layers below
frameworks.
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.areal import emit, mapping
from rlsim.frameworks.basic import PackageAdapter, resolve_references


class Areal(PackageAdapter):
    """AReaL's experiments: OmegaConf YAML with Hydra-style ``key=value`` overrides."""

    name = "areal"
    overrides = "hydra"
    mapping = mapping
    emitter = emit

    def resolve(self, flat: dict[str, Any]) -> dict[str, Any]:
        return resolve_references(flat)


ADAPTER = Areal()
