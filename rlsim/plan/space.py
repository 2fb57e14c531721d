"""The configurations ``rlsim plan`` tries: the axes, their defaults, and how they combine.

A configuration is a mapping of dotted scenario overrides (as ``--set`` takes them) plus a short label per axis
(``schedule=async-1``, ``split=36/28``). Axes and their defaults (each replaced by ``--grid`` for its key):

* batch: ``workload.prompts_per_step`` = the scenario's P x 2^k, k = -2..5 (P = 128: 32 ... 4096), and
  ``workload.group_size`` = the scenario's G (the learning model depends on B = P x G only; grid G to search
  it), or G / 2, G, 2 G where ``learning.reference_group_size`` makes G count apart from B (:func:`default_groups`).
* LR rule: ``learning.lr_rule`` = sqrt, linear, none (the rule the learning model calls trajectory-preserving,
  ``learning.invariant_rule``, is "retuned"; the others pay ``learning.untuned_lr_penalty``).
* schedule: colocated (``sync-colocated``), separate (``sync-separate``), async-1, async-2 (``async`` with
  ``max_staleness`` k), and async-4 where the scenario's ``learning.staleness_loss`` keeps its whole gain up to
  there (``decoupled_ppo``; :func:`default_schedules`).
* pool split (separate pools only): the rollout pool's share of the GPUs, 1/2, 5/8, 3/4, 7/8, each rounded to a
  whole number of engine replicas and, when the GPUs span several nodes (the scenario's ``gpus_per_node`` or its
  GPU's node size: 8 on DGX / HGX, a 4-GPU tray on GB200), to whole nodes on each side.
* engine tensor parallelism: 1, 2, 4, 8 up to one NVLink domain; replicas fill the rollout GPUs.
* training layout: under ``training.backend: megatron``, tensor parallel 1, 2, 4, 8 (within a node); FSDP has
  no layout to choose.
* GPU type (``--gpu-types``) and count (``--gpus N``, or powers of two up to ``--max-gpus N``).

Nothing is filtered here beyond arithmetic (a split needs a whole number of replicas on each side): whether a
configuration fits (memory, divisibility) is the scenario's own validation, and the plan records its message as
the reason a configuration was pruned.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlsim.errors import ScenarioError
from rlsim.learning.staleness import LOSSES, form_of
from rlsim.schema import Scenario
from rlsim.workload.lr_rules import LR_RULES

P_EXPONENTS = range(-2, 6)  # P x 2^k
SCHEDULES = ("colocated", "separate", "async-1", "async-2")
ROLLOUT_SHARES = (0.5, 0.625, 0.75, 0.875)
ENGINE_TP = (1, 2, 4, 8)
TRAIN_TP = (1, 2, 4, 8)

# dotted keys each axis sets (a --grid on any of them replaces that axis)
BATCH_KEYS = ("workload.prompts_per_step", "workload.group_size")
SCHEDULE_KEYS = ("schedule.mode", "schedule.max_staleness", "hardware.placement")
SPLIT_KEYS = ("hardware.rollout_gpus", "hardware.train_gpus")


@dataclass(frozen=True)
class Config:
    """One configuration: its overrides (dotted keys) and a label per axis."""

    overrides: dict[str, Any]
    labels: dict[str, Any] = field(default_factory=dict)

    def systems_key(self) -> tuple[tuple[str, str], ...]:
        """What the step time depends on: every override but the learning section's."""
        return tuple(sorted((k, repr(v)) for k, v in self.overrides.items() if not k.startswith("learning.")))


@dataclass(frozen=True)
class Space:
    """The axes of a plan, as values (or ``None``: the scenario's own value, not searched)."""

    prompts: tuple[int, ...]
    groups: tuple[int, ...]
    lr_rules: tuple[str, ...]
    schedules: tuple[str, ...]
    shares: tuple[float, ...]
    engine_tp: tuple[int, ...]
    train_tp: tuple[int, ...] | None
    gpus: tuple[str, ...]
    counts: tuple[int, ...]
    extra: dict[str, list[Any]] = field(default_factory=dict)  # --grid keys no axis owns
    node: int | None = None  # GPUs per node: pools over several nodes take whole nodes

    def describe(self) -> list[str]:
        """One line per axis: what is searched."""
        lines = [
            f"P (prompts per step): {', '.join(map(str, self.prompts))}",
            f"G (responses per prompt): {', '.join(map(str, self.groups))}",
            f"LR rule: {', '.join(self.lr_rules)}",
            f"schedule: {', '.join(self.schedules)}",
            f"rollout share of GPUs (separate pools): {', '.join(f'{s:g}' for s in self.shares)}",
            f"engine tensor parallel: {', '.join(map(str, self.engine_tp))}",
            f"GPU: {', '.join(self.gpus)}; GPUs: {', '.join(map(str, self.counts))}",
        ]
        if self.train_tp is not None:
            lines.append(f"training tensor parallel (megatron): {', '.join(map(str, self.train_tp))}")
        lines += [f"{k}: {', '.join(map(str, v))}" for k, v in self.extra.items()]
        return lines


