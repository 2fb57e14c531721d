"""rlsim: predict step time, throughput and time-to-target of LLM reinforcement-learning runs.

Python API (mirrors the CLI)::

    import rlsim
    scenario = rlsim.load_scenario("scenarios/paper_grpo.yaml", ["workload.prompts_per_step=1024"])
    result = rlsim.simulate(scenario)
    result.summary()["samples_per_s"]; result.steps  # per-step DataFrame in the run-log schema
"""

__version__ = "0.1.0"

import importlib

from rlsim.errors import ProfileError, RlsimError, ScenarioError
from rlsim.phases import Phase
from rlsim.scenario import from_dict, load_scenario
from rlsim.schema import Scenario

_LAZY = {  # these pull in SimPy (and numba when the kernel is not built ahead of time): `import rlsim.x` stays light
    "simulate": ("rlsim.run.simulation", "simulate"),
    "SimResult": ("rlsim.run.result", "SimResult"),
    "Profile": ("rlsim.run.profile", "Profile"),
    "load_profile": ("rlsim.run.profile", "load_profile"),
}


def __getattr__(name: str):
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'rlsim' has no attribute {name!r}")


__all__ = [
    "Phase",
    "Profile",
    "ProfileError",
    "RlsimError",
    "Scenario",
    "ScenarioError",
    "SimResult",
    "__version__",
    "from_dict",
    "load_profile",
    "load_scenario",
    "simulate",
]
