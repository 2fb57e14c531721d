"""rlsim-calibrate published: accuracy on the development set of published NeMo RL step times, scaling checks,
and bad input."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from calibrate.cli import main
from calibrate.published.costs import costs_set
from calibrate.published.steps import dev_set_path, evaluate, predict_row, read_rows, summarize
from rlsim.frameworks.nemo_rl.recipe import NotExpressible, scenario_from_recipe
from rlsim.scenario import engine_behaviour, from_dict


@pytest.fixture(scope="module")
def dev():
    return read_rows([dev_set_path()])


@pytest.fixture(scope="module")
def results(dev):
    return evaluate(dev, costs_set("shipped")[0])


def test_development_set_accuracy_meets_the_bar(results):
    """Issue 10 must-show 1 on the rows it was set for (the DGX-H100 tranche): one cost set for every row. The
    GB200 tranche is measured by cross-validation (test_published_cv.py)."""
    st = summarize(results[:24])
    assert st["n_expressed"] >= 22
    assert st["median_abs_error_pct"] <= 15.0
    assert -5.0 <= st["bias_pct"] <= 5.0
    assert st["max_abs_error_pct"] <= 50.0


def test_only_dapo_and_swe_rows_are_refused_with_their_reason(results):
    refused = {r.row: r.reason for r in results if not r.expressed}
    assert set(refused) == {4, 22}
    assert "dynamic sampling" in refused[4]
    assert "prompts_per_step" in refused[22]


def _row(dev, **match):
    sel = dev
    for key, value in match.items():
        sel = sel[sel[key] == value]
    assert len(sel) >= 1
    return sel.iloc[0].to_dict()


def test_deepseek_training_gets_faster_from_256_to_512_gpus(dev):
    """Must-show 2: same batch, twice the GPUs (v0.6 sync rows) -> less training time."""
    fitted = costs_set("shipped")[0]
    v06 = dev[dev["source_version"].str.contains("v0.6")]
    r256 = _row(v06, model="DeepSeek-V3 (671B MoE)", num_gpus=256, policy_mode="on")
    r512 = _row(v06, model="DeepSeek-V3 (671B MoE)", num_gpus=512, policy_mode="on")
    t256 = predict_row(r256, fitted)[1]["train_actor"]
    t512 = predict_row(r512, fitted)[1]["train_actor"]
    assert t512 < 0.9 * t256


def test_more_generation_gpus_and_staleness_beat_the_small_async_run(dev):
    """Must-show 2: Qwen3-30B-A3B async-8off on 192 GPUs steps faster than async-1off on 32 (34.5 s vs 152 s)."""
    fitted = costs_set("shipped")[0]
    v06 = dev[dev["source_version"].str.contains("v0.6")]
    big = predict_row(_row(v06, model="Qwen/Qwen3-30B-A3B", policy_mode="async-8off"), fitted)[0]
    small = predict_row(_row(v06, model="Qwen/Qwen3-30B-A3B", policy_mode="async-1off"), fitted)[0]
    assert big < 0.5 * small


def test_mapping_follows_the_recipe(dev):
    row = _row(dev, model="meta-llama/Llama-3.1-8B-Instruct", policy_mode="on")
    s = from_dict(scenario_from_recipe(row, steps=2))
    assert s.optimizer_steps_per_step == 4  # 64 x 32 responses, train global batch 512
    assert s.training.backend == "megatron" and s.training.pipeline_parallel_size == 2
    assert s.engine.max_num_seqs == 1024  # vllm.LLM default on a >= 70 GiB GPU
    assert s.algorithm.kl_reference and s.training.reference_on_host
    asy = from_dict(
        scenario_from_recipe(_row(dev, model="meta-llama/Llama-3.1-8B-Instruct", policy_mode="async-1off"), steps=2)
    )
    assert asy.engine.max_num_seqs == 128  # AsyncLLM without a usage context
    assert asy.schedule.mode == "async" and asy.schedule.max_staleness == 1
    assert asy.weight_sync.transfer == "broadcast"
    # the response mean after clipping equals the published average
    w = s.workload
    assert w.response_length.mean_tokens > row["avg_gen_len"]


def test_unexpressible_fields_are_named():
    recipe = {
        "prompts_per_step": 8,
        "gens_per_prompt": 4,
        "num_gpus": 8,
        "max_seq_len": 1024,
        "avg_gen_len": 300,
        "policy_mode": "on",
        "model": "Qwen3-8B",
        "gpu": "H100",
    }
    with pytest.raises(NotExpressible, match="policy_mode"):
        scenario_from_recipe({**recipe, "policy_mode": "sometimes"})
    with pytest.raises(NotExpressible, match="not in the catalog"):
        scenario_from_recipe({**recipe, "model": "NoSuchModel"})


def test_command_writes_csv_and_summary_for_a_users_csv(tmp_path, dev, capsys):
    mine = tmp_path / "mine.csv"
    dev.drop(columns=["file", "row"]).iloc[[0, 4]].to_csv(mine, index=False)
    out = tmp_path / "out"
    assert main(["published", str(mine), "-o", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["step_time"]["n_rows"] == 2 and summary["step_time"]["n_expressed"] == 1
    for key in ("median_abs_error_pct", "bias_pct", "n_rows", "n_expressed"):
        assert key in summary["step_time"]
    table = pd.read_csv(out / "published.csv")
    assert list(table["expressed"]) == [True, False]
    assert table.loc[0, "predicted_rollout_s"] > 0
    printed = capsys.readouterr().out
    assert "median |error|" in printed and "not expressed" in printed


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["published", "nope.csv"], "no such file"),
        (["published", "--set", "train_compute_efficiency=0.5"], "costs.FIELD=VALUE"),
        (["published", "--set", "costs.train_compute_efficiency=abc"], "not a number"),
        (["published", "--costs", "mine"], "use shipped"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path, args, needle):
    proc = subprocess.run(
        [sys.executable, "-m", "calibrate.cli", *args, "-o", str(tmp_path / "o")], capture_output=True, text=True
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0]


def test_missing_column_is_named(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("model,gpu,step_time_s\nQwen3-8B,H100,10\n")
    proc = subprocess.run(
        [sys.executable, "-m", "calibrate.cli", "published", str(bad), "-o", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "num_gpus" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------------------- generation


@pytest.fixture(scope="module")
def gen_results():
    from calibrate.published import generation as gen

    return gen.evaluate(gen.read_rows([gen.dev_set_path()]), costs_set("shipped")[0])


def test_generation_development_set_accuracy_meets_the_bar(gen_results):
    """Issue 11 must-show 1: median |error| <= 15%, bias within 5%, median error per TP size within 20%."""
    from calibrate.published import generation as gen

    st = gen.summarize(gen_results[:24])  # the H100 tranche it was set for; A100 rows: test_published_cv.py
    assert st["n_expressed"] == st["n_rows"] == 24
    assert st["median_abs_error_pct"] <= 15.0
    assert -5.0 <= st["bias_pct"] <= 5.0
    assert set(st["by_tp"]) == {"1", "2", "4", "8"}
    assert all(abs(v["median_error_pct"]) <= 20.0 for v in st["by_tp"].values())


def test_generation_row_mapping():
    from calibrate.published import generation as gen

    row = {
        "model": "Meta-Llama-3.1-8B-FP8",
        "gpu": "H100-80GB-SXM",
        "tp": 2,
        "engine_version": "v0.5.4",
        "concurrency": "num-prompts=320, request-rate inf",
        "output_tok_per_s": 1000.0,
    }
    raw = gen.scenario_for_row(row)
    scn = from_dict(raw)
    assert raw["engine"]["precision"] == "fp8" and engine_behaviour(scn) == "vllm-0.5"
    assert raw["engine"]["max_num_seqs"] == 256 and raw["hardware"]["num_gpus"] == 2
    assert gen.bench_load(row["concurrency"]) == gen.BenchLoad("burst", 320)
    # a release the software catalog lacks takes the nearest known at or below it, and the row says so
    (later,) = gen.evaluate(pd.DataFrame([{**row, "engine_version": "v0.6.0", "file": "x.csv", "row": 0}]))
    assert later.expressed and "vllm 0.6.0 is not in rlsim's software catalog: using 0.5.4" in later.reason
    assert engine_behaviour(from_dict(gen.scenario_for_row({**row, "engine_version": "0.11.2"}))) == "vllm-v1"
    with pytest.raises(NotExpressible, match="names no vLLM release"):
        gen.scenario_for_row({**row, "engine_version": "nightly"})
    # the ShareGPT draw respects the benchmark's filter
    p, o = gen.sharegpt_lengths(2000, __import__("numpy").random.default_rng(0))
    assert (p >= 4).all() and (o >= 4).all() and (p <= 1024).all() and (p + o <= 2048).all()


def test_command_runs_both_tables_by_default(tmp_path):
    out = tmp_path / "o"
    proc = subprocess.run(
        [sys.executable, "-m", "calibrate.cli", "published", "-o", str(out)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    keys = {"median_abs_error_pct", "bias_pct", "n_rows", "n_expressed"}
    assert keys <= set(summary["step_time"]) and keys <= set(summary["generation"])
    assert (out / "published.csv").is_file() and (out / "generation.csv").is_file()
    assert "median error by tensor-parallel size: TP1" in proc.stdout


def test_csv_of_neither_kind_is_refused(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    proc = subprocess.run(
        [sys.executable, "-m", "calibrate.cli", "published", str(bad), "-o", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "neither a step-time table" in proc.stderr


def test_fit_recovers_a_known_coefficient(dev):
    """Predictions made with train_compute_efficiency 0.5 become the 'measurements'; a fit from 0.35 finds 0.5."""
    from calibrate.published.costs import fit_costs, log_residuals

    rows = dev[dev["model"].str.contains("Qwen3-32B")].copy()  # training-heavy rows, fast to simulate
    truth = {"train_compute_efficiency": 0.5}
    rows["step_time_s"] = [predict_row(r, truth)[0] for r in rows.to_dict("records")]
    assert abs(log_residuals(rows, None, truth)).max() < 1e-9
    fitted = fit_costs(rows, None, ["train_compute_efficiency"], {"train_compute_efficiency": 0.35})
    assert fitted["train_compute_efficiency"] == pytest.approx(0.5, rel=0.02)


def test_a_row_of_another_framework_says_it_was_mapped_as_nemo_rl(dev):
    row = {**dev.iloc[0].to_dict(), "source": "verl docs/perf table", "source_version": "verl 0.5", "recipe": ""}
    (res,) = evaluate(pd.DataFrame([row]))
    assert res.expressed and "framework 'verl'" in res.reason and "NeMo RL's mapping" in res.reason
    # words that merely contain a framework's name are not one (rollout, control); NeMo RL rows carry no note
    plain = {**dev.iloc[0].to_dict(), "source": "a rollout control table", "source_version": "", "recipe": ""}
    (res,) = evaluate(pd.DataFrame([plain]))
    assert res.expressed and res.reason == ""
    (res,) = evaluate(dev.iloc[[0]])
    assert res.expressed and res.reason == ""
