"""Must-show 1 of the planner: every framework fixture is imported, simulated, planned and emitted, and importing
the emitted overrides over the original gives the planned scenario's batch knobs back."""

import pytest

from rlsim.frameworks.config_import import import_config
from rlsim.frameworks.emit import emit, parse_emitted_overrides
from rlsim.plan import plan
from rlsim.plan.assume import assumed_learning
from rlsim.plan.output import winner_scenario
from rlsim.run.simulation import simulate
from rlsim.scenario import from_dict, parse_overrides, with_overrides
from tests.rlsim.test_emit import CASES, IDS


def _batch_knobs(s):
    return {
        "P": s.workload.prompts_per_step,
        "G": s.workload.group_size,
        "mini_batches": s.algorithm.mini_batches_per_step,
        "optimizer_steps": s.optimizer_steps_per_step,
        "epochs": s.algorithm.epochs_per_step,
    }


@pytest.mark.parametrize(("fmt", "path", "sets", "_plan"), CASES, ids=IDS)
def test_import_simulate_plan_emit_round_trip(fmt, path, sets, _plan):
    imported = from_dict(import_config(path, fmt, parse_overrides(list(sets))).scenario)
    assert simulate(imported).summary()["samples_per_s"] > 0
    learning, _ = assumed_learning(imported, "paper")
    scenario = with_overrides(imported, learning)
    p0 = scenario.workload.prompts_per_step
    result = plan(
        scenario,
        grid={
            "workload.prompts_per_step": [p0, 2 * p0],
            "engine.tensor_parallel_size": [scenario.engine.tensor_parallel_size],
        },
        schedules=[_schedule(scenario)],
        finalists=1,
        workers=1,
    )
    assert result.winner is not None, result.table["infeasible_reason"].dropna().unique()[:3]
    winner = from_dict(winner_scenario(result))
    emitted = emit(fmt, winner, original=path, framework_set=sets)
    again = {**parse_overrides(list(sets)), **parse_emitted_overrides(fmt, emitted.overrides, emitted.launch)}
    back = from_dict(import_config(path, fmt, again).scenario)
    assert _batch_knobs(back) == _batch_knobs(winner)
    if _batch_knobs(winner) != _batch_knobs(imported):
        assert emitted.overrides  # a changed batch is in the patch


def _schedule(s):
    from rlsim.plan.space import scenario_schedule

    return scenario_schedule(s)
