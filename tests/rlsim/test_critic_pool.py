"""A PPO critic on GPUs of its own (algorithm.critic_gpus, OpenRLHF's default placement; issue 29): its values pass
runs beside the actor's log-prob passes and its training beside the actor's, priced on its own pool, its state off
the training GPUs, its GPUs counted."""

import pytest

from rlsim.errors import ScenarioError
from rlsim.run.pipeline import run_pipeline
from rlsim.run.pools import CRITIC_POOL, TRAIN_POOL, pool_gpus
from rlsim.scenario import from_dict

BASE = {
    "model": "Qwen2.5-1.5B",
    "hardware": {"gpu": "H100-SXM", "num_gpus": 4, "placement": "separate", "rollout_gpus": 2, "train_gpus": 2},
    "workload": {
        "prompts_per_step": 16,
        "group_size": 4,
        "prompt_length": {"dist": "fixed", "tokens": 128},
        "response_length": {"dist": "fixed", "tokens": 256},
        "max_prompt_tokens": 512,
        "max_response_tokens": 512,
    },
    "algorithm": {"name": "ppo", "kl_reference": True},
    "schedule": {"mode": "sync-separate"},
    "run": {"steps": 2},
}


def scenario(**algorithm):
    return from_dict({**BASE, "algorithm": {**BASE["algorithm"], **algorithm}})


def test_the_critic_pool_runs_beside_the_actor():
    """Same GPUs for the critic as the actor: each of its passes costs what it did on the training pool, and the step
    loses them, experience and training each taking the longer of the two sides."""
    (one,), (own,) = (run_pipeline(scenario())[0][-1:], run_pipeline(scenario(critic_gpus=2))[0][-1:])
    t1, t2 = one["timing_s"], own["timing_s"]
    for phase in ("values", "train_critic", "old_logprob", "ref_logprob", "train_actor"):
        assert t2[phase] == pytest.approx(t1[phase], rel=1e-12)
    actor_fwd = t2["old_logprob"] + t2["ref_logprob"]
    saved = t1["values"] + t1["train_critic"]
    saved -= max(0.0, t2["values"] - actor_fwd) + max(0.0, t2["train_critic"] - t2["train_actor"])
    assert one["step_time_s"] - own["step_time_s"] == pytest.approx(saved, rel=1e-9)


def test_the_critic_pool_prices_its_own_gpus_and_is_counted():
    s = scenario(critic_gpus=1)
    (rec,) = run_pipeline(s)[0][-1:]
    (two,) = run_pipeline(scenario(critic_gpus=2))[0][-1:]
    # half the GPUs: twice the work per GPU, the fixed per-optimizer-step overhead (costs) the same
    c = s.costs.train_step_overhead_s
    ratio = (rec["timing_s"]["train_critic"] - c) / (two["timing_s"]["train_critic"] - c)
    assert ratio == pytest.approx(2.0, rel=0.15)
    assert s.total_gpus == 5 and pool_gpus(s) == {"rollout_pool": 2, TRAIN_POOL: 2, CRITIC_POOL: 1}
    _, spans = run_pipeline(s)
    assert {sp.phase.value for sp in spans if sp.track == CRITIC_POOL} == {"values", "train_critic"}


def test_a_critic_pool_takes_the_critic_off_the_training_gpus():
    """Qwen2.5-7B policy and critic on 2 H100s: with the critic's Adam state beside the actor's they do not fit;
    with the critic on 2 GPUs of its own each side does."""
    big = {**BASE, "model": "Qwen2.5-7B"}
    with pytest.raises(ScenarioError, match="with the critic"):
        from_dict(big)
    from_dict({**big, "algorithm": {**BASE["algorithm"], "critic_gpus": 2}})
    with pytest.raises(ScenarioError, match="algorithm.critic_gpus.*holds the critic"):
        from_dict({**big, "algorithm": {**BASE["algorithm"], "critic_gpus": 1}})


