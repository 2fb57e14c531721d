"""verl's advantage estimators, policy losses and reward model as the compute each needs (read at volcengine/verl
v0.7.0; V = verl/trainer/ppo):

* ``algorithm.adv_estimator`` names a function of ``V/core_algos.py``'s registry (``AdvantageEstimator``, lines
  88-107: gae, grpo, reinforce_plus_plus, reinforce_plus_plus_baseline, remax, rloo, opo, grpo_passk, gpg,
  rloo_vectorized, grpo_vectorized). Each turns the step's scores (and, for gae, the critic's values) into
  advantages on the CPU/driver: the estimator itself costs nothing on the GPUs. What it changes is the passes:
  - a critic exists when ``critic.enable`` says so, else only for gae (``V/utils.py:86-97`` need_critic): its values
    pass and its training (rlsim algorithm ppo);
  - remax generates the step's prompts once more with ``do_sample`` false, scores those greedy responses and uses
    them as the baseline (``V/ray_trainer.py:1368-1400``): one more generation call of P requests after the sampled
    one, and P more samples scored (rlsim algorithm.greedy_baseline);
  - every other estimator is critic-free and prices as grpo (their group statistics are arithmetic on P x G
    scalars).
* the reference model's log-prob pass exists when ``actor.use_kl_loss`` or ``algorithm.use_kl_in_reward``
  (ppo_trainer.yaml:21); neither the estimator nor the loss adds one.
* ``actor.policy_loss.loss_mode`` (vanilla, gspo, sapo, gpg, clip_cov, kl_cov, geo_mean, cispo, bypass_mode:
  ``V/core_algos.py`` register_policy_loss, lines 906-1811) and ``actor.loss_agg_mode`` (token-mean,
  seq-mean-token-sum, seq-mean-token-mean, seq-mean-token-sum-norm: Dr. GRPO's; ``agg_loss`` lines 772-830) change
  the loss arithmetic on the log-probs the actor's forward already gives: the same forward and backward, priced as
  vanilla with a note.
* ``reward_model.enable`` (reward_model.yaml): a reward model (``reward_model.model.path``) scores every sample with
  a forward pass, on the actor's pool, or with ``enable_resource_pool`` on ``n_gpus_per_node x nnodes`` GPUs of its
  own (rlsim's ``reward`` section); else the rule-based reward on the CPU.
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.adapter import ImportConfigError, Row, Source
from rlsim.frameworks.common import as_int, resolve_model
from rlsim.workload import keep_prior

A = "actor_rollout_ref.actor."
RM = "reward_model."

# estimator -> (critic by default, greedy baseline rollout): V/core_algos.py:88-107, V/utils.py:86-97,
# V/ray_trainer.py:1368. BATCH: baselines that are not the group's (reinforce_plus_plus whitens over the batch,
# core_algos.py:580-616; remax subtracts the greedy response's score, :619-652): one response per prompt is valid
BATCH = ("reinforce_plus_plus", "remax")
ESTIMATORS: dict[str, tuple[bool, bool]] = {
    "gae": (True, False),
    "grpo": (False, False),
    "grpo_vectorized": (False, False),
    "grpo_passk": (False, False),
    "rloo": (False, False),
    "rloo_vectorized": (False, False),
    "reinforce_plus_plus": (False, False),
    "reinforce_plus_plus_baseline": (False, False),
    "opo": (False, False),
    "gpg": (False, False),
    "remax": (False, True),
}
LOSS_MODES = ("vanilla", "gspo", "sapo", "gpg", "clip_cov", "kl_cov", "geo_mean", "cispo", "bypass_mode")
AGG_MODES = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")

TABLE: tuple[Row, ...] = (
    Row("critic.enable", None, "algorithm.name", "None: a critic for gae only; true: ppo (critic) for any estimator"),
    Row(A + "policy_loss.loss_mode", "vanilla", "(a note)", "gspo, clip_cov, kl_cov, ...: same passes as vanilla"),
    Row(A + "loss_agg_mode", "token-mean", "(a note)", "Dr. GRPO's seq-mean-token-sum-norm: same passes"),
    Row(RM + "enable", False, "reward.model", "true: a reward model's forward over every sample"),
    Row(
        RM + "model.path",
        "~/models/FsfairX-LLaMA3-RM-v0.1",
        "reward.model",
        "with enable: a catalog name or the policy's",
    ),
    Row(RM + "enable_resource_pool", False, "reward.num_gpus", "true: its own n_gpus_per_node x nnodes"),
    Row(RM + "n_gpus_per_node", 0, "reward.num_gpus", "with enable_resource_pool"),
    Row(RM + "nnodes", 0, "reward.num_gpus", "with enable_resource_pool"),
)


def estimator(src: Source, notes: list[str]) -> dict[str, Any]:
    """The ``algorithm`` fields the estimator and losses decide: ``name`` (ppo where a critic runs), and
    ``greedy_baseline`` for remax. An unknown estimator is refused naming the known ones."""
    name = src.get("algorithm.adv_estimator")
    if name not in ESTIMATORS:
        raise ImportConfigError(
            f"algorithm.adv_estimator: {name!r} is not one of verl v0.7.0's estimators ({', '.join(ESTIMATORS)}); "
            "a custom estimator registered in your code costs what grpo costs: --set algorithm.adv_estimator=grpo"
        )
    critic_default, greedy = ESTIMATORS[name]
    enable = src.get("critic.enable")
    if enable is not None and not isinstance(enable, bool):
        raise ImportConfigError(f"critic.enable: {enable!r} must be true, false or null; fix it or use --set")
    critic = critic_default if enable is None else enable
    if name != "gae" and critic:
        notes.append(f"critic.enable true with algorithm.adv_estimator {name}: the critic runs (values and training)")
    elif name == "gae" and not critic:
        notes.append("critic.enable false with algorithm.adv_estimator gae: no critic runs (verl need_critic)")
    if name not in ("gae", "grpo"):
        notes.append(
            f"algorithm.adv_estimator {name}: advantages from the step's scores on the driver, "
            + ("plus one greedy response per prompt in a call of its own (ReMax's baseline)" if greedy else
               "critic-free: the passes of grpo")
        )  # fmt: skip
    _losses(src, notes)
    out: dict[str, Any] = {"name": "ppo" if critic else "grpo"}
    if greedy:
        out["greedy_baseline"] = True
    if name in BATCH:
        out["group_baseline"] = False
    return out


def _losses(src: Source, notes: list[str]) -> None:
    for key, known in ((A + "policy_loss.loss_mode", LOSS_MODES), (A + "loss_agg_mode", AGG_MODES)):
        value = src.get(key)
        if value not in known:
            raise ImportConfigError(f"{key}: {value!r} is not one of verl v0.7.0's ({', '.join(known)}); fix it")
        if src.given(key) and value != known[0]:
            notes.append(f"{key} {value}: the loss's arithmetic only; the same forward and backward as {known[0]}")


def reward(src: Source, policy: str, notes: list[str]) -> dict[str, Any] | None:
    """The ``reward`` section of ``reward_model.enable``: the model, and its own GPUs with enable_resource_pool."""
    if not src.get(RM + "enable"):
        return None
    path = src.get(RM + "model.path")
    try:
        model, model_notes = resolve_model(path, RM + "model.path")
        notes += [c.replace("model:", "reward model:", 1) for c in model_notes]
    except ImportConfigError:
        model = policy
        notes.append(
            f"reward model {path!r} is not in rlsim's catalog: priced as the policy's architecture; --set "
            f"{RM}model.path=NAME for another"
        )
    out: dict[str, Any] = {"model": model}
    if src.get(RM + "enable_resource_pool"):
        out["num_gpus"] = as_int(src, RM + "n_gpus_per_node") * as_int(src, RM + "nnodes")
        if out["num_gpus"] < 1:
            raise ImportConfigError(
                f"{RM}enable_resource_pool: true with {RM}n_gpus_per_node x nnodes = 0; give it GPUs or set it false"
            )
        notes.append(f"reward model on {out['num_gpus']} GPUs of its own ({RM}enable_resource_pool)")
    else:
        notes.append("reward model on the actor's GPUs, between the rollout and the log-prob passes")
    return out


FG = "algorithm.filter_groups."
FILTER_TABLE: tuple[Row, ...] = (
    Row(FG + "enable", False, "algorithm.dynamic_sampling", "DAPO rounds (recipe.dapo.main_dapo); keep rate assumed"),
    Row(FG + "max_num_gen_batches", 0, "algorithm.dynamic_sampling.max_gen_batches", "0: no limit"),
    Row(FG + "metric", None, "(a note)", "the score whose spread keeps a group: acc, score, seq_reward, ..."),
    Row("data.gen_batch_size", None, "algorithm.dynamic_sampling.batch_multiplier", "None: train_batch_size; / it"),
)
UNLIMITED_ROUNDS = 10_000  # max_num_gen_batches <= 0 keeps generating (dapo_ray_trainer.py:274): rlsim's bound


def filter_groups(src: Source, notes: list[str]) -> dict[str, Any] | None:
    """``algorithm.dynamic_sampling`` of verl's DAPO trainer (volcengine/verl@v0.7.0 recipe/dapo/dapo_ray_trainer.py
    :229-288): each round generates ``data.gen_batch_size`` prompts (recipe/dapo/config/dapo_trainer.yaml:10, the
    train batch by default), n responses each, scores them and keeps the groups whose ``filter_groups.metric``
    varies, until ``data.train_batch_size`` groups are kept (the surplus cut); more than ``max_num_gen_batches``
    rounds stop the run (0: no limit). No config states the keep rate: rlsim.workload.keep_prior's, marked assumed.
    None without ``filter_groups.enable``."""
    if not src.get(FG + "enable"):
        return None
    train = as_int(src, "data.train_batch_size")
    gen = as_int(src, "data.gen_batch_size") if src.get("data.gen_batch_size") is not None else train
    if gen < train:
        raise ImportConfigError(
            f"data.gen_batch_size: {gen} below data.train_batch_size ({train}) is not modelled (rlsim's rounds hold "
            "the train batch or more); raise it to the train batch or above"
        )
    limit = src.get(FG + "max_num_gen_batches")
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise ImportConfigError(f"{FG}max_num_gen_batches: {limit!r} is not a whole number (0: no limit); fix it")
    notes.append(f"{FG}metric {src.get(FG + 'metric')}: a group is kept when its scores differ (any metric alike)")
    if src.given(FG + "enable"):
        notes.append(f"{FG}enable: verl filters in recipe.dapo.main_dapo (verl.trainer.main_ppo does not read it)")
    notes.append(keep_prior.note(FG + "enable"))
    return keep_prior.assumed(
        {"batch_multiplier": gen / train, "max_gen_batches": limit if limit > 0 else UNLIMITED_ROUNDS}
    )
