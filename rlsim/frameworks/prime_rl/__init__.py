"""prime-rl (PrimeIntellect-ai/prime-rl) as a framework adapter (:data:`ADAPTER`):
:mod:`~rlsim.frameworks.prime_rl.mapping` reads its TOML configs (``uv run rl @ a.toml @ b.toml --key value``,
composed as prime-rl composes them) into a scenario (its docstring says what was read, at which commit;
``defaults.yaml`` holds the keys' defaults); :mod:`~rlsim.frameworks.prime_rl.emit` writes a planned scenario back
as prime-rl keys, the patch as TOML.

May import: rlsim.frameworks' shared modules (adapter, basic, common, launch, sglang) and the layers below
frameworks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import EmitContext, FrameworkAdapter, Source
from rlsim.frameworks.basic import toml_text
from rlsim.frameworks.prime_rl import emit, mapping


class PrimeRl(FrameworkAdapter):
    """prime-rl's ``rl`` entrypoint: TOML files and ``--a.b value`` flags."""

    name = "prime-rl"
    table = mapping.TABLE
    version_read = mapping.VERSION_READ
    overrides = "flags"
    recognisers = mapping.RECOGNISERS

    def read(self, path: Path) -> dict[str, Any]:
        return mapping.read(path)

    def to_scenario(self, source: Source) -> tuple[dict[str, Any], list[str]]:
        return mapping.to_scenario(source)

    def emit_keys(self, ctx: EmitContext) -> dict[str, Any]:
        return emit.emit_keys(ctx)

    def render_patch(self, patch: dict[str, Any]) -> tuple[str, str]:
        return ".toml", toml_text(patch)


ADAPTER = PrimeRl()
