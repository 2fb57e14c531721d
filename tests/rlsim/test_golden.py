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


def test_canonical_decimals_hide_the_last_bits_and_nothing_more():
    """Two runs whose floats differ in the last bit or two (numpy's AVX-512 against its AVX2 maths) write the same
    golden bytes; a difference of one part in 10^9 (far under any change of the model) still shows; integers, run
    ids and version strings are left as they are."""
    a = b"1,sim-3cc03c95f84b,247,0.766966075133489,1e-06,40522.17183477572,vllm 0.32.0\n"
    b = b"1,sim-3cc03c95f84b,247,0.7669660751334891,1e-06,40522.17183477572,vllm 0.32.0\n"
    assert golden.canonical(a) == golden.canonical(b)
    assert golden.canonical(b) == b"1,sim-3cc03c95f84b,247,0.766966075133,1e-06,40522.1718348,vllm 0.32.0\n"
    c = b.replace(b"0.7669660751334891", b"0.7669660758")
    assert golden.canonical(c) != golden.canonical(b)
    assert golden.canonical(b'{"steps": 20, "x": -2.5e+20}') == b'{"steps": 20, "x": -2.5e+20}'
