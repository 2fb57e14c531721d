"""Fully-async runs (``rlsim-real train --fully-async --staleness K [--sync-every N]``): generation and training
really run at the same time, in two processes, each with its own torch threads.

* The **generator** (a process of its own, spawned at the start) holds the hf engine. For batch b (0-based; the
  trainer's update b + 1 trains on it) it waits until the weights it can load are at least version b - K (version
  0 is the initial policy, version v the one after update v), loads the newest the trainer has pushed, samples P
  prompts from the train split (the seeded stream a synchronous run draws) and generates G completions each,
  recording each token's log-probability under the sampling distribution (the behaviour policy's, as vLLM returns
  them), then queues the batch with the version it generated with. So the generator runs ahead of the trainer by
  at most K policy versions, and the lag of every batch is at most K.
* The **trainer** (this process) takes the batches in order: reward, the proximal policy's log-probs
  (``old_logprob``), the update (``train_actor``), and every ``sync_every`` updates it pushes its weights
  (``weight_sync``): a copy of every parameter into a shared-memory buffer under a lock, the version bumped and the
  generator woken. The generator loads them at its next batch boundary (never within a ``generate`` call).
* The loss is the stale-policy one (real.stale, ``--staleness-loss``): naive PPO's ratio against the behaviour
  log-probs, or AReaL's decoupled loss (the default) centred on the proximal policy, weighted by pi_prox / pi_behav.

This is the shape of verl's fully-async recipe (volcengine/verl@v0.7.0): a rollouter and a trainer on resources of
their own (recipe/fully_async_policy/fully_async_rollouter.py), the trainer syncing parameters to the rollouter
every ``trigger_parameter_sync_step`` local updates (fully_async_trainer.py:467), and the rollouter bounded in how
far it runs ahead by ``staleness_threshold`` (fully_async_rollouter.py:179: at most (staleness_threshold + 1) x
trigger_parameter_sync_step batches per sync window). Here the bound is in policy versions, as rlsim's
``schedule.max_staleness`` (a batch n generated with weights of version >= n - 1 - K, rlsim.run.pipeline). What
verl has and this does not: partial rollouts carried across a weight update and ``require_batches``.

Each log line is the trainer's step: ``wall_s`` the trainer's wall clock (eval excluded), so the gaps are the
step times a user sees; ``timing_s.rollout`` the generator's seconds for that batch (overlapped with training, not
part of the step), ``wait_s`` the seconds the trainer waited for it, ``generator_wait_s`` those the generator
waited for recent enough weights, ``staleness`` the batch's lag, ``weights_pushed`` whether this update pushed
(with ``weights_version``). The load fields are the machine's as every run records them, with the generator's CPU
counted as this run's own (``other_cpu_fraction`` is the rest of the machine's). An async run does not resume: a
run directory that holds one is refused (use a new ``-o``). Eval runs on an engine of the trainer's own.
"""

from __future__ import annotations

import json
import os
import queue
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from real.config import TrainConfig
from real.engines.hf import HFEngine
from real.errors import RealError
from real.records import step_fields
from real.tasks import get_task, make_splits
from real.timing import phase_timer
from real.update import batch_tensors, completion_logprobs, update_actor
from rlsim.host.machine_load import LoadMeter
from rlsim.io.files import atomic_write_text
from rlsim.io.records import run_log_record
from rlsim.io.runlog import append_record
from rlsim.phases import Phase

POLL_S = 0.5  # how often a waiting side checks that the other is still alive
START_TIMEOUT_S = 300.0  # the generator's start-up (torch, transformers, the engine) at most


@dataclass
class Setup:
    """What real.train has built by the time it hands a fully-async run over."""

    model_dir: Path
    env: dict[str, Any]
    policy: Any
    tok: Any
    opt: Any
    task: Any
    train_split: list
    eval_split: list
    lr: float