def _schedule_label(mode: str, staleness: int) -> str:
    if mode == "sync-colocated":
        return "colocated"
    if mode == "sync-separate":
        return "separate"
    return f"async-{staleness}"


# options that apply only when the trainer and the engines share GPUs: a separate or async candidate takes them off,
# so that a flag carried from a colocated setup does not prune every other schedule (an imported verl config with
# weight_sync.offload_trainer pruned 504 of 600 candidates, every separate and async one)
COLOCATED_ONLY = {"weight_sync.offload_trainer": False}


def schedule_overrides(label: str) -> dict[str, Any]:
    """``colocated`` / ``separate`` / ``async-K`` -> schedule.mode, schedule.max_staleness, hardware.placement (and,
    on separate pools, COLOCATED_ONLY's options off)."""
    if label == "colocated":
        return {"schedule.mode": "sync-colocated", "schedule.max_staleness": 0, "hardware.placement": "colocated"}
    if label == "separate":
        sep = {"schedule.mode": "sync-separate", "schedule.max_staleness": 0, "hardware.placement": "separate"}
        return {**sep, **COLOCATED_ONLY}
    if label.startswith("async-") and label[6:].isdigit() and int(label[6:]) >= 1:
        k = int(label[6:])
        return {
            "schedule.mode": "async",
            "schedule.max_staleness": k,
            "hardware.placement": "separate",
            **COLOCATED_ONLY,
        }
    raise ScenarioError("--schedules", label, "is not a schedule", "use colocated, separate or async-K (K >= 1)")


def default_schedules(scenario: Scenario) -> tuple[str, ...]:
    """SCHEDULES, and async-K at the largest staleness K the scenario's staleness loss keeps its whole gain at
    (rlsim.learning.staleness: decoupled_ppo, K = 4; or the stretch form's ``staleness_free_steps``), where that is
    deeper than async-2: the staleness that is free under that loss is worth searching, since a deeper pipeline
    hides more generation."""
    loss = scenario.learning.staleness_loss
    form = form_of(loss, scenario.learning.staleness_form) if loss in LOSSES else None
    free = int(form.free_steps) if form is not None else int(scenario.learning.staleness_free_steps)
    return SCHEDULES + ((f"async-{free}",) if free > 2 else ())


