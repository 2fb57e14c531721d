"""Scenario files: read a YAML scenario (with ``key=value`` overrides) into a validated :class:`Scenario`, and
write a resolved scenario (catalog entries expanded) back as YAML that loads to the same scenario.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rlsim.errors import ScenarioError
from rlsim.io.files import load_yaml, read_text
from rlsim.scenario.build import from_dict
from rlsim.scenario.overrides import apply_overrides, as_overrides
from rlsim.schema.scenario import Scenario


def load_scenario(path: str | Path, overrides: list[str] | dict[str, Any] | None = None) -> Scenario:
    """Read a YAML scenario file, apply ``key=value`` overrides and validate (once, file and overrides together)."""
    raw = read_scenario(path)
    return from_dict(apply_overrides(raw, as_overrides(overrides)) if overrides else raw)


def read_scenario(path: str | Path) -> dict[str, Any]:
    """A scenario file's plain data, not yet validated: the mapping of sections its YAML holds."""
    p = Path(path)
    if not p.is_file():
        raise ScenarioError("scenario", str(p), "is not a file", "give the path of a scenario YAML file")
    try:
        raw = load_yaml(read_text(p, "scenario"))
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f" at line {line + 1}" if line is not None else ""
        problem = getattr(exc, "problem", None) or (str(exc) if type(exc) is yaml.YAMLError else None)
        detail = f" ({problem})" if problem and ("duplicate" in problem or "aliases" in problem) else ""
        raise ScenarioError("scenario", str(p), f"is not valid YAML{where}{detail}", "fix the YAML syntax") from None
    if not isinstance(raw, dict):
        raise ScenarioError("scenario", str(p), "must be a YAML mapping of sections", "see scenarios/*.yaml")
    return raw


def dump_yaml(scenario: Scenario) -> str:
    """The resolved scenario (catalog entries expanded) as YAML; loading it gives the same scenario."""
    return yaml.safe_dump(scenario.to_dict(), sort_keys=False)
