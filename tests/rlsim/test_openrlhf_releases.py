"""OpenRLHF releases as mechanisms (rlsim.frameworks.openrlhf.releases, rlsim/catalog/software.yaml
``frameworks.openrlhf``): ``--set openrlhf_version=X`` names the release; each release pins its vLLM (which selects
the engine's behaviour with OpenRLHF's executor rule) and changes defaults rlsim prices. The expected values are the
facts read at the tags (the module docstring and software.yaml cite file:line), written out here."""

from pathlib import Path

import pytest
import yaml

from rlsim.cli import main
from rlsim.frameworks.config_import import import_config
from rlsim.run.simulation import simulate
from rlsim.scenario import from_dict, software
from rlsim.trainer.padding import padded_micro_batch_ratio

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
HYBRID = CONFIGS / "openrlhf_ppo_llama3_8b_hybrid_engine_v0.9.5.yaml"  # flat names, vLLM TP 2, colocated
# a smaller step, without dynamic batching or packing: micro-batches of train / rollout micro_batch_size samples
SMALL = {
    "rollout_batch_size": 64,
    "n_samples_per_prompt": 4,
    "train_batch_size": 64,
    "use_dynamic_batch": False,
    "packing_samples": False,
    "enforce_eager": False,  # the fixture's true: test_enforce_eager_...
}


def _scenario(version, sets=None, stated_lengths=False):
    framework_set = {**SMALL, **(sets or {})}
    if version is not None:
        framework_set["openrlhf_version"] = version
    raw = import_config(HYBRID, "openrlhf", framework_set, {"run.steps": 2}).scenario
    if stated_lengths:  # prompts 512 (the import's), responses uniform over 1 .. 1000: an expectation by hand
        w = raw["workload"]
        w.pop("length_note", None)
        w.update(length_source="stated", response_length={"dist": "uniform", "low": 1, "high": 1000})
    return raw, from_dict(raw)


# release -> (its setup.py:77 vLLM, the behaviour at TP 1 (uni executor), at TP 2 (ray executor))
RELEASES = {
    "0.8.11": ("0.10.2", "vllm-v1-piecewise", "vllm-v1-piecewise"),  # V1 < 0.11: piecewise graphs
    "0.9.0": ("0.11.0", "vllm-v1", "vllm-v1"),  # FULL_AND_PIECEWISE, async scheduling off
    "0.9.5": ("0.17.0", "vllm-v1-async", "vllm-v1"),  # async scheduling on, but not on Ray
    "0.10.0": ("0.19.0", "vllm-v1-async", "vllm-v1"),
    "0.10.2": ("0.19.1", "vllm-v1-async", "vllm-v1"),
    "0.11.0": ("0.27.1", "vllm-v1-async", "vllm-v1"),
}


@pytest.mark.parametrize("version", list(RELEASES))
def test_each_release_pins_its_vllm_and_selects_its_behaviour_by_executor(version):
    vllm, one_gpu, two_gpus = RELEASES[version]
    assert software.pinned_engine_version("openrlhf", version) == vllm
    assert f"vllm=={vllm}" in software.table()["frameworks"]["openrlhf"][version]["source"]
    raw, s = _scenario(version)
    assert raw["software"] == {"framework": "openrlhf", "framework_version": version, "engine": "vllm"}
    assert "behaviour" not in raw["engine"]  # the release's vLLM names it
    assert s.engine.tensor_parallel_size == 2
    assert software.resolve(s) == (two_gpus, [])
    # TP 1: OpenRLHF's "uni" executor (vllm_engine.py:134 at v0.8.11); 8 engines of 1 GPU fill the 8 actor GPUs
    _, s1 = _scenario(version, {"vllm_tensor_parallel_size": 1, "vllm_num_engines": 8})
    assert software.resolve(s1) == (one_gpu, [])


def test_without_a_release_the_mapping_keeps_vllm_v1_and_names_no_software():
    raw, s = _scenario(None)
    assert "software" not in raw and raw["engine"]["behaviour"] == "vllm-v1"
    assert (s.training.micro_batch_size, s.training.logprob_micro_batch_size) == (4, 8)  # v0.9.5's flat defaults


@pytest.mark.parametrize(
    ("version", "train", "logprob"),
    [("0.8.11", 4, 8), ("0.9.0", 4, 8), ("0.9.5", 4, 8), ("0.10.0", 1, 1), ("0.10.2", 1, 1), ("0.11.0", 1, 1)],
)
def test_micro_batch_defaults_move_from_4_and_8_to_1_at_0_10(version, train, logprob):
    """train_ppo_ray.py micro_train_batch_size / micro_rollout_batch_size: 4 / 8 at v0.9.5 (:352, :337), 1 / 1 at
    v0.10.0 (:388, :369), still flat-spelled there: the release decides, not the spelling."""
    _, s = _scenario(version)
    assert (s.training.micro_batch_size, s.training.logprob_micro_batch_size) == (train, logprob)
    assert s.training.pad_micro_batches  # no packing: each micro-batch right-padded to its longest


