"""Accuracy on published generation benchmarks: vLLM output tokens/s predicted by rlsim's engine model.

Input: CSVs with the columns of ``calibrate/published/data/gen_throughput_dev.csv``: one row per published
benchmark point (engine and version, model, GPU, tensor-parallel size ``tp``, the workload in ``concurrency``
and the lengths, the measured ``output_tok_per_s``). A row becomes one engine replica of ``tp`` GPUs serving the
benchmark's requests, all submitted at once (``request-rate inf``), simulated by ``rlsim.engine.rollout`` with the
scenario's engine settings and cost coefficients; prediction = output tokens / makespan.

Mapping of the workload (vLLM's ``benchmarks/benchmark_serving.py``; ``vllm bench serve`` since 0.10). The lengths:
with ``--dataset-name sharegpt`` (``input_len`` / ``output_len`` not numbers) ``num-prompts`` requests whose prompt
and output lengths come from ShareGPT conversations, keeping pairs with prompt >= 4, output >= 4, prompt <= 1024 and
prompt + output <= 2048; the output length is the conversation's reply (``max_tokens``), so each request generates
exactly that many tokens. The exact lengths are not published; rlsim draws them from lognormals with the published
means (``SHAREGPT_PROMPT_MEAN``, ``SHAREGPT_OUTPUT_MEAN``: vLLM's own figures) and one spread for both
(``SHAREGPT_SIGMA``), applying the same filter, and averages ``DRAWS`` draws. With numbers in ``input_len`` and
``output_len`` (``--dataset-name random``, range ratio 0) every request has those lengths.

How the requests arrive (the ``concurrency`` column, :func:`bench_load`), each priced by :func:`bench_throughput`:

* ``request-rate inf`` without a concurrency limit: a *burst*, every request submitted at once; the engine runs
  up to ``max_num_seqs`` and queues the rest.
* ``max-concurrency=N`` (or ``concurrency=N``, or a bare integer in that column): *sustained* load, the client
  keeps N requests in flight and sends the next as one finishes, so the engine runs min(N, max_num_seqs) at a
  time until the last ``num-prompts`` requests drain. It is not one batch of N: that batch's tail (the batch
  shrinking as responses end) happens once per benchmark, not once per N requests.
* ``request-rate=R`` (finite; Poisson arrivals in the benchmark): in steady state the engine holds the N requests
  that Little's law gives, N = R x latency(N), where R(N) = requests / makespan of the sustained run at N; rlsim
  solves R(N) = R between the integers (linear between them). Once R exceeds what ``max_num_seqs`` sustains, the
  engine is saturated: sustained at ``max_num_seqs``. Output tokens/s = output tokens / (requests / R + N / R):
  the arrivals' span plus the last request's time in the system.

``num-prompts`` not given: vLLM's default, 1000 (``--num-prompts``, benchmark_serving.py).

Engine settings by engine version (``engine_version``), ``vllm serve``'s defaults at that release: its batch limits
(rlsim/catalog/software.yaml ``batch_defaults``: 256 sequences for 0.5.x; for the V1 server 1024 sequences and 8192
batched tokens on >= 70 GiB GPUs other than the A100, 256 / 2048 elsewhere), gpu_memory_utilization 0.9, and
the scenario's ``software.engine_version``, which selects the named engine behaviour (``vllm-0.5`` for 0.5.x,
``vllm-v1`` from 0.8 on; a release the catalog does not know takes the nearest known, the latest at or below it,
and the row's reason column says so).
A model name ending in ``-FP8`` serves FP8 weights (``engine.precision: fp8``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from calibrate.published.tables import GENERATION_DEV_SET, data_path, error_summary, read_csvs
from rlsim.engine.iteration import DecodeCoefficients, PrefillCoefficients
from rlsim.engine.replica import SchedulerRules
from rlsim.engine.rollout import simulate_rollout
from rlsim.errors import RlsimError
from rlsim.frameworks.nemo_rl.recipe import NotExpressible, gpu_name, model_name
from rlsim.run.costs import RooflineCostModel
from rlsim.scenario import from_dict, scheduler_rules, software

REQUIRED_COLUMNS = ("model", "gpu", "tp", "concurrency", "output_tok_per_s")
# tokens after benchmark_serving's filter, Llama-3 tokenizer: "average input 202, average output 179" (vLLM v0.6.0
# release blog, blog.vllm.ai 2024-09-05, its ShareGPT setup; the data README's ~160 / ~340 match the whole dataset
# as the PagedAttention paper describes it, not the filtered benchmark sample)
SHAREGPT_PROMPT_MEAN = 202.0
SHAREGPT_OUTPUT_MEAN = 179.0
SHAREGPT_SIGMA = 1.0  # assumption: spread of log length (heavy-tailed conversations)
DRAWS = 3
DEFAULT_NUM_PROMPTS = 1000  # benchmarks/benchmark_serving.py --num-prompts default


def dev_set_path() -> Path:
    return data_path(GENERATION_DEV_SET)


def read_rows(paths: list[Path]) -> pd.DataFrame:
    return read_csvs(paths, REQUIRED_COLUMNS, dev_set_path().name)


@dataclass(frozen=True)
class BenchLoad:
    """How a benchmark's requests arrive (module docstring): ``burst`` (all at once), ``sustained`` (``concurrency``
    in flight) or ``rate`` (``rate`` requests/s), ``num_prompts`` in all."""

    kind: Literal["burst", "sustained", "rate"]
    num_prompts: int
    concurrency: int | None = None
    rate: float | None = None

    @property
    def label(self) -> str:
        if self.kind == "sustained":
            return f"{self.concurrency} in flight, {self.num_prompts} requests"
        if self.kind == "rate":
            return f"{self.rate:g} requests/s, {self.num_prompts} requests"
        return f"{self.num_prompts} requests at once"


_NUMBER = r"(\d+(?:\.\d+)?|inf)"


def bench_load(text: Any) -> BenchLoad:
    """The arrival pattern written in a row's ``concurrency`` column: ``num-prompts=M``, ``max-concurrency=N`` (or
    ``concurrency=N``), ``request-rate R`` (``inf`` or requests/s) in any order, separated by commas; a bare integer
    is a fixed concurrency."""
    raw = str(text).strip()
    low = raw.lower().replace("_", "-")
    try:
        bare = float(low)
    except ValueError:
        bare = None
    if bare is not None:
        if bare < 1 or bare != int(bare):
            raise NotExpressible(f"concurrency {raw!r}: a fixed concurrency is a whole number >= 1")
        n = int(bare)
        return BenchLoad("sustained", max(DEFAULT_NUM_PROMPTS, n), concurrency=n)

    def number(pattern: str) -> str | None:
        m = re.search(pattern + r"\s*[=:]?\s*" + _NUMBER, low)
        return m.group(1) if m else None

    prompts = number(r"num-prompts")
    conc = number(r"(?:max-)?concurrency")
    rate = number(r"(?:request-rate|qps)")
    if prompts is None and conc is None and rate is None:
        raise NotExpressible(
            f"concurrency {raw!r} names no load: write num-prompts=M with max-concurrency=N or request-rate R "
            "(inf: all at once), or a bare integer for a fixed concurrency"
        )
    if (prompts is not None and "inf" in prompts) or (conc is not None and "inf" in conc):
        raise NotExpressible(f"concurrency {raw!r}: num-prompts and max-concurrency are whole numbers")
    n_prompts = int(float(prompts)) if prompts is not None else DEFAULT_NUM_PROMPTS
    if n_prompts < 1:
        raise NotExpressible(f"concurrency {raw!r}: num-prompts must be >= 1")
    if conc is not None:  # a concurrency limit holds whatever the rate (the client waits for a free slot)
        n = int(float(conc))
        if n < 1:
            raise NotExpressible(f"concurrency {raw!r}: max-concurrency must be >= 1")
        if rate is not None and rate != "inf":
            raise NotExpressible(
                f"concurrency {raw!r}: both a finite request rate and a concurrency limit; rlsim prices one of them"
            )
        return BenchLoad("sustained", n_prompts, concurrency=n)
    if rate is None or rate == "inf":
        return BenchLoad("burst", n_prompts)
    r = float(rate)
    if r <= 0:
        raise NotExpressible(f"concurrency {raw!r}: request-rate must be > 0 (inf: all at once)")
    return BenchLoad("rate", n_prompts, rate=r)


def bench_throughput(
    load: BenchLoad,
    prompt: np.ndarray,
    output: np.ndarray,
    max_num_seqs: int,
    kv_capacity_tokens: int,
    decode: DecodeCoefficients,
    prefill: PrefillCoefficients,
    rules: SchedulerRules | None = None,
) -> float:
    """Output tokens/s of one engine replica serving the requests (``prompt``, ``output`` lengths, in arrival order)
    under ``load`` (module docstring)."""

    def makespan(running: int) -> float:
        res = simulate_rollout(prompt, output, 1, 1, running, kv_capacity_tokens, decode, prefill, 0.0, rules)
        return res.rollout_s

    total = float(output.sum())
    if load.kind == "burst":
        return total / makespan(max_num_seqs)
    if load.kind == "sustained":
        return total / makespan(min(load.concurrency or 1, max_num_seqs))
    n_req, rate = len(output), float(load.rate or 0.0)
    served = {}  # requests/s the engine sustains with n in flight: increasing in n

    def throughput(n: int) -> float:
        if n not in served:
            served[n] = n_req / makespan(n)
        return served[n]

    if throughput(max_num_seqs) <= rate:  # saturated: the queue grows, the engine runs flat out
        return total / makespan(max_num_seqs)
    lo, hi = 0, max_num_seqs  # R(lo) < rate <= R(hi), R(0) = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if throughput(mid) < rate:
            lo = mid
        else:
            hi = mid
    r_lo = throughput(lo) if lo else 0.0
    in_flight = lo + (rate - r_lo) / (throughput(hi) - r_lo)
    return total / ((n_req + in_flight) / rate)


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


def _served_limits(version: tuple[int, ...], gpu: str) -> dict[str, int]:
    """``vllm serve``'s batch limits at that release on that GPU (rlsim/catalog/software.yaml batch_defaults: the
    V1 server's 1024 sequences / 8192 tokens on >= 70 GiB GPUs other than the A100, 256 / 2048 elsewhere; vLLM
    0.5's 256 sequences, its token budget left to the rounds scheduler)."""
    limits = software.batch_defaults(".".join(map(str, version)), "openai_api_server", gpu)
    return {
        "max_num_seqs": limits["max_num_seqs"],
        **({"max_num_batched_tokens": limits["max_num_batched_tokens"]} if "max_num_batched_tokens" in limits else {}),
    }


