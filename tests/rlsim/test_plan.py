"""rlsim plan: the search space, pruning with reasons, constraints, the winner, the Pareto front, the explanation
in the paper's terms, the files it writes, and that executors and repeats give the same plan.csv."""

import json
import math
import subprocess
import sys

import pandas as pd
import pytest
import yaml

import rlsim
from rlsim.errors import RlsimError, ScenarioError
from rlsim.plan import PlanError, pareto_front, plan
from rlsim.plan.explain import explain
from rlsim.plan.space import _splits, baseline_config, build_space, configurations
from rlsim.run.simulation import configure
from rlsim.scenario import with_overrides
from rlsim.scenario.build import with_learning
from tests.conftest import SCENARIOS

PAPER = SCENARIOS / "paper_grpo.yaml"
CLI = [sys.executable, "-m", "rlsim.cli"]


@pytest.fixture(scope="module")
def paper():
    return rlsim.load_scenario(PAPER)


@pytest.fixture(scope="module")
def small_plan(paper):
    """P in {128, 1024}, async-1 and colocated, engine TP 2 and 4: 48 configurations + their finalists."""
    return plan(
        paper,
        grid={"workload.prompts_per_step": [128, 1024], "engine.tensor_parallel_size": [2, 4]},
        schedules=["async-1", "colocated"],
        finalists=2,
        workers=1,
    )


def test_default_axes_follow_the_scenario(paper):
    space = build_space(paper)
    assert space.prompts == (32, 64, 128, 256, 512, 1024, 2048, 4096)  # P x 2^-2 .. P x 2^5
    assert space.groups == (8,) and space.lr_rules == ("sqrt", "linear", "none")
    assert space.schedules == ("colocated", "separate", "async-1", "async-2")
    assert space.engine_tp == (1, 2, 4, 8) and space.gpus == ("H100-SXM",) and space.counts == (64,)
    assert build_space(paper, max_gpus=64).counts == (8, 16, 32, 64)
    grid = build_space(paper, grid={"workload.prompts_per_step": [256], "run.seed": [0, 1]})
    assert grid.prompts == (256,) and grid.extra == {"run.seed": [0, 1]}


def test_bad_axes_are_refused_naming_the_flag(paper):
    with pytest.raises(ScenarioError, match="--gpus"):
        build_space(paper, gpus=8, max_gpus=64)
    with pytest.raises(ScenarioError, match="--schedules"):
        build_space(paper, grid={"schedule.mode": ["async"]})
    with pytest.raises(ScenarioError, match="async-K"):
        build_space(paper, schedules=["async-0"])


def test_splits_are_whole_replicas_with_both_pools_used():
    for n, tp in ((64, 8), (64, 2), (16, 4), (8, 8)):
        for r, t in _splits(n, tp, (0.5, 0.625, 0.75, 0.875)):
            assert r % tp == 0 and r > 0 and t > 0 and r + t == n
    assert _splits(8, 8, (0.5, 0.875)) == []  # one 8-wide replica leaves no trainer


def test_configurations_share_a_systems_key_across_lr_rules(paper):
    configs = configurations(build_space(paper, grid={"workload.prompts_per_step": [128]}, schedules=["async-1"]))
    assert len(configs) == 3 * 4 * 4  # 3 rules x 4 TP x 4 splits (TP 8: 32/32, 40/24, 48/16, 56/8)
    keys = {}
    for c in configs:
        keys.setdefault(c.systems_key(), set()).add(c.overrides["learning.lr_rule"])
    assert all(v == {"sqrt", "linear", "none"} for v in keys.values())


def test_with_learning_equals_a_full_rebuild(paper):
    over = {"learning.lr_rule": "none", "learning.untuned_lr_penalty": 2.0}
    assert with_learning(paper, over) == configure(paper, None, over)
    with pytest.raises(ScenarioError, match="learning.lr_rule"):
        with_learning(paper, {"learning.lr_rule": "cubic"})


def test_the_baseline_is_the_scenario_as_given(paper, small_plan):
    base = small_plan.row(small_plan.baseline)
    assert small_plan.overrides(small_plan.baseline) == baseline_config(paper).overrides
    assert (base["prompts_per_step"], base["schedule"], base["split"], base["engine_tp"]) == (
        128,
        "async-1",
        "48/16",
        2,
    )
    assert base["baseline"] and base["fidelity"] == "full"
    # its full simulation is rlsim run's, to the target
    ref = rlsim.simulate(paper, with_band=True, to_target=True).summary()
    assert base["time_to_target_s"] == pytest.approx(ref["time_to_target_s"], rel=1e-12)


