"""The systems side's measured error for a scenario's setting: the share of the band that the cost model owes.

``rlsim/catalog/systems_error.yaml`` (written by ``scripts/accuracy.py``, never by hand) holds each development row's
held-out step-time error: every published NeMo RL row predicted by rlsim fitted without its release
(``rlsim-calibrate published --cv version``), with the row's release, GPU and model family. A scenario's error is
the median |error| of the rows of its setting: all three keys matched where at least ``MIN_ROWS`` rows share them,
else the most specific subset of keys that has them (release and GPU, then GPU and family, GPU, release, family,
then every row). Each key whose value no development row has (a release the catalog does not know, a GPU or a
model family outside the set, a scenario that names no framework release) multiplies it by ``WIDEN``: outside the
validated settings the model's error is not measured, and is taken as larger. A profile from ``rlsim-calibrate
anchor`` takes the anchored figure instead (``anchored`` in the file: each published group's rows predicted from
one of its rows). The time-to-target band widens by (1 + error) both ways (rlsim.run.simulation); the answer names
the rows the figure comes from.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import Any

from rlsim import catalog
from rlsim.schema import Scenario

MIN_ROWS = 4  # rows a setting's median needs; fewer fall back to a broader setting
WIDEN = 1.5  # assumption: per key outside the development set (not measured: no held-out row is there)
KEYS = ("release", "gpu", "family")
FALLBACK = (("release", "gpu", "family"), ("release", "gpu"), ("gpu", "family"), ("gpu",), ("release",), ("family",))


@dataclass(frozen=True)
class SystemsError:
    """``error``: a fraction (0.11 = 11%); ``basis``: which rows it is the held-out error of; ``outside``: the
    setting's keys that no development row has, each of which widened it."""

    error: float
    basis: str
    outside: tuple[str, ...] = ()

    @property
    def factors(self) -> tuple[float, float]:
        """What the time-to-target band's low and high ends multiply by."""
        return 1.0 / (1.0 + self.error), 1.0 + self.error

    def as_dict(self) -> dict[str, Any]:
        return {"error_pct": round(100.0 * self.error, 2), "basis": self.basis, "outside": list(self.outside)}


def setting(scenario: Scenario) -> dict[str, str | None]:
    """The scenario's release (``nemo-rl 0.5``: framework and major.minor; None where it names none), GPU and family."""
    sw = scenario.software
    minor = re.match(r"\d+(?:\.\d+)?", str(sw.framework_version or ""))  # releases compare by major.minor
    release = f"{sw.framework} {minor.group(0)}" if sw.framework and minor else None
    family = "moe" if scenario.model.num_experts else "dense"
    return {"release": release, "gpu": scenario.hardware.gpu.name, "family": family}


def systems_error(scenario: Scenario, anchored: bool = False) -> SystemsError | None:
    """The measured error for ``scenario``'s setting (module docstring); None when the catalog has no rows. With
    ``anchored`` (a profile from ``rlsim-calibrate anchor``: the job's own measured step) the anchored figure: the
    published rows' error when each group's other rows are predicted from one anchored row."""
    data = catalog.systems_error()
    anchor = data.get("anchored") or {}
    if anchored and anchor.get("median_abs_error_pct") is not None:
        basis = (
            f"anchored on one step of the job: {anchor['pairs']} published rows predicted from another row of their "
            "model, release and GPU"
        )
        return SystemsError(anchor["median_abs_error_pct"] / 100.0, basis)
    rows = data.get("rows") or []
    if not rows:
        return None
    want = setting(scenario)
    outside = []
    for key in KEYS:
        if want[key] is None:
            outside.append("the scenario names no framework release (software.framework, framework_version)")
        elif not any(r[key] == want[key] for r in rows):
            outside.append(f"no development row has {key} {want[key]}")
    keys: tuple[str, ...] = ()
    for keys in FALLBACK:
        pool = [r for r in rows if all(want[k] is not None and r[k] == want[k] for k in keys)]
        if len(pool) >= MIN_ROWS:
            break
    else:
        keys, pool = (), rows
    error = statistics.median(abs(r["error_pct"]) for r in pool) / 100.0
    error *= WIDEN ** len(outside)
    named = ", ".join(str(want[k]) for k in keys) or "every setting"
    basis = f"held-out step time of {len(pool)} published rows ({named}; {data.get('method', '')})"
    return SystemsError(error, basis, tuple(outside))
