import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"


def load_script(name: str) -> ModuleType:
    """scripts/<name>.py as a module (the scripts are not a package), run up to its ``__main__`` block."""
    spec = importlib.util.spec_from_file_location(f"{name}_script", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
