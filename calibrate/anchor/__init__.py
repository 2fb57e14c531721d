"""One-step anchoring: rlsim anchored to a user's own cluster and release by one measured step of their job
(``rlsim-calibrate anchor``).

Modules: ``fit`` (which coefficients a step time or its phases fit, the fit, the profile it writes and the summary
a person reads), ``source`` (the measured step: from a framework's metrics log or typed), ``cli`` (the command).

May import: calibrate, calibrate.importers, rlsim
"""
