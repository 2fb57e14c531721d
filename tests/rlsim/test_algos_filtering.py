"""Dynamic filtering without a keep rate (issue 58): each framework's filter imports with the assumed keep rate of
rlsim.workload.keep_prior, marked assumed; ``rlsim run`` says so and prices the range's ends (rlsim.run.keep_range),
the expected numbers computed here by hand from the rounds each keep rate needs."""

from pathlib import Path

import pytest

from rlsim.answers.text import keep_line
from rlsim.frameworks.config_import import import_config
from rlsim.run.simulation import simulate
from rlsim.scenario import from_dict, with_overrides
from rlsim.workload.keep_prior import ASSUMED_KEEP, KEEP_RANGE

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
VERL_GRPO = CONFIGS / "verl_grpo_qwen3_8b.yaml"  # data.train_batch_size 1024
NEMO_BASE = CONFIGS / "nemo_rl" / "grpo_math_1B.yaml"
P, G, PROMPT, RESPONSE = 8, 4, 100, 200


def test_the_assumption_is_the_dapo_recipes_sizing():
    # gen_prompt_bsz = 3 x train_prompt_bsz: one round fills the batch when a third of the groups pass
    assert ASSUMED_KEEP == pytest.approx(1 / 3) and KEEP_RANGE[0] < ASSUMED_KEEP < KEEP_RANGE[1]


def test_verl_filter_groups_imports_as_rounds_of_the_gen_batch():
    sets = {"algorithm.filter_groups.enable": True, "data.gen_batch_size": 3072, "algorithm.adv_estimator": "grpo"}
    imported = import_config(VERL_GRPO, "verl", sets)
    ds = from_dict(imported.scenario).algorithm.dynamic_sampling
    # 3072 / 1024 = 3 prompts per round per P; max_num_gen_batches 0 (no limit): rlsim's bound
    assert (ds.batch_multiplier, ds.keep_rate, ds.keep_rate_source, ds.mode) == (3.0, 1 / 3, "assumed", "rounds")
    assert ds.max_gen_batches == 10_000 and ds.rounds() == 1  # 3 x 1/3 = 1: one round
    assert any("keep rate assumed 0.33" in a for a in imported.scenario["assumptions"])


def test_verl_gen_batch_below_the_train_batch_is_refused():
    with pytest.raises(Exception, match="data.gen_batch_size: 512 below data.train_batch_size"):
        import_config(VERL_GRPO, "verl", {"algorithm.filter_groups.enable": True, "data.gen_batch_size": 512})


def test_nemo_rl_dynamic_sampling_imports_with_the_assumed_keep_rate():
    ds = from_dict(import_config(NEMO_BASE, "nemo-rl", {"grpo.use_dynamic_sampling": True}).scenario)
    ds = ds.algorithm.dynamic_sampling
    assert (ds.keep_rate, ds.keep_rate_source, ds.rounds()) == (1 / 3, "assumed", 3)  # ceil(1 / (1 x 1/3))


def test_a_keep_rate_set_is_given():
    s = from_dict(
        {
            "model": "Qwen2.5-1.5B",
            "hardware": {"gpu": "H100-SXM", "num_gpus": 2},
            "algorithm": {"dynamic_sampling": {"keep_rate": 1 / 3, "keep_rate_source": "assumed"}},
        }
    )
    moved = with_overrides(s, {"algorithm.dynamic_sampling.keep_rate": 0.5})
    assert moved.algorithm.dynamic_sampling.keep_rate_source == "given"


def scenario(keep_source="assumed", **extra):
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
        "algorithm": {"dynamic_sampling": {"keep_rate": 1 / 3, "keep_rate_source": keep_source}},
        "run": {"steps": 6},
    }
    raw.update(extra)
    return from_dict(raw)


def test_the_answer_moves_by_the_rounds_each_keep_rate_needs():
    """Fixed lengths: a round costs the same r (its generation call) + s x P x G (the CPU reward of its samples)
    whatever the keep rate, and log-probs and training see P x G either way. Rounds: 1/3 -> 3, 0.2 -> 5, 0.6 -> 2,
    so the low end is two rounds above the nominal and the high end one round below it."""
    result = simulate(scenario(), with_band=True)
    a = result.summary()["keep_assumption"]
    assert (a["low_keep"], a["high_keep"], a["keep_rate"]) == (0.2, 0.6, pytest.approx(1 / 3))
    nominal, low, high = a["step_time_s"], a["step_time_low_s"], a["step_time_high_s"]
    one_round = nominal - high
    assert one_round > 0
    assert low - nominal == pytest.approx(2 * one_round, rel=1e-9)
    line = keep_line(result.summary())
    assert line.startswith("keep rate assumed 0.33 (DAPO's own sizing") and "over keep 0.2 .. 0.6" in line


def test_a_given_keep_rate_prints_no_range():
    assert "keep_assumption" not in simulate(scenario("given"), with_band=True).summary()


def test_an_end_past_max_gen_batches_is_refused_not_priced():
    # max_gen_batches 4: keep 0.2 needs 5 rounds (NeMo RL stops there), 1/3 and 0.6 need 3 and 2
    raw = scenario().to_dict()
    raw["algorithm"]["dynamic_sampling"]["max_gen_batches"] = 4
    a = simulate(from_dict(raw), with_band=True).summary()["keep_assumption"]
    assert a["step_time_low_s"] is None and a["step_time_high_s"] is not None
    assert "refused .. " in keep_line({"keep_assumption": a})
