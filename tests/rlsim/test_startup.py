"""What ``rlsim run SCENARIO --json`` loads: only what the command needs, so that it answers in a blink (its
whole-process time is a benchmark: tests/benchmarks/test_bench_startup.py)."""

import json
import subprocess
import sys
from importlib import resources

import pytest
import yaml

from rlsim import catalog
from rlsim.engine import replica as engine
from tests.conftest import ROOT, SCENARIOS

HEAVY = (
    "pandas",
    "pyarrow",
    "plotly",
    "tqdm",
    "rlsim.plan",
    "rlsim.answers.sweep",
    "rlsim.answers.report",
    "rlsim.frameworks",
)


def loaded_by_run(scenario: str) -> set[str]:
    """The modules of HEAVY (and numba, scipy) that a fresh process has loaded after ``rlsim run SCENARIO --json``."""
    code = (
        "import contextlib, io, json, sys\n"
        "from rlsim.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['run', {str(SCENARIOS / scenario)!r}, '--json']) == 0\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'scipy') or m in "
        f"{HEAVY!r})))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    return set(json.loads(run.stdout))


def test_rlsim_run_json_loads_no_tables_plots_or_planner():
    loaded = loaded_by_run("paper_grpo.yaml")
    assert not loaded & set(HEAVY), f"rlsim run --json loaded {sorted(loaded & set(HEAVY))}"


@pytest.mark.skipif(engine.kernel_kind() != "aot", reason="no kernel built ahead of time here")
def test_rlsim_run_json_with_the_built_kernel_does_not_load_numba():
    assert not {m for m in loaded_by_run("small_1gpu.yaml") if m.startswith("numba")}


def test_rlsim_run_json_does_not_load_scipy_even_for_time_to_target_and_its_band():
    assert not {m for m in loaded_by_run("paper_grpo.yaml") if m.startswith("scipy")}


@pytest.mark.skipif(not hasattr(yaml, "CSafeLoader"), reason="PyYAML without libyaml")
@pytest.mark.parametrize("kind", ["gpus", "models", "engines", "prices"])
def test_the_catalog_reads_the_same_with_libyaml(kind):
    text = resources.files("rlsim.catalog").joinpath(f"{kind}.yaml").read_text()
    assert catalog.LOADER is yaml.CSafeLoader
    assert yaml.load(text, Loader=yaml.CSafeLoader) == yaml.safe_load(text)
