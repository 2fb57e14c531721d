"""The framework adapters (rlsim.frameworks.registry; issue 29, must-show 4): one module per framework holds its
import mapping, emit inverse, run-log importer and docs table; the registry finds them, every command takes its
names from it, and a new framework is its module plus its fixtures (shown with tests/rlsim/fixtures/toyrl)."""

from pathlib import Path

import pytest

from rlsim.cli import main
from rlsim.frameworks import registry
from rlsim.frameworks.config_import import import_config
from rlsim.frameworks.emit import emit, parse_emitted_overrides
from rlsim.scenario import from_dict, with_overrides

TOY = Path(__file__).parent / "fixtures" / "toyrl"


def test_the_builtin_adapters_are_found_with_every_part():
    import importlib

    assert registry.names()[:4] == ("verl", "trl", "openrlhf", "nemo-rl")
    for name in ("verl", "trl", "openrlhf", "nemo-rl"):
        adapter = registry.get(name)
        module = adapter.load()
        assert module.ADAPTER is adapter and callable(module.emit_keys) and module.TABLE and module.VERSION_READ
        assert importlib.import_module(adapter.log_importer).FORMAT.name == name  # calibrate's run-log importer


def test_the_docs_tables_are_the_generated_ones():
    """docs/import-config.md holds each adapter's table between generated markers, as the adapter renders it now
    (python -m rlsim.frameworks.registry --write-docs rewrites them)."""
    text = registry.DOCS.read_text()
    assert registry.render_docs(text) == text, "run: python -m rlsim.frameworks.registry --write-docs"
    for name in ("verl", "trl", "openrlhf", "nemo-rl"):
        assert f"<!-- generated: {name} -->" in text


@pytest.fixture
def toyrl(monkeypatch):
    monkeypatch.syspath_prepend(str(TOY))
    adapter = registry.register(registry.Adapter("toyrl", "toyrl", overrides="flags"))
    yield adapter
    registry.unregister("toyrl")


def test_a_new_framework_is_its_module_and_fixtures(toyrl, tmp_path, capsys):
    """Registered, the toy adapter imports through the library and the CLI, emits a plan that imports back, and
    renders its docs table: nothing outside its module and its fixture was touched."""
    scn = from_dict(import_config(TOY / "toyrl.yaml", "toyrl").scenario)
    assert (scn.workload.prompts_per_step, scn.workload.group_size, scn.model.name) == (8, 4, "Qwen2.5-0.5B")
    out = tmp_path / "s.yaml"
    assert main(["import-config", "--format", "toyrl", str(TOY / "toyrl.yaml"), "-o", str(out)]) == 0
    planned = with_overrides(scn, {"workload.prompts_per_step": 32})
    emitted = emit("toyrl", planned, original=TOY / "toyrl.yaml")
    assert emitted.patch == {"prompts": 32} and emitted.overrides == ["--prompts 32"]
    back = from_dict(
        import_config(TOY / "toyrl.yaml", "toyrl", parse_emitted_overrides("toyrl", emitted.overrides)).scenario
    )
    assert back.workload.prompts_per_step == 32
    assert registry.docs_table("toyrl").splitlines()[2] == "| `prompts` | `16` | `workload.prompts_per_step` | P |"
    assert out.exists() and from_dict(__import__("yaml").safe_load(out.read_text())).workload.group_size == 4


def test_an_adapter_missing_a_part_is_refused(monkeypatch, tmp_path):
    (tmp_path / "halfrl.py").write_text("TABLE = ()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="halfrl has no to_scenario"):
        registry.register(registry.Adapter("halfrl", "halfrl"))
    assert "halfrl" not in registry.names()


def test_the_registry_lists_the_adapters_when_run():
    """`python -m rlsim.frameworks.registry` runs the package's module (not a second copy as __main__, whose
    Adapter class the framework modules would not be instances of)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "rlsim.frameworks.registry"], capture_output=True, text=True, check=True
    )
    assert [line.split(":")[0] for line in out.stdout.splitlines()] == ["verl", "trl", "openrlhf", "nemo-rl"]
