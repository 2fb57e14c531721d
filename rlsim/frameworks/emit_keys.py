"""What each framework's config says for a scenario: one function per framework (``EMITTERS``) from the
scenario (and the original config, through ``_Ctx``) to the framework's keys, with notes on what it cannot say.
Split from :mod:`rlsim.frameworks.emit`, which diffs these against the original and writes the overrides."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rlsim.errors import RlsimError
from rlsim.schema.scenario import Scenario
from rlsim.workload.lr_rules import lr_for_batch

_MISSING = object()


class EmitError(RlsimError, ValueError):
    """A planned scenario the framework's batch rules cannot express (the message names both sides)."""


@dataclass
class _Ctx:
    """The plan and, when given, the original config (flat TABLE-spelled keys) and its import."""

    fmt: str
    s: Scenario
    flat: dict[str, Any] | None
    spelling: dict[str, str]
    legacy: bool
    base: Scenario | None
    table: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def current(self, key: str) -> Any:
        """The original's value of ``key`` (absent: the framework default of the TABLE); _MISSING without one."""
        if self.flat is None:
            return _MISSING
        value = self.flat.get(key)
        if value is None:
            return self.table.get(key)
        return value

    def has(self, key: str) -> bool:
        return self.flat is not None and self.flat.get(key) is not None

    def changed(self, get: Callable[[Scenario], Any], default: Any) -> bool:
        """Whether the plan's value differs from the original's import (without an original: from ``default``)."""
        was = get(self.base) if self.base is not None else default
        return get(self.s) != was


def _opt_steps(s: Scenario) -> int:
    """Optimizer steps per pass over the step's batch (the frameworks' mini-batches)."""
    return s.optimizer_steps_per_step // s.algorithm.epochs_per_step


def _lr(s: Scenario) -> float:
    """learning.lr0 scaled by learning.lr_rule from learning.reference_batch to the scenario's responses per step."""
    return lr_for_batch(s.learning, s.workload.responses_per_step)


def _nodes(ctx: _Ctx, gpus: int, per_node_key: str, framework_default: int) -> tuple[int, int]:
    """(GPUs per node, nodes) for ``gpus``: hardware.gpus_per_node, else the original's, else the framework's
    default; a count below one node is one node of that many GPUs."""
    per_node = ctx.s.hardware.gpus_per_node
    if per_node is None:
        cur = ctx.current(per_node_key)
        per_node = int(cur) if cur is not _MISSING and cur else framework_default
    if gpus <= per_node:
        return gpus, 1
    if gpus % per_node:
        raise EmitError(
            f"{gpus} GPUs are not a whole number of {per_node}-GPU nodes ({per_node_key}); set "
            "hardware.gpus_per_node to a divisor"
        )
    return per_node, gpus // per_node


def _divide(a_field: str, a: int, b_what: str, b: int, framework: str) -> int:
    if b <= 0 or a % b:
        raise EmitError(f"{a_field} ({a}) must be divisible by {b_what} ({b}) for {framework}; change the plan")
    return a // b


def _packing_tokens(s: Scenario) -> int:
    tr = s.training
    tokens = tr.packing_tokens or (s.workload.max_prompt_tokens + s.workload.max_response_tokens)
    return tokens * tr.micro_batch_size


def _common_notes(ctx: _Ctx, framework: str, *, asynchronous: bool, max_num_seqs: bool, pp: bool) -> None:
    s = ctx.s
    if not asynchronous and s.schedule.mode == "async":
        ctx.notes.append(
            f"schedule.mode async (max_staleness {s.schedule.max_staleness}): {framework} has no async schedule here"
        )
    if not max_num_seqs and ctx.changed(lambda x: x.engine.max_num_seqs, 256):
        ctx.notes.append(f"engine.max_num_seqs {s.engine.max_num_seqs}: {framework} has no key for it")
    if not pp and s.training.pipeline_parallel_size > 1:
        ctx.notes.append(f"training.pipeline_parallel_size {s.training.pipeline_parallel_size}: {framework} has none")
    if ctx.changed(lambda x: (x.workload.max_prompt_tokens, x.workload.max_response_tokens), _MISSING) and (
        ctx.base is not None
    ):
        ctx.notes.append("workload.max_prompt_tokens / max_response_tokens: length caps are not emitted")
    ds = s.algorithm.dynamic_sampling
    if ds is not None and framework != "NeMo RL":
        ctx.notes.append(f"algorithm.dynamic_sampling (keep rate {ds.keep_rate:g}): not emitted for {framework}")
    if s.reward.model is not None:
        where = f"{s.reward.num_gpus} GPUs of its own" if s.reward.num_gpus else "the training GPUs"
        ctx.notes.append(f"reward.model {s.reward.model.name} on {where}: not emitted (set the framework's reward)")


# --------------------------------------------------------------------------------------------------- verl


# --------------------------------------------------------------------------------------------------- TRL


# --------------------------------------------------------------------------------------------------- OpenRLHF


# --------------------------------------------------------------------------------------------------- NeMo RL


def emitters() -> dict[str, Callable[[_Ctx], dict[str, Any]]]:
    """Each framework's emitter (its adapter module's ``emit_keys``; rlsim.frameworks.registry)."""
    from rlsim.frameworks import registry

    return {name: registry.emitter(name) for name in registry.names()}
