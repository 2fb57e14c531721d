"""rlsim-calibrate fit-staleness (calibrate/learning/staleness.py; issue 33): which staleness form runs at
several maximum stalenesses follow, from run logs made by the forms themselves with seeded noise."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from calibrate import CalibrateError
from calibrate.learning.staleness import fit_staleness, profile_learning, run_staleness
from rlsim.learning.curve import metric_at
from rlsim.learning.staleness import retained_gain, with_staleness
from rlsim.scenario import MetricCurve
from tests.conftest import ROOT

CURVE = MetricCurve(initial=0.3, asymptote=0.7, mid_samples=20_000.0, exponent=1.5)
B = 256


def run_log(
    loss: str | None,
    k: int,
    seed: int,
    noise: float = 0.004,
    steps: int = 120,
    form=None,
    stretch: float = 0.0,
    free: float = 0.0,
) -> list[dict]:
    """A run log whose eval_metric follows the curve a loss gives at staleness k (``form``: other constants in its
    place), or, with no loss, the curve stretched by (1 + stretch) ** (k - free) beyond ``free``."""
    curve = CURVE if loss is None else with_staleness(CURVE, loss, k, form)
    rng = np.random.default_rng(seed)
    samples = B * np.arange(1, steps + 1)
    metric = metric_at(curve, samples / (1.0 + stretch) ** max(0.0, k - free)) + rng.normal(0.0, noise, steps)
    return [
        {"step": i + 1, "cumulative_samples": int(s), "eval_metric": float(m), "staleness": min(i, k)}
        for i, (s, m) in enumerate(zip(samples, metric))
    ]


@pytest.mark.parametrize("loss", ["naive_ppo", "decoupled_ppo"])
def test_the_form_the_runs_follow_is_found(loss):
    """A published loss's runs: that loss is chosen (its zero constants beat the fitted form's three on the
    information criterion), and the fitted form, scored too, predicts the stalenesses between within 0.05."""
    runs = [run_log(loss, k, seed) for seed, k in enumerate((0, 0, 2, 2, 8, 8, 16, 16))]
    fit = fit_staleness(runs, initial=CURVE.initial)
    assert fit.loss == loss
    assert fit.runs == {0: 2, 2: 2, 8: 2, 16: 2}
    assert fit.rms[loss] < 0.005  # the noise, 0.004
    assert min(e for f, e in fit.rms.items() if f not in (loss, "fitted")) > 1.3 * fit.rms[loss]
    for k in (4, 12):
        assert retained_gain("x", k, _constants(fit)) == pytest.approx(retained_gain(loss, k), abs=0.05)


def _constants(fit) -> tuple[float, float, float]:
    c = fit.constants
    return (c.free_steps, c.ceiling_loss, c.half_steps)


def test_runs_of_another_threshold_get_their_constants_fitted():
    """Runs that lose nothing up to 2 steps, then 30% of the gain with half of it 3 steps on (neither published
    loss): the fitted form wins, its constants near those, and the profile gets them as learning.staleness_form
    under the loss the runs name."""
    form = (2.0, 0.3, 3.0)
    runs = [run_log("decoupled_ppo", k, seed, form=form) for seed, k in enumerate((0, 0, 1, 1, 4, 4, 8, 8, 16, 16))]
    fit = fit_staleness(runs, initial=CURVE.initial)
    assert fit.loss == "fitted"
    for k in (3, 6, 12, 32):
        assert retained_gain("x", k, _constants(fit)) == pytest.approx(retained_gain("x", k, form), abs=0.03)
    keys = profile_learning(fit, "naive_ppo")
    assert keys["staleness_loss"] == "naive_ppo" and keys["staleness_form"] == pytest.approx(list(_constants(fit)))


def test_runs_whose_ceiling_does_not_move_are_the_stretch_form():
    runs = [run_log(None, k, seed) for seed, k in enumerate((1, 1, 4, 4, 16, 16))]
    fit = fit_staleness(runs, initial=CURVE.initial)
    assert fit.loss == "stretch" and fit.retained[16] == pytest.approx(1.0, abs=0.03)
    assert fit.penalty_per_step < 0.003


def test_slower_runs_with_the_same_ceiling_get_their_stretch_fitted():
    """Runs 3% slower per step of staleness: the stretch form with p near 0.03, written with its penalty."""
    runs = [run_log(None, k, seed, stretch=0.03, steps=300) for seed, k in enumerate((0, 0, 4, 4, 16, 16))]
    fit = fit_staleness(runs, initial=CURVE.initial)
    assert fit.loss == "stretch" and fit.penalty_per_step == pytest.approx(0.03, abs=0.003)
    assert profile_learning(fit)["staleness_penalty_per_step"] == fit.penalty_per_step


def test_a_runs_staleness_is_the_largest_its_log_records():
    assert run_staleness(run_log(None, 3, 0)) == 3
    assert run_staleness([{"step": 1}]) == 0


def test_runs_at_one_staleness_are_refused_with_what_to_give():
    with pytest.raises(CalibrateError, match="maximum staleness 2: give runs at two or more stalenesses"):
        fit_staleness([run_log(None, 2, 0), run_log(None, 2, 1)])


def test_the_cli_writes_the_form_into_the_profile(tmp_path):
    for i, (loss, k) in enumerate([("decoupled_ppo", 0), ("decoupled_ppo", 8), ("decoupled_ppo", 16)]):
        d = tmp_path / f"run{i}"
        d.mkdir()
        full = {"schema_version": 1, "run_id": f"run{i}", "prompts": B // 8, "responses": B, "prompt_tokens": 10 * B}
        full |= {
            "response_tokens": 100 * B,
            "lr": 1e-6,
            "reward_mean": 0.5,
            "wall_s": 1.0,
            "timing_s": {"rollout": 1.0},
        }
        recs = [r | full for r in run_log(loss, k, i)]
        (d / "runlog.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    profile = tmp_path / "profile.json"
    profile.write_text(_profile_with_learning())
    cmd = [sys.executable, "-m", "calibrate.cli", "fit-staleness", *(str(tmp_path / f"run{i}") for i in range(3))]
    out = subprocess.run(
        [*cmd, "--initial", "0.3", "--profile", str(profile), "-o", str(tmp_path / "out.json")],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "-> decoupled_ppo" in out.stdout
    assert json.loads((tmp_path / "out.json").read_text())["learning"]["staleness_loss"] == "decoupled_ppo"
    typo = subprocess.run([*cmd, "--intial", "0.3"], cwd=ROOT, capture_output=True, text=True)
    assert typo.returncode != 0 and "unrecognized arguments: --intial" in typo.stderr


def _profile_with_learning() -> str:
    """A profile with one fitted phase and a learning model (rlsim.run.profile), as fit-learning leaves it."""
    from rlsim.run.profile import LEARNING_VERSION, PhaseFit, Profile

    keys = ("device", "engine", "engine_version", "torch_version", "model", "dtype", "date", "command")
    phases = {"train_actor": PhaseFit("roofline", {"train_compute_efficiency": 0.3})}
    learning = {
        "version": LEARNING_VERSION,
        "reference_batch": B,
        "metric": {"initial": 0.3, "asymptote": 0.7, "mid_samples": 20000.0, "exponent": 1.5},
        "target": 0.6,
    }
    return Profile(provenance=dict.fromkeys(keys, "test"), phases=phases, learning=learning).dumps()


def test_the_written_profile_puts_the_form_in_the_scenario(tmp_path):
    import rlsim
    from rlsim.run.profile import Profile, load_profile

    path = tmp_path / "p.json"
    path.write_text(_profile_with_learning())
    prof = load_profile(path)
    path.write_text(Profile(prof.provenance, prof.phases, {**prof.learning, "staleness_loss": "naive_ppo"}).dumps())
    scn = load_profile(path).with_fitted(rlsim.load_scenario(ROOT / "scenarios" / "paper_grpo.yaml"))
    assert scn.learning.staleness_loss == "naive_ppo"
    # what fit-staleness and fit-groups write besides the form reaches the scenario too
    fitted = {"staleness_form": [2.0, 0.3, 3.0], "staleness_spread": 0.2, "reference_group_size": 8}
    path.write_text(Profile(prof.provenance, prof.phases, {**load_profile(path).learning, **fitted}).dumps())
    scn = load_profile(path).with_fitted(rlsim.load_scenario(ROOT / "scenarios" / "paper_grpo.yaml"))
    assert scn.learning.staleness_form == (2.0, 0.3, 3.0) and scn.learning.staleness_spread == 0.2
    assert scn.learning.reference_group_size == 8
    stretch = {"staleness_loss": "stretch", "staleness_penalty_per_step": 0.1, "staleness_free_steps": 2.0}
    path.write_text(Profile(prof.provenance, prof.phases, {**prof.learning, **stretch}).dumps())
    scn = load_profile(path).with_fitted(rlsim.load_scenario(ROOT / "scenarios" / "paper_grpo.yaml"))
    assert (scn.learning.staleness_penalty_per_step, scn.learning.staleness_free_steps) == (0.1, 2.0)


def test_slowdown_past_a_few_free_steps_gets_its_threshold():
    """Runs that lose nothing up to staleness 2 and slow by 10% a step beyond: the stretch form with free 2 and p
    0.1, both written into the profile (rlsim then stretches by 1.1 ** (k - 2) beyond 2)."""
    runs = [run_log(None, k, seed, stretch=0.1, free=2, steps=300) for seed, k in enumerate((0, 1, 2, 4, 8, 8))]
    fit = fit_staleness(runs, initial=CURVE.initial)
    assert fit.loss == "stretch" and fit.free_steps == 2.0 and fit.penalty_per_step == pytest.approx(0.1, abs=0.01)
    keys = profile_learning(fit)
    assert keys["staleness_free_steps"] == 2.0 and keys["staleness_penalty_per_step"] == fit.penalty_per_step


def fitted_spread(runs) -> float:
    return fit_staleness(runs, initial=CURVE.initial).spread


def test_the_forms_error_in_samples_goes_into_the_band_of_an_async_run():
    """Runs the chosen form matches closely miss by a small log error; runs no form follows (staleness 4 twice as
    slow, 16 not slower) by more; the band of an async run widens by it, a synchronous run's does not."""
    from rlsim.learning.target import learning_spread

    close = fit_staleness([run_log(None, k, seed, stretch=0.03, steps=300) for seed, k in enumerate((0, 4, 16))])
    assert close.loss == "stretch" and close.spread < 0.05
    # staleness 4 twice as slow (0.19 a step), 16 not slower at all: no form follows both
    dip = [
        run_log(None, 0, 0, steps=300),
        run_log(None, 4, 1, stretch=0.19, steps=300),
        run_log(None, 16, 2, steps=300),
    ]
    assert fitted_spread(dip) > 0.2
    assert learning_spread(0.1, 0.3, 1) == pytest.approx((0.1**2 + 0.3**2) ** 0.5)
    assert learning_spread(0.1, 0.3, 0) == 0.1
    assert profile_learning(close)["staleness_spread"] == close.spread