def test_the_micro_batch_default_changes_the_padded_tokens_and_the_priced_passes():
    """Without packing OpenRLHF pads a micro-batch of k samples to its longest. Prompts 512, responses uniform on
    1 .. 1000: E[max of k] = sum over m = 1 .. 1000 of P(max >= m) = sum (1 - ((m - 1) / 1000)^k); a micro-batch
    costs k x (512 + E[max]) linear tokens against k x (512 + 500.5) real ones. v0.9.5 (k = 4 training, 8 log-prob)
    pads, v0.10.0 (k = 1) does not."""
    e_max4 = sum(1 - ((m - 1) / 1000) ** 4 for m in range(1, 1001))
    e_max8 = sum(1 - ((m - 1) / 1000) ** 8 for m in range(1, 1001))
    train_ratio, logprob_ratio = (512 + e_max4) / 1012.5, (512 + e_max8) / 1012.5  # 1.2963, 1.3841
    _, old = _scenario("0.9.5", stated_lengths=True)
    _, new = _scenario("0.10.0", stated_lengths=True)
    assert old.workload.prompt_length.tokens == 512
    # 4,000 seeded draws against the exact expectation
    assert padded_micro_batch_ratio(old, False) == pytest.approx(train_ratio, rel=1e-2)
    assert padded_micro_batch_ratio(old, True) == pytest.approx(logprob_ratio, rel=1e-2)
    assert padded_micro_batch_ratio(new, False) == padded_micro_batch_ratio(new, True) == 1.0
    # the priced passes: slower with the padding, by less than the linear tokens' ratio (attention runs unpadded)
    t_old, t_new = simulate(old).summary(), simulate(new).summary()
    train = t_old["phase_time_s"]["train_actor"] / t_new["phase_time_s"]["train_actor"]
    logprob = t_old["phase_time_s"]["old_logprob"] / t_new["phase_time_s"]["old_logprob"]
    assert 1.0 < train < train_ratio
    assert 1.0 < logprob < logprob_ratio
    assert t_old["phase_time_s"]["rollout"] == t_new["phase_time_s"]["rollout"]  # both vllm-v1 on Ray (TP 2)
    assert t_old["step_time_s"] > t_new["step_time_s"]


def test_piecewise_graphs_at_0_8_11_price_a_slower_rollout_than_0_9_0():
    """vLLM 0.10.2 (v0.8.11) decodes with attention eager between graph pieces, 0.11.0 (v0.9.0) in full graphs:
    the same arguments generate more slowly at v0.8.11; training is the same (both micro 4 / 8)."""
    _, old = _scenario("0.8.11")
    _, new = _scenario("0.9.0")
    t_old, t_new = simulate(old).summary(), simulate(new).summary()
    assert t_old["phase_time_s"]["rollout"] > t_new["phase_time_s"]["rollout"]
    assert t_old["phase_time_s"]["train_actor"] == t_new["phase_time_s"]["train_actor"]


@pytest.mark.parametrize(
    ("version", "sets", "seqs", "tokens"),
    [
        ("0.8.11", {}, 1024, 16384),  # sync: vllm.LLM, the LLM-class limits on an H100 (>= 70 GiB)
        ("0.9.0", {}, 1024, 16384),
        ("0.9.0", {"async_train": True}, 128, 2048),  # --async_train: AsyncLLMEngine, vLLM's scheduler defaults
        ("0.9.5", {}, 128, 2048),  # AsyncLLMEngine always
        ("0.11.0", {}, 128, 2048),
    ],
)
def test_the_engine_class_of_the_release_sets_vllm_batch_limits(version, sets, seqs, tokens):
    _, s = _scenario(version, sets)
    assert (s.engine.max_num_seqs, s.engine.max_num_batched_tokens) == (seqs, tokens)


def test_asyncllm_limits_at_0_9_5_price_a_slower_rollout_than_vllm_llm_at_0_9_0():
    """v0.9.0 and v0.9.5 at TP 2 run the same behaviour (vllm-v1 on Ray) and micro batches; they differ in the
    engine class. 256 x 4 samples over 4 engines: 256 sequences per engine, one batch under v0.9.0's 1024 cap, at
    least two waves of at most 128 under v0.9.5's: each wave's iterations no slower than the full batch's, so the
    rollout takes longer, and less than twice as long."""
    big = {"rollout_batch_size": 256, "train_batch_size": 256}
    _, old = _scenario("0.9.0", big)
    _, new = _scenario("0.9.5", big)
    assert 1024 // old.engine.replicas == 256 > new.engine.max_num_seqs == 128
    ratio = simulate(new).summary()["phase_time_s"]["rollout"] / simulate(old).summary()["phase_time_s"]["rollout"]
    assert 1.0 < ratio < 2.0


