"""slime (THUDM/slime; its derivatives vime and miles launch the same way) as a framework adapter
(:data:`ADAPTER`): :mod:`~rlsim.frameworks.slime.mapping` reads a launch script running ``train.py`` or
``train_async.py`` into a scenario (its docstring says what was read, at which commit; ``defaults.yaml`` holds the
flags' defaults), :mod:`~rlsim.frameworks.slime.emit` writes a planned scenario back as slime flags.

May import: rlsim.frameworks' shared modules (adapter, basic, common, launch, sglang) and the layers below
frameworks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import EmitContext, FrameworkAdapter, Source
from rlsim.frameworks.slime import emit, mapping


class Slime(FrameworkAdapter):
    """slime's ``train.py`` / ``train_async.py``: argparse ``--flag value`` words whose booleans are store_true
    flags."""

    name = "slime"
    table = mapping.TABLE
    version_read = mapping.VERSION_READ
    overrides = "flags"
    switch_flags = True
    recognisers = mapping.RECOGNISERS

    def read(self, path: Path) -> dict[str, Any]:
        return mapping.read(path)

    def to_scenario(self, source: Source) -> tuple[dict[str, Any], list[str]]:
        return mapping.to_scenario(source)

    def emit_keys(self, ctx: EmitContext) -> dict[str, Any]:
        return emit.emit_keys(ctx)


ADAPTER = Slime()
