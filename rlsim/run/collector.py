"""The rollout pool of an async schedule whose rollouts are collected one prompt group at a time
(``schedule.collector: prompt_groups``): NeMo RL's asynchronous GRPO (``grpo.async_grpo``).

Traced from NVIDIA-NeMo/RL at v0.4.0, v0.5.0 and v0.6.0 (the collector is the same at the three tags; line numbers at
v0.5.0, A = nemo_rl/algorithms/async_utils.py, G = nemo_rl/algorithms/grpo.py):

* ``AsyncTrajectoryCollector`` takes the dataloader's batches of P prompts (``num_prompts_per_step``) in order and
  starts one thread per prompt group (G responses of one prompt, ``_run_prompt_group_worker``, A:451-506, :637);
  a thread holds a slot of a semaphore of ``P x max_trajectory_age_steps`` groups (A:281-287, acquired at :493)
  until its group is in the replay buffer (released at :726). A new group starts as soon as a slot frees, so the
  engines work through one step's groups and the next's without draining between them: a step does not wait for
  its own stragglers with the engines half idle, and at most P x k groups are in the engines at once.
* every group is generated for a target step: weights of version v generate for the steps v + 1 .. v + k (the
  first weights for 0 .. k; ``_calculate_target_weights``, A:294-321), the next target not yet generated
  (``_get_next_target_for_generation``, A:323-342); once every target of the current weights is generated or under
  way the collector waits for the next weights (``_should_pause_for_generation_limits``, A:355-377, :409-431). So
  batch n may start on weights of version n - 1 - k or newer, rlsim's async gate.
* the trainer takes exactly P groups whose target is its own weight version, waiting until they are all there
  (``ReplayBuffer.sample``, A:102-220; G:2103-2135).
* the refit pauses new group starts (``prepare_for_refit``, A:529-576); with the async engine and
  ``in_flight_weight_updates`` (every async performance recipe sets it, examples/configs/recipes/llm/performance/
  grpo-*-async-*off.yaml:6) the groups in flight keep generating and the weights load between engine iterations
  (the engines stall for the transfer: rlsim.run.pipeline's in-flight pause); without it the refit waits for every
  group in flight (``wait_for_pending_generations``, A:603-623): the sync waits for the rollout pool (the drain
  is priced as the batch's share of its window's tail, not a whole tail: every async performance recipe updates
  in flight).

How rlsim prices it: the engines' work is simulated in windows of :func:`window` batches, each batch's requests in
step order, a replica running at most :func:`engine_seqs` requests at once (its max_num_seqs, and its share of the
P x k groups in flight: NeMo RL sends each response to the next replica in turn, nemo_rl/models/generation/vllm/
vllm_generation.py:547-563, nemo_rl/experience/rollouts.py:786-856; rlsim's engine deals whole groups, the same
share on average); a window's makespan is spent in equal shares by its batches, so a batch pays 1 / window of one
straggler tail (the steady stream pays none). Request-level slots are an approximation: the collector frees a
group's slot only when the group's last response ends, the engines a request's slot when it ends.
"""

from __future__ import annotations

import math

from rlsim.schema import Scenario

# batches per simulated window: the collector's stream never drains in a run's steady state, a window drains once,
# so each batch carries 1 / WINDOW_BATCHES of a straggler tail (a resolution, not a fitted value; k + 1 if larger)
WINDOW_BATCHES = 16


def collects_groups(scenario: Scenario) -> bool:
    """Whether the scenario's rollouts are collected one prompt group at a time (NeMo RL's async GRPO)."""
    return scenario.schedule.mode == "async" and scenario.schedule.collector == "prompt_groups"


def window(scenario: Scenario) -> int:
    """The batches simulated together: WINDOW_BATCHES, or k + 1 where larger (rlsim.run.batches.window)."""
    return max(WINDOW_BATCHES, scenario.schedule.staleness + 1)


def in_flight_groups(scenario: Scenario) -> int:
    """The prompt groups the collector keeps in the engines at most: P x k (A:281-287; 1 if that is 0)."""
    return scenario.workload.prompts_per_step * scenario.schedule.staleness or 1


def engine_seqs(scenario: Scenario) -> int:
    """The requests a replica runs at once: its max_num_seqs, at most its share of the groups in flight."""
    if not collects_groups(scenario):
        return scenario.engine.max_num_seqs
    share = math.ceil(in_flight_groups(scenario) * scenario.workload.group_size / scenario.num_replicas)
    return max(1, min(scenario.engine.max_num_seqs, share))
