"""The harness's progress line: the same bar as conform's (tools/progress.h).

Drawn on stderr only when it is a terminal, so logs, pipes and tests never see it;
redrawn at most ten times a second; cleared when the run ends.
"""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

WIDTH = 24


def _clock(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 60}:{s % 60:02d}"


class Progress:
    def __init__(self, total: int, stream: Optional[TextIO] = None, force: bool = False):
        self.total, self.done = total, 0
        self.stream = stream or sys.stderr
        self.enabled = force or (hasattr(self.stream, "isatty") and self.stream.isatty())
        self.start = time.monotonic()
        self.last = None

    def line(self, what: str, now: float) -> str:
        frac = self.done / self.total if self.total else 1.0
        filled = int(frac * WIDTH)
        eta = (now - self.start) / self.done * (self.total - self.done) if self.done else 0.0
        return (f"harness [{'#' * filled}{'.' * (WIDTH - filled)}] {self.done}/{self.total} "
                f"ETA {_clock(eta)} {what[:60]}")

    def step(self, what: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        now = time.monotonic()
        if self.last is not None and now - self.last < 0.1 and self.done < self.total:
            return
        self.last = now
        self.stream.write("\r\033[K" + self.line(what, now))
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.last is not None:
            self.stream.write("\r\033[K")
            self.stream.flush()
