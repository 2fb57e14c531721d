"""Recorded console logs of public runs (the corpus in ../shared/public_logs/, collected with its expected values by a
pass that did not read this code; its README gives each file's source). They are data fetched from other
repositories, kept beside the checkout and not committed, so these tests skip where the folder is absent.

Each log's chosen step is read through the importer exactly as the collector copied its timers, and `rlsim check`
runs on it with the config that produced it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlsim.cli import main
from rlsim.frameworks.logs.read import import_log

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "public_logs"
pytestmark = pytest.mark.skipif(not (CORPUS / "expected.yaml").is_file(), reason=f"no public-log corpus at {CORPUS}")
# timer key as the collector wrote it -> the phase the importer reads it into
VERL_PHASES = {
    "timing_s/gen": "rollout",
    "timing_s/reward": "reward",
    "timing_s/old_log_prob": "old_logprob",
    "timing_s/ref": "ref_logprob",
    "timing_s/values": "values",
    "timing_s/update_critic": "train_critic",
    "timing_s/update_actor": "train_actor",
}


def _entries(framework: str) -> list[dict]:
    if not (CORPUS / "expected.yaml").is_file():
        return []
    entries = yaml.safe_load((CORPUS / "expected.yaml").read_text())["entries"]
    return [e for e in entries if e["framework"] == framework and (CORPUS / e["log"]).is_file()]


@pytest.mark.parametrize("entry", _entries("verl"), ids=lambda e: e["id"])
def test_verl_console_logs_read_as_the_collector_copied_them(entry):
    result = import_log(CORPUS / entry["log"], "verl", prompts_per_step=1, group_size=1)
    by_step = {r["step"]: r for r in result.records}
    for key in ("chosen_step", "reference_normal_step"):
        want = entry[key]
        rec = by_step[want["step"]]
        for timer, phase in VERL_PHASES.items():
            if timer in want["timers"]:
                assert rec["timing_s"][phase] == pytest.approx(float(want["timers"][timer]), abs=5e-4)
        testing = float(want["timers"].get("timing_s/testing", 0.0))
        # validation runs inside verl's step timer; the step time excludes it
        assert rec["step_time_s"] == pytest.approx(float(want["timers"]["timing_s/step"]) - testing, abs=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("entry", _entries("verl"), ids=lambda e: e["id"])
def test_rlsim_check_runs_on_the_recorded_verl_logs(entry, capsys):
    code = main(["check", str(CORPUS / entry["log"]), "--config", str(CORPUS / entry["config"]), "--gpu", "A100-80GB"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "phase" in out and "measured s" in out and "out of line: " in out
