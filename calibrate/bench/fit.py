"""Fitting rlsim's cost model to benchmark tables: the roofline coefficients of each phase, with uncertainty,
the range fitted over, and the error on held-out points.

The model fitted is rlsim's own (``rlsim.run.costs.RooflineCostModel`` and, for generation, ``rlsim.engine.replica``),
so a profile predicts exactly what the simulator will compute. Per phase, the free coefficients are:

* rollout: ``decode_iteration_overhead_s``, ``decode_per_seq_overhead_s``, ``decode_memory_efficiency``,
  ``prefill_overhead_s``, ``prefill_compute_efficiency``. A bench point (c sequences, p prompt tokens, r
  response tokens, EOS ignored) is predicted as one replica serving c identical requests
  (``rlsim.engine.replica.simulate_replica``): for the ``hf`` engine one prefill round and r decode iterations; for
  ``vllm`` under vLLM's rules on the bench's device (:func:`bench_rules`).
* train_actor: ``train_compute_efficiency``, ``train_step_overhead_s`` (one optimizer step on the tokens);
* old_logprob: ``forward_compute_efficiency``, ``forward_overhead_s`` (one forward pass);
* weight_sync: ``weight_sync_latency_s``, and ``link_efficiency`` (the fraction of the catalog link bandwidth)
  when the bench moved three or more sizes (``rlsim-real bench sync --model tiny --model tiny:hidden_size=256
  ...``); with one size only the fixed latency is identifiable and the bandwidth keeps the catalog link and the
  default ``link_efficiency``. A fitted ``link_efficiency`` is the profile's for every link term.

Fit: ``scipy.optimize.least_squares`` on log(predicted / measured) over the configurations, each measured as the
median of its repeats (relative errors, so small and large points weigh alike; a repeat slowed by another
process on a shared machine moves a median little, where a fit over every repeat followed it: one slowed bench
round pushed the rollout's held-out MAPE to 153%), coefficients bounded (efficiencies in [1e-6, 1], overheads in
[0, 100 s]). When the phase's table was measured under a *sustained* load (other processes above
``rlsim.host.machine_load.HIGH_OTHER_CPU`` in more than half of the repeats that recorded it), a configuration is the
*mean* of its repeats instead: slowed repeats are then the machine's steady state, and a run's time (a sum of
steps) follows the expected time, not the median. Measured on this 2-core VM beside one CPU-bound process, the
repeats were bimodal (about 2x the quiet time, or 100-150 ms more when the scheduler took a core away mid-call,
more often the longer the call), so a median fit was steeper in tokens than the loaded runs (hf loop held out:
step time -22% / -0.2% at 0.5x / 4x the reference batch with medians, -17% / -7% with means; time-to-target
-11% / +20% and -5% / +11%; on quiet tables both statistics give the same fit within 1 point).
Uncertainty: one standard deviation from the Jacobian, ``sqrt(diag((J^T J)^-1) * SSR / (n - k))``.
Held-out error: k-fold cross-validation over configurations (all repeats of a configuration in the same fold,
k = min(5, configurations)). A held-out point is a configuration measured as the median of its repeats: MAPE
and the largest absolute percentage error over those points (``mape``, ``max_abs_pct_error``), and for
reference the MAPE over single repeats (``repeat_mape``, which also counts run-to-run noise). A phase
benchmarked in one configuration only (the weight sync) is cross-validated over its repeats, each a point.

A fit says when its table is too thin or too noisy to trust (``FitResult.warnings``): fewer than two
configurations per coefficient, fewer than 3 repeats per configuration, a configuration's median uncertain by
more than 5% (its standard error from the repeats' interquartile range: 0.93 IQR / median / sqrt(repeats)), or a
held-out MAPE above 10%.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from calibrate import CalibrateError
from calibrate.bench.optimizer import fit_optimizer
from calibrate.bench.tables import bench_threads, provenance
from rlsim import catalog
from rlsim.engine.replica import simulate_replica
from rlsim.engine.scheduler import SchedulerRules
from rlsim.host.machine_load import HIGH_OTHER_CPU, load_summary, sustained
from rlsim.io.records import BENCH_PHASE_COLUMNS, DETOKENIZE_BENCH_PHASES, OPTIMIZER_BENCH_PHASES
from rlsim.phases import Phase
from rlsim.run.costs import RooflineCostModel
from rlsim.run.profile import PROVENANCE_KEYS, PhaseFit, Profile
from rlsim.scenario import Costs, Scenario, from_dict, scheduler_rules

FIT_PARAMS: dict[str, tuple[str, ...]] = {
    Phase.ROLLOUT.value: (
        "decode_iteration_overhead_s",
        "decode_per_seq_overhead_s",
        "decode_memory_efficiency",
        "prefill_overhead_s",
        "prefill_compute_efficiency",
    ),
    Phase.TRAIN_ACTOR.value: ("train_compute_efficiency", "train_step_overhead_s"),
    Phase.OLD_LOGPROB.value: ("forward_compute_efficiency", "forward_overhead_s"),
    Phase.WEIGHT_SYNC.value: ("weight_sync_latency_s",),
}
# coefficients a bench cannot see, fixed in a profile: the bench times engine.generate alone (no dispatch), and
# an in-process engine does not sleep
FIXED = {"rollout_overhead_s": 0.0, "rollout_s_per_sample": 0.0, "sleep_wake_overhead_s": 0.0}
# rlsim.io.records; the optimizer bench's phases are fitted apart (calibrate.bench.optimizer), the detokenize
# bench's read by rlsim-real itself (real.detokenize)
CONFIG_COLUMNS = {
    p: list(cols)
    for p, cols in BENCH_PHASE_COLUMNS.items()
    if p not in OPTIMIZER_BENCH_PHASES + DETOKENIZE_BENCH_PHASES
}
# vLLM's default max_num_seqs for the LLM class on CPUs and GPUs under 70 GB (1024 on H100-class GPUs:
# vllm/engine/arg_utils.py, 0.32): for bench tables and runs that do not record the engine's own, whatever their
# device. The software catalog holds the same default by GPU size (rlsim.scenario.software.batch_defaults), which
# would give 1024 on >= 70 GiB GPUs; this one number is what a bench table or run without a record is priced at.
MAX_NUM_SEQS_VLLM = 256


def guess_gpu(device: str) -> str:
    """The catalog entry for a bench's device string (``cpu ...`` -> CPU-2core, ``NVIDIA H200`` -> H200)."""
    d = device.lower()
    if d.startswith("cpu"):
        return "CPU-2core"
    for name in ("H200", "H100", "A100", "B200", "L40S", "MI300X"):
        if name.lower() in d:
            return next(g for g in catalog.gpu_names() if g.startswith(name))
    raise CalibrateError(
        f"device {device!r} matches no catalog GPU; pass --gpu with one of {', '.join(catalog.gpu_names())}"
    )


