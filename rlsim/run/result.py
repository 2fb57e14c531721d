"""SimResult: what a simulation returns, and the summary, tables and timeline derived from it.

Metric definitions (all seconds or per second):

* ``step_time_s``: mean step time over the steady-state steps k+1..N-k (k = max staleness: the first k steps
  fill the pipeline, the last k drain it; with k = 0 every step counts), where a step time is the gap between
  consecutive weight-sync ends.
* ``samples_per_s``: responses per step / step_time_s.
* ``generation_tokens_per_s``: response tokens / rollout seconds over the steady-state steps (the engines'
  throughput while generating, all replicas together).
* ``tokens_per_s_per_gpu``: prompt + response tokens per step / step_time_s / all GPUs (verl's perf/throughput).
* ``phase_time_s``: mean seconds per step in each phase (phases overlap under async schedules).
* ``utilization``: mean busy fraction of each GPU pool.
* ``samples_to_target``, ``time_to_target_s``, ``time_to_target_band_s``, ``gpu_hours_to_target``: see
  rlsim.learning.target (present when the scenario has a learning model; otherwise null). ``samples_to_target`` is the
  median over training seeds.
* ``probability_reaching_target``: the share of seeds that reach the target within ``budget_samples``
  (``run.max_steps`` x B); ``samples_to_target_if_reached`` / ``time_to_target_if_reached_s``: the median over
  those seeds (rlsim.learning.model.reach_within), what a set of real runs with that budget reports.
* ``length_source``, ``length_note``: where the response lengths come from (workload.length_source);
  ``length_assumption``: with assumed lengths and the band, the step time and time-to-target at the assumed mean and
  at the range's low and high ends (rlsim.run.length_range); otherwise null.
* ``run_overheads``: evaluation, checkpoint and start-up seconds over the run's steps (to the target where there is
  one), beside time-to-target and not in it (rlsim.run.overheads); null when the scenario sets none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rlsim import __version__
from rlsim.io.records import RunLogRecord
from rlsim.io.runlog import to_frame
from rlsim.learning.model import reach_within, stall_at
from rlsim.learning.target import TimeToTarget, time_at_samples
from rlsim.phases import TIMED_PHASES
from rlsim.run.pools import CPU, Span, pool_gpus
from rlsim.run.systems_error import SystemsError
from rlsim.schema import Scenario

if TYPE_CHECKING:  # pandas is imported by the tables that need it (rlsim.io.runlog.to_frame), not by `rlsim run --json`
    import pandas as pd

    from rlsim.run.overheads import RunOverheads


@dataclass
class SimResult:
    scenario: Scenario
    records: list[RunLogRecord]
    spans: list[Span]
    profile_info: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    time_to_target: TimeToTarget | None = None
    band_s: tuple[float, float] | None = None
    systems_error: SystemsError | None = None  # the cost model's measured error here (rlsim.run.systems_error)
    # a sweep's screened run (rlsim.run.simulation.predict, screen_steps) past its last simulated step: per step to
    # the target (and the async drain), the step, cumulative samples, wall-clock at the steady step time, metric
    continued: list[dict[str, Any]] = field(default_factory=list)
    # assumed lengths (workload.length_source): the answer at the range's ends (rlsim.run.length_range)
    length_range: dict[str, Any] | None = None
    # an assumed keep rate (algorithm.dynamic_sampling.keep_rate_source): the answer at its range's ends
    # (rlsim.run.keep_range); in the summary as keep_assumption only when set
    keep_range: dict[str, Any] | None = None
    # evaluation, checkpoints and start-up beside the time-to-target, not in it (rlsim.run.overheads)
    overheads: RunOverheads | None = None

    @property
    def steps(self) -> pd.DataFrame:
        """Per-step table in the run-log schema, nested keys flattened (``timing_s/rollout``)."""
        return to_frame(self.records)

    @property
    def steady_records(self) -> list[RunLogRecord]:
        """Steps k+1..N-k: the first k fill the pipeline and the last k drain it (no rollout overlaps them)."""
        k = self.scenario.schedule.staleness
        return self.records[k : len(self.records) - k] if len(self.records) > 2 * k else self.records

    @property
    def gpu_hours_to_target(self) -> float | None:
        """Every GPU of the scenario for the time-to-target, in hours (None without one)."""
        t = self.time_to_target
        return t.time_to_target_s * self.scenario.total_gpus / 3600.0 if t is not None else None

    @property
    def steady_step_time_s(self) -> float:
        return float(np.mean([r["step_time_s"] for r in self.steady_records]))

    def summary(self) -> dict[str, Any]:
        s = self.scenario
        steady = self.steady_records
        step_times = np.array([r["step_time_s"] for r in steady])
        p10, p90 = np.percentile(step_times, [10, 90])  # (one call: the same values as two)
        step_time = self.steady_step_time_s
        batch = s.workload.responses_per_step
        rollout_s = sum(r["timing_s"]["rollout"] for r in steady)
        resp_tokens = sum(_counted(r["response_tokens"]) for r in steady)
        all_tokens = sum(_counted(r["prompt_tokens"]) + _counted(r["response_tokens"]) for r in steady)
        kept = batch / s.generated_per_step
        pools = pool_gpus(s)
        return {
            "rlsim_version": __version__,
            "scenario": s.name,
            "scenario_hash": s.digest(),
            "seed": s.run.seed,
            "steps": len(self.records),
            "steady_state_steps": len(steady),
            "prompts_per_step": s.workload.prompts_per_step,
            "group_size": s.workload.group_size,
            "responses_per_step": batch,
            "schedule": s.schedule.mode,
            "max_staleness": s.schedule.staleness,
            "gpu": s.hardware.gpu.name,
            "num_gpus": s.total_gpus,
            "model": s.model.name,
            "step_time_s": step_time,
            "step_time_p10_s": float(p10),
            "step_time_p90_s": float(p90),
            "samples_per_s": batch / step_time,
            "generation_tokens_per_s": resp_tokens / rollout_s if rollout_s > 0 else 0.0,
            # trained tokens (dynamic sampling generates more than it trains: the rounds' share of them)
            "tokens_per_s_per_gpu": all_tokens * kept / len(steady) / step_time / s.total_gpus,
            "mean_response_tokens": resp_tokens / len(steady) / s.generated_per_step,
            "phase_time_s": {p.value: float(np.mean([r["timing_s"][p.value] for r in steady])) for p in TIMED_PHASES},
            "utilization": {t: float(np.mean([r["utilization"][t] for r in steady])) for t in pools},
            "gpus_per_pool": pools,
            "kv_capacity_tokens_per_replica": s.kv_capacity_tokens,
            "max_num_seqs": s.engine.max_num_seqs,
            "replicas": s.num_replicas,
            "mean_decode_batch": float(np.mean([r["mean_decode_batch"] for r in steady])),
            "preemptions_per_step": float(np.mean([r["num_preemptions"] for r in steady])),
            "thrash": thrash_summary(steady, s.generated_per_step, s.engine.thrash_model),
            "wall_s": self.records[-1]["wall_s"],
            "profile": self.profile_info,
            "systems_error": self.systems_error.as_dict() if self.systems_error is not None else None,
            "warnings": list(self.warnings),
            "length_source": s.workload.length_source,
            "length_note": s.workload.length_note,
            "length_assumption": self.length_range,
            **({"keep_assumption": self.keep_range} if self.keep_range is not None else {}),
            "run_overheads": self.overheads.as_dict() if self.overheads is not None else None,
            **self._target_summary(),
        }

    def _target_summary(self) -> dict[str, Any]:
        t = self.time_to_target
        if t is None:
            return {"time_to_target_s": None, "samples_to_target": None}
        out = t.as_dict()
        out["target"] = self.scenario.learning.target
        out["gpu_hours_to_target"] = self.gpu_hours_to_target
        out["time_to_target_band_s"] = list(self.band_s) if self.band_s is not None else None
        # seeds against the run's budget (run.max_steps steps): how many reach the target, and those that do
        batch = self.scenario.workload.responses_per_step
        reach = reach_within(
            t.samples_to_target,
            self.scenario.learning.samples_spread,
            self.scenario.run.max_steps * batch,
            stall_at(self.scenario.learning, batch),
        )
        out["probability_reaching_target"] = reach.probability
        out["budget_samples"] = reach.budget_samples
        out["samples_to_target_if_reached"] = reach.samples_if_reached
        out["time_to_target_if_reached_s"] = time_at_samples(
            self.records, batch, reach.samples_if_reached, self.steady_step_time_s
        )[0]
        return out

    def chrome_trace(self) -> dict[str, Any]:
        """The timeline as Chrome trace JSON (open in https://ui.perfetto.dev or chrome://tracing)."""
        tracks = list(pool_gpus(self.scenario)) + [CPU]
        pid = {t: i + 1 for i, t in enumerate(tracks)}
        gpus = pool_gpus(self.scenario)
        events: list[dict[str, Any]] = []
        for t in tracks:
            label = f"{t} ({gpus[t]} GPUs)" if t in gpus else "cpu (reward)"
            events.append({"name": "process_name", "ph": "M", "pid": pid[t], "tid": 0, "args": {"name": label}})
        for sp in self.spans:
            events.append(
                {
                    "name": sp.phase.value,
                    "cat": sp.phase.value,
                    "ph": "X",
                    "pid": pid[sp.track],
                    "tid": 0,
                    "ts": round(sp.start_s * 1e6, 3),
                    "dur": round((sp.end_s - sp.start_s) * 1e6, 3),
                    "args": {"step": sp.step},
                }
            )
        return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"scenario_hash": self.scenario.digest()}}

    def summary_json(self) -> str:
        return json.dumps(self.summary(), indent=2, sort_keys=True)


