"""Padded micro-batches: how many tokens the linear layers of a training or log-prob pass run on when the framework
pads its micro-batches (``training.pad_micro_batches``) instead of packing them.

OpenRLHF without ``--ds.packing_samples`` strips each sample's right padding and batches a micro-batch's samples by
right-padding them to its longest (OpenRLHF/OpenRLHF@v0.11.0:openrlhf/trainer/ppo_utils/experience.py:199-214,
``make_experience_batch`` with ``zero_pad_sequences``; ``remove_padding_in_sequences`` below it), then runs the
model on the padded batch with its attention mask (openrlhf/models/actor.py:240-243). A micro-batch of k sequences
costs k x its longest prompt + response in the linear layers and the logits; attention runs on the real lengths
(flash attention unpads). rlsim prices the expected longest of k draws of the workload's prompt + response lengths
(seeded draws: the same scenario gives the same answer) against their mean, and scales the step's real tokens by
that ratio, so drifting lengths scale with it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlsim.schema import Scenario, Workload

_DRAWS = 4000  # micro-batches drawn for the expectation


def padded_micro_batch_ratio(scenario: Scenario, forward_only: bool) -> float:
    """E[k x the longest of k sequences] / E[the k sequences' tokens] for the pass's micro-batch size k
    (``logprob_micro_batch_size`` for a log-prob pass); 1 without ``training.pad_micro_batches`` or with k = 1."""
    tr = scenario.training
    if not tr.pad_micro_batches:
        return 1.0
    k = (tr.logprob_micro_batch_size or tr.micro_batch_size) if forward_only else tr.micro_batch_size
    return 1.0 if k <= 1 else _ratio(scenario.workload, k)


@functools.lru_cache(maxsize=256)
def _ratio(w: Workload, k: int) -> float:
    # here, not at the top: it loads numpy (start-up time)
    import numpy as np

    from rlsim.workload.lengths import sample_lengths

    rng = np.random.default_rng(0)
    n = k * _DRAWS
    lengths = sample_lengths(w.prompt_length, n, rng, 1, w.max_prompt_tokens) + sample_lengths(
        w.response_length, n, rng, 1, w.max_response_tokens
    )
    batches = lengths.reshape(_DRAWS, k)
    return float(k * batches.max(axis=1).mean() / batches.sum(axis=1).mean())
