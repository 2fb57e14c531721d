"""A learning model to plan with when the user has none yet (``rlsim plan --assume-learning paper``).

A framework config (``rlsim import-config``) says nothing about how many samples the target needs, and the plan
ranks by time-to-target. Before any run exists, the seed paper's findings (arXiv 2608.29296, docs/reference.md
section 2) are the best prior there is, so ``paper`` transplants the learning section of
scenarios/paper_grpo.yaml, anchored at the user's own batch B_u = P x G:

* reference batch B_u with the user's learning rate there (``learning.lr0`` scaled by the user's LR rule);
  Adam's trajectory-preserving rule is sqrt (``invariant_rule``), a fixed LR pays 1.67x per factor-2 mismatch
  (the paper's P 128 -> 256 untuned control);
* curves coincide over B_u / 2 ... 8 B_u (the paper: 512 ... 8192 around B0 = 1024) and need 1.73x the samples
  per doubling above (the paper's P = 2048 time);
* the metric curve's shape (initial 0.62, asymptote 0.82, exponent 1.5, target 0.77) and a samples-to-target of
  as many steps of B_u as the paper's reference run took of B0 (mid_samples 128,200 x B_u / 1024), seed spread
  0.1.

These are the numbers of scenarios/paper_grpo.yaml's learning section (tests/rlsim/test_plan.py holds them equal:
on the paper scenario itself the preset gives the scenario's samples-to-target).

So the *ranking* follows the paper (what it found about batch size and LR retuning) and the absolute
time-to-target is the paper's number of steps at the user's step time: an assumption the plan prints, to be
replaced by a fitted learning model (``rlsim-calibrate fit --runs ... --target``, then ``--profile``) once runs
exist.
"""

from __future__ import annotations

from typing import Any, TypedDict

from rlsim.errors import ScenarioError
from rlsim.schema import Scenario
from rlsim.workload.lr_rules import lr_for_batch


class Preset(TypedDict):
    """A learning preset's findings: the batch it was measured at, its penalties and its metric curve."""

    reference_batch: int  # responses per step
    untuned_lr_penalty: float
    batch_range: tuple[float, float]  # invariant range, in multiples of the reference batch
    penalty_per_doubling: float
    metric: dict[str, float]  # learning.metric at the reference batch
    target: float
    samples_spread: float


PAPER: Preset = {
    "reference_batch": 1024,  # B0 = 128 prompts x 8 (paper)
    "untuned_lr_penalty": 1.67,  # P 128 -> 256 without retuning needs 1.67x the samples (paper)
    "batch_range": (0.5, 8.0),  # invariant over 512 ... 8192 responses around B0 (paper)
    "penalty_per_doubling": 1.73,  # above the range (from the paper's 14.68 h at P = 2048; scenario assumption)
    "metric": {"initial": 0.62, "asymptote": 0.82, "mid_samples": 128_200.0, "exponent": 1.5},  # assumed shape
    "target": 0.77,  # mean@32 on AIME 2024/2025 (paper)
    "samples_spread": 0.1,  # assumed seed-to-seed spread of samples-to-target
}
PRESETS = ("paper",)


def assumed_learning(scenario: Scenario, name: str) -> tuple[dict[str, Any], str]:
    """The overrides that give ``scenario`` the named learning model, and a one-line statement of the assumption."""
    if name not in PRESETS:
        raise ScenarioError("--assume-learning", name, "is not a learning preset", f"use one of: {', '.join(PRESETS)}")
    b = scenario.workload.responses_per_step
    lr = lr_for_batch(scenario.learning, b)
    low, high = PAPER["batch_range"]
    scale = b / PAPER["reference_batch"]
    metric = dict(PAPER["metric"], mid_samples=PAPER["metric"]["mid_samples"] * scale)
    over = {
        "learning.lr0": lr,
        "learning.reference_batch": b,
        "learning.invariant_rule": "sqrt",
        "learning.untuned_lr_penalty": PAPER["untuned_lr_penalty"],
        "learning.metric": metric,
        "learning.target": PAPER["target"],
        "learning.batch_multiplier": {
            "form": "invariant",
            "batch_low": b * low,
            "batch_high": b * high,
            "penalty_per_doubling": PAPER["penalty_per_doubling"],
        },
        "learning.samples_spread": PAPER["samples_spread"],
    }
    text = (
        f"learning model assumed (--assume-learning paper): the seed paper's, anchored at your B = {b}: curves "
        f"coincide over B = {b * low:g} ... {b * high:g} with sqrt LR retuning, 1.73x samples per doubling above, "
        "1.67x per factor 2 of LR mismatch; time-to-target = the paper's number of steps at your step time. Replace "
        "it with a fitted one (rlsim-calibrate fit --runs ... --target, then --profile) once runs exist"
    )
    return over, text
