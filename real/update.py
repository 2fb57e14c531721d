"""The update steps of a real run: the batch as tensors, log-prob passes, the critic, and the GRPO/PPO updates.

* :func:`batch_tensors`: right-padded prompt+completion ids with the completion's targets, mask and positions.
* :func:`completion_logprobs`: log-probs of the completion tokens under a model (``old_logprob``,
  ``ref_logprob`` and every micro-batch of the update).
* :func:`update_actor` (phase ``train_actor``): ``epochs`` passes over ``mini_batches`` mini-batches, each split
  into ``micro_batches`` micro-batches whose gradients accumulate, the clipped policy loss (plus ``kl_coef`` times
  k3 KL to the reference), gradient clipping at norm 1, one Adam step per mini-batch. The squared gradient norm of
  a micro-batch (the mean over the first mini-batch's micro-batches) and of the whole first mini-batch are
  returned (``grad_norm_sq_small`` / ``grad_norm_sq_big`` with their batch sizes in samples) so that calibrate can
  estimate B_simple (docs/reference.md section 3).
* :func:`update_critic` (phase ``train_critic``, PPO): the clipped value loss over the same mini-batches.

The losses themselves are pure functions in :mod:`real.algos`. ``rlsim-real bench train`` times these same
functions. torch is imported inside functions, so importing this module is cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from real.config import TrainConfig


def batch_tensors(prompts: list[list[int]], completions: list[list[int]], pad_id: int):
    """The batch as tensors: ``ids`` and ``attn`` ``[B, L]`` (prompt + completion, right-padded with ``pad_id``), and
    over the completion tokens ``[B, T]`` the ``targets``, the ``mask`` (1 on real tokens) and the ``positions``
    whose logits predict them."""
    # here, not at the top: it loads torch (start-up time)
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


def completion_logprobs(model, ids, attn, targets, positions):
    """log p of each completion token ``[B, T]`` under ``model`` (zero-padded beyond each completion's length)."""
    # here, not at the top: it loads torch (start-up time)
    import torch

    from real.algos import token_logprobs

    logits = model(input_ids=ids, attention_mask=attn).logits
    picked = torch.gather(logits, 1, positions.unsqueeze(-1).expand(-1, -1, logits.shape[-1]))
    return token_logprobs(picked, targets)


class Critic:
    """PPO critic: the policy's transformer body (a separate copy) with a scalar value head per token."""

    def __init__(self, model_dir: Path):
        # here, not at the top: it loads torch, transformers (start-up time)
        import torch
        from transformers import AutoModelForCausalLM

        base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        self.body = base.model
        self.head = torch.nn.Linear(base.config.hidden_size, 1)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)
        self.modules = torch.nn.ModuleDict({"body": self.body, "head": self.head})

    def values(self, ids, attn, positions):
        # here, not at the top: it loads torch (start-up time)
        import torch

        hidden = self.body(input_ids=ids, attention_mask=attn).last_hidden_state
        picked = torch.gather(hidden, 1, positions.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
        return self.head(picked).squeeze(-1)


def grad_norm_sq(params) -> float:
    """|g|^2 of the gradients accumulated in ``params``."""
    return float(sum(float((p.grad.detach() ** 2).sum()) for p in params if p.grad is not None))


def micro_grad_norm_sq(params, before, micro_batches: int) -> float:
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


def update_actor(
    cfg: TrainConfig, policy, opt, ids, attn, targets, mask, positions, old_lp, ref_lp, adv, weights=None
) -> dict[str, Any]:
    """One step's policy update; returns the mean loss, clip fraction and the gradient-noise probe. ``weights``:
    the decoupled loss's per-token ``pi_prox / pi_behav`` (real.stale), ``old_lp`` then the proximal policy's."""
    # here, not at the top: it loads torch (start-up time)
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
                lp = completion_logprobs(policy, ids[j], attn[j], targets[j], positions[j])
                w = None if weights is None else weights[j]
                loss, clip_frac = algos.clipped_policy_loss(lp, old_lp[j], adv[j], mask[j], cfg.clip, w)
                if ref_lp is not None:
                    loss = loss + cfg.kl_coef * algos.masked_mean(algos.kl_k3(lp, ref_lp[j]), mask[j])
                (loss / cfg.micro_batches).backward()
                losses.append(float(loss.detach()))
                clips.append(float(clip_frac.detach()))
                if probe:
                    small.append(micro_grad_norm_sq(params, before, cfg.micro_batches))
            if probe:
                # every micro-batch's own squared gradient norm, averaged: the same expectation as one
                # micro-batch's, with a fraction of its variance (McCandlish et al. average over all
                # data-parallel workers). With two micro-batches the two-batch estimator then reads
                # |G|^2 ~ g_1 . g_2 and tr(Sigma) ~ B_small |g_1 - g_2|^2 / 2, never negative.
                out["grad_norm_sq_small"] = sum(small) / len(small)
                out["grad_batch_small"] = micro
            if epoch == 0 and m == 0:
                out["grad_norm_sq_big"] = grad_norm_sq(params)
                out["grad_batch_big"] = mini
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
    out["policy_loss"] = sum(losses) / len(losses)
    out["clip_fraction"] = sum(clips) / len(clips)
    return out


def update_critic(cfg: TrainConfig, critic, opt, ids, attn, mask, positions, old_values, returns) -> float:
    """One step's critic update (PPO); returns the mean value loss."""
    # here, not at the top: it loads torch (start-up time)
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
