"""Where response lengths come from (workload.length_source) and how an answer moves over assumed ones: the prior
at a cap by hand, the importers' assumption, the sensitivity's ends against runs with those lengths set, the
summary's keys, the run line and the sweep and plan columns."""

import math

import pytest

import rlsim
from rlsim.answers.text import run_table
from rlsim.frameworks.common import assumed_workload
from rlsim.plan.evaluate import result_row
from rlsim.run.profile import Profile
from rlsim.run.result import LENGTH_COLUMNS
from rlsim.run.simulation import predict
from rlsim.scenario import with_overrides
from rlsim.schema import LengthDist
from rlsim.schema.scenario import to_plain
from rlsim.workload.lengths import clipped_mean
from rlsim.workload.priors import response_prior
from tests.conftest import SCENARIOS

SMALL = {  # fixed responses: the range's ends are exactly the runs with those lengths
    "workload.response_length": {"dist": "fixed", "tokens": 400},
    "workload.length_source": "assumed",
    "workload.length_note": "a test",
    "workload.length_range_tokens": [200, 600],
    "run.steps": 6,
}


def _small(over=SMALL):
    return rlsim.load_scenario(SCENARIOS / "small_1gpu.yaml", over)


def test_reasoning_prior_at_8k_by_hand():
    # L = min(0.78 x 8192, 3200 x 2 ** 0.66); 2 ** 0.66 = exp(0.66 ln 2) = 1.580083
    p = response_prior(8192)
    assert p.mean_tokens == pytest.approx(3200 * 1.580083, rel=1e-6)  # 5,056.3 (published Qwen3-235B: ~5,700)
    assert p.low_tokens == pytest.approx(5056.27 / 3, rel=1e-5)
    assert p.high_tokens == pytest.approx(min(1.5 * 5056.27, 0.9 * 8192), rel=1e-5)  # 0.9 x cap = 7,372.8
    assert response_prior(4096).mean_tokens == pytest.approx(3194.9, abs=0.1)  # 0.78 x 4096 (Qwen3 rows: ~3,200)
    assert response_prior(131072).mean_tokens == pytest.approx(3200 * 32**0.66, rel=1e-9)  # 31,517 (31,599)
    assert response_prior(4096, "instruct").mean_tokens == pytest.approx(1100)  # Llama-3.1-8B-Instruct: ~1,070
    with pytest.raises(ValueError, match="family"):
        response_prior(4096, "poetry")


def test_importers_assume_the_prior_and_say_so():
    workload, notes = assumed_workload(64, 8, 1024, 28672)
    assert workload["length_source"] == "assumed" and "reasoning prior" in workload["length_note"]
    dist = LengthDist(**workload["response_length"])
    assert clipped_mean(dist, 28672) == pytest.approx(response_prior(28672).mean_tokens)  # 11,559 tokens
    assert clipped_mean(dist, 28672) < 0.45 * 28672  # no longer about half the cap
    assert any("reasoning prior" in n for n in notes)


def test_hand_written_lengths_are_stated_and_profile_lengths_measured():
    scn = _small({"run.steps": 2})
    assert scn.workload.length_source == "stated"
    prof = Profile(provenance={}, phases={}, lengths={"response_length": {"dist": "fixed", "tokens": 300}})
    fitted = prof.with_fitted(_small())
    assert fitted.workload.length_source == "measured" and fitted.workload.length_range_tokens is None
    mine = prof.with_fitted(_small(), {"workload.response_length": {"dist": "fixed", "tokens": 100}})
    assert mine.workload.length_source == "assumed"  # the user's own lengths: the profile says nothing of them


def test_the_sensitivity_ends_are_runs_at_those_lengths():
    scn = _small()
    res = predict(scn, with_band=True)
    a = res.summary()["length_assumption"]
    assert (a["low_tokens"], a["high_tokens"], a["mean_tokens"]) == (200, 600, 400)
    assert a["step_time_s"] == pytest.approx(res.steady_step_time_s)
    for end, tokens in (("low", 200), ("high", 600)):
        plain = with_overrides(scn, {"workload.response_length.tokens": tokens, "workload.length_source": "stated"})
        assert a[f"step_time_{end}_s"] == pytest.approx(predict(plain).steady_step_time_s, rel=1e-12)
    assert a["step_time_low_s"] < a["step_time_s"] < a["step_time_high_s"]
    assert a["time_to_target_s"] is None and a["time_to_target_low_s"] is None  # no learning model here


def test_summary_keys_and_the_run_line():
    res = predict(_small(), with_band=True)
    s = res.summary()
    assert s["length_source"] == "assumed" and s["length_note"] == "a test"
    assert set(s["length_assumption"]) == {
        "source", "note", "mean_tokens", "low_tokens", "high_tokens", "step_time_s", "step_time_low_s",
        "step_time_high_s", "time_to_target_s", "time_to_target_low_s", "time_to_target_high_s",
    }  # fmt: skip
    a = s["length_assumption"]
    line = (
        f"lengths assumed (a test): step time {a['step_time_s']:.2f} s at mean 400; "
        f"{a['step_time_low_s']:.2f} s .. {a['step_time_high_s']:.2f} s over 200 .. 600 tokens"
    )
    assert line in run_table(s).splitlines()
    stated = predict(with_overrides(_small(), {"workload.length_source": "stated"}), with_band=True).summary()
    assert stated["length_assumption"] is None and "lengths assumed" not in run_table(stated)
    assert predict(_small()).summary()["length_assumption"] is None  # without the band: nothing extra simulated


def test_plan_row_carries_the_length_columns():
    row = result_row(predict(_small(), with_band=True))
    assert row["length_source"] == "assumed"
    assert all(row[c] is not None for c in LENGTH_COLUMNS[:2]) and row[LENGTH_COLUMNS[2]] is None
    assert row["step_time_at_low_length_s"] < row["step_time_at_high_length_s"]


def test_sweep_rows_carry_the_length_columns():
    from rlsim.answers.sweep import sweep

    learning = {
        "learning.metric": {"initial": 0.1, "asymptote": 0.9, "mid_samples": 20000, "exponent": 1.5},
        "learning.target": 0.6,
    }
    t = sweep(_small({**SMALL, **learning}), {"workload.prompts_per_step": [16, 32]}, workers=1).table
    assert list(t["length_source"]) == ["assumed", "assumed"]
    for _, row in t.iterrows():
        lo, hi = row["time_to_target_at_low_length_s"], row["time_to_target_at_high_length_s"]
        assert lo < row["time_to_target_s"] < hi
        assert lo / row["time_to_target_s"] == pytest.approx(row["step_time_at_low_length_s"] / row["step_time_s"])


def test_bad_ranges_and_unmovable_forms_are_refused():
    with pytest.raises(rlsim.ScenarioError, match="length_range_tokens"):
        _small({**SMALL, "workload.length_range_tokens": [600, 200]})
    with pytest.raises(rlsim.ScenarioError, match="response_length.dist"):
        _small({**SMALL, "workload.response_length": {"dist": "uniform", "low": 64, "high": 1024}})
    plain = to_plain(_small().workload)
    assert plain["length_source"] == "assumed" and math.isclose(plain["length_range_tokens"][1], 600)
