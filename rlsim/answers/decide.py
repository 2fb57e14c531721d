"""The decision rule: does a candidate configuration reach the target sooner than a baseline?

docs/reference.md section 1: with T = N* / q, candidate c beats baseline b iff q_c / q_b > N*_c / N*_b, i.e. its
throughput gain exceeds its samples-to-target penalty. ``speedup`` = (q_c / q_b) / (N*_c / N*_b) = T_b / T_c in
the steady state; the simulated times-to-target (which include pipeline fill and whole steps) are reported too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rlsim.answers.answer import Answer, hours
from rlsim.answers.sensitivity import Candidate, analyse
from rlsim.answers.sensitivity import lines as sensitivity_lines
from rlsim.learning.model import LearningModelError
from rlsim.run.profile import Profile
from rlsim.run.result import SimResult
from rlsim.scenario import parse_scalar, split_assignment
from rlsim.schema import Scenario


def parse_side(text: str, flag: str) -> dict[str, Any]:
    """``"workload.prompts_per_step=256,learning.lr_rule=none"`` -> overrides: ``key=value`` assignments
    (rlsim.scenario.overrides) separated by commas."""
    out: dict[str, Any] = {}
    for part in text.split(","):
        key, value = split_assignment(
            part, flag, "workload.prompts_per_step=256,learning.lr_rule=none", "key=value[,key=value]"
        )
        out[key] = parse_scalar(value)
    return out


@dataclass(frozen=True)
class Decision:
    baseline: dict[str, Any]  # summaries
    candidate: dict[str, Any]
    baseline_overrides: dict[str, Any]
    candidate_overrides: dict[str, Any]
    throughput_ratio: float  # q_c / q_b
    samples_ratio: float  # N*_c / N*_b
    speedup: float  # throughput_ratio / samples_ratio
    # the learning side of the verdict: break-even, the winner under each preset (rlsim.answers.sensitivity)
    sensitivity: dict[str, Any] | None = None

    @property
    def verdict(self) -> bool:
        return self.throughput_ratio > self.samples_ratio

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": "yes" if self.verdict else "no",
            "throughput_ratio": self.throughput_ratio,
            "samples_ratio": self.samples_ratio,
            "speedup": self.speedup,
            "baseline": {"overrides": self.baseline_overrides, **_side(self.baseline)},
            "candidate": {"overrides": self.candidate_overrides, **_side(self.candidate)},
            "learning_sensitivity": self.sensitivity,
        }

    def text(self) -> str:
        """The verdict first, in a sentence, then each side's answer (rlsim.answers.answer) and the rule's three
        ratios."""
        ab, ac = Answer.of(self.baseline), Answer.of(self.candidate)
        if self.verdict:  # the winner's band with the learning presets' spread (rlsim.answers.sensitivity)
            ac = ac.with_learning(self.sensitivity)
        else:
            ab = ab.with_learning(self.sensitivity)
        if self.verdict:
            head = (
                f"verdict: yes - the candidate reaches the target in {hours(ac.time_to_target_s)} against "
                f"{hours(ab.time_to_target_s)} ({self.speedup:.2f}x sooner): its throughput gain "
                f"{self.throughput_ratio:.2f}x exceeds its samples penalty {self.samples_ratio:.2f}x"
            )
        else:
            head = (
                f"verdict: no - the candidate needs {hours(ac.time_to_target_s)} against the baseline's "
                f"{hours(ab.time_to_target_s)}: its throughput gain {self.throughput_ratio:.2f}x does not exceed its "
                f"samples penalty {self.samples_ratio:.2f}x"
            )
        lines = [
            head,
            f"baseline  {_fmt(self.baseline_overrides)}: {ab.sentence()}",
            f"candidate {_fmt(self.candidate_overrides)}: {ac.sentence()}",
            f"throughput gain q_c/q_b   = {self.throughput_ratio:.3f}",
            f"samples penalty N*_c/N*_b = {self.samples_ratio:.3f}",
            f"speedup (gain / penalty)  = {self.speedup:.3f}",
        ]
        if self.sensitivity is not None:
            lines += sensitivity_lines(self.sensitivity)
        return "\n".join(lines)


def _side(summary: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "samples_per_s",
        "step_time_s",
        "generation_tokens_per_s",
        "samples_to_target",
        "time_to_target_s",
        "time_to_target_band_s",
        "gpu_hours_to_target",
        "time_to_target_extrapolated",
        "samples_multiplier",
        "responses_per_step",
        "gpu",
        "num_gpus",
    )
    return {k: summary.get(k) for k in keys}


def _fmt(overrides: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in overrides.items()) or "(scenario as is)"


def decide(
    scenario: Scenario,
    baseline: dict[str, Any],
    candidate: dict[str, Any],
    profile: Profile | None = None,
    with_band: bool = True,
    explicit: Iterable[str] = (),
) -> Decision:
    """Simulate both sides to their target and apply the decision rule. ``explicit``: dotted keys the user set on
    ``scenario``; they and each side's keys win over a profile's learning section (rlsim.run.simulation.simulate)."""
    # here, not at the top: it loads simpy (start-up time)
    from rlsim.run.simulation import configure, planned_steps, predict
    from rlsim.run.timeline import Timelines

    if scenario.learning.metric is None and not (profile is not None and profile.learning_overrides()):
        raise LearningModelError("rlsim decide needs a learning model: set learning.metric and learning.target")
    sides = [
        configure(scenario, profile, {**side, "run.until_target": True}, explicit) for side in (baseline, candidate)
    ]
    # sides that differ only in their learning model share a timeline: the longer run first, the other its start
    timelines = Timelines()
    results: dict[int, SimResult] = {}
    for i in sorted(range(2), key=lambda i: -planned_steps(sides[i])):
        results[i] = predict(sides[i], profile, with_band=with_band, timelines=timelines)
    sb, sc = results[0].summary(), results[1].summary()
    q_ratio = sc["samples_per_s"] / sb["samples_per_s"]
    n_ratio = sc["samples_to_target"] / sb["samples_to_target"]
    sides = [_candidate(name, over, s) for name, over, s in (("baseline", baseline, sb), ("candidate", candidate, sc))]
    winner = 1 if sides[1].time_to_target_s < sides[0].time_to_target_s else 0
    base = configure(scenario, profile, {}, explicit)
    sens = analyse(base, sides, winner, profile=profile).as_dict()
    return Decision(sb, sc, dict(baseline), dict(candidate), q_ratio, n_ratio, q_ratio / n_ratio, sens)


def _candidate(name: str, overrides: dict[str, Any], summary: dict[str, Any]) -> Candidate:
    band = summary.get("time_to_target_band_s")
    return Candidate(
        name,
        dict(overrides),
        summary["samples_per_s"],
        summary["time_to_target_s"],
        summary["samples_to_target"],
        band_s=tuple(band) if band else None,
    )
