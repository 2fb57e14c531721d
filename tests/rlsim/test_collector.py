"""Oracles for NeMo RL's prompt-group collector (schedule.collector: prompt_groups, rlsim.run.collector): the
engines hold at most P x k groups, and the stream of groups runs across step boundaries, each batch paying
1 / WINDOW_BATCHES of a straggler tail instead of its own."""

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

import rlsim
from rlsim.engine.iteration import DecodeCoefficients, PrefillCoefficients
from rlsim.errors import RlsimError
from rlsim.frameworks.nemo_rl.recipe import scenario_from_recipe
from rlsim.run import collector, pipeline
from rlsim.run.costs import RooflineCostModel
from tests.conftest import SCENARIOS

ITER_S = 0.05  # every decode iteration, whatever the batch: the engine's time is waves x length x ITER_S
LENGTH = 200  # every response's tokens


@dataclasses.dataclass(frozen=True)
class _FlatEngine(RooflineCostModel):
    """The scenario's costs, but an engine whose decode iteration takes ITER_S at any batch, prefill nothing, no
    dispatch overhead, and in-flight updates that stall nothing: a batch's time is counted by hand in waves."""

    def decode_coefficients(self) -> DecodeCoefficients:
        b = self.scenario.engine.max_num_seqs + 1
        return DecodeCoefficients(np.full(b, ITER_S), 0.0, np.zeros(b), 0.0, np.zeros(b))

    def prefill_coefficients(self) -> PrefillCoefficients:
        return PrefillCoefficients(0.0, 0.0, 0.0)

    def rollout_overhead_s(self, responses: int) -> float:
        return 0.0

    def engine_pause_s(self) -> float:
        return 0.0


def _scenario(collect: str, max_num_seqs: int, k: int = 1, steps: int = 8):
    """One rollout GPU (one replica), P = 8 prompts x G = 4 responses of LENGTH tokens, a small model (training
    far shorter than generation: the steps are the rollouts')."""
    return rlsim.load_scenario(
        SCENARIOS / "dense8b_h100_async.yaml",
        {
            "model": "Qwen3-0.6B",
            "hardware.num_gpus": 2,
            "hardware.rollout_gpus": 1,
            "hardware.train_gpus": 1,
            "engine.max_num_seqs": max_num_seqs,
            "workload.prompts_per_step": 8,
            "workload.group_size": 4,
            "workload.prompt_length": {"dist": "fixed", "tokens": 100},
            "workload.response_length": {"dist": "fixed", "tokens": LENGTH},
            "schedule.max_staleness": k,
            "schedule.collector": collect,
            "run.steps": steps,
        },
    )


def _rollouts(scenario) -> list[float]:
    records, _ = pipeline.run_pipeline(scenario, cost=_FlatEngine(scenario))
    return [r["timing_s"]["rollout"] for r in records]


def _steady_step_s(scenario) -> float:
    """The mean step time over steps k + 1 .. N - k (rlsim.run.result's steady state)."""
    records, _ = pipeline.run_pipeline(scenario, cost=_FlatEngine(scenario))
    k, n = scenario.schedule.staleness, len(records)
    return float(np.mean([r["step_time_s"] for r in records[k : n - k]]))


def test_the_collector_holds_p_times_k_groups_where_a_batch_window_holds_k_plus_1_batches():
    """max_num_seqs 64, one batch 32 requests, k = 1. Batches streaming: a window of k + 1 = 2 batches, 64 requests
    in one wave: 200 x 0.05 = 10 s, 5 s a batch. The collector: at most P x k = 8 groups = 32 requests at once,
    16 batches = 512 requests in 512 / 32 = 16 waves: 160 s, 10 s a batch."""
    wave_s = LENGTH * ITER_S
    assert collector.engine_seqs(_scenario("prompt_groups", 64)) == 32
    assert _rollouts(_scenario("batches", 64)) == pytest.approx([wave_s / 2] * 8, rel=1e-9)
    assert _rollouts(_scenario("prompt_groups", 64)) == pytest.approx([wave_s * 16 / 16] * 8, rel=1e-9)


