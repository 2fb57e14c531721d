"""Profiles: schema, application to the roofline, range warnings, transfer across devices."""

import dataclasses
import json
import math

import pytest

import rlsim
from rlsim.errors import ProfileError
from rlsim.run.profile import load_profile, profile_from_dict
from rlsim.scenario import with_overrides
from tests.conftest import SCENARIOS

PROV = {
    "device": "NVIDIA H100 80GB HBM3",
    "engine": "vllm",
    "engine_version": "0.32.0",
    "torch_version": "2.13.0",
    "model": "Qwen3-8B",
    "dtype": "bfloat16",
    "date": "2026-11-30",
    "command": "rlsim-calibrate fit ...",
}


def _profile(mem_eff=0.35, batch=(1, 64)):
    return {
        "schema": "rlsim-profile",
        "schema_version": 1,
        "provenance": dict(PROV),
        "phases": {
            "rollout": {
                "form": "roofline",
                "parameters": {"decode_memory_efficiency": mem_eff, "decode_iteration_overhead_s": 0.01},
                "uncertainty": {"decode_memory_efficiency": 0.02},
                "fitted_range": {"batch": list(batch), "context_tokens": [0, 1e6]},
                "held_out": {"method": "kfold-5", "mape": 0.05, "num_points": 30},
            },
            "train_actor": {"form": "roofline", "parameters": {"train_compute_efficiency": 0.2}},
        },
    }


def _scn(**over):
    return rlsim.load_scenario(SCENARIOS / "dense8b_h100_colocated.yaml", {"run.steps": 3, **over})


def test_profile_replaces_coefficients(tmp_path):
    p = tmp_path / "p.json"
    p.write_text(json.dumps(_profile()))
    base = rlsim.simulate(_scn()).summary()
    cal = rlsim.simulate(_scn(), profile=p).summary()
    assert cal["phase_time_s"]["rollout"] > base["phase_time_s"]["rollout"]  # half the bandwidth efficiency
    assert cal["phase_time_s"]["train_actor"] > 1.5 * base["phase_time_s"]["train_actor"]
    assert cal["phase_time_s"]["reward"] == base["phase_time_s"]["reward"]  # untouched coefficients stay
    assert cal["profile"]["provenance"]["device"] == PROV["device"]
    assert load_profile(p).to_dict() == profile_from_dict(json.loads(load_profile(p).dumps())).to_dict()


def test_the_profiles_costs_reach_the_systems_side_only():
    """predict folds the profile's fitted costs into the scenario the cost model and the timeline see; the result's
    scenario, whose digest is the run id and the summary's scenario_hash, stays the one without them."""
    from rlsim.run.simulation import predict, resolve_until_target, systems_scenario
    from rlsim.run.timeline import Timelines

    prof = profile_from_dict(_profile())
    scn = resolve_until_target(_scn())
    timelines = Timelines()
    res = predict(scn, prof, timelines=timelines)
    assert res.scenario.costs == scn.costs and res.scenario.digest() == scn.digest()
    assert {r["run_id"] for r in res.records} == {f"sim-{scn.digest()}"}
    assert res.summary()["scenario_hash"] == scn.digest()
    folded = systems_scenario(scn, prof)
    assert folded.costs == prof.apply(scn.costs) != scn.costs
    assert folded.digest() != scn.digest() and systems_scenario(scn, None) is scn
    timelines.get(folded)  # the timeline predict simulated was the folded scenario's
    assert timelines.simulated == 1
    plain = predict(folded)  # the same coefficients in the scenario itself: the same step times
    assert [r["step_time_s"] for r in plain.records] == [r["step_time_s"] for r in res.records]


def test_outside_fitted_range_warns_with_amount(tmp_path, capsys):
    res = rlsim.simulate(_scn(), profile=profile_from_dict(_profile(batch=(1, 16))))
    assert any("batch" in w and "above the fitted range" in w and "[1, 16]" in w for w in res.warnings)
    ok = rlsim.simulate(_scn(), profile=profile_from_dict(_profile(batch=(1, 256))))
    assert ok.warnings == []
    p = tmp_path / "p.json"
    p.write_text(json.dumps(_profile(batch=(1, 16))))
    from rlsim.cli import main

    assert (
        main(["run", str(SCENARIOS / "dense8b_h100_colocated.yaml"), "--set", "run.steps=2", "--profile", str(p)]) == 0
    )
    assert "rlsim: warning: profile phase rollout: batch" in capsys.readouterr().err


