"""Evaluating configurations: one pure, picklable function per group of configurations that share a step time.

Two fidelities:

* ``screen``: every configuration of the search. The configurations of one group differ only in their learning
  section (the LR rule), which the pipeline does not read, so the group is simulated once for a short run
  (``SCREEN_STEPS`` steady-state steps plus k to fill and k to drain an async pipeline of staleness k) and each
  configuration's samples-to-target is put on that timeline; the time-to-target is extrapolated at the
  steady-state step time (rlsim.learning.target).
* ``full``: the finalists (the best few, the user's own configuration and the ones the explanation names) are
  simulated as ``rlsim run --set run.until_target=true`` does: every step to the target, with the band.

A configuration the scenario's validation rejects (a model that does not fit, a TP that does not divide the
rollout pool), an engine that cannot hold one sequence, or a simulation too large for this machine is *pruned*:
its row says why and nothing is simulated for it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rlsim.errors import RlsimError
from rlsim.run.profile import profile_from_dict
from rlsim.run.result import SimResult, length_columns
from rlsim.run.reuse import Reuse
from rlsim.run.tasks import ConfigTask, GroupsTask
from rlsim.scenario.build import with_learning
from rlsim.schema import Scenario

if TYPE_CHECKING:
    from rlsim.run.timeline import Timelines

SCREEN_STEPS = 2  # steady-state steps per screened group (sync: every step; async k: steps k+1..N-k)
ROW_KEYS = (
    "step_time_s",
    "samples_per_s",
    "generation_tokens_per_s",
    "samples_to_target",
    "time_to_target_s",
    "gpu_hours_to_target",
    "probability_reaching_target",
    "replicas",
    "mean_decode_batch",
)


def _learning_only(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether overrides ``a`` and ``b`` set the same keys and differ in ``learning.*`` values only."""
    return set(a) == set(b) and all(k.startswith("learning.") or a[k] == b[k] for k in a)


def screen_steps(scenario: Scenario) -> int:
    return SCREEN_STEPS + 2 * scenario.schedule.staleness


def result_row(result: SimResult) -> dict[str, Any]:
    """The numbers a plan row keeps from a simulation: throughput, samples- and time-to-target, what bounds the
    step (the largest phase and, with separate pools, the busier pool) and the samples multipliers."""
    s = result.summary()
    row: dict[str, Any] = {k: s.get(k) for k in ROW_KEYS}
    scn = result.scenario
    row["responses_per_step"] = scn.workload.responses_per_step
    row["preemptions_per_response"] = (s["thrash"] or {}).get("preemptions_per_response", 0.0)
    row["lr"] = result.records[0]["lr"] if result.records else None
    phases = s["phase_time_s"]
    row["bounding_phase"] = max(phases, key=lambda k: phases[k]) if phases else None
    util = s["utilization"]
    row["busiest_pool"] = max(util, key=lambda k: util[k]) if util else None
    row["busiest_pool_utilization"] = util[row["busiest_pool"]] if util else None
    band = s.get("time_to_target_band_s") or [None, None]
    row["time_to_target_low_s"], row["time_to_target_high_s"] = band
    for mult, value in (s.get("samples_multiplier") or {}).items():
        row[f"samples_multiplier/{mult}"] = value
    for phase, sec in phases.items():
        row[f"phase_time_s/{phase}"] = sec
    row.update(length_columns(s))  # priced for the finalists only (their full runs carry the band)
    row["warnings"] = " | ".join(s["warnings"]) or None
    return row


def evaluate_groups(task: GroupsTask) -> list:
    """Screen groups that share their workload, engine and rollout GPUs (rlsim.plan.search puts them in one task):
    each group's rows as :func:`evaluate_group` gives them. The runs of every task of one plan (its ``plan key``) that
    this process screens share a rlsim.run.reuse.Reuse: sampled lengths (every configuration of a workload
    draws the same) and equal rollouts (a sync and an async schedule start alike, colocated and separate pools
    with as many rollout GPUs roll out alike). A task of another plan replaces it; :func:`forget_reuse` drops it."""
    # here, not at the top: it loads simpy (start-up time)
    from rlsim.run.timeline import Timelines

    reuse = _plan_reuse(task.plan_key)
    return [row for group in task.groups for row in evaluate_group(group, Timelines(reuse))]