def test_the_collectors_stream_pays_a_fraction_of_a_tail_where_a_batch_pays_its_own():
    """max_num_seqs 24, a batch of 32 requests. One batch at a time (k = 1, streaming off): ceil(32 / 24) = 2 waves,
    20 s a batch. The collector (min(24, 32) = 24 requests at once): 16 x 32 = 512 requests, ceil(512 / 24) = 22
    waves, 22 x 10 / 16 = 13.75 s a batch (the steady stream: 32 / 24 x 10 = 13.33 s). The steps are the rollouts'
    (training is far shorter), so the steady step time is the same."""
    wave_s = LENGTH * ITER_S
    batches = _scenario("batches", 24)
    unit = dataclasses.replace(batches, schedule=dataclasses.replace(batches.schedule, streaming=False))
    assert _rollouts(unit) == pytest.approx([math.ceil(32 / 24) * wave_s] * 8, rel=1e-9)
    groups = _scenario("prompt_groups", 24)
    assert collector.window(groups) == 16
    assert _rollouts(groups) == pytest.approx([math.ceil(16 * 32 / 24) * wave_s / 16] * 8, rel=1e-9)
    assert _steady_step_s(groups) == pytest.approx(22 * wave_s / 16, rel=1e-9)
    assert _steady_step_s(unit) == pytest.approx(2 * wave_s, rel=1e-9)


def test_a_deep_collector_window_is_k_plus_1_batches_and_its_cap_p_times_k_groups():
    """k = 20: a window of 21 batches (more than 16), at most 8 x 20 x 4 = 640 requests (above max_num_seqs 512)."""
    s = _scenario("prompt_groups", 512, k=20, steps=2)
    assert collector.window(s) == 21 and collector.engine_seqs(s) == 512
    assert collector.in_flight_groups(s) == 160


def test_nemo_rl_async_rows_collect_prompt_groups():
    row = {
        "model": "Qwen/Qwen3-30B-A3B",
        "gpu": "H100",
        "num_gpus": 32,
        "colocated": False,
        "gen_gpus": 16,
        "train_gpus": 16,
        "policy_mode": "async-1off",
        "prompts_per_step": 64,
        "gens_per_prompt": 32,
        "avg_gen_len": 3200,
        "max_seq_len": 4096,
        "gen_tp": 2,
        "source_version": "NeMo RL v0.5 perf table",
    }
    assert scenario_from_recipe(row)["schedule"]["collector"] == "prompt_groups"
    assert "collector" not in scenario_from_recipe({**row, "policy_mode": "on", "colocated": True})["schedule"]


def test_a_collector_outside_an_async_schedule_is_refused_with_the_fix():
    with pytest.raises(RlsimError, match="schedule.collector.*async only"):
        rlsim.load_scenario(
            SCENARIOS / "dense8b_h100_async.yaml",
            {"schedule.mode": "sync-separate", "schedule.max_staleness": 0, "schedule.collector": "prompt_groups"},
        )


def test_a_nemo_rl_async_recipe_imports_as_the_collector_and_a_batch_collector_emits_a_note():
    from rlsim.frameworks.config_import import import_config
    from rlsim.frameworks.emit import emit
    from rlsim.scenario import from_dict, with_overrides

    path = (
        Path(__file__).parent
        / "fixtures/configs/nemo_rl/recipes/llm/performance/grpo-llama3.1-8b-instruct-2n8g-async-1off.yaml"
    )
    imported = from_dict(import_config(path, "nemo-rl", []).scenario)
    assert imported.schedule.collector == "prompt_groups"
    planned = with_overrides(imported, {"schedule.collector": "batches"})
    notes = emit("nemo-rl", planned, original=path).notes
    assert any(n.startswith("schedule.collector batches: NeMo RL's async GRPO collects prompt groups") for n in notes)
