"""Model specs read from Hugging Face config.json files (rlsim.catalog.hf_config): parameter counts against the
published ones, the architecture against the catalog's hand-checked entries, and the scenario's ``model:`` routes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import rlsim
from rlsim.catalog.hf_config import ModelConfigError, spec_from_config, spec_from_path
from rlsim.errors import ScenarioError

CONFIGS = Path(rlsim.__file__).parent / "catalog" / "hf_configs"
SOURCES = yaml.safe_load((CONFIGS / "SOURCES.yaml").read_text())
SMALL = Path(__file__).resolve().parents[2] / "scenarios" / "small_1gpu.yaml"
PUBLISHED = sorted(k for k, v in SOURCES.items() if v.get("published_params"))


def test_the_fixtures_cover_the_architectures_rl_recipes_use():
    """At least 15 models with a published count, across every family the module reads but gemma3's wrapper."""
    assert len(PUBLISHED) >= 15
    types = {json.loads((CONFIGS / k / "config.json").read_text())["model_type"] for k in SOURCES}
    assert {"llama", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "mistral", "mixtral", "gemma2", "gemma3_text"} <= types
    assert {"phi3", "deepseek_v2", "deepseek_v3", "gpt_oss"} <= types


@pytest.mark.parametrize("name", PUBLISHED)
def test_parameter_count_matches_the_published_one_within_1_percent(name):
    spec = spec_from_path(CONFIGS / name)
    published = float(SOURCES[name]["published_params"])
    assert spec["num_params"] == pytest.approx(published, rel=0.01), SOURCES[name]["params_source"]
    assert spec["num_active_params"] <= spec["num_params"]


@pytest.mark.parametrize(
    "name, active",
    # vendors that count the embeddings in the active parameters, as rlsim does (the others, gpt-oss and
    # DeepSeek-V2-Lite, leave the input embedding out of theirs)
    [("Qwen3-30B-A3B", 3.3e9), ("Qwen2-57B-A14B", 14e9), ("Mixtral-8x7B-v0.1", 12.9e9), ("DeepSeek-V3", 37e9)],
)
def test_active_parameters_leave_out_the_routed_experts_a_token_skips(name, active):
    assert spec_from_path(CONFIGS / name)["num_active_params"] == pytest.approx(active, rel=0.02)


@pytest.mark.parametrize(
    "fixture, entry",
    [
        ("Llama-2-7b-hf", "Llama-2-7B"),
        ("Llama-3.1-8B", "Llama-3.1-8B"),
        ("Llama-3.1-70B", "Llama-3.1-70B"),
        ("Qwen2.5-7B", "Qwen2.5-7B"),
        ("Qwen3-8B", "Qwen3-8B"),
        ("Qwen3-32B", "Qwen3-32B"),
        ("Qwen3-30B-A3B", "Qwen3-30B-A3B"),
        ("Mixtral-8x7B-v0.1", "Mixtral-8x7B"),
        ("DeepSeek-V3", "DeepSeek-V3"),
    ],
)
def test_architecture_agrees_with_the_catalogs_hand_checked_entry(fixture, entry):
    """Every field the simulator reads (layers, widths, heads, experts, MLA ranks, MTP, sliding window) as the
    catalog states it; the counts agree with the catalog's rounded ones within 1% (active: 2%)."""
    spec = spec_from_path(CONFIGS / fixture)
    cat = rlsim.catalog.model(entry)
    for key, value in spec.items():
        if key in ("name", "hf_id") or key not in cat:
            continue
        if key in ("num_params", "num_active_params"):  # the catalog holds the published, rounded counts
            assert value == pytest.approx(cat[key], rel=0.01 if key == "num_params" else 0.02), key
        else:
            assert value == cat[key], key


