"""Hybrid models (rlsim.catalog.hybrid) and how models are found by name: parameter counts, recurrent state and the
decode step by hand, the text_config refusal, the catalog's aliases and the local Hugging Face cache."""

import json

import pytest

import rlsim
from rlsim import catalog
from rlsim.catalog.hf_config import ModelConfigError, spec_from_config, spec_from_path
from rlsim.catalog.hybrid import layer_mix
from rlsim.frameworks.adapter import ImportConfigError
from rlsim.frameworks.common import LAUNCH_DIR, resolve_model
from rlsim.run.costs import RooflineCostModel
from tests.conftest import SCENARIOS

CONFIGS = __import__("pathlib").Path(rlsim.__file__).parent / "catalog" / "hf_configs"
NANO_9B = "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-"


def test_nemotron_nano_12b_parameters_by_hand_match_nvidias_card():
    """NVIDIA's card for Nemotron-Nano-12B-v2-Base: 12.31B parameters, 62 layers, 28 Mamba-2, 28 MLP, 6 attention.
    Counted by hand from the config (hidden 5120, Mamba 128 heads x 80, 8 groups, state 128, conv 4, MLP 20480,
    40 / 8 heads of 128, vocab 131072 untied)."""
    spec = spec_from_path(CONFIGS / "NVIDIA-Nemotron-Nano-12B-v2-Base")
    h, inner, groups_state = 5120, 128 * 80, 2 * 8 * 128  # hidden, Mamba width, B and C of every group
    conv = inner + groups_state  # 12288 channels through the depthwise conv
    mamba = h * (2 * inner + groups_state + 128) + conv * 4 + conv + 3 * 128 + inner + inner * h + h
    assert mamba == 115_998_720 + 49_152 + 12_288 + 384 + 10_240 + 52_428_800 + 5_120 == 168_504_704
    mlp = 2 * h * 20480 + h  # up and down (squared ReLU, no gate) and the block's norm
    attention = h * 40 * 128 * 2 + h * 8 * 128 * 2 + h  # q and o, k and v, norm
    total = 131072 * h * 2 + h + 28 * mamba + 28 * mlp + 6 * attention
    assert total == 12_310_001_152
    assert spec["num_params"] == total
    assert spec["num_params"] == pytest.approx(12.31e9, rel=0.01)
    assert (spec["num_layers"], spec["num_attention_layers"], spec["num_recurrent_layers"]) == (62, 6, 28)


def test_nemotron_nano_9b_layer_mix_and_count():
    """Nano 9B v2: 27 Mamba-2, 25 MLP and 4 attention blocks (its card), 8,888,227,328 parameters (~8.89B)."""
    cfg = json.loads((CONFIGS / "NVIDIA-Nemotron-Nano-9B-v2" / "config.json").read_text())
    mix = layer_mix(cfg, "nemotron_h")
    assert (mix.count("mamba2"), mix.count("mlp"), mix.count("attention")) == (27, 25, 4)
    h, inner, bc = 4480, 128 * 80, 2 * 8 * 128
    mamba = h * (2 * inner + bc + 128) + (inner + bc) * 5 + 3 * 128 + inner + inner * h + h
    total = 131072 * h * 2 + h + 27 * mamba + 25 * (2 * h * 15680 + h) + 4 * (h * 40 * 128 * 2 + h * 8 * 128 * 2 + h)
    assert spec_from_config(cfg, "n")["num_params"] == total == 8_888_227_328


def test_mamba_state_bytes_by_hand():
    """Per sequence and Mamba-2 layer (vLLM's MambaStateShapeCalculator): a conv state of 3 x (10240 + 2 x 8 x 128)
    in the model's bf16 and an SSM state of 128 heads x 80 x 128 in mamba_ssm_cache_dtype (bf16 unless named)."""
    cfg = json.loads((CONFIGS / "NVIDIA-Nemotron-Nano-9B-v2" / "config.json").read_text())
    conv, ssm = 3 * 12288 * 2, 128 * 80 * 128
    assert spec_from_config(cfg, "n")["recurrent_state_bytes"] == 27 * (conv + ssm * 2) == 72_769_536
    fp32 = spec_from_config({**cfg, "mamba_ssm_cache_dtype": "float32"}, "n")
    assert fp32["recurrent_state_bytes"] == 27 * (conv + ssm * 4)
    # the KV cache is the 4 attention layers' only: 2 x 4 x 8 KV heads x 128 x 2 bytes
    model = rlsim.load_scenario(SCENARIOS / "dense8b_h100_colocated.yaml", {"model": "NVIDIA-Nemotron-Nano-9B-v2"})
    assert model.model.kv_bytes_per_token == 2 * 4 * 8 * 128 * 2 == 16_384


