"""Work sent to a worker process (rlsim.host.executor.run_tasks) by ``rlsim sweep`` and ``rlsim plan``:
configurations of one scenario as plain data, which pickles small and is validated once, in the worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ConfigTask:
    """Configurations of one base scenario, for one worker call."""

    base: dict[str, Any]  # the scenario as plain data (Scenario.to_dict)
    configs: list[tuple[int, dict[str, Any]]]  # each configuration's number in the command's table, its overrides
    profile: dict[str, Any] | None = None  # the profile as plain data
    explicit: list[str] = field(default_factory=list)  # the keys the user set: they win over the profile's
    screen: bool = False  # each run screened: its band's window simulated, the rest extrapolated (rlsim sweep)


@dataclass(frozen=True)
class GroupsTask:
    """A plan's screen: groups of configurations that roll out alike (each a ConfigTask sharing its step time but for
    the LR rule), screened in one worker call that shares a rlsim.run.reuse.Reuse among the tasks of ``plan_key``."""

    groups: list[ConfigTask]
    plan_key: str
