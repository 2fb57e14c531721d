"""Dynamic sampling (DAPO) and a reward model on GPUs (issue 27): the generation rounds a keep rate gives, what each
phase of a step then sees, and a reward model's forward pass, every expected number computed here by hand."""

import dataclasses

import pytest

from rlsim.errors import ScenarioError
from rlsim.run.pipeline import run_pipeline
from rlsim.scenario import DynamicSampling, from_dict

P, G, PROMPT, RESPONSE = 8, 4, 100, 200  # fixed lengths: every generation call of a size is the same


def scenario(**sections):
    raw = {
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
        "run": {"steps": 2},
    }
    for key, value in sections.items():
        raw[key] = {**raw.get(key, {}), **value}
    return from_dict(raw)


def first_step(s):
    records, spans = run_pipeline(s)
    return records[0]["timing_s"], records[0], spans


@pytest.mark.parametrize(
    "keep, multiplier, rounds",
    [(1.0, 1.0, 1), (0.5, 1.0, 2), (0.4, 1.0, 3), (0.34, 3.0, 1), (0.2, 3.0, 2), (0.1, 1.5, 7)],
)
def test_rounds_until_the_kept_groups_fill_the_batch(keep, multiplier, rounds):
    # the first r with r x multiplier x keep >= 1: e.g. 0.4 -> 0.4, 0.8, 1.2 -> 3 rounds
    assert DynamicSampling(keep_rate=keep, batch_multiplier=multiplier).rounds() == rounds


def test_extra_rounds_repeat_generation_and_scoring_not_training():
    base, base_rec, _ = first_step(scenario())
    ds, ds_rec, _ = first_step(scenario(algorithm={"dynamic_sampling": {"keep_rate": 0.4}}))
    # three identical calls (fixed lengths, each with its dispatch overhead) one after another
    assert ds["rollout"] == pytest.approx(3 * base["rollout"], rel=1e-12)
    # the CPU reward scores all 3 x P x G samples: o + s x samples
    s = scenario().costs
    assert base["reward"] == pytest.approx(s.reward_overhead_s + s.reward_s_per_sample * P * G, rel=1e-12)
    assert ds["reward"] == pytest.approx(s.reward_overhead_s + s.reward_s_per_sample * 3 * P * G, rel=1e-12)
    # log-probs and training see the P x G kept samples only
    for phase in ("old_logprob", "train_actor", "weight_sync"):
        assert ds[phase] == pytest.approx(base[phase], rel=1e-12)
    assert ds_rec["responses"] == base_rec["responses"] == P * G
    assert ds_rec["response_tokens"] == 3 * P * G * RESPONSE  # what the engines generated
    s3 = scenario(algorithm={"dynamic_sampling": {"keep_rate": 0.4, "batch_multiplier": 1.5}})
    assert s3.generated_per_step == 12 * G * 2  # ceil(1.5 x 8) prompts per round, 2 rounds (0.6, 1.2)


def test_the_summary_reads_the_rounds():
    from rlsim.run.simulation import simulate

    summary = simulate(scenario(algorithm={"dynamic_sampling": {"keep_rate": 0.5}})).summary()
    assert summary["mean_response_tokens"] == pytest.approx(RESPONSE)  # over the 2 P G generated, not P G
    base = simulate(scenario()).summary()
    # trained tokens per second: the same tokens as without the filter, over a longer step
    ratio = base["tokens_per_s_per_gpu"] / summary["tokens_per_s_per_gpu"]
    assert ratio == pytest.approx(summary["step_time_s"] / base["step_time_s"], rel=1e-9)


def test_a_batch_multiplier_generates_bigger_rounds():
    # multiplier 2, keep 0.3: 2 rounds (0.6, 1.2) of 2P prompts each, like two steps of a 2P-prompt workload
    ds, _, _ = first_step(scenario(algorithm={"dynamic_sampling": {"keep_rate": 0.3, "batch_multiplier": 2}}))
    double, _, _ = first_step(scenario(workload={"prompts_per_step": 2 * P}))
    assert ds["rollout"] == pytest.approx(2 * double["rollout"], rel=1e-12)


