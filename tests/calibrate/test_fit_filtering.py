"""``rlsim-calibrate fit-filtering`` (calibrate/learning/filtering.py): the power of the keep rate by which DAPO's
dynamic sampling scales the trained samples to target, from runs at one batch with and without it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from calibrate import CalibrateError
from calibrate.learning.filtering import fit_filtering

BATCH, MID, TARGET = 128, 8000.0, 0.8


def run_log(mid: float, keep: float | None, steps: int = 200, seed: int = 0) -> list[dict]:
    """A run whose metric is a sigmoid in trained samples with midpoint ``mid``; with ``keep`` each step also
    generated BATCH / keep responses (a filtered run's log)."""
    rng = np.random.default_rng(seed)
    recs, generated = [], 0
    for t in range(1, steps + 1):
        s = t * BATCH
        rec = {"step": t, "cumulative_samples": s, "responses": BATCH, "wall_s": float(t)}
        rec["eval_metric"] = float(1 / (1 + (mid / s) ** 3) + 0.003 * rng.normal()) if t % 5 == 0 else None
        if keep is not None:
            rec["generated_responses"] = int(round(BATCH / keep))
            generated += rec["generated_responses"]
            rec["cumulative_generated"] = generated
        recs.append(rec)
    return recs


def test_the_power_is_recovered_from_runs_with_and_without_the_filter():
    """Filtered runs at keep 0.25 whose trained samples are 0.25 ** 0.6 of the plain runs': power 0.6 within 0.05,
    the generated samples 1 / keep as many as the trained."""
    keep, power = 0.25, 0.6
    plain = [run_log(MID, None, seed=s) for s in range(3)]
    filtered = [run_log(MID * keep**power, keep, seed=10 + s) for s in range(3)]
    fit = fit_filtering(plain + filtered, TARGET)
    assert fit.keep_rate == pytest.approx(keep, rel=0.01)
    assert fit.power == pytest.approx(power, abs=0.05)
    assert fit.filtered_generated == pytest.approx(fit.filtered_samples / keep, rel=0.02)
    trained, generated = fit.predicted(fit.power)
    assert trained == pytest.approx(fit.filtered_samples, rel=0.01)


def test_a_power_outside_the_two_readings_is_clipped_with_a_note():
    plain = [run_log(MID, None)]
    worse = [run_log(MID * 1.3, 0.5)]  # filtering made each trained sample worth less: a negative power
    fit = fit_filtering(plain + worse, TARGET)
    assert fit.power == 0.0 and "clipped" in fit.notes[0]


@pytest.mark.parametrize(
    "runs, match",
    [
        ([run_log(MID, None)], "no run with dynamic sampling"),
        ([run_log(MID, 0.5)], "no run without dynamic sampling"),
        ([run_log(MID, None), run_log(MID, 0.5, steps=30)], "never reaches"),
        ([run_log(MID, None), run_log(MID, 0.5, steps=5)], "evaluate at least twice"),
    ],
)
def test_runs_that_cannot_tell_are_refused(runs, match):
    with pytest.raises(CalibrateError, match=match):
        fit_filtering(runs, TARGET)


def test_runs_at_two_batches_are_refused():
    other = [dict(r, responses=64) for r in run_log(MID, 0.5)]
    with pytest.raises(CalibrateError, match="one batch"):
        fit_filtering([run_log(MID, None), other], TARGET)


def test_the_command_prints_the_fit_and_writes_the_power_into_the_profile(tmp_path):
    from rlsim.run.profile import load_profile
    from tests.calibrate.files import write_profile, write_runlog

    learning = {"version": 1, "metric": {"initial": 0.0, "asymptote": 1.0, "mid_samples": MID, "exponent": 3.0}}
    prof = write_profile(tmp_path / "profile.json", dict(learning, target=TARGET))
    runs = [run_log(MID, None), run_log(MID * 0.25**0.5, 0.25, seed=3)]
    paths = [write_runlog(tmp_path / f"run{i}.jsonl", recs, f"run{i}") for i, recs in enumerate(runs)]
    cmd = [sys.executable, "-m", "calibrate.cli", "fit-filtering", *paths, "--target", str(TARGET)]
    out = subprocess.run([*cmd, "--profile", str(prof), "-o", str(prof)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "keep rate 0.250" in out.stdout and "(default)" in out.stdout
    power = load_profile(prof).learning["filtered_signal_power"]
    assert power == pytest.approx(0.5, abs=0.05)
    before = prof.read_text()
    only_plain = [*cmd[:4], paths[0], "--target", str(TARGET), "--profile", str(prof), "-o", str(prof)]
    bad = subprocess.run(only_plain, capture_output=True, text=True)
    assert bad.returncode == 2 and "no run with dynamic sampling" in bad.stderr and prof.read_text() == before