def test_efficiencies_transfer_through_the_roofline():
    """The same fitted efficiency gives a faster rollout on a GPU with more bandwidth: H200 has 1.43x H100's HBM
    peak, of which its HBM3e streams 0.87x Hopper's fraction (catalog memory_efficiency_factor), so decode-bound
    generation gains about 1.25x at most (1.14x here, compute and CPU work unchanged)."""
    prof = profile_from_dict(_profile())
    on_h100 = rlsim.simulate(_scn(**{"run.steps": 2}), profile=prof)
    on_h200 = rlsim.simulate(_scn(**{"run.steps": 2, "hardware.gpu": "H200"}), profile=prof)
    ratio = on_h200.summary()["generation_tokens_per_s"] / on_h100.summary()["generation_tokens_per_s"]
    assert 1.1 < ratio < 4.8 / 3.35 * 0.87 + 1e-9


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda d: d.update(schema="other"), "not an rlsim profile"),
        (lambda d: d.update(schema_version=99), "schema_version 99"),
        (lambda d: d["provenance"].pop("device"), "provenance misses device"),
        (lambda d: d["phases"].update(decode={"parameters": {}}), "unknown phase"),
        (lambda d: d["phases"]["rollout"]["parameters"].update(warp_factor=9), "warp_factor: not a cost coefficient"),
        (lambda d: d["phases"]["rollout"]["parameters"].update(decode_memory_efficiency=1.7), "at most 1"),
        (lambda d: d["phases"]["rollout"]["parameters"].update(decode_memory_efficiency=float("nan")), "finite"),
        (lambda d: d["phases"]["rollout"].update(fitted_range={"batch": ["a", "b"]}), "fitted_range.batch"),
        (lambda d: d["phases"]["rollout"].update(fitted_range={"batch": [64, 1]}), "lo <= hi"),
        (lambda d: d["phases"]["rollout"].update(uncertainty=[1]), "uncertainty: must be a mapping"),
        (lambda d: d["phases"]["rollout"].update(uncertainty={"foo": 0.1}), "uncertainty.foo: not a cost"),
        (lambda d: d["phases"]["rollout"].update(uncertainty={"prefill_overhead_s": "y"}), "finite number >= 0"),
        (lambda d: d["phases"]["rollout"].update(held_out=5), "held_out: must be a mapping"),
    ],
)
def test_bad_profiles_are_refused(mutate, match):
    d = _profile()
    mutate(d)
    with pytest.raises(ProfileError, match=match):
        profile_from_dict(d)