@pytest.mark.parametrize(("version", "eager"), [("0.8.11", "vllm-v1-piecewise-eager"), ("0.9.0", "vllm-v1-eager")])
def test_enforce_eager_reaches_the_engine_and_prices_a_slower_rollout(version, eager):
    """--enforce_eager (the fixture's, from the v0.9.5 hybrid-engine example) is passed to vLLM at every tag
    (v0.8.11:train_ppo_ray.py:236 -> vllm_engine.py:174; v0.11.0:train_ppo_ray.py:243 -> vllm_engine.py:268): the
    release's behaviour turns eager, and decode runs without graphs, slower."""
    _, graphs = _scenario(version)
    _, s = _scenario(version, {"enforce_eager": True})
    assert s.engine.enforce_eager and not graphs.engine.enforce_eager
    assert software.behaviour(s) == eager
    assert simulate(s).summary()["phase_time_s"]["rollout"] > simulate(graphs).summary()["phase_time_s"]["rollout"]


def test_unknown_release_takes_the_nearest_with_the_one_line_warning(tmp_path, capsys):
    out = tmp_path / "s.yaml"
    args = ["import-config", "--format", "openrlhf", str(HYBRID), "-o", str(out)]
    assert main([*args, "--set", "openrlhf_version=0.9.7"]) == 0
    err = capsys.readouterr().err
    assert "openrlhf 0.9.7 is not in rlsim's software catalog: using 0.9.5's behaviours" in err
    raw = yaml.safe_load(out.read_text())
    assert raw["software"]["framework_version"] == "0.9.7"
    assert software.resolve(from_dict(raw))[0] == "vllm-v1"  # vLLM 0.17.0 on Ray (TP 2)
    assert main([*args, "--set", "openrlhf_version=0.12.0"]) == 0
    assert "newer than rlsim's software catalog knows: using the latest known release's behaviours, 0.11.0's" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("typo", "words"),
    [
        ("0.x9", "openrlhf_version: '0.x9' is not a version; --set openrlhf_version=X.Y.Z"),
        ("latest", "openrlhf_version: 'latest' is not a version; --set openrlhf_version=X.Y.Z"),
        ("0.10", "openrlhf_version: 0.1 reads as a number; write the release as X.Y.Z"),
    ],
)
def test_a_typoed_release_is_refused_naming_the_key(tmp_path, capsys, typo, words):
    out = tmp_path / "s.yaml"
    args = ["import-config", "--format", "openrlhf", str(HYBRID), "--set", f"openrlhf_version={typo}", "-o", str(out)]
    assert main(args) != 0
    err = capsys.readouterr().err
    assert words in err
    assert "Traceback" not in err


def test_a_misspelt_key_names_openrlhf_version(tmp_path, capsys):
    args = ["import-config", "--format", "openrlhf", str(HYBRID), "--set", "openrlhf_versoin=0.9.5"]
    assert main([*args, "-o", str(tmp_path / "s.yaml")]) != 0
    assert "did you mean openrlhf_version?" in capsys.readouterr().err


@pytest.mark.parametrize(("version", "patch"), [("0.9.5", {}), ("0.10.0", {"micro_train_batch_size": 4})])
def test_emit_reads_an_absent_key_with_the_named_release_default(version, patch):
    """v0.10.0 still spells its flags flat but defaults micro_train_batch_size to 1: a planned 4 must be written;
    at v0.9.5 4 is the default and nothing is."""
    from rlsim.frameworks.emit import emit

    sets = [f"{k}={str(v).lower()}" for k, v in SMALL.items()] + [f"openrlhf_version={version}"]
    raw, _ = _scenario(version)
    raw["training"]["micro_batch_size"] = 4
    assert emit("openrlhf", from_dict(raw), HYBRID, sets).patch == patch


def test_emit_writes_a_planned_enforce_eager():
    """A plan that turns vLLM's graphs off writes the flag (the v0.9.5 spelling of the file, enforce_eager)."""
    from rlsim.frameworks.emit import emit

    sets = [f"{k}={str(v).lower()}" for k, v in SMALL.items()]
    raw, _ = _scenario(None)
    raw["engine"]["enforce_eager"] = True
    assert emit("openrlhf", from_dict(raw), HYBRID, sets).patch == {"enforce_eager": True}
