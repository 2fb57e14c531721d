"""A real run's step timings written ALSO as an OpenRLHF-format metrics log (``rlsim-real train --openrlhf-log FILE``).

This is the project's own run (real.train) written in OpenRLHF's log format, not an OpenRLHF run: one JSON line per
step with the keys OpenRLHF v0.11.0 logs to wandb, with OpenRLHF's phase semantics, so that
``rlsim check FILE --format openrlhf`` reads it as it reads an OpenRLHF log.

What OpenRLHF times (OpenRLHF/OpenRLHF@v0.11.0):

* ``timing/generation``: ``samples_generator.generate_samples`` (trainer/ppo_trainer.py:525-529, 540); a reward
  function's reward comes back with each response there (trainer/ppo_utils/samples_generator.py:254-308), so it
  is the rollout plus the reward.
* ``timing/make_experience``: ``make_experience_batch`` (ppo_trainer.py:215-217): the actor's, reference's and
  critic's forwards (ppo_utils/experience_maker.py:114-194): old_logprob + ref_logprob + values.
* ``timing/ppo_train``: ``ppo_train`` (ppo_trainer.py:239-242), the actor's and the critic's updates:
  train_actor + train_critic.
* ``timing/broadcast``: ``broadcast_to_vllm`` (ppo_trainer.py:244-248): weight_sync.
* ``timing/step_total``: the sum of the ``timing/*`` values (ppo_trainer.py:541).
* ``rollout/reward_mean``, ``rollout/response_length_mean``, ``rollout/num_samples`` (ppo_trainer.py:412-427),
  ``actor_lr`` (trainer/ray/ppo_actor.py:376), ``critic_loss`` with a critic; every key with wandb's ``train/``
  prefix and ``train/global_step`` (utils/logging_utils.py:97-99).

Evaluation is not written (OpenRLHF logs it under ``eval/``, outside the step timers).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# OpenRLHF's timer -> the real run's phases it covers (module docstring)
TIMERS: dict[str, tuple[str, ...]] = {
    "timing/make_experience": ("old_logprob", "ref_logprob", "values"),
    "timing/ppo_train": ("train_actor", "train_critic"),
    "timing/broadcast": ("weight_sync",),
    "timing/generation": ("rollout", "reward"),
}


def openrlhf_row(rec: Mapping[str, Any]) -> dict[str, Any]:
    """One run-log record (rlsim.io.records) as the line OpenRLHF's wandb logger writes for that step."""
    timing = rec["timing_s"]
    row: dict[str, Any] = {}
    for key, phases in TIMERS.items():  # the order OpenRLHF fills them in
        row[key] = float(sum(timing.get(p, 0.0) for p in phases))
    row["timing/step_total"] = sum(v for k, v in row.items() if k.startswith("timing/"))
    row["rollout/reward_mean"] = rec["reward_mean"]
    row["rollout/response_length_mean"] = rec["response_tokens"] / rec["responses"]
    row["rollout/num_samples"] = float(rec["responses"])
    if rec.get("lr") is not None:
        row["actor_lr"] = rec["lr"]
    if rec.get("value_loss") is not None:
        row["critic_loss"] = rec["value_loss"]
    out = {f"train/{k}": v for k, v in row.items()}
    out["train/global_step"] = int(rec["step"])
    return out


def write_openrlhf_log(runlog: Path, out: Path) -> int:
    """``runlog`` (a real run's runlog.jsonl) written to ``out`` in OpenRLHF's format; returns the steps written."""
    lines = [json.loads(line) for line in runlog.read_text().splitlines() if line.strip()]
    out.write_text("".join(json.dumps(openrlhf_row(r), sort_keys=False) + "\n" for r in lines))
    return len(lines)
