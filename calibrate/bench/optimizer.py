"""The optimizer's costs from ``rlsim-real bench optimizer`` tables: what one Adam step costs on the device and,
offloaded, what its copies and its host Adam cost (real/offload.py).

rlsim prices an optimizer step (rlsim.trainer.training ``_optimizer_s``) per parameter P of a GPU's shard:

* on the device: ``ADAM_BYTES_PER_PARAM`` x P / (HBM bandwidth x ``costs.optimizer_memory_efficiency``);
* offloaded: ``OFFLOAD_BYTES_PER_PARAM`` x P / (host link x ``costs.host_link_efficiency``) + P /
  ``costs.cpu_adam_params_per_s``.

Each bench phase has one coefficient and no intercept, so each is fitted in closed form as the geometric mean
over the configurations (model sizes) of what each configuration's median time implies (least squares on
log(predicted / measured), as calibrate.bench.fit does for the other phases): ``optimizer`` ->
``optimizer_memory_efficiency``, ``offload_copy`` -> ``host_link_efficiency``, ``host_adam`` ->
``cpu_adam_params_per_s``. P is the ``bytes`` column over the bytes of one trained parameter (4: the real runs
train in fp32; the bench records the dtype). The copies move 4 + 4 bytes per parameter here (fp32 gradient out,
fp32 parameter back) where rlsim counts 6 (fp32 gradient out, bf16 parameter back, its GPU case), so the fitted
``host_link_efficiency`` is the copy rate in rlsim's bytes: it prices this machine's copies exactly, and is 3/4
of the fraction of the bandwidth the copies reach.

The fitted values join the train phase's parameters in the profile (its fit then holds them fixed, so the
train's per-step overhead does not absorb the optimizer), and a scenario with ``training.offload_optimizer`` uses
the offloaded terms.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from calibrate import CalibrateError
from rlsim.io.records import OPTIMIZER_BENCH_PHASES
from rlsim.schema import Scenario
from rlsim.trainer.training import ADAM_BYTES_PER_PARAM, OFFLOAD_BYTES_PER_PARAM

BYTES_PER_TRAINED_PARAM = {"float32": 4, "bfloat16": 2, "float16": 2}


def _params(rows: pd.DataFrame) -> np.ndarray:
    dtype = "float32"
    for value in rows["provenance"].dropna().unique() if "provenance" in rows else []:
        dtype = json.loads(value).get("dtype") or dtype
    return rows["bytes"].to_numpy(float) / BYTES_PER_TRAINED_PARAM.get(dtype, 4)


def fit_optimizer(table: pd.DataFrame, scenario: Scenario) -> tuple[dict[str, float], dict[str, Any]]:
    """The optimizer's cost coefficients (module docstring) from the table's optimizer rows, and a report per
    phase: the value, the configurations, and the in-sample MAPE of the configurations' medians."""
    gpu = scenario.hardware.gpu
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
        if phase == "optimizer":
            key, implied = "optimizer_memory_efficiency", ADAM_BYTES_PER_PARAM * p / (gpu.hbm_bandwidth_bytes_per_s * t)
        elif phase == "offload_copy":
            key = "host_link_efficiency"
            implied = OFFLOAD_BYTES_PER_PARAM * p / (gpu.host_link_bandwidth_bytes_per_s * t)
        else:
            key, implied = "cpu_adam_params_per_s", p / t
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
