"""rlsim.io.numbers: one definition of a number, for run logs, prices and answers."""

import math

import numpy as np
import pytest

from rlsim.io.numbers import finite, is_real


@pytest.mark.parametrize(
    "value, real, as_finite",
    [
        (3, True, 3.0),
        (2.5, True, 2.5),
        (np.float64(1.5), True, 1.5),
        (np.int64(7), True, 7.0),
        (math.nan, True, None),
        (math.inf, True, None),
        (-math.inf, True, None),
        (10**400, False, None),  # JSON allows it; no float holds it
        (True, False, None),  # an int to Python, never a measurement
        (np.bool_(True), False, None),
        ("1.5", False, None),
        (None, False, None),
        ([1.0], False, None),
    ],
)
def test_what_counts_as_a_number(value, real, as_finite):
    assert is_real(value) is real
    assert finite(value) == as_finite
    assert finite(value) is None or type(finite(value)) is float