# real/'s trainer keeps every activation (real/update.py: no activation checkpointing): its training pass is a
# forward and a backward, which the bench and run scenarios say, so a fit prices the passes it measured
REAL_RECOMPUTE = "none"


def base_scenario(model: dict[str, Any] | str, gpu: str, max_batch: int, max_context: int) -> Scenario:
    """A one-device, colocated scenario in which bench points are predicted."""
    return from_dict(
        {
            "model": model,
            "hardware": {"gpu": gpu, "num_gpus": 1, "placement": "colocated"},
            "engine": {"max_num_seqs": int(max(1, max_batch)), "gpu_memory_utilization": 0.9},
            "workload": {
                "prompts_per_step": 1,
                "group_size": 2,
                "max_prompt_tokens": 16,
                "max_response_tokens": int(max(16, max_context)),
                "prompt_length": {"dist": "fixed", "tokens": 1},
                "response_length": {"dist": "fixed", "tokens": 1},
            },
            "schedule": {"mode": "sync-colocated"},
            "training": {"activation_recompute": REAL_RECOMPUTE},
        }
    )


def bench_rules(scenario: Scenario, engine: str) -> SchedulerRules:
    """How a bench engine schedules: vLLM as the scenario's device runs it (on CPU: chunked prefill, 128-token
    blocks, 4096-token budget); ``hf`` (transformers' generate) prefills the whole batch, then decodes it."""
    return scheduler_rules(scenario) if engine == "vllm" else SchedulerRules()


