"""Learning presets: named, sourced learning models that an answer can be re-ranked under.

A preset says how one knob (the batch B = P x G, responses per prompt G at a fixed B, the learning-rate rule, the
staleness of an asynchronous run) moves the metric curve, with the values a published study measured. It is
anchored at the scenario's own curve: at the scenario's reference batch (and G, LR, staleness 0) the preset
leaves samples-to-target as the scenario has it, and replaces only how the knob moves the curve. ``decide``,
``sweep`` and ``plan`` rank under every preset that applies (:func:`applicable`) to show how much an answer rests
on the learning side.

This module holds the registry and its interface; each preset's values and source are in its entry. The values
were read in the sources' text (research notes for issue 59): ScaleRL's Table 1, AReaL's Table 3, M2PO's Table 1;
none is read off a figure. Each preset writes a ``learning.family`` table (rlsim.learning.family), normalized at
the reference knob value, so at the scenario's reference batch, G and staleness 0 it changes nothing.

Left out, with the reason: IsoCompute (arXiv 2603.12151) publishes no curve per responses-per-prompt value (it fits
compute-optimal settings, not reward curves: its findings are an ordering, reward varying 9.2% over n against 1.9%
over prompts per batch on its Easy set, 3.8% against 2.2% on Hard), so no table can be drawn from it without
inventing one; the critical batch of LLM policy optimization (HiLD @ ICML 2026) publishes no measured value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from rlsim.errors import ScenarioError
from rlsim.schema import Scenario

Knob = Literal["batch", "group", "lr", "staleness"]


@dataclass(frozen=True)
class LearningPreset:
    """One named learning model: what it moves, where its values come from, and how it applies to a scenario."""

    name: str
    knob: Knob
    source: str  # the study and the table or figure the values come from
    summary: str  # one line: what the preset says
    # learning.* overrides (dotted keys, as ``--set`` takes them) anchored at the scenario's own curve
    build: Callable[[Scenario], dict[str, Any]]
    # whether the preset says anything about this scenario (a staleness preset only for an asynchronous run)
    applies: Callable[[Scenario], bool]
    seed_assumption: bool = False  # the seed paper's assumption (the default learning model's family member)


def _seed_batch(scenario: Scenario) -> dict[str, Any]:
    """The seed paper's invariance, as the scenario's learning section already states it: no overrides."""
    return {}


def _curve(scenario: Scenario) -> bool:
    return scenario.learning.metric is not None and scenario.learning.target is not None


def _pass_rate(scenario: Scenario, largest_drop: float) -> bool:
    """A rising metric in [0, 1] (a pass rate, as ScaleRL's A is) whose gain exceeds the largest drop of the
    asymptote the preset applies (so that the ceiling stays above R0)."""
    m = scenario.learning.metric
    return _curve(scenario) and 0.0 <= m.initial < m.asymptote <= 1.0 and m.asymptote - m.initial > largest_drop  # type: ignore[union-attr]


def _shares(scenario: Scenario, shifts: tuple[float, ...]) -> list[float]:
    """ScaleRL's asymptote shifts dA (pass rate) as shares of the scenario's own gain kept: 1 + dA / (A - R0). ScaleRL
    prints no R0, so the shift is carried in the metric's units, not as a share of ScaleRL's gain."""
    m = scenario.learning.metric
    assert m is not None  # applies() checked it
    return [1.0 + d / (m.asymptote - m.initial) for d in shifts]


# ScaleRL, Table 1 (App. A.13 of v1, A.14 of the later version): C_mid (GB200 GPU-hours), B and A of the large runs;
# the reference run: 768 completions a step (48 prompts x 16), C_mid 2542, B 1.92, A 0.610
SCALERL = "ScaleRL (Khatri et al., arXiv 2510.13786) Table 1 (App. A.13 v1 / A.14)"


def _scalerl_batch(scenario: Scenario) -> dict[str, Any]:
    """Batches 512 / 768 / 2048 completions: C_mid 2818 / 2542 / 10909, B 1.77 / 1.92 / 1.70, A 0.605 / 0.610 /
    0.645."""
    return {
        "learning.batch_multiplier": {"form": "invariant"},  # the table says how the batch moves the curve
        "learning.ceiling_batches": None,
        "learning.ceilings": None,
        "learning.ceiling_errors": None,
        "learning.family.batch": {
            "values": [512 / 768, 1.0, 2048 / 768],
            "mid_samples": [2818 / 2542, 1.0, 10909 / 2542],
            "exponent": [1.77 / 1.92, 1.0, 1.70 / 1.92],
            "gain": _shares(scenario, (0.605 - 0.610, 0.0, 0.645 - 0.610)),
            "source": SCALERL + ": batch 512 / 768 / 2048",
        },
    }


def _scalerl_group(scenario: Scenario) -> dict[str, Any]:
    """G 8 / 16 / 24 / 32 at 768 completions: C_mid 2542 / 2542 / 3054 / 2936, B 2.44 / 1.92 / 2.22 / 2.07, A 0.585 /
    0.610 / 0.590 / 0.595."""
    out: dict[str, Any] = {
        "learning.family.group": {
            "values": [0.5, 1.0, 1.5, 2.0],
            "mid_samples": [1.0, 1.0, 3054 / 2542, 2936 / 2542],
            "exponent": [2.44 / 1.92, 1.0, 2.22 / 1.92, 2.07 / 1.92],
            "gain": _shares(scenario, (0.585 - 0.610, 0.0, 0.590 - 0.610, 0.595 - 0.610)),
            "source": SCALERL + ": 8 / 16 / 24 / 32 generations per prompt at 768 completions",
        }
    }
    if scenario.learning.reference_group_size is None:
        out["learning.reference_group_size"] = scenario.workload.group_size
    return out


# AReaL (arXiv 2505.24298; inclusionAI/AReaL blog/AReaL_v0_3.md Table 3): R1-Distill-Qwen-1.5B, 1,000 PPO steps,
# AIME24; base 29.3 (Table 2), staleness 0 42.0. Share of the gain kept at k: (score - 29.3) / (42.0 - 29.3)
AREAL = "AReaL (arXiv 2505.24298) blog/AReaL_v0_3.md Table 3, AIME24 at 1,000 PPO steps, base 29.3 (Table 2)"


def _areal(score: tuple[float, ...]) -> list[float]:
    return [(x - 29.3) / (42.0 - 29.3) for x in score]


def _staleness(table: dict[str, Any]) -> Callable[[Scenario], dict[str, Any]]:
    """A staleness preset's overrides: the table in place of the scenario's staleness form."""

    def build(scenario: Scenario) -> dict[str, Any]:
        return {
            "learning.staleness_loss": "stretch",
            "learning.staleness_penalty_per_step": 0.0,
            "learning.staleness_free_steps": 0.0,
            "learning.staleness_form": None,
            "learning.family.staleness": table,
        }

    return build


def _async(scenario: Scenario) -> bool:
    return _curve(scenario) and scenario.schedule.mode in ("async", "fully-async")


NAIVE_PPO = {  # k = 4's 23.3 left out: a dip the later points recover from (share -0.47)
    "values": [0, 1, 2, 8, 16],
    "gain": _areal((42.0, 41.8, 40.0, 35.7, 35.8)),
    "source": AREAL + ", naive PPO: 42.0 / 41.8 / 40.0 / 35.7 / 35.8 at k 0 / 1 / 2 / 8 / 16 (23.3 at k 4 left out)",
}

REGISTRY: dict[str, LearningPreset] = {
    "seed": LearningPreset(
        name="seed",
        knob="batch",
        source="arXiv 2608.29296 (the seed paper): curves in samples coincide over a bounded batch range with the "
        "LR retuned (sqrt for Adam)",
        summary="the scenario's own learning model (the seed paper's invariance where it is the default)",
        build=_seed_batch,
        applies=_curve,
        seed_assumption=True,
    ),
    "scalerl_batch": LearningPreset(
        name="scalerl_batch",
        knob="batch",
        source=SCALERL + ": C_mid 2818 / 2542 / 10909 GPU-h, B 1.77 / 1.92 / 1.70, A 0.605 / 0.610 / 0.645 at "
        "512 / 768 / 2048 completions a step (48 x 16 the reference), one constant LR (5e-7). C_mid is in GB200 "
        "GPU-hours, carried to samples as printed (the paper gives no conversion: its GPU-hours per completion "
        "grow as responses lengthen, which puts 2048's midpoint ratio in samples between 1.27 and 4.29); A's shift "
        "is in pass rate (ScaleRL prints no R0), within its 0.02 error margin at 512",
        summary="larger batches slower early (S_mid x4.29 at 2.67x the batch, b x0.885) and higher at the end "
        "(A +0.035); held at the table's ends beyond 0.67-2.67x the reference batch",
        build=_scalerl_batch,
        applies=lambda scenario: _pass_rate(scenario, 0.005),
    ),
    "scalerl_group": LearningPreset(
        name="scalerl_group",
        knob="group",
        source=SCALERL + ": at 768 completions a step, 8 / 16 / 24 / 32 generations per prompt: C_mid 2542 / "
        "2542 / 3054 / 2936 GPU-h (8's equal to the reference's as printed), B 2.44 / 1.92 / 2.22 / 2.07, A 0.585 / "
        "0.610 / 0.590 / 0.595; the text calls the curves essentially unchanged (A within its 0.02 margin but at 8)",
        summary="responses per prompt at a fixed batch: G/2 steeper (b x1.27) with a lower ceiling (A -0.025), "
        "1.5-2x G slower (S_mid x1.16-1.20); replaces the informative-share term",
        build=_scalerl_group,
        applies=lambda scenario: (
            _pass_rate(scenario, 0.025)
            and (scenario.learning.reference_group_size is not None or "workload.group_size" in scenario.sweep.grid)
        ),
    ),
    "naive_ppo": LearningPreset(
        name="naive_ppo",
        knob="staleness",
        source=NAIVE_PPO["source"] + ": shares of the gain kept 1 / 0.984 / 0.843 / 0.504 / 0.512",
        summary="importance ratio against the behaviour policy: 16% of the gain lost at k = 2, half by k = 8",
        build=_staleness(NAIVE_PPO),
        applies=_async,
    ),
    "truncated_is": LearningPreset(
        name="truncated_is",
        knob="staleness",
        source="no per-staleness table of its own: the truncated importance weight is taken against the behaviour "
        "policy as naive PPO's is, so AReaL's naive-PPO shares (" + AREAL + "); TIS's own source (Yao et al., "
        "fengyao.notion.site/off-policy-rl) fixes the engine-trainer mismatch at zero lag, and VCPO (arXiv "
        "2602.17616) Fig. 1 shows a sequence-level TIS run collapsing at k = 2 (long-context tool use: not modelled)",
        summary="as naive PPO (no staleness study of its own); one published run collapses at k = 2",
        build=_staleness({**NAIVE_PPO, "source": "truncated IS as naive PPO: " + NAIVE_PPO["source"]}),
        applies=_async,
    ),
    "decoupled_ppo": LearningPreset(
        name="decoupled_ppo",
        knob="staleness",
        source=AREAL + ", decoupled PPO: 42.0 / 42.1 / 41.8 / 42.2 / 41.0 / 38.7 at k 0 / 1 / 2 / 4 / 8 / 16 (shares "
        "1 / 1.008 / 0.984 / 1.016 / 0.921 / 0.740, the two above 1 read as 1; 36.9 unbounded, 0.598, beyond the "
        "table); M2PO (arXiv 2510.01161) Fig. 6 shows it breaking down at k = 256 (no number in the text)",
        summary="AReaL's proximal-policy objective: nothing lost to k = 4, 8% at 8, 26% at 16",
        build=_staleness(
            {
                "values": [0, 1, 2, 4, 8, 16],
                # 42.1 and 42.2 (shares 1.008, 1.016) read as 1: within the table's 0.3-point spread, and AReaL's
                # text says moderate staleness (k <= 4) has minimal impact; staleness does not raise the ceiling
                "gain": [min(1.0, x) for x in _areal((42.0, 42.1, 41.8, 42.2, 41.0, 38.7))],
                "source": AREAL + ", decoupled PPO",
            }
        ),
        applies=_async,
    ),
    "m2po": LearningPreset(
        name="m2po",
        knob="staleness",
        source="M2PO (arXiv 2510.01161) Table 1: at staleness 256 the 8-benchmark average over GRPO's on-policy one "
        "is 0.990-1.109 on six models (1.7B-32B), so the gain is kept (share 1 at k 0 and 256); VCPO (arXiv "
        "2602.17616: to 128 steps off-policy) and OAPL (arXiv 2602.19362: lags over 400) report the same. M2PO's "
        "start-up lag (its first 256 updates train on the base model's data) has no number and is left out",
        summary="robust off-policy losses (M2PO, VCPO, OAPL): staleness free up to 256 steps",
        build=_staleness({"values": [0, 256], "gain": [1.0, 1.0], "source": "M2PO (arXiv 2510.01161) Table 1"}),
        applies=_async,
    ),
}


def applicable(scenario: Scenario) -> list[LearningPreset]:
    """The presets that say something about ``scenario``, in registry order."""
    return [p for p in REGISTRY.values() if p.applies(scenario)]


def preset_overrides(scenario: Scenario, name: str) -> dict[str, Any]:
    """The learning.* overrides that put ``scenario`` under the named preset."""
    if name not in REGISTRY:
        raise ScenarioError("learning preset", name, "is not a learning preset", f"use one of: {', '.join(REGISTRY)}")
    return REGISTRY[name].build(scenario)
