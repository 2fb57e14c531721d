"""Errors of calibrate: bad input reported by ``rlsim-calibrate`` in one line with exit status 2."""

from rlsim.errors import RlsimError


class CalibrateError(RlsimError):
    """Input that cannot be fitted, imported or validated (too few points, NaN times, mixed devices, ...)."""
