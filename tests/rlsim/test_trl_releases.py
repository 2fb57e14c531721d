"""TRL releases as mechanisms (rlsim/catalog/software.yaml ``frameworks.trl``, rlsim.frameworks.trl.releases and
mapping): ``trl_version`` names the release; its ``vllm`` extra names the vLLM, whose behaviour rlsim prices; its
GRPOConfig defaults (trl_defaults.yaml) set the scenario. Expected values are the facts read at the tags (the
catalog's sources and the modules' docstrings cite file:line) and arithmetic written out here."""

from pathlib import Path

import pytest
import yaml

from rlsim.cli import main
from rlsim.frameworks.config_import import import_config
from rlsim.frameworks.trl import releases
from rlsim.run.simulation import simulate
from rlsim.scenario import from_dict, software
from rlsim.trainer.sync import weight_sync_time

GRPO = {"model_name_or_path": "Qwen/Qwen2.5-1.5B-Instruct", "use_vllm": True, "num_generations": 8}


def _scenario(tmp_path: Path, version, **sets):
    path = tmp_path / "grpo.yaml"
    path.write_text(yaml.safe_dump(GRPO))
    framework_set = {"num_processes": 8, **sets}
    if version is not None:
        framework_set["trl_version"] = version
    raw = import_config(path, "trl", framework_set, {"run.steps": 1}).scenario
    return raw, from_dict(raw)


# release -> (the vLLM its pyproject.toml vllm extra installs, the behaviour that vLLM selects)
RELEASES = {
    "0.25.0": ("0.10.2", "vllm-v1-piecewise"),  # vllm==0.10.2: piecewise CUDA graphs
    "0.26.0": ("0.11.2", "vllm-v1"),  # >=0.10.2,<0.12.0: full decode graphs, no async scheduling
    "0.27.0": ("0.12.0", "vllm-v1"),  # >=0.10.2,<0.13.0
    "1.0.0": ("0.17.1", "vllm-v1-async"),  # <=0.17.1: async scheduling on external_launcher (colocate)
}


@pytest.mark.parametrize("version", list(RELEASES))
def test_each_release_pins_its_vllm_and_selects_its_behaviour(tmp_path, version):
    vllm, behaviour = RELEASES[version]
    raw, s = _scenario(tmp_path, version)
    assert raw["software"] == {"framework": "trl", "framework_version": version, "engine": "vllm"}
    assert "behaviour" not in raw["engine"]  # the release's vLLM names it
    assert software.pinned_engine_version("trl", version) == vllm
    assert software.resolve(s) == (behaviour, [])


def test_without_trl_version_no_release_is_named(tmp_path):
    raw, s = _scenario(tmp_path, None)
    assert "software" not in raw and raw["engine"]["behaviour"] == "vllm-v1"


def test_transformers_generate_names_no_vllm_release(tmp_path):
    raw, _ = _scenario(tmp_path, "1.0.0", use_vllm=False)
    assert "software" not in raw and raw["engine"]["static_batching"]


def test_full_decode_graphs_from_0_26_shorten_the_rollout_by_the_eager_attention_gaps(tmp_path):
    """0.25.0 runs vLLM 0.10.2 (piecewise graphs: decode attention eager), 0.26.0 vLLM 0.11.2 (full decode graphs);
    both run the server by default (vllm_mode server up to 0.29). One server GPU holds all 8 x 8 = 64 completions in
    one batch, so the rollout is 256 decode iterations (the longest response reaches max_completion_length 256); each
    pays the eager gap on each of Qwen2.5-1.5B's 28 layers, 1.2e-5 s (engines.yaml vllm-v1-piecewise):
    256 x 28 x 1.2e-5 = 0.086016 s."""
    _, old = _scenario(tmp_path, "0.25.0")
    _, new = _scenario(tmp_path, "0.26.0")
    assert old.hardware.placement == new.hardware.placement == "separate"
    expected = 256 * 28 * 1.2e-5
    a, b = simulate(old).summary(), simulate(new).summary()
    assert a["phase_time_s"]["rollout"] - b["phase_time_s"]["rollout"] == pytest.approx(expected, rel=1e-6)
    assert a["step_time_s"] - b["step_time_s"] == pytest.approx(expected, rel=1e-6)


