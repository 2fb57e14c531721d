"""The answers a person reads, built on runs: one formatter for an answer (``answer``), the decision rule
between two configurations (``decide``), sweeps over a grid (``sweep``) and the HTML reports (``report``,
``report_answer``). The planner (rlsim.plan) is the search built on these.

May import: rlsim.schema, rlsim.host, rlsim.io, rlsim.workload, rlsim.engine, rlsim.catalog, rlsim.trainer,
rlsim.scenario, rlsim.learning, rlsim.run, rlsim.errors, rlsim.phases.
"""
