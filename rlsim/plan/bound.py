"""Which configurations the plan need not screen: a lower bound of each one's numbers, and the rule that prunes by it.

The bound (rlsim.plan.evaluate.bound_groups) is the screen's own short run with generation free
(rlsim.run.pipeline.run_pipeline's ``free_generation``): every rollout takes no time, so each step lasts the trainer's
own work (reward, log-prob and training passes, weight sync), which its one process does step after step in the
real run too. Each step's time, the records' wall-clock and the steady step time are then at most the screen's, and
so are the time-to-target, the GPU-hours and the cost read from them (the samples to the target do not depend on
the systems side). It costs the pipeline's Python and no engine: on the 8,304-configuration plan of
tests/benchmarks/test_bench_plan.py about a quarter of the exhaustive screen's CPU time.

A configuration whose bounds already lose cannot change the plan's answer, so it is not screened:

* the constraints: its time bound over ``deadline_h`` or its cost bound over ``budget_usd`` (infeasible whatever
  generation costs), or no time-to-target at all (the learning model never reaches the target);
* the finalists: at least ``finalists`` screened feasible configurations have an objective below its bound, so it
  would not be among the best ``finalists`` the plan simulates in full;
* the Pareto front: a screened feasible configuration is at or below both of its bounds (time-to-target and cost,
  or GPU-hours where a price is missing), below in one of them, so it would not be on the front either;

unless the explanation may need it: that compares the best configuration of each batch size and LR rule with the
winner (rlsim.plan.explain.per_batch), so one whose objective bound is below its cell's best screened objective is
screened after all.

Its row says so (status ``bounded``, ``time_to_target_bound_s``, the reason). The configurations are screened best
bound first, in two rounds (:data:`FIRST_ROUND` of the groups and the best bound of each cell, then what the rule
leaves), so that those that prune the rest are screened early, then the cells' candidates; after the finalists'
full simulations the front rule is checked again against their numbers, and any row it no longer holds for is
screened. The winner, the finalists, the Pareto front, the explanation and every screened row are those of the
exhaustive screen (``plan(..., prune=False)``, ``rlsim plan --exhaustive``; tests/rlsim/test_plan_bound.py).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlsim.plan.evaluate import bound_groups

FIRST_ROUND = 0.05  # share of the groups screened before the first pruning (best bound first)
# bounds are lowered by this share: a step that generation does not bound (the trainer's own work) comes out of the
# free-generation run within float rounding of the real one's, an ulp above it at times (wall-clock differences)
SLACK = 1e-9


@dataclass(frozen=True)
class Bound:
    """A configuration's lower bounds: time-to-target (s), the Pareto front's second coordinate (cost or GPU-hours)
    and the objective; ``why`` when its bounds alone rule it out (infeasible whatever generation costs)."""

    time_s: float
    y: float | None
    objective: float
    why: str | None = None


def bound_of(row: dict[str, Any], finish: Callable[[dict[str, Any]], dict[str, Any]], ycol: str) -> Bound:
    """A bound row (an evaluated row with generation free) as a :class:`Bound`, the plan's rules applied to it by
    ``finish`` (cost, constraints, objective)."""
    done = finish(dict(row))
    t = done.get("time_to_target_s")
    y = done.get(ycol)
    why = None
    if not done["feasible"]:  # a constraint broken with generation free, or a target the learning never reaches
        why = done["infeasible_reason"] if t is None else f"even with generation free, {done['infeasible_reason']}"
    low = 1.0 - SLACK
    return Bound(
        time_s=float(t) * low if t is not None else math.inf,
        y=float(y) * low if y is not None else None,
        objective=done["objective"] * low if done["feasible"] else math.inf,
        why=why,
    )


@dataclass
class Screened:
    """The screened feasible rows' numbers the rule compares bounds against."""

    objectives: list[float]
    points: list[tuple[int, float, float]]  # (config, time-to-target, y) of those with a y

    @classmethod
    def of(cls, rows: dict[int, dict[str, Any]], ycol: str) -> Screened:
        ok = [(i, r) for i, r in rows.items() if r.get("feasible")]
        objectives = sorted(r["objective"] for _, r in ok)
        points = [(i, float(r["time_to_target_s"]), float(r[ycol])) for i, r in ok if r.get(ycol) is not None]
        return cls(objectives, points)

    def beaten_by(self, b: Bound, finalists: int) -> str | None:
        """Why bound ``b`` cannot change the answer (module docstring), or None."""
        if b.why is not None:
            return b.why
        below = sum(1 for o in self.objectives if o < b.objective)
        if below < finalists:
            return None
        if b.y is None:
            return f"{below} screened configurations beat its objective bound"
        over = self.over(b)
        if over is None:
            return None
        return f"{below} screened configurations beat its objective bound and configuration {over} both its bounds"

    def over(self, b: Bound) -> int | None:
        """A screened configuration at or under both of ``b``'s Pareto bounds and under one (so the configuration
        bounded is on no front), or None."""
        if b.y is None:
            return None
        return next((i for i, t, y in self.points if t <= b.time_s and y <= b.y and (t < b.time_s or y < b.y)), None)


def first_round(groups: Sequence[Sequence[int]], bounds: dict[int, Bound], baseline: int, finalists: int) -> list[int]:
    """The groups screened first (their positions in ``groups``, each with a bounded member): the best bounds,
    FIRST_ROUND of them (at least ``finalists``), and the baseline's."""
    order = sorted(range(len(groups)), key=lambda g: (min(bounds[i].objective for i in groups[g] if i in bounds), g))
    take = max(math.ceil(FIRST_ROUND * len(groups)), finalists)
    first = set(order[:take])
    first.update(g for g, members in enumerate(groups) if baseline in members)
    return sorted(first, key=order.index)