def test_missing_profile_file_exits_2(tmp_path, capsys):
    from rlsim.cli import main

    assert main(["run", str(SCENARIOS / "small_1gpu.yaml"), "--profile", str(tmp_path / "nope.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err


LEARNING = {
    "version": 1,
    "reference_batch": 512,
    "metric": {"initial": 0.1, "asymptote": 0.8, "mid_samples": 20000.0, "exponent": 1.5},
    "target": 0.6,
    "batch_multiplier": {"form": "critical_batch", "critical_batch": 1024.0},
    "samples_spread": 0.1,
    "critical_batch_fit": {"critical_batch": 1024.0},  # documents the fit; not a Learning field
}


def test_profile_learning_section_replaces_the_scenarios_learning_model(tmp_path, capsys):
    """A fitted learning section (rlsim-calibrate fit-learning) gives a scenario without a learning model its
    time-to-target, and replaces a scenario's own; the scenario's LR rule stays."""
    from rlsim.learning.model import reference_samples_to_target
    from rlsim.scenario import MetricCurve

    prof = profile_from_dict({**_profile(), "learning": LEARNING})
    scn = _scn(**{"workload.prompts_per_step": 128, "workload.group_size": 8})  # B = 1024
    assert scn.learning.metric is None and rlsim.simulate(scn).time_to_target is None
    res = rlsim.simulate(scn, profile=prof)
    n_ref = reference_samples_to_target(MetricCurve(**LEARNING["metric"]), 0.6)
    # critical batch 1024: E(1024) / E(512) = 2 / 1.5
    assert res.summary()["samples_to_target"] == pytest.approx(n_ref * 2 / 1.5, rel=1e-6)
    assert res.summary()["profile"]["learning"]["target"] == 0.6
    own = _scn(**{"learning.metric": {**LEARNING["metric"], "mid_samples": 5.0}, "learning.target": 0.3})
    replaced = rlsim.simulate(own, profile=prof)
    assert replaced.scenario.learning.target == 0.6 and replaced.scenario.learning.lr_rule == "sqrt"
    # no learning section: the scenario's model stays
    assert rlsim.simulate(own, profile=profile_from_dict(_profile())).scenario.learning.target == 0.3
    # the CLI reports the time-to-target from the profile's model
    p = tmp_path / "p.json"
    p.write_text(prof.dumps())
    from rlsim.cli import main

    path = str(SCENARIOS / "dense8b_h100_colocated.yaml")
    assert main(["run", path, "--set", "run.steps=2", "--profile", str(p), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["time_to_target_s"] > 0


def test_a_broken_learning_section_is_refused_at_load_with_the_field():
    """The learning section is typed and versioned: checked when the profile loads, not when a run uses it."""
    with pytest.raises(ProfileError, match="learning must be null or a mapping"):
        profile_from_dict({**_profile(), "learning": [1]})
    with pytest.raises(ProfileError, match=r"learning.target: 0.95 is not strictly between"):  # above the asymptote 0.8
        profile_from_dict({**_profile(), "learning": {**LEARNING, "target": 0.95}})
    with pytest.raises(ProfileError, match=r"learning.samples_spread: -1"):
        profile_from_dict({**_profile(), "learning": {**LEARNING, "samples_spread": -1}})
    with pytest.raises(ProfileError, match=r"learning.batch_multiplier.form"):
        profile_from_dict({**_profile(), "learning": {**LEARNING, "batch_multiplier": {"form": "magic"}}})
    v2 = {**_profile(), "schema_version": 2}
    with pytest.raises(ProfileError, match=r"learning.version None is not 1"):
        profile_from_dict({**v2, "learning": {k: v for k, v in LEARNING.items() if k != "version"}})
    with pytest.raises(ProfileError, match=r"workload.response_length.dist"):
        profile_from_dict({**v2, "lengths": {"response_length": {"dist": "zipf"}}})


def test_explicit_overrides_and_sweep_grids_win_over_a_learning_profile(tmp_path, capsys):
    """The profile's learning section replaces the scenario file's, but never what the user set on purpose:
    ``--set learning.target`` (run, sweep, decide), a sweep grid over it, ``simulate(overrides=...)``. (Before,
    ``--set learning.target=0.4`` came out as the profile's 0.6 and a sweep over the target gave equal rows.)"""
    from rlsim.answers.sweep import sweep
    from rlsim.cli import main

    prof = profile_from_dict({**_profile(), "learning": LEARNING})
    p = tmp_path / "p.json"
    p.write_text(prof.dumps())
    path = str(SCENARIOS / "dense8b_h100_colocated.yaml")
    scn = _scn(**{"workload.prompts_per_step": 128, "workload.group_size": 8})
    # the Python API: overrides and explicit keys win, nothing else is touched
    assert rlsim.simulate(scn, profile=prof).scenario.learning.target == 0.6
    assert rlsim.simulate(scn, profile=prof, overrides={"learning.target": 0.4}).scenario.learning.target == 0.4
    mine = with_overrides(scn, {"learning.metric": LEARNING["metric"], "learning.target": 0.45})
    kept = rlsim.simulate(mine, profile=prof, explicit=["learning.target"]).scenario.learning
    assert kept.target == 0.45 and kept.batch_multiplier == prof.with_fitted(scn).learning.batch_multiplier
    # a key inside a learning field keeps that whole field from the profile
    nested = with_overrides(mine, {"learning.metric.mid_samples": 7.0})
    got = rlsim.simulate(nested, profile=prof, explicit=["learning.metric.mid_samples"]).scenario.learning
    assert got.metric.mid_samples == 7.0 and got.target == 0.6
    # the CLI
    for target in ("0.4", "0.6"):
        argv = ["run", path, "--set", "run.steps=2", "--set", f"learning.target={target}", "--profile", str(p)]
        assert main([*argv, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["target"] == float(target)
    # a sweep over the target gives one row per target, each to its own target
    table = sweep(with_overrides(scn, {"run.steps": 2}), {"learning.target": [0.4, 0.6]}, prof).table
    n = table["samples_to_target"].tolist()
    assert n[0] < n[1]
    # a target the user set on the scenario (sweep's explicit keys, from --set) is kept too
    grid = {"workload.prompts_per_step": [64]}
    row = sweep(with_overrides(mine, {"run.steps": 2}), grid, prof, explicit=["learning.target"]).table.iloc[0]
    to_64 = {"workload.prompts_per_step": 64, "run.until_target": True}
    kept_run = rlsim.simulate(mine, profile=prof, overrides=to_64, explicit=["learning.target"])
    profiles_run = rlsim.simulate(mine, profile=prof, overrides=to_64)  # not explicit there: the profile's target
    assert (kept_run.scenario.learning.target, profiles_run.scenario.learning.target) == (0.45, 0.6)
    assert row["samples_to_target"] == pytest.approx(kept_run.summary()["samples_to_target"])
    assert row["samples_to_target"] != pytest.approx(profiles_run.summary()["samples_to_target"])


def test_a_barely_constrained_coefficient_keeps_the_band_finite():
    """The band moves each fitted coefficient one sigma in log space, at most a factor 2: a decode efficiency of
    0.35 +- 0.5 (the bench never reached the memory bound) no longer drops to its 1e-6 floor."""
    from rlsim.run.simulation import MAX_SHIFT, _shift

    data = _profile()
    data["phases"]["rollout"]["uncertainty"] = {"decode_memory_efficiency": 0.5, "decode_iteration_overhead_s": 0.001}
    prof = profile_from_dict({**data, "learning": LEARNING})
    scn = dataclasses.replace(_scn(), costs=prof.apply(_scn().costs))  # the profile's costs folded in
    slow, fast = _shift(scn, prof, faster=False).costs, _shift(scn, prof, faster=True).costs
    assert slow.decode_memory_efficiency == pytest.approx(0.35 / MAX_SHIFT)
    assert fast.decode_memory_efficiency == pytest.approx(min(1.0, 0.35 * MAX_SHIFT))
    ratio = math.exp(0.001 / 0.01)  # a well-constrained overhead moves by exp(sigma / value)
    assert slow.decode_iteration_overhead_s == pytest.approx(0.01 * ratio)
    res = rlsim.simulate(
        _scn(**{"workload.prompts_per_step": 128, "workload.group_size": 8}), profile=prof, with_band=True
    )
    lo, hi = res.summary()["time_to_target_band_s"]
    assert hi < 4 * res.summary()["time_to_target_s"]


def test_a_scenario_under_a_profile_is_validated_once_and_errors_name_their_cause(tmp_path):
    """simulation.configure puts the file, the profile's sections and the overrides together and validates them
    once. When that fails, the file's own error comes first (as when the file was validated alone), an error only
    the profile's sections cause is a ProfileError, and one with the user's overrides is reported as is."""
    import yaml

    from rlsim.errors import ScenarioError
    from rlsim.run.simulation import configure

    small = SCENARIOS / "small_1gpu.yaml"  # max_response_tokens 1024
    raw = yaml.safe_load(small.read_text())
    long = profile_from_dict({**_profile(), "lengths": {"response_length": {"dist": "fixed", "tokens": 2000}}})
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump({**raw, "engine": {**raw["engine"], "nope": 1}}))
    for overrides in (None, {"workload.prompts_per_step": 0}):
        with pytest.raises(ScenarioError, match=r"^engine\.nope: 1 is not a known key"):
            configure(broken, long, overrides)
    only_profile = r"^profile learning or lengths section: workload\.response_length\.tokens: 2000 exceeds"
    for scenario in (small, raw, rlsim.load_scenario(small)):
        with pytest.raises(ProfileError, match=only_profile):
            configure(scenario, long)
        with pytest.raises(ScenarioError, match=r"^workload\.response_length\.tokens: 2000 exceeds the maximum"):
            configure(scenario, long, {"run.steps": 2})
    assert raw == yaml.safe_load(small.read_text())  # the plain data given is left as it is
    fits = configure(raw, long, {"workload.max_response_tokens": 4096})
    assert fits.workload.response_length.tokens == 2000 and fits.workload.max_response_tokens == 4096
    # the file is not validated on its own: a target without a curve is fine when the profile brings the curve
    half = tmp_path / "half.yaml"
    half.write_text(yaml.safe_dump({**raw, "learning": {**raw["learning"], "target": 0.5}}))
    with pytest.raises(ScenarioError, match="learning.metric"):
        rlsim.load_scenario(half)
    assert configure(half, profile_from_dict({**_profile(), "learning": LEARNING})).learning.target == 0.6