def test_sliding_window_layers_follow_each_family():
    layers = {k: spec_from_path(CONFIGS / k)["num_sliding_layers"] for k in SOURCES}
    assert layers["gpt-oss-20b"] == 12  # layer_types: every other of 24
    assert layers["gemma-2-9b"] == 21  # every other of 42
    assert layers["gemma-3-1b-it"] == 22  # 5 of every 6 of 26
    assert layers["Mistral-7B-v0.1"] == 32 and layers["Llama-3.1-8B"] == 0 and layers["Qwen2.5-7B"] == 0


def test_a_scenario_takes_a_config_json_or_a_model_folder(tmp_path):
    folder = tmp_path / "my-qwen"
    folder.mkdir()
    (folder / "config.json").write_text((CONFIGS / "Qwen2.5-3B" / "config.json").read_text())
    for value in (str(folder), str(folder / "config.json")):
        scn = rlsim.load_scenario(SMALL, {"model": value})
        assert scn.model.name == "my-qwen" and scn.model.num_params == pytest.approx(3.09e9, rel=0.01)
    result = rlsim.simulate(SMALL, overrides={"model": str(folder), "run.steps": 2})
    assert result.summary()["step_time_s"] > 0


def test_bad_model_names_and_configs_say_what_to_do(tmp_path):
    with pytest.raises(ScenarioError, match=r"did you mean Qwen3-8B.*config.json"):
        rlsim.load_scenario(SMALL, {"model": "Qwen3-8b"})
    with pytest.raises(ScenarioError, match=r"did you mean Qwen2-7B or"):  # case and -Instruct set aside first
        rlsim.load_scenario(SMALL, {"model": "Qwen2-7b-Instruct"})
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "bloom", "hidden_size": 8}')
    with pytest.raises(ScenarioError, match=r"model_type 'bloom' is not one rlsim reads"):
        rlsim.load_scenario(SMALL, {"model": str(bad)})
    bad.write_text("{not json")
    with pytest.raises(ScenarioError, match="not valid JSON"):
        rlsim.load_scenario(SMALL, {"model": str(bad)})
    with pytest.raises(ModelConfigError, match="lacks num_hidden_layers"):
        spec_from_config({"model_type": "llama", "hidden_size": 8}, "x")


def test_the_catalog_serves_the_configs_it_lacks_by_name_and_hub_id():
    """16 of the 24 configs are models models.yaml does not hold: the catalog serves them (with their sources), by
    name or hub id, and an import resolves an Instruct checkpoint to them; a hand-written entry wins its model."""
    from rlsim import catalog
    from rlsim.frameworks.common import resolve_model

    names = catalog.model_names(aliases=False)
    assert len(names) >= 38 and {"Qwen2-7B", "gemma-2-9b", "gpt-oss-20b", "phi-4", "DeepSeek-V2-Lite"} <= set(names)
    entry = catalog.model("Qwen/Qwen2-7B")
    assert entry["num_params"] == pytest.approx(7.6e9, rel=0.01) and "config_source" in entry["source"]
    assert resolve_model("Qwen/Qwen2-7B-Instruct", "model")[0] == "Qwen2-7B"
    assert catalog.model("Qwen3-8B")["num_params"] == 8.2e9  # models.yaml's entry, not the config's count


def test_sliding_window_layers_hold_at_most_the_longest_context():
    """A sequence shorter than the window holds its own tokens in the sliding layers, not the window's: the KV
    cache verl's gemma-2-2b example gets (1,536-token contexts, window 4,096) was 0 tokens when the whole window
    was charged for each of the engine's sequences."""
    base = {"model": "gemma-2-2b", "engine.max_num_seqs": 32, "workload.max_prompt_tokens": 512}
    short = rlsim.load_scenario(SMALL, {**base, "workload.max_response_tokens": 1024})
    long = rlsim.load_scenario(SMALL, {**base, "workload.max_response_tokens": 6000})
    per_token = short._kv_bytes_all_layers * short.model.sliding_layer_fraction
    assert short.sliding_kv_bytes_per_seq == pytest.approx(per_token * 1536)
    assert long.sliding_kv_bytes_per_seq == pytest.approx(per_token * 4096)  # the window, not the 6,512 context
    assert short.kv_capacity_tokens > long.kv_capacity_tokens
