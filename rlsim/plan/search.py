"""``rlsim plan``: the configuration that reaches the target first (or cheapest), the Pareto front of time-to-target
against cost, and why the winner wins against the user's own configuration.

Steps (each configuration is one row of ``PlanResult.table``):

1. the axes (rlsim.plan.space) give every configuration; the scenario as given is the *baseline* (the user's own
   configuration), a row of its own when the search does not contain it;
2. every configuration is screened (rlsim.plan.evaluate): one short simulation per group that shares a step
   time, the LR rules on its timeline; configurations the scenario rules reject are pruned with the reason, and
   those whose lower bounds (the same run with generation free) cannot change the answer are not screened
   (rlsim.plan.bound; ``prune=False`` screens them);
3. cost = GPU-hours to target x the GPU type's price (rlsim.plan.prices: catalog, then the scenario's
   ``plan.prices``, then ``--price``); the constraints (``deadline_h``, ``budget_usd``) mark the rest
   infeasible;
4. the best ``finalists`` by the objective and the baseline are simulated in full (every step to the target,
   with the band); the winner is the best of them (the baseline included: it can be the answer);
5. the Pareto front (time-to-target vs cost, or vs GPU-hours when a price is missing) over the feasible rows;
6. the explanation (rlsim.plan.explain).

The same plan on any executor gives the same table: each group is a pure function of the scenario, its
overrides and the profile, and rows are put back in configuration order.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rlsim.errors import RlsimError, ScenarioError
from rlsim.host.executor import run_tasks
from rlsim.host.workers_pool import kept_pools
from rlsim.plan.bound import Pruning
from rlsim.plan.evaluate import evaluate_full, evaluate_groups, forget_reuse
from rlsim.plan.prices import MissingPrice, price_for
from rlsim.plan.sensitivity import plan_sensitivity
from rlsim.plan.space import Config, Space, baseline_config, build_space, configurations
from rlsim.run.profile import Profile
from rlsim.run.tasks import ConfigTask, GroupsTask
from rlsim.schema import Scenario

if TYPE_CHECKING:
    import pandas as pd

OBJECTIVES = {"time": "time_to_target_s", "cost": "cost_usd", "gpu-hours": "gpu_hours_to_target"}
FINALISTS = 5
# cores per local worker of the screen by default: its runs are a few steps each, mostly Python that a worker's
# threads cannot share, so one worker per core (8,304-configuration plan on 2 cores, 2026-12-04: one worker of
# two threads 58.0 s, two of one thread 47.4 s); the finalists run to their target and keep the sweep's two
SCREEN_CORES = 1


class PlanError(RlsimError, ValueError):
    """A plan that cannot be made (nothing feasible is not this: that is a result)."""


@dataclass
class PlanResult:
    scenario: Scenario
    space: Space
    objective: str
    table: pd.DataFrame  # one row per configuration tried, in configuration order; "config" is its number
    # each configuration's dotted overrides, by its number: beside the table, not in DataFrame.attrs, which pandas
    # deep-copies on every row access and slice (8,304 configurations: most of `rlsim plan`'s time went there)
    config_overrides: list[dict[str, Any]]
    baseline: int  # the row of the user's own configuration
    winner: int | None  # None: nothing feasible
    pareto: list[int]
    prices: dict[str, dict[str, Any]]  # GPU -> price record (usd_per_gpu_hour, source, date, offer, overridden)
    constraints: dict[str, float | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # the learning side of the answer: break-even, the winner under each preset (rlsim.plan.sensitivity)
    sensitivity: dict[str, Any] | None = None

    def row(self, config: int) -> pd.Series:
        return self.table.loc[self.table["config"] == config].iloc[0]

    def overrides(self, config: int) -> dict[str, Any]:
        """The dotted overrides of a configuration (None values: the scenario's default, e.g. replicas)."""
        return dict(self.config_overrides[config])


def _prices(scenario: Scenario, gpus: Iterable[str], cli: dict[str, float] | None) -> dict[str, dict[str, Any]]:
    """The price record of each GPU type; a GPU with no price gets None (cost objective and budget need one)."""
    over = {**scenario.plan.prices, **(cli or {})}
    out: dict[str, dict[str, Any]] = {}
    for gpu in gpus:
        try:
            p = price_for(gpu, over)
        except MissingPrice:
            out[gpu] = {"usd_per_gpu_hour": None}
            continue
        out[gpu] = {
            "usd_per_gpu_hour": p.usd_per_gpu_hour,
            "source": p.source,
            "date": p.date,
            "offer": p.offer,
            "overridden": p.overridden,
        }
    return out


def _group(configs: list[Config]) -> list[list[int]]:
    """Indices of configurations sharing a step time (the same overrides outside the learning section)."""
    groups: dict[tuple, list[int]] = {}
    for i, c in enumerate(configs):
        groups.setdefault(c.systems_key(), []).append(i)
    return list(groups.values())


# overrides that leave a configuration's sampled lengths and rollout as they are, but for the GPUs it rolls out on
_NOT_ROLLOUT = ("hardware.num_gpus", "hardware.placement", "hardware.rollout_gpus", "hardware.train_gpus")
_NOT_ROLLOUT_SECTIONS = ("learning.", "schedule.", "weight_sync.", "training.", "trainer.")


def _rollout_key(overrides: dict[str, Any]) -> tuple:
    """The groups of one task (:func:`rlsim.plan.evaluate.evaluate_groups`): those likely to draw the same lengths
    and roll them out alike, i.e. every override but the schedule, trainer and pool split, with the GPUs the
    rollout runs on (all of them colocated). A miss here costs speed only: the rollouts are matched by their
    inputs (rlsim.engine.rollout.RolloutMemo)."""
    kept = tuple(
        sorted(
            (k, repr(v))
            for k, v in overrides.items()
            if k not in _NOT_ROLLOUT and not k.startswith(_NOT_ROLLOUT_SECTIONS)
        )
    )
    colocated = overrides.get("hardware.placement") == "colocated"
    rollout_gpus = overrides.get("hardware.rollout_gpus")
    gpus = overrides.get("hardware.num_gpus") if colocated or rollout_gpus is None else rollout_gpus
    return (*kept, ("rollout GPUs", repr(gpus)))


def _group_cost(overrides: dict[str, Any]) -> float:
    k = int(overrides.get("schedule.max_staleness") or 0)
    return float(overrides["workload.prompts_per_step"] * overrides["workload.group_size"] * (2 + 2 * k))


def _objective_value(row: dict[str, Any], column: str) -> float:
    value = row.get(column)
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else math.inf


def pareto_front(points: Sequence[tuple[int, float, float]]) -> list[int]:
    """The ids of the points no other point beats on both coordinates (lower is better), by the first."""
    front: list[int] = []
    best_y = math.inf
    for pid, _x, y in sorted(points, key=lambda p: (p[1], p[2], p[0])):
        if y < best_y:
            front.append(pid)
            best_y = y
    return front


def plan(
    scenario: Scenario,
    *,
    objective: str = "time",
    grid: dict[str, list[Any]] | None = None,
    gpu_types: Sequence[str] | None = None,
    gpus: int | None = None,
    max_gpus: int | None = None,
    schedules: Sequence[str] | None = None,
    deadline_h: float | None = None,
    budget_usd: float | None = None,
    prices: dict[str, float] | None = None,
    profile: Profile | None = None,
    executor: str = "local",
    address: str | None = None,
    workers: int | None = None,
    progress: Callable[..., None] | None = None,  # (done, total[, stage]): "screen", then "finalists"
    explicit: Iterable[str] = (),
    finalists: int = FINALISTS,
    screen_thrash: str = "fast",
    prune: bool = True,
) -> PlanResult:
    """Search the configurations of ``scenario`` (module docstring) and pick the best by ``objective``. The screen
    simulates a KV-cache thrash with ``screen_thrash`` (engine.thrash_model: fast unless told otherwise), the
    finalists with the scenario's own model. With ``prune`` the configurations whose lower bounds cannot change the
    answer are not screened (rlsim.plan.bound); without it every one is."""
    _check_inputs(scenario, profile, objective, deadline_h, budget_usd)
    space = build_space(scenario, grid, gpu_types, gpus, max_gpus, schedules)
    price_table = _prices(scenario, dict.fromkeys([*space.gpus, scenario.hardware.gpu.name]), prices)
    missing = [g for g, p in price_table.items() if p["usd_per_gpu_hour"] is None]
    _check_prices(missing, objective, budget_usd)
    configs, baseline = _with_baseline(configurations(space), scenario)
    prof = profile.to_dict() if profile is not None else None
    run = _Runner(scenario.to_dict(), prof, list(explicit), executor, address, workers, screen_thrash)
    rules = _Rules(configs, price_table, OBJECTIVES[objective], deadline_h, budget_usd)
    ycol = "cost_usd" if not missing else "gpu_hours_to_target"  # the Pareto front's: time vs cost or GPU-hours
    pruning = Pruning(run, rules, configs, _group(configs), ycol, finalists, progress)
    with kept_pools():  # the stages share their worker processes (rlsim.host.workers_pool)
        rows = pruning.screen(baseline) if prune else pruning.every()
        ranked = sorted((i for i in rows if rows[i]["feasible"]), key=lambda i: (rows[i]["objective"], i))
        full = sorted(set(ranked[:finalists]) | {baseline})
        run.finalists(configs, rows, full, rules, progress)
        pruning.recheck(rows)  # (nothing to do when nothing was bounded)
    feasible_full = [i for i in full if rows[i]["feasible"]]
    winner = min(feasible_full, key=lambda i: (rows[i]["objective"], i)) if feasible_full else None
    pts = [
        (i, rows[i]["time_to_target_s"], rows[i][ycol])
        for i in rows
        if rows[i]["feasible"] and rows[i].get(ycol) is not None
    ]
    front = pareto_front(pts)
    import pandas as pd  # here: a screen worker imports this module and never needs pandas (0.6 s)

    table = pd.DataFrame(
        [
            {
                "config": i,
                **configs[i].labels,
                "baseline": i == baseline,
                "winner": i == winner,
                "pareto": i in front,
                **rows[i],
            }
            for i in range(len(configs))
        ]
    )
    constraints = {"deadline_h": deadline_h, "budget_usd": budget_usd}
    notes = _notes(missing, space, scenario.learning.reference_group_size is not None)
    overrides = [c.overrides for c in configs]
    result = PlanResult(
        scenario, space, objective, table, overrides, baseline, winner, front, price_table, constraints, notes
    )
    # here, not at the top: it loads simpy (start-up time)
    from rlsim.run.simulation import configure

    result.sensitivity = plan_sensitivity(result, configure(scenario, profile, {}, explicit), profile)
    return result


def _check_prices(missing: list[str], objective: str, budget_usd: float | None) -> None:
    """The cost objective and a budget need every searched GPU priced: a one-line refusal naming the flag."""
    if missing and (objective == "cost" or budget_usd is not None):
        what = "--objective cost" if objective == "cost" else "--budget-usd"
        raise PlanError(
            f"{what} needs a price for {', '.join(missing)} and the catalog has none: pass --price "
            f"{missing[0]}=USD_PER_GPU_HOUR or set plan.prices.{missing[0]} in the scenario"
        )


def _check_inputs(
    scenario: Scenario, profile: Profile | None, objective: str, deadline_h: float | None, budget_usd: float | None
) -> None:
    """An objective, a learning model to rank by and positive constraints, or a one-line refusal."""
    if objective not in OBJECTIVES:
        raise ScenarioError("--objective", objective, "is not an objective", f"use one of: {', '.join(OBJECTIVES)}")
    fitted = profile is not None and bool(profile.learning_overrides())
    if not fitted and (scenario.learning.metric is None or scenario.learning.target is None):
        raise PlanError(
            "rlsim plan needs a learning model to rank by time-to-target: set learning.metric and learning.target "
            "in the scenario, give a --profile with a learning section, or --assume-learning paper"
        )
    for name, value in (("--deadline-h", deadline_h), ("--budget-usd", budget_usd)):
        if value is not None and not value > 0:
            raise ScenarioError(name, value, "must be above 0", f"give {name} as a positive number")


def _with_baseline(configs: list[Config], scenario: Scenario) -> tuple[list[Config], int]:
    """The configurations with the scenario's own among them (appended when the space lacks it), and its index."""
    base_cfg = baseline_config(scenario)
    baseline = next((i for i, c in enumerate(configs) if c.overrides == base_cfg.overrides), None)
    if baseline is None:
        configs.append(Config(base_cfg.overrides, {**base_cfg.labels}))
        baseline = len(configs) - 1
    return configs, baseline


@dataclass
class _Rules:
    """Cost, constraints and objective of a row, after screening or the full simulation."""

    configs: list[Config]
    price_table: dict[str, dict[str, Any]]
    column: str
    deadline_h: float | None
    budget_usd: float | None

    def finish(self, index: int, row: dict[str, Any]) -> None:
        price = self.price_table[self.configs[index].labels["gpu"]]["usd_per_gpu_hour"]
        ok = row["status"] == "ok"
        gh = row.get("gpu_hours_to_target") if ok else None
        row["usd_per_gpu_hour"] = price
        row["cost_usd"] = gh * price if gh is not None and price is not None else None
        why = None
        if ok and row.get("time_to_target_s") is None:
            why = "no time-to-target (the learning model cannot reach the target)"
        elif ok and self.deadline_h is not None and row["time_to_target_s"] > self.deadline_h * 3600:
            why = f"time-to-target {row['time_to_target_s'] / 3600:.2f} h is over the deadline {self.deadline_h:g} h"
        elif ok and self.budget_usd is not None and row["cost_usd"] > self.budget_usd:
            why = f"cost ${row['cost_usd']:,.0f} is over the budget ${self.budget_usd:,.0f}"
        row["feasible"] = ok and why is None
        row["infeasible_reason"] = row.get("reason") if not ok else why
        row["objective"] = _objective_value(row, self.column) if row["feasible"] else math.inf


@dataclass
class _Runner:
    """The screen and the finalists' full simulations on the executor (rlsim.host.executor.run_tasks)."""

    base: dict[str, Any]
    prof: dict[str, Any] | None
    explicit: list[str]
    executor: str
    address: str | None
    workers: int | None
    screen_thrash: str = "fast"
    # what a worker keeps for this plan (sampled lengths, equal rollouts: rlsim.plan.evaluate), shared by the tasks
    # of every stage that worker runs (its workers are kept across the stages: rlsim.host.workers_pool)
    plan_key: str = field(default_factory=lambda: uuid.uuid4().hex)

    def screen(
        self,
        configs: list[Config],
        groups: list[list[int]],
        progress: Callable[..., None] | None,
        fn: Callable[[Any], list] = evaluate_groups,
    ) -> dict[int, dict[str, Any]]:
        """The configurations of ``groups`` screened with the screen's thrash model (a configuration's own
        engine.thrash_model override wins), by ``fn`` (rlsim.plan.evaluate: evaluate_groups, or bound_groups for
        the bounds): a task per set of groups that roll out alike (:func:`_rollout_key`), the longest first (about
        P x G x its steps, summed)."""
        buckets: dict[tuple, list[list[int]]] = {}
        for g in groups:
            buckets.setdefault(_rollout_key(configs[g[0]].overrides), []).append(g)
        base = {**self.base, "engine": {**self.base.get("engine", {}), "thrash_model": self.screen_thrash}}
        tasks, costs, sizes = [], [], []
        for groups in buckets.values():
            items = [ConfigTask(base, [(i, configs[i].overrides) for i in g], self.prof, self.explicit) for g in groups]
            tasks.append(GroupsTask(items, self.plan_key))
            costs.append(sum(_group_cost(configs[g[0]].overrides) for g in groups))
            sizes.append(sum(len(g) for g in groups))
        run = (self.executor, self.address, self.workers)
        try:
            outputs = run_tasks(fn, tasks, *run, progress, costs, sizes, cores_per_worker=SCREEN_CORES)
        finally:
            forget_reuse()  # what this process kept, when it screened in-process
        return {index: row for out in outputs for index, row in out}

    def finalists(
        self,
        configs: list[Config],
        rows: dict[int, dict[str, Any]],
        full: list[int],
        rules: _Rules,
        progress: Callable[..., None] | None,
    ) -> None:
        """The finalists simulated in full, in place of their screened rows (kept as screen_*)."""
        tasks = [ConfigTask(self.base, [(i, configs[i].overrides)], self.prof, self.explicit) for i in full]
        costs = [float(rows[i].get("samples_to_target") or 0.0) for i in full]  # responses simulated to target
        finals = (lambda done, total: progress(done, total, "finalists")) if progress is not None else None
        for index, row in run_tasks(evaluate_full, tasks, self.executor, self.address, self.workers, finals, costs):
            screened = rows[index]
            rows[index] = {
                **row,
                "screen_step_time_s": screened.get("step_time_s"),
                "screen_samples_per_s": screened.get("samples_per_s"),
                "screen_time_to_target_s": screened.get("time_to_target_s"),
            }
            rules.finish(index, rows[index])


def _notes(missing: list[str], space: Space, groups_count: bool = False) -> list[str]:
    """What the plan says of its own limits: unpriced GPUs, a group size it did not search."""
    notes = []
    if missing:
        notes.append(
            f"no price for {', '.join(missing)}: cost is left empty for it and the Pareto front is time-to-target "
            "vs GPU-hours; pass --price GPU=USD to price it"
        )
    if len(space.groups) == 1 and not groups_count:
        notes.append(
            f"G kept at {space.groups[0]}: rlsim's learning model depends on B = P x G only, so G and P trade one "
            "for one; add --grid workload.group_size=4,8,16 to search it"
        )
    return notes