def test_async_scheduling_from_1_0_shortens_the_rollout(tmp_path):
    """1.0.0's vLLM 0.17.1 overlaps the engine core's CPU work with the GPU step (vllm-v1-async); 0.27.0's 0.12.0
    does not. The same server placement (vllm_mode set), the same model work: the rollout can only be shorter."""
    _, old = _scenario(tmp_path, "0.27.0", vllm_mode="server")
    _, new = _scenario(tmp_path, "1.0.0", vllm_mode="server")
    a, b = simulate(old).summary()["phase_time_s"], simulate(new).summary()["phase_time_s"]
    assert b["rollout"] < a["rollout"]
    assert b["train_actor"] == pytest.approx(a["train_actor"])


def test_vllm_mode_default_moves_from_server_to_colocate_at_1_0(tmp_path):
    """grpo_config.py vllm_mode: "server" up to 0.29.1, "colocate" from 1.0.0 (trl_defaults.yaml). Server: one
    trl vllm-serve GPU beside the 8 training GPUs (9 GPUs), all 64 completions on it; colocate: an engine on each
    training GPU (8 GPUs) with 64 / 8 = 8 completions. The same decode steps on 8 engines at an 8th of the batch each:
    shorter, by less than 8 times (a decode step of 8 sequences costs more than an 8th of one of 64)."""
    _, old = _scenario(tmp_path, "0.29.1")
    _, new = _scenario(tmp_path, "1.0.0")
    assert (old.hardware.placement, old.hardware.num_gpus, old.schedule.mode) == ("separate", 9, "sync-separate")
    assert (new.hardware.placement, new.hardware.num_gpus, new.schedule.mode) == ("colocated", 8, "sync-colocated")
    # the same release under the other mode: the mode, not the release, moves the rollout
    _, served = _scenario(tmp_path, "1.0.0", vllm_mode="server")
    server, colocated = (simulate(x).summary()["phase_time_s"]["rollout"] for x in (served, new))
    assert 1.0 < server / colocated < 8.0


def test_sleep_mode_off_by_default_sleeps_at_level_2_when_set(tmp_path):
    """vllm_enable_sleep_mode defaults false (0.23.0-1.9.0): the colocated engine keeps its weights and cache, no
    sleep / wake. True: sleep(level=2) (v1.0.0:trl/generation/vllm_generation.py:360,723), weights discarded, so the
    sync pays the sleep/wake overhead (costs.sleep_wake_overhead_s) and no host copy: the host part grows by exactly
    that overhead (level 1 would add 2 x the engine's weight bytes over the host link on top)."""
    raw, off = _scenario(tmp_path, "1.0.0")
    assert raw["weight_sync"] == {"transfer": "per_tensor", "engine_sleeps": False}
    raw, on = _scenario(tmp_path, "1.0.0", vllm_enable_sleep_mode=True)
    assert raw["weight_sync"] == {"transfer": "per_tensor", "engine_sleeps": True, "sleep_level": 2}
    assert weight_sync_time(off).host_s == 0.0
    assert weight_sync_time(on).host_s == pytest.approx(on.costs.sleep_wake_overhead_s)
    level1 = from_dict({**raw, "weight_sync": {**raw["weight_sync"], "sleep_level": 1}})
    link = on.hardware.gpu.host_link_bandwidth_bytes_per_s * on.costs.host_link_efficiency
    extra = 2 * on.engine_weight_bytes_per_gpu / link
    assert weight_sync_time(level1).host_s - weight_sync_time(on).host_s == pytest.approx(extra, rel=1e-9)
    # the server's GPUs are its own: no sleep fields
    raw, _ = _scenario(tmp_path, "1.0.0", vllm_mode="server")
    assert raw["weight_sync"] == {"transfer": "per_tensor"}


