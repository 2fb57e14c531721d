"""How much an answer rests on the learning side: the break-even samples penalty and the winner under each preset.

Time-to-target is T = N* / q: samples-to-target (the learning side) over throughput (the systems side). ``decide``,
``sweep`` and ``plan`` rank configurations by T (or by cost or GPU-hours, both proportional to T); this module
says, for the recommended configuration (the *winner*):

* **break-even samples penalty**: against the runner-up, the best configuration whose learning inputs differ (another
  batch, responses per prompt, LR rule, staleness or learning key: configurations that differ only in the systems
  side need the same samples under any learning model), the factor by which the winner's N* may grow, its
  throughput fixed, before it stops winning: f = T_runner-up / T_winner (objective over objective). Against the
  reference configuration (a sweep's reference batch, a plan's own configuration; a decision states it already)
  the planner's form of the same rule (docs/reference.md section 1; the seed paper's rule): the winner's throughput gain
  q_w / q_ref against its samples penalty N*_w / N*_ref; it wins while the gain exceeds the penalty.
* **the winner under each learning preset** that applies (rlsim.learning.presets): every candidate re-ranked with
  the preset's learning.* overrides, on its already simulated throughput: a preset changes N*, not the step time,
  so T' = T x N*' / N* (N* from rlsim.learning.model for the candidate's batch, G, LR rule and staleness under the
  scenario's model and under the preset's; the pipeline's fill scales with it, a small part of T). A candidate the
  preset says never reaches the target drops out.
* **the band**: where no fitted learning model says otherwise (no profile with a learning model fitted on runs, no
  measured batch table or ceilings: :func:`fitted_learning`), the winner's time-to-target band widens to cover its
  time-to-target under every preset ("band: the seeds' spread and the presets' spread").
* **an async run that names no loss**: a winner with staleness k > 0 whose ``learning.staleness_loss`` is the
  default ``stretch`` with penalty 0 learns as if staleness were free; it gets a one-line warning and the
  plausible losses join the presets (the staleness presets that apply, else the losses of rlsim.learning.staleness:
  naive_ppo, decoupled_ppo), so the band covers them.

Everything here is learning-side arithmetic on rows already simulated: nothing is simulated again.
"""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rlsim.answers.answer import hours
from rlsim.errors import RlsimError
from rlsim.learning.model import LearningModelError, scenario_samples_to_target
from rlsim.learning.presets import applicable
from rlsim.learning.staleness import LOSSES
from rlsim.scenario.build import with_learning
from rlsim.schema import Scenario

# the override keys that can move samples-to-target (everything else is the systems side)
LEARNING_PREFIXES = ("learning.", "workload.prompts_per_step", "workload.group_size", "schedule.", "algorithm.")
# those a candidate's scenario takes without being validated whole again (_Scenarios)
LIGHT = (
    "workload.prompts_per_step",
    "workload.group_size",
    "schedule.mode",
    "schedule.max_staleness",
    "schedule.sync_every",
    "schedule.staleness_threshold",
)


@dataclass(frozen=True)
class Candidate:
    """One configuration an answer ranked: its label, its overrides over the scenario and its simulated numbers.
    ``objective``: what the answer minimizes (time-to-target by default; a plan's cost or GPU-hours, each
    proportional to it)."""

    label: str
    overrides: dict[str, Any]
    samples_per_s: float
    time_to_target_s: float
    samples_to_target: float
    objective: float | None = None
    band_s: tuple[float, float] | None = None

    @property
    def score(self) -> float:
        return self.time_to_target_s if self.objective is None else self.objective

    def learning_key(self) -> tuple[tuple[str, str], ...]:
        """The overrides that can move N*: candidates with the same key need the same samples under any model."""
        return tuple(sorted((k, repr(v)) for k, v in self.overrides.items() if k.startswith(LEARNING_PREFIXES)))


