"""Dotted-key overrides: the one ``key=value`` grammar of the command lines, and applying overrides to a scenario's
plain data before it is validated.

Grammar, shared by ``--set`` (rlsim run/decide/sweep), ``--grid`` (rlsim sweep), decide's ``--baseline`` /
``--candidate`` and ``rlsim-calibrate published --set``:

* an assignment is ``KEY=VALUE``, split at the first ``=``; spaces around either side are dropped;
* ``KEY`` is a dotted scenario path (``workload.prompts_per_step``): non-empty parts separated by single dots;
* ``VALUE`` is read as YAML (:func:`parse_scalar`): ``64`` an int, ``1e-6`` and ``0.5`` floats, ``true`` a bool,
  ``null`` None, anything else the text itself; an empty value is the empty string.

Lists of values (a grid's ``v1,v2``, a decide side's ``k=v,k=v``) split at commas before this grammar applies.
Every error is one :class:`ScenarioError` line naming the flag, the text given, what is wrong and an example.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from rlsim.errors import ScenarioError


def split_assignment(
    item: str, flag: str = "--set", example: str = "run.steps=50", form: str = "key=value"
) -> tuple[str, str]:
    """``"workload.prompts_per_step = 64"`` -> ``("workload.prompts_per_step", "64")``: the dotted key and the
    value's text, both stripped. ``flag``, ``example`` and ``form`` (what the flag takes) go into the error."""
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep:
        raise ScenarioError(flag, item, f"is not of the form {form} (no '=')", f"write e.g. {example}")
    if not key:
        raise ScenarioError(flag, item, "has an empty key before '='", f"write e.g. {example}")
    if any(not part.strip() for part in key.split(".")):
        raise ScenarioError(
            flag, item, f"has an empty part in the dotted key {key!r}", f"separate parts by single dots, e.g. {example}"
        )
    return key, text.strip()


def parse_scalar(text: str) -> Any:
    """The value of ``text`` as YAML reads it (numbers, booleans, null, strings; ``[..]`` and ``{..}`` give a list
    or a mapping); ``1e-6``, which YAML 1.1 reads as a string, is a float; text YAML cannot read stays text."""
    try:
        value = yaml.safe_load(text) if text else ""
    except yaml.YAMLError:
        return text
    if isinstance(value, str):
        try:  # YAML 1.1 reads "1e-6" as a string
            return float(value) if any(ch.isdigit() for ch in value) else value
        except ValueError:
            return value
    return value


def parse_overrides(items: Iterable[str], flag: str = "--set") -> dict[str, Any]:
    """``["run.steps=5", "learning.lr_rule=none"]`` -> ``{"run.steps": 5, "learning.lr_rule": "none"}``; a key
    given twice keeps its last value."""
    out: dict[str, Any] = {}
    for item in items:
        key, text = split_assignment(item, flag)
        out[key] = parse_scalar(text)
    return out


def as_overrides(overrides: Mapping[str, Any] | Iterable[str] | None) -> dict[str, Any]:
    """Overrides given as ``key=value`` strings or as a mapping of dotted keys, as a new mapping."""
    if overrides is None:
        return {}
    if isinstance(overrides, Mapping):
        return dict(overrides)
    if isinstance(overrides, str):  # one string would iterate as characters
        return parse_overrides([overrides])
    return parse_overrides(overrides)


KEEP = "algorithm.dynamic_sampling.keep_rate"


def apply_overrides(raw: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` (a scenario's plain data) with each dotted key set; ``raw`` itself is left as it is. A catalog name
    on the way (``model: Qwen2.5-7B``, ``hardware.gpu``) becomes ``{base: NAME}`` so one of its numbers can be
    set (``model.num_layers=2``)."""
    out = dict(raw)
    for key, value in overrides.items():
        _set_path(out, key, value)
        if key == KEEP and KEEP + "_source" not in overrides:  # a keep rate set is given, no longer assumed
            _set_path(out, KEEP + "_source", "given")
    return out


def _set_path(raw: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``dotted`` in ``raw``, copying each mapping on the way so that mappings ``raw`` shares stay as they are."""
    parts = dotted.split(".")
    node: Any = raw
    for i, part in enumerate(parts[:-1]):
        nxt = node.get(part) if isinstance(node, dict) else None
        if isinstance(nxt, str) and part in ("model", "gpu", "critic_model"):
            nxt = {"base": nxt}  # override one number of a catalog entry
        elif nxt is None:
            nxt = {}
        elif not isinstance(nxt, dict):
            raise ScenarioError(".".join(parts[: i + 1]), nxt, "is not a section", f"cannot set {dotted}")
        else:
            nxt = dict(nxt)
        node[part] = nxt
        node = nxt
    node[parts[-1]] = value
