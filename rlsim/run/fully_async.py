"""The rollout pool of a fully-async schedule (``schedule.mode: fully-async``): verl's fully-async trainer, and the
schedules of the other frameworks that amount to it (docs/frameworks.md, "Fully-async and partial-rollout
schedules").

Traced from volcengine/verl@v0.7.0, recipe/fully_async_policy (V = that folder):

* a step is one trainer update: the trainer takes ``require_batches x ppo_mini_batch_size`` prompts from the queue
  (V/fully_async_trainer.py:110, :151) and trains on them; every ``trigger_parameter_sync_step`` updates it pushes
  its weights (V/fully_async_trainer.py:467, :484), ``schedule.sync_every`` here. rlsim.run.pipeline's trainer
  syncs on those steps only; the batches between train on the weights of the last sync.
* the rollouter dispatches prompts one by one and stops once ``staleness_samples`` reaches
  ``max_required_samples = int(required_samples x (staleness_threshold + 1) x trigger_parameter_sync_step)``
  (V/fully_async_rollouter.py:177, :454, :659); at each weight update the count restarts at the prompts dispatched
  and not yet trained on (:216). So prompt i (counted from the run's start) is dispatched only once the rollout
  pool holds the weights of step e with i <= e x P + max_required_samples (P: prompts per step): :func:`admitted`.
  A fraction of a batch may be generated ahead (``staleness_threshold`` 0.1 of 4 batches: 0.4 of the fifth).
* at a weight sync the synchronizer pauses the rollouter (V/param_sync.py:102). Without partial rollout the pause
  waits for the prompts in flight to finish (V/fully_async_rollouter.py:679), at most ``16`` per server
  (:187, ``max_concurrent_samples``): here the sync waits for the rollout pool, which :func:`rollouter` hands over
  between waves of that many prompts. With ``partial_rollout`` it cancels them (:677), clears the KV cache (:682)
  and resumes them on the new weights after the sync (:691), each resubmitted with its partial response as prompt
  (V/agent_loop/partial_single_turn_agent_loop.py:79): here the engines stall for the sync and then prefill the
  cached context again (:func:`resume_prefill_s`), and nothing waits for the stragglers.

What the engines take for a batch comes from rlsim.run.batches (the window of batches simulated together:
``sync_every`` batches between syncs, whose last stragglers each sync waits for; with partial rollouts the batches
held at once) and is spent in proportion to the prompts generated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import simpy

from rlsim.engine.iteration import prefill_s
from rlsim.engine.rollout import RolloutResult
from rlsim.phases import Phase
from rlsim.schema import Scenario, Schedule

PROMPTS_PER_SERVER = 16  # verl@v0.7.0 recipe/fully_async_policy/fully_async_rollouter.py:187


def gate_prompts(schedule: Schedule, prompts_per_step: int) -> int:
    """verl's ``max_required_samples``: the prompts the rollout pool may dispatch past the last weights it got, in
    verl's own order of operations (fully_async_rollouter.py:177)."""
    return int(prompts_per_step * (schedule.staleness_threshold + 1) * schedule.sync_every)


def admitted(version: int, step: int, prompts_per_step: int, gate: int) -> int:
    """Prompts of batch ``step`` the rollout pool may have dispatched holding the weights of step ``version``."""
    return max(0, min(prompts_per_step, version * prompts_per_step + gate - (step - 1) * prompts_per_step))


def wave_prompts(scenario: Scenario) -> int:
    """The prompts in flight at once: verl's 16 per server (one server per engine replica), at most a batch."""
    return max(1, min(scenario.workload.prompts_per_step, PROMPTS_PER_SERVER * scenario.num_replicas))


def resume_prefill_s(scenario: Scenario, prefill: Any, res: RolloutResult) -> float:
    """Resuming partial rollouts after a weight update: the KV cache was cleared, so each replica prefills its
    responses' context again, the batch's peak KV tokens on one replica, over the sequences it runs at once."""
    if not scenario.schedule.partial_rollout or res.peak_kv_tokens <= 0:
        return 0.0
    group = scenario.workload.group_size
    seqs = max(1, min(scenario.engine.max_num_seqs, wave_prompts(scenario) * group // scenario.num_replicas))
    return prefill_s(prefill, np.full(seqs, res.peak_kv_tokens / seqs))


def rollouter(
    env: simpy.Environment,
    st: Any,
    generations: Iterator[tuple[np.ndarray, np.ndarray, RolloutResult, Any]],
    make_batch: Callable[..., Any],
):
    """The rollout pool's process: batch n's prompts in waves, each as far as the gate on the pool's weights lets
    it (:func:`admitted`), waiting for the next weights when it does not; the pool is handed to a weight sync
    between waves. ``st`` is rlsim.run.pipeline's state; ``make_batch`` builds its batch record."""
    s = st.scenario
    prompts_per_step = s.workload.prompts_per_step
    gate, wave = gate_prompts(s.schedule, prompts_per_step), wave_prompts(s)
    prefill = st.cost.prefill_coefficients()
    for n in range(1, s.run.steps + 1):
        prompts, responses, res, scored = next(generations)
        done, version, engine_s = 0, None, 0.0
        while done < prompts_per_step:
            if admitted(st.engine_version, n, prompts_per_step, gate) <= done:
                yield st.version_changed
                continue
            with st.rollout_pool.request() as req:
                yield req
                limit = admitted(st.engine_version, n, prompts_per_step, gate)
                if limit <= done:  # (cannot happen: the weights only move forward)
                    continue
                version = st.engine_version if version is None else version  # the oldest weights it saw
                upto = min(limit, (done // wave + 1) * wave)
                start = env.now
                st.engine_pause_s = 0.0  # syncs that landed while the engines were idle cost them nothing
                duration = res.rollout_s * (upto - done) / prompts_per_step
                yield env.timeout(duration)
                while st.engine_pause_s > 0:  # a sync under way: the engines stall, then prefill what resumes
                    pause, st.engine_pause_s = st.engine_pause_s + resume_prefill_s(s, prefill, res), 0.0
                    yield env.timeout(pause)
                    duration += pause
                st.span(Phase.ROLLOUT, n, st.rollout_track, start, duration)
                engine_s += duration
                done = upto
        yield st.batches.put(make_batch(n, version, prompts, responses, res, engine_s, scored))