@dataclass
class Sensitivity:
    """The learning side of one answer (module docstring); :meth:`as_dict` is what the JSON outputs hold."""

    winner: str
    winner_time_s: float
    runner_up: str | None
    break_even: float | None  # f = score(runner-up) / score(winner)
    reference: dict[str, Any] | None  # label, gain, penalty, break_even against the reference configuration
    presets: list[dict[str, Any]] = field(default_factory=list)
    band_s: tuple[float, float] | None = None  # the winner's band widened by the presets' spread (None: fitted)
    fitted: bool = False
    loss_warning: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "winner": self.winner,
            "winner_time_to_target_s": self.winner_time_s,
            "runner_up": self.runner_up,
            "break_even_samples_factor": self.break_even,
            "reference": self.reference,
            "presets": self.presets,
            # a preset under which the winner never reaches the target leaves the band open above: null
            "band_s": [x if math.isfinite(x) else None for x in self.band_s] if self.band_s is not None else None,
            "fitted_learning": self.fitted,
            "async_loss_warning": self.loss_warning,
        }


def fitted_learning(scenario: Scenario, profile: Any = None) -> bool:
    """Whether a curve fitted on runs says how the batch moves N*: a profile with a learning model (rlsim-calibrate
    fit), or a learning section with a measured batch table (batch_multiplier form table), ceilings per batch or a
    batch family table fitted on runs (fit-learning). Then the presets' spread does not widen the band."""
    learning = scenario.learning
    if profile is not None and profile.learning_overrides():
        return True
    batch = learning.family.batch  # rlsim-calibrate fit-learning --family batch writes its source so
    fitted_family = batch is not None and batch.source.startswith("rlsim-calibrate fit-learning")
    return learning.batch_multiplier.form == "table" or learning.ceilings is not None or fitted_family


def loss_unnamed(scenario: Scenario) -> bool:
    """An asynchronous run (staleness k > 0) whose loss is the default: the stretch with penalty 0 (free) and no
    staleness table (learning.family.staleness)."""
    learning = scenario.learning
    return (
        scenario.schedule.staleness > 0
        and learning.staleness_loss == "stretch"
        and learning.staleness_penalty_per_step == 0
        and learning.family.staleness is None
    )


def _n_star(scn: Scenario) -> float:
    n = scenario_samples_to_target(scn)
    if n is None:  # no metric curve: nothing to re-rank (the answers call this only with a target)
        raise LearningModelError("learning.metric is needed for samples-to-target")
    return n.samples


class _Scenarios:
    """The base scenario with a candidate's learning-side overrides, built once per distinct key. The candidates
    were validated when they were simulated: where their learning-side overrides are the batch, G, flat schedule
    keys and learning.* keys, the scenario is the base with those fields replaced and only the learning section
    validated again (rlsim.scenario.build.with_learning); otherwise it is built and validated whole."""

    def __init__(self, base: Scenario) -> None:
        # here, not at the top: rlsim.run.simulation loads simpy (start-up time)
        from rlsim.run.simulation import configure

        self.base, self.configure = base, configure
        self.cache: dict[Any, Scenario] = {}

    def _with(self, scn: Scenario, over: dict[str, Any]) -> Scenario:
        """``scn`` with learning-side ``over`` (light where it can be: class docstring)."""
        over = {k: v for k, v in over.items() if k.startswith(LEARNING_PREFIXES)}
        if not over:
            return scn
        if not all(k.startswith("learning.") or k in LIGHT for k in over):
            return self.configure(scn, None, over)
        learning = {k: v for k, v in over.items() if k.startswith("learning.")}
        out = with_learning(scn, learning) if learning else scn
        work = {k.split(".", 1)[1]: v for k, v in over.items() if k.startswith("workload.")}
        sched = {k.split(".", 1)[1]: v for k, v in over.items() if k.startswith("schedule.")}
        return dataclasses.replace(
            out,
            workload=dataclasses.replace(out.workload, **work) if work else out.workload,
            schedule=dataclasses.replace(out.schedule, **sched) if sched else out.schedule,
        )

    def get(self, c: Candidate, extra: dict[str, Any] | None = None, name: str = "") -> Scenario:
        """The candidate's scenario under ``extra`` (a preset's overrides); one per learning key (those with the
        same key need the same samples)."""
        key = (c.learning_key(), name)
        if key not in self.cache:
            if not name:
                self.cache[key] = self._with(self.base, c.overrides)
            elif not extra:
                self.cache[key] = self.get(c)
            elif all(k.startswith("learning.") for k in extra):
                self.cache[key] = with_learning(self.get(c), extra)
            else:
                self.cache[key] = self.configure(self.get(c), None, extra)
        return self.cache[key]

    def anchor(self, c: Candidate) -> Scenario:
        """What a preset is anchored at: the base scenario with the candidate's learning.* overrides only (its LR
        rule, say), at the scenario's own batch."""
        over = {k: v for k, v in c.overrides.items() if k.startswith("learning.")}
        key = (tuple(sorted((k, repr(v)) for k, v in over.items())), "anchor")
        if key not in self.cache:
            self.cache[key] = with_learning(self.base, over) if over else self.base
        return self.cache[key]


