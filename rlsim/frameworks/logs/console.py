"""Frameworks' console output as metrics rows: what users paste into an issue when they ask whether a step is slow.

Two printed formats are read, each as the framework writes it:

* verl's console logger (volcengine/verl v0.7.0 ``verl/utils/logger/aggregate_logger.py``, ``concat_dict_to_str``;
  selected by ``trainer.logger`` containing ``console``): one line per step, ``step:N - key:value - key:value``,
  each value ``pprint.pformat`` of a number, so numpy scalars print as ``np.float64(12.3)`` under numpy 2. Ray
  prefixes worker output with ``(TaskRunner pid=...)``; anything before ``step:`` is ignored.
* NeMo RL's step summary (NVIDIA-NeMo/RL v0.5.0 ``nemo_rl/algorithms/grpo.py``, ``grpo_train`` and
  ``async_grpo_train``): a header ``===== Step K/N =====``, then ``📊 Training Results:`` with ``  • Loss: x``,
  ``  • Avg Reward: x``, ``  • Mean Generation Length: x``, and ``⏱️  Timing:`` with ``  • Total step time: Xs`` and
  one ``  • <timer>: Xs (P%)`` per timer; validation (``validate``) prints ``    • Accuracy: x`` and
  ``    • Total validation time: Xs``. They become the keys NeMo RL logs to its loggers (``timing/train/<timer>``,
  ``train/loss``, ``train/reward``, ``train/mean_gen_tokens_per_sample``, ``validation/accuracy``,
  ``timing/validation/total_validation_time``), so the framework's own reader maps them. A summary pasted without
  its header is the step after the last one read (the first: step 1).

:func:`console_rows` returns ``None`` for text in neither format (JSON Lines and CSV are read elsewhere).
"""

from __future__ import annotations

import math
import re
from typing import Any

VERL_LINE = re.compile(r"(?:^|[\s)])step:(\d+) - (.+)$")
SCALAR = re.compile(r"^(?:np|numpy|torch)?\.?(?:float|int|uint)\d*\((.*)\)$|^tensor\((.*?)(?:, device=.*)?\)$")
NEMO_STEP = re.compile(r"^=+ Step (\d+)/\d+ =+$")
NEMO_ITEM = re.compile(r"^\s*•\s*([^:]+):\s*(\S+?)(s)?(?:\s+\([\d.]+%\))?\s*$")
# NeMo RL's printed labels -> the keys it logs
NEMO_RESULTS = {
    "Loss": "train/loss",
    "Avg Reward": "train/reward",
    "Avg Filtered Reward": "train/reward",
    "Mean Generation Length": "train/mean_gen_tokens_per_sample",
    "Accuracy": "validation/accuracy",
    "Total validation time": "timing/validation/total_validation_time",
}


def number(text: str) -> float | int | None:
    """A printed number: ``12``, ``-3.5e-05``, ``np.float64(12.3)``, ``tensor(0.5)``, ``nan``; else None."""
    text = text.strip()
    m = SCALAR.match(text)
    if m:
        text = (m.group(1) if m.group(1) is not None else m.group(2)).strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return value if not math.isinf(value) else None


def _verl(lines: list[str]) -> tuple[list[tuple[int, dict[str, Any]]], list[tuple[int, str]]] | None:
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[tuple[int, str]] = []
    for lineno, line in enumerate(lines, 1):
        m = VERL_LINE.search(line.rstrip())
        if not m:
            continue
        row: dict[str, Any] = {"training/global_step": int(m.group(1))}
        for part in m.group(2).split(" - "):
            key, sep, value = part.rpartition(":")
            if not sep or not key.strip():
                problems.append((lineno, f"{part.strip()[:60]!r} is not key:value"))
                continue
            v = number(value)
            if v is not None:
                row[key.strip()] = v
        rows.append((lineno, row))
    return (rows, problems) if rows else None


def _nemo_rl(lines: list[str]) -> tuple[list[tuple[int, dict[str, Any]]], list[tuple[int, str]]] | None:
    rows: list[tuple[int, dict[str, Any]]] = []
    row: dict[str, Any] | None = None
    timing = False
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        m = NEMO_STEP.match(line)
        if m:
            row = {"step": int(m.group(1))}
            rows.append((lineno, row))
            timing = False
            continue
        opens = line.endswith("Training Results:") or (line.endswith("Timing:") and "Validation" not in line)
        if opens and "Initialization" not in line and (row is None or "timing/train/total_step_time" in row):
            # a step summary pasted without its "Step K/N" header: the step after the last one read
            row = {"step": rows[-1][1]["step"] + 1 if rows else 1}
            rows.append((lineno, row))
        if row is None:
            continue  # worker initialization timing and set-up output before the first step
        if line.endswith("Timing:"):
            timing = not line.endswith("Validation Timing:")
            continue
        if line.endswith("Results:") or line.endswith("Metrics:"):
            timing = False
            continue
        item = NEMO_ITEM.match(raw)
        if not item:
            continue
        label, value, seconds = item.group(1).strip(), number(item.group(2)), item.group(3)
        if value is None:
            continue
        if timing and seconds:
            key = "total_step_time" if label == "Total step time" else label
            row[f"timing/train/{key}"] = value
        elif label in NEMO_RESULTS:
            row[NEMO_RESULTS[label]] = value
    return (rows, []) if any("timing/train/total_step_time" in r for _, r in rows) else None


def console_rows(text: str) -> tuple[list[tuple[int, dict[str, Any]]], list[tuple[int, str]]] | None:
    """(line number, metrics) per step printed in ``text`` by verl's console logger or NeMo RL's step summary, and
    the (line number, reason) of lines that could not be read; None when ``text`` is in neither format."""
    lines = text.splitlines()
    return _verl(lines) or _nemo_rl(lines)
