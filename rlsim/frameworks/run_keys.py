"""The frameworks' evaluation and checkpoint keys as rlsim's ``run`` overhead fields (rlsim.run.overheads): what each
mapping reads into ``run.eval_every_steps``, ``eval_at_start``, ``eval_at_end``, ``eval_prompts``, ``eval_group_size``,
``checkpoint_every_steps`` and ``checkpoint_at_end``. A period of -1 or 0 is the frameworks' "never".

* verl (volcengine/verl@v0.7.0): ``trainer.test_freq`` > 0 validates at its multiples and at the last step, and
  ``trainer.val_before_train`` (True) once before, whatever test_freq says (verl/trainer/ppo/ray_trainer.py:1299,
  1562-1566); ``save_freq`` > 0
  saves at its multiples and the last step (ray_trainer.py:1585-1587); ``rollout.val_kwargs.n`` responses per
  validation prompt. The validation set's size is the data file's: not in the config, so one training step's prompts
  are assumed (and said).
* NeMo RL (NVIDIA-NeMo/RL@v0.7.0): ``grpo.val_period`` > 0, ``val_at_start``, ``val_at_end`` (nemo_rl/algorithms/
  grpo.py:2194, 2757-2760), ``grpo.max_val_samples`` prompts; ``checkpointing.enabled`` with ``save_period``, and the
  last step (grpo.py:2872-2876). Absent keys take examples/configs/grpo_math_1B.yaml's values, as the mapping's
  other defaults do: val_period 10, max_val_samples 256, checkpointing enabled with save_period 10 (lines 10, 16,
  90, 95).
* OpenRLHF (OpenRLHF/OpenRLHF@v0.11.0): ``eval.steps`` > 0 with an ``eval.dataset`` (openrlhf/trainer/ppo_trainer.py:
  464-465, 559), ``eval.n_samples_per_prompt`` (4) responses each; ``ckpt.save_steps`` > 0 (ppo_trainer.py:393,
  466-467).
* TRL (transformers' Trainer under GRPOTrainer): ``save_strategy`` "steps" with ``save_steps`` (500) and
  ``eval_strategy`` "steps" with ``eval_steps``, both counted in optimizer steps (transformers TrainingArguments'
  defaults: save_strategy "steps", save_steps 500, eval_strategy "no"); one rlsim step, a generation round, is
  mini-batches x num_iterations optimizer steps (rlsim.frameworks.trl.mapping), so a period becomes that many
  rounds, rounded; ``eval_on_start``. A fractional period (a share of the run) is not read.
"""

from __future__ import annotations

from typing import Any

from rlsim.frameworks.adapter import Source


def _period(value: Any) -> int | None:
    """A framework's period: a positive integer, else None (-1, 0, null: never)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    return int(value)


def _section(
    eval_every: int | None,
    at_start: bool,
    at_end: bool,
    prompts: int | None,
    group: int,
    save_every: int | None,
    save_at_end: bool,
) -> dict[str, Any]:
    run: dict[str, Any] = {}
    if eval_every or at_start or at_end:
        run.update(eval_every_steps=eval_every, eval_at_start=at_start, eval_at_end=at_end, eval_group_size=group)
        if prompts:
            run["eval_prompts"] = prompts
    if save_every or save_at_end:
        run.update(checkpoint_every_steps=save_every, checkpoint_at_end=save_at_end)
    return {k: v for k, v in run.items() if v is not None}


def _eval_note(run: dict[str, Any], where: str, notes: list[str]) -> None:
    if run.get("eval_every_steps") or run.get("eval_at_start") or run.get("eval_at_end"):
        if "eval_prompts" not in run:
            notes.append(
                f"evaluation ({where}): the validation set's size is not in the config; one training step's prompts "
                "assumed (--scenario-set run.eval_prompts=N)"
            )


def verl(src: Source, notes: list[str]) -> dict[str, Any]:
    test = _period(src.get("trainer.test_freq"))
    run = _section(
        test,
        bool(src.get("trainer.val_before_train")),  # whether or not test_freq is set (ray_trainer.py:1299)
        test is not None,
        None,
        int(src.get("actor_rollout_ref.rollout.val_kwargs.n") or 1),
        _period(src.get("trainer.save_freq")),
        _period(src.get("trainer.save_freq")) is not None,
    )
    _eval_note(run, "trainer.test_freq", notes)
    return run


def nemo_rl(src: Source, notes: list[str]) -> dict[str, Any]:
    val = _period(src.get("grpo.val_period"))
    save = _period(src.get("checkpointing.save_period")) if src.get("checkpointing.enabled") else None
    run = _section(
        val,
        bool(src.get("grpo.val_at_start")),
        bool(src.get("grpo.val_at_end")),
        _period(src.get("grpo.max_val_samples")),
        1,
        save,
        save is not None,
    )
    _eval_note(run, "grpo.val_period", notes)
    return run


def openrlhf(src: Source, notes: list[str]) -> dict[str, Any]:
    steps = _period(src.get("eval.steps")) if src.get("eval.dataset") else None
    run = _section(
        steps, False, False, None, int(src.get("eval.n_samples_per_prompt") or 1), _period(src.get("ckpt.save_steps")),
        False,
    )  # fmt: skip
    _eval_note(run, "eval.steps", notes)
    return run


def _rounds(src: Source, key: str, per_round: int, notes: list[str]) -> int | None:
    """A TRL period in optimizer steps as generation rounds (rlsim steps), or None (unset, or a share of the run)."""
    value = src.get(key)
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    if value < 1:
        notes.append(f"{key} {value}: a share of the run's steps is not read; --scenario-set the run field")
        return None
    rounds = max(1, round(value / per_round))
    if rounds * per_round != value:
        notes.append(f"{key} {value:g} optimizer steps read as every {rounds} rounds of {per_round} optimizer steps")
    return rounds


def trl(src: Source, per_round: int, group: int, notes: list[str]) -> dict[str, Any]:
    save = _rounds(src, "save_steps", per_round, notes) if src.get("save_strategy") == "steps" else None
    evals = _rounds(src, "eval_steps", per_round, notes) if src.get("eval_strategy") == "steps" else None
    if src.get("eval_strategy") == "steps" and src.get("eval_steps") is None:
        notes.append("eval_strategy steps without eval_steps (transformers then takes logging_steps): not read")
    run = _section(evals, bool(src.get("eval_on_start")), False, None, group, save, False)
    _eval_note(run, "eval_steps", notes)
    return run