def test_a_critic_pool_without_a_critic_or_a_layout_that_divides_it_is_refused():
    with pytest.raises(ScenarioError, match="no critic"):
        from_dict({**BASE, "algorithm": {"name": "grpo", "critic_gpus": 2}})
    with pytest.raises(ScenarioError, match="multiple of the training layout"):
        from_dict(
            {
                **BASE,
                "algorithm": {**BASE["algorithm"], "critic_gpus": 3},
                "training": {"backend": "megatron", "tensor_parallel_size": 2},
            }
        )


def test_the_reference_pool_runs_beside_the_actor_and_is_counted():
    """OpenRLHF's reference model on GPUs of its own (algorithm.reference_gpus): its log-prob pass costs what it
    did on the training pool (same GPU count) and runs beside the actor's old log-probs, so the step loses it; its
    weights leave the training GPUs' memory check; its GPUs count."""
    from rlsim.run.pools import REFERENCE_POOL

    grpo = {"name": "grpo", "kl_reference": True}
    one = from_dict({**BASE, "algorithm": grpo})
    own = from_dict({**BASE, "algorithm": {**grpo, "reference_gpus": 2}})
    (r1,), (r2,) = run_pipeline(one)[0][-1:], run_pipeline(own)[0][-1:]
    assert r2["timing_s"]["ref_logprob"] == pytest.approx(r1["timing_s"]["ref_logprob"], rel=1e-12)
    saved = r1["timing_s"]["ref_logprob"] - max(0.0, r2["timing_s"]["ref_logprob"] - r2["timing_s"]["old_logprob"])
    assert r1["step_time_s"] - r2["step_time_s"] == pytest.approx(saved, rel=1e-9)
    assert own.total_gpus == 6 and pool_gpus(own)[REFERENCE_POOL] == 2
    with pytest.raises(ScenarioError, match="no reference pass"):
        from_dict({**BASE, "algorithm": {"name": "grpo", "reference_gpus": 2}})


def test_openrlhf_places_the_reference_on_its_own_gpus_unless_colocated():
    """OpenRLHF's slurm example with the reference no longer colocated with the actor: ref.num_nodes x
    ref.num_gpus_per_node (1 x 4) become the reference pool; colocated (the file as published) it stays on the
    actor's GPUs."""
    from pathlib import Path

    from rlsim.frameworks.config_import import import_config

    path = Path(__file__).parent / "fixtures" / "configs" / "openrlhf_ppo_llama3_8b_slurm.args"
    sets = {"actor.model_name_or_path": "Llama-3.1-8B"}
    published = import_config(path, "openrlhf", sets).scenario["algorithm"]
    assert "reference_gpus" not in published
    apart = import_config(path, "openrlhf", {**sets, "train.colocate_actor_ref": False}).scenario
    assert apart["algorithm"]["reference_gpus"] == 4
    assert any("reference model on 4 GPUs of its own" in a for a in apart["assumptions"])


def test_a_critic_on_the_reward_models_gpus_follows_its_forward():
    """OpenRLHF colocate_critic_reward: the critic's passes on the reward model's GPUs (counted once), its values
    after the reward model's forward there, its training beside the actor's."""
    from rlsim.run.pools import REWARD_POOL

    reward = {"model": "Qwen2.5-1.5B", "num_gpus": 2}
    s = from_dict({**BASE, "reward": reward, "algorithm": {**BASE["algorithm"], "critic_with_reward": True}})
    assert s.total_gpus == 6 and CRITIC_POOL not in pool_gpus(s)
    records, spans = run_pipeline(s)
    on_reward = sorted((sp.start_s, sp.phase.value) for sp in spans if sp.track == REWARD_POOL and sp.step == 2)
    assert [p for _, p in on_reward] == ["reward", "values", "train_critic"]
    with pytest.raises(ScenarioError, match="critic_with_reward"):
        from_dict({**BASE, "algorithm": {**BASE["algorithm"], "critic_with_reward": True}})  # no reward GPUs
