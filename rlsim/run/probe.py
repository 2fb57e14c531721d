"""What a response costs this scenario's engine to simulate, measured before the run (issue 58, "a long run says
so first").

rlsim.host.footprint's time per response (0.09 us a step) is the kernel's cost where the engine runs its batches
without much preemption; where the KV cache cannot hold the running batch the engine preempts and recomputes many
times per response and the kernel does that work too: 3.3 million preemptions a step at P 128 x G 2,000 on the
paper's scenario took 3.5 us a response (2026-12-06, 2-core VM), 39x the estimate, and ran past a minute with
nothing said. The probe simulates one replica's first ``PROBE_RESPONSES`` responses of a step (the scenario's
lengths, engine, cache and scheduler; a group larger than the probe cut to it), times it, and says whether it
preempted. rlsim.run.simulation.footprint then prices every response at the larger of the two rates, and adds the
max_num_seqs search that ``rlsim run`` makes after a run that preempts (rlsim.answers.thrash). Only a run whose
plain estimate reaches ``PROBE_ABOVE_S`` is probed (a few milliseconds to a tenth of a second): a run under it
would need a rate 200x the plain one to pass a minute.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from rlsim.engine.rollout import simulate_rollout
from rlsim.host.footprint import SEARCH_STEPS
from rlsim.run.costs import RooflineCostModel
from rlsim.scenario import scheduler_rules
from rlsim.schema import Scenario
from rlsim.workload.lengths import sample_step

PROBE_RESPONSES = 16_384  # enough that the probe's fixed cost (a thread pool call) is under 0.1 us a response
PROBE_ABOVE_S = 0.3


@dataclasses.dataclass(frozen=True)
class Probe:
    seconds_per_response: float
    preempts: bool


def probe(scenario: Scenario) -> Probe:
    """One replica's first responses of a step simulated and timed (module docstring)."""
    w = scenario.workload
    group = min(w.group_size, PROBE_RESPONSES)
    prompts = max(1, min(w.prompts_per_step, PROBE_RESPONSES // group))
    one = dataclasses.replace(w, prompts_per_step=prompts, group_size=group)
    prompt, response = sample_step(one, np.random.default_rng(scenario.run.seed), 0.0)
    if scenario.engine.static_batching:
        response = np.full_like(response, response.max())
    cost = RooflineCostModel.from_scenario(scenario)
    start = time.perf_counter()
    res = simulate_rollout(
        prompt,
        response,
        group,
        1,
        scenario.engine.max_num_seqs,
        scenario.kv_capacity_tokens,
        cost.decode_coefficients(),
        cost.prefill_coefficients(),
        0.0,
        scheduler_rules(scenario),
    )
    return Probe((time.perf_counter() - start) / len(response), res.num_preemptions > 0)


def search_steps(scenario: Scenario) -> int:
    """Steps of rlsim.answers.thrash's max_num_seqs search after a run that preempts: the configured value and a
    bisection down from it (at most 1 + ceil(log2 max_num_seqs) runs), each ``SEARCH_STEPS`` steps (after an async
    pipeline's fill), at most the run's."""
    runs = 1 + math.ceil(math.log2(max(1, scenario.engine.max_num_seqs)))
    return runs * min(scenario.run.steps, SEARCH_STEPS + 2 * scenario.schedule.staleness)
