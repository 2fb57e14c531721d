"""A framework log into rlsim run-log records (:func:`import_log`), and writing them (:func:`write_runlog`).

The reading is rlsim's (:mod:`rlsim.frameworks.logs`: the mappings, the one place a record is built), shared with
``rlsim check``; here it raises :class:`~calibrate.CalibrateError`, as calibrate's commands report bad input, and
the run log is written.
"""

from __future__ import annotations

from pathlib import Path

from calibrate import CalibrateError
from rlsim.errors import LogImportError
from rlsim.frameworks.logs import read
from rlsim.frameworks.logs.read import FORMAT_SPECS, FORMATS, ImportResult, format_problems, run_log_record
from rlsim.io.files import atomic_write
from rlsim.io.runlog import write_jsonl

__all__ = ["FORMATS", "FORMAT_SPECS", "ImportResult", "format_problems", "import_log", "run_log_record", "write_runlog"]


def import_log(
    path: str | Path,
    fmt: str,
    *,
    prompts_per_step: int | None = None,
    group_size: int | None = None,
    run_id: str | None = None,
) -> ImportResult:
    """Read a framework's per-step metrics (JSON Lines or CSV) into rlsim run-log records
    (:func:`rlsim.frameworks.logs.read.import_log`).

    ``fmt`` is one of ``verl``, ``openrlhf``, ``trl``, ``nemo-rl``. ``prompts_per_step`` and ``group_size``
    give the batch when the log does not count it. Unreadable lines are listed in ``problems`` and skipped;
    :class:`CalibrateError` is raised for an unknown format, a missing file, bad arguments, a log from which no
    step could be read, or an unknown batch size.
    """
    try:
        return read.import_log(path, fmt, prompts_per_step=prompts_per_step, group_size=group_size, run_id=run_id)
    except LogImportError as exc:
        raise CalibrateError(str(exc)) from exc


def write_runlog(result: ImportResult, out_path: str | Path) -> Path:
    """Write the imported records as a run log (JSON Lines, validated line by line)."""
    out = Path(out_path)
    atomic_write(out, lambda p: write_jsonl(p, result.records))  # all or nothing
    return out
