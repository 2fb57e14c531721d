import os

import pytest


@pytest.fixture(autouse=True)
def _offline_and_cached(tmp_path_factory, monkeypatch):
    """No hub access; models built once per session in a shared cache."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    cache = os.environ.get("RLSIM_TEST_MODEL_CACHE") or str(tmp_path_factory.getbasetemp() / "models")
    monkeypatch.setenv("RLSIM_CACHE_DIR", cache)
