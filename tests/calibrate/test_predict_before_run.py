"""Predict before you run: ``fit --runs`` owns every fitted number, ``validate`` only predicts and compares, and
its predictions are the ones ``rlsim run --profile`` makes from the scenario ``fit --scenario-out`` wrote.

The runs here are synthetic run directories in the exact format ``rlsim-real train`` writes (config.json,
environment.json naming a model folder, runlog.jsonl), so the tests need no torch and are deterministic; the
real loop is exercised by ``rlsim-calibrate loop`` (numbers in the README).
"""

import copy
import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from calibrate import CalibrateError
from calibrate.learning.seeds import seed_model, stall_upper
from calibrate.runs.fit import fit_runs, scenario_out
from calibrate.runs.learning import learning_model
from calibrate.runs.run import load_run
from calibrate.runs.validate import validate
from rlsim.io.runlog import SCHEMA_VERSION
from rlsim.run.profile import PhaseFit, Profile, load_profile

SMALL = Path(__file__).resolve().parents[2] / "scenarios" / "small_1gpu.yaml"
PROV = {k: "test" for k in ("device", "engine", "engine_version", "torch_version", "model", "dtype", "date", "command")}


def _model_dir(tmp_path: Path) -> Path:
    """A Hugging Face folder as calibrate reads it: config.json and a safetensors header (no weights needed)."""
    d = tmp_path / "model"
    d.mkdir(exist_ok=True)
    cfg = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 40}
    cfg.update(intermediate_size=128, num_key_value_heads=4, max_position_embeddings=128, torch_dtype="float32")
    (d / "config.json").write_text(json.dumps(cfg))
    header = json.dumps({"w": {"dtype": "F32", "shape": [300_000], "data_offsets": [0, 1_200_000]}}).encode()
    (d / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    return d


def _write_run(
    tmp_path, p, seed, model_dir, *, g=8, max_steps=300, n_star=6000.0, long_responses=0, ppo=False, accuracy=None
):
    """A run at B = p x g that crosses 0.9 at ``n_star`` samples (it stops there, or at ``max_steps``); response
    lengths 2-8 (``long_responses`` of the shortest at length 8 instead, per step); wall-clock from a simple
    per-sample cost. ``ppo``: with a critic whose values pass takes half the old log-prob pass and whose training
    0.6 of the actor's. ``accuracy``: the share of exactly correct responses (``accuracy_train``) at samples S,
    a function of S, logged when given."""
    b = p * g
    steps = min(max_steps, math.ceil(min(n_star, 1e7) / b) + 1)
    run = tmp_path / f"P{p}_seed{seed}"
    run.mkdir()
    algo = "ppo" if ppo else "grpo"
    cfg = {"task": "parity:length=3", "algo": algo, "engine": "hf", "lr_rule": "sqrt", "max_new_tokens": 8}
    cfg.update(kl_coef=0.0, mini_batches=1, epochs=1, lr0=1e-3, reference_batch=128, seed=seed, max_steps=max_steps)
    (run / "config.json").write_text(json.dumps(cfg))
    (run / "environment.json").write_text(json.dumps({"device": "cpu (2 cores)", "model_dir": str(model_dir)}))
    rng = np.random.default_rng(seed)
    wall, lines = 0.0, []
    for step in range(1, steps + 1):
        counts = np.bincount(rng.choice([2, 2, 2, 3, 4, 8], size=b), minlength=9)
        left = long_responses  # the shortest responses come out at the cap instead (no count below 0)
        for k in range(8):
            moved = min(int(counts[k]), left)
            counts[k] -= moved
            counts[8] += moved
            left -= moved
        samples = step * b
        # R(n_star) = 0.9: 0.48 / (1 + (m / n_star)^2) = 0.4 with m = sqrt(0.2) n_star
        metric = 0.5 + 0.48 / (1.0 + (math.sqrt(0.2) * n_star / samples) ** 2.0) if step % 2 == 0 else None
        timing = {"rollout": 2e-4 * b, "reward": 1e-6 * b, "old_logprob": 1e-4 * b, "train_actor": 4e-4 * b}
        timing["weight_sync"] = 8e-4
        if ppo:
            timing.update(values=0.5e-4 * b, train_critic=2.4e-4 * b)
        wall += sum(timing.values()) + 2e-5 * b
        rec = {
            "schema_version": SCHEMA_VERSION,
            "run_id": run.name,
            "step": step,
            "cumulative_samples": samples,
            "prompts": p,
            "responses": b,
            "prompt_tokens": 5 * b,
            "response_tokens": int((counts * np.arange(9)).sum()),
            "response_tokens_max": int(np.flatnonzero(counts)[-1]),
            "response_length_counts": counts.tolist(),
            "lr": 1e-3,
            "reward_mean": 0.5,
            "eval_metric": metric,
            "wall_s": wall,
            "timing_s": timing,
            "grad_norm_sq_small": 2.0 + 60.0 / (b / 2),
            "grad_norm_sq_big": 2.0 + 60.0 / b,
            "grad_batch_small": b // 2,
            "grad_batch_big": b,
            "other_cpu_fraction": 0.0,
        }
        if step == 1:
            rec["eval_metric_initial"] = 0.5
        if accuracy is not None:
            rec["accuracy_train"] = accuracy(samples)
        lines.append(json.dumps(rec))
    (run / "runlog.jsonl").write_text("\n".join(lines) + "\n")
    return run


def _sub(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


def _bench_profile() -> Profile:
    """A profile as ``fit`` on bench tables would give (values of the order the CPU loop fits)."""
    phases = {
        "rollout": PhaseFit(
            "roofline",
            {
                "decode_iteration_overhead_s": 8e-4,
                "decode_per_seq_overhead_s": 7e-6,
                "decode_memory_efficiency": 0.12,
                "prefill_overhead_s": 2e-3,
                "prefill_compute_efficiency": 0.4,
                "rollout_overhead_s": 0.0,
                "rollout_s_per_sample": 0.0,
            },
        ),
        "train_actor": PhaseFit("roofline", {"train_compute_efficiency": 0.6, "train_step_overhead_s": 0.012}),
        "old_logprob": PhaseFit("roofline", {"forward_compute_efficiency": 0.55, "forward_overhead_s": 0.002}),
        "weight_sync": PhaseFit("roofline", {"weight_sync_latency_s": 2e-4, "sleep_wake_overhead_s": 0.0}),
    }
    return Profile(provenance=dict(PROV), phases=phases)


@pytest.fixture
def fitted(tmp_path):
    model = _model_dir(tmp_path)
    refs = [_write_run(tmp_path, 16, s, model, n_star=6000 * (1 + 0.1 * s)) for s in range(4)]
    profile, report = fit_runs(_bench_profile(), [load_run(r) for r in refs], 0.9)
    return tmp_path, model, refs, profile, report


def test_fit_with_runs_owns_every_fitted_number(fitted):
    tmp_path, _, refs, profile, report = fitted
    # lengths: the pooled histogram of response lengths, one bin per length
    resp = profile.lengths["response_length"]
    assert resp["dist"] == "empirical" and resp["bin_edges"][0] == 1.5
    assert profile.lengths["prompt_length"]["tokens"] == 5
    # reward and glue from the logs (1 us and 20 us per sample as written)
    assert profile.phases["reward"].parameters["reward_s_per_sample"] == pytest.approx(1e-6)
    assert profile.phases["rollout"].parameters["rollout_s_per_sample"] == pytest.approx(2e-5, rel=1e-6)
    # in-loop factors, one per bench phase, recorded in the provenance
    assert set(profile.provenance["in_loop_factors"]) == {"rollout", "train_actor", "old_logprob", "weight_sync"}
    # the learning model: typed, its median anchored at the seeds' median crossing, Adam's power under sqrt
    learn = profile.learning
    assert learn["version"] == 1 and learn["batch_multiplier"]["critical_power"] == 0.5
    crossings = learn["measured_samples_to_target"]
    assert learn["median_samples_to_target"] == pytest.approx(math.exp(np.mean(np.log(crossings))))
    # the profile round-trips through the file and its load checks
    path = tmp_path / "p.json"
    path.write_text(profile.dumps())
    assert load_profile(path).to_dict() == profile.to_dict()


def test_validate_never_changes_the_profile_and_its_numbers_are_rlsim_runs(fitted):
    """validate only predicts: the profile is the same object and dict after it, and each batch's prediction is
    exactly what ``rlsim run SCENARIO --profile P --set workload.prompts_per_step=P --json`` prints."""
    tmp_path, model, refs, profile, _ = fitted
    held = [_write_run(tmp_path, p, s, model) for p in (8, 64) for s in range(2)]
    before = copy.deepcopy(profile.to_dict())
    table, details = validate([*refs, *held], profile)
    assert profile.to_dict() == before
    assert table.set_index("run").loc[[r.name for r in refs], "held_out"].eq(False).all()
    assert table.set_index("run").loc[[r.name for r in held], "held_out"].all()
    ppath, spath = tmp_path / "profile.json", tmp_path / "scenario.yaml"
    ppath.write_text(profile.dumps())
    spath.write_text(yaml.safe_dump(scenario_out([load_run(r) for r in refs], profile)))
    for row in details["by_batch"]:
        proc = subprocess.run(
            [sys.executable, "-m", "rlsim.cli", "run", str(spath), "--profile", str(ppath), "--json"]
            + ["--set", f"workload.prompts_per_step={row['prompts_per_step']}"],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert row["predicted_step_time_s"] == out["step_time_s"]
        assert row["predicted_samples_to_target"] == out["samples_to_target_if_reached"]
        assert row["predicted_time_to_target_s"] == out["time_to_target_if_reached_s"]
        assert row["predicted_probability_reaching_target"] == out["probability_reaching_target"]
        # per phase, so a miss names its phase: the same run's phase seconds against the seeds' median
        runs_here = table[table["responses_per_step"] == row["responses_per_step"]]
        glue = profile.phases["rollout"].parameters["rollout_s_per_sample"] * row["responses_per_step"]
        for phase in ("rollout", "reward", "old_logprob", "train_actor", "weight_sync"):
            # the rollout's timer in the runs does not see the per-sample glue: the engine's part is compared
            pred = out["phase_time_s"][phase] - (glue if phase == "rollout" else 0.0)
            assert row[f"predicted_s/{phase}"] == pytest.approx(pred, rel=1e-12)
            meas = runs_here[f"measured_s/{phase}"].median()
            assert row[f"measured_s/{phase}"] == meas
            assert row[f"error/{phase}"] == pytest.approx(pred / meas - 1, rel=1e-9)
    from calibrate.runs.report import report_html

    page = report_html(table, details, profile)  # the report shows the per-phase errors in a table of their own
    assert "Per phase" in page and "B = 128 (reference)" in page and "rollout" in page
    worst = details["summary"]["worst_phase"]
    for row in details["by_batch"]:
        if not row["held_out"]:
            continue
        name, err = worst[str(row["responses_per_step"])]
        assert abs(err) == max(abs(v) for k, v in row.items() if k.startswith("error/") and v is not None)
        assert row[f"error/{name}"] == err


def test_a_held_out_runs_measured_lengths_do_not_change_its_prediction(fitted):
    """The prediction for a batch comes from the profile's length model: a held-out run whose responses came out
    longer (400 of its shortest responses at the cap instead, each step) gets the prediction of one that did not."""
    tmp_path, model, _, profile, _ = fitted
    short = _write_run(_sub(tmp_path, "a"), 64, 0, model)
    long = _write_run(_sub(tmp_path, "b"), 64, 0, model, long_responses=400)
    tokens = [
        sum(r.records[1]["response_length_counts"][k] * k for k in range(9)) for r in map(load_run, (short, long))
    ]
    assert tokens[1] > tokens[0] + 2000  # the runs measured different lengths
    _, d_short = validate([short], profile)
    _, d_long = validate([long], profile)
    assert d_short["runs"][short.name]["predicted"] == d_long["runs"][long.name]["predicted"]


def test_seeds_that_never_reach_the_target_are_part_of_the_answer(tmp_path):
    """A reference seed that never crosses within its budget is censored in the seed model (here a stall: its
    budget is far past the others' crossings), and a batch whose budget is short predicts fewer seeds reaching the
    target; validate compares the share that did with the probability and its lower bound."""
    model = _model_dir(tmp_path)
    refs = [_write_run(tmp_path, 16, s, model, n_star=5000 * (1 + 0.15 * s)) for s in range(3)]
    never = _write_run(tmp_path, 16, 9, model, n_star=1e9)
    runs = [load_run(r) for r in [*refs, never]]
    learn = learning_model(runs, 0.9)
    assert learn["runs_reaching_target"] == 3 and learn["budget_samples"] == [300 * 128]
    # 300 steps is far past the other seeds' crossings: the censored seed is a stall, not a wider spread
    assert learn["stall_probability"] == pytest.approx(0.25, abs=0.01)
    assert learn["samples_spread"] < 0.25 and learn["stall_probability_upper_90"] > 0.5
    profile, _ = fit_runs(_bench_profile(), runs, 0.9)
    short = _write_run(_sub(tmp_path, "s"), 8, 0, model, max_steps=12)
    _, details = validate([short], profile)
    row = details["by_batch"][0]
    assert 0 < row["predicted_probability_reaching_target"] < 0.75  # the stall, and a budget below the median
    assert row["predicted_samples_to_target"] < learn["median_samples_to_target"]  # those that reach are the fast
    assert row["measured_share_reaching_target"] == 0.0 and row["predicted_probability_reaching_target_low"] < 0.5


def test_the_seed_model_recovers_spread_and_stalls():
    """Censored at a budget in their tail, lognormal seeds give back their (mu, sigma) and no stall; with a share
    of seeds that never get there (censored even at a far budget) the stall share comes back too. (Censored near
    the median, a stall and a wider spread explain the censored seeds almost alike: the budget must reach past
    the bulk of the seeds to tell them apart, as the loop's 300 steps do.)"""
    rng = np.random.default_rng(0)
    x = np.exp(rng.normal(math.log(1000), 0.4, size=4000))
    budget = 2000.0
    mu, sigma, stall = seed_model(list(x[x <= budget]), [budget] * int((x > budget).sum()))
    assert mu == pytest.approx(math.log(1000), abs=0.03) and sigma == pytest.approx(0.4, abs=0.03)
    assert stall < 0.01
    stalled = rng.random(4000) < 0.2
    far = 1e5  # every seed that does not stall reaches the target well within this budget
    mu, sigma, stall = seed_model(list(x[~stalled]), [far] * int(stalled.sum()))
    assert stall == pytest.approx(0.2, abs=0.02) and sigma == pytest.approx(0.4, abs=0.03)
    assert seed_model([900.0, 1100.0], []) == (
        pytest.approx(math.log(math.sqrt(900 * 1100))),
        pytest.approx(float(np.std(np.log([900, 1100]), ddof=1))),
        0.0,
    )
    assert stall_upper(0, 6) == pytest.approx(1 - 0.1 ** (1 / 6))  # Clopper-Pearson with no stall seen


def test_runs_of_different_setups_are_not_pooled(fitted):
    tmp_path, model, refs, profile, _ = fitted
    other = _write_run(_sub(tmp_path, "o"), 16, 0, model)
    cfg = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**cfg, "task": "addition"}))
    with pytest.raises(CalibrateError, match="differ in task"):
        validate([refs[0], other], profile)
    with pytest.raises(CalibrateError, match="differ in task"):
        fit_runs(_bench_profile(), [load_run(refs[0]), load_run(other)], 0.9)


