"""``rlsim plan``: search batch (P, G), LR rule, schedule, pool split, engine TP, training layout, GPU type and
count for the configuration that reaches the target first or cheapest, and say why in the paper's terms.

* :mod:`rlsim.plan.space`: the axes and the configurations;
* :mod:`rlsim.plan.evaluate`: screening (one short simulation per group sharing a step time) and full
  simulations of the finalists;
* :mod:`rlsim.plan.search`: :func:`plan`, prices, constraints, the winner and the Pareto front;
* :mod:`rlsim.plan.explain`: the explanation against the user's own configuration;
* :mod:`rlsim.plan.output`: plan.csv, plan.json, the HTML report and the emitted framework patch.

May import: rlsim.schema, rlsim.host, rlsim.io, rlsim.workload, rlsim.engine, rlsim.catalog, rlsim.trainer,
rlsim.scenario, rlsim.learning, rlsim.run, rlsim.answers, rlsim.frameworks, rlsim.errors, rlsim.phases.
"""

from rlsim.plan.search import OBJECTIVES, PlanError, PlanResult, pareto_front, plan

__all__ = ["OBJECTIVES", "PlanError", "PlanResult", "pareto_front", "plan"]
