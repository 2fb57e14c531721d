"""What each step of a run generates: its prompt and response lengths, drawn in step order from the run's
generator, and the generation calls its rollout simulates (under a streaming async schedule, the window of k + 1
batches the engines hold at once; docs/design.md, "Streaming async"). rlsim.run.pipeline launches the calls and
gives each step its share (:func:`per_batch`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from rlsim.engine.rollout import RolloutResult
from rlsim.run import collector
from rlsim.schema import Scenario
from rlsim.workload.lengths import progress, sample_step

if TYPE_CHECKING:
    from rlsim.run.reuse import Reuse


def window(scenario: Scenario) -> int:
    """The batches simulated together, in one window: k + 1 under a streaming async schedule, else 1. Fully-async
    (rlsim.run.fully_async): the sync_every batches generated between two weight syncs, whose stragglers the sync
    waits for; with partial rollouts (no such wait) the k + 1 batches the rollout pool holds at once."""
    sched = scenario.schedule
    if collector.collects_groups(scenario):  # NeMo RL's prompt-group collector: a longer window (rlsim.run.collector)
        return collector.window(scenario)
    if sched.mode == "fully-async":
        return sched.staleness + 1 if sched.partial_rollout and sched.staleness_threshold > 0 else sched.sync_every
    k = sched.staleness
    return k + 1 if k > 0 and scenario.schedule.streaming else 1


def per_batch(
    res: RolloutResult, batches: int, prompts: np.ndarray, responses: np.ndarray, overhead_s: float
) -> RolloutResult:
    """One batch's share of a streaming window of ``batches`` batches: its tokens, an equal share of the time (the
    replicas' makespans too, so that the recomputes' share of the engine's seconds is the window's)."""
    return dataclasses.replace(  # the decode batch and KV peak: the window's
        res,
        rollout_s=res.rollout_s / batches + overhead_s,
        replica_makespan_s=tuple(m / batches for m in res.replica_makespan_s),
        prompt_tokens=int(np.add.reduce(prompts)),  # (ndarray.sum's reduction, without its Python wrapper)
        response_tokens=int(np.add.reduce(responses)),
        num_preemptions=round(res.num_preemptions / batches),
        num_iterations=round(res.num_iterations / batches),
        recomputed_tokens=round(res.recomputed_tokens / batches),
        recompute_s=res.recompute_s / batches,
    )


def _round(
    scenario: Scenario, rng: np.random.Generator, cumulative_samples: float, reuse: Reuse | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """One generation call's prompt and response lengths (responses padded to the call's longest under static
    batching): a step's P x G, or under dynamic sampling the round's batch_multiplier x P prompts, G each; drawn
    again or found in ``reuse``."""
    w = scenario.workload
    ds = scenario.algorithm.dynamic_sampling
    if ds is not None and ds.prompts_per_call(w.prompts_per_step) != w.prompts_per_step:
        w = dataclasses.replace(w, prompts_per_step=ds.prompts_per_call(w.prompts_per_step))
    draw = reuse.sample_step if reuse is not None else sample_step
    prompts, responses = draw(w, rng, cumulative_samples)
    if scenario.engine.static_batching:  # every response runs (and is padded) to the call's longest
        responses = np.full_like(responses, responses.max())
    return prompts, responses


def greedy_call(
    scenario: Scenario, prompts: np.ndarray, rng: np.random.Generator, cumulative_samples: float
) -> tuple[np.ndarray, np.ndarray]:
    """ReMax's baseline call (algorithm.greedy_baseline; verl@v0.7.0 verl/trainer/ppo/ray_trainer.py:1368-1400: the
    step's prompt batch generated again with do_sample false, before the batch is repeated n times): each trained
    prompt once, its one response drawn from the step's length distribution (a greedy response is one sample of
    the policy's lengths). Its own call, one request per group (rlsim.run.pipeline gives it group size 1)."""
    w = scenario.workload
    one = dataclasses.replace(w, group_size=1)
    _, responses = sample_step(one, rng, cumulative_samples)
    if scenario.engine.static_batching:
        responses = np.full_like(responses, responses.max())
    return prompts[:: w.group_size].copy(), responses


def step_requests(
    scenario: Scenario, rng: np.random.Generator, reuse: Reuse | None = None
) -> Iterator[tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]], int, list]]:
    """Steps 1, 2, ... of a run as its kernel calls see them, drawn in step order from ``rng`` (the run's
    generator): each step's prompt and response lengths of the samples it trains on, the generation calls its
    rollout simulates one after another (each a list entry), how many batches a call holds, and the step's own
    calls (what it generated, for dynamic sampling's scores). Under dynamic sampling in rounds (synchronous only) a
    step is ``rounds`` calls, each scored and filtered before the next, and under streaming replacement one call of
    ceil(P / keep_rate) groups; it trains on the first P x G samples generated (the kept groups' lengths are drawn
    like any others'). ReMax (algorithm.greedy_baseline, synchronous only) adds :func:`greedy_call` last.

    Streaming, the engines hold k + 1 batches at once and start a request as soon as a slot frees, so a batch
    shares the straggler tail with the batches in flight beside it. The steps are taken k + 1 at a time: steps
    1 .. k + 1 are one window, simulated once with their batches' requests oldest first, k + 2 .. 2k + 2 the next,
    and so on; each batch's generation time is its window's makespan over k + 1 (:func:`per_batch`). A
    step after the first of its window has no call of its own (it shares the window's). A run that ends inside a
    window still simulates the window's later batches (drawn, never trained on): every step's batch is generated
    beside k others, as in a run's steady state, and a run's first steps are those of any longer run
    (rlsim.run.timeline.prefix_exact)."""
    width = window(scenario)
    batch = scenario.workload.responses_per_step
    ds = scenario.algorithm.dynamic_sampling
    rounds = ds.rounds() if ds is not None else 1
    n = 0

    def draw() -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
        nonlocal n
        n += 1
        done = progress(scenario.workload, scenario.learning, n - 1)
        calls = [_round(scenario, rng, done, reuse) for _ in range(rounds)]
        prompts, responses = (np.concatenate(x)[:batch] for x in zip(*calls))
        if scenario.algorithm.greedy_baseline:  # ReMax: one greedy response per trained prompt, a call after the rest
            calls.append(greedy_call(scenario, prompts, rng, done))
        return prompts, responses, calls

    while width == 1:
        prompts, responses, calls = draw()
        yield prompts, responses, calls, 1, calls
    while True:
        held = [draw() for _ in range(width)]
        # the engines hold every generated sample of a batch, filtered replacements too (one call: its arrays)
        both = tuple(np.concatenate([calls[0][i] for _, _, calls in held]) for i in (0, 1))
        for i, (prompts, responses, calls) in enumerate(held):
            yield prompts, responses, [both] if i == 0 else [], width, calls
