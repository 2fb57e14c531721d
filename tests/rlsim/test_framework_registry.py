"""The framework adapters (rlsim.frameworks.registry; issue 29, must-show 4): one package per framework holds its
adapter (rlsim.frameworks.adapter.FrameworkAdapter): import mapping, emit inverse, run-log importer and docs table;
the registry finds them, every command takes its names from it, and a new framework is its adapter plus its
fixtures (shown with tests/rlsim/fixtures/toyrl)."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from rlsim.cli import main
from rlsim.frameworks import registry
from rlsim.frameworks.adapter import EmitContext, FrameworkAdapter, Row, Source
from rlsim.frameworks.config_import import import_config
from rlsim.frameworks.docs import render_docs
from rlsim.frameworks.emit import emit, parse_emitted_overrides
from rlsim.scenario import from_dict, with_overrides

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs" / "import-config.md"
TOY = Path(__file__).parent / "fixtures" / "toyrl"


def test_the_builtin_adapters_are_found_with_every_part():
    assert registry.names()[:4] == ("verl", "trl", "openrlhf", "nemo-rl")
    for name in ("verl", "trl", "openrlhf", "nemo-rl"):
        adapter = registry.get(name)
        assert isinstance(adapter, FrameworkAdapter) and adapter.name == name
        assert adapter.table and adapter.version_read and adapter.docs_table().startswith("| framework key |")
        assert importlib.import_module(type(adapter).__module__).ADAPTER is adapter  # its package's ADAPTER
        assert importlib.import_module(adapter.log_importer).FORMAT.name == name  # its log reader (frameworks.logs)


def test_the_docs_tables_are_the_generated_ones():
    """docs/import-config.md holds each adapter's table between generated markers, as the adapter renders it now
    (python scripts/framework_docs.py rewrites them)."""
    text = DOCS.read_text()
    assert render_docs(text) == text, "run: python scripts/framework_docs.py"
    for name in ("verl", "trl", "openrlhf", "nemo-rl"):
        assert f"<!-- generated: {name} -->" in text


def test_the_docs_script_finds_and_rewrites_stale_tables(tmp_path):
    """scripts/framework_docs.py --check fails on a page whose generated table is stale; without --check it
    rewrites the page to what the adapters render (the library only returns the text)."""
    stale = tmp_path / "import-config.md"
    stale.write_text(
        DOCS.read_text().replace("| `data.train_batch_size` | `1024` |", "| `data.train_batch_size` | `1` |")
    )
    script = [sys.executable, str(ROOT / "scripts" / "framework_docs.py"), "--docs", str(stale)]
    check = subprocess.run([*script, "--check"], capture_output=True, text=True)
    assert check.returncode == 1 and "out of date" in check.stdout
    subprocess.run(script, capture_output=True, text=True, check=True)
    assert stale.read_text() == DOCS.read_text()
    assert subprocess.run([*script, "--check"], capture_output=True, text=True).returncode == 0


@pytest.fixture
def toyrl(monkeypatch):
    monkeypatch.syspath_prepend(str(TOY))
    adapter = registry.register(importlib.import_module("toyrl").ADAPTER)
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
    assert toyrl.docs_table().splitlines()[2] == "| `prompts` | `16` | `workload.prompts_per_step` | P |"
    assert out.exists() and from_dict(__import__("yaml").safe_load(out.read_text())).workload.group_size == 4


def test_an_adapter_missing_a_part_is_refused():
    """A required method missing (abc), a required class attribute unset, or not an adapter at all."""

    class HalfRl(FrameworkAdapter):
        name, table, version_read = "halfrl", (Row("k", None, "model", "-"),), "halfrl 0"

        def emit_keys(self, ctx: EmitContext) -> dict:
            return {}

    class NoTableRl(HalfRl):
        table = ()

        def to_scenario(self, source: Source) -> tuple[dict, list[str]]:
            return {}, []

    with pytest.raises(TypeError, match="to_scenario"):
        HalfRl()
    with pytest.raises(TypeError, match="NoTableRl: sets no table"):
        NoTableRl()
    with pytest.raises(TypeError, match="is not a FrameworkAdapter"):
        registry.register(object())
    assert "halfrl" not in registry.names()


def test_the_registry_lists_the_adapters_when_run():
    """`python -m rlsim.frameworks.registry` lists the adapters, the built-in ones in their order."""
    out = subprocess.run(
        [sys.executable, "-m", "rlsim.frameworks.registry"], capture_output=True, text=True, check=True
    )
    names = ["verl", "trl", "openrlhf", "nemo-rl", "slime", "skyrl", "prime-rl", "areal", "roll"]
    assert [line.split(":")[0] for line in out.stdout.splitlines()] == names
