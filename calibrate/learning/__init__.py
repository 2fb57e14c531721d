"""Learning fits: rlsim's learning model (rlsim.learning.model) fitted from run logs, and their commands.

Pure functions of run-log records (numpy and scipy, no file I/O) but for ``cli``. Modules (docs/reference.md
sections 3-5):

* ``curve``: :func:`~calibrate.learning.curve.fit_sigmoid`, ScaleRL's sigmoid in cumulative samples (the
  formula itself is rlsim's: :func:`rlsim.learning.curve.metric_at`); samples-to-target, measured (first crossing) and
  from a fitted curve;
* ``batch``: the critical-batch fit ``E(B) = E_min (1 + B / B_crit) ** p`` and the measured table;
* ``ceiling``: whether the curve's ceiling moves with the batch;
* ``family``: the curve family over a knob (batch, G or staleness): which of S_mid, b and A it moves, and the table
  of ``learning.family`` (``fit-learning --family``);
* ``invariance``: how far apart learning curves at different batches are along samples;
* ``noise``: the two-batch gradient-noise estimates per step and B_simple pooled over runs;
* ``seeds``: samples-to-target over seeds, its spread and stall share;
* ``fit``: :func:`~calibrate.learning.fit.fit_learning`, all of the above from run logs grouped by batch, and
  the ``learning`` dict of a profile (``rlsim-calibrate fit-learning``);
* ``staleness``, ``groups``, ``filtering``: ``fit-staleness``, ``fit-groups``, ``fit-filtering``;
* ``checks``: the input checks they share (numbers, curves, targets, a run log's batch and evaluated points);
* ``cli``: the four commands.

May import: calibrate, rlsim
"""