def test_the_table_carries_no_attrs_and_each_configuration_its_overrides(small_plan):
    """Each configuration's overrides stand beside the table, not in ``DataFrame.attrs``: pandas deep-copies attrs on
    every row access and slice, which made `rlsim plan` from the command line 6x slower than plan() on 8,304
    configurations (the ratio itself is tests/benchmarks/test_bench_plan.py's)."""
    assert small_plan.table.attrs == {}
    assert len(small_plan.config_overrides) == len(small_plan.table)
    assert small_plan.overrides(small_plan.baseline) == small_plan.config_overrides[small_plan.baseline]


def test_pruned_configurations_say_why_and_have_no_numbers(small_plan):
    t = small_plan.table
    pruned = t[t["status"] == "pruned"]
    assert len(pruned) > 0  # colocated: the 30B MoE trainer does not fit beside the engine on 64 x 80 GB
    assert pruned["reason"].str.len().gt(20).all() and pruned["time_to_target_s"].isna().all()
    assert (~pruned["feasible"]).all()


def test_the_winner_is_the_best_full_simulation_and_is_retuned(paper, small_plan):
    t = small_plan.table
    full = t[(t["fidelity"] == "full") & t["feasible"]]
    win = small_plan.row(small_plan.winner)
    assert win["winner"] and win["fidelity"] == "full"
    assert win["time_to_target_s"] == full["time_to_target_s"].min()
    assert win["lr_rule"] == paper.learning.invariant_rule  # a retuned configuration
    # screened rows of one systems configuration share a step time across LR rules
    ok = t[(t["status"] == "ok") & (t["fidelity"] == "screen")]
    per = ok.groupby(["prompts_per_step", "schedule", "split", "engine_tp"])["step_time_s"].nunique()
    assert (per == 1).all()


def test_the_pareto_front_is_not_dominated(small_plan):
    t = small_plan.table[small_plan.table["feasible"]]
    front = t[t["pareto"]]
    assert len(front) >= 1
    for r in front.itertuples():
        better = t[(t["time_to_target_s"] <= r.time_to_target_s) & (t["cost_usd"] <= r.cost_usd)]
        strictly = better[(better["time_to_target_s"] < r.time_to_target_s) | (better["cost_usd"] < r.cost_usd)]
        assert strictly.empty


def test_pareto_front_by_hand():
    pts = [(0, 1.0, 5.0), (1, 2.0, 3.0), (2, 2.5, 4.0), (3, 3.0, 1.0), (4, 1.0, 6.0)]
    assert pareto_front(pts) == [0, 1, 3]


def test_the_explanation_speaks_the_papers_terms(paper):
    """Must-show 3: objective time on the scenario's GPUs; the winner is retuned, and the explanation says why
    P = 2048 and P = 256 without retuning lose (their samples penalty exceeds their throughput gain)."""
    result = plan(paper, grid={"engine.tensor_parallel_size": [2, 4]}, schedules=["async-1"], finalists=2)
    lines = "\n".join(explain(result))
    win = result.row(result.winner)
    assert win["lr_rule"] == "sqrt" and win["prompts_per_step"] != 128
    assert "why it wins: throughput gain" in lines
    rows = {line.split("->")[0].split()[0] + " " + line.split()[2]: line for line in lines.splitlines() if "->" in line}
    for key in ("P=256 none", "P=2048 none", "P=2048 sqrt"):
        assert (
            "-> loses" in rows[key]
            and "its samples penalty" in rows[key]
            and "exceeds its throughput gain" in rows[key]
        )
    base = result.row(result.baseline)
    assert "your configuration: P=128" in lines and base["fidelity"] == "full"


def test_constraints_mark_configurations_infeasible(paper):
    tight = plan(
        paper,
        grid={"workload.prompts_per_step": [128, 1024], "engine.tensor_parallel_size": [4]},
        schedules=["async-1"],
        deadline_h=0.5,
        finalists=1,
    )
    t = tight.table
    assert tight.winner is None and not t["feasible"].any() and tight.pareto == []
    assert t["infeasible_reason"].str.contains("over the deadline 0.5 h").any()
    assert "no configuration meets the constraints" in "\n".join(explain(tight))
    budget = plan(paper, grid={"workload.prompts_per_step": [128, 1024]}, schedules=["async-1"], budget_usd=1500)
    ok = budget.table[budget.table["feasible"]]
    assert len(ok) and (ok["cost_usd"] <= 1500).all()


