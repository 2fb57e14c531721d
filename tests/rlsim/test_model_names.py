"""Model names an import meets that the catalog does not hold verbatim: the architectures added for the launch
corpus (parameter counts by hand against the published figures), fine-tuned checkpoints resolved to the catalog
model their name contains (and refused when it names two), vision-language models refused by family."""

import pytest

from rlsim import catalog
from rlsim.frameworks.adapter import ImportConfigError
from rlsim.frameworks.common import resolve_model


def _params(name):
    return catalog.model(resolve_model(name, "m")[0])["num_params"]


def test_qwen3_1_7b_by_hand_against_its_cards_non_embedding_count():
    # slime scripts/models/qwen3-1.7B.sh: hidden 2048, 28 layers, 16 heads / 8 KV of 128, FFN 6144, tied vocab 151936
    attention = 2048 * 16 * 128 * 2 + 2048 * 8 * 128 * 2 + 2 * 128  # q, o; k, v; q/k norms
    layer = attention + 3 * 2048 * 6144 + 2 * 2048  # + gated MLP + two norms
    embedding = 151936 * 2048
    total = embedding + 28 * layer + 2048
    assert total == 1_720_574_976
    assert total - embedding == pytest.approx(1.4e9, rel=0.01)  # card: "Non-Embedding: 1.4B"
    assert _params("Qwen/Qwen3-1.7B") == total


def test_seed_oss_36b_by_hand_against_its_36b():
    # README: hidden 5120, 64 layers, 80 / 8 heads of 128; transformers defaults: FFN 27648, vocab 155136, q/k/v bias
    attention = 5120 * 80 * 128 * 2 + 5120 * 8 * 128 * 2 + (80 + 2 * 8) * 128  # no output bias
    layer = attention + 3 * 5120 * 27648 + 2 * 5120
    total = 2 * 155136 * 5120 + 64 * layer + 5120  # untied embedding and LM head
    assert total == pytest.approx(36e9, rel=0.01)
    assert _params("ByteDance-Seed/Seed-OSS-36B-Base") == total


def test_glm_4_5_air_by_hand_against_its_106b_and_12b_active():
    # slime glm4.5-106B-A12B.sh: 1 dense + 45 MoE layers, hidden 4096, 96 / 8 heads of 128, q/k/v bias, FFN 10944,
    # 128 experts of 1408 (top 8) + 1 shared, router with an expert-score bias, untied vocab 151552
    attention = 4096 * 96 * 128 * 2 + 4096 * 8 * 128 * 2 + (96 + 2 * 8) * 128
    expert = 3 * 4096 * 1408
    moe = 128 * expert + expert + 4096 * 128 + 128
    embeddings = 2 * 151552 * 4096
    total = embeddings + 46 * (attention + 2 * 4096) + 3 * 4096 * 10944 + 45 * moe + 4096
    assert total == pytest.approx(106e9, rel=0.01)
    spec = catalog.model("zai-org/GLM-4.5-Air")
    assert spec["num_params"] == total
    active = total - 45 * (128 - 8) * expert
    assert spec["num_active_params"] == active
    assert active - embeddings == pytest.approx(12e9, rel=0.02)  # the card's 12B leaves the embeddings out


def test_moonlight_by_hand_against_its_16b():
    # slime moonlight.sh: DeepSeek-V3 layout, 27 layers (first dense), hidden 2048, 16 heads, MLA with kv rank 512,
    # no q rank, qk 128 + rope 64, v 128; FFN 11264; 64 experts of 1408 (top 6) + 2 shared; untied vocab 163840
    q = 2048 * 16 * (128 + 64)
    kv = 2048 * (512 + 64) + 512 + 512 * 16 * (128 + 128)  # down-projection, its norm, up-projection
    attention = q + kv + 16 * 128 * 2048
    expert = 3 * 2048 * 1408
    moe = 64 * expert + 2 * expert + 2048 * 64 + 64
    total = 2 * 163840 * 2048 + 27 * (attention + 2 * 2048) + 3 * 2048 * 11264 + 26 * moe + 2048
    assert total == pytest.approx(16e9, rel=0.01)
    assert _params("moonshotai/Moonlight-16B-A3B") == total


@pytest.mark.parametrize(
    "name, base",
    [
        ("PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT", "Qwen3-0.6B"),
        ("PrimeIntellect/Qwen3-1.7B-Wordle-SFT", "Qwen3-1.7B"),
        ("Qwen/Qwen3-30B-A3B-Thinking-2507", "Qwen3-30B-A3B"),
        ("${HOME}/verl/models/DeepSeek-V3-config-verl", "DeepSeek-V3"),
        ("acme/qwen3-8b-grpo-step100", "Qwen3-8B"),  # case ignored
        ("PrimeIntellect/INTELLECT-3-Base", "GLM-4.5-Air"),  # a same_architecture.yaml name inside it
    ],
)
def test_a_fine_tune_resolves_to_the_catalog_model_its_name_contains(name, base):
    resolved, notes = resolve_model(name, "model.name")
    assert resolved == base
    assert len(notes) == 1 and "its name contains" in notes[0] and name in notes[0]


def test_a_name_holding_two_catalog_models_is_refused_naming_both():
    with pytest.raises(ImportConfigError) as err:
        resolve_model("acme/Qwen3-8B-distilled-into-Llama-3.1-8B", "model.name")
    message = str(err.value)
    assert "Qwen3-8B" in message and "Llama-3.1-8B" in message and "--set model.name=" in message
    assert "\n" not in message


def test_only_whole_token_runs_match():
    # 'Qwen2.5-Coder-32B' holds no run 'Qwen2.5-32B'; 'Qwen3-80B' holds no catalog name; a lone token names none
    for name in ("acme/Qwen2.5-Coder-3B-x", "acme/Qwen3-80B-A3B-x", "acme/Qwen3-tiny"):
        with pytest.raises(ImportConfigError, match="is not in rlsim's model catalog"):
            resolve_model(name, "m")
    assert resolve_model("Qwen/Qwen2.5-Coder-32B-Instruct", "m")[0] == "Qwen2.5-32B"  # same_architecture.yaml


@pytest.mark.parametrize(
    "name, text",
    [
        ("Qwen/Qwen2.5-VL-7B-Instruct", "Qwen2.5-7B"),
        ("Qwen/Qwen2.5-VL-3B-Instruct", "Qwen2.5-3B"),
        ("${RAY_DATA_HOME}/models/Qwen3-VL-30B-A3B-Instruct", "Qwen3-30B-A3B"),
        ("openbmb/MiniCPM-o-2_6", "Qwen2.5-7B"),
        ("zai-org/GLM-4.1V-9B-Thinking", None),
        ("Qwen/Qwen3.5-2B", None),
    ],
)
def test_a_vision_language_model_is_refused_naming_its_text_model(name, text):
    with pytest.raises(ImportConfigError) as err:
        resolve_model(name, "actor.model")
    message = str(err.value)
    assert "vision-language (multimodal)" in message and "vision encoder" in message and "\n" not in message
    if text:
        assert f"--set actor.model={text} " in message
    else:
        assert "holds no text model" in message and "--set actor.model=PATH" in message


def test_the_catalog_entry_of_a_vlm_language_model_still_resolves():
    assert resolve_model("Qwen/Qwen3.5-35B-A3B", "m")[0] == "Qwen3.5-35B-A3B"  # its config's text model, by name