def test_a_release_after_the_newest_known_takes_1_0_with_the_one_line_warning(tmp_path, capsys):
    """1.2.0-1.9.0 allow newer vLLM (<=0.25.1 at 1.9.0), not traced; 0.17.1 is inside each of their ranges."""
    path = tmp_path / "grpo.yaml"
    path.write_text(yaml.safe_dump(GRPO))
    out = tmp_path / "s.yaml"
    args = ["import-config", "--format", "trl", str(path), "--set", "num_processes=8", "-o", str(out)]
    assert main([*args, "--set", "trl_version=1.9.0"]) == 0
    err = capsys.readouterr().err
    assert "trl 1.9.0 is newer than rlsim's software catalog knows: using the latest known release's behaviours, " in (
        err
    )
    assert software.resolve(from_dict(yaml.safe_load(out.read_text())))[0] == "vllm-v1-async"
    assert main([*args, "--set", "trl_version=0.26.2"]) == 0
    assert "trl 0.26.2 is not in rlsim's software catalog: using 0.26.0's behaviours" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("typo", "words"),
    [
        ("0.x6", "trl_version: '0.x6' is not a version; --set trl_version=X.Y.Z"),
        ("0.20", "trl_version: 0.2 reads as a number; write the release as X.Y.Z"),
    ],
)
def test_a_typoed_release_is_refused_naming_the_key(tmp_path, capsys, typo, words):
    path = tmp_path / "grpo.yaml"
    path.write_text(yaml.safe_dump(GRPO))
    code = main(["import-config", "--format", "trl", str(path), "--set", f"trl_version={typo}", "-o", "-"])
    err = capsys.readouterr().err
    assert code != 0 and words in err and "Traceback" not in err


def test_the_catalog_releases_are_releases_the_defaults_table_knows():
    assert set(software.table()["frameworks"]["trl"]) <= set(releases.releases())


def test_the_colocated_engine_takes_grpo_trainers_limits_and_4096_tokens_from_0_19(tmp_path):
    """GRPOTrainer builds the colocated LLM with max_num_seqs = per_device_train_batch_size x
    vllm_tensor_parallel_size x steps_per_generation (32 x 1 x 1 = 32) at every release with vllm_mode, and from
    0.19.0 max_num_batched_tokens=4096; 0.18.0 passes none, so vLLM's LLM class budget on an H100 (16384) holds.
    32 prompts x 256 assumed prompt tokens = 8192 prefill tokens per engine: one chunk under 16384, two under 4096.
    rlsim prices prefill per token, so the split alone moves no time at this size (the step's iterations are
    bound by decode, 256 of them either way)."""
    from rlsim.scenario.rules import scheduler_rules

    sets = {"vllm_mode": "colocate", "per_device_train_batch_size": 32}
    _, old = _scenario(tmp_path, "0.18.0", **sets)
    _, new = _scenario(tmp_path, "0.19.0", **sets)
    assert old.engine.max_num_seqs == new.engine.max_num_seqs == 32 * 1 * 1
    assert old.engine.max_num_batched_tokens is None and new.engine.max_num_batched_tokens == 4096
    assert scheduler_rules(old).max_num_batched_tokens == 16384
    assert scheduler_rules(new).max_num_batched_tokens == 4096
    assert new.workload.prompt_length.tokens * 32 == 8192
    a, b = (simulate(x).summary()["phase_time_s"]["rollout"] for x in (old, new))
    assert b == pytest.approx(a, rel=1e-9)


@pytest.mark.parametrize(("version", "seqs"), [("0.19.0", 8 * 1 * 1), ("0.20.0", 8 * 1 * 4)])
def test_the_colocated_max_num_seqs_counts_generation_steps_from_0_20(tmp_path, version, seqs):
    """per_device 8, vllm TP 1, gradient_accumulation_steps 1, steps_per_generation 4: up to 0.19.1 the limit
    multiplies gradient_accumulation_steps (8 x 1 x 1), from 0.20.0 steps_per_generation (8 x 1 x 4)."""
    _, s = _scenario(tmp_path, version, vllm_mode="colocate", steps_per_generation=4)
    assert s.engine.max_num_seqs == seqs
