"""The systems band (rlsim.run.systems_error): each answer's time-to-target band carries the cost model's held-out
error for the scenario's setting, and says which rows it comes from and what lies outside them."""

from __future__ import annotations

import dataclasses
import json

import pytest

import rlsim
from rlsim import catalog
from rlsim.cli import main
from rlsim.run import systems_error as se

ROWS = [
    *({"release": "nemo-rl 0.5", "gpu": "H100-SXM", "family": "moe", "error_pct": e} for e in (4, -6, 8, 10)),
    *({"release": "nemo-rl 0.5", "gpu": "H100-SXM", "family": "dense", "error_pct": e} for e in (20, -30)),
    *({"release": "nemo-rl 0.6", "gpu": "GB200", "family": "moe", "error_pct": e} for e in (2, 3, -40, 50, 60)),
]


@pytest.fixture
def rows(monkeypatch):
    monkeypatch.setattr(catalog, "systems_error", lambda: {"method": "leave one out", "rows": [dict(r) for r in ROWS]})


def _scenario(framework_version="0.5.0", gpu="H100-SXM", model="Qwen3-30B-A3B"):
    return rlsim.load_scenario(
        "scenarios/paper_grpo.yaml",
        [
            f"model={model}",
            f"hardware.gpu={gpu}",
            "software.framework=nemo-rl",
            f"software.framework_version={framework_version}",
        ],
    )


def test_the_setting_s_own_rows_give_the_median_of_their_absolute_errors(rows):
    got = se.systems_error(_scenario())
    assert got.error == pytest.approx(0.07)  # |4|, |-6|, |8|, |10| -> 7%
    assert got.outside == () and "4 published rows (nemo-rl 0.5, H100-SXM, moe" in got.basis
    assert got.factors == pytest.approx((1 / 1.07, 1.07))


def test_too_few_rows_fall_back_to_a_broader_setting(rows):
    dense = se.systems_error(_scenario(model="Qwen3-8B"))  # 2 dense rows: release and GPU pooled (6 rows)
    assert dense.error == pytest.approx(0.09) and "(nemo-rl 0.5, H100-SXM;" in dense.basis


def test_each_key_outside_the_development_set_widens_it(rows):
    newer = se.systems_error(_scenario(framework_version="0.9.0"))  # H100 and MoE rows, an unknown release
    assert newer.outside == ("no development row has release nemo-rl 0.9",)
    assert newer.error == pytest.approx(0.07 * se.WIDEN)  # the GPU's and family's rows: 4, 6, 8, 10
    a100 = se.systems_error(_scenario(framework_version="0.9.0", gpu="A100-80GB"))
    assert len(a100.outside) == 2 and a100.error == pytest.approx(0.08 * se.WIDEN**2)  # the 9 MoE rows, twice
    unnamed = se.systems_error(dataclasses.replace(_scenario(), software=rlsim.load_scenario(
        "scenarios/paper_grpo.yaml").software))  # fmt: skip
    assert any("names no framework release" in o for o in unnamed.outside)


def test_no_rows_no_band_share(monkeypatch):
    monkeypatch.setattr(catalog, "systems_error", lambda: {})
    assert se.systems_error(_scenario()) is None


def test_the_shipped_rows_are_the_development_set_s_held_out_errors():
    data = catalog.systems_error()
    assert data["rows"] and {"release", "gpu", "family", "error_pct"} <= set(data["rows"][0])
    assert {r["release"] for r in data["rows"]} == {"nemo-rl 0.4", "nemo-rl 0.5", "nemo-rl 0.6"}


def test_the_paper_scenario_s_answer_states_its_systems_band_and_where_it_comes_from(capsys):
    assert main(["run", "scenarios/paper_grpo.yaml", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    band = summary["systems_error"]
    assert band["error_pct"] > 0 and "published rows" in band["basis"]
    assert any("names no framework release" in o for o in band["outside"])
    low, high = summary["time_to_target_band_s"]
    t = summary["time_to_target_s"]
    assert high / t >= 1 + band["error_pct"] / 100 - 1e-9 and t / low >= 1 + band["error_pct"] / 100 - 1e-9
    assert main(["run", "scenarios/paper_grpo.yaml"]) == 0
    text = capsys.readouterr().out
    assert f"systems +-{band['error_pct']:.0f}% in it" in text.splitlines()[0]
    assert "systems error" in text and "published rows" in text


def test_an_anchored_profile_takes_the_anchored_figure(monkeypatch):
    data = {
        "method": "leave one out",
        "rows": [dict(r) for r in ROWS],
        "anchored": {"median_abs_error_pct": 6.5, "pairs": 76},
    }
    monkeypatch.setattr(catalog, "systems_error", lambda: data)
    got = se.systems_error(_scenario(framework_version="0.9.0"), anchored=True)
    assert got.error == pytest.approx(0.065) and got.outside == () and "anchored on one step" in got.basis
    assert se.systems_error(_scenario(), anchored=False).error == pytest.approx(0.07)