def scenario_for_row(fields: dict[str, Any], costs: dict[str, float] | None = None) -> dict[str, Any]:
    engine = str(fields.get("engine") or "vLLM").strip()
    if engine.lower() != "vllm":
        raise NotExpressible(f"engine {engine!r} is not modelled: rlsim models vLLM's scheduler and kernels")
    tp = int(float(fields["tp"]))
    name = str(fields["model"]).strip()
    gpu = gpu_name(fields.get("gpu", ""))
    version = _version(fields.get("engine_version", ""))
    if version == (0, 0, 0):
        raise NotExpressible(f"engine_version {fields.get('engine_version')!r} names no vLLM release (write X.Y.Z)")
    raw: dict[str, Any] = {
        "name": f"gen {name} tp{tp}",
        "model": model_name(name),
        # host_memory_bytes: the placeholder trainer below offloads everything; no host memory is measured here
        "hardware": {"gpu": gpu, "num_gpus": tp, "host_memory_bytes": 1e18},
        "engine": {
            "tensor_parallel_size": tp,
            **_served_limits(version, gpu),
            "gpu_memory_utilization": 0.9,
            "precision": "fp8" if name.upper().endswith("-FP8") else "bf16",
        },
        # the engine release selects its behaviour (rlsim/catalog/software.yaml; unknown: the nearest, warned)
        "software": {"engine": "vllm", "engine_version": ".".join(map(str, version))},
        "workload": {
            "max_prompt_tokens": max(1024, _fixed_length(fields.get("input_len")) or 0),
            "max_response_tokens": max(2044, _fixed_length(fields.get("output_len")) or 0),
        },
        # a serving benchmark has no trainer; a scenario always has one, so give it a layout that holds nothing
        # on the GPUs (the training memory check then never refuses an engine-only row)
        "training": {"offload_optimizer": True, "offload_params": True, "activation_recompute": "full"},
    }
    if costs:
        raw["costs"] = dict(costs)
    return raw


