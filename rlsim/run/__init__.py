"""One run: systems in, timeline out, learning on top. ``costs`` prices each phase (roofline or a profile's fitted
coefficients), ``pipeline`` is the SimPy model of a step (rollout, reward, log-prob passes, training, weight sync;
sync or async) on the pools of ``pools`` (tracks, spans, utilization), ``timeline`` caches a scenario's systems
side by the digest of its inputs, ``simulation`` holds the one ``simulate`` and ``predict`` (a timeline plus the
learning model), ``result`` the SimResult, ``profile`` the fitted profile a run may use.

May import: rlsim.schema, rlsim.host, rlsim.io, rlsim.workload, rlsim.engine, rlsim.catalog, rlsim.trainer,
rlsim.scenario, rlsim.learning, rlsim.errors, rlsim.phases.
"""
