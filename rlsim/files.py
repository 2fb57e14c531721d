"""Files: writing so that a kill never leaves a half-written one (a temporary file beside the target, renamed over
it: atomic on POSIX), used by every command that writes results; and reading an input that must be text."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def read_text(path: str | Path, what: str = "file") -> str:
    """The UTF-8 text of ``path``; NotTextError naming it when it is binary (a NUL byte) or not UTF-8, so a wrong
    file gives one line, not a traceback."""
    from rlsim.errors import NotTextError

    path = Path(path)
    data = path.read_bytes()
    if b"\x00" in data:
        raise NotTextError(f"{what} {path}: is a binary file, not text; give the {what} itself")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotTextError(
            f"{what} {path}: is not UTF-8 text (byte {exc.start}); give the {what} itself, saved as UTF-8"
        ) from None


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
