"""GRPO/PPO building blocks against hand-computed values."""

import math

import pytest

torch = pytest.importorskip("torch")

from real import algos  # noqa: E402


def test_group_advantages_normalize_within_groups():
    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.5, 0.5, 0.5, 0.5])
    a = algos.group_advantages(r, 4)
    # group 1: mean 0.5, population std 0.5 -> +-1; group 2: all equal -> 0
    assert torch.allclose(a[:4], torch.tensor([1.0, -1.0, -1.0, 1.0]), atol=1e-5)
    assert torch.all(a[4:] == 0)


def test_clipped_policy_loss_by_hand():
    lp = torch.log(torch.tensor([[1.5, 0.5]]))  # ratios 1.5 and 0.5 against old log-prob 0
    old = torch.zeros(1, 2)
    mask = torch.ones(1, 2)
    adv = torch.tensor([[1.0, 1.0]])
    loss, frac = algos.clipped_policy_loss(lp, old, adv, mask, clip=0.2)
    # min(1.5, 1.2) = 1.2 ; min(0.5, 0.8) = 0.5 ; loss = -(1.2 + 0.5) / 2
    assert float(loss) == pytest.approx(-0.85)
    assert float(frac) == pytest.approx(0.5)
    masked, _ = algos.clipped_policy_loss(lp, old, adv, torch.tensor([[1.0, 0.0]]), clip=0.2)
    assert float(masked) == pytest.approx(-1.2)


def test_kl_k3_is_zero_at_equal_and_positive_otherwise():
    lp = torch.tensor([-1.0, -2.0])
    assert torch.allclose(algos.kl_k3(lp, lp), torch.zeros(2))
    assert torch.all(algos.kl_k3(lp, lp + 0.3) > 0)
    d = 0.3
    assert float(algos.kl_k3(lp, lp + d)[0]) == pytest.approx(math.exp(d) - d - 1)


def test_gae_by_hand():
    # one sequence of 3 tokens, reward 1 at the end, values 0.5 everywhere, gamma 1, lambda 0.5
    rewards = torch.tensor([[0.0, 0.0, 1.0, 0.0]])
    values = torch.tensor([[0.5, 0.5, 0.5, 9.0]])  # the padded value must be ignored
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    adv, ret = algos.gae(rewards, values, mask, gamma=1.0, lam=0.5)
    d2 = 1.0 - 0.5  # terminal: no bootstrap
    d1 = 0.0 + 0.5 - 0.5
    d0 = 0.0 + 0.5 - 0.5
    a2 = d2
    a1 = d1 + 0.5 * a2
    a0 = d0 + 0.5 * a1
    assert torch.allclose(adv, torch.tensor([[a0, a1, a2, 0.0]]))
    assert torch.allclose(ret, torch.tensor([[a0 + 0.5, a1 + 0.5, a2 + 0.5, 0.0]]))
    # lambda = 1, gamma = 1: advantage = final reward - value
    adv1, _ = algos.gae(rewards, values, mask, 1.0, 1.0)
    assert torch.allclose(adv1[0, :3], torch.tensor([0.5, 0.5, 0.5]))


def test_value_loss_clips():
    v = torch.tensor([[2.0]])
    old = torch.tensor([[0.0]])
    ret = torch.tensor([[2.0]])
    mask = torch.ones(1, 1)
    # unclipped error 0, clipped prediction 0.2 -> error 1.8^2; max taken -> 0.5 * 3.24
    assert float(algos.value_loss(v, old, ret, mask, clip=0.2)) == pytest.approx(0.5 * 1.8**2)


def test_adam_beta_scaling():
    b1, b2 = algos.adam_betas_for_batch(0.9, 0.999, 2.0)
    assert b1 == pytest.approx(0.8) and b2 == pytest.approx(0.998)


def test_decoupled_weights_are_prox_over_behaviour_and_the_cap_leaves_tokens_out():
    """AReaL's decoupled loss: each token's surrogate times pi_prox / pi_behav (no gradient); a token whose weight
    exceeds the cap leaves the loss (its weight 0) while the token mean keeps its denominator."""
    behav = torch.log(torch.tensor([[0.5, 0.1, 0.4]]))
    prox = torch.log(torch.tensor([[0.5, 0.8, 0.2]])).requires_grad_()
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    w, kept = algos.behaviour_weights(prox, behav, mask, cap=5.0)
    assert not w.requires_grad
    assert torch.allclose(w, torch.tensor([[1.0, 0.0, 0.0]]))  # 0.8 / 0.1 = 8 > 5 is left out; padding stays 0
    assert kept.tolist() == [[1.0, 0.0, 0.0]]
    w, _ = algos.behaviour_weights(prox, behav, mask, cap=10.0)
    assert torch.allclose(w, torch.tensor([[1.0, 8.0, 0.0]]))
    lp = torch.log(torch.tensor([[1.5, 1.0, 1.0]]))
    adv = torch.ones(1, 3)
    plain, _ = algos.clipped_policy_loss(lp, torch.zeros(1, 3), adv, mask, clip=0.2)
    weighted, _ = algos.clipped_policy_loss(lp, torch.zeros(1, 3), adv, mask, clip=0.2, weights=w)
    assert float(plain) == pytest.approx(-(1.2 + 1.0) / 2)
    assert float(weighted) == pytest.approx(-(1.2 * 1.0 + 1.0 * 8.0) / 2)


def test_the_share_of_groups_whose_rewards_all_agree():
    from real.algos import zero_variance_share

    rewards = torch.tensor([1.0, 1.0, 0.0, 0.25, 0.5, 0.5, 0.0, 0.0])  # groups of 2: equal, unequal, equal, equal
    assert zero_variance_share(rewards, 2) == pytest.approx(0.75)
    assert zero_variance_share(rewards, 4) == 0.0