def test_validate_says_when_nothing_is_held_out_and_flags_an_outlier(fitted):
    tmp_path, model, refs, profile, _ = fitted
    _, details = validate(refs, profile)
    assert details["notes"] and "nothing is held out" in details["notes"][0]
    assert details["summary"]["held_out"] is False
    slow = _write_run(_sub(tmp_path, "x"), 16, 7, model)
    recs = [json.loads(line) for line in (slow / "runlog.jsonl").read_text().splitlines()]
    for r in recs:
        r["wall_s"] *= 3.0  # a run slowed by another process
    (slow / "runlog.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    table, details = validate([*refs, slow], profile)
    assert table.set_index("run")["outlier"].to_dict()[slow.name] is True
    assert any(slow.name in w and "median" in w for w in details["warnings"])
    # the batch's step time is the median over seeds: the slowed run does not move it by 3x
    by = details["by_batch"][0]
    assert by["measured_step_time_s"] < 1.5 * float(table["measured_step_time_s"].iloc[0])


def test_what_the_user_sets_wins_over_the_profiles_lengths_and_learning(fitted):
    """The profile's length model replaces the scenario's lengths, but --set / a grid / overrides win over it, as
    they do over its learning model."""
    import rlsim

    tmp_path, _, refs, profile, _ = fitted
    raw = scenario_out([load_run(r) for r in refs], profile)
    raw["workload"]["response_length"] = {"dist": "fixed", "tokens": 3}  # the file says 3; the profile its histogram
    assert rlsim.simulate(raw, profile=profile).scenario.workload.response_length.dist == "empirical"
    mine = {"dist": "fixed", "tokens": 6}
    got = rlsim.simulate(raw, profile=profile, overrides={"workload.response_length": mine}).scenario
    assert got.workload.response_length.tokens == 6 and got.learning.target == 0.9
    kept = rlsim.simulate(raw, profile=profile, explicit=["workload.response_length"]).scenario
    assert kept.workload.response_length.tokens == 3


def test_length_phases_follow_training_progress(tmp_path):
    """With --length-phases the lengths come in histograms by the samples a step starts at; a simulated run draws
    each step's responses from the phase it is in (a run at another batch meets them at the same samples)."""
    import rlsim
    from calibrate.runs.fit import length_model

    model = _model_dir(tmp_path)
    runs = [load_run(_write_run(tmp_path, 16, s, model)) for s in range(2)]
    pooled = length_model(runs, 1)
    assert pooled["response_length_by_samples"] == [] and pooled["response_length"]["dist"] == "empirical"
    phased = length_model(runs, 3)["response_length_by_samples"]
    ends = [p["until_samples"] for p in phased]
    assert len(phased) == 3 and ends[-1] is None and ends[0] < ends[1]
    total = sum(sum(p["length"]["weights"]) for p in phased)
    assert total == sum(pooled["response_length"]["weights"])  # every response in exactly one phase
    late = {"dist": "fixed", "tokens": 7}
    scn = {"workload.response_length_by_samples": [{"length": {"dist": "fixed", "tokens": 2}, "until_samples": 300}]}
    scn["workload.response_length_by_samples"].append({"length": late})
    res = rlsim.simulate(SMALL, overrides={**scn, "run.steps": 3})
    per = [r["response_tokens"] / r["responses"] for r in res.records]
    assert per == [2.0, 2.0, 7.0]  # B = 256: the third step starts at 512 samples
    assert length_model(runs, 3)["length_progress"] == "learning_rate"  # the default: lengths follow the summed LR
    assert "length_progress" not in pooled  # one histogram has no progress to follow


@pytest.mark.parametrize(
    "progress, rule, expected",
    [
        # B = 256 at an LR stated for 64 responses: sqrt gives each step twice the LR, so 128 samples' progress
        ("learning_rate", "sqrt", [2.0, 2.0, 2.0, 7.0]),
        ("learning_rate", "linear", [2.0, 2.0, 7.0, 7.0]),  # 4x the LR: the same as samples
        ("learning_rate", "none", [2.0] * 4),  # the LR of 64 responses: 64 per step
        ("samples", "sqrt", [2.0, 2.0, 7.0, 7.0]),
    ],
)
def test_length_phases_follow_the_cumulative_learning_rate_or_the_samples(progress, rule, expected):
    """workload.length_progress: a phase ends at ``until_samples`` of progress, counted in samples or in summed
    learning rate (samples at learning.reference_batch), so a larger batch under sqrt scaling stays longer in
    the early lengths per sample than its samples alone say."""
    import rlsim

    phases = [
        {"length": {"dist": "fixed", "tokens": 2}, "until_samples": 300},
        {"length": {"dist": "fixed", "tokens": 7}},
    ]
    over = {
        "workload.response_length_by_samples": phases,
        "workload.length_progress": progress,
        "learning.reference_batch": 64,
        "learning.lr_rule": rule,
        "run.steps": 4,
    }
    res = rlsim.simulate(SMALL, overrides=over)
    assert res.records[0]["responses"] == 256
    assert [r["response_tokens"] / r["responses"] for r in res.records] == expected


@pytest.mark.parametrize(
    "phases, match",
    [
        ([{"length": {"dist": "fixed", "tokens": 2}, "until_samples": 10}], "must be null for the last phase only"),
        (
            [
                {"length": {"dist": "fixed", "tokens": 2}, "until_samples": 50},
                {"length": {"dist": "fixed", "tokens": 2}, "until_samples": 10},
                {"length": {"dist": "fixed", "tokens": 2}},
            ],
            "until_samples must increase",
        ),
        ([{"length": {"dist": "fixed", "tokens": 99999}}], r"response_length_by_samples\[0\].length.tokens"),
    ],
)
def test_bad_length_phases_are_refused_with_the_field(phases, match):
    import rlsim
    from rlsim.errors import ScenarioError

    with pytest.raises(ScenarioError, match=match):
        rlsim.load_scenario(SMALL, {"workload.response_length_by_samples": phases})


def test_fit_and_validate_refuse_runs_with_other_torch_threads_than_the_bench(tmp_path):
    """Each thread count is a different machine to the cost model: fit and validate refuse such runs in one line
    that says how to go on, and with --allow-thread-mismatch they go on with the same line as a warning."""
    model = _model_dir(tmp_path)
    refs = [_write_run(tmp_path, 16, s, model) for s in range(2)]
    for r in refs:  # as rlsim-real train records it
        env = json.loads((r / "environment.json").read_text())
        (r / "environment.json").write_text(json.dumps({**env, "torch_threads": 2}))
    prof = _bench_profile()
    same = Profile(provenance={**prof.provenance, "bench_torch_threads": {"train_actor": 2}}, phases=prof.phases)
    other = Profile(provenance={**prof.provenance, "bench_torch_threads": {"train_actor": 1}}, phases=prof.phases)
    runs = [load_run(r) for r in refs]
    assert not any("torch thread" in w for w in fit_runs(same, runs, 0.9)[1]["warnings"])
    with pytest.raises(CalibrateError, match=r"ran with 2 torch thread\(s\).*--allow-thread-mismatch"):
        fit_runs(other, runs, 0.9)
    warned = [w for w in fit_runs(other, runs, 0.9, allow_thread_mismatch=True)[1]["warnings"] if "torch thread" in w]
    assert len(warned) == 1 and "the reference runs ran with 2 torch thread(s)" in warned[0]
    fitted, _ = fit_runs(same, runs, 0.9)
    mismatched = Profile(
        provenance={**fitted.provenance, "bench_torch_threads": {"train_actor": 1}},
        phases=fitted.phases,
        learning=fitted.learning,
        lengths=fitted.lengths,
    )
    with pytest.raises(CalibrateError, match="the validated runs ran with 2"):
        validate(refs, mismatched)
    _, details = validate(refs, mismatched, allow_thread_mismatch=True)
    assert any("the validated runs ran with 2 torch thread(s)" in w for w in details["warnings"])


def test_stalled_seeds_do_not_flatten_the_curve_and_a_degenerate_one_is_said(tmp_path):
    """Three of five reference seeds stall at 0.5 (a constant answer). Averaged in, they pulled the curve's plateau
    under the target and the fit lifted it to target + 1e-3 in silence; now the curve is the two learners' (their
    plateau, 0.98 as written) and the stall share says the rest, in one line. A curve that really levels off at the
    target is fitted, but warned about in one line, never returned in silence."""
    model = _model_dir(tmp_path)
    learners = [_write_run(tmp_path, 16, s, model, n_star=6000 * (1 + 0.1 * s), max_steps=120) for s in range(2)]
    stalled = [_write_run(tmp_path, 16, s, model, n_star=1e12, max_steps=120) for s in range(2, 5)]
    runs = [load_run(r) for r in [*learners, *stalled]]
    _, report = fit_runs(_bench_profile(), runs, 0.9)
    learning = report["learning"]
    assert learning["metric"]["asymptote"] > 0.95 and not learning["degenerate"]
    assert learning["curve_from_runs"] == [r.name for r in learners]
    assert learning["stall_probability"] > 0.3 and learning["stall_model"].startswith("constant across batch")
    (line,) = [w for w in report["warnings"] if w.startswith("learning:") and "never reached" in w]
    assert "3 of 5 reference seeds never reached the target" in line and "same at every batch size" in line
    # these runs stop at the target, as rlsim-real train --target does: the plateau is not judged, but said
    assert learning["plateau_seen"] is False
    (line,) = [w for w in report["warnings"] if "plateau" in w]
    assert "not observed" in line and "other target" in line
    # a curve whose plateau is the target: 0.5 + 0.402 / (1 + (1500 / samples)^3) crosses 0.9 near 8,800 samples
    # and levels off at 0.902 for the rest of the 120 steps (15,360 samples)
    where = _sub(tmp_path, "flat")
    flat = [load_run(_write_run(where, 16, s, model, n_star=1e12, max_steps=120)) for s in range(2)]
    for run in flat:
        for rec in run.records:
            if rec.get("eval_metric") is not None:
                rec["eval_metric"] = 0.5 + 0.402 / (1 + (1500 / rec["cumulative_samples"]) ** 3)
    profile, report = fit_runs(_bench_profile(), flat, 0.9)
    assert report["learning"]["degenerate"] and report["learning"]["plateau_seen"]
    lines = [w for w in report["warnings"] if w.startswith("learning:")]
    assert any("levels off at" in w and "not clearly above the target 0.9" in w for w in lines)
    # and every prediction made with that profile says so too
    from rlsim.run.simulation import simulate

    result = simulate(scenario_out(flat, profile), profile=profile)
    assert any(w.startswith("profile learning model: the reference curve levels off") for w in result.warnings)


def test_ppo_stalls_carry_to_other_batches_as_steps_without_a_correct_answer(tmp_path):
    """PPO reference seeds at B = 64, 2 of 5 stalled, their first steps 0.5% correct: the fit measures that initial
    success from the early steps alone (the later ones are 60% correct) and carries the stall share to other batches
    as a hazard per step that holds no correct answer. By hand, with q the fitted share at 64 and p0 = 0.005:
    r(16) = 4 x 0.995 ** -48 = 5.069, r(256) = 0.25 x 0.995 ** 192 = 0.0955, and q(B) = 1 - (1 - q) ** r; so a
    quarter of the batch stalls far more and 4x far less. The same runs as GRPO keep one share at every batch
    (zero-advantage groups do not move the policy). The validate band at B = 16 is carried alike."""
    import rlsim
    from calibrate.runs.validate import reach_band
    from rlsim.learning.model import stall_at

    model = _model_dir(tmp_path)

    def acc(samples):
        return 0.005 if samples <= 2000 else 0.6

    def runs(where, ppo):
        learners = [
            _write_run(where, 8, s, model, n_star=6000 * (1 + 0.1 * s), ppo=ppo, accuracy=acc) for s in (0, 1, 2)
        ]
        stalled = [_write_run(where, 8, s, model, n_star=1e12, max_steps=200, ppo=ppo, accuracy=acc) for s in (3, 4)]
        return [load_run(r) for r in [*learners, *stalled]]

    profile, report = fit_runs(_bench_profile(), runs(_sub(tmp_path, "ppo"), True), 0.9)
    learning = report["learning"]
    assert learning["stall_form"] == "signal_free_steps"
    assert learning["initial_success"] == pytest.approx(0.005)  # the steps at or below 10% of N*, not the later
    q = learning["stall_probability"]
    assert 0.1 < q < 0.6
    scn = profile.with_fitted(rlsim.load_scenario(SMALL))
    assert stall_at(scn.learning, 64) == pytest.approx(q)
    assert stall_at(scn.learning, 16) == pytest.approx(1 - (1 - q) ** 5.069, rel=1e-3)
    assert stall_at(scn.learning, 256) == pytest.approx(1 - (1 - q) ** 0.0955, rel=1e-3)
    assert stall_at(scn.learning, 16) > 2 * q and stall_at(scn.learning, 256) < q / 5
    (line,) = [w for w in report["warnings"] if "never reached" in w]
    assert "hazard per step without a correct answer" in line and "0.0050" in line
    # the band at a quarter of the batch: the reference's uncertain share, carried; fewer seeds than at 64 reach it
    p16 = (1 - stall_at(scn.learning, 16)) * 0.99
    lo16, hi16 = reach_band(p16, learning, 10, batch=16)
    lo64, hi64 = reach_band((1 - q) * 0.99, learning, 10, batch=64)
    assert hi16 < hi64 and hi16 <= 8
    # GRPO: the same runs keep the share constant
    _, grpo = fit_runs(_bench_profile(), runs(_sub(tmp_path, "grpo"), False), 0.9)
    assert grpo["learning"]["stall_form"] == "constant" and "GRPO" in grpo["learning"]["stall_model"]


def test_signal_free_steps_need_the_initial_success():
    import rlsim
    from rlsim.scenario import ScenarioError

    with pytest.raises(ScenarioError, match="learning.initial_success.*required for learning.stall_form"):
        rlsim.load_scenario(SMALL, {"learning.stall_form": "signal_free_steps"})
    rlsim.load_scenario(SMALL, {"learning.stall_form": "signal_free_steps", "learning.initial_success": 0.0})


def test_a_mid_point_inside_the_first_step_is_a_degenerate_curve():
    from calibrate.runs.learning import degenerate_reasons

    # the issue's fit: plateau lifted to 0.901 for a target of 0.9, mid-point 0.018 samples at B = 64
    reasons = degenerate_reasons(0.5, 0.899, 0.0, 0.9, 0.018, 64)
    assert len(reasons) == 2 and "levels off at 0.899" in reasons[0] and "0.018 samples" in reasons[1]
    assert degenerate_reasons(0.5, 0.98, 0.001, 0.9, 5000.0, 64) == []
    assert len(degenerate_reasons(0.5, 0.98, 0.05, 0.9, 5000.0, 64)) == 1  # plateau within two standard errors


def test_the_predicted_band_of_seeds_reaching_the_target():
    """Counted by hand: with the stall share known (no reference seeds to be unsure from), the count is binomial;
    Binomial(10, 0.5) has P(<= 1) = 11/1024 < 5% <= P(<= 2) = 56/1024 and P(<= 7) = 968/1024 < 95% <= P(<= 8), so
    the 90% band is [2, 8]; Binomial(4, 0.5): P(0) = 1/16 >= 5%, P(<= 3) = 15/16 < 95%: [0, 4]. An uncertain stall
    share (3 of 5 reference seeds stalled) only widens it: the issue's 0 of 5 and 4 of 5 at p = 0.4 both lie in it."""
    from calibrate.runs.validate import reach_band

    assert reach_band(0.5, {"runs": 0}, 10) == [2, 8]
    assert reach_band(0.5, {"runs": 0}, 4) == [0, 4]
    assert reach_band(None, {"runs": 5}, 5) is None and reach_band(0.5, None, 5) is None
    issue = {"runs": 5, "runs_reaching_target": 2, "stall_probability": 0.6}
    lo, hi = reach_band(0.4, issue, 5)
    assert lo == 0 and hi >= 4
    sure = reach_band(0.4, {"runs": 0}, 5)
    assert lo <= sure[0] and hi >= sure[1]


def test_the_band_starts_at_zero_beyond_the_verified_range():
    """PPO on first:length=3 (docs/calibrate.md): 5 of 5 reference seeds reached 0.5 at B = 64, so the band at
    B = 16 was [3, 5] and 0 of 5 reached it there. Two doublings from the only fitted batch the invariant range's
    edge may lie between, so the band starts at 0; one doubling away (and inside fit-learning's fitted batches) it
    is the Beta-binomial band as before."""
    from calibrate.runs.validate import doublings_outside, reach_band

    ref = {"runs": 5, "runs_reaching_target": 5, "stall_probability": 0.0, "reference_batch": 64}
    assert reach_band(0.99, ref, 5) == [3, 5]
    assert reach_band(0.99, ref, 5, batch=32) == [3, 5]
    assert reach_band(0.99, ref, 5, batch=16) == [0, 5] and reach_band(0.99, ref, 5, batch=256) == [0, 5]
    assert doublings_outside(16, ref) == 2.0 and doublings_outside(64, ref) == 0.0
    several = {**ref, "fitted_range": {"batch": [32, 128]}}
    assert doublings_outside(256, several) == 1.0 and reach_band(0.99, several, 5, batch=256) == [3, 5]
    assert reach_band(0.99, several, 5, batch=8) == [0, 5]


def test_a_bench_and_runs_measured_under_different_loads_are_refused(tmp_path):
    """Issue 28: a bench taken beside other work (median 50% of the machine) and quiet reference runs gave a fit
    that was off on its own reference batch; the in-loop factors carry the difference into every prediction. fit
    refuses it in one line that says how to rerun; --allow-load-mismatch goes on with the line as a warning; loads
    within 25 points of each other pass."""
    model = _model_dir(tmp_path)
    runs = [load_run(_write_run(tmp_path, 16, s, model)) for s in range(2)]  # other_cpu_fraction 0 each step
    prof = _bench_profile()
    loaded = Profile(
        provenance={**prof.provenance, "bench_load": {"median_other_cpu_fraction": 0.5}}, phases=prof.phases
    )
    with pytest.raises(CalibrateError, match=r"median 50% of the machine and the reference runs 0%.*allow-load"):
        fit_runs(loaded, runs, 0.9)
    _, report = fit_runs(loaded, runs, 0.9, allow_load_mismatch=True)
    assert any("median 50% of the machine" in w for w in report["warnings"])
    near = Profile(provenance={**prof.provenance, "bench_load": {"median_other_cpu_fraction": 0.2}}, phases=prof.phases)
    _, report = fit_runs(near, runs, 0.9)
    assert not any("of the machine and the reference runs" in w for w in report["warnings"])


def test_loop_first_seed_is_checked_and_reaches_the_runs(tmp_path, capsys):
    """--first-seed picks a fresh set of seeds; a negative one is refused before anything is written."""
    from calibrate.cli import main as calibrate_main
    from calibrate.loop.commands import train_command

    out = tmp_path / "loop"
    code = calibrate_main(["loop", "--first-seed", "-1", "--seeds", "2", "--threads", "1", "-o", str(out)])
    assert code == 2 and "--first-seed -1 must be 0 or more" in capsys.readouterr().err and not out.exists()
    import argparse

    args = argparse.Namespace(task="parity:length=3", algo="ppo", engine="hf", group_size=8, target=0.5,
                              max_steps=10, threads="1")  # fmt: skip
    cmd = train_command(args, 8, 7, tmp_path / "r")
    assert cmd[cmd.index("--seed") + 1] == "7"


def test_the_band_of_the_median_over_the_seeds_that_reached_the_target():
    """One seed and a budget far away: the lognormal's own 5-95% quantiles, exp(+-1.645 sigma) x median; more seeds
    narrow it (about as 1 / sqrt(k)); a budget cuts the draws off at it; no spread, no band. Loop 6's B = 16 (two
    seeds reached 0.5: 9,376 and 4,826 samples, median 7,101, 29% above the predicted 5,040 with sigma 0.54) lies
    inside its band: a 20% check on two seeds is below what the seeds can show."""
    from calibrate.runs.validate import median_band

    lo, hi = median_band(1000.0, 0.5, 1e12, 1)
    assert lo == pytest.approx(1000 * math.exp(-1.645 * 0.5), rel=0.03)
    assert hi == pytest.approx(1000 * math.exp(1.645 * 0.5), rel=0.03)
    lo9, hi9 = median_band(1000.0, 0.5, 1e12, 9)
    assert 1.3 < math.log(hi / lo) / math.log(hi9 / lo9) < 3.5
    assert median_band(1000.0, 0.5, 1200.0, 3)[1] <= 1200.0
    assert median_band(1000.0, 0.0, 1e12, 3) == [1000.0, 1000.0] and median_band(None, 0.5, 1e12, 3) is None
    lo16, hi16 = median_band(5040.0, 0.542, 9600.0, 2)
    assert lo16 < 7101 < hi16 and 7101 / 5040 > 1.2
