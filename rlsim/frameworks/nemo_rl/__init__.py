"""NeMo RL (NVIDIA-NeMo/RL) as a framework adapter (:data:`ADAPTER`): :mod:`~rlsim.frameworks.nemo_rl.recipe` maps a
GRPO recipe's fields to a scenario (the one mapping behind ``rlsim-calibrate published`` and the import; its
docstring says what NeMo RL does behind each field), :mod:`~rlsim.frameworks.nemo_rl.recipe_yaml` reads a recipe YAML
as NeMo RL does, :mod:`~rlsim.frameworks.nemo_rl.mapping` turns its keys into those fields, and
:mod:`~rlsim.frameworks.nemo_rl.emit` writes a planned scenario back as recipe keys.

May import: rlsim.frameworks' shared modules (adapter, common, launch, sglang) and the layers below frameworks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import EmitContext, FrameworkAdapter, ImportConfigError, Source
from rlsim.frameworks.detect import Found, Probe
from rlsim.frameworks.nemo_rl import emit, mapping, recipe_yaml


class NemoRl(FrameworkAdapter):
    """NeMo RL's GRPO: Hydra ``key=value`` overrides (``++key=value`` for a key the recipe lacks: its configs are
    structs), recipes with ``defaults:`` chains and interpolations; its metrics logs read by
    rlsim.frameworks.logs.nemo_rl."""

    name = "nemo-rl"
    table = mapping.TABLE
    version_read = mapping.VERSION_READ
    overrides = "hydra"
    log_importer = "rlsim.frameworks.logs.nemo_rl"
    new_key_prefix = "++"

    def detect(self, probe: Probe) -> Found | None:
        """``examples/run_grpo*.py``, or a recipe with a ``grpo`` (or ``ppo``) section beside ``policy`` or ``cluster``
        (examples/configs/grpo_math_1B.yaml), itself or through its ``defaults:`` chain."""
        if hit := probe.runs(r"\brun_\w*grpo\w*\.py\b"):
            return self.found("NeMo RL", hit)
        algo = probe.has("grpo", "ppo")  # ppo: examples/configs/ppo_math_1B.yaml (NVIDIA-NeMo/RL@81aa43d)
        if algo and probe.has("policy", "cluster"):
            return self.found("NeMo RL", f"{algo[0]}, " + probe.has("policy", "cluster")[0] + " sections")
        if "defaults" in probe.data and probe.has("grpo", "policy", "cluster", "loss_fn"):
            try:
                merged = recipe_yaml.read(probe.path)
            except ImportConfigError:  # a broken chain: read it as NeMo RL's, whose reader names what is wrong
                return self.found("NeMo RL", f"{', '.join(probe.has('grpo', 'policy', 'cluster'))} with defaults:")
            if "grpo" in merged and ("policy" in merged or "cluster" in merged):
                return self.found("NeMo RL", "grpo, policy sections through its defaults chain")
        return None

    def read(self, path: Path) -> dict[str, Any]:
        if path.suffix not in (".yaml", ".yml", ".json") and path.is_file():
            raise ImportConfigError(
                f"{path.name}: rlsim reads NeMo RL's recipe YAML, not its launch script; give the recipe the script's "
                "--config names (its key=value overrides as --set)"
            )
        return recipe_yaml.read(path)

    def resolve(self, flat: dict[str, Any]) -> dict[str, Any]:
        return recipe_yaml.resolve(flat)

    def to_scenario(self, source: Source) -> tuple[dict[str, Any], list[str]]:
        return mapping.to_scenario(source)

    def emit_keys(self, ctx: EmitContext) -> dict[str, Any]:
        return emit.emit_keys(ctx)


ADAPTER = NemoRl()
