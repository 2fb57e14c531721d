"""Published-run accuracy: rlsim's predictions of RL step times and generation throughput that others published,
against the measured numbers, in sample and cross-validated (``rlsim-calibrate published``).

Modules: ``tables`` (the project's copies in ``data/``, reading CSVs of published rows, the accuracy keys),
``steps`` (RL step times: a row into a scenario, its prediction, the error), ``generation`` (vLLM output tokens/s:
a row into one engine replica serving the benchmark), ``costs`` (the cost coefficients every row gets and fitting
them over both tables), ``cv`` (leave-one-group-out accuracy), ``anchored`` (accuracy anchored on one row of each
group), ``cli`` (the command). ``data/`` holds the development sets and the fitted cost set, with a README on their
sources.

May import: calibrate, calibrate.anchor, rlsim
"""
