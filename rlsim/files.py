"""Writing files so that a kill never leaves a half-written one: write a temporary file beside the target,
then rename it over the target (atomic on POSIX). Used by every command that writes results."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp_path)`` and move the result to ``path``; on any error the target is left untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        write(Path(tmp))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; results get the usual permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write(path, lambda p: p.write_text(text))
