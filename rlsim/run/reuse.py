"""What pipeline runs can share without changing a bit of their results: sampled lengths and equal rollouts.

rlsim.plan's screen runs thousands of short pipelines, and within a plan those of one workload draw the same lengths
and, on one engine and as many rollout GPUs, roll them out alike under other schedules, trainers or pool splits
(docs/design.md, "Sweeps and plans"). A :class:`Reuse` handed to rlsim.run.pipeline.run_pipeline
(or to a rlsim.run.timeline.Timelines) answers those from what an earlier run computed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from rlsim.engine.rollout import RolloutMemo
from rlsim.schema.sections import Workload
from rlsim.workload.lengths import sample_step

KEPT_DRAWS = 32  # steps' sampled lengths a Reuse keeps (a plan's screen runs draw the same few steps a workload)


class Reuse:
    """What pipeline runs share (rlsim.plan's screen: a worker's runs for one plan, whose configurations of a
    workload draw the same lengths and, on one engine and as many GPUs, roll them out alike): a step's sampled
    lengths by the generator's state before the draw and the workload (then the generator is set to the state
    after it), and rollouts by their inputs (rlsim.engine.rollout.RolloutMemo). A run gives the same bits with or
    without it. Kept lengths are read-only: a run never writes them."""

    def __init__(self) -> None:
        self.rollouts = RolloutMemo()
        # kept draws: prompt and response lengths, and the generator's state after the draw
        self._draws: OrderedDict[tuple, tuple[np.ndarray, np.ndarray, Mapping[str, Any]]] = OrderedDict()

    def sample_step(self, w: Workload, rng: np.random.Generator, cumulative_samples: float):
        """rlsim.workload.lengths.sample_step, from the kept draws when it is one of them."""
        state = rng.bit_generator.state
        key = (w, cumulative_samples, repr(state))
        kept = self._draws.get(key)
        if kept is not None:
            self._draws.move_to_end(key)
            rng.bit_generator.state = kept[2]
            return kept[0], kept[1]
        prompts, responses = sample_step(w, rng, cumulative_samples)
        prompts.flags.writeable = responses.flags.writeable = False
        self._draws[key] = (prompts, responses, rng.bit_generator.state)
        if len(self._draws) > KEPT_DRAWS:
            self._draws.popitem(last=False)
        return prompts, responses
