"""calibrate: fit rlsim's cost and learning models from measurements and validate its predictions.

Never imports torch or vLLM. Holds :class:`CalibrateError`, the one error type of calibrate.
"""

from rlsim.errors import RlsimError


class CalibrateError(RlsimError):
    """Input that cannot be fitted, imported or validated (too few points, NaN times, mixed devices, ...): bad input
    reported by ``rlsim-calibrate`` in one line with exit status 2."""
