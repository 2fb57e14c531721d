"""A framework log into rlsim run-log records (:func:`import_log`) and its unreadable lines as text
(:func:`format_problems`).

The one place an imported record is built is :func:`run_log_record`; the rules for counts, tokens, ``wall_s`` and
``source_metrics`` are in :mod:`rlsim.frameworks.logs`. Each framework's mapping is its own module
(``rlsim.frameworks.logs.verl``, ``openrlhf``, ``trl``, ``nemo_rl``), found through each adapter's
``log_importer`` and listed in :data:`FORMAT_SPECS`. Writing the records as a run log is the caller's
(``rlsim-calibrate import``).
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlsim.errors import LogImportError, suggest
from rlsim.frameworks import registry
from rlsim.frameworks.logs.core import Format, Group, Mapped, RowError, group_steps, is_number, read_rows
from rlsim.io import records


def _specs() -> dict[str, Format]:
    """Each framework adapter's run-log importer (rlsim.frameworks.registry: Adapter.log_importer) by name."""
    out = {}
    for name, adapter in registry.adapters().items():
        if adapter.log_importer:
            out[name] = importlib.import_module(adapter.log_importer).FORMAT
    return out


FORMAT_SPECS: dict[str, Format] = _specs()
FORMATS: tuple[str, ...] = tuple(FORMAT_SPECS)


@dataclass
class ImportResult:
    """Records of one imported run and the lines that could not be read."""

    fmt: str
    source: str
    run_id: str
    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)
    initial_eval_metric: float | None = None  # eval logged before the first training step (verl val_before_train)
    notes: list[str] = field(default_factory=list)  # how counts were obtained


