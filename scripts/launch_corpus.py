"""Run `rlsim import-config` on the public launch corpus (tests/launch_corpus/) and score it against the values its
collectors wrote by hand before any tool ran on the files.

Each entry of tests/launch_corpus/expected_*.yaml names a file, its framework and either the prompts per step (P),
responses per prompt (G) and GPUs the framework runs it with (``expect``), or ``expect: null`` where the file
cannot give them; ``true_refusals`` lists keywords a true one-line refusal contains. Every file is imported as a
user imports it: ``rlsim import-config FILE -o OUT`` from the file's folder, with no ``--format`` (the file says
what it is) unless ``--with-format``, and with the ``--set`` items of the launch the entry's ``assume`` documents
(a bare TRL config holds neither the process count nor the vLLM server's GPUs: :func:`launch_sets`).
An outcome is one of

* ``right``: imported, and P, G and GPUs equal the expected ones;
* ``refused, true``: refused in one line (exit 2) whose text contains one of the entry's ``true_refusals``;
* ``refused, untrue``: refused for a reason the entry does not list (it could have been imported, or the reason
  is another one);
* ``wrong``: imported with another P, G or GPU count (silently wrong: the worst outcome);
* ``traceback``: anything else (an exception, another exit code).

The score is (right + refused, true) / files. ``--write`` writes docs/results/launch_corpus.md (the whole page:
score by framework and every file's outcome) and docs/results/launch_corpus.json (the figures tests read).

    python scripts/launch_corpus.py            # run and print the table
    python scripts/launch_corpus.py --write    # and write the pages above
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import traceback
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import results_page  # noqa: E402

ROOT = results_page.ROOT
CORPUS = ROOT / "tests" / "launch_corpus"
PAGE = results_page.RESULTS / "launch_corpus.md"
FIGURES = results_page.RESULTS / "launch_corpus.json"
GOOD = ("right", "refused, true")


def launch_sets(entry: dict[str, Any]) -> list[str]:
    """The ``--set`` items for what an entry's ``assume`` says of the launch its source documents (TRL configs do
    not hold it): ``accelerate launch --num_processes``, ``trl vllm-serve``'s GPUs (one server of that many
    data-parallel ranks) and a ``--vllm_mode`` given on the command line."""
    assume = entry.get("assume") or {}
    sets = [f"num_processes={assume['num_processes']}"] if "num_processes" in assume else []
    if "vllm_mode" in assume:
        sets.append(f"vllm_mode={assume['vllm_mode']}")
    if int(assume.get("vllm_gpus") or 0) > 1:
        sets.append(f"vllm_server_data_parallel_size={assume['vllm_gpus']}")
    return sets


OUTCOMES = ("right", "refused, true", "refused, untrue", "wrong", "traceback")


@dataclass
class Outcome:
    file: str
    framework: str
    outcome: str
    expected: dict[str, int] | None
    got: dict[str, int] | None
    message: str


def entries(corpus: Path = CORPUS) -> dict[str, dict[str, Any]]:
    """Every entry of the corpus's expected_*.yaml files, by path relative to the corpus folder."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(corpus.glob("expected_*.yaml")):
        for name, entry in (yaml.safe_load(path.read_text()) or {}).items():
            if name in out:
                raise SystemExit(f"{path.name}: {name} is listed twice")
            out[name] = entry
    return out


def fields(scenario: dict[str, Any]) -> dict[str, int]:
    """P, G and every GPU a scenario occupies (the training pool and any separate reward, critic and reference
    pools), from the scenario file as `rlsim import-config` writes it."""
    w, hw = scenario.get("workload", {}), scenario.get("hardware", {})
    rw, alg = scenario.get("reward") or {}, scenario.get("algorithm") or {}
    gpus = int(hw.get("num_gpus", 0))
    gpus += int(rw.get("num_gpus") or 0) if rw.get("model") else 0
    gpus += int(alg.get("critic_gpus") or 0) + int(alg.get("reference_gpus") or 0)
    return {"prompts": int(w.get("prompts_per_step", 0)), "group": int(w.get("group_size", 1)), "gpus": gpus}


def _refusal_true(message: str, entry: dict[str, Any]) -> bool:
    text = message.lower()
    return any(str(k).lower() in text for k in entry.get("true_refusals") or [])


