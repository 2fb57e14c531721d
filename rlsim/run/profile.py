"""Calibrated profiles: versioned JSON holding fitted cost-model coefficients, their provenance and validity.

A profile does not bring its own formulas: it supplies fitted values for the roofline coefficients in
``Scenario.costs`` (efficiencies as fractions of the catalog peak, overheads in seconds). Efficiencies fitted on
one device therefore carry to another through the roofline: the target GPU's peaks times the fitted fractions.

Schema (``schema_version`` 2; version 1 files, without ``lengths``, still load)::

    {
      "schema": "rlsim-profile", "schema_version": 2,
      "provenance": {"device": "...", "engine": "vllm", "engine_version": "...", "torch_version": "...",
                     "model": "...", "dtype": "bfloat16", "date": "2026-11-30", "command": "..."},
      "phases": {
        "<phase name>": {
          "form": "roofline",                           # the cost form the parameters belong to
          "parameters": {"<Costs field>": value, ...},  # fitted values
          "uncertainty": {"<Costs field>": one_sigma, ...},
          "fitted_range": {"batch": [lo, hi], "context_tokens": [lo, hi], "tokens_per_gpu": [lo, hi]},
          "held_out": {"method": "kfold-5", "mape": 0.04, "max_abs_pct_error": 0.11, "num_points": 40}
        }
      },
      "lengths": null or {"prompt_length": {...}, "response_length": {...}, ...},   # rlsim.scenario.LengthDist
      "learning": null or {"version": 1, "reference_batch": 128, "metric": {...}, "target": 0.9,
                           "batch_multiplier": {...}, "samples_spread": 0.2, ...}  # rlsim.learning.model
    }

The ``learning`` section (``rlsim-calibrate fit --runs`` or ``fit-learning`` writes one; typed: ``version`` 1, and
its rlsim fields are checked at load as a scenario's would be) replaces the scenario's learning model in
``rlsim.simulate``: its ``reference_batch`` (the batch the metric curve was measured at, where the scenario's lr0
then holds), ``metric``, ``target``, ``batch_multiplier``, ``samples_spread`` and ``invariant_rule``, whichever it
has; the scenario's LR rule, lr0 and staleness penalty stay. Its other keys document the fit. The ``lengths``
section (the response-length model fitted on the reference runs) replaces the scenario's ``workload`` length
distributions in the same way. What a user sets on purpose wins over both: ``--set`` keys, a sweep grid's keys, a
decide side's keys, ``simulate(overrides=...)`` (``fitted_overrides``). They are applied once, together with the
user's overrides, inside ``rlsim.simulate`` (``rlsim.run.simulation.configure``), and the result is validated once.

Range keys: ``batch`` = sequences in one decode iteration of a replica, ``context_tokens`` = cached tokens of a
replica, ``tokens_per_gpu`` = prompt + response tokens per training GPU per step.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlsim.errors import ProfileError, RlsimError, ScenarioError
from rlsim.io.files import read_json
from rlsim.phases import Phase
from rlsim.scenario import apply_overrides, check_bounds, from_dict, with_overrides
from rlsim.schema import Costs, Scenario

SCHEMA = "rlsim-profile"
SCHEMA_VERSION = 2
READS_VERSIONS = (1, 2)
LEARNING_VERSION = 1
PROVENANCE_KEYS = ("device", "engine", "engine_version", "torch_version", "model", "dtype", "date", "command")
RANGE_KEYS = ("batch", "context_tokens", "tokens_per_gpu")
# the keys of a profile's learning section that replace the scenario's (rlsim.scenario.Learning fields)
LEARNING_KEYS = (
    "reference_batch",
    "metric",
    "target",
    "batch_multiplier",
    "samples_spread",
    "invariant_rule",
    "stall_probability",
    "stall_batches",
    "stall_shares",
    "ceiling_batches",
    "ceilings",
    "ceiling_errors",
    "stall_form",
    "initial_success",
    "staleness_loss",
    "staleness_form",
    "staleness_spread",
    "staleness_penalty_per_step",
    "staleness_free_steps",
    "reference_group_size",
    "prompt_concentration",
    "group_correlation",
    "filtered_signal_power",
    "family",
)
# the keys of a profile's lengths section that replace the scenario's (rlsim.scenario.Workload fields)
LENGTH_KEYS = (
    "prompt_length",
    "response_length",
    "response_length_drift",
    "response_length_by_samples",
    "length_progress",
)


@dataclass(frozen=True)
class PhaseFit:
    form: str
    parameters: dict[str, float]
    uncertainty: dict[str, float] = field(default_factory=dict)
    fitted_range: dict[str, tuple[float, float]] = field(default_factory=dict)
    held_out: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Profile:
    provenance: dict[str, Any]
    phases: dict[str, PhaseFit]
    learning: dict[str, Any] | None = None
    lengths: dict[str, Any] | None = None

    # ---- use ------------------------------------------------------------------------------------------
    def parameters(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for fit in self.phases.values():
            out.update(fit.parameters)
        return out

    def apply(self, costs: Costs) -> Costs:
        """Scenario costs with the fitted coefficients in place of the defaults."""
        return dataclasses.replace(costs, **self.parameters())

    def range_warnings(self, operating: dict[str, float]) -> list[str]:
        """Messages for each operating point outside the range it was fitted over, saying by how much."""
        msgs = []
        for phase, fit in self.phases.items():
            for key, (lo, hi) in fit.fitted_range.items():
                if key not in operating:
                    continue
                x = operating[key]
                if x > hi:
                    msgs.append(
                        f"profile phase {phase}: {key} {x:g} is above the fitted range [{lo:g}, {hi:g}] "
                        f"by {x - hi:g} ({(x / hi - 1) * 100 if hi else math.inf:.0f}%); extrapolating"
                    )
                elif x < lo:
                    msgs.append(
                        f"profile phase {phase}: {key} {x:g} is below the fitted range [{lo:g}, {hi:g}] "
                        f"by {lo - x:g} ({(1 - x / lo) * 100 if lo else 0:.0f}%); extrapolating"
                    )
        return msgs

    def learning_overrides(self) -> dict[str, Any]:
        """Dotted scenario overrides (``learning.metric``, ...) from the learning section; empty without one."""
        if not self.learning or self.learning.get("metric") is None:
            return {}
        return {f"learning.{k}": self.learning[k] for k in LEARNING_KEYS if self.learning.get(k) is not None}

    def length_overrides(self) -> dict[str, Any]:
        """Dotted scenario overrides (``workload.response_length``, ...) from the lengths section; empty without."""
        lengths = self.lengths or {}
        return {f"workload.{k}": lengths[k] for k in LENGTH_KEYS if lengths.get(k) is not None}

    def fitted_overrides(self, overrides: dict[str, Any] | None = None, keep: Iterable[str] = ()) -> dict[str, Any]:
        """The dotted overrides (``learning.metric``, ``workload.response_length``, ...) the profile's learning and
        length models put in a scenario, less those the keys of ``overrides`` and ``keep`` (what a user set on
        purpose: ``--set``, a sweep grid, a decide side) cover; a key inside a fitted field
        (``learning.metric.midpoint``) keeps that whole field."""
        kept = (*keep, *(overrides or {}))
        out = {
            k: v
            for k, v in {**self.learning_overrides(), **self.length_overrides()}.items()
            if not any(x == k or x.startswith(k + ".") or k.startswith(x + ".") for x in kept)
        }
        # the fitted response lengths are measured (workload.length_source), unless the user's own replace them
        if any(k.startswith("workload.response_length") for k in out) and "workload.length_source" not in kept:
            out["workload.length_source"] = "measured"
            out["workload.length_note"] = "fitted to the profile's runs (rlsim-calibrate fit --runs)"
            out["workload.length_range_tokens"] = None
        return out

    def with_fitted(
        self, scenario: Scenario, overrides: dict[str, Any] | None = None, keep: Iterable[str] = ()
    ) -> Scenario:
        """``scenario`` with the profile's learning model and length model in place of its own (unchanged without
        them), then ``overrides`` on top; the keys of ``overrides`` and ``keep`` win over the profile
        (:meth:`fitted_overrides`). Both apply at once, so a target set for the profile's curve is valid, and the
        result is validated once."""
        mine = self.fitted_overrides(overrides, keep)
        if not mine:
            return with_overrides(scenario, overrides) if overrides else scenario
        try:
            return with_overrides(scenario, {**mine, **(overrides or {})})
        except ScenarioError as exc:
            if overrides:  # an error may be the user's as much as the profile's: report the field as is
                raise
            raise fitted_error(exc) from None

    def info(self) -> dict[str, Any]:
        """What a summary or report shows about the profile used."""
        out = {
            "provenance": self.provenance,
            "parameters": self.parameters(),
            "held_out": {p: f.held_out for p, f in self.phases.items()},
        }
        over = self.learning_overrides()
        if self.lengths:
            out["lengths"] = {k: self.lengths[k] for k in LENGTH_KEYS if self.lengths.get(k) is not None}
        if over:
            out["learning"] = {k.removeprefix("learning."): v for k, v in over.items() if k != "learning.metric"}
        return out

    # ---- files ----------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "provenance": self.provenance,
            "phases": {
                p: {
                    "form": f.form,
                    "parameters": f.parameters,
                    "uncertainty": f.uncertainty,
                    "fitted_range": {k: list(v) for k, v in f.fitted_range.items()},
                    "held_out": f.held_out,
                }
                for p, f in self.phases.items()
            },
            "lengths": self.lengths,
            "learning": self.learning,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)


def profile_from_dict(data: Any, where: str = "profile") -> Profile:
    """Validate and build a profile; ProfileError names the broken key."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ProfileError(f'{where}: not an rlsim profile (missing "schema": "{SCHEMA}")')
    if data.get("schema_version") not in READS_VERSIONS:
        raise ProfileError(
            f"{where}: schema_version {data.get('schema_version')!r} is not supported "
            f"(this rlsim reads {' and '.join(map(str, READS_VERSIONS))}); refit with this version"
        )
    prov = data.get("provenance")
    if not isinstance(prov, dict) or any(k not in prov for k in PROVENANCE_KEYS):
        missing = [k for k in PROVENANCE_KEYS if not isinstance(prov, dict) or k not in prov]
        raise ProfileError(f"{where}: provenance misses {', '.join(missing)}")
    phases_raw = data.get("phases")
    if not isinstance(phases_raw, dict) or not phases_raw:
        raise ProfileError(f"{where}: phases must be a non-empty mapping of phase name -> fit")
    cost_fields = {f.name: f for f in dataclasses.fields(Costs)}
    phase_names = {p.value for p in Phase}
    phases: dict[str, PhaseFit] = {}
    for name, fit in phases_raw.items():
        at = f"{where}: phases.{name}"
        if name not in phase_names:
            raise ProfileError(f"{at}: unknown phase; phases are {', '.join(sorted(phase_names))}")
        if not isinstance(fit, dict) or not isinstance(fit.get("parameters"), dict):
            raise ProfileError(f"{at}: needs a parameters mapping")
        for key, value in fit["parameters"].items():
            if key not in cost_fields:
                raise ProfileError(f"{at}.parameters.{key}: not a cost coefficient; known: {', '.join(cost_fields)}")
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise ProfileError(f"{at}.parameters.{key}: {value!r} is not a finite number")
            try:
                check_bounds(value, f"{at}.parameters.{key}", cost_fields[key].metadata)
            except ValueError as exc:
                raise ProfileError(str(exc)) from None
        ranges = {}
        for key, pair in (fit.get("fitted_range") or {}).items():
            ok = key in RANGE_KEYS and isinstance(pair, (list, tuple)) and len(pair) == 2
            ok = ok and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in pair)
            if not ok or pair[0] > pair[1]:
                raise ProfileError(
                    f"{at}.fitted_range.{key}: must be one of {', '.join(RANGE_KEYS)} with [lo, hi], "
                    "finite numbers, lo <= hi"
                )
            ranges[key] = (float(pair[0]), float(pair[1]))
        uncertainty = fit.get("uncertainty") or {}
        if not isinstance(uncertainty, dict):
            raise ProfileError(f"{at}.uncertainty: must be a mapping of coefficient -> one standard deviation")
        for key, value in uncertainty.items():
            if key not in cost_fields:
                raise ProfileError(f"{at}.uncertainty.{key}: not a cost coefficient")
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
                raise ProfileError(f"{at}.uncertainty.{key}: {value!r} must be a finite number >= 0")
        held_out = fit.get("held_out") or {}
        if not isinstance(held_out, dict):
            raise ProfileError(f"{at}.held_out: must be a mapping (method, mape, max_abs_pct_error, num_points)")
        phases[name] = PhaseFit(
            form=str(fit.get("form", "roofline")),
            parameters={k: float(v) for k, v in fit["parameters"].items()},
            uncertainty={k: float(v) for k, v in uncertainty.items()},
            fitted_range=ranges,
            held_out=dict(held_out),
        )
    learning, lengths = data.get("learning"), data.get("lengths")
    if learning is not None and not isinstance(learning, dict):
        raise ProfileError(f"{where}: learning must be null or a mapping (rlsim-calibrate fit --runs writes it)")
    if lengths is not None and not isinstance(lengths, dict):
        raise ProfileError(f"{where}: lengths must be null or a mapping (rlsim-calibrate fit --runs writes it)")
    profile = Profile(provenance=dict(prov), phases=phases, learning=learning, lengths=lengths)
    _check_fitted(profile, data["schema_version"], where)
    return profile