def vllm_max_num_seqs(rows: pd.DataFrame) -> int:
    """vLLM's limit on running sequences in a bench table: what its provenance records (``rlsim-real bench`` reads
    it off the engine), else vLLM's default on CPUs and GPUs under 70 GB (:data:`MAX_NUM_SEQS_VLLM`)."""
    for value in rows["provenance"].dropna().unique() if "provenance" in rows else []:
        found = _provenance_max_num_seqs(value)
        if found:
            return found
    return MAX_NUM_SEQS_VLLM


@functools.lru_cache(maxsize=64)
def _provenance_max_num_seqs(value: str) -> int | None:
    """A bench row's recorded max_num_seqs (parsed once per provenance string: predict runs in the fit's loop)."""
    try:
        found = json.loads(value).get("max_num_seqs")
    except (TypeError, AttributeError, json.JSONDecodeError):
        return None
    return int(found) if found else None


def predict(phase: str, scenario: Scenario, costs: Costs, rows: pd.DataFrame) -> np.ndarray:
    """rlsim's prediction of each row's seconds under ``costs`` (the candidate coefficients, folded into
    ``scenario``)."""
    cost = RooflineCostModel(dataclasses.replace(scenario, costs=costs))
    if phase == Phase.ROLLOUT:
        decode, prefill = cost.decode_coefficients(), cost.prefill_coefficients()
        out = []
        cache: dict[tuple[str, int, int, int], float] = {}
        engines = rows["engine"] if "engine" in rows else pd.Series("vllm", index=rows.index)
        points = rows[["concurrency", "prompt_tokens", "response_tokens"]].astype(int)
        limit = vllm_max_num_seqs(rows)
        for e, (c, p, r) in zip(engines, points.itertuples(index=False)):
            if (e, c, p, r) not in cache:
                running = min(c, limit) if e == "vllm" else c  # vLLM runs at most max_num_seqs at once
                res = simulate_replica(
                    np.full(c, p),
                    np.full(c, r),
                    running,
                    scenario.kv_capacity_tokens,
                    decode,
                    prefill,
                    bench_rules(scenario, e),
                )
                cache[(e, c, p, r)] = res.makespan_s + cost.rollout_overhead_s(c)
            out.append(cache[(e, c, p, r)])
        return np.array(out)
    if phase in (Phase.TRAIN_ACTOR, Phase.OLD_LOGPROB):
        n_tok = rows["tokens"].to_numpy(float)
        seqs = rows["sequences"].to_numpy(float)
        sq = seqs * (n_tok / seqs) ** 2
        if phase == Phase.TRAIN_ACTOR:
            return np.array([cost.train_s(scenario.model, t, s, 1, 1) for t, s in zip(n_tok, sq)])
        return np.array([cost.forward_s(scenario.model, t, s) for t, s in zip(n_tok, sq)])
    if phase == Phase.WEIGHT_SYNC:
        # the bench times an in-process load of the given bytes: link time plus the fixed latency (no sleep/wake)
        link = scenario.hardware.gpu.link_bandwidth_bytes_per_s * costs.link_efficiency
        return rows["bytes"].to_numpy(float) / link + costs.weight_sync_latency_s
    raise CalibrateError(f"no cost model for phase {phase!r}")


