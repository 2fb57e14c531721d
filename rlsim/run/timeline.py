"""Systems in, timeline out: a scenario's systems side simulated once and looked up after that.

A timeline is what the discrete-event pipeline (rlsim.run.pipeline) gives for a scenario: the per-step records (step
times, tokens, preemptions, phase timings, utilization) and the spans. It depends on the scenario's systems inputs
only, a profile's fitted costs folded into its ``costs`` section (rlsim.run.simulation.systems_scenario): the
learning model is not among them, except where the response lengths follow the summed learning rate
(``workload.length_progress: learning_rate`` reads ``learning.lr_rule`` and ``learning.reference_batch``).
:func:`systems_key` is exactly those inputs, as a key, so scenarios that differ only in their learning model
(the learning-rate rules of one batch size, a target, a curve) share a timeline.

:class:`Timelines` is the cache a command holds: ``get(scenario)`` simulates ``scenario.run.steps`` steps once per
key and serves later requests from it, a shorter one as the first steps of a longer timeline where a step never
depends on later ones (:func:`prefix_exact`; a streaming window's later batches are drawn and simulated whatever
the run's length, rlsim.run.batches.step_requests). Its ``simulated`` counts the pipeline runs it made. The
scenario-dependent fields of the records (run id, learning rate) are the answer's to set (rlsim.run.simulation).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from rlsim.io.records import RunLogRecord
from rlsim.run.costs import RooflineCostModel
from rlsim.run.pipeline import run_pipeline
from rlsim.run.pools import Span, add_utilization
from rlsim.run.reuse import Reuse
from rlsim.schema import Run, Scenario

# run fields the pipeline never reads (the step count is the request's, not the key's)
_NOT_SYSTEMS_RUN = ("steps", "until_target", "max_steps", "band_seeds")
_RUN_FIELDS = tuple(f.name for f in dataclasses.fields(Run) if f.name not in _NOT_SYSTEMS_RUN)
# learning fields the pipeline reads when the lengths follow the summed learning rate (rlsim.workload.lengths.progress)
_LENGTH_LEARNING = ("lr_rule", "reference_batch")


# the scenario's sections outside the key: the learning model and the run (their systems parts are added apart),
# labels and other commands' inputs; every other section is in it, a section added later included
_NOT_SYSTEMS = frozenset({"learning", "run", "name", "description", "assumptions", "sweep", "plan"})
_SYSTEMS_SECTIONS = tuple(f.name for f in dataclasses.fields(Scenario) if f.name not in _NOT_SYSTEMS)


def systems_key(scenario: Scenario) -> tuple:
    """What a timeline of ``scenario`` depends on, as a key: its systems sections (frozen, compared by value), its
    ``costs`` among them (a profile's fitted coefficients folded in), the run's fields but the step count, and of
    the learning model only what the lengths read."""
    run = tuple(getattr(scenario.run, f) for f in _RUN_FIELDS)
    reads = _LENGTH_LEARNING if scenario.workload.length_progress != "samples" else ()
    return (
        *(getattr(scenario, name) for name in _SYSTEMS_SECTIONS),
        run,
        tuple(getattr(scenario.learning, k) for k in reads),
    )


def prefix_exact(scenario: Scenario) -> bool:
    """Whether a run's first n steps are those of a run of n steps. Not under an async schedule without in-flight
    weight updates: a step's weight sync waits for the engines to be idle, so for the rollout of a later step
    already under way, which a longer run starts and a shorter one never does."""
    s = scenario.schedule
    if s.mode == "fully-async":  # likewise a sync that waits for the responses in flight (no partial rollout)
        return s.partial_rollout
    return not (s.mode == "async" and s.staleness > 0 and not s.in_flight_weight_updates)


@dataclass(frozen=True)
class Timeline:
    """One simulated run's records and spans (records as rlsim.run.pipeline writes them)."""

    records: list[RunLogRecord]
    spans: list[Span]

    def first(self, scenario: Scenario, steps: int) -> Timeline:
        """The first ``steps`` steps, copied; the pools' utilization recounted without the later steps' spans (a
        rollout of the next step may start before this one ends)."""
        if steps > len(self.records):
            raise ValueError(f"a timeline of {len(self.records)} steps has no first {steps}")
        kept = [sp for sp in self.spans if sp.step <= steps]
        records: list[RunLogRecord] = [{**rec, "timing_s": dict(rec["timing_s"])} for rec in self.records[:steps]]
        if steps < len(self.records):
            add_utilization(scenario, records, kept)
        return Timeline(records, kept)


class Timelines:
    """The timelines one command has simulated, by :func:`systems_key`; ``simulated`` counts pipeline runs. With a
    ``reuse`` (rlsim.run.reuse.Reuse) its runs share their sampled lengths and equal rollouts."""

    def __init__(self, reuse: Reuse | None = None, free_generation: bool = False) -> None:
        self._store: dict[tuple, Timeline] = {}
        self.simulated = 0
        self.reuse = reuse
        self.free_generation = free_generation  # every timeline with generation free: a lower bound (run_pipeline)

    def get(self, scenario: Scenario, progress: Callable[[int], None] | None = None) -> Timeline:
        """The timeline of ``scn.run.steps`` steps of ``scenario`` (under its ``costs``): from the cache when it holds
        that many steps of the same systems (or more, where :func:`prefix_exact`), else simulated (``progress(step)``
        after each step) and kept when it is the longest of its key."""
        have = self._cached(scenario)
        steps = scenario.run.steps
        if have is not None:
            return have.first(scenario, steps)
        key = systems_key(scenario)
        records, spans = run_pipeline(scenario, RooflineCostModel(scenario), progress, self.reuse, self.free_generation)
        self.simulated += 1
        made = Timeline(records, spans)
        if key not in self._store or steps > len(self._store[key].records):
            self._store[key] = made
        return made.first(scenario, steps)

    def holds(self, scenario: Scenario) -> bool:
        """Whether :meth:`get` would answer ``scenario`` from the cache, simulating nothing."""
        return self._cached(scenario) is not None

    def _cached(self, scenario: Scenario) -> Timeline | None:
        have = self._store.get(systems_key(scenario))
        steps = scenario.run.steps
        if have is not None and (len(have.records) == steps or (len(have.records) > steps and prefix_exact(scenario))):
            return have
        return None
