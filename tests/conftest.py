from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"


@pytest.fixture
def scenario_path():
    def get(name: str) -> Path:
        return SCENARIOS / f"{name}.yaml"

    return get
