"""``rlsim check``: a framework run's measured phase times against rlsim's prediction for its configuration.

The measured side is a run log (rlsim.io.records; a framework's metrics log read by rlsim.frameworks.logs): the
median over the logged steps of each phase's seconds, step 1 (warm-up: compilation, allocator, caches) left out
when there are more. The predicted side is a short simulation of the same configuration with the log's mean prompt
and response lengths (a configuration does not say how long the responses were; the log does), the median of its
steady steps. Phases a framework times as one (OpenRLHF's ``make_experience``, NeMo RL's
``policy_and_reference_logprobs``, TRL's rest of ``step_time``) are compared as their sum.

The band: a phase is out of line when measured / predicted leaves [1 / BAND, BAND] (1.5) and the gap is at least
SMALL_SHARE (5 %) of the measured step. A phase 1.5x off its prediction is well past rlsim's held-out error on
published runs (docs/results/published.md, written by scripts/accuracy.py), so the run more likely differs from its
configuration's nominal behaviour than the model does.

Explanations come from the simulation: for a flagged phase rlsim simulates the configuration again with one change
at a time that a run could have (a smaller memory split for the KV cache, responses at the length cap, another
refit path, recompute or micro-batch settings) and names those that bring the prediction near the measurement, with
what the simulation says of each (preemptions, recompute share, the refit's parts); under async, a measured step
that is the sum of its phases is an async run that did not overlap. Returns data; the CLI prints and writes.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlsim.errors import RlsimError, ScenarioError
from rlsim.phases import TIMED_PHASES, Phase
from rlsim.run.overheads import checkpoint_bytes
from rlsim.run.profile import Profile
from rlsim.run.result import SimResult
from rlsim.run.simulation import configure, predict, systems_scenario
from rlsim.run.timeline import Timelines
from rlsim.schema import Scenario
from rlsim.trainer.sync import weight_sync_time

BAND = 1.5  # measured / predicted beyond [1 / BAND, BAND]: out of line (module docstring)
SMALL_SHARE = 0.05  # a gap under this share of the measured step is not flagged, whatever its ratio
EXPLAINS = 0.6  # a what-if explains a gap when it leaves at most this share of it (in log ratio)
STEP = "step"


class CheckError(RlsimError, ValueError):
    """A log that cannot be checked (no steps, no phase timers)."""


@dataclass(frozen=True)
class Row:
    """One compared phase (or phases the framework times as one), medians in seconds per step."""

    phase: str
    phases: tuple[str, ...]
    measured_s: float
    predicted_s: float
    verdict: str = "in line"  # in line | slower | faster | small (beyond the band, under SMALL_SHARE of the step)
    explanations: tuple[str, ...] = ()

    @property
    def ratio(self) -> float:
        """measured / predicted (inf where rlsim predicts none of it)."""
        if self.predicted_s > 0:
            return self.measured_s / self.predicted_s
        return math.inf if self.measured_s > 0 else 1.0

    @property
    def out_of_line(self) -> bool:
        return self.verdict in ("slower", "faster")

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["ratio"] = self.ratio if math.isfinite(self.ratio) else None
        d["explanations"] = list(self.explanations)
        d["phases"] = list(self.phases)
        return d


@dataclass(frozen=True)
class CheckResult:
    """A log against its prediction: one row per timed phase, the step row, notes on what was read and assumed."""

    source: str
    fmt: str
    scenario: str
    steps: tuple[int, ...]  # the logged steps compared
    rows: tuple[Row, ...]
    step: Row
    band: float = BAND
    notes: tuple[str, ...] = ()
    untimed: tuple[str, ...] = ()  # predicted phases the log does not time

    @property
    def out_of_line(self) -> list[Row]:
        return [r for r in (*self.rows, self.step) if r.out_of_line]

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "format": self.fmt,
            "scenario": self.scenario,
            "steps": list(self.steps),
            "band": [1 / self.band, self.band],
            "small_share": SMALL_SHARE,
            "rows": [r.as_dict() for r in (*self.rows, self.step)],
            "out_of_line": [r.phase for r in self.out_of_line],
            "notes": list(self.notes),
            "untimed": list(self.untimed),
        }


# ---------------------------------------------------------------------------------------------------- measured


def steps_used(records: Sequence[Mapping[str, Any]], last: int | None = None) -> list[Mapping[str, Any]]:
    """The logged steps compared: all but step 1 where there are more, the last ``last`` of those if given."""
    if not records:
        raise CheckError("the log holds no training step; check the file and --format")
    used = [r for r in records if r["step"] != 1] or list(records)
    return used[-last:] if last else used


def _median(values: Iterable[float]) -> float:
    return float(statistics.median(list(values)))


def _phase_s(record: Mapping[str, Any], phases: Sequence[str]) -> float:
    return sum(float(record["timing_s"].get(p, 0.0)) for p in phases)


def _groups(measured: Sequence[Mapping[str, Any]], together: Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    """The phases compared, each alone or with those its framework times with it, in phase order, where the log
    times any of them."""
    timed = {p for r in measured for p in r["timing_s"] if p != Phase.EVAL.value}
    if not timed:
        raise CheckError(
            "the log has step times but no phase timers; log the framework's timing metrics (verl timing_s/*, "
            "OpenRLHF timing/*, NeMo RL timing/train/*, TRL profiling/*) and run rlsim check again"
        )
    out: list[tuple[str, ...]] = []
    for phase in TIMED_PHASES:
        group = next((tuple(g) for g in together if phase.value in g), (phase.value,))
        if group not in out and timed & set(group):
            out.append(group)
    return out


def length_overrides(scenario: Scenario, measured: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """Overrides that give the scenario the log's median mean prompt and response lengths, and a note each."""
    over: dict[str, Any] = {}
    notes = []
    w = scenario.workload
    for name, key, cap in (
        ("response", "response_tokens", w.max_response_tokens),
        ("prompt", "prompt_tokens", w.max_prompt_tokens),
    ):
        means = [r[key] / r["responses"] for r in measured if r.get(key) is not None and r["responses"]]
        if not means:
            notes.append(f"{name} lengths: the log has none; the configuration's assumed ones")
            continue
        mean = min(max(1.0, _median(means)), float(cap))
        dist = getattr(w, f"{name}_length")
        if dist.dist == "lognormal":
            over[f"workload.{name}_length.mean_tokens"] = mean
        else:
            over[f"workload.{name}_length"] = {"dist": "fixed", "tokens": round(mean)}
        notes.append(f"{name} lengths from the log: mean {mean:,.0f} tokens ({dist.dist})")
        if name == "response":  # the answer names where its lengths come from (workload.length_source)
            over["workload.length_source"] = "run_log"
            over["workload.length_note"] = f"the log's median mean response, {mean:,.0f} tokens"
    return over, notes


