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
from rlsim.frameworks.detect import Found, Probe
from rlsim.frameworks.trl import emit, launch, mapping, releases


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

    def detect(self, probe: Probe) -> Found | None:
        """``trl grpo``, an ``accelerate launch`` / ``torchrun`` of a GRPO script (open-r1's src/open_r1/grpo.py), or
        a config with options only GRPOConfig has (trl_defaults.yaml: over every release, less the other trainers')."""
        launcher = r"\b(?:accelerate\s+launch|torchrun)\b[^\n]*?"
        script = (launcher + r"\s[\w./-]*grpo\w*\.py\b", launcher + r"\s(?:-m|--module)\s+[\w.]*grpo\w*\b")
        hit = probe.runs(r"\btrl\s+grpo\b", *script)
        if hit:
            return self.found("TRL", hit)
        # a config naming its model by pretrain is OpenRLHF's (which shares vllm_* names); TRL's is model_name_or_path
        mine = probe.data and "pretrain" not in probe.data
        keys = sorted(set(probe.data) & releases.grpo_only_options()) if mine else []
        if keys or not mine:
            return self.found("TRL", f"GRPOConfig keys: {', '.join(keys[:3])}" if keys else None)
        # another TRL trainer's config: its own keys, none of GRPOConfig's
        cls, own = max(releases.other_trainer_options().items(), key=lambda kv: len(set(probe.data) & kv[1]))
        hits = sorted(set(probe.data) & own)
        if not hits:
            return None
        trainer = cls.removesuffix("Config").replace("Reward", "reward-model") + " training"
        return Found("TRL", f"{cls} keys: {', '.join(hits[:4])}", self.name, trainer)

    def read(self, path: Path) -> dict[str, Any]:
        return launch.read(path)

    def table_for(self, flat: dict[str, Any]) -> tuple[Row, ...]:
        return mapping.table_for(flat)

    def to_scenario(self, source: Source) -> tuple[dict[str, Any], list[str]]:
        return mapping.to_scenario(source)

    def emit_keys(self, ctx: EmitContext) -> dict[str, Any]:
        return emit.emit_keys(ctx)


ADAPTER = Trl()
