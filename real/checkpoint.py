"""Checkpoints and resuming a real run: the run directory's ``config.json``, ``checkpoint/`` and the run log.

A checkpoint is one ``torch.save`` of a dict (step, wall seconds, last eval metric, policy, optimizer, critic and
its optimizer, the data stream's and torch's RNG states) in ``checkpoint/state.pt``, written to
``checkpoint.tmp`` and swapped in by renames, so a kill at any point leaves a complete checkpoint (``checkpoint``
or, between the two renames, ``checkpoint.old``). Resuming drops the log lines after the checkpoint's step (and
a torn last line), so the loop recomputes them and the log holds every step once.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any

from real.config import TrainConfig
from real.errors import RealError
from rlsim.io.files import atomic_write_text, make_output_dir


def prepare_run_dir(cfg: TrainConfig, run_dir: Path) -> None:
    """Create ``run_dir`` with ``config.json``, or check that the run it holds has the same configuration."""
    make_output_dir(run_dir, "run directory (new, or a run to resume)")
    config_path = run_dir / "config.json"
    resolved = dataclasses.asdict(cfg)
    if config_path.exists():
        try:
            previous = json.loads(config_path.read_text())
        except json.JSONDecodeError:
            raise RealError(f"{config_path} is not valid JSON; remove it to start the run afresh") from None
        # a field added since the run was made ran at its default (e.g. staleness 0: synchronous)
        defaults = dataclasses.asdict(type(cfg)())
        previous = {**{k: v for k, v in defaults.items() if k not in previous}, **previous}
        diff = sorted(k for k in resolved if previous.get(k) != resolved[k])
        if diff == ["max_steps"] and resolved["max_steps"] > previous["max_steps"]:
            # a longer run: max_steps only bounds the loop, so steps 1..old are what this run would have made
            atomic_write_text(config_path, json.dumps(resolved, indent=2, sort_keys=True) + "\n")
        elif diff:
            more = " (--max-steps may only grow: a run is extended, never cut)" if "max_steps" in diff else ""
            raise RealError(
                f"{run_dir} holds a run with another configuration ({', '.join(diff)} differ{more}); "
                "use a new -o directory or the same options to resume"
            )
    else:
        atomic_write_text(config_path, json.dumps(resolved, indent=2, sort_keys=True) + "\n")


def save_checkpoint(run_dir: Path, state: dict[str, Any]) -> None:
    """Write ``state`` as the run's checkpoint, replacing the previous one atomically."""
    # here, not at the top: it loads torch (start-up time)
    import torch

    tmp = run_dir / "checkpoint.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    torch.save(state, tmp / "state.pt")
    final = run_dir / "checkpoint"
    old = run_dir / "checkpoint.old"
    if final.exists():
        if old.exists():
            shutil.rmtree(old)
        final.rename(old)
    tmp.rename(final)
    if old.exists():
        shutil.rmtree(old)


def load_checkpoint(run_dir: Path) -> dict[str, Any] | None:
    """The run's last checkpoint, or None when it has none."""
    # here, not at the top: it loads torch (start-up time)
    import torch

    for name in ("checkpoint", "checkpoint.old"):  # .old survives a kill between the two renames
        path = run_dir / name / "state.pt"
        if path.is_file():
            return torch.load(path, weights_only=False)
    return None


def truncate_log(path: Path, last_step: int) -> None:
    """Keep the log's complete lines of steps <= last_step (drops a torn last line and steps to be redone)."""
    if not path.exists():
        return
    kept = []
    for line in path.read_text().splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        try:
            if json.loads(line)["step"] <= last_step:
                kept.append(line)
        except (json.JSONDecodeError, KeyError):
            break
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(kept))
    os.replace(tmp, path)
