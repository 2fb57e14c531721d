"""scripts/staleness_loop.py's fit-predict-compare on run directories made from known curves (the real runs take
an hour; their outputs are in docs/results/learning_loops.md): the stretch the runs follow is chosen
and predicts the held-out staleness's samples to the level, and the comparison table is written."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from rlsim.io.records import run_log_record
from rlsim.learning.curve import metric_at
from rlsim.scenario import MetricCurve
from tests.conftest import ROOT

CURVE = MetricCurve(initial=0.0, asymptote=1.0, mid_samples=8_000.0, exponent=4.0)
B, STRETCH, FREE = 128, 0.08, 1.0


@pytest.fixture(scope="module")
def loop():
    sys.path.insert(0, str(ROOT / "scripts"))
    import staleness_loop

    yield staleness_loop
    sys.path.remove(str(ROOT / "scripts"))


def write_run(out, name: str, k: int, seed: int) -> None:
    d = out / "runs" / name
    d.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    lines = []
    for step in range(1, 201):
        samples = step * B
        m = None
        if step % 5 == 0:
            stretch = (1.0 + STRETCH) ** max(0.0, k - FREE)
            m = float(np.clip(metric_at(CURVE, samples / stretch) + rng.normal(0, 0.01), 0, 1))
        rec = run_log_record(
            run_id=name, step=step, cumulative_samples=samples, prompts=16, responses=B, prompt_tokens=5 * B,
            response_tokens=2 * B, lr=1e-3, reward_mean=0.5, eval_metric=m, wall_s=float(step),
            timing_s={"rollout": 1.0}, staleness=min(step - 1, k),
        )  # fmt: skip
        lines.append(json.dumps(rec | ({"eval_metric_initial": 0.0} if step == 1 else {})))
    (d / "runlog.jsonl").write_text("\n".join(lines) + "\n")


def test_the_loop_predicts_a_held_out_staleness_from_the_fitted_stretch(tmp_path, loop):
    seeds = 2
    for seed in range(seeds):
        for loss in loop.LOSSES:
            for k in (0, 2, 8, 4):
                name = loop.run_name(loss, k, seed)
                if not (tmp_path / "runs" / name).exists():
                    write_run(tmp_path, name, k, 10 * seed + k)
    pred = loop.predict(tmp_path, [0, 2, 8], [4], seeds)
    assert pred["naive_ppo"]["chosen"] == "stretch"
    assert pred["naive_ppo"]["penalty_per_step"] == pytest.approx(STRETCH, abs=0.02)
    loop.compare(tmp_path, pred, [4], seeds)
    rows = json.loads((tmp_path / "comparison.json").read_text())
    chosen = [r for r in rows if r["chosen"]]
    assert {(r["loss"], r["k"]) for r in chosen} == {("naive_ppo", 4), ("decoupled_ppo", 4)}
    for r in chosen:
        assert r["predicted_samples"] == pytest.approx(r["measured_samples_median"], rel=0.1)
    assert "| naive_ppo | 4 | stretch (chosen) |" in (tmp_path / "comparison.md").read_text()


@pytest.fixture(scope="module")
def form_loop():
    sys.path.insert(0, str(ROOT / "scripts"))
    import group_form_loop

    yield group_form_loop
    sys.path.remove(str(ROOT / "scripts"))


def test_the_group_form_loop_fits_the_spread_and_predicts_another_batch(tmp_path, form_loop):
    """Runs made by the spread model at B = 128 (G = 2, 8, 32) and B = 64 (every G): the loop's fit gives the
    spread's constants back, and its predictions at B = 64 match those runs (the spread model's multipliers do not
    depend on B); the comparison and the share table are written."""
    import argparse

    from rlsim.learning.groups import group_multiplier, informative_share
    from rlsim.learning.model import reference_samples_to_target

    k_true, rho_true, target = 2.0, 0.3, 0.8
    n_ref = reference_samples_to_target(CURVE, target)
    for batch, gs in ((128, (2, 8, 32)), (64, (2, 4, 8, 16, 32))):
        for g in gs:
            stretch = group_multiplier(CURVE, n_ref, g, 8, k_true, rho_true)
            for seed in range(2):
                d = tmp_path / "runs" / form_loop.name(batch, g, seed)
                d.mkdir(parents=True)
                rng = np.random.default_rng(seed * 100 + g)
                lines = []
                for step in range(1, 40_000 // batch):
                    m = float(np.clip(metric_at(CURVE, step * batch / stretch) + rng.normal(0, 0.003), 0, 1))
                    rec = run_log_record(
                        run_id=d.name, step=step, cumulative_samples=step * batch, prompts=batch // g,
                        responses=batch, prompt_tokens=5 * batch, response_tokens=2 * batch, lr=1e-3,
                        reward_mean=m, eval_metric=m, wall_s=float(step), timing_s={"rollout": 1.0},
                    )  # fmt: skip
                    extra = {"group_size": g, "accuracy_train": m, "eval_metric_initial": 0.0}
                    extra["zero_variance_groups"] = 1.0 - float(informative_share(m, g, k_true))
                    lines.append(rec | extra)
                (d / "runlog.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    args = argparse.Namespace(batch=128, new_batch=64, seeds=2, target=target)
    pred = form_loop.predict(tmp_path, args, [2, 8, 32], [], [2, 4, 16, 32])
    assert pred["prompt_concentration"] == pytest.approx(k_true, rel=0.05)
    assert pred["group_correlation"] == pytest.approx(rho_true, abs=0.03)
    rows, lines = form_loop.compare(tmp_path, args, pred, {64: [2, 4, 16, 32]})
    for row in rows:
        assert row["predicted"]["spread"] == pytest.approx(row["measured_median"], rel=0.08), row
    assert "RMS log error" in "\n".join(lines)
    shares = form_loop.share_lines(tmp_path, args, pred, {64: [2, 32]})
    assert len(shares) == 4
