"""The answers a person reads, built on runs: one formatter for an answer (``answer``), the decision rule
between two configurations (``decide``), sweeps over a grid (``sweep``) and the HTML reports (``report``,
``report_answer``). The planner (rlsim.plan) is the search built on these.

May import: everything but rlsim.plan, rlsim.frameworks and rlsim.cli.
"""
