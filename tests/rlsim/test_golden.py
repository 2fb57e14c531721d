"""The current code reproduces the golden outputs of every built-in scenario byte for byte (tests/rlsim/golden),
under both builds of the engine kernel: numba's just-in-time one and the ahead-of-time one (when built here).

A deliberate model change regenerates them in one command from the repository root, which lists what changed:

    python -m tests.rlsim.golden --update
"""

import pytest

from rlsim.engine import replica as engine
from tests.rlsim import golden


def _aot_built() -> bool:
    return engine.aot_kernel() is not None


KERNELS = [
    "jit",
    pytest.param("aot", marks=pytest.mark.skipif(not _aot_built(), reason="no kernel built ahead of time here")),
]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("name", golden.scenario_names())
def test_golden_outputs_are_reproduced_byte_for_byte(name, kernel, monkeypatch):
    monkeypatch.setattr(engine, "_KERNEL", engine._load_kernel(kernel))
    produced = golden.produce(name)
    diff = golden.differences(name, produced)
    assert not diff, (
        f"{name} ({kernel} kernel): {', '.join(diff)} differ from tests/rlsim/golden; if the model changed on "
        "purpose, run `python -m tests.rlsim.golden --update` and commit the files with the change"
    )


def test_every_built_in_scenario_has_golden_files_and_none_is_stale():
    names = golden.scenario_names()
    assert {p.stem for p in golden.SCENARIOS.glob("*.yaml")} <= set(names)
    kept = {p.name for p in golden.GOLDEN.iterdir() if p.suffix in (".json", ".csv", ".sha256")}
    wanted = {f"{n}{ext}" for n in names for ext in (".summary.json", ".steps.csv", ".sha256")}
    assert kept == wanted