# ---------------------------------------------------------------------------------------------------- predicted


def short_run(scenario: Scenario) -> dict[str, Any]:
    """The run the prediction simulates: a few steady steps beyond an async run's fill, never to a target."""
    return {"run.steps": 6 + 2 * scenario.schedule.staleness, "run.until_target": False}


def _predicted(res: SimResult, phases: Sequence[str]) -> float:
    steady = res.steady_records or res.records
    return _median(_phase_s(r, phases) for r in steady)


def _predicted_step(res: SimResult) -> float:
    return _median(r["step_time_s"] for r in (res.steady_records or res.records))


def _verdict(measured: float, predicted: float, step_s: float, band: float) -> str:
    ratio = measured / predicted if predicted > 0 else (math.inf if measured > 0 else 1.0)
    if 1 / band <= ratio <= band:
        return "in line"
    if abs(measured - predicted) < SMALL_SHARE * step_s:
        return "small"
    return "slower" if ratio > band else "faster"


def check(
    scenario: Scenario,
    records: Sequence[Mapping[str, Any]],
    *,
    together: Sequence[Sequence[Phase]] = (),
    profile: Profile | None = None,
    last: int | None = None,
    band: float = BAND,
    source: str = "",
    fmt: str = "",
) -> tuple[CheckResult, SimResult]:
    """``records`` (a run log) against ``scenario`` simulated with the log's lengths; ``together``: the phases the
    framework times as one. Returns the comparison and the simulated run it predicted from."""
    measured = steps_used(records, last)
    groups = _groups(measured, [[p.value for p in g] for g in together])
    over, notes = length_overrides(scenario, measured)
    scn = configure(scenario, profile, {**short_run(scenario), **over})
    timelines = Timelines()
    res = predict(scn, profile, timelines=timelines)
    step_m = _median(r["step_time_s"] for r in measured)
    rows = []
    for group in groups:
        m = _median(_phase_s(r, group) for r in measured)
        p = _predicted(res, group)
        row = Row("+".join(group), group, m, p, _verdict(m, p, step_m, band))
        if row.out_of_line:
            why = (*_facts(scn, res, profile, group), *_what_ifs(scn, profile, row, timelines))
            row = dataclasses.replace(row, explanations=why)
        rows.append(row)
    step_p = _predicted_step(res)
    step = Row(STEP, (), step_m, step_p, _verdict(step_m, step_p, step_m, band))
    gap = sorted(((r.measured_s - r.predicted_s, r.phase) for r in rows), key=lambda x: -abs(x[0]))
    shares = ", ".join(f"{name} {d:+.1f} s" for d, name in gap[:3] if abs(d) >= SMALL_SHARE * step_m)
    why = ([f"the step's gap ({step_m - step_p:+.1f} s) comes from {shares}"] if shares else []) + list(
        _step_facts(scn, res, measured, groups)
    )
    step = dataclasses.replace(step, explanations=tuple(why))
    responses = _median(r["responses"] for r in measured)
    if responses != scn.workload.responses_per_step:
        notes.append(
            f"the log's steps have {responses:g} responses, the configuration {scn.workload.responses_per_step} "
            "(prompts x group size): check that the log and the config are of the same run"
        )
    notes += _checkpoint_notes(scn, measured)
    compared = {p for g in groups for p in g}
    untimed = tuple(
        f"{p.value} (predicted {_predicted(res, [p.value]):.2f} s)"
        for p in TIMED_PHASES
        if p.value not in compared and _predicted(res, [p.value]) > 0
    )
    steps = tuple(int(r["step"]) for r in measured)
    result = CheckResult(source, fmt, scn.name, steps, tuple(rows), step, band, tuple(notes), untimed)
    return result, res


