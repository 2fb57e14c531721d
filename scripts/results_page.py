"""The pages under docs/results/: each is written whole by the script that measures it, and opens with the command,
the date and the machine.

Reference pages under docs/ link to a results page instead of holding its numbers, so a page is refreshed by running
the command it names (it overwrites the page; nothing on it is edited by hand). Used by scripts/scaling.py,
scripts/estimates.py, scripts/fast_thrash.py, scripts/gpu_roofline.py and scripts/accuracy.py.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"


def cpu_model() -> str:
    """The CPU's model name as /proc/cpuinfo gives it, else what ``platform`` knows, else ``unknown CPU``."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine() -> str:
    """This machine in words: CPU model, cores, architecture and Python version."""
    return f"{cpu_model()}, {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}"


def command(script: str, argv: list[str]) -> str:
    """The command line that reproduces a run: ``python scripts/SCRIPT.py ARGS`` (arguments quoted for a shell)."""
    return " ".join(["python", f"scripts/{script}.py", *([shlex.join(argv)] if argv else [])])


def header(title: str, cmd: str, when: str | None = None, where: str | None = None, extra: str = "") -> list[str]:
    """The opening lines of a results page: its title, then the command that wrote it, the date (today unless
    ``when``) and the machine (this one unless ``where``), and ``extra`` (what else the run depends on)."""
    when = when or _dt.date.today().isoformat()
    where = where or machine()
    line = f"Written by `{cmd}` on {when} ({where}{'; ' + extra if extra else ''})."
    return [f"# {title}", "", line + " Rerun the command to refresh this page; it is not edited by hand.", ""]


def write(path: Path, lines: list[str]) -> Path:
    """Write ``lines`` as the whole page at ``path`` (its folder made if missing); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines).rstrip("\n") + "\n")
    return path
