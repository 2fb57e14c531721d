"""Run overheads a planner pays beside the training steps: evaluation, checkpoint saves and start-up. They are
reported next to time-to-target (``rlsim run``, its ``--json`` summary's ``run_overheads``, the report), never added
to it: time-to-target stays the steps' own time, which the published step tables measure.

* Evaluation: every ``run.eval_every_steps`` steps, plus one before the first step (``eval_at_start``) and one
  after a last step that is not a multiple (``eval_at_end``), as the frameworks count them: verl validates when
  ``test_freq > 0`` and the step is a multiple or the last (volcengine/verl@v0.7.0:verl/trainer/ppo/ray_trainer.py:
  1562-1566) and before training by default (``val_before_train``, ray_trainer.py:1299; True in
  verl/trainer/config/ppo_trainer.yaml:178); NeMo RL at multiples of ``grpo.val_period``, at step 0 with
  ``val_at_start`` and at the last step with ``val_at_end`` (NVIDIA-NeMo/RL@v0.7.0:nemo_rl/algorithms/grpo.py:2194,
  2757-2760). One evaluation generates ``eval_prompts`` x ``eval_group_size`` responses on the run's engines,
  simulated by the engine model (rlsim.engine.rollout.simulate_rollout, the scenario's replicas, KV cache and
  scheduler rules) at the workload's lengths as they stand half-way through the run, plus the rollout's dispatch
  overhead; no training, no weight sync.
* Checkpoints: every ``run.checkpoint_every_steps`` steps (and the last step with ``checkpoint_at_end``): verl
  saves at multiples of ``save_freq`` and the last step (ray_trainer.py:1585-1587), NeMo RL at multiples of
  ``checkpointing.save_period`` and the last step (grpo.py:2872-2876). A save writes the trained policy's (and a PPO
  critic's) weights and optimizer state once, all ranks writing their shards together, at the job's storage
  bandwidth (``run.storage_bytes_per_s``): FSDP fp32 parameters and Adam's two fp32 moments, 12 bytes per
  parameter; Megatron bf16 weights plus its optimizer state (rlsim.trainer.memory.megatron_optimizer_bytes: fp32
  master and moments, 12 bytes, 10 precision-aware).
* Start-up (``run.engine_start_s`` set): the engines' start (that many seconds) plus the policy's bf16 weights read
  once from storage, plus one weight sync into the engines (verl's rollout starts from dummy weights and takes the
  trainer's, ``load_format: dummy``).

Units: seconds and bytes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rlsim.engine.rollout import simulate_rollout
from rlsim.run.costs import RooflineCostModel
from rlsim.scenario import scheduler_rules
from rlsim.trainer.memory import megatron_optimizer_bytes
from rlsim.trainer.sync import weight_sync_time
from rlsim.workload.lengths import sample_step

if TYPE_CHECKING:
    from rlsim.schema import ModelSpec, Scenario

FSDP_CHECKPOINT_BYTES_PER_PARAM = 12.0  # fp32 parameter + Adam's two fp32 moments


@dataclass(frozen=True)
class RunOverheads:
    """Seconds a run spends outside its training steps, over ``steps`` steps."""

    steps: int
    evaluations: int = 0
    eval_each_s: float = 0.0
    checkpoints: int = 0
    checkpoint_each_s: float = 0.0
    checkpoint_bytes: float = 0.0
    startup_s: float = 0.0

    @property
    def eval_s(self) -> float:
        return self.evaluations * self.eval_each_s

    @property
    def checkpoint_s(self) -> float:
        return self.checkpoints * self.checkpoint_each_s

    @property
    def total_s(self) -> float:
        return self.eval_s + self.checkpoint_s + self.startup_s

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out.update(eval_s=self.eval_s, checkpoint_s=self.checkpoint_s, total_s=self.total_s)
        return out


def occurrences(every: int | None, steps: int, at_start: bool = False, at_end: bool = False) -> int:
    """How often a periodic action runs over ``steps`` steps: at each multiple of ``every``, once before the first
    step with ``at_start``, and once after the last step with ``at_end`` unless that step was a multiple."""
    n = steps // every if every else 0
    if at_end and steps > 0 and (not every or steps % every):
        n += 1
    return n + (1 if at_start else 0)


def configured(scenario: Scenario) -> bool:
    r = scenario.run
    return bool(
        r.eval_every_steps or r.eval_at_start or r.eval_at_end or r.checkpoint_every_steps or r.checkpoint_at_end
    ) or (r.engine_start_s is not None)


def checkpoint_bytes(scenario: Scenario) -> float:
    """Bytes one save writes: the policy's (and a PPO critic's) weights and optimizer state."""
    tr = scenario.training

    def per_model(model: ModelSpec) -> float:
        if tr.backend == "fsdp":
            return model.num_params * FSDP_CHECKPOINT_BYTES_PER_PARAM
        return model.num_params * (model.dtype_bytes + megatron_optimizer_bytes(tr))

    total = per_model(scenario.model)
    if scenario.algorithm.name == "ppo":
        total += per_model(scenario.critic)
    return total


def eval_seconds(scenario: Scenario, steps: int) -> float:
    """One evaluation's generation on the scenario's engines (see the module docstring)."""
    r, w = scenario.run, scenario.workload
    prompts = r.eval_prompts or w.prompts_per_step
    evalw = dataclasses.replace(w, prompts_per_step=prompts, group_size=r.eval_group_size)
    half_way = steps / 2.0 * w.responses_per_step  # cumulative samples half-way: lengths that drift are taken there
    p, resp = sample_step(evalw, np.random.default_rng(r.seed), half_way)
    if scenario.engine.static_batching:  # every response runs (and is padded) to the call's longest
        resp = np.full_like(resp, resp.max())
    cost = RooflineCostModel.from_scenario(scenario)
    res = simulate_rollout(
        p,
        resp,
        r.eval_group_size,
        scenario.num_replicas,
        scenario.engine.max_num_seqs,
        scenario.kv_capacity_tokens,
        cost.decode_coefficients(),
        cost.prefill_coefficients(),
        cost.rollout_overhead_s(len(resp)),
        scheduler_rules(scenario),
    )
    return float(res.rollout_s)


def run_overheads(scenario: Scenario, steps: int) -> RunOverheads | None:
    """The overheads of ``steps`` steps of ``scenario`` (the systems side's: a profile's costs folded in); None when
    the scenario sets none of them."""
    if not configured(scenario):
        return None
    r = scenario.run
    evaluations = occurrences(r.eval_every_steps, steps, r.eval_at_start, r.eval_at_end)
    checkpoints = occurrences(r.checkpoint_every_steps, steps, False, r.checkpoint_at_end)
    nbytes = checkpoint_bytes(scenario) if checkpoints else 0.0
    startup = 0.0
    if r.engine_start_s is not None:
        startup = (
            r.engine_start_s + scenario.model.weight_bytes / r.storage_bytes_per_s + weight_sync_time(scenario).total_s
        )
    return RunOverheads(
        steps=steps,
        evaluations=evaluations,
        eval_each_s=eval_seconds(scenario, steps) if evaluations else 0.0,
        checkpoints=checkpoints,
        checkpoint_each_s=nbytes / r.storage_bytes_per_s,
        checkpoint_bytes=nbytes,
        startup_s=startup,
    )
