"""A real GRPO / PPO run, top to bottom: sample prompts, generate on an engine, score, update, sync weights.

One step (phase names from rlsim.phases, each timed with the device synchronized):

1. ``rollout``: P prompts from the task's train split (a seeded stream that resumes where it stopped), G
   completions each from the engine (``hf`` or ``vllm``) at the current weights.
2. ``reward``: the task's verifiable reward per completion (partial credit in [0, 1]).
3. ``old_logprob``: log-probs of the completions under the policy that generated them (the ratio's denominator);
   ``ref_logprob`` with ``--kl-coef > 0`` (frozen initial policy); ``values`` for PPO (the critic).
4. Advantages: GRPO normalizes rewards within each group; PPO runs GAE(gamma=1, lambda) on the critic's values.
5. ``train_actor`` (and ``train_critic`` for PPO): ``epochs`` passes over ``mini_batches`` mini-batches, each
   split into micro-batches whose gradients accumulate. The squared gradient norm of a micro-batch (the mean over
   the first mini-batch's micro-batches) and of the whole first mini-batch are logged (``grad_norm_sq_small`` /
   ``grad_norm_sq_big`` with their batch sizes in samples) so that calibrate can estimate B_simple (REFERENCE
   section 3).
6. ``weight_sync``: the engine loads the new weights.
7. Every ``eval_every`` steps: greedy accuracy on the held-out split, timed as ``eval`` and excluded from
   ``wall_s`` (and so from time-to-target).

Learning rate: ``lr0`` at ``reference_batch`` responses, scaled by the rule (sqrt / linear / none) for B = P x G;
``--scale-adam-betas`` also applies 1 - beta -> k (1 - beta) (Malladi et al. 2022).

Files in the run directory: ``config.json`` (resolved), ``environment.json`` (device, versions), ``runlog.jsonl``
(one line per step, flushed), ``checkpoint/`` (policy, critic, optimizers, RNG states, data stream position, wall
time; written atomically every ``checkpoint_every`` steps and at the end). Re-running the same command resumes
from the checkpoint: log lines after it are dropped and recomputed, so the log holds steps 1..N exactly once.
Wall time between the last checkpoint and a kill is not counted.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from real.errors import RealError
from rlsim.files import atomic_write_text, make_output_dir
from rlsim.learning import lr_scale
from rlsim.machine_load import LoadMeter
from rlsim.phases import Phase
from rlsim.runlog import SCHEMA_VERSION, append_record


@dataclass(frozen=True)
class TrainConfig:
    task: str = "addition"
    algo: str = "grpo"  # grpo | ppo
    engine: str = "hf"  # hf | vllm
    model: str | None = None  # None/"tiny", a local HF folder, or "smollm2"
    prompts_per_step: int = 16
    group_size: int = 8
    lr_rule: str = "sqrt"
    lr0: float = 3e-3
    reference_batch: int = 128
    scale_adam_betas: bool = False
    target: float | None = None  # stop when eval accuracy reaches it
    max_steps: int = 100
    max_time_s: float | None = None  # budget in wall seconds (eval excluded)
    mini_batches: int = 1
    epochs: int = 1
    micro_batches: int = 2
    clip: float = 0.2
    kl_coef: float = 0.0
    max_new_tokens: int = 8
    temperature: float = 1.0
    eval_every: int = 5
    eval_size: int = 64
    train_size: int = 2000
    checkpoint_every: int = 5
    seed: int = 0
    gamma: float = 1.0
    lam: float = 0.95
    value_clip: float = 0.2
    critic_lr: float = 3e-3

    @property
    def batch(self) -> int:
        return self.prompts_per_step * self.group_size

    def validate(self) -> None:
        if self.algo not in ("grpo", "ppo"):
            raise RealError(f"--algo {self.algo!r} is not one of grpo, ppo")
        if self.lr_rule not in ("sqrt", "linear", "none"):
            raise RealError(f"--lr-rule {self.lr_rule!r} is not one of sqrt, linear, none")
        for name in (
            "prompts_per_step",
            "group_size",
            "max_steps",
            "mini_batches",
            "epochs",
            "micro_batches",
            "max_new_tokens",
            "eval_every",
            "eval_size",
            "checkpoint_every",
            "train_size",
        ):
            if getattr(self, name) < 1:
                raise RealError(f"--{name.replace('_', '-')} ({getattr(self, name)}) must be at least 1")
        if self.reference_batch < 1:
            raise RealError(f"--reference-batch ({self.reference_batch}) must be at least 1")
        if not self.lr0 > 0:
            raise RealError(f"--lr0 ({self.lr0}) must be positive")
        if not self.temperature > 0:
            raise RealError(f"--temperature ({self.temperature}) must be positive")
        if self.algo == "grpo" and self.group_size < 2:
            raise RealError(f"--group-size ({self.group_size}) must be at least 2 for grpo")
        if self.batch % self.mini_batches:
            raise RealError(
                f"the batch P x G = {self.batch} is not divisible into --mini-batches "
                f"{self.mini_batches}; choose a divisor of {self.batch}"
            )
        mini = self.batch // self.mini_batches
        if mini % self.micro_batches:
            raise RealError(
                f"a mini-batch of {mini} responses is not divisible into --micro-batches "
                f"{self.micro_batches}; choose a divisor of {mini}"
            )


def model_cache_dir() -> Path:
    """Where built or converted models live: $RLSIM_CACHE_DIR, else ~/.cache/rlsim/models."""
    return Path(os.environ.get("RLSIM_CACHE_DIR") or Path.home() / ".cache" / "rlsim" / "models")


def environment() -> dict[str, Any]:
    import torch

    env = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"cpu ({os.cpu_count()} cores)",
        "torch_threads": torch.get_num_threads(),
        "load_avg_1m": os.getloadavg()[0],  # at the start; each step logs its own load (rlsim.machine_load)
    }
    try:
        import transformers

        env["transformers"] = transformers.__version__
    except ImportError:
        pass
    try:
        import vllm

        env["vllm"] = vllm.__version__
    except ImportError:
        env["vllm"] = None
    return env


# ---------------------------------------------------------------------------------------------- tensors


def _batch_tensors(prompts: list[list[int]], completions: list[list[int]], pad_id: int):
    """Right-padded prompt+completion ids, and per-row (start, length) of the completion."""
    import torch

    rows = [p + c for p, c in zip(prompts, completions)]
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attn = torch.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
        attn[i, : len(r)] = 1
    tmax = max(1, max(len(c) for c in completions))
    targets = torch.full((len(rows), tmax), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), tmax))
    positions = torch.zeros((len(rows), tmax), dtype=torch.long)
    for i, (p, c) in enumerate(zip(prompts, completions)):
        n = len(c)
        if n:
            targets[i, :n] = torch.tensor(c)
            mask[i, :n] = 1
            positions[i, :n] = torch.arange(len(p) - 1, len(p) - 1 + n)  # logits at t predict token t+1
    return ids, attn, targets, mask, positions


def _completion_logprobs(model, ids, attn, targets, positions):
    import torch

    from real.algos import token_logprobs

    logits = model(input_ids=ids, attention_mask=attn).logits
    picked = torch.gather(logits, 1, positions.unsqueeze(-1).expand(-1, -1, logits.shape[-1]))
    return token_logprobs(picked, targets)


class Critic:
    """PPO critic: the policy's transformer body (a separate copy) with a scalar value head per token."""

    def __init__(self, model_dir: Path):
        import torch
        from transformers import AutoModelForCausalLM

        base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        self.body = base.model
        self.head = torch.nn.Linear(base.config.hidden_size, 1)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)
        self.modules = torch.nn.ModuleDict({"body": self.body, "head": self.head})

    def values(self, ids, attn, positions):
        import torch

        hidden = self.body(input_ids=ids, attention_mask=attn).last_hidden_state
        picked = torch.gather(hidden, 1, positions.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
        return self.head(picked).squeeze(-1)


def _grad_norm_sq(params) -> float:
    return float(sum(float((p.grad.detach() ** 2).sum()) for p in params if p.grad is not None))


def _micro_grad_norm_sq(params, before, micro_batches: int) -> float:
    """|g_u|^2 of the micro-batch just accumulated: g_u = micro_batches * (grad now - grad before) is the gradient
    of that micro-batch's mean loss; ``before`` is updated in place to the gradient now."""
    total = 0.0
    for p, b in zip(params, before):
        if p.grad is None:
            continue
        g = p.grad.detach()
        total += float(((g - b) ** 2).sum()) * micro_batches**2
        b.copy_(g)
    return total


# ---------------------------------------------------------------------------------------------- checkpoint


def _save_checkpoint(run_dir: Path, state: dict[str, Any]) -> None:
    import torch

    tmp = run_dir / "checkpoint.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    torch.save(state, tmp / "state.pt")
    final = run_dir / "checkpoint"
    old = run_dir / "checkpoint.old"
    if final.exists():
        if old.exists():
            shutil.rmtree(old)
        final.rename(old)
    tmp.rename(final)
    if old.exists():
        shutil.rmtree(old)


def _load_checkpoint(run_dir: Path) -> dict[str, Any] | None:
    import torch

    for name in ("checkpoint", "checkpoint.old"):  # .old survives a kill between the two renames
        path = run_dir / name / "state.pt"
        if path.is_file():
            return torch.load(path, weights_only=False)
    return None


def _truncate_log(path: Path, last_step: int) -> None:
    """Keep the log's complete lines of steps <= last_step (drops a torn last line and steps to be redone)."""
    if not path.exists():
        return
    kept = []
    for line in path.read_text().splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        try:
            if json.loads(line)["step"] <= last_step:
                kept.append(line)
        except (json.JSONDecodeError, KeyError):
            break
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(kept))
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------- the loop