def import_log(
    path: str | Path,
    fmt: str,
    *,
    prompts_per_step: int | None = None,
    group_size: int | None = None,
    run_id: str | None = None,
) -> ImportResult:
    """Read a framework's per-step metrics (JSON Lines or CSV) into rlsim run-log records.

    ``fmt`` is one of ``verl``, ``openrlhf``, ``trl``, ``nemo-rl``. ``prompts_per_step`` and ``group_size``
    give the batch when the log does not count it. Unreadable lines are listed in ``problems`` and skipped;
    :class:`LogImportError` is raised for an unknown format, a missing file, bad arguments, a log from which no
    step could be read, or an unknown batch size.
    """
    if fmt not in FORMAT_SPECS:
        raise LogImportError(f"unknown log format {fmt!r}; {suggest(fmt, FORMATS)}")
    spec = FORMAT_SPECS[fmt]
    p = Path(path)
    if not p.is_file():
        raise LogImportError(f"no such log file {str(p)!r}; check the path")
    for name, value in (("prompts_per_step", prompts_per_step), ("group_size", group_size)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise LogImportError(f"{name} = {value!r} must be an integer >= 1; pass --{name.replace('_', '-')} N")
    result = ImportResult(fmt=fmt, source=str(p), run_id=run_id or p.stem)

    raw_rows, problems = read_rows(p)
    rows = [(ln, {spec.normalize(k): v for k, v in row.items()}) for ln, row in raw_rows]
    groups = group_steps(spec, rows, problems)

    timed = [g for g in groups if spec.has_timer(g.row)]
    offset = 1 if timed and min(g.step for g in timed) == 0 else 0
    first_timed = min((g.step for g in timed), default=None)

    mapped: list[tuple[Group, Mapped]] = []
    for g in groups:
        if not spec.has_timer(g.row):
            try:
                ev = spec.eval_metric(g.row)
            except RowError:
                ev = None
            if ev is not None and (first_timed is None or g.step < first_timed) and g.step <= 0:
                result.initial_eval_metric = ev
            elif ev is not None:
                problems.append(
                    (
                        g.line,
                        f"eval metrics for step {g.step} but no training metrics for it "
                        f"(missing the step timer {spec.timer_hint})",
                    )
                )
            else:
                problems.append((g.line, f"missing the step timer {spec.timer_hint}"))
            continue
        try:
            mapped.append((g, spec.map_row(g.row)))
        except RowError as exc:
            problems.append((g.timer_line or g.line, str(exc)))

    result.problems = sorted(problems)
    if not mapped:
        first = f"; first: line {result.problems[0][0]}: {result.problems[0][1]}" if result.problems else ""
        raise LogImportError(
            f"no training step could be read from {str(p)!r} as a {fmt} log ({len(result.problems)} problem(s){first});"
            f" check the file and --format"
        )
    result.records = _records(result, spec, mapped, offset, prompts_per_step, group_size)
    return result


def _records(
    result: ImportResult,
    spec: Format,
    mapped: list[tuple[Group, Mapped]],
    offset: int,
    prompts_per_step: int | None,
    group_size: int | None,
) -> list[dict[str, Any]]:
    fmt = result.fmt
    fix = "pass --prompts-per-step and --group-size (prompts per step and responses per prompt)"
    records: list[dict[str, Any]] = []
    cumulative = 0
    wall = 0.0
    prev_step: int | None = None
    prev_tokens: float | None = None
    notes: set[str] = set()
    for g, m in mapped:
        responses = m.responses
        if responses is not None:
            notes.add(m.count_note or "responses per step from the log")
        elif prompts_per_step is not None and group_size is not None:
            responses = prompts_per_step * group_size
            notes.add("responses per step = prompts_per_step x group_size")
        else:
            raise LogImportError(f"the {fmt} log {result.source!r} does not say how many responses a step has; {fix}")
        if prompts_per_step is not None:
            prompts = prompts_per_step
        elif group_size is not None:
            prompts = max(1, round(responses / group_size))
        else:
            raise LogImportError(
                f"the {fmt} log {result.source!r} does not say how many prompts a step has "
                f"({responses} responses); {fix}"
            )
        step = g.step + offset
        response_tokens = round(m.mean_response * responses) if m.mean_response is not None else None
        prompt_tokens = round(m.mean_prompt * responses) if m.mean_prompt is not None else None
        if m.tokens_cumulative is not None:  # TRL: num_tokens counts prompt + completion tokens since the start
            before = prev_tokens if prev_step is not None and step == prev_step + 1 else (0.0 if step == 1 else None)
            if before is not None and response_tokens is not None and m.tokens_cumulative - before >= response_tokens:
                prompt_tokens = round(m.tokens_cumulative - before - response_tokens)
            prev_tokens = m.tokens_cumulative
        cumulative += responses
        wall += m.step_s
        used = m.used | set(spec.step_keys)
        source_metrics = {k: v for k, v in g.row.items() if k not in used and is_number(v) and math.isfinite(v)}
        rec = run_log_record(
            run_id=result.run_id,
            step=step,
            cumulative_samples=cumulative,
            prompts=prompts,
            responses=responses,
            prompt_tokens=prompt_tokens,
            response_tokens=response_tokens,
            mapped=m,
            wall_s=wall,
            source_format=fmt,
            source_line=g.timer_line or g.line,
            source_metrics=source_metrics,
            eval_metric_initial=result.initial_eval_metric if not records else None,
        )
        records.append(rec)
        prev_step = step
    result.notes = sorted(notes)
    return records


def run_log_record(
    *,
    run_id: str,
    step: int,
    cumulative_samples: int,
    prompts: int,
    responses: int,
    prompt_tokens: int | None,
    response_tokens: int | None,
    mapped: Mapped,
    wall_s: float,
    source_format: str,
    source_line: int,
    source_metrics: dict[str, Any],
    eval_metric_initial: float | None = None,
) -> dict[str, Any]:
    """One imported step as a validated run-log record (the only place an importer builds one).

    ``eval_metric_initial`` goes into the first record only, as real runs log it with their first step.
    """
    extra = {"eval_metric_initial": eval_metric_initial} if eval_metric_initial is not None else {}
    if mapped.checkpoint_s is not None:
        extra["checkpoint_s"] = mapped.checkpoint_s
    return records.run_log_record(
        run_id=run_id,
        step=step,
        cumulative_samples=cumulative_samples,
        prompts=prompts,
        responses=responses,
        prompt_tokens=prompt_tokens,
        response_tokens=response_tokens,
        lr=mapped.lr,
        reward_mean=mapped.reward,
        eval_metric=mapped.eval_metric,
        wall_s=wall_s,
        step_time_s=mapped.step_s,
        timing_s=mapped.timing,
        source_format=source_format,
        source_line=source_line,
        source_metrics=source_metrics,
        **extra,
    )


def format_problems(result: ImportResult) -> str:
    """The unreadable lines of an import, one per line with its reason (a short line when there are none)."""
    if not result.problems:
        return f"{result.source}: all lines read ({len(result.records)} steps)"
    head = f"{result.source}: {len(result.problems)} line(s) skipped, {len(result.records)} steps read"
    return "\n".join([head] + [f"  line {ln}: {reason}" for ln, reason in result.problems])


def timer_counts(path: str | Path) -> dict[str, int]:
    """For each format, how many rows of the log at ``path`` (which must exist) hold its step timer: which
    framework wrote a log given without ``--format``, or given with the wrong one."""
    raw_rows, _ = read_rows(Path(path))
    return {
        name: sum(spec.has_timer({spec.normalize(k): v for k, v in row.items()}) for _, row in raw_rows)
        for name, spec in FORMAT_SPECS.items()
    }
