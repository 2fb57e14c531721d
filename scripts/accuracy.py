"""Measure rlsim's accuracy on the published development set and write every place that reports it.

Runs ``rlsim-calibrate published`` four ways on the project's development set (calibrate/published/data/):

* ``-o DIR`` (the shipped set: what ``rlsim run`` resolves to; the constants fitted on these rows included, so
  in-sample),
* ``--costs prior`` (every constant fitted on published rows at its prior, rlsim/catalog/fitted.yaml: no fit),
* ``--cv version`` (leave one NeMo RL release out: each fold refits the step-time coefficients from their priors
  without the release it predicts) and ``--cv gpu`` (leave one GPU out),
* ``--anchor`` (one-step anchoring within each group of model, release and GPU),

pairs the shipped run's rows that ran the same recipe file in two releases (``release_pairs``: how much faster the
newer release measured against how much faster rlsim predicts it, the part of a release's change that rlsim's
release behaviours carry) and writes, from their outputs only: docs/results/published.md (the whole page), the
README's accuracy block (between ``<!-- accuracy:begin -->`` and ``<!-- accuracy:end -->``),
docs/results/accuracy.json (the figures the tests read) and rlsim/catalog/systems_error.yaml (each step row's
held-out error by release, GPU and family: the systems band every answer carries, rlsim.run.systems_error). Nothing
there is typed by hand.

    python scripts/accuracy.py            # measure and print the tables
    python scripts/accuracy.py --write    # and write the files above
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import results_page  # noqa: E402

ROOT = results_page.ROOT
README = ROOT / "README.md"
PAGE = results_page.RESULTS / "published.md"
FIGURES = results_page.RESULTS / "accuracy.json"
SYSTEMS = ROOT / "rlsim" / "catalog" / "systems_error.yaml"
BEGIN, END = "<!-- accuracy:begin -->", "<!-- accuracy:end -->"


def _calibrate(args: list[str]) -> dict[str, Any]:
    """``rlsim-calibrate published ARGS -o TMP`` in this process; its summary.json, its cv.csv rows and its
    published.csv rows (each step row's measured and predicted time)."""
    from calibrate.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        print(f"rlsim-calibrate published {' '.join(args)}", file=sys.stderr)
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["published", "-o", str(out), *args])
        if code != 0:
            raise SystemExit(f"rlsim-calibrate published {' '.join(args)} exited {code}")
        summary = json.loads((out / "summary.json").read_text())
        import pandas as pd

        cv_rows = pd.read_csv(out / "cv.csv").to_dict("records") if (out / "cv.csv").is_file() else []
        rows = pd.read_csv(out / "published.csv").to_dict("records") if (out / "published.csv").is_file() else []
    return {"summary": summary, "cv_rows": cv_rows, "rows": rows}


def _fig(s: dict[str, Any] | None) -> dict[str, Any] | None:
    if not s or not s.get("n_expressed"):
        return None
    return {
        "median_abs_error_pct": round(s["median_abs_error_pct"], 2),
        "bias_pct": round(s["bias_pct"], 2),
        "n_expressed": s["n_expressed"],
        "n_rows": s["n_rows"],
    }