LENGTH_COLUMNS = (  # a sweep's and a plan's row: the answer at assumed lengths' low and high ends (None otherwise)
    "step_time_at_low_length_s",
    "step_time_at_high_length_s",
    "time_to_target_at_low_length_s",
    "time_to_target_at_high_length_s",
)


def length_columns(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A row's length columns from a run's summary: ``length_source`` and :data:`LENGTH_COLUMNS`, each None where
    the lengths are not assumed or were not priced over their range (rlsim.run.length_range)."""
    a = summary.get("length_assumption") or {}
    keys = ("step_time_low_s", "step_time_high_s", "time_to_target_low_s", "time_to_target_high_s")
    return {"length_source": summary.get("length_source"), **{c: a.get(k) for c, k in zip(LENGTH_COLUMNS, keys)}}


def _counted(tokens: int | None) -> int:
    """A simulated step's token count: the pipeline counts every step's (the run-log schema allows null for logs
    that do not)."""
    assert tokens is not None
    return tokens


def thrash_summary(
    records: Sequence[Mapping[str, Any]], responses_per_step: float, model: str = "exact"
) -> dict[str, Any] | None:
    """The KV-cache thrash over ``records`` (a run's steady steps): preemptions and recomputed tokens per response
    and the recomputes' share of the engine's seconds, and the thrash model that simulated them (engine.thrash_model);
    None where no request was preempted (rlsim.answers.thrash adds what stops it)."""
    preemptions = sum(int(r.get("num_preemptions") or 0) for r in records)
    if preemptions == 0:
        return None
    responses = responses_per_step * len(records)
    shares = [float(r.get("recompute_share") or 0.0) for r in records]
    return {
        "preemptions_per_response": preemptions / responses,
        "recomputed_tokens_per_response": sum(int(r.get("recomputed_tokens") or 0) for r in records) / responses,
        "recompute_share": sum(shares) / len(shares),
        "thrash_model": model,
    }
