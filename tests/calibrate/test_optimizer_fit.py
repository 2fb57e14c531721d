"""The optimizer's costs (calibrate.bench.optimizer) and how rlsim prices an optimizer step with them
(rlsim.trainer.training): expected numbers worked out by hand from the formulas and the inputs."""

import json

import pandas as pd
import pytest

from calibrate.bench.fit import base_scenario
from calibrate.bench.optimizer import fit_optimizer
from rlsim.run.costs import RooflineCostModel
from rlsim.scenario import from_dict

MODEL = {
    "name": "t", "num_layers": 2, "hidden_size": 128, "num_attention_heads": 4, "num_kv_heads": 2, "head_dim": 32,
    "intermediate_size": 256, "vocab_size": 64, "num_params": 3.0e5, "num_active_params": 3.0e5, "dtype": "float32",
}  # fmt: skip
PROV = json.dumps({"dtype": "float32"})


def _rows(phase, params_and_times):
    return [
        {"phase": phase, "device": "cpu (2 cores)", "bytes": 4 * p, "time_s": t, "provenance": PROV, "repeat": i}
        for p, times in params_and_times
        for i, t in enumerate(times)
    ]


def test_each_coefficient_is_the_geometric_mean_of_what_each_size_implies():
    """CPU-2core: 20e9 B/s memory, 10e9 B/s host link. Sizes 1e6 and 4e6 parameters.
    optimizer: 28 B x P / (20e9 x 0.05) = 0.028 s and 0.112 s, measured 10% slow at one size and 10% fast at the
    other (medians of 3 repeats) -> implied 0.05 / 1.1 and 0.05 x 1.1, geometric mean 0.05.
    offload_copy: 6 B x P / (10e9 x 0.3) = 0.002 s and 0.008 s exactly -> 0.3.
    host_adam: P / 2e8 = 0.005 s and 0.02 s, x 1.21 and / 1.21 -> 2e8 parameters per second."""
    rows = _rows("optimizer", [(1e6, [0.0308, 0.0308, 0.5]), (4e6, [0.112 / 1.1] * 3)])  # 0.5: one slow repeat
    rows += _rows("offload_copy", [(1e6, [0.002] * 3), (4e6, [0.008] * 3)])
    rows += _rows("host_adam", [(1e6, [0.005 * 1.21] * 3), (4e6, [0.02 / 1.21] * 3)])
    scn = base_scenario(MODEL, "CPU-2core", 16, 16)
    values, report = fit_optimizer(pd.DataFrame(rows), scn)
    assert values["optimizer_memory_efficiency"] == pytest.approx(0.05, rel=1e-9)
    assert values["host_link_efficiency"] == pytest.approx(0.3, rel=1e-9)
    assert values["cpu_adam_params_per_s"] == pytest.approx(2e8, rel=1e-9)
    assert report["optimizer"]["mape"] == pytest.approx(0.1 / 1.1 / 2 + 0.1 / 2, rel=1e-6)  # |1.1^-1 - 1|, |1.1 - 1|
    assert report["offload_copy"]["mape"] == pytest.approx(0.0, abs=1e-12)


def test_a_table_without_optimizer_rows_fits_nothing():
    scn = base_scenario(MODEL, "CPU-2core", 16, 16)
    rows = pd.DataFrame([{"phase": "train_actor", "device": "cpu", "time_s": 1.0, "bytes": None, "provenance": PROV}])
    assert fit_optimizer(rows, scn) == ({}, {})


def test_an_offloaded_step_costs_its_copies_and_host_adam_in_place_of_the_device_adam():
    """4 optimizer steps of P parameters (one device): on the device 28 P / (20e9 x 0.1) each; offloaded
    6 P / (10e9 x 0.5) + P / 2e8 each. The difference of the two train times is 4 x P x (1.2e-9 + 5e-9 - 14e-9)
    = -3.12e-8 x P seconds (everything else in the step is the same)."""
    raw = {
        "model": MODEL,
        "hardware": {"gpu": "CPU-2core", "num_gpus": 1, "placement": "colocated"},
        "workload": {
            "prompts_per_step": 2,
            "group_size": 2,
            "max_prompt_tokens": 8,
            "max_response_tokens": 8,
            "prompt_length": {"dist": "fixed", "tokens": 4},
            "response_length": {"dist": "fixed", "tokens": 8},
        },  # fmt: skip
        "costs": {"optimizer_memory_efficiency": 0.1, "host_link_efficiency": 0.5, "cpu_adam_params_per_s": 2e8},
    }
    on = from_dict(raw)
    off = from_dict({**raw, "training": {"offload_optimizer": True}})
    p = 3.0e5  # MODEL's num_params, on one device
    t_on = RooflineCostModel(on).train_s(on.model, 1000.0, 1e5, 4, 1)
    t_off = RooflineCostModel(off).train_s(off.model, 1000.0, 1e5, 4, 1)
    assert t_off - t_on == pytest.approx(4 * p * (1.2e-9 + 5e-9 - 14e-9), rel=1e-9)
    # the default efficiency 1 prices the device Adam at the nominal bandwidth, as before the field existed
    nominal = from_dict({**raw, "costs": {"host_link_efficiency": 0.5, "cpu_adam_params_per_s": 2e8}})
    t_nominal = RooflineCostModel(nominal).train_s(nominal.model, 1000.0, 1e5, 4, 1)
    assert t_on - t_nominal == pytest.approx(4 * 28 * p / 20e9 * (1 / 0.1 - 1), rel=1e-9)


def test_the_train_fit_holds_the_fitted_optimizer_fixed():
    """Train rows made by rlsim's own model at train_compute_efficiency 0.2, train_step_overhead_s 0.01 and an
    on-device Adam at 0.05 of the memory bandwidth; optimizer rows at exactly 0.05 (28 B x P / (20e9 x 0.05)).
    fit_profile recovers 0.2 and 0.01: had the train fit kept the nominal Adam (efficiency 1), its overhead would
    have absorbed 28 x 3e5 / 20e9 x (1 / 0.05 - 1) = 7.98e-3 s more per step. The profile's train phase carries
    the optimizer's coefficient."""
    import dataclasses

    from calibrate.bench.fit import fit_profile, predict

    scn = base_scenario(MODEL, "CPU-2core", 16, 16)
    truth = dataclasses.replace(
        scn.costs, train_compute_efficiency=0.2, train_step_overhead_s=0.01, optimizer_memory_efficiency=0.05
    )
    tokens = [240, 480, 960, 1920, 3840]
    train = pd.DataFrame(
        [
            {"phase": "train_actor", "device": "cpu (2 cores)", "tokens": t, "sequences": t // 12, "repeat": i}
            for t in tokens
            for i in range(3)
        ]
    )
    train["time_s"] = predict("train_actor", scn, truth, train)
    train["provenance"] = PROV
    opt = pd.DataFrame(_rows("optimizer", [(p, [28 * p / (20e9 * 0.05)] * 3) for p in (1e6, 4e6)]))
    profile, _ = fit_profile(pd.concat([train, opt], ignore_index=True), MODEL, "CPU-2core")
    params = profile.phases["train_actor"].parameters
    assert params["optimizer_memory_efficiency"] == pytest.approx(0.05, rel=1e-9)
    assert params["train_compute_efficiency"] == pytest.approx(0.2, rel=1e-3)
    assert params["train_step_overhead_s"] == pytest.approx(0.01, rel=1e-3)
