"""Sweeps: the Cartesian product of scenario overrides, simulated in parallel, one row per configuration.

Each configuration runs until its target (``run.until_target``) when the scenario has a learning model, with the
time-to-target band. Rows hold throughput, samples-to-target, time-to-target with its band, GPU-hours and the
phase breakdown; a configuration the scenario rules reject (a model that does not fit, say) gets a row with its
``error`` instead of stopping the sweep.

A configuration whose KV cache thrashes is simulated with the fast thrash model (``engine.thrash_model: fast``,
rlsim.engine.kernel._host_tail; makespans within 1% of the exact model's on recorded thrashing steps, within 1.5%
on a small engine: docs/results/fast_thrash.md, CHANGELOG.md) unless the sweep is told ``screen_thrash="exact"``
or the grid or the user's own overrides set the model; the best ``finalists`` rows that thrashed are then simulated
again with the scenario's own model, in place of their screened rows. Each row's ``thrash_model`` says which model
simulated its preemptions (empty where nothing was preempted: there the two models are the same simulation).

A sweep to the target *screens* its rows (``screen=True``, the default): each runs at most the band's window
(rlsim.run.simulation.BAND_STEPS + 2 x max_staleness steps, which its band runs simulate anyway) and its time to
target is extrapolated from there at the steady step time, its curve continued likewise (rows and curve points
``extrapolated``); the best ``finalists`` rows that were cut short or thrashed are then simulated in full with the
scenario's own thrash model. On the paper sweep the screened times to target are the full runs' within 0.5%
(docs/design.md, "Sweeps screen their rows"); ``screen=False`` (``rlsim sweep --full``) simulates every row to
its target.

Executors: ``local`` (processes on this machine, ``concurrent.futures``) and ``ray`` (a Ray cluster: a new local
instance, or an existing one via ``address``). Both run the same pure function per configuration, so they give
the same table.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rlsim.answers.answer import reference_row
from rlsim.answers.sensitivity import Candidate, analyse, label
from rlsim.engine.iteration import decode_iteration_s
from rlsim.errors import RlsimError, ScenarioError
from rlsim.host.executor import run_tasks
from rlsim.learning.model import samples_to_target
from rlsim.run.costs import RooflineCostModel
from rlsim.run.profile import Profile, profile_from_dict
from rlsim.run.result import length_columns
from rlsim.run.tasks import ConfigTask
from rlsim.scenario import parse_scalar, split_assignment
from rlsim.scenario.build import with_learning
from rlsim.schema import Scenario
from rlsim.workload.lengths import dist_mean

FINALISTS = 5  # best rows extrapolated or thrashing under the screen, simulated again in full with the scenario's own
THRASH_KEY = "engine.thrash_model"


@dataclass
class SweepResult:
    scenario: Scenario
    grid: dict[str, list[Any]]
    table: pd.DataFrame  # one row per configuration
    curves: pd.DataFrame  # per configuration and step: cumulative samples, wall-clock, predicted metric
    engine_curves: pd.DataFrame  # generation tokens/s vs concurrency per distinct engine setup
    profile_info: dict[str, Any] | None = None
    screen_thrash: str | None = None  # the thrash model the rows were screened with, None: the scenario's own
    resimulated: tuple[int, ...] = ()  # configurations simulated again, in full with the scenario's own thrash model
    screened: bool = False  # rows ran at most their band's window, the rest extrapolated (column extrapolated)
    # the learning side of the answer: break-even, the winner under each preset (rlsim.answers.sensitivity)
    sensitivity: dict[str, Any] | None = None


def parse_grid(items: Iterable[str]) -> dict[str, list[Any]]:
    """``["workload.prompts_per_step=64,128", "learning.lr_rule=sqrt,none"]`` -> grid mapping: each item a
    ``key=v1,v2,...`` (rlsim.scenario.overrides), its values split at commas, empty ones dropped."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        key, values = split_assignment(item, "--grid", "run.seed=0,1,2", "key=v1,v2,...")
        grid[key] = [parse_scalar(v.strip()) for v in values.split(",") if v.strip()]
        if not grid[key]:
            raise ScenarioError("--grid", item, "lists no values", "write e.g. run.seed=0,1,2")
    return grid