@dataclass(frozen=True)
class FitResult:
    phase: str
    parameters: dict[str, float]
    uncertainty: dict[str, float]
    fitted_range: dict[str, tuple[float, float]]
    held_out: dict[str, Any]
    in_sample_mape: float
    warnings: tuple[str, ...] = ()


NOISY_MEDIAN = 0.05  # standard error of a configuration's median (from its repeats' IQR) above which it is noisy
TRUSTED_MAPE = 0.10  # held-out MAPE above which a phase's fit is called untrustworthy


def _bounds(name: str) -> tuple[float, float]:
    return (1e-6, 1.0) if name.endswith("efficiency") else (0.0, 100.0)


def point_statistic(rows: pd.DataFrame) -> str:
    """How a configuration's repeats make one point: ``"median"``, or ``"mean"`` when the table was measured
    under a sustained load (module docstring)."""
    return "mean" if sustained(load_summary(rows.to_dict("records"))) else "median"


def _fit(
    phase: str, scenario: Scenario, start: Costs, rows: pd.DataFrame, names: tuple[str, ...], statistic: str = "median"
) -> tuple[dict[str, float], dict[str, float]]:
    # one point per configuration: the median (or, under sustained load, the mean) of its repeats
    rows = rows.assign(_key=_config_key(phase, rows)).groupby("_key", sort=True)
    rows = rows.first().assign(time_s=rows["time_s"].agg(statistic)).reset_index(drop=True)
    measured = rows["time_s"].to_numpy(float)
    lo, hi = zip(*(_bounds(n) for n in names))
    x0 = np.clip([getattr(start, n) for n in names], np.array(lo) + 1e-12, hi)

    def residuals(x: np.ndarray) -> np.ndarray:
        costs = dataclasses.replace(start, **dict(zip(names, map(float, x))))
        return np.log(np.maximum(predict(phase, scenario, costs, rows), 1e-12) / measured)

    sol = least_squares(residuals, x0, bounds=(lo, hi), x_scale="jac", diff_step=1e-4, max_nfev=400)
    params = dict(zip(names, map(float, sol.x)))
    dof = max(1, len(measured) - len(names))
    s2 = float(sol.fun @ sol.fun) / dof
    cov = np.linalg.pinv(sol.jac.T @ sol.jac) * s2
    # one sigma in the parameters' own units (the residuals are relative, so this is already scaled)
    sigma = {n: float(np.sqrt(max(cov[i, i], 0.0))) for i, n in enumerate(names)}
    return params, sigma


def phase_params(phase: str, rows: pd.DataFrame) -> tuple[str, ...]:
    """The coefficients fitted for a phase: :data:`FIT_PARAMS`, and for the weight sync also ``link_efficiency``
    when the bench moved at least three sizes (the bandwidth is identifiable apart from the fixed latency)."""
    if phase == Phase.WEIGHT_SYNC and rows["bytes"].nunique() >= 3:
        return (*FIT_PARAMS[phase], "link_efficiency")
    return FIT_PARAMS[phase]


def _config_key(phase: str, rows: pd.DataFrame) -> pd.Series:
    return rows[CONFIG_COLUMNS[phase]].astype(str).agg("|".join, axis=1)


