from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"


@pytest.fixture
def scenario_path():
    def get(name: str) -> Path:
        return SCENARIOS / f"{name}.yaml"

    return get


@pytest.fixture
def validated(monkeypatch):
    """Every scenario the cross-field rules see (each from_dict ends there), in order: tests that count how often
    a value is validated on its way to the engine."""
    from rlsim.scenario import validation

    seen = []
    check = validation.validate

    def counting(s):
        seen.append(s)
        check(s)

    monkeypatch.setattr(validation, "validate", counting)
    return seen
