"""rlsim-calibrate published --cv KEY: leave-one-group-out accuracy (calibrate.published.cv)."""

import json

import pytest

from calibrate.cli import main
from calibrate.published import cv as pcv
from calibrate.published import generation as gen
from calibrate.published.costs import fit_costs, split_fitted

NAMES = ["vllm-0.5.decode_per_seq_overhead_s"]


@pytest.fixture(scope="module")
def gen_df():
    return gen.read_rows([gen.dev_set_path()])


@pytest.fixture(scope="module")
def cv(gen_df):
    return pcv.cross_validate("generation", gen_df, "gpu", NAMES, {})


def test_groups_are_the_catalog_gpus_and_every_row_is_held_out_once(cv, gen_df):
    assert set(cv["groups"]) == {"A100-80GB", "H100-SXM"}
    assert sum(g["n_rows"] for g in cv["groups"].values()) == cv["overall"]["n_rows"] == len(gen_df)
    assert {r["group"] for r in cv["rows"]} == set(cv["groups"])


def test_a_fold_never_sees_its_held_out_rows(cv, gen_df):
    """The A100 fold's coefficient is what a fit on the H100 rows alone gives, and the held-out errors are that
    fit's predictions of the A100 rows."""
    h100 = gen_df[gen_df["gpu"].str.contains("H100")]
    a100 = gen_df[gen_df["gpu"].str.contains("A100")]
    direct = fit_costs(None, h100, NAMES, {})
    assert cv["groups"]["A100-80GB"]["fitted"][NAMES[0]] == pytest.approx(direct[NAMES[0]], rel=1e-9)
    costs, engines = split_fitted(direct)
    from rlsim import catalog

    with catalog.engine_overrides(engines):
        errs = [r.error_pct for r in gen.evaluate(a100, costs or None) if r.expressed]
    held = [r["held_out_error_pct"] for r in cv["rows"] if r["group"] == "A100-80GB"]
    assert held == pytest.approx(errs)


def test_in_sample_and_no_fit_are_reported_beside_the_held_out_figures(cv):
    assert cv["in_sample"]["overall"]["n_expressed"] == cv["overall"]["n_expressed"]
    # fitted on every row and scored on them: never worse than the held-out predictions of the same rows
    assert cv["in_sample"]["overall"]["median_abs_error_pct"] <= cv["overall"]["median_abs_error_pct"]
    assert set(cv["no_fit"]["groups"]) == set(cv["groups"])
    # no fit puts vllm-0.5's fitted per-sequence work (1.7e-4 s) at its prior (2e-6 s): a baseline far from the fit
    assert cv["no_fit"]["overall"]["median_abs_error_pct"] > 2 * cv["in_sample"]["overall"]["median_abs_error_pct"]


def test_groups_by_derived_keys():
    rec = {"model": "Qwen/Qwen3-30B-A3B", "gpu": "GB200-NVL72", "source_version": "NeMo RL v0.6 perf table"}
    assert pcv.group_of("gpu", "step")(rec) == "GB200"
    assert pcv.group_of("family", "step")(rec) == "MoE"
    assert pcv.group_of("family", "step")({"model": "Qwen/Qwen3-32B"}) == "dense"
    assert pcv.group_of("version", "step")(rec) == "NeMo RL v0.6"
    assert pcv.group_of("version", "generation")({"engine": "vLLM", "engine_version": "v0.5.4"}) == "vLLM v0.5.4"
    assert pcv.group_of("tp", "step")({"gen_tp": 8.0}) == "8"


def test_one_group_only_is_skipped_with_the_reason(gen_df):
    h100 = gen_df[gen_df["gpu"].str.contains("H100")]
    out = pcv.cross_validate("generation", h100, "gpu", NAMES, {})
    assert "one group" in out["skipped"]