def fit_phase(
    phase: str, scenario: Scenario, rows: pd.DataFrame, start: Costs | None = None, folds: int = 5
) -> FitResult:
    """Fit one phase's coefficients on ``rows`` and cross-validate them."""
    start = dataclasses.replace(start or scenario.costs, **FIXED)
    names = phase_params(phase, rows)
    keys = _config_key(phase, rows)
    configs = sorted(set(keys))
    need_configs = 1 if names == ("weight_sync_latency_s",) else len(names) + 1
    if len(configs) < need_configs or len(rows) < len(names) + 1:
        raise CalibrateError(
            f"phase {phase}: {len(configs)} distinct configuration(s) and {len(rows)} row(s) for {len(names)} "
            f"coefficient(s); too few points: benchmark at least {need_configs} configurations "
            f"({', '.join(CONFIG_COLUMNS[phase])}) with repeats"
        )
    statistic = point_statistic(rows)
    params, sigma = _fit(phase, scenario, start, rows, names, statistic)
    fitted = dataclasses.replace(start, **params)
    in_sample = np.abs(predict(phase, scenario, fitted, rows) / rows["time_s"].to_numpy(float) - 1.0)
    # k-fold over configurations (or over rows when a phase has one configuration)
    groups = keys if len(configs) > 1 else pd.Series(np.arange(len(rows)).astype(str), index=rows.index)
    uniq = sorted(set(groups))
    k = min(folds, len(uniq))
    rng = np.random.default_rng(0)
    order = rng.permutation(len(uniq))
    measured = rows["time_s"].to_numpy(float)
    held_pred = np.zeros(len(rows))
    for f in range(k):
        held = {uniq[i] for i in order[f::k]}
        test = groups.isin(held).to_numpy()
        p_fold, _ = _fit(phase, scenario, start, rows[~test], names, statistic)
        held_pred[test] = predict(phase, scenario, dataclasses.replace(start, **p_fold), rows[test])
    # a bench point is a configuration, measured as the median (sustained load: mean) of its repeats (one noisy
    # repeat does not make a point); a phase benchmarked in one configuration has only repeats, each then a point
    points = pd.DataFrame({"group": groups.to_numpy(), "measured": measured, "predicted": held_pred})
    per_point = points.groupby("group").agg(measured=("measured", statistic), predicted=("predicted", "first"))
    point_err = np.abs(per_point["predicted"].to_numpy() / per_point["measured"].to_numpy() - 1.0)
    repeat_err = np.abs(held_pred / measured - 1.0)
    held_out = {
        "method": f"kfold-{k} over {'configurations' if len(configs) > 1 else 'repeats'}",
        "point": f"{statistic} of repeats" + (" (sustained load)" if statistic == "mean" else ""),
        "mape": float(point_err.mean()),
        "max_abs_pct_error": float(point_err.max()),
        "num_points": int(len(per_point)),
        "num_repeats": int(len(rows)),
        "repeat_mape": float(repeat_err.mean()),
    }
    return FitResult(
        phase,
        params,
        sigma,
        _range(phase, rows),
        held_out,
        float(in_sample.mean()),
        _trust(phase, rows, names, held_out),
    )


def _trust(phase: str, rows: pd.DataFrame, names: tuple[str, ...], held_out: dict[str, Any]) -> tuple[str, ...]:
    """Why a phase's table is too thin or noisy to trust (module docstring); empty when it is not."""
    out = []
    keys = _config_key(phase, rows)
    n_configs, repeats = keys.nunique(), rows.groupby(keys)["time_s"]
    if n_configs > 1 and n_configs < 2 * len(names):
        out.append(
            f"phase {phase}: {n_configs} configurations for {len(names)} coefficients; benchmark at least "
            f"{2 * len(names)} ({', '.join(CONFIG_COLUMNS[phase])}) to trust the fit"
        )
    if int(repeats.count().min()) < 3:
        out.append(f"phase {phase}: a configuration has fewer than 3 repeats; rerun the bench with --repeats 5")
    # the standard error of a configuration's median: 1.2533 sigma / sqrt(n), sigma = IQR / 1.349
    spread = ((repeats.quantile(0.75) - repeats.quantile(0.25)) / repeats.median()).median()
    se = float(0.929 * spread / np.sqrt(repeats.count().median()))
    if se > NOISY_MEDIAN:
        out.append(
            f"phase {phase}: repeats spread {spread:.0%} (median interquartile range / median), so each "
            f"configuration's median is uncertain by about {se:.0%}; the machine was busy or the bench too short: "
            "rerun it on a quiet machine or with more repeats"
        )
    if held_out.get("point", "").startswith("mean"):
        out.append(
            f"phase {phase}: measured under a sustained load (other processes above "
            f"{HIGH_OTHER_CPU:.0%} of the machine in most repeats), so each configuration is the mean of its "
            "repeats: the fit predicts this machine under that load, not the machine alone"
        )
    if held_out["mape"] > TRUSTED_MAPE:
        out.append(
            f"phase {phase}: held-out MAPE {held_out['mape']:.0%} is above {TRUSTED_MAPE:.0%}; predictions from this "
            "phase's fit are uncertain by about that much"
        )
    return tuple(out)