def default_groups(scenario: Scenario) -> tuple[int, ...]:
    """The scenario's G alone, or G / 2, G, 2 G where the learning model counts responses per prompt apart from the
    batch (``learning.reference_group_size``, rlsim.learning.groups): then the same B at another G needs other
    samples, so G is worth searching."""
    g0 = scenario.workload.group_size
    if scenario.learning.reference_group_size is None:
        return (g0,)
    return tuple(sorted({max(2, g0 // 2), g0, 2 * g0}))


def scenario_schedule(scenario: Scenario) -> str:
    return _schedule_label(scenario.schedule.mode, scenario.schedule.staleness)


def build_space(
    scenario: Scenario,
    grid: dict[str, list[Any]] | None = None,
    gpu_types: Sequence[str] | None = None,
    gpus: int | None = None,
    max_gpus: int | None = None,
    schedules: Sequence[str] | None = None,
) -> Space:
    """The axes for scenario ``scenario``: defaults (module docstring), each replaced by a ``--grid`` of its key."""
    grid = dict(grid or {})

    def take(key: str, default: Iterable[Any]) -> tuple[Any, ...]:
        return tuple(grid.pop(key)) if key in grid else tuple(default)

    p0 = scenario.workload.prompts_per_step
    prompts = take("workload.prompts_per_step", sorted({max(1, round(p0 * 2.0**k)) for k in P_EXPONENTS}))
    groups = take("workload.group_size", default_groups(scenario))
    lr_rules = take("learning.lr_rule", LR_RULES)
    for key in SCHEDULE_KEYS + SPLIT_KEYS:
        if key in grid:
            raise ScenarioError(
                "--grid", key, "is set by the plan's schedule and pool-split axes", "use --schedules instead"
            )
    scheds = tuple(schedules) if schedules else default_schedules(scenario)
    for label in scheds:
        schedule_overrides(label)  # validates the label
    shares = ROLLOUT_SHARES
    domain = scenario.hardware.nvlink_domain
    engine_tp = take("engine.tensor_parallel_size", [t for t in ENGINE_TP if t <= domain])
    train_tp = None
    if scenario.training.backend == "megatron":
        train_tp = take("training.tensor_parallel_size", [t for t in TRAIN_TP if t <= domain])
    names = tuple(gpu_types) if gpu_types else (scenario.hardware.gpu.name,)
    names = take("hardware.gpu", names)
    if gpus is not None and max_gpus is not None:
        raise ScenarioError("--gpus", gpus, "and --max-gpus both given", "give one: a fixed count or a ceiling")
    if gpus is not None:
        counts: tuple[int, ...] = (gpus,)
    elif max_gpus is not None:
        low = max(1, min(domain, max_gpus))
        counts = tuple(sorted({c for c in (low * 2**i for i in range(32)) if c <= max_gpus} | {max_gpus}))
    else:
        counts = (scenario.hardware.num_gpus,)
    counts = take("hardware.num_gpus", counts)
    for label, values in (("workload.prompts_per_step", prompts), ("hardware.num_gpus", counts)):
        if not values:
            raise ScenarioError("--grid", label, "lists no values", "give at least one")
    node = scenario.hardware.node_gpus
    return Space(prompts, groups, lr_rules, scheds, shares, engine_tp, train_tp, names, counts, grid, node)


def _splits(n: int, tp: int, shares: Sequence[float], node: int | None = None) -> list[tuple[int, int]]:
    """(rollout GPUs, train GPUs) for each share: a whole number of TP-wide replicas on the rollout side, and
    when the GPUs span several nodes of ``node`` GPUs, whole nodes on each side (the frameworks place each pool on
    whole nodes: OpenRLHF's num_nodes x num_gpus_per_node, verl's resource pools, NeMo RL's cluster split); at
    least one GPU on each side; duplicates dropped."""
    unit = math.lcm(tp, node) if node is not None and n > node else tp
    out: list[tuple[int, int]] = []
    for share in shares:
        r = round(n * share / unit) * unit
        if 0 < r < n and (r, n - r) not in out:
            out.append((r, n - r))
    return out


def configurations(space: Space) -> list[Config]:
    """Every configuration of ``space``, in a fixed order (systems axes outermost, LR rule innermost, so that
    configurations sharing a step time are adjacent)."""
    out: list[Config] = []
    extra_keys = list(space.extra)
    extra_combos = list(itertools.product(*(space.extra[k] for k in extra_keys))) or [()]
    train_tps: Sequence[int | None] = space.train_tp if space.train_tp is not None else (None,)
    for gpu, n, sched, tp, ttp, p, g, extra in itertools.product(
        space.gpus,
        space.counts,
        space.schedules,
        space.engine_tp,
        train_tps,
        space.prompts,
        space.groups,
        extra_combos,
    ):
        sched_over = schedule_overrides(sched)
        splits: list[tuple[int, int] | None]
        separate = sched_over["hardware.placement"] == "separate"
        splits = list(_splits(n, tp, space.shares, space.node)) if separate else [None]
        for split in splits:
            base: dict[str, Any] = {
                "hardware.gpu": gpu,
                "hardware.num_gpus": n,
                **sched_over,
                "hardware.rollout_gpus": split[0] if split else None,
                "hardware.train_gpus": split[1] if split else None,
                "engine.tensor_parallel_size": tp,
                "engine.replicas": None,
                "workload.prompts_per_step": p,
                "workload.group_size": g,
                **dict(zip(extra_keys, extra)),
            }
            labels: dict[str, Any] = {
                "gpu": gpu,
                "num_gpus": n,
                "schedule": sched,
                "split": f"{split[0]}/{split[1]}" if split else "shared",
                "engine_tp": tp,
                "prompts_per_step": p,
                "group_size": g,
            }
            if ttp is not None:
                base["training.tensor_parallel_size"] = ttp
                labels["train_tp"] = ttp
            for rule in space.lr_rules:
                out.append(Config({**base, "learning.lr_rule": rule}, {**labels, "lr_rule": rule}))
    return out


def baseline_config(scenario: Scenario) -> Config:
    """The user's own configuration (the scenario as given) in the plan's terms."""
    hw = scenario.hardware
    sched = scenario_schedule(scenario)
    over: dict[str, Any] = {
        "hardware.gpu": hw.gpu.name,
        "hardware.num_gpus": hw.num_gpus,
        **schedule_overrides(sched),
        "hardware.rollout_gpus": hw.rollout_gpus,
        "hardware.train_gpus": hw.train_gpus,
        "engine.tensor_parallel_size": scenario.engine.tensor_parallel_size,
        "engine.replicas": scenario.engine.replicas,
        "workload.prompts_per_step": scenario.workload.prompts_per_step,
        "workload.group_size": scenario.workload.group_size,
        "learning.lr_rule": scenario.learning.lr_rule,
    }
    labels: dict[str, Any] = {
        "gpu": hw.gpu.name,
        "num_gpus": hw.num_gpus,
        "schedule": sched,
        "split": f"{hw.rollout_gpus}/{hw.train_gpus}" if hw.placement == "separate" else "shared",
        "engine_tp": scenario.engine.tensor_parallel_size,
        "prompts_per_step": scenario.workload.prompts_per_step,
        "group_size": scenario.workload.group_size,
        "lr_rule": scenario.learning.lr_rule,
    }
    if scenario.training.backend == "megatron":
        over["training.tensor_parallel_size"] = scenario.training.tensor_parallel_size
        labels["train_tp"] = scenario.training.tensor_parallel_size
    return Config(over, labels)