class SharedWeights:
    """The trainer's weights in shared memory, their version, and a condition both sides wait on."""

    def __init__(self, policy: Any, ctx: Any) -> None:
        self.tensors = {k: v.detach().clone().share_memory_() for k, v in policy.state_dict().items()}
        self.version = ctx.Value("i", 0, lock=False)
        self.stopped = ctx.Value("i", 0, lock=False)
        self.cond = ctx.Condition()

    def push(self, policy: Any, version: int) -> None:
        """Copy the policy's weights into the buffer as ``version`` and wake the generator."""
        # here, not at the top: it loads torch (start-up time)
        import torch

        with self.cond, torch.no_grad():
            for k, v in policy.state_dict().items():
                self.tensors[k].copy_(v)
            self.version.value = version
            self.cond.notify_all()

    def pull(self, model: Any, have: int) -> int:
        """Load the newest pushed weights into ``model`` unless it holds them (``have``); returns their version."""
        # here, not at the top: it loads torch (start-up time)
        import torch

        with self.cond:
            if self.version.value != have:
                with torch.no_grad():
                    model.load_state_dict(self.tensors)
            return int(self.version.value)

    def wait_for(self, version: int) -> bool:
        """Block until the pushed version is at least ``version``; False when the run stopped meanwhile."""
        with self.cond:
            while self.version.value < version and not self.stopped.value:
                self.cond.wait(POLL_S)
            return not self.stopped.value

    def stop(self) -> None:
        with self.cond:
            self.stopped.value = 1
            self.cond.notify_all()


def _generator(cfg: TrainConfig, model_dir: str, shared: SharedWeights, out: Any, ready: Any, threads: int) -> None:
    """The generator process (module docstring): one batch after another, at most K versions ahead."""
    # here, not at the top: a spawned process imports what it runs
    import torch
    from transformers import AutoTokenizer

    torch.set_num_threads(threads)
    task = get_task(cfg.task)
    train_split, _ = make_splits(task, cfg.seed, cfg.train_size, cfg.eval_size)
    tok = AutoTokenizer.from_pretrained(model_dir)
    engine = HFEngine(Path(model_dir), device="cpu")
    have = shared.pull(engine.model, -1)
    data_rng = random.Random(cfg.seed)  # the stream a synchronous run draws its prompts from
    ready.set()
    for b in range(cfg.max_steps):
        t_wait = time.perf_counter()
        if not shared.wait_for(b - cfg.staleness):  # batch b may lag at most K versions
            break
        waited = time.perf_counter() - t_wait
        t_load = time.perf_counter()
        have = shared.pull(engine.model, have)
        load_s = time.perf_counter() - t_load
        meter = LoadMeter().start()
        picked = [data_rng.randrange(len(train_split)) for _ in range(cfg.prompts_per_step)]
        prompts = [tok(train_split[i].prompt)["input_ids"] for i in picked]
        t0 = time.perf_counter()
        seed = cfg.seed * 100_003 + b + 1  # the seed step b + 1 of a synchronous run samples with
        groups, logprobs = engine.generate(
            prompts, cfg.group_size, cfg.max_new_tokens, cfg.temperature, seed=seed, logprobs=True
        )
        rollout_s = time.perf_counter() - t0
        out.put(
            {
                "index": b,
                "version": have,
                "picked": picked,
                "prompts": prompts,
                "groups": groups,
                "logprobs": logprobs,
                "rollout_s": rollout_s,
                "generator_wait_s": waited,
                "weights_load_s": load_s,
                "generator_load": meter.stop(),
            }
        )
    out.put(None)


def _process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (/proc/PID/stat), or None where it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _next_batch(batches: Any, proc: Any) -> dict[str, Any]:
    """The generator's next batch; a RealError when it died without one."""
    while True:
        try:
            item = batches.get(timeout=POLL_S)
        except queue.Empty:
            if not proc.is_alive():
                raise RealError(
                    f"the generator process exited (status {proc.exitcode}) before its batch; its error is above"
                ) from None
            continue
        if item is None:
            raise RealError("the generator stopped before the trainer's last step")
        return item