def _cv_figures(cv: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for table in ("step_time", "generation"):
        t = cv.get(table)
        if not t or "skipped" in t:
            continue
        out[table] = {
            "groups": {
                g: {
                    "cross_validated": _fig(s),
                    "in_sample": _fig(t["in_sample"]["groups"][g]),
                    "shipped": _fig(t["shipped"]["groups"][g]),
                    "no_fit": _fig(t["no_fit"]["groups"][g]),
                    "fitted": {k: round(v, 4) for k, v in (s.get("fitted") or {}).items()},
                }
                for g, s in t["groups"].items()
            },
            "overall": {
                "cross_validated": _fig(t["overall"]),
                "in_sample": _fig(t["in_sample"]["overall"]),
                "shipped": _fig(t["shipped"]["overall"]),
                "no_fit": _fig(t["no_fit"]["overall"]),
            },
        }
    return out


def measure() -> dict[str, Any]:
    from calibrate.published import steps

    data = {int(rec["row"]): rec for rec in steps.read_rows([steps.dev_set_path()]).to_dict("records")}
    shipped = _calibrate([])
    prior = _calibrate(["--costs", "prior"])
    by_version = _calibrate(["--cv", "version"])
    by_gpu = _calibrate(["--cv", "gpu"])
    figures: dict[str, Any] = {
        "shipped": {t: _fig(shipped["summary"].get(t)) for t in ("step_time", "generation")},
        "no_fit": {t: _fig(prior["summary"].get(t)) for t in ("step_time", "generation")},
        "cv_version": _cv_figures(by_version["summary"]["cv"]),
        "cv_gpu": _cv_figures(by_gpu["summary"]["cv"]),
        "not_expressed": [r["run"] for r in shipped["summary"]["step_time"]["not_expressed"]],
        "held_out_rows": _held_out_rows(by_version["cv_rows"], data),
        "release_pairs": release_pairs(shipped["rows"], data),
    }
    figures["anchored"] = _anchored()
    return figures


def _anchored() -> dict[str, Any]:
    """The one-step anchored figures (``rlsim-calibrate published --anchor``)."""
    result = _calibrate(["--anchor"])["summary"].get("anchored") or {}
    return {
        "overall": _fig(result.get("overall")),
        "groups": {g: _fig(s) for g, s in (result.get("groups") or {}).items()},
    }


def _held_out_rows(cv_rows: list[dict[str, Any]], data: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each expressed step row's held-out error with its release, GPU and family (systems_error.yaml's rows);
    ``data``: the development set's rows by row number."""
    import pandas as pd

    from rlsim.frameworks.nemo_rl.recipe import framework_version, gpu_name

    out = []
    for r in cv_rows:
        if r["table"] != "step" or pd.isna(r["held_out_error_pct"]):
            continue
        rec = data[int(r["row"])]
        version = framework_version(rec) or ""
        minor = re.match(r"\d+(?:\.\d+)?", version)
        out.append(
            {
                "row": int(r["row"]),
                "release": f"nemo-rl {minor.group(0)}" if minor else None,
                "gpu": gpu_name(rec["gpu"]),
                "family": _family(rec),
                "error_pct": round(float(r["held_out_error_pct"]), 2),
            }
        )
    return out


def _family(fields: dict[str, Any]) -> str:
    """``moe`` or ``dense`` by the catalog's model (its experts); ``unknown`` for a model the catalog lacks."""
    from rlsim import catalog

    try:
        return "moe" if catalog.model(str(fields.get("model", "")).strip()).get("num_experts", 0) else "dense"
    except KeyError:
        return "unknown"


def _release_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def release_pairs(rows: list[dict[str, Any]], fields: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each recipe file (the name at its tag, ``grpo-deepseek-v3-32n8g.yaml``) that ran in more than one release of
    the table, each release paired with the next one the file ran in, both rows expressed: the newer row's step time
    over the older's as measured and as rlsim predicts it. ``rows``: published.csv records (``row``,
    ``measured_step_s``, ``predicted_step_s``, ``expressed``); ``fields``: each row's development-set fields
    (``recipe``, and the release as framework_version reads it)."""
    from rlsim.frameworks.nemo_rl.recipe import framework_version, vllm_async_engine

    by_recipe: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        f = fields[int(r["row"])]
        recipe, version = str(f.get("recipe") or "").rsplit("/", 1)[-1], framework_version(f)
        predicted = float(r.get("predicted_step_s", "nan"))
        expressed = str(r.get("expressed")).lower() == "true" and not math.isnan(predicted)
        if recipe and version and expressed:
            engine = "AsyncLLM" if vllm_async_engine(f) else "LLM"
            by_recipe.setdefault(recipe, {})[version] = {**r, "engine": engine, "family": _family(f)}
    out = []
    for recipe, releases in sorted(by_recipe.items()):
        order = sorted(releases, key=_release_key)
        for old, new in zip(order, order[1:]):
            a, b = releases[old], releases[new]
            out.append(
                {
                    "recipe": recipe,
                    "from": old,
                    "to": new,
                    "engine": a["engine"] if a["engine"] == b["engine"] else f"{a['engine']} -> {b['engine']}",
                    "family": b["family"],
                    "measured_ratio": round(float(b["measured_step_s"]) / float(a["measured_step_s"]), 3),
                    "predicted_ratio": round(float(b["predicted_step_s"]) / float(a["predicted_step_s"]), 3),
                }
            )
    return out


def _cell(f: dict[str, Any] | None) -> str:
    return "-" if f is None else f"{f['median_abs_error_pct']:.1f}%, {f['bias_pct']:+.1f}%"


def _rows_label(f: dict[str, Any] | None) -> str:
    return "-" if f is None else f"{f['n_expressed']} of {f['n_rows']}"


def readme_block(fig: dict[str, Any]) -> list[str]:
    """The README's accuracy table: per held-out group the cross-validated, shipped (in-sample) and no-fit figures."""
    lines = [
        BEGIN,
        "| table | held out | rows | cross-validated | shipped | refit in-sample | no fit |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, what in (("cv_version", "release"), ("cv_gpu", "GPU")):
        for table in ("step_time", "generation"):
            t = fig[key].get(table)
            if t is None:
                continue
            for g, s in t["groups"].items():
                lines.append(
                    f"| {table.replace('_', ' ')} | {what}: {g} | {_rows_label(s['cross_validated'])} | "
                    f"{_cell(s['cross_validated'])} | {_cell(s['shipped'])} | {_cell(s['in_sample'])} | "
                    f"{_cell(s['no_fit'])} |"
                )
            o = t["overall"]
            lines.append(
                f"| {table.replace('_', ' ')} | every {what} in turn | {_rows_label(o['cross_validated'])} | "
                f"{_cell(o['cross_validated'])} | {_cell(o['shipped'])} | {_cell(o['in_sample'])} | "
                f"{_cell(o['no_fit'])} |"
            )
    if "anchored" in fig and fig["anchored"]["overall"]:
        a = fig["anchored"]["overall"]
        lines.append(
            f"| step time | the rest of each model / release / GPU group, anchored on one of its rows | "
            f"{_rows_label(a)} pairs | {_cell(a)} (anchored) | | | |"
        )
    s, n = fig["shipped"]["step_time"], fig["no_fit"]["step_time"]
    lines += [
        "",
        f"`rlsim run` on the {s['n_expressed']} expressible step rows of {s['n_rows']}: {_cell(s)} (median |error|, "
        f"median signed error); with every fitted constant at its prior: {_cell(n)}.",
        END,
    ]
    return lines


def page(fig: dict[str, Any], cmd: str) -> list[str]:
    lines = results_page.header("Accuracy on published runs", cmd)
    lines += [
        "The development set: calibrate/published/data/ (NeMo RL v0.4 / v0.5 / v0.6 step rows on DGX-H100 and "
        "GB200-NVL72, vLLM 0.5.4 generation rows on H100 and A100). Median |error|, median signed error. "
        "Cross-validated: fitted from the priors without the held-out group; shipped: the values rlsim uses "
        "(rlsim/catalog/fitted.yaml, fitted on every row); refit in-sample: the same coefficients refitted on every "
        "row of the table now; no fit: every constant of rlsim/catalog/fitted.yaml at its prior.",
        "",
        "Which coefficients the step folds fit (`STEP_FIT`) was chosen by comparing the held-out errors of the GPU "
        "and the v0.5 / v0.6 folds, before the v0.4 rows were added: those folds are optimistic by that selection; "
        "the v0.4 fold took no part in it.",
        "",
        *[x for x in readme_block(fig) if x not in (BEGIN, END)],
        "",
        "## What each fold fitted",
        "",
    ]
    for key in ("cv_version", "cv_gpu"):
        for table, t in fig[key].items():
            for g, s in t["groups"].items():
                values = ", ".join(f"{k} {v:g}" for k, v in s["fitted"].items())
                lines.append(f"- {table.replace('_', ' ')}, without {g}: {values}")
    if "anchored" in fig:
        lines += [
            "",
            "## Anchored on one step, by group",
            "",
            "Each row of a group anchors the others in turn (`rlsim-calibrate published --anchor`): a pair is one row",
            "predicted from another's anchor.",
            "",
            "| model / release / GPU | pairs | anchored |",
            "|---|---|---|",
        ]
        for g, f in fig["anchored"]["groups"].items():
            lines.append(f"| {g.replace(' | ', ' / ')} | {_rows_label(f)} | {_cell(f)} |")
    lines += release_section(fig.get("release_pairs") or [])
    lines += ["", "## Rows no mapping expresses", ""] + [f"- {r}" for r in fig["not_expressed"]]
    return lines


def release_section(pairs: list[dict[str, Any]]) -> list[str]:
    """The page's "same recipe across releases" section: per release step, the median measured and predicted
    ratio, then every pair."""
    if not pairs:
        return []
    lines = [
        "",
        "## The same recipe across releases",
        "",
        "A recipe file that ran in two releases (each paired with the next release it ran in), both rows expressed:",
        "the newer release's step time over the older's, measured and as rlsim predicts it with the shipped set (each",
        "row at its own release's behaviours, rlsim/catalog/software.yaml, and its own published lengths). Where the",
        "predicted ratio stays near 1 and the measured one does not, the release changed something rlsim's release",
        "behaviours do not carry.",
        "",
        "The recipes split two ways below, by the vLLM front end (AsyncLLM or the LLM class) and by the model's",
        "family; most AsyncLLM recipes are MoE models, so the two splits overlap.",
        "",
        "| releases | recipes of | recipes | measured, median | predicted, median |",
        "|---|---|---|---|---|",
    ]
    steps: dict[tuple[str, str, int, str], list[dict[str, Any]]] = {}
    for p in pairs:
        for order, label in ((0, "every kind"), (1, p["engine"]), (2, p.get("family", "unknown"))):
            steps.setdefault((p["from"], p["to"], order, label), []).append(p)
    for (old, new, _, label), ps in sorted(steps.items(), key=lambda kv: (_release_key(kv[0][0]), kv[0][2:])):
        measured = statistics.median(p["measured_ratio"] for p in ps)
        predicted = statistics.median(p["predicted_ratio"] for p in ps)
        lines.append(f"| {old} -> {new} | {label} | {len(ps)} | {measured:.3f} | {predicted:.3f} |")
    lines += [
        "",
        "| recipe | vLLM front end | family | releases | measured | predicted |",
        "|---|---|---|---|---|---|",
    ]
    for p in pairs:
        lines.append(
            f"| {p['recipe']} | {p['engine']} | {p.get('family', 'unknown')} | {p['from']} -> {p['to']} "
            f"| {p['measured_ratio']:.3f} | {p['predicted_ratio']:.3f} |"
        )
    return lines


def systems_yaml(fig: dict[str, Any], cmd: str, when: str) -> str:
    import yaml

    head = (
        f"# Written by `{cmd}` on {when}; not edited by hand. Each expressed development step row's error with\n"
        "# rlsim fitted without the row's release (rlsim-calibrate published --cv version): the systems band of\n"
        "# every answer (rlsim/run/systems_error.py).\n"
    )
    body: dict[str, Any] = {"method": "leave one NeMo RL release out", "date": when, "rows": fig["held_out_rows"]}
    anchored = (fig.get("anchored") or {}).get("overall")
    if anchored:
        body["anchored"] = {"median_abs_error_pct": anchored["median_abs_error_pct"], "pairs": anchored["n_expressed"]}
    return head + yaml.safe_dump(body, sort_keys=False)


def replace_block(text: str, block: list[str]) -> str:
    if BEGIN not in text or END not in text:
        raise SystemExit(f"README.md has no {BEGIN} ... {END} block")
    i, j = text.index(BEGIN), text.index(END) + len(END)
    return text[:i] + "\n".join(block) + text[j:]


def main(argv: list[str] | None = None) -> int:
    import datetime as dt

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the page, the README block and the catalog file")
    args = parser.parse_args(argv)
    fig = measure()
    cmd = results_page.command("accuracy", ["--write"])
    print("\n".join(readme_block(fig)))
    if args.write:
        when = dt.date.today().isoformat()
        results_page.write(PAGE, page(fig, cmd))
        FIGURES.write_text(json.dumps(fig, indent=1) + "\n")
        SYSTEMS.write_text(systems_yaml(fig, cmd, when))
        README.write_text(replace_block(README.read_text(), readme_block(fig)))
        print(f"wrote {PAGE}, {FIGURES}, {SYSTEMS} and README.md's accuracy block", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
