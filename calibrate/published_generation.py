"""Accuracy on published generation benchmarks: vLLM output tokens/s predicted by rlsim's engine model.

Input: CSVs with the columns of ``calibrate/data/published/gen_throughput_dev.csv``: one row per published
benchmark point (engine and version, model, GPU, tensor-parallel size ``tp``, the workload in ``concurrency``
and the lengths, the measured ``output_tok_per_s``). A row becomes one engine replica of ``tp`` GPUs serving the
benchmark's requests, all submitted at once (``request-rate inf``), simulated by ``rlsim.rollout`` with the
scenario's engine settings and cost coefficients; prediction = output tokens / makespan.

Mapping of the workload (vLLM's ``benchmarks/benchmark_serving.py`` with ``--dataset-name sharegpt``): ``num-prompts``
requests whose prompt and output lengths come from ShareGPT conversations, keeping pairs with prompt >= 4, output
>= 4, prompt <= 1024 and prompt + output <= 2048; the output length is the conversation's reply (``max_tokens``),
so each request generates exactly that many tokens. The exact lengths are not published; rlsim draws them from
lognormals with the published means (``SHAREGPT_PROMPT_MEAN``, ``SHAREGPT_OUTPUT_MEAN``: vLLM's own figures) and
one spread for both (``SHAREGPT_SIGMA``), applying the same filter, and averages ``DRAWS`` draws.

Engine settings by engine version (``engine_version``), vLLM's defaults at that version: max_num_seqs 256,
gpu_memory_utilization 0.9, and the named engine behaviour (``engine.behaviour``): ``vllm-0.5`` before 0.6.0,
``vllm-v1`` from 0.8 on; 0.6-0.7 have no named behaviour yet and are refused.
A model name ending in ``-FP8`` serves FP8 weights (``engine.precision: fp8``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calibrate.published import error_summary, read_csvs
from rlsim.costs import RooflineCostModel
from rlsim.errors import RlsimError
from rlsim.frameworks.nemo_rl import NotExpressible, gpu_name, model_name
from rlsim.rollout import simulate_rollout
from rlsim.scenario import from_dict

REQUIRED_COLUMNS = ("model", "gpu", "tp", "concurrency", "output_tok_per_s")
# tokens after benchmark_serving's filter, Llama-3 tokenizer: "average input 202, average output 179" (vLLM v0.6.0
# release blog, blog.vllm.ai 2024-09-05, its ShareGPT setup; the data README's ~160 / ~340 match the whole dataset
# as the PagedAttention paper describes it, not the filtered benchmark sample)
SHAREGPT_PROMPT_MEAN = 202.0
SHAREGPT_OUTPUT_MEAN = 179.0
SHAREGPT_SIGMA = 1.0  # assumption: spread of log length (heavy-tailed conversations)
DRAWS = 3
VLLM_V0_MAX_NUM_SEQS = 256  # vllm/engine/arg_utils.py EngineArgs.max_num_seqs (0.5.x)


def dev_set_path() -> Path:
    return Path(str(resources.files("calibrate").joinpath("data/published/gen_throughput_dev.csv")))


def read_rows(paths: list[Path]) -> pd.DataFrame:
    return read_csvs(paths, REQUIRED_COLUMNS, dev_set_path().name)


def _num_prompts(concurrency: Any) -> int:
    m = re.search(r"num-prompts\s*=\s*(\d+)", str(concurrency))
    if m:
        return int(m.group(1))
    try:
        return int(float(concurrency))
    except (TypeError, ValueError):
        raise NotExpressible(f"concurrency {concurrency!r} gives no number of prompts") from None


def _version(text: Any) -> tuple[int, ...]:
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", str(text))
    return tuple(int(x) for x in m.groups(default="0")) if m else (0, 0, 0)


def sharegpt_lengths(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` (prompt, output) pairs drawn like benchmark_serving's ShareGPT sample, with its filter."""
    prompts, outputs = [], []
    s2 = SHAREGPT_SIGMA**2 / 2
    while sum(len(p) for p in prompts) < n:
        p = np.rint(rng.lognormal(math.log(SHAREGPT_PROMPT_MEAN) - s2, SHAREGPT_SIGMA, 4 * n))
        o = np.rint(rng.lognormal(math.log(SHAREGPT_OUTPUT_MEAN) - s2, SHAREGPT_SIGMA, 4 * n))
        keep = (p >= 4) & (o >= 4) & (p <= 1024) & (p + o <= 2048)
        prompts.append(p[keep])
        outputs.append(o[keep])
    return (
        np.concatenate(prompts)[:n].astype(np.int64),
        np.concatenate(outputs)[:n].astype(np.int64),
    )


