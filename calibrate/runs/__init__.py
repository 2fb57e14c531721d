"""Real-run fits and validation: real runs (``rlsim-real train`` directories or imported logs) as calibrate reads
them, what only they show fitted into a profile, and the profile's predictions compared with them.

Modules: ``run`` (a run directory: its log, its setup as a scenario, what it measured), ``lengths`` (the
response-length model), ``learning`` (the learning model of the reference runs), ``fit`` (``fit --runs``: lengths,
reward and glue, in-loop factors, the learning model, the setup as a scenario), ``validate`` (predicted vs measured
per run and per batch), ``report`` (validate's HTML page), ``cli`` (``rlsim-calibrate fit``, whose bench part is
calibrate.bench's, and ``validate``).

May import: calibrate, calibrate.bench, calibrate.learning, rlsim
"""
