"""calibrate: fit rlsim's cost and learning models from measurements and validate its predictions.

One package per topic, each with its part of the ``rlsim-calibrate`` command line in its ``cli`` module: ``bench``
(bench tables and the cost fit), ``runs`` (real runs: their fit, validation and its report), ``learning`` (the
learning fits), ``published`` (accuracy on published runs, with its data), ``importers`` (frameworks' logs into run
logs), ``anchor`` (one measured step of a user's job into a profile), ``loop`` (predict before you run, on this
machine), ``vllm_check`` (vLLM's own benchmark against the engine model). This module holds
:class:`CalibrateError`, the one error type of them all; ``cli`` puts the packages' commands on one parser.
calibrate never imports torch, vllm, transformers or real: it runs real's commands as programs.

Each package's docstring ends with the first-party modules its modules may import (at module level, under
TYPE_CHECKING or in a function), checked by tests/calibrate/test_packages.py: a name allows that module and the
modules under it, except ``calibrate``, which allows this module alone; a package's own modules are always allowed.

May import: rlsim, calibrate.anchor, calibrate.bench, calibrate.importers, calibrate.learning, calibrate.loop,
calibrate.published, calibrate.runs, calibrate.vllm_check
"""

from rlsim.errors import RlsimError


class CalibrateError(RlsimError):
    """Input that cannot be fitted, imported or validated (too few points, NaN times, mixed devices, ...): bad input
    reported by ``rlsim-calibrate`` in one line with exit status 2."""
