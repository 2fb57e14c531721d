"""The SimPy model of an RL run: one process per role, GPU pools as resources, three schedules.

Processes (thin; every duration comes from a pure cost function):

* ``rollout`` generates batch n on the rollout pool once the engine's weights are recent enough: batch n may use
  weights of version >= n - 1 - k (k = ``schedule.max_staleness``, 0 for the synchronous schedules).
* ``trainer`` takes batch n, scores it (reward, on CPU), runs the log-prob / values passes and the updates on the
  training pool, then pushes the new weights (``weight_sync``), which needs the engine idle: it holds the
  training pool and waits for the rollout pool. The engine then serves version n.

Schedules: ``sync-colocated`` (one pool of all GPUs; the engine sleeps while training, sleep/wake is paid in the
weight sync), ``sync-separate`` (two pools, k = 0), ``async`` (two pools, rollouts for steps n+1..n+k overlap the
training of step n; with ``schedule.collector: prompt_groups`` the rollout pool's process is rlsim.run.collector's),
``fully-async`` (two pools; the rollout pool's process is rlsim.run.fully_async's, and the
trainer syncs every ``schedule.sync_every`` steps). A step ends when its weight sync ends (or its update, between
syncs); its step time is the gap to the previous step's end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import simpy

from rlsim.engine.rollout import RolloutResult, free_rollouts, launch_rollouts, merge_rounds
from rlsim.errors import RlsimError
from rlsim.host import threads
from rlsim.io.records import RunLogRecord, run_log_record
from rlsim.phases import Phase
from rlsim.run import collector, fully_async
from rlsim.run.batches import per_batch, step_requests, window
from rlsim.run.costs import CostModel, RooflineCostModel
from rlsim.run.pools import (
    ALL_GPUS,
    CPU,
    CRITIC_POOL,
    REFERENCE_POOL,
    REWARD_POOL,
    ROLLOUT_POOL,
    TRAIN_POOL,
    Span,
    add_utilization,
)
from rlsim.scenario import scheduler_rules
from rlsim.schema import Scenario
from rlsim.workload.lr_rules import lr_for_batch

if TYPE_CHECKING:
    from rlsim.run.reuse import Reuse

CHUNK_REQUESTS = 1 << 16  # requests simulated in one compiled call (several steps when they are small)


@dataclass
class _Batch:
    step: int
    version: int
    prompt_tokens: np.ndarray
    response_tokens: np.ndarray
    rollout: RolloutResult
    rollout_s: float  # engine seconds of this batch, in-flight weight updates included
    scored: tuple[int, float, float] | None = None  # samples, tokens, squared tokens generated, if not the trained


@dataclass
class _State:
    env: simpy.Environment
    scenario: Scenario
    cost: CostModel
    rng: np.random.Generator
    rollout_pool: simpy.Resource
    train_pool: simpy.Resource
    rollout_track: str
    train_track: str
    batches: simpy.Store
    reward_pool: simpy.Resource | None = None  # a reward model's own GPUs (reward.num_gpus)
    engine_version: int = 0
    version_changed: simpy.Event = field(init=False)  # succeeds when the trainer's weights reach the engines
    spans: list[Span] = field(default_factory=list)
    records: list[RunLogRecord] = field(default_factory=list)
    last_end_s: float = 0.0
    engine_pause_s: float = 0.0  # in-flight weight updates not yet paid by the engines
    progress: Callable[[int], None] | None = None
    run_id: str = ""
    reuse: Reuse | None = None
    free_generation: bool = False  # every rollout takes no time and runs no engine (a lower bound: rlsim.plan)

    def __post_init__(self) -> None:
        self.version_changed = self.env.event()

    def span(self, phase: Phase, step: int, track: str, start: float, duration_s: float) -> float:
        """Record a finished phase; returns its duration as computed (not as a difference of clock readings)."""
        self.spans.append(Span(phase, step, track, start, self.env.now))
        return duration_s


def _scored(calls: list[tuple[np.ndarray, np.ndarray]]) -> tuple[int, float, float]:
    """Samples, tokens and squared tokens (prompt + response) of all of a step's generation calls."""
    seq = np.concatenate([(p + r).astype(float) for p, r in calls])
    return len(seq), float(seq.sum()), float((seq * seq).sum())


