"""Published qualitative findings the learning model's defaults must reproduce (issue 33, must-show 2 and 3;
docs/learning.md). The batch-dependent ceiling (ScaleRL: larger batches end higher) is opt-in (learning.ceilings,
fitted by rlsim-calibrate fit-learning): ScaleRL publishes no asymptote per batch to set a default from, so the
defaults say the ceiling does not move, and the tests check both."""

from __future__ import annotations

import math

import pytest

import rlsim
from rlsim.learning.model import samples_to_target
from tests.conftest import SCENARIOS


def paper(**overrides) -> rlsim.Scenario:
    return rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", overrides)


@pytest.mark.parametrize("total", [1024, 4096])
def test_responses_per_prompt_8_to_32_at_a_fixed_total_batch_move_samples_to_target_under_5_percent(total):
    """ScaleRL (arXiv 2510.13786): at a fixed total batch, 8-32 responses per prompt leave the fitted curve
    essentially unchanged, so the batch is P x G there."""
    n = {}
    for g in (8, 16, 32):
        s = paper(**{"workload.group_size": g, "workload.prompts_per_step": total // g})
        assert s.workload.responses_per_step == total
        n[g] = samples_to_target(s.learning, s.workload.responses_per_step, s.schedule.staleness).samples
    assert max(n.values()) / min(n.values()) < 1.05


def test_sqrt_lr_beats_a_constant_lr_at_8x_the_batch_and_linear_does_not():
    """IsoCompute (arXiv 2603.12151, Qwen2.5-7B-Instruct GRPO): square-root LR scaling reaches the target faster
    than a constant LR at 8x the batch; linear scaling was unstable. In samples: sqrt keeps the reference's N*
    inside the invariant range, a constant LR pays the untuned penalty, and so does linear (as far from sqrt
    the other way)."""
    ref = samples_to_target(paper().learning, 1024, 1).samples
    at_8x = {
        rule: samples_to_target(paper(**{"learning.lr_rule": rule}).learning, 8192, 1).samples
        for rule in ("sqrt", "none", "linear")
    }
    assert at_8x["sqrt"] == pytest.approx(ref)
    assert at_8x["sqrt"] < at_8x["none"] / 2
    assert at_8x["linear"] > 2 * at_8x["sqrt"]


def test_the_seed_papers_table_1_shape_still_holds():
    """The seed paper (arXiv 2608.29296) Table 1: P = 1024 with the LR retuned reaches the target about 29% sooner
    than P = 128; untuned larger batches are slower (must-show 3: the new staleness forms leave this alone)."""
    times = {}
    for p, rule in [(128, "sqrt"), (1024, "sqrt"), (256, "none"), (1024, "none")]:
        s = paper(**{"workload.prompts_per_step": p, "learning.lr_rule": rule, "run.steps": 8})
        times[p, rule] = rlsim.simulate(s).summary()["time_to_target_s"]
    change = times[1024, "sqrt"] / times[128, "sqrt"] - 1.0
    assert -0.35 < change < -0.20, change
    assert times[256, "none"] > times[128, "sqrt"] and times[1024, "none"] > times[1024, "sqrt"]


CEILINGS = {"learning.ceiling_batches": [1024, 16384], "learning.ceilings": [0.76, 0.86]}  # target 0.77


def test_by_default_every_batch_shares_the_ceiling():
    """No published asymptote per batch, so the defaults keep metric.asymptote everywhere: a long run at any batch
    ends at the same metric, and nothing reports a ceiling term."""
    learning = paper().learning
    for batch in (512, 1024, 8192, 65536):
        n = samples_to_target(learning, batch)
        assert n.ceiling_multiplier is None and n.curve.asymptote == learning.metric.asymptote


def test_a_larger_batch_reaches_a_higher_ceiling_where_the_ceilings_say_so():
    """ScaleRL: larger batches end higher. With ceilings measured at two batches, the curve at each batch tops out
    where the table (read in log batch) says; a long run's metric ends there, higher at the larger batch; the N*
    of a batch is the reference N* times N* on its ceiling's curve over N* on the reference curve; a batch whose
    ceiling does not clear the target never reaches it, and the error says from where on one does."""
    from rlsim.learning.model import LearningModelError, ceiling_at, reference_samples_to_target

    learning = paper(**CEILINGS).learning
    assert ceiling_at(learning, 4096) == pytest.approx(0.81)  # halfway in log batch between 1,024 and 16,384
    ends = {}
    for prompts in (256, 1024):  # B = 2,048 and 8,192
        s = paper(**CEILINGS, **{"workload.prompts_per_step": prompts, "run.steps": 400, "run.until_target": False})
        n = samples_to_target(s.learning, s.workload.responses_per_step)
        top = ceiling_at(s.learning, s.workload.responses_per_step)
        assert n.curve.asymptote == pytest.approx(top)
        ref = reference_samples_to_target(s.learning.metric, s.learning.target)
        assert n.ceiling_multiplier == pytest.approx(reference_samples_to_target(n.curve, 0.77) / ref)
        assert n.samples == pytest.approx(ref * n.ceiling_multiplier)  # sqrt LR inside the invariant range
        records = rlsim.simulate(s).records
        ends[prompts] = records[-1]["eval_metric"]
        assert top - 0.02 < ends[prompts] < top
    assert ends[1024] > ends[256] + 0.02
    with pytest.raises(LearningModelError, match="from about 1,351 responses per step"):
        samples_to_target(learning, 1024)


def test_a_plan_prunes_the_batches_whose_ceiling_misses_the_target_and_says_why(capsys):
    from rlsim.cli import main

    sets = [f"--set={k}={v}" for k, v in CEILINGS.items()]
    grid = "--grid=workload.prompts_per_step=64,128,256"
    assert main(["plan", str(SCENARIOS / "paper_grpo.yaml"), *sets, grid, "--gpu-types=H100-SXM"]) == 0
    out = capsys.readouterr().out
    assert "short of the target 0.77" in out and "P=64 " not in out.split("winner:")[1].split("pruned")[0]
    line = next(x for x in out.splitlines() if x.startswith("ceiling:"))
    assert "from about 1,351 responses per step" in line and "ScaleRL" in line


def test_a_ceilings_error_widens_the_band_most_where_the_ceiling_nears_the_target():
    """learning.ceiling_errors: the N* the ceiling's one-sigma error moves, as a log-sd, joins the band in
    quadrature; it is largest at the batch whose ceiling is closest to the target (B = 2,048: ceiling 0.785 for a
    target of 0.77) and the nominal time does not move."""
    from rlsim.learning.model import ceiling_spread
    from rlsim.run.simulation import predict

    errors = {**CEILINGS, "learning.ceiling_errors": [0.005, 0.005]}
    spreads = [ceiling_spread(paper(**errors).learning, b) for b in (2048, 4096, 16384)]
    assert spreads[0] > spreads[1] > spreads[2] > 0
    assert ceiling_spread(paper(**CEILINGS).learning, 2048) == 0.0
    runs = {}
    for name, over in (("with", errors), ("without", CEILINGS)):
        r = predict(paper(**over, **{"workload.prompts_per_step": 256}), with_band=True, to_target=True).summary()
        runs[name] = r
    lo, hi = runs["with"]["time_to_target_band_s"]
    lo0, hi0 = runs["without"]["time_to_target_band_s"]
    assert runs["with"]["time_to_target_s"] == runs["without"]["time_to_target_s"]
    seeds = paper().learning.samples_spread  # in quadrature with the seeds' spread, at the 10th / 90th percentiles
    widened = 2 * 1.2815515655446004 * (math.hypot(seeds, spreads[0]) - seeds)
    assert lo < lo0 and hi > hi0
    assert math.log(hi / lo) - math.log(hi0 / lo0) == pytest.approx(widened, rel=1e-6)


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"learning.ceiling_batches": [1024, 16384]}, "come together"),
        ({**CEILINGS, "learning.ceilings": [0.6, 0.86]}, "above metric.initial"),
        ({**CEILINGS, "learning.ceilings": [0.7, 0.76]}, "never get past the target"),
        ({**CEILINGS, "learning.ceiling_batches": [16384, 1024]}, "positive and increasing"),
        ({**CEILINGS, "learning.ceilings": [0.8]}, "one entry per ceiling"),
        ({**CEILINGS, "learning.ceiling_errors": [0.01]}, "one finite error"),
        ({"learning.ceiling_errors": [0.01]}, "need learning.ceilings"),
    ],
)
def test_bad_ceilings_are_refused_with_what_to_do(bad, message):
    with pytest.raises(rlsim.ScenarioError, match=message):
        paper(**bad)