def bounded_row(b: Bound, why: str) -> dict[str, Any]:
    """The row of a configuration not screened."""
    return {
        "status": "bounded",
        "reason": f"not screened: {why}",
        "time_to_target_bound_s": b.time_s if math.isfinite(b.time_s) else None,
    }


@dataclass
class Pruning:
    """The plan's screen with pruning (module docstring) on its runner and rules (rlsim.plan.search)."""

    run: Any  # search._Runner
    rules: Any  # search._Rules
    configs: list
    groups: list[list[int]]
    ycol: str
    finalists: int
    progress: Callable[..., None] | None
    bounds: dict[int, Bound] = field(default_factory=dict)
    pruned: dict[int, None] = field(default_factory=dict)  # groups not screened (their positions), in order
    counted: int = 0  # configurations screened so far (the progress of the screen's calls, one after another)

    def screen(self, baseline: int) -> dict[int, dict[str, Any]]:
        """Every configuration's row: screened, pruned by the scenario's rules, or bounded."""
        rows = self.run.screen(self.configs, self.groups, self._stage("bounds"), bound_groups)
        for i, row in rows.items():
            if row["status"] == "ok":
                self.bounds[i] = bound_of(row, functools.partial(self._finish, i), self.ycol)
            else:  # refused by the scenario's rules: final
                self.rules.finish(i, row)
        rows = {i: r for i, r in rows.items() if r["status"] != "ok"}
        live = [g for g, members in enumerate(self.groups) if any(i in self.bounds for i in members)]
        first = [live[x] for x in first_round([self.groups[g] for g in live], self.bounds, baseline, self.finalists)]
        cells: dict[tuple, tuple[float, int]] = {}  # the best bound of each batch size and LR rule (see _cover)
        for i, b in self.bounds.items():
            if b.why is None:
                cells[self._cell(i)] = min(cells.get(self._cell(i), (math.inf, i)), (b.objective, i))
        best = {i for _, i in cells.values()}
        first += [g for g in live if g not in first and best.intersection(self.groups[g])]
        rows.update(self._screened(first))
        beaten = Screened.of(rows, self.ycol)
        second, screened = [], set(first)
        for g in (g for g in live if g not in screened):
            whys = [beaten.beaten_by(self.bounds[i], self.finalists) for i in self.groups[g] if i in self.bounds]
            reasons = [w for w in whys if w is not None]
            if len(reasons) < len(whys):  # a bound that could still change the answer: screen the group
                second.append(g)
                continue
            self.pruned[g] = None
            for i in self.groups[g]:
                if i in self.bounds:
                    rows[i] = bounded_row(self.bounds[i], reasons.pop(0))
                    self.rules.finish(i, rows[i])
        rows.update(self._screened(second))
        self._cover(rows)
        return rows

    def _cell(self, i: int) -> tuple:
        labels = self.configs[i].labels
        return labels.get("prompts_per_step"), labels.get("group_size"), labels.get("lr_rule")

    def _cover(self, rows: dict[int, dict[str, Any]]) -> None:
        """The best screened configuration of each batch size and LR rule is its best over the whole search (the
        explanation compares it with the winner, rlsim.plan.explain.per_batch): while a bounded configuration's
        objective bound is below its cell's best screened objective (or its cell has none), the groups of every
        such configuration are screened (once for most plans; again where a cell had no feasible row)."""
        while True:
            best: dict[tuple, float] = {}
            for i, r in rows.items():
                if r.get("feasible"):
                    cell = self._cell(i)
                    best[cell] = min(best.get(cell, math.inf), r["objective"])
            take = set()
            for g in self.pruned:
                for i in self.groups[g]:
                    b = self.bounds.get(i)
                    if b is not None and b.why is None and b.objective < best.get(self._cell(i), math.inf):
                        take.add(i)
            groups = sorted(g for g in self.pruned if any(i in take for i in self.groups[g]))
            if not groups:
                return
            rows.update(self._screened(groups))

    def every(self) -> dict[int, dict[str, Any]]:
        """Every configuration screened, none bounded (``plan(..., prune=False)``)."""
        return self._screened(list(range(len(self.groups))))

    def recheck(self, rows: dict[int, dict[str, Any]]) -> None:
        """After the finalists' full simulations: a bounded group that their numbers no longer keep off the Pareto
        front is screened after all."""
        beaten = Screened.of(rows, self.ycol)
        again = [g for g in self.pruned if any(self._may_front(beaten, i) for i in self.groups[g])]
        rows.update(self._screened(again))

    def _may_front(self, beaten: Screened, i: int) -> bool:
        b = self.bounds.get(i)
        return b is not None and b.why is None and b.y is not None and beaten.over(b) is None

    def _screened(self, groups: list[int]) -> dict[int, dict[str, Any]]:
        """The groups screened, their rows finished; the screen's progress counts on from the calls before."""
        if not groups:
            return {}
        for g in groups:
            self.pruned.pop(g, None)
        before, self.counted = self.counted, self.counted + sum(len(self.groups[g]) for g in groups)
        rows = self.run.screen(self.configs, [self.groups[g] for g in groups], self._stage("screen", before))
        for i, row in rows.items():
            self.rules.finish(i, row)
        return rows

    def _finish(self, i: int, row: dict[str, Any]) -> dict[str, Any]:
        self.rules.finish(i, row)
        return row

    def _stage(self, stage: str, before: int = 0) -> Callable[[int, int], None] | None:
        if self.progress is None:
            return None
        progress = self.progress
        return lambda done, total: progress(before + done, before + total, stage)