# a small scenario that the fitted sections are applied to at load (their checks do not depend on it)
CHECK_SCENARIO = {"model": "Qwen2.5-0.5B", "hardware": {"gpu": "H100-SXM", "num_gpus": 1}}


def _check_fitted(profile: Profile, schema_version: int, where: str) -> None:
    """The learning and lengths sections are checked as a scenario's sections would be: applied to the default
    scenario, so a wrong type, a value out of range or an unreachable target fails here, naming the key."""
    # here, not at the top: it loads numpy (start-up time)
    from rlsim.learning.model import LearningModelError, reference_samples_to_target

    learning = profile.learning
    if learning is not None and schema_version >= 2 and learning.get("version") != LEARNING_VERSION:
        raise ProfileError(
            f"{where}: learning.version {learning.get('version')!r} is not {LEARNING_VERSION}; refit the learning "
            "model with this rlsim (rlsim-calibrate fit --runs)"
        )
    if learning is not None and learning.get("metric") is None and any(k in learning for k in LEARNING_KEYS[2:]):
        raise ProfileError(f"{where}: learning has no metric curve; refit it (rlsim-calibrate fit --runs)")
    over = {**profile.learning_overrides(), **profile.length_overrides()}
    if not over:
        return
    try:
        scn = from_dict(apply_overrides(CHECK_SCENARIO, over))
    except ScenarioError as exc:
        raise ProfileError(f"{where}: {exc}") from None
    if scn.learning.metric is not None and scn.learning.target is not None:
        try:
            reference_samples_to_target(scn.learning.metric, scn.learning.target)
        except LearningModelError as exc:
            raise ProfileError(f"{where}: {exc}") from None


