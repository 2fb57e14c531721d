"""rlsim's side of the check: each point predicted by the engine model under the fitted profile, compared with
what vLLM measured, and the error statistics.

A point is one replica receiving the N requests at once (``rlsim.engine.replica.simulate_replica``) with vLLM's CPU
``max_num_seqs`` and the KV capacity that ``VLLM_CPU_KVCACHE_SPACE`` gives (whole 128-token blocks). Output tokens
per second: measured = N x output length / vLLM's ``elapsed_time``, predicted = the same tokens / the predicted
seconds; error = predicted / measured - 1.
"""

from __future__ import annotations

import math
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from calibrate.vllm_check.plan import DEFAULT_KV_SPACE_GIB, VLLM_CPU_BLOCK_SIZE, VLLM_CPU_MAX_NUM_SEQS, Plan, Point
from rlsim.engine.replica import simulate_replica
from rlsim.run.costs import RooflineCostModel
from rlsim.scenario import from_dict, scheduler_rules

if TYPE_CHECKING:
    import pandas as pd


def kv_capacity_tokens(kv_space_gib: float, kv_bytes_per_token: float, block_size: int = VLLM_CPU_BLOCK_SIZE) -> int:
    """Tokens of KV cache vLLM on CPU allocates from ``VLLM_CPU_KVCACHE_SPACE`` GiB: whole blocks of tokens."""
    blocks = int(kv_space_gib * 2**30 // (block_size * kv_bytes_per_token))
    return blocks * block_size


def kv_blocks_needed(point: Point, block_size: int = VLLM_CPU_BLOCK_SIZE) -> int:
    """Blocks vLLM holds when every request runs at once (a sequence takes whole blocks)."""
    running = min(point.concurrency, VLLM_CPU_MAX_NUM_SEQS)
    return running * math.ceil((point.prompt_tokens + point.response_tokens) / block_size)


def predict_seconds(
    profile: Any,
    model: dict[str, Any] | str,
    point: Point,
    prompt_tokens: float | None = None,
    kv_space_gib: float = DEFAULT_KV_SPACE_GIB,
    max_num_seqs: int = VLLM_CPU_MAX_NUM_SEQS,
    gpu: str | None = None,
) -> float:
    """rlsim's seconds for a point under a profile: one replica, N requests at once, vLLM's max_num_seqs and KV.

    ``prompt_tokens`` is the prompt length vLLM actually saw (default: the point's); the KV capacity is what
    ``kv_space_gib`` GiB hold in whole blocks (:func:`kv_capacity_tokens`).
    """
    # loaded when the command runs: rlsim-calibrate starts without pandas
    from calibrate.bench.fit import base_scenario

    gpu = gpu or profile.provenance.get("gpu_catalog_entry") or "CPU-2core"
    p = int(round(point.prompt_tokens if prompt_tokens is None else prompt_tokens))
    scn = base_scenario(model, gpu, max_num_seqs, p + point.response_tokens)
    cost = RooflineCostModel(replace(scn, costs=profile.apply(scn.costs)))  # the profile's coefficients folded in
    kv_tokens = kv_capacity_tokens(kv_space_gib, scn.kv_bytes_per_token)
    n = point.concurrency
    res = simulate_replica(
        np.full(n, p),
        np.full(n, point.response_tokens),
        max_num_seqs,
        int(kv_tokens),
        cost.decode_coefficients(),
        cost.prefill_coefficients(),
        scheduler_rules(scn),  # vLLM's CPU rules: chunked prefill, 128-token blocks, 4096-token budget
    )
    return float(res.makespan_s + cost.rollout_overhead_s(n))


def model_kv_bytes(model: dict[str, Any] | str) -> float:
    """KV bytes per token of a model spec (rlsim's own count: K and V of every layer at the model's dtype)."""
    return float(from_dict({"model": model, "hardware": {"gpu": "CPU-2core"}}).kv_bytes_per_token)


ESTIMATORS = {"min": "the fastest repeat", "median": "the median repeat"}


def bench_rows(table: pd.DataFrame, estimator: str = "min") -> pd.DataFrame:
    """One row per bench configuration, its time the ``estimator`` of its repeats (``min`` or ``median``)."""
    keys = ["concurrency", "prompt_tokens", "response_tokens"]
    first = table.groupby(keys, as_index=False).first()
    first["time_s"] = table.groupby(keys)["time_s"].agg(estimator).to_numpy()
    first["repeat"] = 0
    return first


def summarize(rows: pd.DataFrame) -> dict[str, Any]:
    """Error statistics over the points of ``check.csv`` (``error_pct`` = predicted / measured - 1, in %)."""
    err = rows["error_pct"].to_numpy(float)
    ok = np.isfinite(err)
    a = np.abs(err[ok])
    return {
        "n_points": int(ok.sum()),
        "median_abs_error_pct": float(np.median(a)) if a.size else float("nan"),
        "median_error_pct": float(np.median(err[ok])) if a.size else float("nan"),
        "max_abs_error_pct": float(a.max()) if a.size else float("nan"),
        "within_15_pct": float((a <= 15).mean()) if a.size else float("nan"),
    }


def format_table(rows: pd.DataFrame) -> str:
    head = (
        f"{'N':>5} {'prompt':>6} {'output':>6} {'measured tok/s':>14} {'spread':>13} {'predicted tok/s':>15} "
        f"{'error':>8}  where (concurrency/prompt/output vs the bench grid)"
    )
    lines = [head]
    for r in rows.itertuples(index=False):
        spread = f"{r.measured_min_tokens_per_s:.0f}-{r.measured_max_tokens_per_s:.0f}"
        lines.append(
            f"{r.concurrency:>5} {r.prompt_tokens:>6} {r.response_tokens:>6} {r.measured_tokens_per_s:>14.1f} "
            f"{spread:>13} {r.predicted_tokens_per_s:>15.1f} {r.error_pct:>+7.1f}%  {r.where}"
        )
    return "\n".join(lines)


def compare(
    runs: pd.DataFrame,
    plan: Plan,
    profile: Any,
    model: dict[str, Any],
    kv_space_gib: float,
    estimator: str = "min",
) -> pd.DataFrame:
    """One row per point: the ``estimator`` of its runs (``min``: the fastest, or ``median``) against rlsim."""
    # loaded when the command runs: rlsim-calibrate starts without pandas
    import pandas as pd

    out = []
    for pt in plan.points:
        r = runs[
            (runs["concurrency"] == pt.concurrency)
            & (runs["prompt_tokens"] == pt.prompt_tokens)
            & (runs["response_tokens"] == pt.response_tokens)
        ]
        elapsed = float(r["elapsed_s"].agg(estimator))
        prompt_seen = float(r["prompt_tokens_seen"].median())
        measured = pt.concurrency * pt.response_tokens / elapsed
        predicted_s = predict_seconds(profile, model, pt, prompt_seen, kv_space_gib)
        predicted = pt.concurrency * pt.response_tokens / predicted_s
        where = plan.grid.where(pt)
        out.append(
            {
                **asdict(pt),
                "prompt_tokens_seen": prompt_seen,
                "max_num_seqs": VLLM_CPU_MAX_NUM_SEQS,
                "repeats": len(r),
                "measured_s": elapsed,
                "measured_tokens_per_s": measured,
                "measured_min_tokens_per_s": float(r["output_tokens_per_s"].min()),
                "measured_max_tokens_per_s": float(r["output_tokens_per_s"].max()),
                "predicted_s": predicted_s,
                "predicted_tokens_per_s": predicted,
                "error_pct": (predicted / measured - 1.0) * 100.0,
                "kv_blocks_needed": kv_blocks_needed(pt),
                "where": "/".join(where.values()),
            }
        )
    return pd.DataFrame(out)