def _factors(models: _Scenarios, cands: Sequence[Candidate], name: str, build: Any) -> list[float | None]:
    """Per candidate, N* under the model that ``build(scenario)`` gives over N* under the scenario's own (one
    computation per learning key: a plan's thousands of rows hold a few dozen)."""
    done: dict[Any, float | None] = {}
    out: list[float | None] = []
    for c in cands:
        key = c.learning_key()
        if key not in done:
            try:
                extra = build(models.anchor(c))
                done[key] = _n_star(models.get(c, extra, name)) / _n_star(models.get(c)) if extra else 1.0
            except RlsimError:  # the preset says it never reaches the target (or the combination is refused)
                done[key] = None
        out.append(done[key])
    return out


def plausible_losses(base: Scenario) -> list[tuple[str, str, Any]]:
    """(name, source, build) of the losses an async run that names none may train with: the staleness presets
    that apply to it, else the losses of rlsim.learning.staleness (naive_ppo, decoupled_ppo)."""
    staleness = [p for p in applicable(base) if p.knob == "staleness"]
    if staleness:
        return [(p.name, p.source, p.build) for p in staleness]
    return [
        (f"{name} loss", loss.source, lambda scn, name=name: {"learning.staleness_loss": name})
        for name, loss in LOSSES.items()
    ]


def _best(cands: Sequence[Candidate], scores: Sequence[float | None], exclude_key: Any = None) -> int | None:
    ok = [
        i
        for i, s in enumerate(scores)
        if s is not None and math.isfinite(s) and (exclude_key is None or cands[i].learning_key() != exclude_key)
    ]
    return min(ok, key=lambda i: (scores[i], i)) if ok else None