def fitted_error(exc: ScenarioError) -> ProfileError:
    """The error of a scenario that the profile's learning or lengths section alone made invalid."""
    return ProfileError(f"profile learning or lengths section: {exc}; refit it with rlsim-calibrate fit")


def load_profile(path: str | Path) -> Profile:
    p = Path(path)
    if not p.is_file():
        raise ProfileError(f"profile {p}: no such file; give the path of a profile JSON from rlsim-calibrate fit")

    try:  # the one JSON reader: binary, non-UTF-8, invalid or too deeply nested files are one line
        data = read_json(p, "give a profile JSON from rlsim-calibrate fit")
    except RlsimError as exc:
        raise ProfileError(f"profile {exc}") from None
    return profile_from_dict(data, where=f"profile {p}")


def operating_point(scenario: Scenario, records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Where a simulated run operated, in the profile's range keys (the largest values seen)."""
    per_replica = math.ceil(scenario.workload.prompts_per_step / scenario.num_replicas) * scenario.workload.group_size
    tokens = max(r["prompt_tokens"] + r["response_tokens"] for r in records)
    return {
        "batch": float(min(scenario.engine.max_num_seqs, per_replica)),
        "context_tokens": float(max(r["peak_kv_tokens"] for r in records)),
        "tokens_per_gpu": tokens / scenario.hardware.num_train_gpus,
    }