# ---------------------------------------------------------------------------------------------------- explanations


def _facts(scn: Scenario, res: SimResult, profile: Profile | None, group: Sequence[str]) -> list[str]:
    """What the prediction itself says of a flagged phase: the KV cache and thrash of the rollout, the refit's
    parts, the trainer's settings."""
    out = []
    steady = res.steady_records or res.records
    if Phase.ROLLOUT.value in group:
        cap = scn.kv_capacity_tokens
        peak = max(int(r.get("peak_kv_tokens") or 0) for r in steady)
        pre = sum(int(r.get("num_preemptions") or 0) for r in steady) / len(steady) / scn.generated_per_step
        out.append(
            f"predicted KV cache peak {peak / cap:.0%} of {cap:,} tokens per replica (engine.gpu_memory_utilization "
            f"{scn.engine.gpu_memory_utilization}, max_num_seqs {scn.engine.max_num_seqs}), "
            + (f"{pre:.2f} preemptions per response" if pre else "no preemption")
        )
    if Phase.WEIGHT_SYNC.value in group:
        t = weight_sync_time(systems_scenario(scn, profile))
        ws = scn.weight_sync
        out.append(
            f"predicted refit ({scn.hardware.placement}, transfer {ws.transfer}, offload_trainer "
            f"{str(ws.offload_trainer).lower()}, engine_sleeps {str(ws.engine_sleeps).lower()}): transfer "
            f"{t.transfer_s:.2f} s, copy {t.copy_s:.2f} s, host (sleep / wake, offload) {t.host_s:.2f} s, "
            f"fixed {t.latency_s:.2f} s"
        )
    if {p.value for p in _TRAINER} & set(group):
        tr = scn.training
        out.append(
            f"predicted with training.backend {tr.backend}, micro_batch_size {tr.micro_batch_size}, "
            f"activation_recompute {tr.activation_recompute}, offload_optimizer {str(tr.offload_optimizer).lower()}"
        )
    if scn.algorithm.name == "ppo" and {Phase.VALUES.value, Phase.TRAIN_CRITIC.value} & set(group):
        critic = scn.critic_view().training
        packing = f"packed in {critic.packing_tokens or 'cap'}-token bins" if critic.sequence_packing else "unpacked"
        out.append(
            f"the critic's micro-batches: {packing}, micro_batch_size {critic.micro_batch_size}, "
            + ("padded to the caps (verl critic.model.use_remove_padding false)" if critic.pad_to_cap else "no padding")
        )
    return out


_TRAINER = (Phase.OLD_LOGPROB, Phase.REF_LOGPROB, Phase.VALUES, Phase.TRAIN_ACTOR, Phase.TRAIN_CRITIC)