def engine_behaviour(version: tuple[int, ...]) -> str:
    """The named engine behaviour (rlsim/catalog/engines.yaml) of a vLLM version."""
    if version < (0, 6, 0):
        return "vllm-0.5"
    if version >= (0, 8, 0):
        return "vllm-v1"
    raise NotExpressible(f"no named engine behaviour for vLLM {'.'.join(map(str, version))} (add one to engines.yaml)")


def scenario_for_row(fields: dict[str, Any], costs: dict[str, float] | None = None) -> dict[str, Any]:
    tp = int(float(fields["tp"]))
    name = str(fields["model"]).strip()
    version = _version(fields.get("engine_version", ""))
    raw: dict[str, Any] = {
        "name": f"gen {name} tp{tp}",
        "model": model_name(name),
        "hardware": {"gpu": gpu_name(fields.get("gpu", "")), "num_gpus": tp},
        "engine": {
            "tensor_parallel_size": tp,
            "max_num_seqs": VLLM_V0_MAX_NUM_SEQS,
            "gpu_memory_utilization": 0.9,
            "precision": "fp8" if name.upper().endswith("-FP8") else "bf16",
            "behaviour": engine_behaviour(version),
        },
        "workload": {"max_prompt_tokens": 1024, "max_response_tokens": 2044},
        # a serving benchmark has no trainer; a scenario always has one, so give it a layout that holds nothing
        # on the GPUs (the training memory check then never refuses an engine-only row)
        "training": {"offload_optimizer": True, "offload_params": True, "activation_recompute": "full"},
    }
    if costs:
        raw["costs"] = dict(costs)
    return raw


def predict_row(fields: dict[str, Any], costs: dict[str, float] | None = None) -> float:
    """Predicted output tokens/s of one benchmark row (mean over DRAWS ShareGPT draws)."""
    n = _num_prompts(fields.get("concurrency"))
    scn = from_dict(scenario_for_row(fields, costs))
    cost = RooflineCostModel.from_scenario(scn)
    decode, prefill = cost.decode_coefficients(), cost.prefill_coefficients()
    rules = scn.scheduler_rules
    rates = []
    for seed in range(DRAWS):
        prompt, output = sharegpt_lengths(n, np.random.default_rng(seed))
        res = simulate_rollout(
            prompt, output, 1, 1, scn.engine.max_num_seqs, scn.kv_capacity_tokens, decode, prefill, 0.0, rules
        )
        rates.append(output.sum() / res.rollout_s)
    return float(np.mean(rates))


@dataclass
class GenResult:
    file: str
    row: int
    label: str
    tp: int
    measured: float
    predicted: float | None = None
    reason: str = ""

    @property
    def expressed(self) -> bool:
        return self.predicted is not None

    @property
    def error_pct(self) -> float | None:
        return None if self.predicted is None else (self.predicted / self.measured - 1.0) * 100.0


def evaluate(df: pd.DataFrame, costs: dict[str, float] | None = None) -> list[GenResult]:
    out = []
    for rec in df.to_dict("records"):
        try:
            tp = int(float(rec.get("tp")))
        except (TypeError, ValueError):
            tp = 0
        label = f"{rec.get('model')} tp{tp} ({rec.get('engine', '')} {rec.get('engine_version', '')})"
        res = GenResult(str(rec["file"]), int(rec["row"]), label, tp, float("nan"))
        try:
            res.measured = float(rec.get("output_tok_per_s"))
        except (TypeError, ValueError):
            pass
        if not math.isfinite(res.measured) or res.measured <= 0 or tp < 1:
            res.reason = "output_tok_per_s and tp must be positive numbers"
            out.append(res)
            continue
        try:
            res.predicted = predict_row(rec, costs)
        except NotExpressible as exc:
            res.reason = str(exc)
        except RlsimError as exc:
            res.reason = f"refused by rlsim: {exc}"
        out.append(res)
    return out


def summarize(results: list[GenResult]) -> dict[str, Any]:
    out = error_summary([r.error_pct for r in results if r.expressed], len(results))
    by_tp = {}
    for tp in sorted({r.tp for r in results if r.expressed}):
        e = np.array([r.error_pct for r in results if r.expressed and r.tp == tp])
        by_tp[str(tp)] = {
            "n": len(e),
            "median_error_pct": float(np.median(e)),
            "median_abs_error_pct": float(np.median(np.abs(e))),
        }
    out["by_tp"] = by_tp
    out["not_expressed"] = [
        {"file": r.file, "row": r.row, "run": r.label, "reason": r.reason} for r in results if not r.expressed
    ]
    return out


def table(results: list[GenResult]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "file": r.file,
                "row": r.row,
                "run": r.label,
                "tp": r.tp,
                "measured_output_tok_per_s": r.measured,
                "predicted_output_tok_per_s": r.predicted,
                "error_pct": r.error_pct,
                "expressed": r.expressed,
                "reason": r.reason,
            }
            for r in results
        ]
    )
