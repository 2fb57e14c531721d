"""Files the calibrate command tests write: a profile with one fitted phase (and optionally a learning section),
and a run log whose records carry the schema's required keys around the fields a test cares about."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlsim.run.profile import PROVENANCE_KEYS, PhaseFit, Profile


def write_profile(path: Path, learning: dict[str, Any] | None = None) -> Path:
    """A profile as `rlsim-calibrate fit` leaves it (one roofline phase), with ``learning`` when given."""
    phases = {"train_actor": PhaseFit("roofline", {"train_compute_efficiency": 0.3, "train_step_overhead_s": 0.02})}
    path.write_text(Profile(dict.fromkeys(PROVENANCE_KEYS, "x"), phases, learning=learning).dumps())
    return path


def write_runlog(path: Path, records: list[dict[str, Any]], run_id: str) -> str:
    """``records`` with the run-log schema's other required keys filled in (sizes from each record's batch), one
    JSON line each; returns the path as a string (as the commands take it)."""
    lines = []
    for rec in records:
        b = rec["responses"]
        schema = {"schema_version": 1, "run_id": run_id, "prompts": b // 8, "prompt_tokens": 10 * b}
        schema |= {"response_tokens": 100 * b, "lr": 1e-4, "reward_mean": 0.5, "timing_s": {"rollout": 1.0}}
        lines.append(json.dumps(schema | rec) + "\n")
    path.write_text("".join(lines))
    return str(path)