def expand_grid(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """All combinations, the last key varying fastest (as itertools.product)."""
    if not grid:
        return [{}]
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def run_configs(task: ConfigTask) -> list[dict[str, Any]]:
    """Simulate the task's configurations to their targets in one process (picklable for process pools and Ray),
    with one timeline cache (rlsim.run.timeline): those whose overrides differ only in ``learning.*`` values (the LR
    rules of one batch size) share the systems side, the longest run simulated first and the others looked up in
    it; the rows are those of one run each. With ``task.screen`` each run is screened: at most its band's window,
    the rest extrapolated. Returns per configuration its row, its curve and the engine curve of its setup (None
    when the configuration is invalid)."""
    # here, not at the top: it loads simpy (start-up time)
    from rlsim.run.simulation import BAND_STEPS, configure, planned_steps, predict
    from rlsim.run.timeline import Timelines

    base, configs, profile_dict, explicit, screen = task.base, task.configs, task.profile, task.explicit, task.screen
    rows = [{"config": index, **dict(overrides)} for index, overrides in configs]
    out: list[dict[str, Any]] = [{"row": row, "curve": [], "engine": None} for row in rows]
    valid: list[tuple[int, Scenario, int]] = []
    profile = None
    try:
        profile = profile_from_dict(profile_dict) if profile_dict else None
    except RlsimError as exc:
        for row in rows:
            row["error"] = str(exc)
        return out
    for i, (_, overrides) in enumerate(configs):
        try:
            # the profile's learning model, then the configuration (which wins), validated once; it runs to the
            # target when there is a learning model
            scn = configure(base, profile, overrides, explicit)
            out[i]["engine"] = {"key": _engine_key(scn), "curve": engine_curve(scn)}
            valid.append((i, scn, planned_steps(scn, to_target=True)))
        except RlsimError as exc:
            rows[i]["error"] = str(exc)
    timelines = Timelines()
    for i, scn, _ in sorted(valid, key=lambda v: -v[2]):  # the longest first: the shorter runs are its start
        window = BAND_STEPS + 2 * scn.schedule.staleness if screen else None
        try:
            result = predict(scn, profile, with_band=True, to_target=True, timelines=timelines, screen_steps=window)
        except RlsimError as exc:
            rows[i]["error"] = str(exc)
            continue
        out[i]["curve"] = _fill_row(rows[i], result)
    return out


def _fill_row(row: dict[str, Any], result: Any) -> list[dict[str, Any]]:
    """A configuration's row from its result (in place); returns its curve."""
    index = row["config"]
    scn = result.scenario
    s = result.summary()
    more = result.continued  # a screened run: its curve continued to the target at the steady step time
    row.update(
        error=None,
        prompts_per_step=scn.workload.prompts_per_step,
        group_size=scn.workload.group_size,
        responses_per_step=scn.workload.responses_per_step,
        lr_rule=scn.learning.lr_rule,
        lr=result.records[0]["lr"],
        gpu=scn.hardware.gpu.name,
        num_gpus=scn.hardware.num_gpus,
        schedule=scn.schedule.mode,
        max_staleness=scn.schedule.staleness,
        steps=s["steps"] + len(more),  # the run's length to the target (and the drain), simulated or not
        simulated_steps=s["steps"],
        # the time to target extrapolated past the last simulated step: a screened row, or one run.max_steps cut
        extrapolated=bool(s.get("time_to_target_extrapolated")),
        step_time_s=s["step_time_s"],
        samples_per_s=s["samples_per_s"],
        generation_tokens_per_s=s["generation_tokens_per_s"],
        tokens_per_s_per_gpu=s["tokens_per_s_per_gpu"],
        mean_decode_batch=s["mean_decode_batch"],
        # the KV-cache thrash (rlsim.answers.thrash; 0 where nothing is preempted): where along the grid it starts
        preemptions_per_response=(s["thrash"] or {}).get("preemptions_per_response", 0.0),
        recompute_share=(s["thrash"] or {}).get("recompute_share", 0.0),
        thrash_model=(s["thrash"] or {}).get("thrash_model"),  # None: nothing preempted, the models agree
        replicas=s["replicas"],
        samples_to_target=s["samples_to_target"],
        time_to_target_s=s["time_to_target_s"],
        time_to_target_low_s=(s.get("time_to_target_band_s") or [None, None])[0],
        time_to_target_high_s=(s.get("time_to_target_band_s") or [None, None])[1],
        gpu_hours_to_target=s.get("gpu_hours_to_target"),
        probability_reaching_target=s.get("probability_reaching_target"),
        samples_to_target_if_reached=s.get("samples_to_target_if_reached"),
        time_to_target_if_reached_s=s.get("time_to_target_if_reached_s"),
        warnings=" | ".join(s["warnings"]) or None,
        **length_columns(s),  # assumed lengths: the answer at their range's ends (rlsim.run.length_range)
    )
    for phase, sec in s["phase_time_s"].items():
        row[f"phase_time_s/{phase}"] = sec
    for mult, value in (s.get("samples_multiplier") or {}).items():
        row[f"samples_multiplier/{mult}"] = value
    return [
        {
            "config": index,
            "step": r["step"],
            "cumulative_samples": r["cumulative_samples"],
            "wall_s": r["wall_s"],
            "eval_metric": r["eval_metric"],
            "extrapolated": extra,
        }
        for rows, extra in ((result.records, False), (more, True))
        for r in rows
    ]


def engine_curve(scenario: Scenario, points: int = 24) -> pd.DataFrame:
    """Tokens/s of one replica's decode iteration vs concurrency b, at the workload's mean context per sequence."""
    d = RooflineCostModel.from_scenario(scenario).decode_coefficients()
    ctx = dist_mean(scenario.workload.prompt_length) + dist_mean(scenario.workload.response_length) / 2.0
    batches = np.unique(np.geomspace(1, scenario.engine.max_num_seqs, points).round().astype(int))
    batches = (
        batches[batches * ctx <= scenario.kv_capacity_tokens]
        if (batches * ctx <= scenario.kv_capacity_tokens).any()
        else batches[:1]
    )
    tps = [b / decode_iteration_s(d, int(b), b * ctx) for b in batches]
    label = f"{scenario.model.name} / {scenario.hardware.gpu.name} / TP{scenario.engine.tensor_parallel_size}"
    return pd.DataFrame({"engine": label, "concurrency": batches, "tokens_per_s_per_replica": tps})


def _engine_key(scenario: Scenario) -> tuple[str, str, int, int]:
    """What tells one engine curve from another: model, GPU, tensor parallelism, max_num_seqs."""
    return (
        scenario.model.name,
        scenario.hardware.gpu.name,
        scenario.engine.tensor_parallel_size,
        scenario.engine.max_num_seqs,
    )


def sweep(
    scenario: Scenario,
    grid: dict[str, list[Any]] | None = None,
    profile: Profile | None = None,
    executor: str = "local",
    address: str | None = None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    explicit: Iterable[str] = (),
    screen_thrash: str = "fast",
    finalists: int = FINALISTS,
    screen: bool = True,
) -> SweepResult:
    """Run every configuration of ``grid`` (default: the scenario's ``sweep.grid``) and tabulate them. The grid's
    keys and ``explicit`` (keys the user set on ``scenario``) win over a profile's learning section. With
    ``screen`` each run to the target stops at its band's window and is extrapolated; a KV-cache thrash is
    simulated with ``screen_thrash`` (engine.thrash_model); the best ``finalists`` rows extrapolated or thrashing
    are simulated again in full with the scenario's own model (module docstring); ``progress`` counts the
    screen's configurations."""
    # here, not at the top: it loads simpy (start-up time)
    from rlsim.run.simulation import configure

    explicit = list(explicit)
    grid = {k: list(v) for k, v in (grid if grid is not None else scenario.sweep.grid).items()}
    configs = expand_grid(grid)
    for key in grid:  # fail fast on a key the scenario does not have (before starting processes)
        if not grid[key]:
            raise ScenarioError(f"sweep.grid.{key}", grid[key], "lists no values", "give at least one value")
        configure(scenario, profile, {key: grid[key][0]}, explicit)
    if screen_thrash not in ("fast", "exact"):
        raise ScenarioError("--screen-thrash", screen_thrash, "is not a thrash model", "use fast or exact")
    if finalists < 0:
        raise ScenarioError("--finalists", finalists, "is negative", "give 0 or more rows to simulate again")
    base = scenario.to_dict()  # each configuration validates base + its overrides once (run_configs)
    prof = profile.to_dict() if profile is not None else None
    hints = [_cost_hint(scenario, profile, cfg, explicit, screen) for cfg in configs]
    screened = THRASH_KEY not in grid and THRASH_KEY not in explicit and screen_thrash != scenario.engine.thrash_model
    first = {**base, "engine": {**base["engine"], "thrash_model": screen_thrash}} if screened else base
    run = (executor, address, workers)
    outputs = _simulate(first, configs, range(len(configs)), prof, explicit, hints, run, progress, screen)
    again = _finalists([o["row"] for o in outputs], finalists, screened)
    if again:
        full = [_cost_hint(scenario, profile, c, explicit, False) if i in again else 0.0 for i, c in enumerate(configs)]
        for i, out in zip(again, _simulate(base, configs, again, prof, explicit, full, run, None, False)):
            outputs[i] = out
    rows = [o["row"] for o in outputs]
    curves = [c for o in outputs for c in o["curve"]]
    engines: dict[tuple[str, str, int, int], pd.DataFrame] = {}
    for o in outputs:  # in configuration order: the first configuration of an engine setup gives its curve
        if o["engine"] is not None:
            engines.setdefault(tuple(o["engine"]["key"]), o["engine"]["curve"])
    table = pd.DataFrame(rows)
    return SweepResult(
        scenario=scenario,
        grid=grid,
        table=table,
        curves=pd.DataFrame(
            curves, columns=["config", "step", "cumulative_samples", "wall_s", "eval_metric", "extrapolated"]
        ),
        engine_curves=pd.concat(engines.values(), ignore_index=True) if engines else pd.DataFrame(),
        profile_info=profile.info() if profile is not None else None,
        screen_thrash=screen_thrash if screened else None,
        resimulated=tuple(again),
        screened=screen,
        sensitivity=sweep_sensitivity(configure(scenario, profile, {}, explicit), table, grid, profile),
    )


def sweep_sensitivity(
    base: Scenario, table: pd.DataFrame, grid: dict[str, list[Any]], profile: Profile | None = None
) -> dict[str, Any] | None:
    """The learning side of a sweep's answer (rlsim.answers.sensitivity): its fastest row against the runner-up
    and the reference batch (rlsim.answers.answer.reference_row), and under each preset; None without a target."""
    if "time_to_target_s" not in table or "error" not in table:
        return None
    ok = table[table["error"].isna() & table["time_to_target_s"].notna()]
    if ok.empty:
        return None
    cands = []
    for _, r in ok.iterrows():
        band = (r.get("time_to_target_low_s"), r.get("time_to_target_high_s"))
        cands.append(
            Candidate(
                label(int(r["config"]), {k: r[k] for k in grid if len(grid[k]) > 1}),
                {k: r[k] for k in grid},
                float(r["samples_per_s"]),
                float(r["time_to_target_s"]),
                float(r["samples_to_target"]),
                band_s=(float(band[0]), float(band[1])) if all(pd.notna(x) for x in band) else None,
            )
        )
    configs = [int(c) for c in ok["config"]]
    winner = min(range(len(cands)), key=lambda i: (cands[i].time_to_target_s, i))
    ref_config = int(reference_row(table, base.to_dict())["config"])
    ref = configs.index(ref_config) if ref_config in configs else None
    return analyse(base, cands, winner, ref, profile).as_dict()


def _simulate(
    base: dict[str, Any],
    configs: list[dict[str, Any]],
    indices: Iterable[int],
    prof: dict[str, Any] | None,
    explicit: list[str],
    hints: list[float],
    run: tuple[str, str | None, int | None],
    progress: Callable[[int, int], None] | None,
    screen: bool,
) -> list[dict[str, Any]]:
    """The outputs of run_configs for ``configs[i]``, i in ``indices`` (in that order) on ``base``, screened or
    not: those that differ only in learning values share their runs, one task per group, the longest first."""
    indices = list(indices)
    groups: dict[str, list[int]] = {}
    for i in indices:
        systems = {k: v for k, v in configs[i].items() if not k.startswith("learning.")}
        groups.setdefault(json.dumps(systems, sort_keys=True, default=str), []).append(i)
    members = list(groups.values())
    tasks = [ConfigTask(base, [(i, configs[i]) for i in group], prof, explicit, screen) for group in members]
    costs = [max(hints[i] for i in group) for group in members]  # the longest variant's run serves the rest
    done = run_tasks(run_configs, tasks, *run, progress, costs, [len(g) for g in members])
    found = {i: result for group, results in zip(members, done) for i, result in zip(group, results)}
    return [found[i] for i in indices]


def _finalists(rows: list[dict[str, Any]], count: int, thrash_screened: bool) -> list[int]:
    """Of the ``count`` best rows (shortest time-to-target; without a target, most samples/s), those the screen
    cut at their band's window or, with ``thrash_screened``, whose preemptions the screen's thrash model simulated,
    in configuration order."""

    def key(i: int) -> tuple[float, int]:
        r = rows[i]
        ttt = r.get("time_to_target_s")
        if isinstance(ttt, (int, float)) and np.isfinite(ttt):
            return (float(ttt), i)
        return (np.inf if r.get("samples_per_s") is None else -float(r["samples_per_s"]), i)

    valid = [i for i, r in enumerate(rows) if not r.get("error")]
    best = sorted(valid, key=key)[:count]

    def screened(r: dict[str, Any]) -> bool:  # its run cut at its band's window (not by run.max_steps)
        return r["steps"] > r["simulated_steps"]

    redo = [i for i in best if screened(rows[i]) or (thrash_screened and rows[i].get("thrash_model"))]
    return sorted(redo)


def _cost_hint(
    scenario: Scenario, profile: Profile | None, overrides: dict[str, Any], explicit: list[str], screen: bool
) -> float:
    """Roughly how long a configuration takes to simulate: the responses it simulates (samples-to-target when it
    runs to the target, at most its band's window when ``screen``; else steps x responses per step). Read from the
    overrides without validating the configuration (run_configs does that, once); 0 for one that cannot be read
    (it fails fast anyway)."""
    # here, not at the top: it loads simpy (start-up time)
    from rlsim.run.simulation import BAND_STEPS

    try:
        g = int(overrides.get("workload.group_size", scenario.workload.group_size))
        b = int(overrides.get("workload.prompts_per_step", scenario.workload.prompts_per_step)) * g
        steps = int(overrides.get("run.steps", scenario.run.steps))
        learning = {k: v for k, v in overrides.items() if k.startswith("learning.")}
        scn = with_learning(scenario, learning) if learning else scenario
        if profile is not None and profile.learning_overrides() and not learning:
            return float(b * steps)  # the profile's learning model applies in run_configs; any order will do
        if scn.learning.metric is None or scn.learning.target is None:
            return float(b * steps)
        k = int(overrides.get("schedule.max_staleness", scenario.schedule.staleness))
        most = scenario.run.max_steps if not screen else min(scenario.run.max_steps, BAND_STEPS + 2 * k)
        return min(samples_to_target(scn.learning, b, k, g).samples, float(b * most))
    except (RlsimError, ValueError, TypeError):
        return 0.0
