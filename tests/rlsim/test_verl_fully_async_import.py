"""verl's fully-async trainer (``fully_async_main``, verl@v0.7.0 recipe/fully_async_policy) imported as a
fully-async scenario (rlsim.frameworks.verl.fully_async); each expected field worked out from the script's keys."""

import pytest

from rlsim.frameworks.adapter import ImportConfigError
from rlsim.frameworks.config_import import import_config
from rlsim.frameworks.emit import emit
from rlsim.frameworks.launch import framework_command
from rlsim.scenario import from_dict

KEYS = """\
    data.max_prompt_length=2048 data.max_response_length=8192 \\
    data.train_batch_size=0 data.gen_batch_size=1 \\
    actor_rollout_ref.rollout.n=16 algorithm.adv_estimator=grpo \\
    actor_rollout_ref.model.path=Qwen2.5-7B actor_rollout_ref.actor.strategy=fsdp2 \\
    actor_rollout_ref.actor.use_dynamic_bsz=True actor_rollout_ref.actor.ppo_max_token_len_per_gpu=20480 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 actor_rollout_ref.rollout.gpu_memory_utilization=0.8 \\
    trainer.nnodes=1 trainer.n_gpus_per_node=8 rollout.nnodes=2 rollout.n_gpus_per_node=8 \\
    rollout.total_rollout_steps=51200 \\
"""


def _script(tmp_path, entry="recipe.fully_async_policy.fully_async_main", extra=""):
    path = tmp_path / "run_fully_async.sh"
    path.write_text(
        'ROOT=${ROOT:-"${HOME}/verl"}\n'  # verl's scripts default paths this way (a nested expansion)
        f"python -m {entry} \\\n{KEYS}"
        f"    async_training.staleness_threshold=0.1 async_training.trigger_parameter_sync_step=4 \\\n"
        f"    async_training.require_batches=4 async_training.partial_rollout=True {extra}\n"
    )
    return path


def _scenario(path, sets=None):
    imported = import_config(path, "verl", sets)
    return from_dict(imported.scenario), imported.scenario["assumptions"]


def test_fully_async_main_is_a_fully_async_scenario(tmp_path):
    """require_batches 4 x ppo_mini_batch_size 32 = 128 prompts a step in 4 optimizer steps; the trainer's 1 x 8
    GPUs and the rollouter's 2 x 8 = 16 GPUs, 24 in all, separate; sync every 4 updates, 0.1 of them ahead,
    partial rollouts; the rollout's log-probs are the old ones (no old log-prob pass)."""
    s, notes = _scenario(_script(tmp_path))
    assert s.workload.prompts_per_step == 128 and s.workload.group_size == 16
    assert s.optimizer_steps_per_step == 4
    assert (s.hardware.placement, s.hardware.num_gpus, s.hardware.rollout_gpus, s.hardware.train_gpus) == (
        "separate",
        24,
        16,
        8,
    )
    assert s.schedule.mode == "fully-async"
    assert (s.schedule.sync_every, s.schedule.staleness_threshold, s.schedule.partial_rollout) == (4, 0.1, True)
    assert s.schedule.staleness == 4  # ceil(1.1 x 4 = 4.4) - 1
    assert s.algorithm.recompute_old_logprob is False
    assert s.engine.max_num_seqs == 256  # 16 prompts x 16 responses per server: verl's default 256 already
    assert any("data.train_batch_size 0: not read" in n for n in notes)


def test_the_entry_point_after_the_move_to_experimental_is_read_too(tmp_path):
    s, _ = _scenario(_script(tmp_path, entry="verl.experimental.fully_async_policy.fully_async_main"))
    assert s.schedule.mode == "fully-async" and s.workload.prompts_per_step == 128


