"""The optimizer's costs from ``rlsim-real bench optimizer`` tables: what one Adam step costs on the device and,
offloaded, what its copies and its host Adam cost (real/offload.py).

rlsim prices an optimizer step (rlsim.trainer.training ``_optimizer_s``) per parameter P of a GPU's shard: on the
device, Adam's state streamed through memory at ``costs.optimizer_memory_efficiency`` of the device's bandwidth;
offloaded, the gradients down and the parameters up the host link at ``costs.host_link_efficiency`` of its
bandwidth (ZeRO-Offload's bytes: fp32 gradient, bf16 parameter), then P / ``costs.cpu_adam_params_per_s``.

Each bench phase has one coefficient and no intercept, so each is fitted in closed form as the geometric mean
over the configurations (model sizes) of what each configuration's median time implies (least squares on
log(predicted / measured), as calibrate.bench.fit does for the other phases), against rlsim's own price of the
step at coefficient 1 (:func:`_unit_times`): ``optimizer`` -> ``optimizer_memory_efficiency``, ``offload_copy``
-> ``host_link_efficiency``, ``host_adam`` -> ``cpu_adam_params_per_s``. P is the ``bytes`` column over the bytes
of one trained parameter (4: the real runs train in fp32; the bench records the dtype). The CPU runs' copies move
4 + 4 bytes per parameter (fp32 both ways) where rlsim counts 4 + 2, so the fitted ``host_link_efficiency`` is
the copy rate in rlsim's bytes: it prices this machine's copies, and is 3/4 of the share of the bandwidth the
copies reach.

The fitted values join the train phase's parameters in the profile (its fit then holds them fixed, so the
train's per-step overhead does not absorb the optimizer), and a scenario with ``training.offload_optimizer`` uses
the offloaded terms.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import pandas as pd

from calibrate import CalibrateError
from rlsim.io.records import OPTIMIZER_BENCH_PHASES
from rlsim.schema import Scenario
from rlsim.trainer.training import _optimizer_s  # rlsim's own price of one optimizer step

BYTES_PER_TRAINED_PARAM = {"float32": 4, "bfloat16": 2, "float16": 2}
KEYS = {
    "optimizer": "optimizer_memory_efficiency",
    "offload_copy": "host_link_efficiency",
    "host_adam": "cpu_adam_params_per_s",
}


def _params(rows: pd.DataFrame) -> np.ndarray:
    dtype = "float32"
    for value in rows["provenance"].dropna().unique() if "provenance" in rows else []:
        dtype = json.loads(value).get("dtype") or dtype
    return rows["bytes"].to_numpy(float) / BYTES_PER_TRAINED_PARAM.get(dtype, 4)


def _unit_times(scenario: Scenario, params: float) -> dict[str, float]:
    """Seconds rlsim prices for one optimizer step over ``params`` at efficiency 1 (the device Adam, the offloaded
    step's copies) and at one parameter per second (the host Adam): each phase's time is this over its
    coefficient, whatever bytes per parameter rlsim.trainer.training counts."""
    tr, costs = scenario.training, scenario.costs
    device = dataclasses.replace(
        scenario,
        training=dataclasses.replace(tr, offload_optimizer=False),
        costs=dataclasses.replace(costs, optimizer_memory_efficiency=1.0),
    )
    copies = dataclasses.replace(
        scenario,
        training=dataclasses.replace(tr, offload_optimizer=True),
        costs=dataclasses.replace(costs, host_link_efficiency=1.0, cpu_adam_params_per_s=1e300),
    )
    return {
        "optimizer": _optimizer_s(device, params),
        "offload_copy": _optimizer_s(copies, params),
        "host_adam": params,
    }


def fit_optimizer(table: pd.DataFrame, scenario: Scenario) -> tuple[dict[str, float], dict[str, Any]]:
    """The optimizer's cost coefficients (module docstring) from the table's optimizer rows, and a report per
    phase: the value, the configurations, and the in-sample MAPE of the configurations' medians."""
    values: dict[str, float] = {}
    report: dict[str, Any] = {}
    for phase in OPTIMIZER_BENCH_PHASES:
        rows = table[table["phase"] == phase]
        if not len(rows):
            continue
        med = rows.groupby("bytes", as_index=False).agg(time_s=("time_s", "median"), provenance=("provenance", "first"))
        p, t = _params(med), med["time_s"].to_numpy(float)
        if (t <= 0).any():
            raise CalibrateError(f"bench phase {phase}: a configuration's median time is not positive")
        implied = np.array([_unit_times(scenario, float(x))[phase] for x in p]) / t
        key = KEYS[phase]
        value = float(np.exp(np.mean(np.log(implied))))
        if key.endswith("efficiency"):
            value = min(1.0, value)
        values[key] = value
        predicted = t * implied / value
        report[phase] = {
            key: value,
            "params": p.tolist(),
            "median_time_s": t.tolist(),
            "mape": float(np.mean(np.abs(predicted / t - 1.0))),
        }
    return values, report
