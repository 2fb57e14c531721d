"""Progress on stderr that tells the truth: a bar on a terminal, a line now and then off one, one stage at a time.

On a terminal a tqdm bar per stage (a plan's screening, then its finalists simulated in full, each with its own
count). Off a terminal (a log file, CI, a pipe) nothing for work that ends within ``every_s`` seconds, then one
line every ``every_s`` seconds with the stage, the count and the time so far, so a long run shows that it moves
without filling a log. Only the command lines (rlsim.cli, rlsim.plan.cli) make one: the library reports progress
through callbacks and writes nothing itself.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class Progress:
    """``update(done, total)`` after each unit of work, ``stage(name, total)`` when a new stage starts, ``close()``."""

    def __init__(
        self,
        desc: str,
        unit: str,
        total: int | None = None,
        tty: bool | None = None,
        every_s: float = 30.0,
        stream: TextIO | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.unit, self.every_s = unit, every_s
        self._bar: Any = None
        self._start = time.monotonic()
        self.stage(desc, total)

    def stage(self, desc: str, total: int | None = None) -> None:
        """Start a stage: its own bar (or lines) and count."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self.desc, self.total, self.done = desc, total, 0
        self._last = time.monotonic()
        if self.tty:
            # here, not at the top: it loads tqdm (start-up time)
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit=self.unit, desc=desc, file=self.stream, leave=False)

    def update(self, done: int, total: int | None = None) -> None:
        self.done = done
        if total is not None:
            self.total = total
        if self._bar is not None:
            self._bar.total = self.total
            self._bar.n = done
            self._bar.refresh()
            return
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            of = f"/{self.total:,}" if self.total else ""
            self.stream.write(f"rlsim: {self.desc}: {done:,}{of} {self.unit}s, {now - self._start:.0f} s so far\n")
            self.stream.flush()

    def step(self, _n: int = 0) -> None:
        """One more unit (a simulated step): the callback ``rlsim.run.simulation.simulate`` takes."""
        self.update(self.done + 1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
