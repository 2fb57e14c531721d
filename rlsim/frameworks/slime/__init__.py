"""slime (THUDM/slime; its derivatives vime and miles launch the same way) as a framework adapter
(:data:`ADAPTER`): :mod:`~rlsim.frameworks.slime.mapping` reads a launch script running ``train.py`` or
``train_async.py`` into a scenario (its docstring says what was read, at which commit; ``defaults.yaml`` holds the
flags' defaults), :mod:`~rlsim.frameworks.slime.emit` writes a planned scenario back as slime flags.

May import: rlsim.frameworks' shared modules (adapter, basic, common, launch, sglang) and the layers below
frameworks.
"""

from __future__ import annotations

from rlsim.frameworks.basic import PackageAdapter
from rlsim.frameworks.slime import emit, mapping


class Slime(PackageAdapter):
    """slime's ``train.py`` / ``train_async.py``: argparse ``--flag value`` words whose booleans are store_true
    flags."""

    name = "slime"
    overrides = "flags"
    switch_flags = True
    mapping = mapping
    emitter = emit


ADAPTER = Slime()
