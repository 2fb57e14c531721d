"""rlsim-calibrate fit-groups (calibrate/learning/groups.py; issue 33): whether runs at one batch and several
group sizes follow B = P x G alone or the informative-group term, from run logs made by each model."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from calibrate import CalibrateError
from calibrate.learning.groups import ShareSteps, fit_concentration, fit_groups, median_reached
from rlsim.learning.curve import metric_at
from rlsim.learning.groups import group_multiplier, informative_share
from rlsim.learning.model import reference_samples_to_target
from rlsim.scenario import MetricCurve
from tests.conftest import ROOT

CURVE = MetricCurve(initial=0.05, asymptote=0.95, mid_samples=8_000.0, exponent=3.0)
B, TARGET = 128, 0.8


SPREAD = (2.0, 0.3)  # prompt concentration, group correlation of the runs the spread model makes


def run_log(g: int, seed: int, groups: bool, spread: tuple[float, float] | None = None) -> list[dict]:
    """A run at G whose curve is the reference's stretched by the group term (or not; or by the spread model with
    ``spread``), with seeded noise; it logs the step's accuracy and the share of groups whose rewards agree that its
    model implies (the metric read as the pass rate)."""
    n = reference_samples_to_target(CURVE, TARGET)
    stretch = group_multiplier(CURVE, n, g, 8, *(spread or (None, 0.0))) if groups or spread else 1.0
    rng = np.random.default_rng(seed)
    samples = B * np.arange(1, 301)
    metric = np.clip(metric_at(CURVE, samples / stretch) + rng.normal(0.0, 0.003, samples.size), 0.0, 1.0)
    agree = 1.0 - informative_share(metric, g, spread[0] if spread else None)
    return [
        {"step": i + 1, "cumulative_samples": int(s), "eval_metric": float(m), "responses": B, "group_size": g}
        | {"accuracy_train": float(m), "prompts": B // g, "zero_variance_groups": float(z)}
        | ({"eval_metric_initial": CURVE.initial} if i == 0 else {})
        for i, (s, m, z) in enumerate(zip(samples, metric, agree))
    ]


@pytest.mark.parametrize("groups", [True, False])
def test_the_model_the_runs_follow_is_chosen(groups):
    runs = [run_log(g, seed, groups) for seed in range(3) for g in (2, 4, 8, 16)]
    fit = fit_groups(runs, TARGET, reference_group_size=8)
    assert fit.reference_group_size == 8 and fit.runs == {2: 3, 4: 3, 8: 3, 16: 3}
    assert fit.model == ("groups" if groups else "batch")
    chosen, other = fit.rms_log[fit.model], fit.rms_log["batch" if groups else "groups"]
    assert chosen < 0.05 < other


def test_runs_made_by_the_spread_model_choose_it_and_give_its_constants_back():
    runs = [run_log(g, seed, False, SPREAD) for seed in range(3) for g in (2, 4, 8, 16, 32)]
    fit = fit_groups(runs, TARGET, reference_group_size=8)
    assert fit.model == "spread"
    assert fit.rms_log["spread"] < 0.05 < min(fit.rms_log["batch"], fit.rms_log["groups"])
    assert fit.concentration == pytest.approx(SPREAD[0], rel=0.05)
    assert fit.correlation == pytest.approx(SPREAD[1], abs=0.03)


def test_the_concentration_comes_from_drawn_groups():
    """Groups drawn as the spread model says (a pass rate per prompt from Beta(p k, (1 - p) k), G Bernoulli rewards):
    the fit gives k back; drawn with every prompt at p it finds no spread (k at the top of its range)."""
    rng = np.random.default_rng(3)
    for k_true in (1.5, None):
        rows = []
        for _ in range(600):
            p, g = rng.uniform(0.1, 0.9), int(rng.choice([2, 8, 32]))
            q = rng.beta(p * k_true, (1 - p) * k_true, B // g) if k_true else np.full(B // g, p)
            rewards = rng.random((B // g, g)) < q[:, None]
            agree = np.mean(rewards.all(axis=1) | ~rewards.any(axis=1))
            rows.append((p, g, B // g, 1.0 - agree))
        k = fit_concentration(ShareSteps(*np.array(rows).T))
        if k_true:
            assert k == pytest.approx(k_true, rel=0.2)
        else:
            assert k > 100


def test_a_seed_that_never_reaches_counts_as_latest():
    assert median_reached([100.0, None, 300.0]) == 300.0
    assert median_reached([None, None, 300.0]) == float("inf")
    flat = [r | {"eval_metric": 0.1 if r["eval_metric"] is not None else None} for r in run_log(2, 9, False)]
    fit = fit_groups([run_log(8, 0, False), run_log(8, 1, False), run_log(2, 0, False), flat], TARGET, 8)
    assert fit.never == {2: 1, 8: 0}  # the stalled G = 2 run is counted, and said


@pytest.mark.parametrize(
    "runs, match",
    [
        ([run_log(8, 0, False), run_log(8, 1, False)], "every run has G = 8"),
        ([run_log(8, 0, False), [r | {"responses": 256} for r in run_log(4, 1, False)]], "at one batch"),
        ([run_log(8, 0, False), [{k: v for k, v in r.items() if k != "group_size"} for r in run_log(4, 1, False)]],
         "records group_size nowhere"),
    ],
)  # fmt: skip
def test_runs_that_cannot_answer_are_refused_with_what_to_give(runs, match):
    with pytest.raises(CalibrateError, match=match):
        fit_groups(runs, TARGET)


@pytest.mark.parametrize("spread", [None, SPREAD])
def test_the_cli_writes_the_reference_group_size_into_the_profile(tmp_path, spread):
    from tests.calibrate.test_fit_staleness import _profile_with_learning

    full = {"schema_version": 1, "prompt_tokens": 10 * B, "response_tokens": 100 * B, "lr": 1e-6}
    full |= {"reward_mean": 0.5, "wall_s": 1.0, "timing_s": {"rollout": 1.0}}
    dirs = []
    for i, g in enumerate((2, 8, 8, 16) if spread is None else (2, 8, 8, 16, 32)):
        d = tmp_path / f"run{i}"
        d.mkdir()
        recs = [r | full | {"run_id": d.name} for r in run_log(g, i, spread is None, spread)]
        (d / "runlog.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        dirs.append(str(d))
    profile = tmp_path / "profile.json"
    profile.write_text(_profile_with_learning())
    cmd = [sys.executable, "-m", "calibrate.cli", "fit-groups", *dirs, "--target", str(TARGET)]
    out = subprocess.run([*cmd, "--profile", str(profile), "-o", str(tmp_path / "out.json")], cwd=ROOT,
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    learning = json.loads((tmp_path / "out.json").read_text())["learning"]
    assert learning["reference_group_size"] == 8
    if spread is None:
        assert "-> groups" in out.stdout and "group_correlation" not in learning
    else:
        assert "-> spread" in out.stdout
        assert learning["prompt_concentration"] == pytest.approx(SPREAD[0], rel=0.05)
        assert learning["group_correlation"] == pytest.approx(SPREAD[1], abs=0.03)