def analyse(
    base: Scenario,
    cands: Sequence[Candidate],
    winner: int,
    reference: int | None = None,
    profile: Any = None,
    admit: Any = None,
) -> Sensitivity:
    """The learning side of an answer whose ``winner`` (an index into ``cands``) was picked by score; ``reference``:
    the configuration the answer compares against (module docstring); ``admit(candidate, time_s, score)``: whether a
    re-ranked candidate still meets the answer's constraints (a plan's deadline and budget)."""
    win = cands[winner]
    scores = [c.score for c in cands]
    runner = _best(cands, scores, win.learning_key())
    ref = None
    if reference is not None and reference != winner:
        r = cands[reference]
        gain = win.samples_per_s / r.samples_per_s
        penalty = win.samples_to_target / r.samples_to_target
        ref = {"label": r.label, "gain": gain, "penalty": penalty, "break_even": r.score / win.score}
    fitted = fitted_learning(base, profile)
    models = _Scenarios(base)
    presets = [(p.name, p.source, p.build) for p in applicable(base)]
    losses: list[str] = []
    if loss_unnamed(models.get(win)):
        plausible = plausible_losses(models.get(win))  # the winner's: async even where the scenario is not
        presets += [x for x in plausible if x[0] not in {p[0] for p in presets}]
        losses = [x[0] for x in plausible]
    rows = []
    times = [win.time_to_target_s]
    for name, source, build in presets:
        factors = _factors(models, cands, name, build)
        # per candidate its time-to-target and score under the preset (None: it never reaches the target, or it
        # breaks the answer's constraints)
        t_new = [c.time_to_target_s * f if f is not None else None for c, f in zip(cands, factors)]
        new: list[float | None] = []
        for c, f, t in zip(cands, factors, t_new):
            score = c.score * f if f is not None and t is not None else None
            new.append(score if score is not None and (admit is None or admit(c, t, score)) else None)
        best = _best(cands, new)
        mine = t_new[winner]
        row: dict[str, Any] = {"preset": name, "source": source, "recommended_time_s": mine}
        if mine is not None:
            times.append(mine)
        top = new[best] if best is not None else None
        if best is None or top is None:
            row.update(winner=None, time_to_target_s=None, break_even_samples_factor=None, winner_changes=True)
        else:
            second = _best(cands, new, cands[best].learning_key())
            other = new[second] if second is not None else None
            row.update(
                winner=cands[best].label,
                time_to_target_s=t_new[best],
                break_even_samples_factor=other / top if other is not None else None,
                winner_changes=cands[best].learning_key() != win.learning_key(),
            )
        rows.append(row)
    warning = None
    if losses:
        under = {r["preset"]: r["recommended_time_s"] for r in rows}
        warning = loss_warning(models.get(win).schedule.staleness, [(x, under[x]) for x in losses])
    band = None
    if not fitted and win.band_s is not None:
        unreachable = any(r["recommended_time_s"] is None for r in rows)
        band = (min(win.band_s[0], *times), math.inf if unreachable else max(win.band_s[1], *times))
    return Sensitivity(
        winner=win.label,
        winner_time_s=win.time_to_target_s,
        runner_up=cands[runner].label if runner is not None else None,
        break_even=scores[runner] / win.score if runner is not None else None,
        reference=ref,
        presets=rows,
        band_s=band,
        fitted=fitted,
        loss_warning=warning,
    )


def loss_warning(k: int, losses: Sequence[tuple[str, float | None]]) -> str:
    """The one line an async run that names no loss gets: what it assumes, and the recommended configuration's
    time-to-target under each plausible loss."""
    under = ", ".join(f"{name} {_hours(t)}" for name, t in losses)
    return (
        f"async (staleness k={k}) names no staleness loss: learning.staleness_loss stretch with penalty 0 makes "
        f"staleness free; under the plausible losses the recommended configuration needs {under}; name the loss you "
        "train with (learning.staleness_loss, or its table in learning.family.staleness)"
    )


def run_loss_warning(scenario: Scenario, summary: dict[str, Any], profile: Any = None) -> str | None:
    """``rlsim run``'s one line for an async run that names no loss: the warning, the time-to-target under each
    plausible loss and the band that covers them; None otherwise (or without a time-to-target)."""
    if not loss_unnamed(scenario) or summary.get("time_to_target_s") is None:
        return None
    band = summary.get("time_to_target_band_s")
    one = Candidate(
        "this run",
        {},
        summary["samples_per_s"],
        summary["time_to_target_s"],
        summary["samples_to_target"],
        band_s=tuple(band) if band else None,
    )
    sens = analyse(scenario, [one], 0, profile=profile)
    text = str(sens.loss_warning).replace("the recommended configuration", "this run")
    if sens.band_s is not None:
        text += f" (band with them {_hours(sens.band_s[0])} .. {_hours(sens.band_s[1])})"
    return text


# ---------------------------------------------------------------------------------------------- text and HTML


SHORT = {"prompts_per_step": "P", "group_size": "G", "lr_rule": "LR", "max_staleness": "k", "gpu": "GPU"}


