"""simulate_learning_variants: scenarios that differ only in their learning sections, simulated to the target
with their bands from one pipeline run per seed (each variant's run cut from the longest), give what one run
each gives, byte for byte; and rlsim.pipeline.cut gives a shorter run's records and spans."""

from __future__ import annotations

import json

import pytest

import rlsim
from rlsim.costs import RooflineCostModel
from rlsim.pipeline import cut, run_pipeline
from rlsim.profile import profile_from_dict
from rlsim.simulation import simulate_configured, simulate_learning_variants
from tests.conftest import SCENARIOS
from tests.rlsim.test_profile import _profile


def dump(result) -> str:
    s = result.summary()
    spans = [repr(sp) for sp in result.spans]
    return json.dumps({"summary": s, "records": result.records, "spans": spans, "band": result.band_s}, default=str)


@pytest.mark.parametrize(
    "scenario, overrides",
    [
        ("paper_grpo.yaml", {"workload.prompts_per_step": 64}),  # async, streaming: the next rollout overlaps
        ("dense8b_h100_colocated.yaml", {"run.steps": 4}),
        ("dense8b_h100_async.yaml", {}),
        ("dense8b_h100_async.yaml", {"schedule.max_staleness": 2}),
    ],
)
@pytest.mark.parametrize("steps", [(3, 8), (5, 5), (1, 4)])
def test_cut_gives_the_records_and_spans_of_the_shorter_run(scenario, overrides, steps):
    short_n, long_n = steps
    base = rlsim.load_scenario(SCENARIOS / scenario, overrides)
    short = base.with_overrides({"run.steps": short_n, "learning.lr_rule": "none"})
    long = base.with_overrides({"run.steps": long_n, "learning.lr_rule": "sqrt"})
    want = run_pipeline(short, RooflineCostModel.from_scenario(short))
    got = cut(short, *run_pipeline(long, RooflineCostModel.from_scenario(long)))
    assert json.dumps(got[0], default=str) == json.dumps(want[0], default=str)
    assert got[1] == want[1]
    with pytest.raises(ValueError, match="cannot cut 8 steps from a run of 5"):
        cut(base.with_overrides({"run.steps": 8}), *run_pipeline(base.with_overrides({"run.steps": 5})))


@pytest.mark.parametrize("with_profile", [False, True])
def test_learning_variants_give_the_bytes_of_one_run_each(with_profile):
    """The paper's LR rules at P = 64 and 512 (the untuned ones need 1.7-2.8x the samples, so the runs differ in
    length; at P = 64 the tuned run is shorter than the band's window), with and without a profile whose
    uncertainty adds the band's shifted-coefficient runs."""
    profile = profile_from_dict(_profile(batch=(1, 512))) if with_profile else None
    for p in (64, 512):
        scns = [
            rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", {"workload.prompts_per_step": p, "learning.lr_rule": r})
            for r in ("sqrt", "none", "linear")
        ]
        got = simulate_learning_variants(scns, profile, with_band=True)
        want = [simulate_configured(s, profile, with_band=True, to_target=True) for s in scns]
        assert len({len(r.records) for r in want}) > 1  # the variants run for different step counts
        for g, w in zip(got, want):
            assert g.band_s == w.band_s and g.band_s is not None
            assert dump(g) == dump(w)


def test_variants_without_a_learning_model_run_their_steps():
    scns = [rlsim.load_scenario(SCENARIOS / "small_1gpu.yaml", {"run.steps": n}) for n in (2, 5)]
    got = simulate_learning_variants(scns)
    assert [len(r.records) for r in got] == [2, 5] and all(r.time_to_target is None for r in got)
    assert dump(got[0]) == dump(simulate_configured(scns[0]))


def test_simulate_variants_gives_each_variant_its_own_learning_rate():
    """The plan's screen (simulate_variants) shares one timeline among LR rules; each variant's records carry its
    own learning rate (they carried the first variant's)."""
    from rlsim.learning import lr_for_batch
    from rlsim.simulation import simulate_variants

    scns = [
        rlsim.load_scenario(
            SCENARIOS / "paper_grpo.yaml", {"workload.prompts_per_step": 512, "learning.lr_rule": r, "run.steps": 3}
        )
        for r in ("sqrt", "none", "linear")
    ]
    lrs = [r.records[0]["lr"] for r in simulate_variants(scns)]
    assert lrs == [lr_for_batch(s.learning, s.workload.responses_per_step) for s in scns]
    assert len(set(lrs)) == 3


@pytest.mark.parametrize("staleness", [1, 2])
def test_no_cut_where_a_weight_sync_waits_for_later_rollouts(staleness):
    """Async without in-flight weight updates: a step's weight sync waits for the engines, so for a rollout of a
    later step that a longer run has started (measured: the last step of 10 cut from 20 ended 53 s later on the
    paper scenario at P = 64). cut refuses, except the whole run; the learning variants run one run each, byte for
    byte what simulate_configured gives."""
    over = {"schedule.in_flight_weight_updates": False, "schedule.max_staleness": staleness}
    base = rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", {"workload.prompts_per_step": 64, **over})
    short, long = base.with_overrides({"run.steps": 10}), base.with_overrides({"run.steps": 20})
    records, spans = run_pipeline(long)
    if staleness == 1:  # the reason: the last of a longer run's first steps ends later
        assert records[9]["wall_s"] > run_pipeline(short)[0][9]["wall_s"] + 1.0
    with pytest.raises(ValueError, match="waits for later rollouts"):
        cut(short, records, spans)
    assert cut(long, records, spans)[1] == spans
    scns = [
        rlsim.load_scenario(
            SCENARIOS / "paper_grpo.yaml", {"workload.prompts_per_step": 64, "learning.lr_rule": rule, **over}
        )
        for rule in ("sqrt", "none")
    ]
    got = simulate_learning_variants(scns, None, with_band=True)
    want = [simulate_configured(s, None, with_band=True, to_target=True) for s in scns]
    assert [dump(g) for g in got] == [dump(w) for w in want]
