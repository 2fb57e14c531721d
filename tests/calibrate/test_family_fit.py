"""fit-learning --family (calibrate.learning.family, issue 59): per-knob-value sigmoids with a shared R0, which of
S_mid, b and A moved beyond their errors, and the table rlsim's learning.family reads, end to end on run
directories. The runs are drawn (seeded noise) from curves whose S_mid and A move with the batch and whose b does
not: the fit must recover the moved ratios within their errors and report b as not moved."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import rlsim
from calibrate.learning.family import fit_family
from rlsim.learning.model import samples_to_target
from rlsim.run.profile import load_profile
from tests.calibrate.files import write_profile, write_runlog
from tests.conftest import SCENARIOS

R0, EXPONENT, TARGET = 0.2, 1.5, 0.6
# per batch: S_mid and the ceiling A (ScaleRL's shape: the larger batch slower early, higher at the end)
TRUE = {256: (4.0e4, 0.70), 1024: (5.0e4, 0.80), 4096: (8.0e4, 0.86)}


def run_log(batch: int, seed: int, exponent: float = EXPONENT, noise: float = 0.004) -> list[dict]:
    mid, top = TRUE[batch]
    rng = np.random.default_rng(1000 * seed + batch)
    recs = []
    steps = int(12 * 5e4 / batch)
    every = max(1, 4096 // batch)
    for t in range(1, steps + 1):
        s = t * batch
        metric = R0 + (top - R0) / (1 + (mid / s) ** exponent) + noise * rng.normal()
        recs.append(
            {
                "step": t,
                "cumulative_samples": s,
                "responses": batch,
                "eval_metric": float(metric) if t == 1 or t % every == 0 else None,
                "eval_metric_initial": R0,
                "wall_s": 10.0 * t,
            }
        )
    return recs


def test_the_family_fit_recovers_what_moved_and_reports_b_unmoved():
    runs = [run_log(b, seed) for b in TRUE for seed in range(3)]
    fam = fit_family(runs, TARGET, "batch", 1024, boots=40)
    assert fam.method.startswith("the fit's covariance") and fam.initial == pytest.approx(R0)
    mid, exp, gain = (fam.shifts[p] for p in ("mid_samples", "exponent", "gain"))
    assert mid.moved and gain.moved and not exp.moved
    for b, (m, top) in TRUE.items():
        want_mid, want_gain = m / 5.0e4, (top - R0) / (0.80 - R0)
        # within three of their errors (and the errors small: a few percent)
        assert abs(math.log(mid.ratios[b] / want_mid)) <= 3 * mid.log_errors[b] + 1e-9
        assert abs(math.log(gain.ratios[b] / want_gain)) <= 3 * gain.log_errors[b] + 1e-9
        assert mid.log_errors[b] < 0.05 and gain.log_errors[b] < 0.05
    table = fam.table()
    assert table["values"] == [0.25, 1.0, 4.0] and "exponent" not in table and len(table["gain"]) == 3


def test_the_family_fit_with_one_seed_per_value_and_the_exponent_moving():
    """One seed per batch (the covariance alone); b 1.5 at B = 256 and 2.0 at 1,024: b moves (ratio 4 / 3)."""
    runs = [run_log(256, 0), run_log(1024, 0, exponent=2.0)]
    fam = fit_family(runs, TARGET, "batch")
    assert fam.reference == 256 and fam.method.startswith("the fit's covariance")
    assert fam.shifts["exponent"].moved and fam.shifts["gain"].moved
    b = fam.shifts["exponent"]
    assert abs(math.log(b.ratios[1024] / (2.0 / 1.5))) <= 3 * b.log_errors[1024]


def test_fit_learning_family_end_to_end_on_run_directories(tmp_path):
    """`rlsim-calibrate fit-learning --family` on run directories writes learning.family.batch; rlsim then predicts
    a batch between the fitted ones (2,048) from the table: S_mid and A read in log batch halfway between 1,024's
    and 4,096's, so N* there is the inverse of the curve with S_mid = sqrt(5e4 x 8e4) = 63,246 and A = 0.83
    (the gain share halfway: (0.6 + 0.66) / 2 / 0.6 = 1.05, A = 0.2 + 1.05 x 0.6 = 0.83)."""
    prof_path = write_profile(tmp_path / "profile.json")
    paths = []
    for b in TRUE:
        for seed in range(5):
            d = tmp_path / f"run{b}-{seed}"
            d.mkdir()
            write_runlog(d / "runlog.jsonl", run_log(b, seed), f"run{b}-{seed}")
            (d / "config.json").write_text(json.dumps({"lr_rule": "sqrt"}))
            paths.append(str(d))
    out = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "calibrate.cli", "fit-learning", "--target", str(TARGET), "--profile", str(prof_path)]
    proc = subprocess.run(
        [*cmd, *paths, "--reference-batch", "1024", "--family", "--boots", "30", "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "mid_samples: moved" in proc.stdout and "exponent: not moved" in proc.stdout
    assert "gain: moved" in proc.stdout and "bootstrap over seeds (30 resamples)" in proc.stdout
    learning = load_profile(out).learning
    assert learning["batch_multiplier"] == {"form": "invariant"} and learning["ceilings"] is None
    assert learning["family"]["batch"]["values"] == [0.25, 1.0, 4.0]
    scn = load_profile(out).with_fitted(rlsim.load_scenario(SCENARIOS / "small_1gpu.yaml"), {})
    n = samples_to_target(scn.learning, 2048)
    mid, top = math.sqrt(5.0e4 * 8.0e4), 0.2 + 0.5 * (0.6 + 0.66)
    by_hand = mid * ((top - R0) / (TARGET - R0) - 1.0) ** (-1.0 / EXPONENT)  # the sigmoid's inverse
    assert n.samples == pytest.approx(by_hand, rel=0.05)
    # a typo in the knob: one line, exit 2
    bad = subprocess.run([*cmd, *paths, "--family", "bach", "-o", str(out)], capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid choice: 'bach'" in bad.stderr


def test_fit_learning_family_over_staleness_at_one_batch(tmp_path):
    """Runs at one batch and staleness 0 / 4 whose ceiling drops (a loss that keeps 80% of the gain at k = 4):
    --family (auto) finds the staleness knob and writes learning.family.staleness with a gain column."""
    prof_path = write_profile(tmp_path / "profile.json")
    paths = []
    for k, keep in ((0, 1.0), (4, 0.8)):
        for seed in range(3):
            recs = run_log(1024, seed + 10 * k)
            for r in recs:
                r["staleness"] = k
                if r["eval_metric"] is not None:
                    r["eval_metric"] = R0 + keep * (r["eval_metric"] - R0)
            paths.append(write_runlog(tmp_path / f"k{k}-{seed}.jsonl", recs, f"k{k}-{seed}"))
    out = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "calibrate.cli", "fit-learning", "--target", "0.6", "--profile", str(prof_path)]
    proc = subprocess.run([*cmd, *paths, "--family", "--boots", "20", "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    table = load_profile(out).learning["family"]["staleness"]
    assert table["values"] == [0.0, 4.0] and table["gain"][1] == pytest.approx(0.8, abs=0.03)


def test_a_stalled_seed_is_left_out_of_its_values_curve_and_the_knob_must_be_one():
    flat = [dict(r, eval_metric=R0 if r["eval_metric"] is not None else None) for r in run_log(1024, 9)]
    runs = [run_log(b, s) for b in (256, 1024) for s in range(2)] + [flat]
    fam = fit_family(runs, TARGET, "batch", 1024)
    assert fam.runs == {256: 2, 1024: 2} and "1 of 3 runs never reached 0.6" in fam.notes[0]
    assert fam.curves[1024].asymptote == pytest.approx(0.80, abs=0.01)  # not pulled down by the flat seed
    from calibrate import CalibrateError

    with pytest.raises(CalibrateError, match="two or more values"):
        fit_family([run_log(256, 0), run_log(256, 1)], TARGET, "batch")
