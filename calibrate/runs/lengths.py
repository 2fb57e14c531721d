"""The response-length model fitted from the reference runs (``rlsim-calibrate fit --runs``; a profile's ``lengths``).

The prompt length (the runs' mean prompt tokens per response) and the histogram of response lengths
(``response_length_counts`` in the run log) pooled over the reference runs' steps (``response_length``), and with
``length_phases`` > 1 (default 4) one histogram per group of steps by training progress
(``response_length_by_samples``, groups of equal size). A policy's responses change as it learns (on the parity task
from up to 8 tokens to 2), and an engine pays a step's longest response (static batches decode to it; padded
training passes are priced at it). Progress at another batch size follows the **cumulative learning rate**
(``length_progress: learning_rate``): Adam moves each weight by about the LR per step whatever the batch, so under
the sqrt rule a run at 4x the batch reaches a given length after 2x the samples, not after the same samples
(``samples``, the curves-in-samples view) nor the same steps. Measured (2026-12-02, parity, sqrt rule, 5 seeds per
batch; the samples at which a seed's mean response first falls below 4 tokens, median over seeds, scale as B ** a):
vLLM loop (B = 16 / 64 / 256) a = 0.38 below the reference and 0.59 above it, hf loop (B = 64 / 128 / 512) 0.38 and
0.55; a = 0 would be samples, 0.5 the summed LR, 1 steps. Refitting those loops' held-out runs: step time error vLLM
+2.8% / -7.7% pooled, -3.5% / -0.1% with 4 phases by LR, +4.1% / -8.4% with 4 by samples; hf +0.3% / -9.4%, -5.0% /
-3.2%, +1.9% / -14.4% (at the smaller / larger held-out batch); the rollout's own error at the larger batch -12.1%
-> -1.5% (vLLM). The smaller batch's rollout is then under-predicted by 11% in both loops (its a is nearer 0.4 than
0.5). Runs logged without counts give a fixed mean length.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from calibrate.runs.run import Run

LENGTH_PHASES = 4  # default groups of the reference runs' steps by training progress (module docstring)
LENGTH_PROGRESS = "learning_rate"  # what that progress counts at another batch (module docstring)


def _histogram(counts: list[list[int]]) -> dict[str, Any]:
    """An empirical LengthDist from per-step counts of responses by length: one bin per length, [k - 0.5,
    k + 0.5), which rounds back to k (rlsim.workload.lengths samples uniformly in a bin; a response is at least 1
    token)."""
    total = np.zeros(max(len(c) for c in counts))
    for c in counts:
        total[: len(c)] += np.asarray(c, float)
    keep = np.flatnonzero(total)
    lo, hi = int(keep[0]), int(keep[-1])
    return {
        "dist": "empirical",
        "bin_edges": [max(0.0, k - 0.5) for k in range(lo, hi + 2)],  # a length-0 bin starts at 0
        "weights": [float(w) for w in total[lo : hi + 1]],
    }


def length_model(runs: list[Run], phases: int = LENGTH_PHASES, progress: str = LENGTH_PROGRESS) -> dict[str, Any]:
    """The ``lengths`` section from the reference runs, with ``phases`` groups by progress (module docstring).
    The reference runs' setup scenario states the LR at their own batch (``learning.reference_batch``), where
    progress by learning rate and by samples are the same number: the phases' ends are the runs' samples either
    way, and ``progress`` says how another batch size reads them (``workload.length_progress``)."""
    recs = [r for run in runs for r in run.records]
    responses = sum(int(r["responses"]) for r in recs)
    prompt = max(1, round(sum(int(r["prompt_tokens"]) for r in recs) / responses))
    out: dict[str, Any] = {"prompt_length": {"dist": "fixed", "tokens": prompt}}
    counts = [r.get("response_length_counts") for r in recs]
    if all(isinstance(c, list) and sum(c) > 0 for c in counts):
        out["response_length"] = _histogram(counts)
        starts = np.array([float(r["cumulative_samples"]) - float(r["responses"]) for r in recs])
        order = np.argsort(starts, kind="stable")
        groups = [g for g in np.array_split(order, max(1, min(phases, len(recs)))) if len(g)]
        found: list[dict[str, Any]] = []
        for i, g in enumerate(groups):
            # a phase ends where the next group's first step starts
            end = float(starts[groups[i + 1][0]]) if i + 1 < len(groups) else None
            if found and end is not None and end <= found[-1]["until_samples"]:
                continue  # steps starting at equal samples: merged into the next phase
            found.append({"length": _histogram([counts[j] for j in g]), "until_samples": end})
        if found:
            found[-1]["until_samples"] = None
        out["response_length_by_samples"] = found if len(found) > 1 else []
        if len(found) > 1:
            out["length_progress"] = progress
        source = f"histogram of {responses} responses over {len(recs)} steps of {len(runs)} run(s)" + (
            f", in {len(found)} phases of training progress" if len(found) > 1 else ""
        )
    else:
        mean = sum(int(r["response_tokens"]) for r in recs) / responses
        out["response_length"] = {"dist": "fixed", "tokens": max(1, round(mean))}
        source = f"mean over {len(recs)} steps of {len(runs)} run(s) (no response_length_counts logged)"
    return {**out, "source": source, "runs": [run.name for run in runs]}
