"""prime-rl (PrimeIntellect-ai/prime-rl) as a framework adapter (:data:`ADAPTER`):
:mod:`~rlsim.frameworks.prime_rl.mapping` reads its TOML configs (``uv run rl @ a.toml @ b.toml --key value``,
composed as prime-rl composes them) into a scenario (its docstring says what was read, at which commit;
``defaults.yaml`` holds the keys' defaults); :mod:`~rlsim.frameworks.prime_rl.emit` writes a planned scenario back
as prime-rl keys, the patch as TOML.

May import: rlsim.frameworks' shared modules (adapter, basic, common, launch, sglang) and the layers below
frameworks.
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.basic import PackageAdapter, toml_text
from rlsim.frameworks.prime_rl import emit, mapping


class PrimeRl(PackageAdapter):
    """prime-rl's ``rl`` entrypoint: TOML files and ``--a.b value`` flags."""

    name = "prime-rl"
    overrides = "flags"
    mapping = mapping
    emitter = emit

    def render_patch(self, patch: dict[str, Any]) -> tuple[str, str]:
        return ".toml", toml_text(patch)


ADAPTER = PrimeRl()
