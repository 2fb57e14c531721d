"""Fit rlsim's learning model (rlsim.learning.model) from run logs. Pure functions: numpy and scipy, no file I/O.

Modules (docs/reference.md sections 3-5):

* ``curve``: :func:`~calibrate.learning_fit.curve.fit_sigmoid`, ScaleRL's sigmoid in cumulative samples (the
  formula itself is rlsim's: :func:`rlsim.learning.curve.metric_at`); samples-to-target, measured (first crossing) and
  from a fitted curve;
* ``batch``: the critical-batch fit ``E(B) = E_min (1 + B / B_crit) ** p`` and the measured table;
* ``invariance``: how far apart learning curves at different batches are along samples;
* ``noise``: the two-batch gradient-noise estimates per step and B_simple pooled over runs;
* ``fit``: :func:`~calibrate.learning_fit.fit.fit_learning`, all of the above from run logs grouped by batch, and
  the ``learning`` dict of a profile (``rlsim-calibrate fit-learning``);
* ``checks``: the input checks they share.
"""