def label(config: int, overrides: dict[str, Any]) -> str:
    """``config 4 (P=1024, LR=sqrt)``: a configuration's number and the values that tell it apart."""
    parts = [f"{SHORT.get(k.split('.')[-1], k.split('.')[-1])}={v}" for k, v in overrides.items()]
    return f"config {config}" + (f" ({', '.join(parts)})" if parts else "")


def _factor(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3f}x" if abs(x - 1.0) < 0.05 else f"{x:.2f}x"


def _hours(x: float | None) -> str:
    return hours(x) if x is not None and math.isfinite(x) else "never"


def lines(sens: dict[str, Any], what: str = "time-to-target") -> list[str]:
    """The sensitivity in a few lines for the terminal: break-even, the reference view, the winner under each
    preset (a changed winner marked), the band and the async loss warning."""
    out = []
    if sens.get("break_even_samples_factor") is not None:
        out.append(
            f"break-even: {sens['winner']} keeps winning while it needs under "
            f"{_factor(sens['break_even_samples_factor'])} its samples to target (runner-up: {sens['runner_up']})"
        )
    elif sens.get("runner_up") is None and sens.get("presets"):
        out.append(
            "break-even: every configuration compared needs the same samples to target (the same batch, G, LR rule "
            "and staleness): the answer does not rest on the learning model"
        )
    ref = sens.get("reference")
    if ref:
        verdict = "wins" if ref["gain"] > ref["penalty"] else "loses"
        out.append(
            f"against {ref['label']}: throughput gain {ref['gain']:.2f}x vs samples penalty {ref['penalty']:.2f}x: it "
            f"{verdict} (break-even {_factor(ref['break_even'])} its samples)"
        )
    for row in sens.get("presets", []):
        kind = "" if row["preset"].endswith(" loss") else "preset "
        who = "the same winner" if not row["winner_changes"] else (row["winner"] or "none reaches the target")
        mark = "  <- winner changes" if row["winner_changes"] else ""
        out.append(
            f"under {kind}{row['preset']}: {who}, {_hours(row['time_to_target_s'])} {what}, "
            f"break-even {_factor(row['break_even_samples_factor'])}{mark}"
        )
    band = sens.get("band_s")
    if band is not None:
        out.append(
            f"band: the seeds' spread and the presets' spread: {_hours(band[0])} .. {_hours(band[1])} "
            f"for {sens['winner']}"
        )
    elif sens.get("fitted_learning"):
        out.append("band: the seeds' spread (a fitted learning model: the presets do not widen it)")
    if sens.get("async_loss_warning"):
        out.append(f"warning: {sens['async_loss_warning']}")
    return out


def table_html(sens: dict[str, Any]) -> str:
    """A report's sensitivity table: one row per learning preset (the winner under it, its time-to-target, its
    break-even samples penalty, whether the winner changes), then the break-even, the reference view, the band and
    the async loss warning."""
    head = "".join(f"<p class='note'>{html.escape(x)}</p>" for x in lines({**sens, "presets": []}))
    rows = "".join(
        f"<tr><th>{html.escape(r['preset'])}</th><td>{html.escape(r['winner'] or 'none reaches the target')}</td>"
        f"<td>{html.escape(_hours(r['time_to_target_s']))}</td>"
        f"<td>{html.escape(_factor(r['break_even_samples_factor']))}</td>"
        f"<td>{'yes' if r['winner_changes'] else 'no'}</td></tr>"
        for r in sens.get("presets", [])
    )
    caption = (
        "<p class='note'>Each learning preset that applies (rlsim.learning.presets), every configuration re-ranked "
        "on its simulated throughput (time-to-target scales with samples-to-target). Break-even: how many times its "
        "samples to target the winner may need before the runner-up (another batch, G, LR rule or staleness) "
        "beats it.</p>"
    )
    table = (
        "<table class='sensitivity'><tr><th>learning preset</th><th>winner</th>"
        "<th>its time-to-target</th><th>break-even samples penalty</th><th>winner changes</th></tr>"
        f"{rows}</table>"
    )
    return caption + table + head