def score_one(name: str, entry: dict[str, Any], corpus: Path = CORPUS, with_format: bool = False) -> Outcome:
    """Import one corpus file as a user does and classify the result."""
    from rlsim.cli import main

    path = corpus / name
    expected = entry.get("expect")
    expected = {k: int(expected[k]) for k in ("prompts", "group", "gpus") if k in expected} if expected else None
    framework = str(entry.get("framework", ""))
    err, out = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "scenario.yaml"
        argv = ["import-config", str(path), "-o", str(target)]
        if with_format:
            argv[1:1] = ["--format", framework]
        argv += [f"--set={item}" for item in launch_sets(entry)]
        try:
            os.chdir(path.parent)
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                code = main(argv)
        except SystemExit as exc:  # argparse refusals
            code = exc.code if isinstance(exc.code, int) else 2
        except Exception:  # noqa: BLE001 - a traceback is an outcome here
            return Outcome(name, framework, "traceback", expected, None, traceback.format_exc().splitlines()[-1])
        finally:
            os.chdir(cwd)
        lines = err.getvalue().splitlines()
        message = " ".join(line for line in lines if "error:" in line) or (lines[-1] if lines else "")
        if code == 2:
            true = _refusal_true(message, entry)
            return Outcome(name, framework, "refused, true" if true else "refused, untrue", expected, None, message)
        if code != 0 or not target.is_file():
            return Outcome(name, framework, "traceback", expected, None, f"exit {code}: {err.getvalue()[-300:]}")
        got = fields(yaml.safe_load(target.read_text()))
    if expected is None:
        return Outcome(name, framework, "wrong", None, got, "imported, but the file cannot give P, G and GPUs")
    right = all(got[k] == v for k, v in expected.items())
    return Outcome(name, framework, "right" if right else "wrong", expected, got, "")


def run(corpus: Path = CORPUS, with_format: bool = False, progress: bool = True) -> list[Outcome]:
    todo = entries(corpus)
    results = []
    for i, (name, entry) in enumerate(todo.items(), 1):
        if progress:
            print(f"[{i}/{len(todo)}] {name}", file=sys.stderr, flush=True)
        results.append(score_one(name, entry, corpus, with_format))
    return results


def summary(results: list[Outcome]) -> dict[str, Any]:
    """Counts by outcome, overall and by framework, and the score (right + refused, true) / files."""
    by_fw: dict[str, Counter[str]] = {}
    for r in results:
        by_fw.setdefault(r.framework, Counter())[r.outcome] += 1
    total = Counter(r.outcome for r in results)
    n = len(results)
    return {
        "files": n,
        "frameworks": len(by_fw),
        "score": (total["right"] + total["refused, true"]) / n if n else 0.0,
        "outcomes": {k: total[k] for k in OUTCOMES},
        "by_framework": {fw: {k: c[k] for k in OUTCOMES} for fw, c in sorted(by_fw.items())},
    }


def page(results: list[Outcome], figures: dict[str, Any], cmd: str) -> list[str]:
    lines = results_page.header("Public launch corpus: `rlsim import-config` on files it was not written for", cmd)
    lines += [
        f"{figures['files']} files of {figures['frameworks']} frameworks (tests/launch_corpus/, each folder's README "
        "names the commit), imported with no `--format`; expected values written by hand by collectors who did not "
        f"read the reader's code. Score (right + refused for a true reason): **{figures['score']:.1%}**.",
        "",
        "| framework | files | " + " | ".join(OUTCOMES) + " |",
        "|---|---|" + "---|" * len(OUTCOMES),
    ]
    for fw, counts in figures["by_framework"].items():
        lines.append(f"| {fw} | {sum(counts.values())} | " + " | ".join(str(counts[k]) for k in OUTCOMES) + " |")
    lines += ["", "## Every file", "", "| file | outcome | expected P, G, GPUs | got | message |"]
    lines.append("|---|---|---|---|---|")
    for r in results:

        def trio(d: dict[str, int] | None) -> str:
            return ", ".join(str(d.get(k, "-")) for k in ("prompts", "group", "gpus")) if d else ""

        msg = r.message.replace("|", "\\|")[:160]
        lines.append(f"| `{r.file}` | {r.outcome} | {trio(r.expected)} | {trio(r.got)} | {msg} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write docs/results/launch_corpus.md and .json")
    parser.add_argument("--with-format", action="store_true", help="pass each entry's framework as --format")
    args = parser.parse_args(argv)
    results = run(with_format=args.with_format)
    figures = summary(results)
    for r in results:
        if r.outcome not in GOOD:
            print(f"{r.outcome:16s} {r.file}: expected {r.expected} got {r.got} {r.message[:200]}")
    print(json.dumps({k: figures[k] for k in ("files", "frameworks", "score", "outcomes")}))
    if args.write:
        cmd = results_page.command("launch_corpus", argv if argv is not None else sys.argv[1:])
        results_page.write(PAGE, page(results, figures, cmd))
        FIGURES.write_text(json.dumps({**figures, "results": [asdict(r) for r in results]}, indent=1) + "\n")
        print(f"wrote {PAGE.relative_to(ROOT)} and {FIGURES.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