def train_async(cfg: TrainConfig, run_dir: Path, setup: Setup, progress: Any, threads: str) -> dict[str, Any]:
    """A fully-async run into ``run_dir`` (module docstring); returns the summary as real.train.train does."""
    # here, not at the top: it loads torch (start-up time)
    import torch
    import torch.multiprocessing as mp

    from real import algos

    log_path = run_dir / "runlog.jsonl"
    if log_path.exists() and log_path.read_text().strip():
        raise RealError(f"{run_dir} holds a fully-async run; such runs do not resume: use a new -o directory")
    policy, tok, opt = setup.policy, setup.tok, setup.opt
    pad_id = tok.pad_token_id
    env = {**setup.env, "fully_async": True}
    atomic_write_text(run_dir / "environment.json", json.dumps(env, indent=2, sort_keys=True) + "\n")
    ctx = mp.get_context("spawn")
    shared = SharedWeights(policy, ctx)
    batches, ready = ctx.Queue(), ctx.Event()
    proc = ctx.Process(
        target=_generator,
        args=(cfg, str(setup.model_dir), shared, batches, ready, torch.get_num_threads()),
        daemon=True,
    )
    proc.start()
    encode = lambda text: tok(text)["input_ids"]  # noqa: E731
    eval_prompts = [encode(e.prompt) for e in setup.eval_split]
    judge = HFEngine(setup.model_dir, device="cpu")  # the trainer's own engine, for eval only

    def evaluate() -> float:
        judge.load_weights(policy)
        outs = judge.generate(eval_prompts, 1, cfg.max_new_tokens, 1.0, cfg.seed, greedy=True)
        texts = [tok.decode(o[0], skip_special_tokens=True) for o in outs]
        return sum(setup.task.is_correct(e, t) for e, t in zip(setup.eval_split, texts)) / len(setup.eval_split)

    summary: dict[str, Any] = {"stopped": "max_steps"}
    wall_s = 0.0
    try:
        t_ready = time.perf_counter()
        while not ready.wait(POLL_S):
            if not proc.is_alive() or time.perf_counter() - t_ready > START_TIMEOUT_S:
                raise RealError(f"the generator process did not start (status {proc.exitcode}); its error is above")
        initial = last_eval = evaluate()
        summary["initial_eval_metric"] = initial
        with open(log_path, "a") as log:
            for step in range(1, cfg.max_steps + 1):
                timing: dict[str, float] = {}
                meter = LoadMeter().start()
                gen_cpu0 = _process_cpu_s(proc.pid)
                t_start = time.perf_counter()
                b = _next_batch(batches, proc)
                wait_s = time.perf_counter() - t_start
                examples = [setup.train_split[i] for i in b["picked"]]
                groups, prompts = b["groups"], b["prompts"]
                with phase_timer(Phase.REWARD, timing):
                    flat = [e for e in examples for _ in range(cfg.group_size)]
                    texts = [tok.decode(c, skip_special_tokens=True) for g in groups for c in g]
                    rewards = torch.tensor([setup.task.reward(e, t) for e, t in zip(flat, texts)])
                flat_prompts = [p for p in prompts for _ in range(cfg.group_size)]
                completions = [c for g in groups for c in g]
                ids, attn, targets, mask, positions = batch_tensors(flat_prompts, completions, pad_id)
                behaviour = torch.zeros_like(mask)
                for i, lp in enumerate(c for g in b["logprobs"] for c in g):
                    behaviour[i, : len(lp)] = torch.tensor(lp)
                extra: dict[str, Any] = {"staleness": step - 1 - b["version"]}
                weights = None
                if cfg.staleness_loss == "naive_ppo":
                    centre = behaviour
                else:
                    with phase_timer(Phase.OLD_LOGPROB, timing), torch.no_grad():
                        centre = completion_logprobs(policy, ids, attn, targets, positions)
                    weights, kept = algos.behaviour_weights(centre, behaviour, mask, cfg.behav_weight_cap)
                    # 0 up to rounding when the generator held the trainer's weights (lag 0): the sync's check
                    extra["behaviour_max_abs_diff"] = float(((centre - behaviour).abs() * mask).max())
                    extra["behav_weight_filtered"] = float(1.0 - kept.sum() / mask.sum().clamp(min=1))
                adv = algos.group_advantages(rewards, cfg.group_size).unsqueeze(1) * mask
                with phase_timer(Phase.TRAIN_ACTOR, timing):
                    extra.update(
                        update_actor(cfg, policy, opt, ids, attn, targets, mask, positions, centre, None, adv, weights)
                    )
                pushed = step % cfg.sync_every == 0
                if pushed:
                    with phase_timer(Phase.WEIGHT_SYNC, timing):
                        shared.push(policy, step)
                wall_s += time.perf_counter() - t_start
                load = meter.stop()
                gen_cpu1 = _process_cpu_s(proc.pid)
                load = _without_generator(load, gen_cpu0, gen_cpu1, time.perf_counter() - t_start)
                timing[Phase.ROLLOUT.value] = b["rollout_s"]  # the generator's, overlapped with training
                eval_metric = None
                if step % cfg.eval_every == 0 or step == cfg.max_steps:
                    with phase_timer(Phase.EVAL, timing):
                        eval_metric = last_eval = evaluate()
                record = run_log_record(
                    run_id=run_dir.name,
                    **step_fields(cfg, step, flat_prompts, completions),
                    **load,
                    lr=setup.lr,
                    reward_mean=float(rewards.mean()),
                    eval_metric=eval_metric,
                    wall_s=wall_s,
                    timing_s=timing,
                    accuracy_train=float(np.mean([setup.task.is_correct(e, t) for e, t in zip(flat, texts)])),
                    zero_variance_groups=algos.zero_variance_share(rewards, cfg.group_size),
                    wait_s=wait_s,
                    generator_wait_s=b["generator_wait_s"],
                    weights_load_s=b["weights_load_s"],
                    generator_other_cpu_fraction=b["generator_load"]["other_cpu_fraction"],
                    weights_pushed=pushed,
                    weights_version=b["version"],
                    fully_async=True,
                    **({"offload_s": opt.take_times()} if cfg.offload_optimizer else {}),
                    **extra,
                    **({"eval_metric_initial": initial} if step == 1 else {}),
                )
                append_record(log, record)
                if progress is not None:
                    progress(step, record)
                if cfg.target is not None and eval_metric is not None and eval_metric >= cfg.target:
                    summary["stopped"] = "target"
                    break
                if cfg.max_time_s is not None and wall_s >= cfg.max_time_s:
                    summary["stopped"] = "time budget"
                    break
    finally:
        shared.stop()
        deadline = time.perf_counter() + 10
        while proc.is_alive() and time.perf_counter() < deadline:  # drain, so that its queue can flush and exit
            try:
                batches.get(timeout=0.1)
            except queue.Empty:
                pass
        proc.join(timeout=1)
        if proc.is_alive():
            proc.terminate()
            proc.join(timeout=5)
        batches.cancel_join_thread()
    summary.update(final_eval_metric=last_eval, wall_s=wall_s, run_dir=str(run_dir))
    return summary


def _without_generator(load: dict[str, Any], cpu0: float | None, cpu1: float | None, wall: float) -> dict[str, Any]:
    """The step's load record with the generator's CPU counted as this run's own, not as other processes'."""
    other = load.get("other_cpu_fraction")
    if other is None or cpu0 is None or cpu1 is None or wall <= 0:
        return load
    gen = cpu1 - cpu0
    cores = os.cpu_count() or 1
    return {**load, "other_cpu_fraction": max(0.0, other - gen / (wall * cores)), "generator_cpu_s": gen}
