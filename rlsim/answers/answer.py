"""The answer for one configuration, as every command states it: time-to-target with its band, throughput, samples,
GPU-hours and cost, with extrapolation named where used.

``rlsim run``, ``decide``, ``sweep`` and ``plan`` (their terminal text, ``--json`` and the HTML reports) all read
an :class:`Answer` built from the same simulated result (:meth:`rlsim.run.result.SimResult.summary`, or a sweep or
plan row that copied it), and format it with the helpers here, so the same configuration shows the same numbers
everywhere. Every command simulates to the target when the scenario has a learning model
(:func:`rlsim.run.simulation.resolve_until_target`); ``run.until_target: false`` keeps a short run and the answer then
says the rest was extrapolated.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlsim.io.numbers import finite

if TYPE_CHECKING:
    import pandas as pd  # a table's row; this module itself needs no pandas


def hours(seconds: float | None) -> str:
    """Seconds as the unit a person reads: ``11.89 h``, ``42 min`` or ``35 s``."""
    if seconds is None:
        return "-"
    if seconds >= 3600:
        return f"{seconds / 3600:,.2f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.1f} s"


def samples(n: float | None) -> str:
    """A sample count with thousands separators and no decimals: ``266,667``."""
    return "-" if n is None else f"{n:,.0f}"


def gpu_hours(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f} GPU-h" if x >= 10 else f"{x:.2f} GPU-h"


@dataclass(frozen=True)
class Answer:
    """One configuration's answer. ``time_to_target_s`` is None without a learning model."""

    samples_per_s: float
    time_to_target_s: float | None = None
    band_s: tuple[float, float] | None = None
    samples_to_target: float | None = None
    gpu_hours_to_target: float | None = None
    cost_usd: float | None = None
    extrapolated: bool = False
    steps_simulated: int | None = None
    systems_error_pct: float | None = None  # the band's systems share (rlsim.run.systems_error)
    # the band widened by the learning presets' spread (rlsim.answers.sensitivity; inf: a preset never reaches it)
    learning_band_s: tuple[float, float] | None = None

    def with_learning(self, sensitivity: Mapping[str, Any] | None) -> Answer:
        """This answer, the winner's, with the presets' band of ``sensitivity`` (rlsim.answers.sensitivity's dict;
        None or no band: unchanged)."""
        band = (sensitivity or {}).get("band_s")
        if band is None:
            return self
        lo, hi = (math.inf if x is None else float(x) for x in band)
        return dataclasses.replace(self, learning_band_s=(lo, hi))

    @classmethod
    def of(cls, summary: Mapping[str, Any]) -> Answer:
        """From a run's summary (``SimResult.summary()``) or a sweep / plan row with the same keys (a row holds the
        band as ``time_to_target_low_s`` / ``_high_s``)."""
        band = summary.get("time_to_target_band_s")
        lo, hi = band if band else (summary.get("time_to_target_low_s"), summary.get("time_to_target_high_s"))
        lo, hi = finite(lo), finite(hi)
        steps_sim = finite(summary.get("simulated_steps", summary.get("steps")))  # a sweep row: steps to target
        se = summary.get("systems_error")
        se_pct = finite(se.get("error_pct") if isinstance(se, Mapping) else summary.get("systems_error_pct"))
        return cls(
            samples_per_s=float(summary["samples_per_s"]),
            time_to_target_s=finite(summary.get("time_to_target_s")),
            band_s=(lo, hi) if lo is not None and hi is not None else None,
            samples_to_target=finite(summary.get("samples_to_target")),
            gpu_hours_to_target=finite(summary.get("gpu_hours_to_target")),
            cost_usd=finite(summary.get("cost_usd")),
            extrapolated=bool(summary.get("time_to_target_extrapolated") or False),
            steps_simulated=int(steps_sim) if steps_sim is not None else None,
            systems_error_pct=se_pct,
        )

    @property
    def time_text(self) -> str:
        """``11.89 h (band 10.46-13.66 h)``, with ``extrapolated`` named where the run stopped short."""
        if self.time_to_target_s is None:
            return "-"
        text = hours(self.time_to_target_s)
        if self.band_s is not None:
            systems = f", systems +-{self.systems_error_pct:.0f}% in it" if self.systems_error_pct is not None else ""
            presets = ""
            if self.learning_band_s is not None:
                lo, hi = self.learning_band_s
                presets = f"; {hours(lo)} .. {hours(hi) if math.isfinite(hi) else 'never'} with the learning presets"
            text += f" (band {hours(self.band_s[0])} .. {hours(self.band_s[1])}{systems}{presets})"
        if self.extrapolated:
            sim = f" after {self.steps_simulated} simulated steps" if self.steps_simulated else ""
            text += f", extrapolated{sim}"
        return text

    def sentence(self) -> str:
        """The answer in one line: time-to-target first, then what it is made of."""
        parts = [f"{self.samples_per_s:.2f} samples/s"]
        if self.time_to_target_s is None:
            return parts[0]
        parts = [f"time-to-target {self.time_text}", *parts, f"N* = {samples(self.samples_to_target)} samples"]
        if self.gpu_hours_to_target is not None:
            parts.append(gpu_hours(self.gpu_hours_to_target))
        if self.cost_usd is not None:
            parts.append(f"${self.cost_usd:,.0f}")
        return ", ".join(parts)


def reference_row(table: pd.DataFrame, scenario: dict[str, Any]) -> pd.Series:
    """The configuration at the reference batch with the trajectory-preserving rule, else the first row."""
    learning = scenario.get("learning", {})
    ok = table[table["error"].isna()]
    ref = ok[
        (ok["responses_per_step"] == learning.get("reference_batch"))
        & (ok["lr_rule"] == learning.get("invariant_rule", "sqrt"))
    ]
    return (ref if len(ref) else ok).iloc[0]
