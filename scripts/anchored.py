"""Anchored accuracy on the published step rows, written to docs/results/anchored.md.

``python scripts/anchored.py [CSV]`` runs ``calibrate.published.anchored.measure`` (what ``rlsim-calibrate published
--anchor`` prints) on CSV (default: the project's development set) from two starting cost sets: rlsim's catalog
(what ``rlsim run`` resolves to at this commit) and ``calibrate/published/data/fitted_costs.yaml``; then, for
comparison only, what other single coefficients anchored on a step time would give. About a minute on 2 cores.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

import results_page  # noqa: E402

from calibrate.anchor.fit import STEP_COEFFICIENT  # noqa: E402
from calibrate.published import anchored, steps  # noqa: E402
from calibrate.published.costs import costs_set  # noqa: E402

ALTERNATIVES = (
    ("host_link_efficiency", ("host_link_efficiency",)),
    (
        "training and forward efficiencies",
        ("train_compute_efficiency", "fp8_train_compute_efficiency", "forward_compute_efficiency"),
    ),
    ("decode_memory_efficiency", ("decode_memory_efficiency",)),
)


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"


def _cell(s: dict) -> str:
    return f"{s['median_abs_error_pct']:.1f}%, {s['bias_pct']:+.1f}%" if s["n_expressed"] else "-"


def main(argv: list[str]) -> int:
    csv = Path(argv[0]) if argv else steps.dev_set_path()
    df = steps.read_rows([csv])
    results = {name: anchored.measure(df, costs_set(name)) for name in ("catalog", "fitted")}
    cat, fit = results["catalog"], results["fitted"]
    lines = results_page.header(
        "Anchored accuracy on published runs",
        results_page.command("anchored", argv),
        extra=f"commit {_commit()}; {len(df)} rows of {csv.name}",
    )
    lines += [
        "Within each group of step rows that share model, NeMo RL release and GPU type, rlsim is anchored on one "
        f"row's step time ({STEP_COEFFICIENT[0]}: `rlsim-calibrate anchor --step-time`) and predicts the group's "
        "other rows with the profile it writes; every row is the anchor in turn, and a group's figures pool its "
        "(anchor, predicted row) pairs. Median |error|, median signed error. 'not anchored': the same pairs "
        "predicted from the starting cost set alone. How: [../calibrate.md](../calibrate.md), 'One-step anchoring'.",
        "",
        "| model, release, GPU | rows | pairs | anchored (catalog) | not anchored (catalog) "
        "| anchored (fitted set) | not anchored (fitted set) |",
        "|---|---|---|---|---|---|---|",
    ]
    for g, s in cat["groups"].items():
        f = fit["groups"][g]
        lines.append(
            f"| {g.replace(' | ', ', ')} | {s['n_group_rows']} | {s['n_expressed']} | {_cell(s)} "
            f"| {_cell(s['unanchored'])} | {_cell(f)} | {_cell(f['unanchored'])} |"
        )
    lines.append(
        f"| all pairs | | {cat['overall']['n_expressed']} | {_cell(cat['overall'])} | {_cell(cat['unanchored'])} "
        f"| {_cell(fit['overall'])} | {_cell(fit['unanchored'])} |"
    )
    n = len(cat["groups"])
    lines += [
        "",
        f"Groups at or under 8% median |error|: {cat['groups_within_8_pct']} of {n} from the catalog, "
        f"{fit['groups_within_8_pct']} of {n} from the fitted set (its host link 0.0877 was fitted on these rows).",
        "",
        "Other single coefficients anchored on a step time (not what `anchor` fits; for comparison), all pairs:",
        "",
        "| coefficient | from the catalog | from the fitted set |",
        "|---|---|---|",
        f"| {STEP_COEFFICIENT[0]} (what `anchor` fits) | {_cell(cat['overall'])} | {_cell(fit['overall'])} |",
    ]
    for name, fields in ALTERNATIVES:
        a = anchored.measure(df, costs_set("catalog"), (name, fields))["overall"]
        b = anchored.measure(df, costs_set("fitted"), (name, fields))["overall"]
        lines.append(f"| {name} | {_cell(a)} | {_cell(b)} |")
    print(results_page.write(results_page.RESULTS / "anchored.md", lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
