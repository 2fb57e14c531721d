"""TRL (huggingface/trl) as a framework adapter (:data:`ADAPTER`): :mod:`~rlsim.frameworks.trl.mapping` reads a
GRPOConfig into a scenario (its docstring says what was read, at which commit), :mod:`~rlsim.frameworks.trl.launch`
the ``accelerate launch`` script that runs it, :mod:`~rlsim.frameworks.trl.releases` the defaults of each TRL
release, and :mod:`~rlsim.frameworks.trl.emit` writes a planned scenario back as GRPOConfig keys and launch flags.

May import: rlsim.frameworks' shared modules (adapter, common, launch, sglang) and the layers below frameworks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import EmitContext, FrameworkAdapter, Row, Source
from rlsim.frameworks.trl import emit, launch, mapping


class Trl(FrameworkAdapter):
    """TRL's GRPOTrainer: argparse ``--key value`` overrides, the defaults of the release ``trl_version`` names,
    launch facts on the ``accelerate launch`` / ``trl vllm-serve`` command lines; its metrics logs read by
    rlsim.frameworks.logs.trl."""

    name = "trl"
    table = mapping.TABLE
    version_read = mapping.VERSION_READ
    overrides = "flags"
    log_importer = "rlsim.frameworks.logs.trl"
    launch_flags = mapping.LAUNCH_FLAGS

    def read(self, path: Path) -> dict[str, Any]:
        return launch.read(path)

    def table_for(self, flat: dict[str, Any]) -> tuple[Row, ...]:
        return mapping.table_for(flat)

    def to_scenario(self, source: Source) -> tuple[dict[str, Any], list[str]]:
        return mapping.to_scenario(source)

    def emit_keys(self, ctx: EmitContext) -> dict[str, Any]:
        return emit.emit_keys(ctx)


ADAPTER = Trl()
