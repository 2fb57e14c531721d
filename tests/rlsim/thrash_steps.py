"""Recorded thrashing steps (issue 32, must-show 1): one replica's requests of a step's kernel call (a streaming window
of two steps' batches in the paper and dense async scenarios), as the pipeline hands them to the engine, of the
paper scenario at P = 2048 .. 16384 and of the two dense-8B scenarios pushed into thrash; and the engine run on one
of them with the fast thrash model or the exact one. Used by tests/rlsim/test_fast_thrash.py and
scripts/fast_thrash.py (its table: docs/results/fast_thrash.md)."""

from __future__ import annotations

import dataclasses
from unittest import mock

import numpy as np

import rlsim
from rlsim.engine import replica, rollout
from tests.conftest import SCENARIOS

CASES = {
    "paper_p2048": ("paper_grpo.yaml", {"workload.prompts_per_step": 2048}),
    "paper_p4096": ("paper_grpo.yaml", {"workload.prompts_per_step": 4096}),
    "paper_p8192": ("paper_grpo.yaml", {"workload.prompts_per_step": 8192}),
    "paper_p16384": ("paper_grpo.yaml", {"workload.prompts_per_step": 16384}),
    "dense_async": (
        "dense8b_h100_async.yaml",
        {"engine.max_num_seqs": 1024, "workload.prompts_per_step": 1024, "engine.gpu_memory_utilization": 0.5},
    ),
    "dense_colocated": (
        "dense8b_h100_colocated.yaml",
        {"engine.max_num_seqs": 1024, "workload.prompts_per_step": 512, "engine.gpu_memory_utilization": 0.5},
    ),
}


def recorded_step(name: str) -> dict:
    """Replica 0's requests of the last engine call of a 3-step run of case ``name``, with the engine's arguments."""
    file, overrides = CASES[name]
    calls = []
    launch = rollout.launch_replicas

    def spy(prompt, response, bounds, *args, **kwargs):
        calls.append((prompt, response, bounds, args, kwargs))
        return launch(prompt, response, bounds, *args, **kwargs)

    with mock.patch.object(rollout, "launch_replicas", spy):
        rlsim.simulate(rlsim.load_scenario(SCENARIOS / file, {"run.steps": 3, "run.until_target": False, **overrides}))
    prompt, response, bounds, args, kwargs = calls[-1]
    group, n_groups, _ = kwargs["numbered"]
    lo, hi = int(bounds[0]), int(bounds[1])
    return {
        "prompt": prompt[lo:hi].copy(),
        "response": response[lo:hi].copy(),
        "group": group[lo:hi].copy(),
        "n_groups": int(n_groups[0]),
        "args": args,
        "rules": args[4],
    }


def run(step: dict, fast: bool) -> tuple[np.ndarray, np.ndarray]:
    """The recorded step on one replica: its finish times and stats, with the fast thrash model or the exact one."""
    max_num_seqs, kv_capacity_tokens, decode, prefill = step["args"][:4]
    rules = dataclasses.replace(step["rules"], fast_thrash=fast)
    n = step["prompt"].size
    return replica.simulate_replicas(
        step["prompt"],
        step["response"],
        np.array([0, n]),
        max_num_seqs,
        kv_capacity_tokens,
        decode,
        prefill,
        rules,
        numbered=(step["group"], np.array([step["n_groups"]]), 1),
    )
