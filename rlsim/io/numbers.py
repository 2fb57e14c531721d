"""What counts as a number in rlsim's inputs and outputs, defined once.

A number is a real value a float can hold: an int, a float or a numpy number; never a bool (``True`` is an int to
Python, never a measurement to rlsim), never a string, never an integer past the largest float (JSON allows
``10**400``). :func:`is_real` admits NaN and the infinities; :func:`finite` does not.
"""

from __future__ import annotations

import math
import numbers
import sys
from typing import Any


def is_real(value: Any) -> bool:
    """Whether ``value`` is a number a float can hold (NaN and infinities included)."""
    t = type(value)
    if t is float:
        return True
    if t is int:
        return abs(value) <= sys.float_info.max
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    return not isinstance(value, numbers.Integral) or abs(int(value)) <= sys.float_info.max


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite number (:func:`is_real`), else None (None, NaN, infinities, bools,
    strings and anything else)."""
    if not is_real(value):
        return None
    x = float(value)
    return x if math.isfinite(x) else None
