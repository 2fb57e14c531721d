"""Bench fits: the tables ``rlsim-real bench`` writes, and rlsim's cost model fitted to them.

Modules: ``tables`` (reading bench tables and model folders, with input checks), ``fit`` (each phase's roofline
coefficients with uncertainty, the range fitted over and the held-out error: a profile's ``phases``), ``optimizer``
(the optimizer's coefficients from ``rlsim-real bench optimizer``: on-device Adam, the offload copies, host Adam,
which the train fit holds fixed). Its command is
``rlsim-calibrate fit`` (calibrate.runs.cli), which adds the reference runs' fit.

May import: calibrate, rlsim
"""
