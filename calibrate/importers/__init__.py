"""``rlsim-calibrate import``: the per-step metrics that real RL frameworks log (verl, OpenRLHF, TRL, NeMo RL) into
rlsim run logs (:mod:`rlsim.io.runlog`).

The reading lives in rlsim (:mod:`rlsim.frameworks.logs`: one mapping module per framework, its docstring the rules
for counts, tokens, ``wall_s`` and ``source_metrics``), shared with ``rlsim check``. Modules here: ``convert``
(:func:`~calibrate.importers.convert.import_log`: rlsim's reader raising :class:`~calibrate.CalibrateError`;
:func:`~calibrate.importers.convert.write_runlog`) and ``cli`` (``rlsim-calibrate import``).

May import: calibrate, rlsim
"""
