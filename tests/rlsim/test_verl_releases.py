"""verl releases as mechanisms (rlsim.frameworks.verl.releases, rlsim/catalog/software.yaml ``frameworks.verl``):
``--set verl_version=X`` names the release; each release pins its engines and changes defaults rlsim prices. The
expected values are the facts read at the tags (the module docstrings cite file:line), written out here."""

import math
from pathlib import Path

import pytest
import yaml

from rlsim import catalog
from rlsim.cli import main
from rlsim.errors import ScenarioError
from rlsim.frameworks.config_import import import_config
from rlsim.run.costs import detokenize_s_per_token
from rlsim.run.simulation import simulate
from rlsim.scenario import from_dict, software
from rlsim.scenario.overrides import parse_scalar
from rlsim.trainer.sync import weight_sync_time
from rlsim.trainer.training import padded_tokens

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
VERL_GRPO = CONFIGS / "verl_grpo_qwen3_8b.yaml"
# a smaller step of the same config (64 prompts x 4, per-rank mini-batch 16 x 4 / 8 = 8 responses)
SMALL = [
    "data.train_batch_size=64",
    "actor_rollout_ref.rollout.n=4",
    "actor_rollout_ref.actor.ppo_mini_batch_size=16",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4",
    "trainer.test_freq=-1",
    "trainer.save_freq=-1",
]


def _scenario(version, sets=(), path=VERL_GRPO):
    framework_set = {k: parse_scalar(v) for k, v in (s.split("=", 1) for s in [*SMALL, *sets])}
    if version is not None:
        framework_set["verl_version"] = version
    raw = import_config(path, "verl", framework_set, {"run.steps": 2}).scenario
    return raw, from_dict(raw)


# release -> (vLLM of its image, the behaviour it selects, SGLang of its setup.py extra)
RELEASES = {
    "0.4.0": ("0.8.5", "vllm-v1-piecewise", "0.4.6.post5"),
    "0.4.1": ("0.8.5", "vllm-v1-piecewise", "0.4.6.post5"),
    "0.5.0": ("0.8.5", "vllm-v1-piecewise", "0.4.6.post5"),
    "0.6.0": ("0.10.0", "vllm-v1-piecewise", "0.5.2"),
    "0.6.1": ("0.10.0", "vllm-v1-piecewise", "0.5.5"),
    "0.7.0": ("0.12.0", "vllm-v1", "0.5.6"),
}


@pytest.mark.parametrize("version", list(RELEASES))
def test_each_release_pins_its_engines_and_selects_their_behaviour(version):
    vllm, behaviour, sglang = RELEASES[version]
    raw, s = _scenario(version)
    assert raw["software"] == {"framework": "verl", "framework_version": version, "engine": "vllm"}
    assert "behaviour" not in raw["engine"]  # the release's vLLM names it
    assert software.pinned_engine_version("verl", version) == vllm
    assert software.resolve(s) == (behaviour, [])
    entry = software.table()["frameworks"]["verl"][version]
    assert entry["other_engines"] == {"sglang": sglang}
    raw, s = _scenario(version, ["actor_rollout_ref.rollout.name=sglang"])
    assert raw["software"]["engine"] == "sglang"
    found, warns = software.resolve(s)
    assert found == "sglang-0.5"
    # SGLang 0.5.6 is the only traced pin among these: the others take it, with the one-line warning
    assert bool(warns) == (sglang != "0.5.6")


@pytest.mark.parametrize(
    ("version", "max_num_seqs", "in_process"),
    [
        # up to v0.5.0 verl passes no max_num_seqs: vLLM 0.8.5's LLM class on an H100 (>= 70 GiB): 1024
        ("0.4.0", 1024, True),
        ("0.5.0", 1024, True),
        # from v0.6.0 rollout.max_num_seqs reaches vLLM: the fixture's 512 here
        ("0.6.0", 512, True),
        ("0.6.1", 512, True),
        # v0.7.0: async mode (AsyncLLM, its own engine-core process)
        ("0.7.0", 512, False),
    ],
)
def test_max_num_seqs_reaches_vllm_from_0_6_and_sync_mode_runs_vllm_in_process(version, max_num_seqs, in_process):
    raw, s = _scenario(version, ["actor_rollout_ref.rollout.max_num_seqs=512"])
    assert s.engine.max_num_seqs == max_num_seqs
    assert s.engine.in_process is in_process
    # sync mode asks vLLM for no text (SamplingParams detokenize=False): no detokenizing in the loop either way
    assert detokenize_s_per_token(s) == 0.0