def test_command_writes_cv_and_refuses_an_unknown_key(tmp_path, capsys):
    csv = gen.dev_set_path()
    assert main(["published", str(csv), "-o", str(tmp_path), "--cv", "gpu", "--fit", NAMES[0]]) == 0
    out = capsys.readouterr().out
    assert "leave one gpu out" in out and "A100-80GB" in out and "cross-validated" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["cv"]["generation"]["groups"]) == {"A100-80GB", "H100-SXM"}
    assert (tmp_path / "cv.csv").read_text().startswith("table,")
    assert main(["published", str(csv), "-o", str(tmp_path / "x"), "--cv", "gpuu"]) == 2
    err = capsys.readouterr().err
    assert "--cv 'gpuu'" in err and "gpu, version" in err
    assert not (tmp_path / "x").exists()  # nothing written for bad input


def test_each_fold_starts_from_the_priors_and_prior_is_refused_with_cv(tmp_path, capsys, monkeypatch):
    """The shipped values were fitted on development rows: a fold starting from them would start from values that
    saw its held-out rows. --cv starts each fitted name at its prior (rlsim/catalog/fitted.yaml), and refuses
    --costs prior (it prints its own no-fit column) in one line."""
    from calibrate.published import costs as pcosts

    starts = []
    real_fit = pcosts.fit_costs

    def spy(step_df, gen_df, names, base):
        starts.append({n: base.get(n) for n in names})
        return real_fit(step_df, gen_df, names, base)

    monkeypatch.setattr(pcv, "fit_costs", spy)
    csv = gen.dev_set_path()
    assert main(["published", str(csv), "-o", str(tmp_path / "a"), "--cv", "gpu", "--fit", NAMES[0]]) == 0
    capsys.readouterr()
    assert starts and all(s == {NAMES[0]: pcosts.prior_of(NAMES[0])} for s in starts)
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["costs_set"] == "shipped" and summary["costs"] == {}
    bad = ["published", str(csv), "-o", str(tmp_path / "b"), "--cv", "gpu", "--costs", "prior"]
    assert main(bad) == 2
    err = capsys.readouterr().err
    assert "no-fit column" in err and "drop --costs" in err
    assert not (tmp_path / "b").exists()


# Held-out accuracy of `rlsim-calibrate published --cv gpu` on the development set, as scripts/accuracy.py recorded
# it (docs/results/accuracy.json; docs/results/published.md rounds the same figures): (median |error| %, median
# signed error %) per fold and over all rows. A change that moves any of them, better or worse, fails here until the
# figures (and the page) are brought up to date, so the accuracy the docs report is the accuracy the code has.
RECORDED_CV_GPU = {
    "step_time": {
        "GB200": (5.48, 4.55),
        "H100-SXM": (7.47, -1.23),
        "overall": (7.32, 1.98),
    },
    "generation": {
        "A100-80GB": (10.25, 7.88),
        "H100-SXM": (10.4, -8.85),
        "overall": (10.27, 1.97),
    },
}
# Leave one NeMo RL release out (`--cv version`), the three releases of the development set: the bar is
# median |error| <= 12% and bias within +-7% for each held-out release; v0.5 and v0.6 meet it, v0.4 does not yet
# (docs/results/published.md).
RECORDED_CV_VERSION = {
    "step_time": {
        "NeMo RL v0.4": (12.95, -10.25),
        "NeMo RL v0.5": (8.6, 4.59),
        "NeMo RL v0.6": (6.95, 4.88),
        "overall": (8.25, 3.77),
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("key, recorded", [("gpu", RECORDED_CV_GPU), ("version", RECORDED_CV_VERSION)])
def test_held_out_accuracy_is_the_recorded_one(key, recorded, tmp_path, capsys):
    assert main(["published", "-o", str(tmp_path), "--cv", key]) == 0
    capsys.readouterr()
    cv = json.loads((tmp_path / "summary.json").read_text())["cv"]
    for table, folds in recorded.items():
        for fold, (median, bias) in folds.items():
            got = cv[table]["overall"] if fold == "overall" else cv[table]["groups"][fold]
            assert got["median_abs_error_pct"] == pytest.approx(median, abs=0.05), (table, fold)
            assert got["bias_pct"] == pytest.approx(bias, abs=0.05), (table, fold)
