"""The current code reproduces the golden outputs of every built-in scenario byte for byte (tests/rlsim/golden).

A deliberate model change regenerates them in one command from the repository root, which lists what changed:

    python -m tests.rlsim.golden --update
"""

import pytest

from tests.rlsim import golden


@pytest.mark.parametrize("name", golden.scenario_names())
def test_golden_outputs_are_reproduced_byte_for_byte(name):
    produced = golden.produce(name)
    diff = golden.differences(name, produced)
    assert not diff, (
        f"{name}: {', '.join(diff)} differ from tests/rlsim/golden; if the model changed on purpose, run "
        "`python -m tests.rlsim.golden --update` and commit the files with the change"
    )


def test_every_built_in_scenario_has_golden_files_and_none_is_stale():
    names = golden.scenario_names()
    assert {p.stem for p in golden.SCENARIOS.glob("*.yaml")} <= set(names)
    kept = {p.name for p in golden.GOLDEN.iterdir() if p.suffix in (".json", ".csv", ".sha256")}
    wanted = {f"{n}{ext}" for n in names for ext in (".summary.json", ".steps.csv", ".sha256")}
    assert kept == wanted
