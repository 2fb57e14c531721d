"""verl (volcengine/verl) as a framework adapter (:data:`ADAPTER`): :mod:`~rlsim.frameworks.verl.mapping` reads a
Hydra config or the launch script running ``verl.trainer.main_ppo`` into a scenario (its docstring says what was
read, at which commit), :mod:`~rlsim.frameworks.verl.fully_async` one running the fully-async trainer
(``fully_async_main``), :mod:`~rlsim.frameworks.verl.emit` writes a planned scenario back as verl keys.

May import: rlsim.frameworks' shared modules (adapter, common, launch, sglang) and the layers below frameworks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlsim.frameworks import detect
from rlsim.frameworks.adapter import EmitContext, FrameworkAdapter, Row, Source
from rlsim.frameworks.verl import emit, estimators, fully_async, mapping, releases


class Verl(FrameworkAdapter):
    """verl's PPO/GRPO trainer: Hydra ``key=value`` overrides; its metrics logs read by rlsim.frameworks.logs.verl."""

    name = "verl"
    table = mapping.TABLE + estimators.TABLE + estimators.FILTER_TABLE + fully_async.TABLE + releases.ROWS
    version_read = mapping.VERSION_READ
    overrides = "hydra"
    log_importer = "rlsim.frameworks.logs.verl"

    def detect(self, probe: detect.Probe) -> detect.Found | None:
        """verl's trainers (``verl.trainer.main_ppo``, ``fully_async_main``) or a config under ``actor_rollout_ref``
        (verl/trainer/config/ppo_trainer.yaml's section of the actor, rollout and reference)."""
        hit = probe.runs(r"\bverl\.trainer\.main_ppo\b", r"\bfully_async_policy\.fully_async_main\b")
        return self.found("verl", hit or ("actor_rollout_ref keys" if probe.has("actor_rollout_ref") else None))

    def read(self, path: Path) -> dict[str, Any]:
        return fully_async.read(path)

    def to_scenario(self, source: Source) -> tuple[dict[str, Any], list[str]]:
        return fully_async.to_scenario(source) if fully_async.runs(source) else mapping.to_scenario(source)

    def table_for(self, flat: dict[str, Any]) -> tuple[Row, ...]:
        return releases.table_for(self.table, flat)  # the defaults of the release verl_version names

    def emit_keys(self, ctx: EmitContext) -> dict[str, Any]:
        return emit.emit_keys(ctx)


ADAPTER = Verl()