def test_cost_needs_a_price_and_an_override_gives_it(paper):
    with pytest.raises(PlanError, match="H800.*--price H800="):
        plan(paper, objective="cost", gpu_types=["H800"], grid={"workload.prompts_per_step": [128]})
    result = plan(
        paper,
        objective="cost",
        gpu_types=["H800"],
        prices={"H800": 2.0},
        grid={"workload.prompts_per_step": [128, 1024]},
        schedules=["async-1"],
        finalists=1,
    )
    win = result.row(result.winner)
    assert win["usd_per_gpu_hour"] == 2.0 and win["cost_usd"] == pytest.approx(win["gpu_hours_to_target"] * 2.0)
    assert result.prices["H800"]["overridden"]


def test_a_scenario_without_a_learning_model_is_refused():
    scn = rlsim.load_scenario(SCENARIOS / "dense8b_h100_async.yaml")
    with pytest.raises(PlanError, match="learning.metric and learning.target"):
        plan(scn)


def test_the_same_plan_on_one_or_two_workers_gives_the_same_csv(paper, tmp_path):
    from rlsim.plan.output import plan_table

    kw = {"grid": {"workload.prompts_per_step": [128, 512]}, "schedules": ["async-1"], "finalists": 1}
    one, two = plan(paper, workers=1, **kw), plan(paper, workers=2, **kw)
    plan_table(one).to_csv(tmp_path / "a.csv", index=False)
    plan_table(two).to_csv(tmp_path / "b.csv", index=False)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


