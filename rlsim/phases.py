"""The phase vocabulary shared by the simulator, the real runs and the importers.

A phase is one kind of work in an RL step. Names are defined once here; run logs store per-phase seconds under
``timing_s`` with these names, and every other module refers to them through :class:`Phase`.
``eval`` is measured but never counted in time-to-target.
"""

from __future__ import annotations

from enum import StrEnum


class Phase(StrEnum):
    ROLLOUT = "rollout"  # generation of the step's responses by the inference engine
    REWARD = "reward"  # scoring the responses
    OLD_LOGPROB = "old_logprob"  # forward pass of the policy that produced the rollouts
    REF_LOGPROB = "ref_logprob"  # forward pass of the frozen reference model (KL penalty)
    VALUES = "values"  # critic forward pass (PPO)
    TRAIN_ACTOR = "train_actor"  # policy forward+backward and optimizer steps
    TRAIN_CRITIC = "train_critic"  # critic forward+backward and optimizer steps (PPO)
    WEIGHT_SYNC = "weight_sync"  # moving new policy weights to the engine (plus sleep/wake when colocated)
    EVAL = "eval"  # evaluation; excluded from time-to-target


PHASES: tuple[Phase, ...] = tuple(Phase)
TIMED_PHASES: tuple[Phase, ...] = tuple(p for p in Phase if p is not Phase.EVAL)