def test_rollout_max_num_seqs_default_is_1024_at_the_releases_and_256_after():
    """rollout.yaml:68 at v0.6.0 .. v0.7.0 (1024); b178a3c (no release named) 256."""
    assert _scenario("0.7.0")[1].engine.max_num_seqs == 1024
    assert _scenario(None)[1].engine.max_num_seqs == 256


def _without_padding_key(tmp_path):
    data = yaml.safe_load(VERL_GRPO.read_text())
    del data["actor_rollout_ref"]["model"]["use_remove_padding"]
    path = tmp_path / "verl.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_use_remove_padding_default_moves_from_false_to_true_at_0_7(tmp_path):
    """hf_model.yaml:40: False at v0.6.1, True at v0.7.0. False pads every sequence to the caps (512 + 1024):
    2 sequences of 1,000 real tokens train 2 x 1536 = 3072 tokens in the linear layers, against 1,000."""
    path = _without_padding_key(tmp_path)
    old_raw, old = _scenario("0.6.1", path=path)
    new_raw, new = _scenario("0.7.0", path=path)
    assert old.training.pad_to_cap and not old.training.remove_padding
    assert not new.training.pad_to_cap and new.training.remove_padding
    assert padded_tokens(old, 1000.0, 2) == 2 * (512 + 1024)
    assert padded_tokens(new, 1000.0, 2) == 1000.0
    # the priced training: slower on the padding, by less than the linear tokens' ratio, which is below caps /
    # prompt tokens (256 fixed, the import's assumption; every response adds more), attention running unpadded
    old_train = simulate(old).summary()["phase_time_s"]["train_actor"]
    new_train = simulate(new).summary()["phase_time_s"]["train_actor"]
    assert new.workload.prompt_length.tokens == 256
    assert 1.0 < old_train / new_train < (512 + 1024) / 256


def test_sglang_weight_update_is_bucketed_from_0_5(tmp_path):
    """fsdp_sglang.py: one update_weights_from_tensor per tensor at v0.4.1, 512 MiB buckets at v0.5.0. Qwen3-8B's
    HF checkpoint: 3 outer tensors + 36 layers x (6 attention + 3 MLP) = 327 calls per tensor, against
    ceil(bf16 bytes / 2^29) buckets; each call costs the collective's latency inside the NVLink domain (2e-5 s) plus
    the Python call (1e-3 s), the costs' defaults."""
    sets = ["actor_rollout_ref.rollout.name=sglang"]
    old_raw, old = _scenario("0.4.1", sets)
    new_raw, new = _scenario("0.5.0", sets)
    assert old_raw["weight_sync"] == {"transfer": "per_tensor"}
    assert new_raw["weight_sync"] == {"transfer": "bucketed", "bucket_bytes": 512.0 * 2**20}
    weight_bytes = catalog.model("Qwen3-8B")["num_params"] * 2
    buckets = math.ceil(weight_bytes / 2**29)
    expected = (327 - buckets) * (2e-5 + 1e-3)
    saved = weight_sync_time(old).latency_s - weight_sync_time(new).latency_s
    assert saved == pytest.approx(expected, rel=1e-9)
    # the priced step: the same rollout and training, shorter by the sync's saving
    step_old, step_new = simulate(old).summary(), simulate(new).summary()
    assert step_old["phase_time_s"]["weight_sync"] - step_new["phase_time_s"]["weight_sync"] == pytest.approx(expected)
    assert step_old["step_time_s"] - step_new["step_time_s"] == pytest.approx(expected)


def test_unknown_release_takes_the_nearest_with_the_one_line_warning(tmp_path, capsys):
    out = tmp_path / "s.yaml"
    args = ["import-config", "--format", "verl", str(VERL_GRPO), "-o", str(out)]
    assert main([*args, "--set", "verl_version=0.6.5"]) == 0
    err = capsys.readouterr().err
    assert "verl 0.6.5 is not in rlsim's software catalog: using 0.6.1's behaviours" in err
    assert software.resolve(from_dict(yaml.safe_load(out.read_text())))[0] == "vllm-v1-piecewise"
    assert main([*args, "--set", "verl_version=0.9.0"]) == 0
    assert "newer than rlsim's software catalog knows: using the latest known release's behaviours, 0.7.0's" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("typo", "words"),
    [
        ("0.x6", "verl_version: '0.x6' is not a version; --set verl_version=X.Y.Z"),
        ("latest", "verl_version: 'latest' is not a version; --set verl_version=X.Y.Z"),
        ("0.10", "verl_version: 0.1 reads as a number; write the release as X.Y.Z"),
    ],
)
def test_a_typoed_release_is_refused_naming_the_key(tmp_path, capsys, typo, words):
    out = tmp_path / "s.yaml"
    code = main(["import-config", "--format", "verl", str(VERL_GRPO), "--set", f"verl_version={typo}", "-o", str(out)])
    assert code != 0
    err = capsys.readouterr().err
    assert words in err
    assert "Traceback" not in err