def _range(phase: str, rows: pd.DataFrame) -> dict[str, tuple[float, float]]:
    if phase == Phase.ROLLOUT:
        c = rows["concurrency"].astype(float)
        ctx_lo = c * rows["prompt_tokens"].astype(float)
        ctx_hi = c * (rows["prompt_tokens"] + rows["response_tokens"]).astype(float)
        return {"batch": (float(c.min()), float(c.max())), "context_tokens": (float(ctx_lo.min()), float(ctx_hi.max()))}
    if phase in (Phase.TRAIN_ACTOR, Phase.OLD_LOGPROB):
        return {"tokens_per_gpu": (float(rows["tokens"].min()), float(rows["tokens"].max()))}
    return {}


def fit_profile(
    table: pd.DataFrame, model: dict[str, Any] | str, gpu: str | None = None, command: str = ""
) -> tuple[Profile, list[FitResult]]:
    """Fit every phase present in the table; return the profile and the per-phase results."""
    prov = provenance(table)
    gpu = gpu or guess_gpu(str(table["device"].iloc[0]))
    roll = table[table["phase"] == Phase.ROLLOUT.value]
    max_batch = int(roll["concurrency"].max()) if len(roll) else 1
    max_ctx = int((roll["prompt_tokens"] + roll["response_tokens"]).max()) if len(roll) else 16
    scn = base_scenario(model, gpu, max_batch, max_ctx)
    # the optimizer's costs first (rlsim-real bench optimizer): the train fit then holds them fixed, so its per-step
    # overhead does not absorb the optimizer, and they join the train phase's parameters
    optimizer, _ = fit_optimizer(table, scn)
    scn = dataclasses.replace(scn, costs=dataclasses.replace(scn.costs, **optimizer))
    results = []
    for phase in FIT_PARAMS:
        rows = table[table["phase"] == phase]
        if len(rows):
            results.append(fit_phase(phase, scn, rows.reset_index(drop=True)))
    if not results:
        raise CalibrateError("the tables hold no rollout, train_actor, old_logprob or weight_sync rows")
    full_prov = {k: prov.get(k) for k in PROVENANCE_KEYS}
    full_prov.update(
        device=str(table["device"].iloc[0]),
        gpu_catalog_entry=gpu,
        model=scn.model.name,
        date=full_prov.get("date") or _dt.date.today().isoformat(),
        command=command or prov.get("command"),
    )
    threads = bench_threads(table)
    if threads:
        full_prov["bench_torch_threads"] = threads  # fit and validate compare the runs' with these
    full_prov["bench_load"] = load_summary(table.to_dict("records"))  # fit --runs compares the runs' with it
    phases = {}
    for r in results:
        params = dict(r.parameters)
        if r.phase == Phase.ROLLOUT:
            params["rollout_overhead_s"] = FIXED["rollout_overhead_s"]
            params["rollout_s_per_sample"] = FIXED["rollout_s_per_sample"]
        if r.phase == Phase.WEIGHT_SYNC:
            params["sleep_wake_overhead_s"] = FIXED["sleep_wake_overhead_s"]
        if r.phase == Phase.TRAIN_ACTOR:
            params.update(optimizer)
        phases[r.phase] = PhaseFit("roofline", params, r.uncertainty, r.fitted_range, r.held_out)
    return Profile(provenance=full_prov, phases=phases), results