@pytest.mark.slow
def test_the_same_plan_on_ray_gives_the_identical_csv(tmp_path):
    pytest.importorskip("ray")
    args = ["plan", str(PAPER), "--grid", "workload.prompts_per_step=128,512", "--schedules", "async-1"]
    args += ["--finalists", "1"]
    for name, extra in (("local", []), ("ray", ["--executor", "ray"])):
        proc = subprocess.run([*CLI, *args, *extra, "-o", str(tmp_path / name)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "local" / "plan.csv").read_bytes() == (tmp_path / "ray" / "plan.csv").read_bytes()


def test_cli_writes_the_plan_and_the_winner_runs_as_a_scenario(tmp_path):
    out = tmp_path / "plan"
    args = ["plan", str(PAPER), "--grid", "workload.prompts_per_step=128,1024", "--schedules", "async-1"]
    proc = subprocess.run([*CLI, *args, "--finalists", "1", "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "winner: P=1024" in proc.stdout and "Pareto front" in proc.stdout
    table = pd.read_csv(out / "plan.csv")
    meta = json.loads((out / "plan.json").read_text(), parse_constant=lambda c: pytest.fail(f"non-JSON {c}"))
    # 2 P x 3 LR rules x 4 engine TP x 4 splits; the scenario's own (P=128, TP2, 48/16) is one of them
    assert len(table) == meta["configurations"] == 2 * 3 * 4 * 4 and table["baseline"].sum() == 1
    assert meta["winner"]["config"] == int(table.loc[table["winner"], "config"].iloc[0])
    assert json.loads(table.loc[table["winner"], "overrides"].iloc[0]) == meta["winner"]["overrides"]
    html = (out / "report.html").read_text()
    assert "Pareto front" in html and "plotly" in html and '<script src="http' not in html  # offline
    win = rlsim.load_scenario(out / "winner.yaml")
    assert win.workload.prompts_per_step == meta["winner"]["overrides"]["workload.prompts_per_step"]
    again = rlsim.simulate(win, with_band=True, to_target=True).summary()
    assert again["time_to_target_s"] == pytest.approx(meta["winner"]["time_to_target_s"], rel=1e-12)


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--emit", "verl"], "--emit writes a patch file"),
        (["--original", "x.yaml"], "--original x.yaml: no such file"),  # alone: emits in its own framework
        (["--objective", "cost", "--gpu-types", "H800"], "--price H800="),
        (["--gpus", "8", "--max-gpus", "64"], "--gpus"),
        (["--price", "H100-SXM=-1"], "H100-SXM"),
        (["--deadline-h", "0"], "--deadline-h"),
        (["--grid", "hardware.placement=colocated"], "--schedules"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(tmp_path, extra, words):
    proc = subprocess.run([*CLI, "plan", str(PAPER), *extra], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlsim: error:") and words in lines[0], proc.stderr


def test_scenario_prices_are_validated_and_used(paper):
    with pytest.raises(ScenarioError, match="plan.prices.H100-SXM"):
        configure(paper, None, {"plan.prices": {"H100-SXM": 0}})
    priced = configure(paper, None, {"plan.prices": {"H100-SXM": 1.0}})
    result = plan(priced, grid={"workload.prompts_per_step": [128]}, schedules=["async-1"], finalists=0)
    assert result.prices["H100-SXM"]["usd_per_gpu_hour"] == 1.0
    base = result.row(result.baseline)
    assert math.isclose(base["cost_usd"], base["gpu_hours_to_target"])
    assert priced.to_dict()["plan"] == {"prices": {"H100-SXM": 1.0}}  # kept in the resolved scenario
    with pytest.raises(RlsimError):
        plan(paper, objective="speed")


def test_the_readme_tour_from_a_verl_config_to_an_emitted_patch(tmp_path):
    """docs/planning.md: import a verl config, plan it with the paper's learning model, emit the winner; the
    overrides applied to the original give the winner's batch back."""
    from rlsim.frameworks.config_import import import_config
    from rlsim.frameworks.emit import parse_emitted_overrides

    config = SCENARIOS.parent / "tests" / "rlsim" / "fixtures" / "configs" / "verl_grpo_qwen3_8b.yaml"
    scn = tmp_path / "verl.yaml"
    proc = subprocess.run([*CLI, "import-config", "--format", "verl", str(config), "-o", str(scn)], capture_output=True)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "plan"
    args = ["plan", str(scn), "--assume-learning", "paper", "--grid", "workload.prompts_per_step=1024,8192"]
    args += ["--schedules", "colocated", "-o", str(out), "--emit", "verl", "--original", str(config)]
    proc = subprocess.run([*CLI, *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "learning model assumed (--assume-learning paper)" in proc.stdout and "verl overrides" in proc.stdout
    overrides = (out / "verl_overrides.sh").read_text().split()
    assert "data.train_batch_size=8192" in overrides
    patch = yaml.safe_load((out / "verl_patch.yaml").read_text())
    assert patch["data"]["train_batch_size"] == 8192
    back = rlsim.from_dict(import_config(config, "verl", parse_emitted_overrides("verl", overrides)).scenario)
    win = rlsim.load_scenario(out / "winner.yaml")
    assert back.workload.prompts_per_step == win.workload.prompts_per_step == 8192
    assert back.algorithm.mini_batches_per_step == win.algorithm.mini_batches_per_step
    meta = json.loads((out / "plan.json").read_text())
    assert meta["notes"][0].startswith("learning model assumed")


def test_a_profiles_learning_model_is_enough_to_plan(paper):
    """A scenario without a learning model plans with a profile's fitted one (as run/sweep use it)."""
    import dataclasses

    from rlsim.run.profile import LEARNING_VERSION, PhaseFit, Profile

    bare = configure(paper, None, {"learning.metric": None, "learning.target": None})
    with pytest.raises(PlanError, match="--assume-learning paper"):
        plan(bare)
    lr = paper.learning
    learning = {
        "version": LEARNING_VERSION,
        "reference_batch": lr.reference_batch,
        "metric": dataclasses.asdict(lr.metric),
        "target": lr.target,
        "batch_multiplier": {k: v for k, v in dataclasses.asdict(lr.batch_multiplier).items() if v is not None},
    }
    keys = ("device", "engine", "engine_version", "torch_version", "model", "dtype", "date", "command")
    # one phase fitted to the scenario's own coefficient: the costs are the scenario's
    phases = {"train_actor": PhaseFit("roofline", {"train_compute_efficiency": paper.costs.train_compute_efficiency})}
    profile = Profile(provenance=dict.fromkeys(keys, "test"), phases=phases, learning=learning)
    kw = {"grid": {"workload.prompts_per_step": [128, 1024]}, "schedules": ["async-1"], "finalists": 1}
    with_profile = plan(bare, profile=profile, **kw)
    as_scenario = plan(paper, **kw)
    a, b = with_profile.row(with_profile.winner), as_scenario.row(as_scenario.winner)
    assert a["time_to_target_s"] == pytest.approx(b["time_to_target_s"], rel=1e-9)


def test_emit_works_for_an_import_that_needed_set_items(tmp_path):
    """A TRL config whose model is not in the catalog and whose process count lives on the accelerate command
    line: imported with --set items, which the scenario records, so plan --emit --original re-imports the
    original with them (before: the re-import failed for every such file)."""
    config = SCENARIOS.parent / "tests" / "rlsim" / "fixtures" / "configs" / "trl_gspo_qwen3_0.6b.yaml"
    scn = tmp_path / "trl.yaml"
    sets = ["--set", "num_processes=8", "--set", "model_name_or_path=Qwen/Qwen3-8B"]
    proc = subprocess.run(
        [*CLI, "import-config", "--format", "trl", str(config), "-o", str(scn), *sets], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "import-config --set num_processes=8" in scn.read_text()
    out = tmp_path / "plan"
    args = ["plan", str(scn), "--assume-learning", "paper", "--grid", "workload.prompts_per_step=64,512"]
    args += ["--schedules", "colocated", "-o", str(out), "--emit", "trl", "--original", str(config)]
    proc = subprocess.run([*CLI, *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "trl overrides for the winner" in proc.stdout and (out / "trl_overrides.sh").is_file()


def test_a_colocated_only_option_is_reset_for_other_schedules(paper):
    """weight_sync.offload_trainer (colocated only) set on the scenario: the colocated candidates keep it, the
    separate and async ones take it off instead of being pruned for it."""
    colocated = with_overrides(
        paper,
        {
            "schedule.mode": "sync-colocated",
            "schedule.max_staleness": 0,
            "hardware.placement": "colocated",
            "hardware.rollout_gpus": None,
            "hardware.train_gpus": None,
            "weight_sync.offload_trainer": True,
        },
    )
    space = build_space(colocated, grid={"workload.prompts_per_step": [128], "engine.tensor_parallel_size": [8]})
    configs = configurations(space)
    assert {c.labels["schedule"] for c in configs} == {"colocated", "separate", "async-1", "async-2"}
    valid = set()
    for c in configs:
        assert c.overrides.get("weight_sync.offload_trainer", True) == (c.labels["schedule"] == "colocated")
        try:
            s = with_overrides(colocated, c.overrides)
        except ScenarioError as exc:  # a split too small for the trainer, never the option
            assert "offload_trainer" not in str(exc)
            continue
        assert s.weight_sync.offload_trainer == (c.labels["schedule"] == "colocated")
        valid.add(c.labels["schedule"])
    assert valid == {"colocated", "separate", "async-1", "async-2"}


def test_the_paper_preset_is_the_paper_scenarios_learning_model(paper):
    """--assume-learning paper copies scenarios/paper_grpo.yaml's learning section, anchored at the user's batch: every
    number equal to the scenario's, and on the scenario itself (anchored at its own B0) the same samples to target."""
    from rlsim.learning.model import samples_to_target
    from rlsim.plan.assume import PAPER, assumed_learning

    learning = paper.learning
    assert PAPER["reference_batch"] == learning.reference_batch
    assert PAPER["untuned_lr_penalty"] == learning.untuned_lr_penalty
    assert PAPER["target"] == learning.target and PAPER["samples_spread"] == learning.samples_spread
    metric = learning.metric
    assert PAPER["metric"] == {
        "initial": metric.initial,
        "asymptote": metric.asymptote,
        "mid_samples": metric.mid_samples,
        "exponent": metric.exponent,
    }
    mult = learning.batch_multiplier
    low, high = PAPER["batch_range"]
    assert (low * learning.reference_batch, high * learning.reference_batch) == (mult.batch_low, mult.batch_high)
    assert PAPER["penalty_per_doubling"] == mult.penalty_per_doubling

    over, _ = assumed_learning(paper, "paper")
    assumed = with_overrides(paper, over)
    b = paper.workload.responses_per_step
    for batch in (b // 2, b, 4 * b, 16 * b):
        mine = samples_to_target(paper.learning, batch).samples
        assert samples_to_target(assumed.learning, batch).samples == pytest.approx(mine, rel=1e-12), batch