def train(cfg: TrainConfig, run_dir: Path, progress: Any = None) -> dict[str, Any]:
    """Run (or resume) training into ``run_dir``; returns a summary dict."""
    cfg.validate()
    from real.tasks import get_task, make_splits

    task = get_task(cfg.task)  # before any heavy import: bad input fails fast
    import numpy as np
    import torch

    from real import algos
    from real.engines import make_engine
    from real.models import load_policy, resolve_model
    from real.timing import phase_timer

    make_output_dir(run_dir, "run directory (new, or a run to resume)")
    config_path = run_dir / "config.json"
    resolved = dataclasses.asdict(cfg)
    if config_path.exists():
        try:
            previous = json.loads(config_path.read_text())
        except json.JSONDecodeError:
            raise RealError(f"{config_path} is not valid JSON; remove it to start the run afresh") from None
        if previous != resolved:
            diff = sorted(k for k in resolved if previous.get(k) != resolved[k])
            raise RealError(
                f"{run_dir} holds a run with another configuration ({', '.join(diff)} differ); "
                "use a new -o directory or the same options to resume"
            )
    else:
        atomic_write_text(config_path, json.dumps(resolved, indent=2, sort_keys=True) + "\n")
    torch.manual_seed(cfg.seed)
    model_dir = resolve_model(cfg.model, model_cache_dir())
    env = {**environment(), "model_dir": str(model_dir)}  # calibrate reads the architecture from here
    policy, tok = load_policy(model_dir)
    policy.train()
    pad_id = tok.pad_token_id
    train_split, eval_split = make_splits(task, cfg.seed, cfg.train_size, cfg.eval_size)
    encode = lambda text: tok(text)["input_ids"]  # noqa: E731
    eval_prompts = [encode(e.prompt) for e in eval_split]

    k = cfg.batch / cfg.reference_batch
    lr = cfg.lr0 * lr_scale(cfg.lr_rule, cfg.batch, cfg.reference_batch)
    betas = algos.adam_betas_for_batch(0.9, 0.999, k) if cfg.scale_adam_betas else (0.9, 0.999)
    opt = torch.optim.Adam(policy.parameters(), lr=lr, betas=betas)
    ref_model = None
    if cfg.kl_coef > 0:
        ref_model, _ = load_policy(model_dir)
        ref_model.eval()
    critic = critic_opt = None
    if cfg.algo == "ppo":
        critic = Critic(model_dir)
        critic_opt = torch.optim.Adam(critic.modules.parameters(), lr=cfg.critic_lr)

    data_rng = random.Random(cfg.seed)
    start_step, wall_s, best = 1, 0.0, None
    state = _load_checkpoint(run_dir)
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
    _truncate_log(log_path, start_step - 1)
    if state is not None:
        finished = (
            start_step > cfg.max_steps
            or (cfg.target is not None and best is not None and best >= cfg.target)
            or (cfg.max_time_s is not None and wall_s >= cfg.max_time_s)
        )
        if finished:  # re-running a finished run changes nothing
            return {"stopped": "already finished", "final_eval_metric": best, "wall_s": wall_s, "run_dir": str(run_dir)}

    engine = make_engine(cfg.engine, model_dir, seed=cfg.seed, max_model_len=128)
    engine.load_weights(policy)
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
        _save_checkpoint(
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
            examples = [train_split[data_rng.randrange(len(train_split))] for _ in range(cfg.prompts_per_step)]
            prompts = [encode(e.prompt) for e in examples]
            with phase_timer(Phase.ROLLOUT, timing):
                groups = engine.generate(
                    prompts, cfg.group_size, cfg.max_new_tokens, cfg.temperature, seed=cfg.seed * 100_003 + step
                )
            flat_prompts = [p for p in prompts for _ in range(cfg.group_size)]
            completions = [c for g in groups for c in g]
            flat_examples = [e for e in examples for _ in range(cfg.group_size)]
            with phase_timer(Phase.REWARD, timing):
                texts = [tok.decode(c, skip_special_tokens=True) for c in completions]
                rewards = torch.tensor([task.reward(e, t) for e, t in zip(flat_examples, texts)])
            engine.sleep()
            ids, attn, targets, mask, positions = _batch_tensors(flat_prompts, completions, pad_id)
            with phase_timer(Phase.OLD_LOGPROB, timing), torch.no_grad():
                old_lp = _completion_logprobs(policy, ids, attn, targets, positions)
            ref_lp = None
            if ref_model is not None:
                with phase_timer(Phase.REF_LOGPROB, timing), torch.no_grad():
                    ref_lp = _completion_logprobs(ref_model, ids, attn, targets, positions)
            extra: dict[str, Any] = {}
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
                stats = _update_actor(cfg, policy, opt, ids, attn, targets, mask, positions, old_lp, ref_lp, adv)
            extra.update(stats)
            if critic is not None:
                with phase_timer(Phase.TRAIN_CRITIC, timing):
                    extra["value_loss"] = _update_critic(
                        cfg, critic, critic_opt, ids, attn, mask, positions, old_values, returns
                    )
            with phase_timer(Phase.WEIGHT_SYNC, timing):
                engine.load_weights(policy)
            wall_s += time.perf_counter() - t_start
            load = meter.stop()  # the step's own interval, eval excluded as from wall_s
            eval_metric = None
            if step % cfg.eval_every == 0 or step == cfg.max_steps:
                with phase_timer(Phase.EVAL, timing):
                    eval_metric = last_eval = evaluate()
            record = {
                "schema_version": SCHEMA_VERSION,
                "run_id": run_id,
                "step": step,
                "cumulative_samples": step * cfg.batch,
                "prompts": cfg.prompts_per_step,
                "responses": cfg.batch,
                "prompt_tokens": int(sum(len(p) for p in flat_prompts)),
                "response_tokens": int(sum(len(c) for c in completions)),
                "response_tokens_max": max(len(c) for c in completions),  # the hf engine's batch runs this long
                # responses of each length 0..max_new_tokens: calibrate's response-length model
                "response_length_counts": np.bincount(
                    [len(c) for c in completions], minlength=cfg.max_new_tokens + 1
                ).tolist(),
                **load,
                "lr": lr,
                "reward_mean": float(rewards.mean()),
                "eval_metric": eval_metric,
                "wall_s": wall_s,
                "timing_s": timing,
                "algo": cfg.algo,
                "engine": cfg.engine,
                "group_size": cfg.group_size,
                "accuracy_train": float(np.mean([task.is_correct(e, t) for e, t in zip(flat_examples, texts)])),
                **extra,
            }
            if step == 1 and initial_eval is not None:
                record["eval_metric_initial"] = initial_eval
            append_record(log, record)
            if progress is not None:
                progress(step, record)
            done_target = cfg.target is not None and eval_metric is not None and eval_metric >= cfg.target
            done_time = cfg.max_time_s is not None and wall_s >= cfg.max_time_s
            if step % cfg.checkpoint_every == 0 or done_target or done_time or step == cfg.max_steps:
                checkpoint(step)
            if done_target:
                summary["stopped"] = "target"
                break
            if done_time:
                summary["stopped"] = "time budget"
                break
    engine.close()
    summary.update(final_eval_metric=last_eval, wall_s=wall_s, run_dir=str(run_dir))
    return summary


def _update_actor(cfg, policy, opt, ids, attn, targets, mask, positions, old_lp, ref_lp, adv) -> dict[str, Any]:
    import torch

    from real import algos

    n = ids.shape[0]
    mini = n // cfg.mini_batches
    micro = mini // cfg.micro_batches
    params = [p for p in policy.parameters() if p.requires_grad]
    out: dict[str, Any] = {}
    losses, clips = [], []
    gen = torch.Generator().manual_seed(int(torch.randint(0, 2**31 - 1, (1,))))
    for epoch in range(cfg.epochs):
        order = torch.randperm(n, generator=gen)
        for m in range(cfg.mini_batches):
            idx = order[m * mini : (m + 1) * mini]
            opt.zero_grad(set_to_none=True)
            probe = epoch == 0 and m == 0
            before = [torch.zeros_like(p) for p in params] if probe else []
            small: list[float] = []
            for u in range(cfg.micro_batches):
                j = idx[u * micro : (u + 1) * micro]
                lp = _completion_logprobs(policy, ids[j], attn[j], targets[j], positions[j])
                loss, clip_frac = algos.clipped_policy_loss(lp, old_lp[j], adv[j], mask[j], cfg.clip)
                if ref_lp is not None:
                    loss = loss + cfg.kl_coef * algos.masked_mean(algos.kl_k3(lp, ref_lp[j]), mask[j])
                (loss / cfg.micro_batches).backward()
                losses.append(float(loss.detach()))
                clips.append(float(clip_frac.detach()))
                if probe:
                    small.append(_micro_grad_norm_sq(params, before, cfg.micro_batches))
            if probe:
                # every micro-batch's own squared gradient norm, averaged: the same expectation as one
                # micro-batch's, with a fraction of its variance (McCandlish et al. average over all
                # data-parallel workers). With two micro-batches the two-batch estimator then reads
                # |G|^2 ~ g_1 . g_2 and tr(Sigma) ~ B_small |g_1 - g_2|^2 / 2, never negative.
                out["grad_norm_sq_small"] = sum(small) / len(small)
                out["grad_batch_small"] = micro
            if epoch == 0 and m == 0:
                out["grad_norm_sq_big"] = _grad_norm_sq(params)
                out["grad_batch_big"] = mini
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
    out["policy_loss"] = sum(losses) / len(losses)
    out["clip_fraction"] = sum(clips) / len(clips)
    return out


def _update_critic(cfg, critic, opt, ids, attn, mask, positions, old_values, returns) -> float:
    import torch

    from real import algos

    n = ids.shape[0]
    mini = n // cfg.mini_batches
    losses = []
    for _ in range(cfg.epochs):
        order = torch.randperm(n)
        for m in range(cfg.mini_batches):
            j = order[m * mini : (m + 1) * mini]
            opt.zero_grad(set_to_none=True)
            v = critic.values(ids[j], attn[j], positions[j])
            loss = algos.value_loss(v, old_values[j], returns[j], mask[j], cfg.value_clip)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(critic.modules.parameters(), 1.0)
            opt.step()
            losses.append(float(loss.detach()))
    return sum(losses) / len(losses)