def test_streaming_replacement_is_one_call_of_p_over_keep_groups():
    """OpenRLHF's dynamic filtering: each dropped group sends one new prompt at once, so a step generates about
    P / keep groups in one stream: ceil(8 / 0.3) = 27 prompts, priced like one call of a 27-prompt workload; the
    reward scores all 27 x G, the trainer sees P x G. Rounds of whole batches at the same keep rate (4 waves of 8)
    take longer: each wave waits for its stragglers and the last generates groups the batch does not need."""
    rep = {"dynamic_sampling": {"keep_rate": 0.3, "mode": "replace"}}
    s = scenario(algorithm=rep)
    assert s.algorithm.dynamic_sampling.rounds() == 1 and s.generated_per_step == 27 * G
    ds, rec, _ = first_step(s)
    one, _, _ = first_step(scenario(workload={"prompts_per_step": 27}))
    base, base_rec, _ = first_step(scenario())
    assert ds["rollout"] == pytest.approx(one["rollout"], rel=1e-12)
    c = s.costs
    assert ds["reward"] == pytest.approx(c.reward_overhead_s + c.reward_s_per_sample * 27 * G, rel=1e-12)
    assert ds["train_actor"] == pytest.approx(base["train_actor"], rel=1e-12) and rec["responses"] == P * G
    rounds, _, _ = first_step(scenario(algorithm={"dynamic_sampling": {"keep_rate": 0.3}}))
    assert rounds["rollout"] > ds["rollout"]


def test_streaming_replacement_runs_under_an_async_schedule():
    """OpenRLHF's async trainer filters too: the engines hold each batch's replacements in the stream."""
    sep = {"placement": "separate", "rollout_gpus": 1, "train_gpus": 1}
    s = scenario(
        algorithm={"dynamic_sampling": {"keep_rate": 0.5, "mode": "replace"}},
        hardware=sep,
        schedule={"mode": "async", "max_staleness": 1},
    )
    records, _ = run_pipeline(s)
    # the engines see what a 2P-prompt workload gives them (ceil(8 / 0.5) = 16 prompts per batch)
    double, _ = run_pipeline(
        scenario(hardware=sep, schedule={"mode": "async", "max_staleness": 1}, workload={"prompts_per_step": 2 * P})
    )
    assert records[-1]["responses"] == P * G and double[-1]["responses"] == 2 * P * G
    for rec, ref in zip(records, double):
        assert rec["timing_s"]["rollout"] == pytest.approx(ref["timing_s"]["rollout"], rel=1e-12)
    # each step scores what its own batch generated (16 prompts' groups), not its window's two batches
    c = s.costs
    for rec in records:
        assert rec["timing_s"]["reward"] == pytest.approx(c.reward_overhead_s + c.reward_s_per_sample * 2 * P * G)


def test_dynamic_sampling_beyond_its_round_limit_or_async_is_refused():
    with pytest.raises(ScenarioError, match="max_gen_batches"):
        scenario(algorithm={"dynamic_sampling": {"keep_rate": 0.05, "max_gen_batches": 10}})  # 20 rounds
    with pytest.raises(ScenarioError, match="synchronous schedules only"):
        scenario(
            algorithm={"dynamic_sampling": {"keep_rate": 0.5}},
            hardware={"placement": "separate", "rollout_gpus": 1, "train_gpus": 1},
            schedule={"mode": "async", "max_staleness": 1},
        )
    with pytest.raises(ScenarioError, match="keep_rate"):
        scenario(algorithm={"dynamic_sampling": {"keep_rate": 0}})


def reward_model_seconds(s, gpus):
    """Forward of the reward model (dense, TP 1): (2 N T + 0.5 x 4 L H d x sum of squares) over the GPUs' bf16
    peak x forward efficiency x the GPU's train factor, plus the pass overhead."""
    m, gpu, c = s.reward.model, s.hardware.gpu, s.costs
    tokens = P * G * (PROMPT + RESPONSE)
    squares = P * G * (PROMPT + RESPONSE) ** 2
    flops = 2 * m.num_active_params * tokens + 0.5 * 4 * m.num_layers * m.num_attention_heads * m.head_dim * squares
    peak = gpus * gpu.bf16_flops_per_s * c.forward_compute_efficiency * gpu.train_efficiency_factor
    return c.forward_overhead_s + flops / peak


