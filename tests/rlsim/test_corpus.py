"""Public launch files imported unedited (tests/rlsim/fixtures/configs/corpus.yaml): each as expected, refused
with its reason, or a known gap (strict xfail, so a fix shows up); each top folder's README names the commit."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import rlsim
from rlsim.frameworks.adapter import ImportConfigError
from rlsim.frameworks.config_import import import_config

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
CORPUS = yaml.safe_load((CONFIGS / "corpus.yaml").read_text())


def _fields(scn) -> dict:
    return {
        "prompts": scn.workload.prompts_per_step,
        "group": scn.workload.group_size,
        "gpus": scn.hardware.num_gpus
        + ((scn.reward.num_gpus or 0) if scn.reward.model else 0)
        + (scn.algorithm.critic_gpus or 0)
        + (scn.algorithm.reference_gpus or 0),
        "engine_tp": scn.engine.tensor_parallel_size,
        "response_cap": scn.workload.max_response_tokens,
        "model": scn.model.name,
        "schedule": scn.schedule.mode,
    }


def _params():
    for name, entry in CORPUS.items():
        marks = [pytest.mark.xfail(strict=True, reason=entry["gap"])] if "gap" in entry else []
        yield pytest.param(name, entry, marks=marks, id=name)


@pytest.mark.parametrize(("name", "entry"), list(_params()))
def test_corpus_file_imports_unedited_as_expected(name, entry, monkeypatch):
    """From the corpus folder, as a user runs it from the repository's root: the entry's ``set`` items are the
    launch facts its source's documented command gives (paths among them relative to the corpus folder)."""
    monkeypatch.chdir(CONFIGS)
    path = CONFIGS / name
    sets, rlsim_sets = entry.get("set", {}), entry.get("scenario_set", {})
    if "refused" in entry:
        with pytest.raises(ImportConfigError, match=entry["refused"]):
            import_config(path, entry.get("format"), sets, rlsim_sets)
        return
    # an entry without format: the file's entry point or keys name it (rlsim.frameworks.detect)
    scn = rlsim.from_dict(import_config(path, entry.get("format"), sets, rlsim_sets).scenario)
    got = _fields(scn)
    assert {k: got[k] for k in entry["expect"]} == entry["expect"]


def test_the_corpus_names_its_sources():
    for folder in {Path(name).parts[0] for name in CORPUS}:
        assert (CONFIGS / folder / "README.md").is_file(), folder
    for name in CORPUS:
        assert (CONFIGS / name).is_file(), name
