"""The learning side of a plan's answer (rlsim.answers.sensitivity): the winner's break-even samples penalty against
the runner-up (the best configuration at another batch, G, LR rule or staleness) and against the user's own
configuration, and the winner under each learning preset, re-ranked by the plan's objective (time, cost and
GPU-hours all scale with N*) among the configurations screened, the deadline and budget checked again."""

from __future__ import annotations

import math
from typing import Any

from rlsim.answers.sensitivity import Candidate, analyse, label
from rlsim.schema import Scenario


def plan_sensitivity(result: Any, base: Scenario, profile: Any = None) -> dict[str, Any] | None:
    """``result``: a PlanResult; ``base``: its scenario with the profile's learning model in (what every row was
    configured from). None when nothing is feasible."""
    if result.winner is None:
        return None
    t = result.table
    ok = t[t["feasible"] & t["time_to_target_s"].notna()]
    axes = [k for k in _axes(result) if len({repr(o.get(k)) for o in result.config_overrides}) > 1]
    cands, configs, cost = [], [], {}
    for r in ok.itertuples():
        over = result.overrides(int(r.config))
        band: tuple[Any, Any] = (getattr(r, "time_to_target_low_s", None), getattr(r, "time_to_target_high_s", None))
        c = Candidate(
            label(int(r.config), {k: over.get(k) for k in axes}),
            over,
            float(r.samples_per_s),
            float(r.time_to_target_s),
            float(r.samples_to_target),
            objective=float(r.objective),
            band_s=(float(band[0]), float(band[1])) if all(_finite(x) for x in band) else None,
        )
        cands.append(c)
        configs.append(int(r.config))
        cost[c.label] = float(r.cost_usd) if _finite(r.cost_usd) else None
    deadline, budget = result.constraints.get("deadline_h"), result.constraints.get("budget_usd")

    def admit(c: Candidate, time_s: float, score: float) -> bool:
        if deadline is not None and time_s > deadline * 3600:
            return False
        usd = cost[c.label]
        return budget is None or usd is None or usd * time_s / c.time_to_target_s <= budget

    ref = configs.index(result.baseline) if result.baseline in configs else None
    return analyse(base, cands, configs.index(result.winner), ref, profile, admit).as_dict()


def _axes(result: Any) -> list[str]:
    """The override keys that tell the searched configurations apart, the learning ones first."""
    keys = dict.fromkeys(k for o in result.config_overrides for k in o)
    first = ("workload.prompts_per_step", "workload.group_size", "learning.lr_rule", "schedule.max_staleness")
    return [k for k in first if k in keys] + [k for k in ("hardware.gpu", "hardware.num_gpus") if k in keys]


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)