def test_a_reward_model_on_its_own_gpus():
    s = scenario(reward={"model": "Qwen2.5-7B", "num_gpus": 4})
    timing, record, spans = first_step(s)
    assert timing["reward"] == pytest.approx(reward_model_seconds(s, 4), rel=1e-12)
    assert {sp.track for sp in spans if sp.phase.value == "reward"} == {"reward_pool"}
    assert set(record["utilization"]) == {"gpus", "reward_pool"}
    assert s.total_gpus == 6  # priced in the GPU-hours with the policy's 2


def test_a_reward_model_on_the_training_gpus():
    s = scenario(reward={"model": "Qwen2.5-7B"})
    timing, _, spans = first_step(s)
    assert timing["reward"] == pytest.approx(reward_model_seconds(s, 2), rel=1e-12)
    assert {sp.track for sp in spans if sp.phase.value == "reward"} == {"gpus"}
    assert s.total_gpus == 2
    # with dynamic sampling the reward model scores every round's samples: 2 rounds, twice the tokens
    ds = dataclasses.replace(s, algorithm=dataclasses.replace(s.algorithm, dynamic_sampling=DynamicSampling(0.5)))
    t2, _, _ = first_step(ds)
    once = reward_model_seconds(s, 2) - s.costs.forward_overhead_s
    assert t2["reward"] == pytest.approx(s.costs.forward_overhead_s + 2 * once, rel=1e-12)


def test_tensor_parallel_reward_model_adds_its_all_reduces_and_must_fit():
    s1 = scenario(reward={"model": "Qwen2.5-7B", "num_gpus": 4})
    s2 = scenario(reward={"model": "Qwen2.5-7B", "num_gpus": 4, "tensor_parallel_size": 2})
    t1, t2 = first_step(s1)[0]["reward"], first_step(s2)[0]["reward"]
    m, c, gpu = s2.reward.model, s2.costs, s2.hardware.gpu
    # two copies of TP 2: each all-reduces its half of the hidden states twice per layer, as one ring over 2 GPUs
    # of 2 x the bytes: (2 - 1) / 2 x bytes / NVLink + latency
    nbytes = 2 * (P * G * (PROMPT + RESPONSE) / 2) * m.hidden_size * 2
    per_op = 0.5 * nbytes / (gpu.link_bandwidth_bytes_per_s * c.link_efficiency) + c.collective_latency_s
    assert t2 - t1 == pytest.approx(2 * m.num_layers * per_op, rel=1e-9)
    with pytest.raises(ScenarioError, match="weights per GPU"):
        scenario(reward={"model": "Llama-3.1-70B", "num_gpus": 2})
    with pytest.raises(ScenarioError, match="must divide"):
        scenario(reward={"model": "Qwen2.5-7B", "num_gpus": 3, "tensor_parallel_size": 2})
    with pytest.raises(ScenarioError, match="needs reward.model"):
        scenario(reward={"num_gpus": 2})


def test_the_published_dapo_row_maps_with_a_keep_rate_and_names_it_without():
    from calibrate.published.steps import dev_set_path, read_rows
    from rlsim.frameworks.nemo_rl.recipe import NotExpressible, scenario_from_recipe

    row = read_rows([dev_set_path()]).iloc[4].to_dict()
    assert row["recipe_dynamic_sampling"] in (True, "True")
    with pytest.raises(NotExpressible, match="dynamic_sampling_keep_rate column"):
        scenario_from_recipe(row)
    s = from_dict(scenario_from_recipe({**row, "dynamic_sampling_keep_rate": 0.25}))
    ds = s.algorithm.dynamic_sampling
    # the recipe's batch_multiplier 3 and limit 10 (dapo-deepseek-v3-64n8g.yaml at v0.5.0): 0.75, 1.5 -> 2 rounds
    assert (ds.batch_multiplier, ds.max_gen_batches, ds.rounds()) == (3.0, 10, 2)


def test_the_memory_check_counts_every_round():
    from rlsim.run.simulation import footprint

    one = footprint(scenario())
    three = footprint(scenario(algorithm={"dynamic_sampling": {"keep_rate": 0.4}}))
    assert three.responses_per_step == 3 * one.responses_per_step == 3 * P * G
    assert three.memory_bytes > one.memory_bytes
