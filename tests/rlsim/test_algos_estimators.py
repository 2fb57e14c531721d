"""Advantage estimators and loss variants priced as the compute they are (issue 58): which phases a step has for
each estimator family of verl v0.7.0 (rlsim.frameworks.verl.estimators), OpenRLHF and TRL, and ReMax's greedy
rollout, its numbers computed here by hand."""

from pathlib import Path

import pytest

from rlsim.errors import ScenarioError
from rlsim.frameworks.adapter import ImportConfigError
from rlsim.frameworks.config_import import import_config
from rlsim.frameworks.verl.estimators import ESTIMATORS
from rlsim.run.pipeline import run_pipeline
from rlsim.scenario import from_dict

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
VERL_GRPO = CONFIGS / "verl_grpo_qwen3_8b.yaml"  # train_batch_size 1024, rollout.n 5, use_kl_loss true
ORL_HYBRID = CONFIGS / "openrlhf_scripts" / "train_ppo_ray_hybrid_engine.sh"
P, G, PROMPT, RESPONSE = 8, 4, 100, 200


def verl(**sets):
    return from_dict(import_config(VERL_GRPO, "verl", sets).scenario)


def phases(s):
    """The phases a step runs (time above 0), and its timing."""
    records, _ = run_pipeline(s)
    timing = records[0]["timing_s"]
    return {k for k, v in timing.items() if v > 0}, timing, records[0]


@pytest.mark.parametrize("estimator", sorted(ESTIMATORS))
def test_every_verl_estimator_imports_as_its_passes(estimator):
    s = verl(**{"algorithm.adv_estimator": estimator})
    # only gae runs a critic (verl need_critic), only remax a greedy rollout; the reference pass is use_kl_loss's
    assert s.algorithm.name == ("ppo" if estimator == "gae" else "grpo")
    assert s.algorithm.greedy_baseline is (estimator == "remax")
    assert s.algorithm.kl_reference is True
    # B = 1024 x 5 trained; remax generates 1024 more (one greedy response per prompt)
    assert s.generated_per_step == 1024 * 5 + (1024 if estimator == "remax" else 0)


def test_rloo_imports_as_grpo_costs():
    """The issue's case: algorithm.adv_estimator=rloo was refused though it costs what grpo costs."""
    rloo, grpo = verl(**{"algorithm.adv_estimator": "rloo"}), verl(**{"algorithm.adv_estimator": "grpo"})
    assert rloo.algorithm == grpo.algorithm and rloo.workload == grpo.workload


def test_an_unknown_estimator_is_refused_naming_it_and_the_known_ones():
    with pytest.raises(ImportConfigError) as err:
        verl(**{"algorithm.adv_estimator": "grpoo"})
    text = str(err.value)
    assert "'grpoo'" in text and all(name in text for name in ESTIMATORS)


def test_critic_enable_decides_the_critic_whatever_the_estimator():
    assert verl(**{"algorithm.adv_estimator": "grpo", "critic.enable": True}).algorithm.name == "ppo"
    assert verl(**{"algorithm.adv_estimator": "gae", "critic.enable": False}).algorithm.name == "grpo"
    with pytest.raises(ImportConfigError, match="critic.enable"):
        verl(**{"critic.enable": "yes"})


@pytest.mark.parametrize(
    "key, value", [("policy_loss.loss_mode", "gspo"), ("loss_agg_mode", "seq-mean-token-sum-norm")]
)
def test_grpo_loss_variants_price_as_vanilla_with_a_note(key, value):
    full = "actor_rollout_ref.actor." + key
    imported = import_config(VERL_GRPO, "verl", {full: value})
    assert from_dict(imported.scenario).algorithm == verl().algorithm
    assert any(f"{full} {value}" in a for a in imported.scenario["assumptions"])
    with pytest.raises(ImportConfigError, match=full):
        verl(**{full: "gsp0"})


def test_verl_reward_model_scores_on_its_own_pool():
    s = verl(
        **{
            "reward_model.enable": True,
            "reward_model.model.path": "Qwen2.5-1.5B",
            "reward_model.enable_resource_pool": True,
            "reward_model.n_gpus_per_node": 2,
            "reward_model.nnodes": 1,
        }
    )
    assert s.reward.model.name == "Qwen2.5-1.5B" and s.reward.num_gpus == 2
    assert verl().reward.model is None  # a rule on the CPU


@pytest.mark.parametrize(
    "estimator, critic", [("gae", True), ("rloo", False), ("reinforce_baseline", False), ("dr_grpo", False)]
)
def test_openrlhf_estimators_run_a_critic_for_gae_only(estimator, critic):
    sets = {"actor.model_name_or_path": "Llama-3.1-8B", "algo.advantage.estimator": estimator}
    sets["rollout.n_samples_per_prompt"] = 4
    s = from_dict(import_config(ORL_HYBRID, "openrlhf", sets).scenario)
    assert (s.algorithm.name == "ppo") is critic


def scenario(**algorithm):
    return from_dict(
        {
            "model": "Qwen2.5-1.5B",
            "hardware": {"gpu": "H100-SXM", "num_gpus": 2},
            "workload": {
                "prompts_per_step": P,
                "group_size": G,
                "prompt_length": {"dist": "fixed", "tokens": PROMPT},
                "response_length": {"dist": "fixed", "tokens": RESPONSE},
                "max_prompt_tokens": 512,
                "max_response_tokens": 512,
            },
            "algorithm": algorithm,
            "run": {"steps": 2},
        }
    )


