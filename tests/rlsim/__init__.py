"""Tests of the rlsim package (the simulator), one file per module or concept."""
