"""rlsim.run.timeline: a scenario's systems side simulated once and looked up after that. A shorter run is the start
of a longer one where no step depends on later ones (and is simulated anew where one does); scenarios that differ
only in their learning sections share a timeline and give what one run each gives, byte for byte, each with its
own learning rate and run id."""

from __future__ import annotations

import dataclasses
import json

import pytest

import rlsim
from rlsim.run.costs import RooflineCostModel
from rlsim.run.pipeline import run_pipeline
from rlsim.run.profile import profile_from_dict
from rlsim.run.simulation import predict
from rlsim.run.timeline import Timelines, prefix_exact, systems_key
from rlsim.scenario import with_overrides
from rlsim.workload.lr_rules import lr_for_batch
from tests.conftest import SCENARIOS
from tests.rlsim.test_profile import _profile


def dump(result) -> str:
    s = result.summary()
    spans = [repr(sp) for sp in result.spans]
    return json.dumps({"summary": s, "records": result.records, "spans": spans, "band": result.band_s}, default=str)


def _records(records) -> str:
    return json.dumps([{k: v for k, v in r.items() if k not in ("run_id", "lr")} for r in records], default=str)


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
def test_a_shorter_run_is_the_start_of_the_longer_one(scenario, overrides, steps):
    short_n, long_n = steps
    base = rlsim.load_scenario(SCENARIOS / scenario, overrides)
    short = with_overrides(base, {"run.steps": short_n, "learning.lr_rule": "none"})
    long = with_overrides(base, {"run.steps": long_n, "learning.lr_rule": "sqrt"})
    assert prefix_exact(short)
    want = run_pipeline(short, RooflineCostModel.from_scenario(short))
    cache = Timelines()
    cache.get(long)
    got = cache.get(short)
    assert cache.simulated == 1  # the short one was looked up
    assert _records(got.records) == _records(want[0])
    assert got.spans == want[1]
    with pytest.raises(ValueError, match="has no first 9"):
        got.first(short, 9)


def test_a_lookup_does_not_change_the_cached_timeline():
    base = rlsim.load_scenario(SCENARIOS / "small_1gpu.yaml", {"run.steps": 4})
    cache = Timelines()
    first = cache.get(base)
    first.records[0]["lr"] = -1.0
    first.records[0]["timing_s"]["rollout"] = -1.0
    again = cache.get(base)
    assert again.records[0]["lr"] != -1.0 and again.records[0]["timing_s"]["rollout"] > 0
    assert cache.simulated == 1


@pytest.mark.parametrize("with_profile", [False, True])
def test_learning_variants_give_the_bytes_of_one_run_each(with_profile):
    """The paper's LR rules at P = 64 and 512 (the untuned ones need 1.7-2.8x the samples, so the runs differ in
    length; at P = 64 the tuned run is shorter than the band's window), with and without a profile whose
    uncertainty adds the band's shifted-coefficient runs: one cache, the longest first, gives what a fresh cache
    each gives, with fewer pipeline runs."""
    profile = profile_from_dict(_profile(batch=(1, 512))) if with_profile else None
    for p in (64, 512):
        scns = [
            rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", {"workload.prompts_per_step": p, "learning.lr_rule": r})
            for r in ("none", "linear", "sqrt")
        ]
        shared = Timelines()
        got = [predict(s, profile, with_band=True, to_target=True, timelines=shared) for s in scns]
        alone = [Timelines() for _ in scns]
        want = [predict(s, profile, with_band=True, to_target=True, timelines=c) for s, c in zip(scns, alone)]
        assert len({len(r.records) for r in want}) > 1  # the variants run for different step counts
        for g, w in zip(got, want):
            assert g.band_s == w.band_s and g.band_s is not None
            assert dump(g) == dump(w)
        assert [r.records[0]["lr"] for r in got] == [
            lr_for_batch(s.learning, s.workload.responses_per_step) for s in scns
        ]
        # the longest (untuned) run first: the others are its start, their bands its seeds' runs
        band_runs = scns[0].run.band_seeds - 1 + (2 if with_profile else 0)
        assert shared.simulated == 1 + band_runs
        assert sum(c.simulated for c in alone) > shared.simulated


@pytest.mark.parametrize("staleness", [1, 2])
def test_no_prefix_where_a_weight_sync_waits_for_later_rollouts(staleness):
    """Async without in-flight weight updates: a step's weight sync waits for the engines, so for a rollout of a
    later step that a longer run has started (measured: the last step of 10 cut from 20 ended 53 s later on the
    paper scenario at P = 64). The cache simulates a shorter run anew there, and serves the same length."""
    over = {"schedule.in_flight_weight_updates": False, "schedule.max_staleness": staleness}
    base = rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml", {"workload.prompts_per_step": 64, **over})
    short, long = with_overrides(base, {"run.steps": 10}), with_overrides(base, {"run.steps": 20})
    assert not prefix_exact(short)
    cache = Timelines()
    records = cache.get(long).records
    if staleness == 1:  # the reason: the last of a longer run's first steps ends later
        assert records[9]["wall_s"] > run_pipeline(short)[0][9]["wall_s"] + 1.0
    got = cache.get(short)
    assert cache.simulated == 2 and _records(got.records) == _records(run_pipeline(short)[0])
    cache.get(long)
    assert cache.simulated == 2
    scns = [with_overrides(base, {"learning.lr_rule": rule}) for rule in ("sqrt", "none")]
    shared = Timelines()
    got_results = [predict(s, with_band=True, to_target=True, timelines=shared) for s in scns]
    want = [predict(s, with_band=True, to_target=True) for s in scns]
    assert [dump(g) for g in got_results] == [dump(w) for w in want]


def test_the_systems_key_ignores_the_learning_model_and_step_count_only():
    paper = rlsim.load_scenario(SCENARIOS / "paper_grpo.yaml")
    key = systems_key(paper)
    same = {
        "learning.lr_rule": "none",
        "learning.target": 0.7,
        "run.steps": 7,
        "run.until_target": False,
        "run.band_seeds": 5,
        "name": "another",
    }
    for k, v in same.items():
        assert systems_key(with_overrides(paper, {k: v})) == key, k
    for k, v in {"run.seed": 3, "workload.prompts_per_step": 64, "engine.max_num_seqs": 128}.items():
        assert systems_key(with_overrides(paper, {k: v})) != key, k
    slower = with_overrides(paper, {"costs.decode_memory_efficiency": 0.5})
    assert systems_key(dataclasses.replace(paper, costs=slower.costs)) != key  # a profile's costs, folded in


def test_a_run_answered_from_the_cache_is_not_estimated_again(monkeypatch):
    """The footprint check (it reads the machine's free memory) runs before a simulation, not before a lookup: two
    LR rules of one batch size on one cache are checked once; ``holds`` says what ``get`` will not simulate."""
    import rlsim.run.simulation as simulation

    checked = []
    real = simulation.footprint
    monkeypatch.setattr(simulation, "footprint", lambda *a, **k: checked.append(1) or real(*a, **k))
    base = rlsim.load_scenario(SCENARIOS / "small_1gpu.yaml", {"run.steps": 4, "run.until_target": False})
    cache = Timelines()
    assert not cache.holds(base)
    predict(base, timelines=cache)
    assert cache.holds(base) and cache.holds(with_overrides(base, {"run.steps": 3}))
    predict(with_overrides(base, {"learning.lr_rule": "none"}), timelines=cache)
    assert len(checked) == 1 and cache.simulated == 1
    predict(with_overrides(base, {"run.steps": 5}), timelines=cache)  # longer: simulated, so checked
    assert len(checked) == 2 and cache.simulated == 2
