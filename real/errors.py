"""Errors of the real-run package: bad input reported by ``rlsim-real`` in one line with exit status 2."""

from rlsim.errors import RlsimError


class RealError(RlsimError):
    """Bad input to a real run or benchmark (unknown task, missing model folder, missing engine, ...)."""
