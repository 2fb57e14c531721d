"""The fields of a real run's step record that every training loop fills alike (real.train, real.fully_async):
the step's position in the run, its batch, its prompt and response tokens and the response-length histogram
calibrate's length model reads. The rest of a record (timings, load, losses) is each loop's own."""

from __future__ import annotations

from typing import Any

import numpy as np

from real.config import TrainConfig


def step_fields(cfg: TrainConfig, step: int, prompts: list, completions: list) -> dict[str, Any]:
    """``run_log_record`` arguments of step ``step``: ``prompts`` and ``completions`` are the step's token lists."""
    lengths = [len(c) for c in completions]
    return {
        "step": step,
        "cumulative_samples": step * cfg.batch,
        "prompts": cfg.prompts_per_step,
        "responses": cfg.batch,
        "prompt_tokens": int(sum(len(p) for p in prompts)),
        "response_tokens": int(sum(lengths)),
        "response_tokens_max": max(lengths),  # the hf engine's batch runs this long
        # responses of each length 0..max_new_tokens: calibrate's response-length model
        "response_length_counts": np.bincount(lengths, minlength=cfg.max_new_tokens + 1).tolist(),
        "algo": cfg.algo,
        "engine": cfg.engine,
        "group_size": cfg.group_size,
    }