def test_hybrid_decode_step_priced_with_its_state_by_hand():
    """Nano 9B v2 on one H100, 64 sequences of 4,096 cached tokens: the step reads the weights once, the 4 attention
    layers' KV of every cached token, and each sequence's Mamba state, read and written back; at e_mem of the HBM
    bandwidth. The KV pool gives up room for the states of the sequences it can run."""
    s = rlsim.load_scenario(SCENARIOS / "dense8b_h100_colocated.yaml", {"model": "NVIDIA-Nemotron-Nano-9B-v2"})
    assert s.engine.tensor_parallel_size == 1 and s.engine.kv_cache_dtype != "fp8"
    d = RooflineCostModel.from_scenario(s).decode_coefficients()
    bw = s.hardware.gpu.hbm_bandwidth_bytes_per_s * s.costs.decode_memory_efficiency  # 3.35e12 x e_mem
    weights = 8_888_227_328 * 2  # bf16
    state = 72_769_536  # per sequence, all 27 Mamba layers
    kv = 16_384  # per cached token, 4 attention layers
    b, ctx = 64, 4096
    by_hand = (weights + b * 2 * state + b * ctx * kv) / bw
    assert weights + b * 2 * state + b * ctx * kv == 17_776_454_656 + 9_314_500_608 + 4_294_967_296
    assert d.mem_intercept_s[b] + d.mem_slope_s_per_token * b * ctx == pytest.approx(by_hand)
    # attention FLOPs per cached token over the 4 attention layers only: 4 x 4 x 40 heads x 128
    flops = s.hardware.gpu.bf16_flops_per_s * s.costs.decode_compute_efficiency
    assert d.compute_slope_s_per_token == pytest.approx(4 * 4 * 40 * 128 / flops)
    # KV capacity: the engine's memory after weights, less the states of the sequences that fit at the longest
    # context (each its state + its KV), at most max_num_seqs; what is left over 16,384 B per token
    hw, eng, w = s.hardware, s.engine, s.workload
    free = hw.engine_memory_bytes * (eng.gpu_memory_utilization - eng.activation_memory_fraction) - weights
    fit = int(free // (state + (w.max_prompt_tokens + w.max_response_tokens) * kv))
    assert 0 < fit < eng.max_num_seqs  # here memory, not max_num_seqs, bounds the states
    assert s.kv_capacity_tokens == int((free - min(fit, eng.max_num_seqs) * state) // kv)


def test_gated_deltanet_moe_read_from_its_text_config():
    """Qwen3.5-35B-A3B nests its language model under text_config (qwen3_5_moe_text): read as 30 Gated DeltaNet and
    10 gated-attention layers with 256 experts, 34.66e9 parameters, not as a 1.26B dense model of another family."""
    spec = spec_from_path(CONFIGS / "Qwen3.5-35B-A3B")
    h = 2048
    key, value = 16 * 128, 32 * 128
    gdn = h * (2 * key + value) + h * value + 2 * h * 32 + (2 * key + value) * 4 + 2 * 32 + 128 + value * h
    attention = 2 * h * 16 * 256 + 2 * h * 2 * 256 + 16 * 256 * h + 2 * 256  # gated q, k, v, o, q/k norms
    moe = 256 * 3 * h * 512 + h * 256 + 3 * h * 512 + h  # experts, router, shared expert and its gate
    total = 248320 * h * 2 + h + 30 * gdn + 10 * attention + 40 * (2 * h + moe)
    assert spec["num_params"] == total == 34_660_610_688
    assert spec["num_active_params"] == total - 40 * (256 - 8) * 3 * h * 512
    assert (spec["num_attention_layers"], spec["num_recurrent_layers"], spec["num_experts"]) == (10, 30, 256)
    # state per sequence: conv 3 x (2 key + value) and 32 x 128 x 128 per DeltaNet layer, bf16
    assert spec["recurrent_state_bytes"] == 30 * (3 * (2 * key + value) * 2 + 32 * 128 * 128 * 2)


def test_an_unknown_text_config_is_refused_naming_its_type_and_keys():
    wrapped = {"model_type": "qwen9_vl", "text_config": {"model_type": "qwen9_moe_text", "hidden_size": 2048}}
    with pytest.raises(ModelConfigError, match="'qwen9_moe_text' is not one rlsim reads.*num_params.*num_experts"):
        spec_from_config(wrapped, "x")
    unnamed = {"model_type": "qwen9_vl", "text_config": {"hidden_size": 2048, "num_hidden_layers": 4}}
    with pytest.raises(ModelConfigError, match="qwen9_vl \\(its text_config names none\\)"):
        spec_from_config(unnamed, "x")
    moe_blocks = {"model_type": "nemotron_h", "hybrid_override_pattern": "ME*", "hidden_size": 64, "vocab_size": 8}
    with pytest.raises(ModelConfigError, match="mixture-of-experts blocks"):
        spec_from_config(moe_blocks, "x")
    with pytest.raises(ModelConfigError, match="lacks mamba_num_heads"):
        spec_from_config({**moe_blocks, "hybrid_override_pattern": "M*-", "num_attention_heads": 4}, "x")


def test_layer_counts_agree_with_transformers_modules():
    """On small configs the per-type counts equal the parameters of transformers' own modules (meta device)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "NemotronHConfig"):
        pytest.skip("transformers without NemotronH")
    nemotron = transformers.NemotronHConfig(
        hidden_size=256, vocab_size=1000, num_attention_heads=8, num_key_value_heads=2, head_dim=32,
        hybrid_override_pattern="M-M*-MM-", mamba_num_heads=8, mamba_head_dim=16, ssm_state_size=16, n_groups=2,
        intermediate_size=512,
    )  # fmt: skip
    for cfg in (nemotron,):
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(cfg)
        expected = sum(p.numel() for p in model.parameters())
        assert spec_from_config(json.loads(cfg.to_json_string()), "x")["num_params"] == expected


def test_aliases_resolve_base_math_and_instruct_checkpoints():
    assert resolve_model("Qwen/Qwen3-8B-Base", "m")[0] == "Qwen3-8B"
    assert resolve_model("Qwen/Qwen3-30B-A3B-Base", "m")[0] == "Qwen3-30B-A3B"
    assert resolve_model("Qwen/Qwen2.5-Math-7B", "m")[0] == "Qwen2.5-7B"
    name, notes = resolve_model("meta-llama/Meta-Llama-3-70B-Instruct", "m")
    assert name == "Llama-3.1-70B" and "8,192 tokens" in notes[0]
    assert resolve_model("nvidia/NVIDIA-Nemotron-Nano-9B-v2", "m")[0] == "NVIDIA-Nemotron-Nano-9B-v2"
    assert resolve_model("Qwen/Qwen3.5-35B-A3B", "m")[0] == "Qwen3.5-35B-A3B"
    # Qwen3-0.6B by hand: 151936 x 1024 tied embedding + 28 x (attention + q/k norms + MLP + 2 norms) + final norm
    layer = 1024 * 2048 * 2 + 1024 * 1024 * 2 + 2 * 128 + 3 * 1024 * 3072 + 2 * 1024
    assert 151936 * 1024 + 28 * layer + 1024 == 596_049_920
    assert catalog.model(resolve_model("Qwen/Qwen3-0.6B", "m")[0])["num_params"] == pytest.approx(596_049_920, rel=0.01)


def _fake_cache(root, org, name, revision, hidden):
    repo = root / f"models--{org}--{name}"
    snap = repo / "snapshots" / revision
    snap.mkdir(parents=True)
    cfg = {"model_type": "qwen3", "hidden_size": hidden, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128, "vocab_size": 1000}  # fmt: skip
    (snap / "config.json").write_text(json.dumps(cfg))
    return repo


def test_a_model_in_the_local_hf_cache_is_read_never_downloaded(tmp_path, monkeypatch):
    """HF_HUB_CACHE's models--ORG--NAME: the snapshot refs/main names is read; HF_HOME/hub without it; a name in
    neither is refused as before."""
    hub = tmp_path / "hub"
    repo = _fake_cache(hub, "acme", "Tiny-2L", "new", 64)
    _fake_cache(hub, "acme", "Tiny-2L-old", "x", 32)
    (repo / "snapshots" / "old").mkdir()
    (repo / "snapshots" / "old" / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("new\n")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    path, notes = resolve_model("acme/Tiny-2L", "policy.model_name")
    assert path.endswith("snapshots/new/config.json") and "local Hugging Face cache" in notes[0]
    spec = spec_from_path(path)
    assert (spec["hidden_size"], spec["name"], spec["hf_id"]) == (64, "Tiny-2L", "acme/Tiny-2L")
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    assert resolve_model("acme/Tiny-2L", "m")[0] == path
    with pytest.raises(ImportConfigError, match="'acme/Absent-1B' is not in rlsim's model catalog"):
        resolve_model("acme/Absent-1B", "m")


def test_a_model_folder_beside_the_launch_file_is_read(tmp_path):
    _fake_cache(tmp_path, "x", "y", "r", 96)
    folder = tmp_path / "Tiny-Local"
    folder.mkdir()
    (folder / "config.json").write_text((tmp_path / "models--x--y" / "snapshots" / "r" / "config.json").read_text())
    token = LAUNCH_DIR.set(tmp_path)
    try:
        path, notes = resolve_model("someorg/Tiny-Local", "m")
    finally:
        LAUNCH_DIR.reset(token)
    assert path == str((folder / "config.json").resolve()) and "beside the launch file" in notes[0]


def test_memory_messages_state_the_gpu_memory_once_in_gb_and_gib():
    with pytest.raises(rlsim.ScenarioError) as err:
        rlsim.load_scenario(SCENARIOS / "dense8b_h100_colocated.yaml", {"model": "Llama-3.1-70B"})
    text = str(err.value)
    assert "H100-SXM's 85.0 GB (79.2 GiB, as CUDA reports it)" in text and "80" not in text.split("GiB")[0][-30:]


def test_a_spelled_out_hybrid_is_checked():
    with pytest.raises(rlsim.ScenarioError, match="model.num_attention_layers"):
        rlsim.load_scenario(
            SCENARIOS / "dense8b_h100_colocated.yaml",
            {"model": {"base": "Qwen3-8B", "num_attention_layers": 30, "num_recurrent_layers": 10}},
        )
    with pytest.raises(rlsim.ScenarioError, match="model.recurrent_state_bytes"):
        rlsim.load_scenario(
            SCENARIOS / "dense8b_h100_colocated.yaml",
            {"model": {"base": "Qwen3-8B", "num_attention_layers": 4, "recurrent_state_bytes": 1e6}},
        )


def test_an_import_the_assumed_gpu_does_not_hold_takes_the_smallest_that_does(monkeypatch):
    """verl's gpt-oss-20b example names no GPU; with an fp32 actor it does not fit the default H100-SXM. The import
    takes the smallest catalog GPU that holds it and says why, stating the H100's memory once; with the GPU named
    (--scenario-set hardware.gpu=H100-SXM) nothing stands in and the memory refusal stands."""
    from pathlib import Path

    from rlsim import catalog
    from rlsim.frameworks.config_import import import_config

    configs = Path(__file__).parent / "fixtures" / "configs"
    monkeypatch.chdir(configs)
    script = configs / "verl_scripts" / "grpo_trainer__run_gptoss_20b.sh"
    fp32 = {"actor_rollout_ref.actor.fsdp_config.model_dtype": "fp32"}  # the script's bf16 actor fits (memory_keys)
    got = import_config(script, "verl", fp32)
    gpu = got.scenario["hardware"]["gpu"]
    assert catalog.gpu(gpu)["memory_bytes"] > catalog.gpu("H100-SXM")["memory_bytes"]
    (note,) = got.warnings
    assert note.startswith(f"hardware.gpu: {gpu} (") and "the smallest catalog GPU that holds this run" in note
    assert "H100-SXM, the default, does not: " in note and note in got.scenario["assumptions"]
    assert note.count("85.0 GB (79.2 GiB, as CUDA reports it)") == 1 and "80.0 GB" not in note
    with pytest.raises(ImportConfigError) as named:
        import_config(script, "verl", fp32, {"hardware.gpu": "H100-SXM"})
    assert "was assumed" not in str(named.value) and "smallest catalog GPU" not in str(named.value)


def test_the_cli_says_which_gpu_stood_in_and_no_gpu_stands_in_for_another_fault(tmp_path, capsys):
    """From the public corpus: verl's Seed-OSS-36B script (fp32 actor, 93 GB a GPU) imports on the smallest catalog
    GPU that holds it, said on stderr. On one GPU (engine TP 2 cannot divide it) no GPU validates: the refusal is
    the fault's, with the assumed GPU said."""
    from pathlib import Path

    from rlsim.cli import main

    script = Path(__file__).resolve().parents[1] / "launch_corpus/verl/examples__grpo_trainer__run_seed_oss_36b.sh"
    assert main(["import-config", str(script), "-o", str(tmp_path / "s.yaml")]) == 0
    err = capsys.readouterr().err
    assert "rlsim: note: hardware.gpu: " in err and "the smallest catalog GPU that holds this run" in err
    one = ["--set", "trainer.n_gpus_per_node=1"]
    assert main(["import-config", str(script), *one, "-o", str(tmp_path / "b.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert "engine.tensor_parallel_size: 2 must divide the rollout GPUs (1)" in err and len(err.splitlines()) == 1
    assert err.endswith("H100-SXM was assumed (--scenario-set hardware.gpu=NAME for the one it runs on)")
