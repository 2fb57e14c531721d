"""Stale-policy runs (``rlsim-real train --staleness K``): the learning side of asynchronous RL, measured.

An asynchronous trainer (AReaL, NeMo RL's async GRPO, OpenRLHF's async mode) trains on rollouts that the
generation engine produced with weights some policy versions old. What that costs in learning depends on the
loss (rlsim.learning.staleness, docs/learning.md "Staleness"), and that is what this mode measures on a real
model, with the step's phases still run one after another: the engine is always ``K`` versions behind the
trainer. Step s generates with version ``max(0, s - 1 - K)`` (version 0 is the initial policy, version i the one
after update i), so the lag is ``min(s - 1, K)``: the bound an asynchronous run's maximum staleness allows,
reached at every step. The wall time is that of a synchronous run; the systems side of overlap is rlsim's.

The losses (``--staleness-loss``):

* ``naive_ppo``: PPO's clipped ratio against the behaviour policy (the one that generated), as verl's one-step-off
  and fully-async recipes and TRL's AsyncGRPO do by default.
* ``decoupled_ppo`` (AReaL, Fu et al. 2025, arXiv 2505.24298, its decoupled PPO objective): the clipped ratio
  against the proximal policy (the trainer's weights before this step's update, whose log-probs the trainer
  recomputes), each token weighted by ``pi_prox / pi_behav``. Tokens whose weight exceeds
  ``--behav-weight-cap`` are left out of the loss, as AReaL's ``behav_imp_weight_cap`` does ("filter out the
  tokens where behav_imp_weight exceeds behav_imp_weight_cap"; AReaL's own default is no cap, and an AReaL agent
  workflow's published config sets 5, the default here).

With ``K = 0`` both reduce to the synchronous update and this module is not used.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

STALENESS_LOSSES = ("naive_ppo", "decoupled_ppo")


class StalePolicy:
    """The last ``K + 1`` policy versions and a model that holds the rollout's (the oldest of them)."""

    def __init__(self, model_dir: Path, staleness: int, policy: Any) -> None:
        # here, not at the top: it loads yaml (start-up time)
        from real.models import load_policy

        self.staleness = staleness
        self.versions: deque[dict[str, Any]] = deque(maxlen=staleness + 1)
        self.behaviour, _ = load_policy(model_dir)
        self.behaviour.eval()
        self.push(policy)

    def push(self, policy: Any) -> None:
        """Record the trainer's weights as the newest version (after each update, and once at the start)."""
        self.versions.append({k: v.detach().clone() for k, v in policy.state_dict().items()})

    def rollout_model(self) -> Any:
        """The model at the version the next rollout generates with (the oldest kept), loaded into ``behaviour``."""
        self.behaviour.load_state_dict(self.versions[0])
        return self.behaviour

    def lag(self, step: int) -> int:
        """Policy versions between step ``step``'s rollout weights and the update that trains on it."""
        return min(step - 1, self.staleness)

    def state(self) -> list[dict[str, Any]]:
        """The kept versions, oldest first (saved in the checkpoint so that a resumed run lags the same)."""
        return list(self.versions)

    def restore(self, versions: list[dict[str, Any]]) -> None:
        self.versions.clear()
        self.versions.extend(versions)