def _call_groups(s: Scenario, calls: int) -> list[int]:
    """A step's generation calls' group sizes: G, but 1 for ReMax's greedy call, the last (rlsim.run.batches)."""
    greedy = min(int(s.algorithm.greedy_baseline), calls)
    return [s.workload.group_size] * (calls - greedy) + [1] * greedy


def _generations(st: _State):
    """Each step's sampled lengths, rollout result and dispatch overhead, in step order. A rollout depends only on
    its step's lengths (and, streaming, on the batches beside it in the window), never on the simulated clock, so
    the steps are sampled in order (the one generator's draws are those of one step at a time) and simulated
    CHUNK_REQUESTS requests at a time in one compiled call (rlsim.engine.rollout.launch_rollouts): the same bits as one
    call per step, small steps fill the cores together, and the next chunk's kernel runs on the pool's threads
    while this process works through the steps before it (the simulated clock, costs and records)."""
    s = st.scenario
    width = window(s)  # steps a kernel call holds: a chunk is whole windows
    streaming = width > 1
    decode, prefill = st.cost.decode_coefficients(), st.cost.prefill_coefficients()
    per_chunk = width * max(1, CHUNK_REQUESTS // (s.generated_per_step * width))
    greedy = int(s.algorithm.greedy_baseline)
    drawn = step_requests(s, st.rng, st.reuse)

    def launch(count: int):  # the next count steps (chunks are launched in order)
        sampled, requests, overheads, held, calls, scored, groups = [], [], [], [], [], [], []
        for _ in range(count):
            prompts, responses, step_calls, batches, own = next(drawn)
            sampled.append((prompts, responses))
            requests.extend(step_calls)
            calls.append(len(step_calls))
            groups.extend(_call_groups(s, len(step_calls)))
            # dynamic sampling scores every sample the batch generated, the trained ones and those filtered or left
            # over; ReMax its greedy responses too
            scored.append(_scored(own) if s.algorithm.dynamic_sampling is not None or greedy else None)
            held.append(batches)
            overheads.append(st.cost.rollout_overhead_s(len(responses)))
        if st.free_generation:  # the lengths only: no engine, no time
            return sampled, [0.0] * count, held, calls, scored, free_rollouts(requests, s.num_replicas)
        call_overheads = [st.cost.rollout_overhead_s(len(c[1])) for c in requests]
        pending = launch_rollouts(
            requests,
            groups if greedy else s.workload.group_size,
            s.num_replicas,
            collector.engine_seqs(s),  # max_num_seqs, less under a prompt-group collector's in-flight limit
            s.kv_capacity_tokens,
            decode,
            prefill,
            [0.0] * len(requests) if streaming else call_overheads,
            scheduler_rules(s),
            st.reuse.rollouts if st.reuse is not None else None,
        )
        return sampled, overheads, held, calls, scored, pending

    # chunks of 1, 2, 4, ... windows, at most per_chunk steps: the first, which nothing overlaps, is short
    chunks, first, size = [], 1, width
    while first <= s.run.steps:
        count = min(size, per_chunk, s.run.steps + 1 - first)
        chunks.append((first, count))
        first, size = first + count, 2 * size

    def launched(c: int):
        """Chunk c launched, or the error its launch raised: an earlier chunk's error is reported first."""
        try:
            return launch(chunks[c][1])
        except RlsimError as exc:
            return exc

    # two chunks under way: the next runs on the pool's threads while this one's steps are simulated, and takes
    # the cores this one's last tasks leave free
    ahead = [launched(c) for c in range(min(2, len(chunks)))]
    current: RolloutResult | None = None  # streaming: the window the steps are in (set at its first step)
    for c in range(len(chunks)):
        chunk = ahead.pop(0)
        if isinstance(chunk, RlsimError):
            raise chunk
        sampled, overheads, held, calls, scored, pending = chunk
        results = pending.result()
        if c + 2 < len(chunks):
            ahead.append(launched(c + 2))
        first = 0
        for i, (prompts, responses) in enumerate(sampled):
            if calls[i]:
                current = res = merge_rounds(results[first : first + calls[i]])
                first += calls[i]
            if streaming:
                assert current is not None  # the window's first step set it
                res = per_batch(current, held[i], prompts, responses, overheads[i])
            yield prompts, responses, res, scored[i]


def _rollout(env: simpy.Environment, st: _State):
    s = st.scenario
    k = s.schedule.staleness
    generations = _generations(st)
    for n in range(1, s.run.steps + 1):
        while st.engine_version < n - 1 - k:
            yield st.version_changed
        with st.rollout_pool.request() as req:
            yield req
            start = env.now
            st.engine_pause_s = 0.0  # updates that landed while the engines were idle cost them nothing
            version = st.engine_version  # the oldest weights this batch saw (in-flight updates may follow)
            prompts, responses, res, scored = next(generations)
            duration = res.rollout_s
            yield env.timeout(duration)
            while st.engine_pause_s > 0:  # in-flight weight updates that landed while this batch generated
                pause, st.engine_pause_s = st.engine_pause_s, 0.0
                yield env.timeout(pause)
                duration += pause
            st.span(Phase.ROLLOUT, n, st.rollout_track, start, duration)
        yield st.batches.put(_Batch(n, version, prompts, responses, res, duration, scored))


@dataclass
class _TrainerSetup:
    """What the trainer's steps share: where the reward runs, the critic's and reference's pools, the sync."""

    colocated: bool
    in_flight: bool
    sync_s: float  # the weight sync and an in-flight update's engine stall take no step argument
    pause_s: float
    reward_track: str
    reward_pool: simpy.Resource | None
    critic_cost: CostModel | None
    critic_view_cost: CostModel  # the critic's passes on the training pool: its own micro-batching (for_critic)
    critic_track: str
    ref_cost: CostModel | None

    @classmethod
    def of(cls, st: _State) -> _TrainerSetup:
        s, cost, alg = st.scenario, st.cost, st.scenario.algorithm
        in_flight = s.schedule.mode == "async" and s.schedule.in_flight_weight_updates
        partial = s.schedule.mode == "fully-async" and s.schedule.partial_rollout  # the engines stall for the sync
        reward_track, reward_pool = CPU, None
        if s.reward.model is not None:  # the reward model's GPUs: its own pool, or the training pool's
            reward_track = REWARD_POOL if s.reward.num_gpus else st.train_track
            reward_pool = st.reward_pool if s.reward.num_gpus else st.train_pool
        return cls(
            colocated=s.hardware.placement == "colocated",
            in_flight=in_flight or partial,
            sync_s=cost.weight_sync_s(),
            pause_s=cost.engine_pause_s() if in_flight else cost.weight_sync_s() if partial else 0.0,
            reward_track=reward_track,
            reward_pool=reward_pool,
            critic_cost=cost.on_pool(s.critic_pool_gpus).for_critic() if s.critic_pool_gpus else None,
            critic_view_cost=cost.for_critic() if alg.name == "ppo" else cost,
            critic_track=REWARD_POOL if alg.critic_with_reward else CRITIC_POOL,
            ref_cost=cost.on_pool(alg.reference_gpus) if alg.kl_reference and alg.reference_gpus else None,
        )


class _Work(NamedTuple):
    """What a step's trained samples weigh: tokens, squared tokens, sequences and the longest sequence."""

    tokens: float
    sq_tokens: float
    nseq: int
    longest: float


def _trainer(env: simpy.Environment, st: _State):
    """The trainer process: each step's batch scored, its log-prob and training passes, then the weight sync."""
    setup = _TrainerSetup.of(st)
    zero = {p.value: 0.0 for p in Phase if p is not Phase.EVAL}
    for n in range(1, st.scenario.run.steps + 1):
        b: _Batch = yield st.batches.get()
        timing = dict(zero)
        timing[Phase.ROLLOUT.value] = b.rollout_s
        seq = (b.prompt_tokens + b.response_tokens).astype(float)
        work = _Work(float(np.add.reduce(seq)), float(np.add.reduce(seq * seq)), len(seq), float(seq.max(initial=0.0)))
        yield from _reward(env, st, setup, b, work, n, timing)
        train_req = st.train_pool.request()
        yield train_req
        for actor_side, sides in _passes(st, setup, work):
            yield from _run_passes(env, st, n, timing, actor_side, sides)
        sync = n % st.scenario.schedule.sync_every == 0  # fully-async: every sync_every updates, else every step
        if sync:
            yield from _weight_sync(env, st, setup, n, timing)
        st.train_pool.release(train_req)
        if sync:
            st.engine_version = n
            changed, st.version_changed = st.version_changed, env.event()
            changed.succeed()
        st.records.append(_record(st, b, timing, env.now))
        st.last_end_s = env.now
        if st.progress is not None:
            st.progress(n)


def _reward(env: simpy.Environment, st: _State, setup: _TrainerSetup, b: _Batch, work: _Work, n: int, timing: dict):
    """Score the step: every sample generated (dynamic sampling: every round's), on the CPU or the reward
    model's GPUs."""
    dur = st.cost.reward_s(*b.scored) if b.scored else st.cost.reward_s(work.nseq, work.tokens, work.sq_tokens)
    if setup.reward_track is CPU:
        start = env.now
        yield env.timeout(dur)
        timing[Phase.REWARD.value] = st.span(Phase.REWARD, n, CPU, start, dur)
        return
    assert setup.reward_pool is not None  # a reward model's GPUs: its own pool or the training pool's
    with setup.reward_pool.request() as req:
        yield req
        start = env.now
        yield env.timeout(dur)
        timing[Phase.REWARD.value] = st.span(Phase.REWARD, n, setup.reward_track, start, dur)


_Side = list[tuple[Phase, float, str]]


def _passes(st: _State, setup: _TrainerSetup, work: _Work) -> list[tuple[list[tuple[Phase, float]], _Side]]:
    """The step's two stages (experience, then training), each as (the actor pool's passes, the passes on pools of
    their own: the critic's, the reference's), priced on the kept samples."""
    s, cost, alg = st.scenario, st.cost, st.scenario.algorithm
    tokens, sq_tokens, nseq = work.tokens, work.sq_tokens, work.nseq
    opt_steps = s.optimizer_steps_per_step
    if s.training.pad_to_longest and nseq:  # every pass below sees each sequence at the batch's longest
        tokens, sq_tokens = nseq * work.longest, nseq * work.longest * work.longest
    passes: list[tuple[Phase, float]] = []
    if alg.recompute_old_logprob:
        passes.append((Phase.OLD_LOGPROB, cost.forward_s(s.model, tokens, sq_tokens, nseq) + cost.logprob_host_s()))
    side_fwd: _Side = []
    side_train: _Side = []
    if alg.kl_reference and setup.ref_cost is not None:
        ref_s = setup.ref_cost.forward_s(s.model, tokens, sq_tokens, nseq)
        side_fwd.append((Phase.REF_LOGPROB, ref_s, REFERENCE_POOL))
    elif alg.kl_reference:
        ref = cost.forward_s(s.model, tokens, sq_tokens, nseq) + cost.reference_swap_s(s.model)
        passes.append((Phase.REF_LOGPROB, ref))
    train_passes: list[tuple[Phase, float]] = []
    if alg.name == "ppo":
        cc = setup.critic_cost or setup.critic_view_cost
        values = cc.forward_s(s.critic, tokens, sq_tokens, nseq) * cost.critic_scale(Phase.VALUES.value)
        train = cc.train_s(s.critic, tokens, sq_tokens, opt_steps, alg.epochs_per_step, nseq)
        train *= cost.critic_scale(Phase.TRAIN_CRITIC.value)
        if setup.critic_cost is None:
            passes.append((Phase.VALUES, values))
            train_passes.append((Phase.TRAIN_CRITIC, train))
        else:
            side_fwd.append((Phase.VALUES, values, setup.critic_track))
            side_train.append((Phase.TRAIN_CRITIC, train, setup.critic_track))
    actor_train = cost.train_s(s.model, tokens, sq_tokens, opt_steps, alg.epochs_per_step, nseq)
    train_passes.append((Phase.TRAIN_ACTOR, actor_train))
    return [(passes, side_fwd), (train_passes, side_train)]


def _run_passes(
    env: simpy.Environment, st: _State, n: int, timing: dict, actor_side: list[tuple[Phase, float]], sides: _Side
):
    """One stage on the training pool: the actor's passes one after the other; passes on pools of their own run
    beside them, the stage as long as its longest side."""
    if not sides:
        for phase, dur in actor_side:
            start = env.now
            yield env.timeout(dur)
            timing[phase.value] = st.span(phase, n, st.train_track, start, dur)
        return
    start, t = env.now, env.now
    for p, d in actor_side:
        st.spans.append(Span(p, n, st.train_track, t, t + d))
        timing[p.value] = d
        t += d
    for p, d, track in sides:
        st.spans.append(Span(p, n, track, start, start + d))
        timing[p.value] = d
    yield env.timeout(max(t - start, *(d for _, d, _ in sides)))


def _weight_sync(env: simpy.Environment, st: _State, setup: _TrainerSetup, n: int, timing: dict):
    """The weight sync: the engine must be idle (between batches), except for in-flight updates, which load the
    weights between engine iterations and stall the engines for the transfer only."""
    engine_req = None if (setup.colocated or setup.in_flight) else st.rollout_pool.request()
    if engine_req is not None:
        yield engine_req
    start, dur = env.now, setup.sync_s
    if setup.in_flight:
        st.engine_pause_s += setup.pause_s
    yield env.timeout(dur)
    timing[Phase.WEIGHT_SYNC.value] = st.span(Phase.WEIGHT_SYNC, n, st.train_track, start, dur)
    if engine_req is not None:
        st.spans.append(Span(Phase.WEIGHT_SYNC, n, st.rollout_track, start, env.now))
        st.rollout_pool.release(engine_req)


def _record(st: _State, b: _Batch, timing: dict[str, float], end_s: float) -> RunLogRecord:
    s = st.scenario
    batch = s.workload.responses_per_step
    r = b.rollout
    return run_log_record(
        run_id=st.run_id,
        step=b.step,
        cumulative_samples=b.step * batch,
        prompts=s.workload.prompts_per_step,
        responses=batch,
        prompt_tokens=r.prompt_tokens,
        response_tokens=r.response_tokens,
        lr=lr_for_batch(s.learning, batch),
        reward_mean=None,
        eval_metric=None,
        wall_s=end_s,
        step_time_s=end_s - st.last_end_s,
        staleness=b.step - 1 - b.version,
        generation_tokens_per_s=r.generation_tokens_per_s,
        num_preemptions=r.num_preemptions,
        recomputed_tokens=r.recomputed_tokens,
        recompute_share=r.recompute_share,
        mean_decode_batch=r.mean_decode_batch,
        peak_kv_tokens=r.peak_kv_tokens,
        timing_s=timing,
    )


def run_pipeline(
    scenario: Scenario,
    cost: CostModel | None = None,
    progress: Callable[[int], None] | None = None,
    reuse: Reuse | None = None,
    free_generation: bool = False,
) -> tuple[list[RunLogRecord], list[Span]]:
    """Simulate ``scenario.run.steps`` steps; return the per-step records and the timeline spans (the same with a
    ``reuse`` shared with other runs, found there where they draw the same lengths or roll out alike).

    With ``free_generation`` rollouts take no time (no engine simulated): each step's time is then the trainer's own
    work (reward, passes, sync), done step after step by one process, a lower bound of the real run's (rlsim.plan)."""
    cost = cost or RooflineCostModel.from_scenario(scenario)
    threads.thread_count()  # a bad RLSIM_THREADS is refused before anything runs, whatever the step size
    env = simpy.Environment()
    if scenario.hardware.placement == "colocated":
        pool = simpy.Resource(env, capacity=1)
        rollout_pool = train_pool = pool
        rollout_track = train_track = ALL_GPUS
    else:
        rollout_pool, train_pool = simpy.Resource(env, capacity=1), simpy.Resource(env, capacity=1)
        rollout_track, train_track = ROLLOUT_POOL, TRAIN_POOL
    st = _State(
        env=env,
        scenario=scenario,
        cost=cost,
        rng=np.random.default_rng(scenario.run.seed),
        rollout_pool=rollout_pool,
        train_pool=train_pool,
        rollout_track=rollout_track,
        train_track=train_track,
        batches=simpy.Store(env),
        reward_pool=simpy.Resource(env, capacity=1) if scenario.reward.num_gpus else None,
        progress=progress,
        run_id=f"sim-{scenario.digest()}",
        reuse=reuse,
        free_generation=free_generation,
    )
    if scenario.schedule.mode == "fully-async":
        env.process(fully_async.rollouter(env, st, _generations(st), _Batch))
    else:  # a prompt-group collector's rollouts differ only in their window and engine cap (rlsim.run.collector)
        env.process(_rollout(env, st))
    trainer = env.process(_trainer(env, st))
    env.run(until=trainer)
    add_utilization(scenario, st.records, st.spans)
    return st.records, st.spans