def test_the_rollouters_sixteen_prompts_a_server_cap_the_engines_sequences(tmp_path):
    """n = 4: 16 prompts x 4 responses = 64 sequences per replica at most (fully_async_rollouter.py:187)."""
    s, notes = _scenario(_script(tmp_path, extra="actor_rollout_ref.rollout.n=4"))
    assert s.engine.max_num_seqs == 64
    assert any("engine.max_num_seqs 64" in n for n in notes)


def test_the_trainers_own_log_probs_are_a_pass(tmp_path):
    s, _ = _scenario(_script(tmp_path, extra="async_training.compute_prox_log_prob=True"))
    assert s.algorithm.recompute_old_logprob is True
    s, _ = _scenario(_script(tmp_path, extra="async_training.use_rollout_log_probs=False"))
    assert s.algorithm.recompute_old_logprob is True


def test_the_config_defaults_stand_in_for_absent_async_keys(tmp_path):
    """fully_async_ppo_trainer.yaml: staleness_threshold 0.1, trigger 4, require_batches 1, partial_rollout true."""
    path = tmp_path / "bare.sh"
    path.write_text(f"python -m recipe.fully_async_policy.fully_async_main \\\n{KEYS}\n")
    s, _ = _scenario(path)
    assert s.workload.prompts_per_step == 32
    assert (s.schedule.sync_every, s.schedule.staleness_threshold, s.schedule.partial_rollout) == (4, 0.1, True)


def test_a_bad_async_key_is_named(tmp_path):
    with pytest.raises(ImportConfigError, match="async_training.partial_rollout"):
        _scenario(_script(tmp_path, extra="async_training.partial_rollout=maybe"))


def test_a_script_that_runs_neither_entry_is_refused(tmp_path):
    path = tmp_path / "other.sh"
    path.write_text("python -m something.else a=1\n")
    with pytest.raises(ImportConfigError, match="runs no verl.trainer.main_ppo"):
        _scenario(path)


def test_a_default_holding_an_expansion_of_its_own_is_read_whole():
    words, _ = framework_command('R=${R:-"/data/${USER_DIR:-x}/verl"}\npython -m a.b p=$R\n', "run.sh", ("a.b",))
    assert words == ["p=/data/x/verl"]


def test_a_planned_fully_async_scenario_is_named_where_no_keys_express_it(tmp_path):
    path = _script(tmp_path)
    s, _ = _scenario(path)
    notes = emit("verl", s, original=None).notes
    assert any(
        "schedule.mode fully-async (sync_every 4, staleness_threshold 0.1, partial_rollout true)" in n for n in notes
    )


def test_a_yaml_with_an_async_training_section_is_fully_async(tmp_path):
    """A resolved fully_async_ppo_trainer.yaml: its async_training section marks it; trigger 2, require_batches 2."""
    path = tmp_path / "fully_async.yaml"
    path.write_text(
        "data: {max_prompt_length: 1024, max_response_length: 4096, train_batch_size: 0}\n"
        "algorithm: {adv_estimator: grpo}\n"
        "actor_rollout_ref:\n"
        "  model: {path: Qwen2.5-7B}\n"
        "  actor: {ppo_mini_batch_size: 16, ppo_micro_batch_size_per_gpu: 2}\n"
        "  rollout: {n: 8, tensor_model_parallel_size: 2}\n"
        "trainer: {nnodes: 1, n_gpus_per_node: 8}\n"
        "rollout: {nnodes: 1, n_gpus_per_node: 4}\n"
        "async_training: {trigger_parameter_sync_step: 2, require_batches: 2, staleness_threshold: 0.0, "
        "partial_rollout: false}\n"
    )
    s, _ = _scenario(path)
    assert s.schedule.mode == "fully-async" and s.schedule.sync_every == 2 and not s.schedule.partial_rollout
    assert s.workload.prompts_per_step == 32 and s.hardware.rollout_gpus == 4 and s.hardware.train_gpus == 8
    assert s.engine.max_num_seqs == 128  # 16 prompts x 8 responses per server
    assert s.schedule.staleness == 1  # 2 batches a window, less one