def bound_row(result: SimResult) -> dict[str, Any]:
    """What a bound keeps of a free-generation run (rlsim.plan.bound): time-to-target, GPU-hours and samples to
    the target, as :func:`result_row` has them (without the summary it computes)."""
    t = result.time_to_target
    return {
        "time_to_target_s": t.time_to_target_s if t is not None else None,
        "gpu_hours_to_target": result.gpu_hours_to_target,
        "samples_to_target": t.samples_to_target if t is not None else None,
    }


def bound_groups(task: GroupsTask) -> list:
    """:func:`evaluate_groups` with generation free (rlsim.plan.bound): each configuration's lower bounds, or its
    pruned row. No engine runs; the lengths are shared as in the screen."""
    # here, not at the top: it loads simpy (start-up time)
    from rlsim.run.timeline import Timelines

    reuse = _plan_reuse(task.plan_key)
    each = (evaluate_group(group, Timelines(reuse, True), bound_row) for group in task.groups)
    return [row for rows in each for row in rows]


_REUSE: dict[str, Reuse] = {}  # the Reuse of the plan whose tasks this process screens (one plan at a time)


def _plan_reuse(plan_key: str) -> Reuse:
    reuse = _REUSE.get(plan_key)
    if reuse is None:
        _REUSE.clear()
        reuse = _REUSE[plan_key] = Reuse()
    return reuse


def forget_reuse() -> None:
    """Drop what this process kept for a plan's screen (up to ~100 MB of lengths and rollouts)."""
    _REUSE.clear()


def evaluate_group(
    task: ConfigTask,
    timelines: Timelines | None = None,
    row_of: Callable[[SimResult], dict[str, Any]] | None = None,
) -> list:
    """Screen one group (the task's configurations) -> one ``(index, row)`` per configuration (``row["status"]``
    ok or pruned, ``row["reason"]`` when pruned; an ok row's numbers by ``row_of``, :func:`result_row` by
    default). The group's learning variants share one short timeline, in ``timelines`` if given."""
    # here, not at the top: it loads simpy (start-up time)
    from rlsim.run.simulation import configure, predict
    from rlsim.run.timeline import Timelines

    base, items, explicit = task.base, task.configs, task.explicit
    profile = profile_from_dict(task.profile) if task.profile else None
    valid: list[tuple[int, Scenario]] = []
    out: list[tuple[int, dict[str, Any]]] = []
    first: tuple[dict[str, Any], Scenario] | None = None  # the group's first valid configuration
    for index, overrides in items:
        try:
            if first is not None and _learning_only(first[0], overrides):
                # the rest of the scenario is the first's, already validated: rebuild the learning section only
                changed = {k: v for k, v in overrides.items() if first[0][k] != v}
                scn = with_learning(first[1], changed)
            else:
                scn = configure(base, profile, overrides, explicit)
                first = first or (overrides, scn)
        except RlsimError as exc:
            out.append((index, {"status": "pruned", "reason": str(exc)}))
            continue
        short = dataclasses.replace(scn.run, steps=screen_steps(scn), until_target=False)
        valid.append((index, dataclasses.replace(scn, run=short)))
    timelines = timelines if timelines is not None else Timelines()
    for index, scn in valid:
        try:
            result = predict(scn, profile, timelines=timelines)
        except RlsimError as exc:  # an engine that cannot hold a sequence, a run too large for this machine
            out.append((index, {"status": "pruned", "reason": str(exc)}))
        else:
            if row_of is not None:  # (a bound: rlsim.plan.bound)
                out.append((index, {"status": "ok", **row_of(result)}))
                continue
            out.append((index, {"status": "ok", "reason": None, "fidelity": "screen", **result_row(result)}))
    return out


def evaluate_full(task: ConfigTask) -> tuple[int, dict]:
    """One finalist (the task's one configuration) simulated to its target with the band."""
    # here, not at the top: it loads simpy (start-up time)
    from rlsim.run.simulation import configure, predict

    ((index, overrides),) = task.configs
    profile = profile_from_dict(task.profile) if task.profile else None
    try:
        scn = configure(task.base, profile, overrides, task.explicit)
        result = predict(scn, profile, with_band=True, to_target=True)
    except RlsimError as exc:
        return index, {"status": "pruned", "reason": str(exc)}
    return index, {"status": "ok", "reason": None, "fidelity": "full", **result_row(result)}
