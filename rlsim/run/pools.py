"""The GPU pools of a run and what happens on them: the tracks (a pool, or the CPU), the spans of phases on a
track, and each step's busy fraction of each pool (utilization)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rlsim.io.records import RunLogRecord
from rlsim.phases import Phase
from rlsim.schema import Scenario

ROLLOUT_POOL = "rollout_pool"
TRAIN_POOL = "train_pool"
REWARD_POOL = "reward_pool"
CRITIC_POOL = "critic_pool"
REFERENCE_POOL = "reference_pool"
ALL_GPUS = "gpus"
CPU = "cpu"


@dataclass(frozen=True)
class Span:
    """One phase of one step on one track (a GPU pool or the CPU), in simulated seconds."""

    phase: Phase
    step: int
    track: str
    start_s: float
    end_s: float


def pool_gpus(scenario: Scenario) -> dict[str, int]:
    """GPUs in each track that holds GPUs."""
    hw = scenario.hardware
    own = {REWARD_POOL: scenario.reward.num_gpus} if scenario.reward.num_gpus else {}
    if scenario.algorithm.critic_gpus:
        own[CRITIC_POOL] = scenario.algorithm.critic_gpus
    if scenario.algorithm.reference_gpus:
        own[REFERENCE_POOL] = scenario.algorithm.reference_gpus
    if hw.placement == "colocated":
        return {ALL_GPUS: hw.num_gpus, **own}
    return {ROLLOUT_POOL: hw.num_rollout_gpus, TRAIN_POOL: hw.num_train_gpus, **own}


def _busy_before(spans: list[Span], t: np.ndarray) -> np.ndarray:
    """Busy seconds of one track before each time in ``t`` (spans on a track never overlap: capacity 1)."""
    if not spans:
        return np.zeros_like(t)
    starts = np.array([sp.start_s for sp in spans])
    ends = np.array([sp.end_s for sp in spans])
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    cum = np.concatenate([[0.0], np.cumsum(ends - starts)])
    k = np.searchsorted(starts, t, side="right")  # spans started at or before t
    overhang = np.where(k > 0, np.maximum(0.0, ends[np.maximum(k - 1, 0)] - t), 0.0)
    return cum[k] - overhang


def add_utilization(scenario: Scenario, records: list[RunLogRecord], spans: list[Span]) -> None:
    """Busy fraction of each GPU pool within each step's window (previous step's end, this step's end], into each
    record's ``utilization``."""
    ends = np.array([rec["wall_s"] for rec in records])
    bounds = np.concatenate([[0.0], ends])
    width = np.diff(bounds)
    fractions = {}
    for track in pool_gpus(scenario):
        busy = _busy_before([sp for sp in spans if sp.track == track], bounds)
        fractions[track] = np.divide(np.diff(busy), width, out=np.zeros_like(width), where=width > 0)
    for i, rec in enumerate(records):
        rec["utilization"] = {track: float(f[i]) for track, f in fractions.items()}
