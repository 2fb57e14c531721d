"""GRPO and PPO pieces as pure torch functions (no state, no I/O), tested on CPU with hand-made tensors.

Shapes: ``[B, T]`` over the completion tokens of B sequences, with ``mask`` 1 on real tokens, 0 on padding.

* GRPO (Shao et al. 2024, DeepSeekMath): the advantage of every token of a response is its reward normalized
  within its group of G responses to the same prompt, ``(r - mean_group) / (std_group + eps)``; the loss is the
  clipped ratio objective of PPO, averaged over tokens, plus ``kl_coef`` times the k3 estimator of
  KL(pi || pi_ref) when a reference model is used.
* PPO (Schulman et al. 2017) with a critic: per-token values, the scalar reward on the last token, GAE(gamma,
  lambda) advantages (whitened over the batch), the same clipped policy objective, and the clipped value loss
  ``max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2) / 2``.

Deviation from the papers: losses average over all real tokens of the mini-batch (the "token-mean" of verl),
not per sequence first.
"""

from __future__ import annotations

import torch


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum() / mask.sum().clamp(min=1)


def group_advantages(rewards: torch.Tensor, group_size: int, eps: float = 1e-6) -> torch.Tensor:
    """GRPO: rewards ``[P*G]`` ordered group by group -> normalized advantages ``[P*G]``."""
    r = rewards.view(-1, group_size)
    mean = r.mean(dim=1, keepdim=True)
    std = r.std(dim=1, keepdim=True, unbiased=False)
    return ((r - mean) / (std + eps)).reshape(-1)


def clipped_policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip: float,
    weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO's clipped surrogate, negated for minimization; returns (loss, fraction of tokens clipped).
    ``weights``: a per-token factor on the surrogate (the decoupled loss's ``pi_prox / pi_behav``, no gradient)."""
    ratio = torch.exp(logprobs - old_logprobs)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip, 1.0 + clip) * advantages
    surrogate = torch.minimum(unclipped, clipped)
    if weights is not None:
        surrogate = surrogate * weights
    loss = -masked_mean(surrogate, mask)
    clip_frac = masked_mean((clipped < unclipped).float(), mask)  # where the clip is the active term
    return loss, clip_frac


def behaviour_weights(
    proximal_logprobs: torch.Tensor, behaviour_logprobs: torch.Tensor, mask: torch.Tensor, cap: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The decoupled loss's token weights ``pi_prox / pi_behav`` (AReaL, arXiv 2505.24298) and the mask with the
    tokens whose weight exceeds ``cap`` left out (AReaL's ``behav_imp_weight_cap``); no gradient flows through
    either."""
    w = torch.exp(proximal_logprobs - behaviour_logprobs).detach()
    kept = mask * (w <= cap).to(mask.dtype)
    return w * kept, kept


def kl_k3(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimator of KL(pi || pi_ref): exp(ref - lp) - (ref - lp) - 1 >= 0."""
    d = ref_logprobs - logprobs
    return torch.exp(d) - d - 1.0


def gae(
    rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float = 1.0, lam: float = 0.95
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimation over right-padded sequences.

    ``rewards`` and ``values`` are ``[B, T]`` (rewards usually zero except on each sequence's last token).
    Returns (advantages, returns = advantages + values), zero on padding.
    """
    T = rewards.shape[1]
    adv = torch.zeros_like(rewards)
    for t in reversed(range(T)):
        next_value = values[:, t + 1] * mask[:, t + 1] if t + 1 < T else 0.0
        next_adv = adv[:, t + 1] if t + 1 < T else 0.0
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        adv[:, t] = (delta + gamma * lam * next_adv) * mask[:, t]
    return adv, (adv + values) * mask


def whiten(x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    mean = masked_mean(x, mask)
    var = masked_mean((x - mean) ** 2, mask)
    return (x - mean) / torch.sqrt(var + eps) * mask


def value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor, clip: float
) -> torch.Tensor:
    """PPO's clipped value loss (halved squared error, token mean)."""
    clipped = old_values + torch.clamp(values - old_values, -clip, clip)
    return 0.5 * masked_mean(torch.maximum((values - returns) ** 2, (clipped - returns) ** 2), mask)


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log p(target) for each position: logits ``[B, T, V]`` predicting ``targets`` ``[B, T]``."""
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def adam_betas_for_batch(beta1: float, beta2: float, scale: float) -> tuple[float, float]:
    """Malladi et al. 2022 (arXiv 2205.10287): with the batch multiplied by k, 1 - beta -> k (1 - beta)."""
    return max(0.0, 1.0 - scale * (1.0 - beta1)), max(0.0, 1.0 - scale * (1.0 - beta2))


def zero_variance_share(rewards, group_size: int) -> float:
    """The share of the step's groups whose rewards are all equal: GRPO's normalized advantage is zero there, so
    they train nothing (rlsim.learning.groups; measured here rather than inferred from the accuracy, since partial
    credit gives a group unequal rewards while none of its answers is right)."""
    r = rewards.view(-1, group_size)
    return float((r.max(dim=1).values == r.min(dim=1).values).float().mean())