def _fixed_length(value: Any) -> int | None:
    """A numeric ``input_len`` / ``output_len`` (the random dataset), or None (ShareGPT and other datasets)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(v) or v < 1 or v != int(v):
        raise NotExpressible(f"length {value!r}: a fixed prompt or output length is a whole number >= 1")
    return int(v)


def request_lengths(fields: dict[str, Any], n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` requests' (prompt, output) lengths: fixed when both columns are numbers, else a ShareGPT draw."""
    fixed_in, fixed_out = _fixed_length(fields.get("input_len")), _fixed_length(fields.get("output_len"))
    if fixed_in is not None and fixed_out is not None:
        return np.full(n, fixed_in, dtype=np.int64), np.full(n, fixed_out, dtype=np.int64)
    if (fixed_in is None) != (fixed_out is None):
        raise NotExpressible(
            f"input_len {fields.get('input_len')!r} and output_len {fields.get('output_len')!r}: give both as numbers "
            "(random dataset) or neither (ShareGPT)"
        )
    return sharegpt_lengths(n, np.random.default_rng(seed))


def predict_row(fields: dict[str, Any], costs: dict[str, float] | None = None) -> tuple[float, list[str]]:
    """Predicted output tokens/s of one benchmark row (mean over DRAWS ShareGPT draws; one run for fixed lengths),
    and the warnings of its mapping (an engine release taken as its nearest known one)."""
    load = bench_load(fields.get("concurrency"))
    scn = from_dict(scenario_for_row(fields, costs))
    cost = RooflineCostModel.from_scenario(scn)
    decode, prefill = cost.decode_coefficients(), cost.prefill_coefficients()
    fixed = _fixed_length(fields.get("input_len")) is not None
    rates = []
    for seed in range(1 if fixed else DRAWS):
        prompt, output = request_lengths(fields, load.num_prompts, seed)
        rates.append(
            bench_throughput(
                load,
                prompt,
                output,
                scn.engine.max_num_seqs,
                scn.kv_capacity_tokens,
                decode,
                prefill,
                scheduler_rules(scn),
            )
        )
    return float(np.mean(rates)), software.warnings(scn)


@dataclass
class GenResult:
    file: str
    row: int
    label: str
    tp: int
    measured: float
    predicted: float | None = None
    reason: str = ""
    load: str = ""  # BenchLoad.label: how the requests arrived

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
            res.load = bench_load(rec.get("concurrency")).label
        except NotExpressible:
            pass
        try:
            res.measured = float(rec.get("output_tok_per_s"))
        except (TypeError, ValueError):
            pass
        if not math.isfinite(res.measured) or res.measured <= 0 or tp < 1:
            res.reason = "output_tok_per_s and tp must be positive numbers"
            out.append(res)
            continue
        try:
            res.predicted, warns = predict_row(rec, costs)
            res.reason = "; ".join(warns)  # an expressed row's reason is a note on how it was mapped
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
                "load": r.load,
                "measured_output_tok_per_s": r.measured,
                "predicted_output_tok_per_s": r.predicted,
                "error_pct": r.error_pct,
                "expressed": r.expressed,
                "reason": r.reason,
            }
            for r in results
        ]
    )