def _candidates(scn: Scenario, group: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """One change at a time that a run of this configuration could have, for the phases of ``group``."""
    e, w, tr, ws = scn.engine, scn.workload, scn.training, scn.weight_sync
    out: list[tuple[str, dict[str, Any]]] = []
    if Phase.ROLLOUT.value in group:
        for u in (round(e.gpu_memory_utilization - 0.2, 2), round(e.gpu_memory_utilization - 0.4, 2)):
            if u >= 0.2:
                label = f"a smaller memory split, engine.gpu_memory_utilization={u} (less KV cache)"
                out.append((label, {"engine.gpu_memory_utilization": u}))
        cap = {"workload.response_length": {"dist": "fixed", "tokens": w.max_response_tokens}}
        out.append((f"every response at the cap, {w.max_response_tokens} tokens (a tail the mean hides)", cap))
        for m in (e.max_num_seqs * 2, max(1, e.max_num_seqs // 4)):
            out.append((f"engine.max_num_seqs={m}", {"engine.max_num_seqs": m}))
    if Phase.WEIGHT_SYNC.value in group:
        other = "broadcast" if ws.transfer == "sharded" else "sharded"
        out.append((f"refit path weight_sync.transfer={other}", {"weight_sync.transfer": other}))
        if scn.hardware.placement == "colocated":
            flip = str(not ws.offload_trainer).lower()
            out.append((f"weight_sync.offload_trainer={flip}", {"weight_sync.offload_trainer": not ws.offload_trainer}))
            flip = str(not ws.engine_sleeps).lower()
            out.append((f"weight_sync.engine_sleeps={flip}", {"weight_sync.engine_sleeps": not ws.engine_sleeps}))
    if {p.value for p in _TRAINER} & set(group):
        for r in ("none", "selective", "full"):
            if r != tr.activation_recompute:
                out.append((f"training.activation_recompute={r}", {"training.activation_recompute": r}))
        for mb in (tr.micro_batch_size * 2, tr.micro_batch_size // 2):
            if mb >= 1:
                out.append((f"training.micro_batch_size={mb}", {"training.micro_batch_size": mb}))
        if not tr.offload_optimizer:
            out.append(("training.offload_optimizer=true (CPU Adam)", {"training.offload_optimizer": True}))
    if scn.algorithm.name == "ppo" and {Phase.VALUES.value, Phase.TRAIN_CRITIC.value} & set(group):
        padded = scn.critic_view().training.pad_to_cap
        label = "=false (unpadded)" if padded else "=true (padded to the caps)"
        out.append((f"algorithm.critic_pad_to_cap{label}", {"algorithm.critic_pad_to_cap": not padded}))
    return out


def _what_if(scn: Scenario, profile: Profile | None, over: dict[str, Any], timelines: Timelines) -> SimResult | None:
    """The prediction with ``over``, thrash simulated with the fast model where the engine allows it (as a sweep
    screens); None where the change is refused (a memory check, a validation rule)."""
    for extra in ({"engine.thrash_model": "fast"}, {}):
        try:
            return predict(configure(scn, profile, {**over, **extra}), profile, timelines=timelines)
        except (ScenarioError, RlsimError):
            continue
    return None


def _what_ifs(scn: Scenario, profile: Profile | None, row: Row, timelines: Timelines) -> list[str]:
    """The changes that bring the prediction near the measurement (at most three, nearest first), each with what
    its simulation says; or which changes were tried when none does."""
    gap = abs(math.log(row.ratio)) if math.isfinite(row.ratio) else math.inf
    found: list[tuple[float, str]] = []
    tried = []
    for label, over in _candidates(scn, row.phases):
        alt = _what_if(scn, profile, over, timelines)
        if alt is None:
            continue
        tried.append(label)
        p = _predicted(alt, row.phases)
        if p <= 0:
            continue
        near = abs(math.log(row.measured_s / p))
        if near <= EXPLAINS * gap:
            text = f"{label}: predicted {p:.1f} s (ratio {row.measured_s / p:.2f})"
            thrash = alt.summary()["thrash"] if Phase.ROLLOUT.value in row.phases else None
            if thrash:
                text += (
                    f", the KV cache thrashes: {thrash['preemptions_per_response']:.2f} preemptions per response, "
                    f"recompute {thrash['recompute_share']:.0%} of engine time"
                )
            found.append((near, text))
    if found:
        return [t for _, t in sorted(found)[:3]]
    return [f"no single change rlsim tried comes near: {'; '.join(tried)}"] if tried else []


def _step_facts(
    scn: Scenario, res: SimResult, measured: Sequence[Mapping[str, Any]], groups: Sequence[Sequence[str]]
) -> tuple[str, ...]:
    """The step beyond its phases: time outside the phase timers, and an async run whose phases did not overlap."""
    phases = [p for g in groups for p in g]
    step_m = _median(r["step_time_s"] for r in measured)
    sum_m = _median(_phase_s(r, phases) for r in measured)
    out = []
    if step_m - sum_m > SMALL_SHARE * 2 * step_m:
        out.append(
            f"{step_m - sum_m:.1f} s ({(step_m - sum_m) / step_m:.0%}) of the measured step is outside the phase "
            "timers (advantages, checkpoints, data loading, logging), which rlsim does not model"
        )
    steady = res.steady_records or res.records
    step_p = _predicted_step(res)
    sum_p = _median(_phase_s(r, [p.value for p in TIMED_PHASES]) for r in steady)
    if scn.schedule.mode == "async" and step_p < 0.8 * sum_p and step_m >= 0.9 * sum_m:
        out.append(
            f"async with no overlap: the measured step ({step_m:.1f} s) is the sum of its phases ({sum_m:.1f} s), "
            f"where async overlaps them (predicted step {step_p:.1f} s of {sum_p:.1f} s of phases): check that "
            "generation runs ahead of training (the framework's async switch, max staleness, separate GPUs)"
        )
    return tuple(out)


def _checkpoint_notes(scn: Scenario, measured: Sequence[Mapping[str, Any]]) -> list[str]:
    """A save step's checkpoint write (``checkpoint_s``, taken out of the step by the importer) set beside rlsim's
    price of one save, a run overhead (rlsim.run.overheads: the checkpoint's bytes at run.storage_bytes_per_s),
    never a phase of the step."""
    saves = [(int(r["step"]), float(r["checkpoint_s"])) for r in measured if r.get("checkpoint_s") is not None]
    if not saves:
        return []
    nbytes = checkpoint_bytes(scn)
    each = nbytes / scn.run.storage_bytes_per_s
    steps = ", ".join(str(s) for s, _ in saves)
    return [
        f"checkpointing: {_median(s for _, s in saves):.2f} s measured at step(s) {steps}, a save, taken out of the "
        f"step: a run overhead (rlsim run's run.checkpoint_every_steps), not a step phase; rlsim prices one save at "
        f"{each:.2f} s ({nbytes / 1e9:.1f} GB at run.storage_bytes_per_s {scn.run.storage_bytes_per_s:.3g} B/s)"
    ]


# ---------------------------------------------------------------------------------------------------- text


def _ratio_text(ratio: float) -> str:
    return f"{ratio:.2f}" if math.isfinite(ratio) else "-"


def check_text(result: CheckResult) -> str:
    """The comparison as a table (phase | measured s | predicted s | ratio | verdict), the band, the phases out of
    line with their candidate explanations, and the notes."""
    steps = result.steps
    span = f"{steps[0]}-{steps[-1]}" if len(steps) > 1 else str(steps[0])
    lines = [
        f"{result.source} ({result.fmt}, median of {len(steps)} logged step(s), {span}) against rlsim's prediction "
        f"for {result.scenario}",
        "",
        f"{'phase':<44} {'measured s':>11} {'predicted s':>12} {'ratio':>6}  verdict",
    ]
    for r in (*result.rows, result.step):
        verdict = r.verdict.upper() if r.out_of_line else r.verdict
        lines.append(f"{r.phase:<44} {r.measured_s:>11.2f} {r.predicted_s:>12.2f} {_ratio_text(r.ratio):>6}  {verdict}")
    lines += [
        "",
        f"band: out of line beyond {1 / result.band:.2f}-{result.band:.2f}x predicted and {SMALL_SHARE:.0%} of the "
        "step (well past rlsim's held-out error on published runs: docs/results/published.md)",
    ]
    flagged = result.out_of_line
    lines.append(
        "out of line: " + ", ".join(f"{r.phase} ({_ratio_text(r.ratio)}x predicted)" for r in flagged)
        if flagged
        else "out of line: none"
    )
    for r in (*result.rows, result.step):
        if r.explanations and (r.out_of_line or r is result.step):
            lines.append(f"  {r.phase}:")
            lines += [f"    - {e}" for e in r.explanations]
    notes = list(result.notes) + ([f"not timed in the log: {', '.join(result.untimed)}"] if result.untimed else [])
    if notes:
        lines += ["notes:"] + [f"  - {n}" for n in notes]
    return "\n".join(lines)