def test_a_misspelt_key_names_verl_version(tmp_path, capsys):
    out = tmp_path / "s.yaml"
    code = main(["import-config", "--format", "verl", str(VERL_GRPO), "--set", "verl_versoin=0.6.1", "-o", str(out)])
    assert code != 0 and "did you mean verl_version?" in capsys.readouterr().err


def test_sync_mode_is_refused_at_0_7():
    """verl/workers/config/rollout.py:225-230 at v0.7.0: sync mode was removed."""
    with pytest.raises(Exception, match="not a rollout mode of verl 0.7.0; use async"):
        _scenario("0.7.0", ["actor_rollout_ref.rollout.mode=sync"])


def test_an_engine_the_release_does_not_pin_is_refused_naming_the_fix():
    """NeMo RL's releases pin vLLM only; verl's pin vLLM and SGLang (other_engines)."""
    raw, _ = _scenario("0.6.1", ["actor_rollout_ref.rollout.name=sglang"])
    raw["software"] = {"framework": "nemo-rl", "framework_version": "0.5.0", "engine": "sglang"}
    with pytest.raises(ScenarioError, match=r"software.engine: 'sglang' is not what nemo-rl 0.5.0 runs \(vllm\)"):
        software.resolve(from_dict(raw))


@pytest.mark.parametrize(
    "version, sets, level",
    [
        (None, [], 2),  # b178a3c: the hybrid engine sleeps at VLLM_SLEEP_LEVEL, 2 with vLLM >= 0.8.5
        (None, ["actor_rollout_ref.rollout.layered_summon=true"], 1),
        ("0.5.0", [], 1),  # sleep(level=1) up to v0.5.0
        ("0.6.0", [], 2),
        ("0.7.0", [], 2),
    ],
)
def test_the_sleep_level_decides_whether_the_engine_weights_go_to_host_memory(version, sets, level):
    raw, s = _scenario(version, sets)
    assert s.weight_sync.sleep_level == level
    assert s.engine.max_num_batched_tokens == 8192  # verl's rollout.max_num_batched_tokens, passed to vLLM
    # oracle: level 1 copies the engine's weight shard to host memory and back, 2 x its bytes over the host link
    # at costs.host_link_efficiency; level 2 discards it
    other = from_dict({**raw, "weight_sync": {**raw["weight_sync"], "sleep_level": 3 - level}})
    one, two = (other, s) if level == 2 else (s, other)
    shard = s.engine_weight_bytes_per_gpu
    link = s.hardware.gpu.host_link_bandwidth_bytes_per_s * s.costs.host_link_efficiency
    assert weight_sync_time(one).host_s - weight_sync_time(two).host_s == pytest.approx(2 * shard / link, rel=1e-9)


def test_a_bad_sleep_level_names_the_field():
    raw, _ = _scenario(None)
    with pytest.raises(ScenarioError, match="sleep_level"):
        from_dict({**raw, "weight_sync": {**raw["weight_sync"], "sleep_level": 3}})


@pytest.mark.parametrize(
    "version, eager, behaviour",
    [
        (None, False, "vllm-v1"),  # b178a3c: rollout.enforce_eager false
        ("0.4.0", True, "vllm-v1-piecewise-eager"),  # true up to v0.5.0: vLLM 0.8.5 without CUDA graphs
        ("0.5.0", True, "vllm-v1-piecewise-eager"),
        ("0.6.0", False, "vllm-v1-piecewise"),
        ("0.7.0", False, "vllm-v1"),
    ],
)
def test_enforce_eager_by_release_selects_the_eager_engine(version, eager, behaviour):
    raw, s = _scenario(version)
    assert s.engine.enforce_eager is eager and software.behaviour(s) == behaviour
    # a config that turns it off at v0.5.0 gets the release's graphs back
    if eager:
        _, off = _scenario(version, ["actor_rollout_ref.rollout.enforce_eager=false"])
        assert not off.engine.enforce_eager and software.behaviour(off) == "vllm-v1-piecewise"