def test_phases_by_estimator_family():
    grpo, _, _ = phases(scenario())
    ppo, _, _ = phases(scenario(name="ppo"))
    kl, _, _ = phases(scenario(kl_reference=True))
    assert grpo == {"rollout", "reward", "old_logprob", "train_actor", "weight_sync"}
    assert ppo == grpo | {"values", "train_critic"}  # gae: the critic's values pass and its training
    assert kl == grpo | {"ref_logprob"}  # a KL term: the reference model's pass


def test_remax_adds_a_greedy_call_of_p_requests_and_scores_it():
    _, base, base_rec = phases(scenario())
    _, remax, rec = phases(scenario(greedy_baseline=True))
    # the greedy call alone: with G = 1 a ReMax step is two equal calls of P single requests (fixed lengths)
    s1 = from_dict({**scenario().to_dict(), "workload": {**scenario().to_dict()["workload"], "group_size": 1},
                    "algorithm": {"greedy_baseline": True}})  # fmt: skip
    _, one, _ = phases(s1)
    greedy_call = one["rollout"] / 2
    assert remax["rollout"] == pytest.approx(base["rollout"] + greedy_call, rel=1e-12)
    # the CPU reward scores P x G + P samples: o + s x (32 + 8)
    c = scenario().costs
    assert remax["reward"] == pytest.approx(c.reward_overhead_s + c.reward_s_per_sample * (P * G + P), rel=1e-12)
    # log-probs and training see the P x G sampled responses only
    for phase in ("old_logprob", "train_actor", "weight_sync"):
        assert remax[phase] == pytest.approx(base[phase], rel=1e-12)
    assert rec["responses"] == P * G and rec["response_tokens"] == (P * G + P) * RESPONSE


def test_remax_is_refused_on_an_async_schedule():
    raw = scenario().to_dict()
    raw.update(algorithm={"greedy_baseline": True}, schedule={"mode": "async", "max_staleness": 1})
    raw["hardware"] = {"gpu": "H100-SXM", "num_gpus": 2, "placement": "separate", "rollout_gpus": 1, "train_gpus": 1}
    with pytest.raises(ScenarioError, match="greedy_baseline"):
        from_dict(raw)


def test_batch_whitened_reinforce_runs_one_response_per_prompt():
    """REINFORCE++ whitens over the batch (verl core_algos.py:580-616; OpenRLHF asserts n > 1 only for the group
    estimators, train_ppo_ray.py:612): rollout.n 1 imports, as remax does (its baseline the greedy response); a group
    estimator at n 1 is refused."""
    for estimator in ("reinforce_plus_plus", "remax"):
        s = verl(**{"algorithm.adv_estimator": estimator, "actor_rollout_ref.rollout.n": 1})
        assert s.workload.group_size == 1 and s.algorithm.group_baseline is False
    with pytest.raises(ImportConfigError, match="group_size: 1 must be at least 2"):
        verl(**{"algorithm.adv_estimator": "rloo", "actor_rollout_ref.rollout.n": 1})
    sets = {"actor.model_name_or_path": "Llama-3.1-8B", "algo.advantage.estimator": "reinforce"}
    s = from_dict(import_config(ORL_HYBRID, "openrlhf", sets).scenario)  # n_samples_per_prompt 1
    assert (s.algorithm.name, s.workload.group_size, s.algorithm.group_baseline) == ("grpo", 1, False)


def test_openrlhf_gspo_is_noted_lora_read_and_a_bad_loss_refused():
    sets = {"actor.model_name_or_path": "Llama-3.1-8B", "actor.policy_loss_type": "gspo", "ds.lora.rank": 16}
    got = import_config(ORL_HYBRID, "openrlhf", sets).scenario
    assert any("gspo: sequence-level ratios" in a for a in got["assumptions"])
    assert got["training"]["lora_rank"] == 16  # LoRA is a training mode (rlsim/trainer/lora.py), not a note
    with pytest.raises(ImportConfigError, match="is not ppo or gspo"):
        import_config(ORL_HYBRID, "openrlhf", {**sets, "actor.policy_loss_type": "cispo"})


NEMO_BASE = CONFIGS / "nemo_rl" / "grpo_math_1B.yaml"


@pytest.mark.parametrize("name", ["grpo", "gdpo", "reinforce_plus_plus"])
def test_nemo_rl_estimators_are_critic_free(name):
    s = from_dict(import_config(NEMO_BASE, "nemo-rl", {"grpo.adv_estimator.name": name}).scenario)
    assert s.algorithm.name == "grpo" and s.algorithm.critic_model is None


def test_nemo_rl_opd_and_unknown_estimators_are_refused():
    with pytest.raises(ImportConfigError, match="opd .on-policy distillation. runs teacher models"):
        import_config(NEMO_BASE, "nemo-rl", {"grpo.adv_estimator.name": "opd"})
    with pytest.raises(ImportConfigError, match="'gae' is not one of NeMo RL v0.7.0's"):
        import_config(NEMO_BASE, "nemo-rl", {"grpo.adv_estimator.name": "gae"})


def test_nemo_rl_nemo_gym_is_priced_as_the_cpu_reward_with_a_note():
    imported = import_config(NEMO_BASE, "nemo-rl", {"env.should_use_nemo_gym": True})
    assert from_dict(imported.scenario).reward.model is None
    assert any("Nemo Gym's resource servers" in a for a in imported.scenario["assumptions"])


def test_an_exponent_without_a_dot_is_a_number_as_omegaconf_reads_it():
    """PyYAML reads a plain 3e-6 as a string; OmegaConf (verl's and NeMo RL's loader) as a float."""
    s = from_dict(import_config(NEMO_BASE, "nemo-rl", {"policy.optimizer.kwargs.lr": "3e-6"}).scenario)
    assert s.learning.lr0 == pytest.approx(3e-6)
