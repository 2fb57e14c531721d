"""Anchored accuracy on published runs: what one measured step buys a user (``rlsim-calibrate published --anchor``).

The step rows are grouped by what a user's own job shares with their other configurations: model, release
(``source_version``'s "NeMo RL vX.Y") and GPU type (the catalog GPU). In each group with two or more expressed rows,
every row in turn is the anchor (leave-one-in: no row is picked, so no choice flatters the figure): rlsim is
anchored on its step time with ``calibrate.anchor.fit.anchor`` (step time alone: the cluster speed), the profile it
writes (``to_profile``, as ``rlsim-calibrate anchor`` writes it) goes to ``rlsim.simulate`` for each other row of the
group, and error = predicted / measured - 1. A group's figures pool its (anchor, predicted row) pairs; the overall
figures pool every pair. Beside each pair: the same row predicted without the anchor (the cost set alone).

The rows start from whatever their scenario resolves to (rlsim's catalog defaults, or the cost set ``costs`` puts
over them), so the figures move with the catalog; they are recorded with the commit they were measured at.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

import rlsim
from calibrate.anchor.fit import STEP_COEFFICIENT, Measured, anchor, to_profile
from calibrate.published import steps
from calibrate.published.cv import group_of
from calibrate.published.tables import error_summary
from rlsim.errors import RlsimError
from rlsim.frameworks.nemo_rl.recipe import NotExpressible


def group_key(rec: dict[str, Any]) -> str:
    """A row's group: ``model | release | GPU``."""
    return f"{rec.get('model')} | {group_of('version', 'step')(rec)} | {group_of('gpu', 'step')(rec)}"


def _expressed(df: pd.DataFrame, costs: dict[str, float]) -> tuple[dict[str, list[dict]], list[dict]]:
    """The rows that simulate, by group (each with its scenario, label, measured and unanchored prediction), and
    the rows that do not, with the reason."""
    groups: dict[str, list[dict]] = {}
    refused = []
    for rec, res in zip(df.to_dict("records"), steps.evaluate(df, costs or None)):
        if not res.expressed:
            refused.append({"file": res.file, "row": res.row, "run": res.label, "reason": res.reason})
            continue
        try:
            scn = steps.row_scenario(rec, costs or None)
        except (NotExpressible, RlsimError) as exc:  # evaluate expressed it: not expected, reported if so
            refused.append({"file": res.file, "row": res.row, "run": res.label, "reason": str(exc)})
            continue
        item = {"scenario": scn, "label": res.label, "row": res.row, "measured": res.measured_s}
        groups.setdefault(group_key(rec), []).append({**item, "unanchored": res.predicted_s})
    return groups, refused


def measure(
    df: pd.DataFrame,
    costs: dict[str, float] | None = None,
    step_coefficient: tuple[str, tuple[str, ...]] = STEP_COEFFICIENT,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Leave-one-in anchored accuracy of the step rows ``df`` (module docstring): ``groups`` (per group the pooled
    summary, its rows and the unanchored figures of the same pairs), ``overall``, ``unanchored`` and ``pairs``."""
    groups, refused = _expressed(df, costs or {})
    pairs: list[dict[str, Any]] = []
    per_group: dict[str, Any] = {}
    for g, members in groups.items():
        if len(members) < 2:
            continue
        if progress:
            progress(f"anchoring {g} ({len(members)} rows)")
        mine = []
        for a in members:
            fit = anchor(a["scenario"], Measured(a["measured"], source=a["label"]), step_coefficient)
            profile = to_profile(fit, a["scenario"], "rlsim-calibrate published --anchor", "")
            scale = fit.coefficients[0].scale
            for b in members:
                if b is a:
                    continue
                predicted = float(rlsim.simulate(b["scenario"], profile).summary()["step_time_s"])
                mine.append(
                    {
                        "group": g,
                        "anchor_row": a["row"],
                        "anchor": a["label"],
                        "scale": scale,
                        "at_bound": fit.coefficients[0].at_bound,
                        "row": b["row"],
                        "run": b["label"],
                        "measured_s": b["measured"],
                        "anchored_s": predicted,
                        "error_pct": (predicted / b["measured"] - 1) * 100,
                        "unanchored_s": b["unanchored"],
                        "unanchored_error_pct": (b["unanchored"] / b["measured"] - 1) * 100,
                    }
                )
        per_group[g] = {
            "n_group_rows": len(members),
            **error_summary([p["error_pct"] for p in mine], len(mine)),
            "unanchored": error_summary([p["unanchored_error_pct"] for p in mine], len(mine)),
        }
        pairs += mine
    return {
        "step_coefficient": {"name": step_coefficient[0], "fields": list(step_coefficient[1])},
        "groups": per_group,
        "overall": error_summary([p["error_pct"] for p in pairs], len(pairs)),
        "unanchored": error_summary([p["unanchored_error_pct"] for p in pairs], len(pairs)),
        "groups_within_8_pct": sum(s["median_abs_error_pct"] <= 8 for s in per_group.values()),
        "single_row_groups": sorted(g for g, m in groups.items() if len(m) < 2),
        "not_expressed": refused,
        "pairs": pairs,
    }


def format_table(result: dict[str, Any]) -> list[str]:
    """Lines a person reads: per group the anchored and unanchored median |error| and bias over its pairs."""

    def cell(s: dict[str, Any]) -> str:
        return f"{s['median_abs_error_pct']:>6.1f}% {s['bias_pct']:>+6.1f}%"

    coef = result["step_coefficient"]["name"]
    lines = [
        f"step time anchored on one row of its group ({coef}), every row in turn; median |error| and median signed "
        "error over the (anchor, predicted row) pairs",
        f"  {'model | release | GPU':<62} {'rows':>4} {'pairs':>5}  {'anchored':>15}  {'not anchored':>15}",
    ]
    for g, s in result["groups"].items():
        rows = f"{s['n_group_rows']:>4} {s['n_expressed']:>5}"
        lines.append(f"  {g[:62]:<62} {rows}  {cell(s):>15}  {cell(s['unanchored']):>15}")
    s = result["overall"]
    if s["n_expressed"]:
        lines.append(
            f"  {'all pairs':<62} {'':>4} {s['n_expressed']:>5}  {cell(s):>15}  {cell(result['unanchored']):>15}"
        )
    n = len(result["groups"])
    lines.append(f"  groups at or under 8% median |error|: {result['groups_within_8_pct']} of {n}")
    if result["single_row_groups"]:
        lines.append("  one expressed row, nothing to predict: " + "; ".join(result["single_row_groups"]))
    return lines
