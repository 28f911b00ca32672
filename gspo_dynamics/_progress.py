"""A dependency-free progress bar on stderr for long simulations.

Drawn only when stderr is a terminal (so logs and pipes stay clean) unless forced.
"""

from __future__ import annotations

import sys
import time


class Progress:
    """Call `update(done)` with the number of finished units; `close()` ends the line."""

    WIDTH = 30

    def __init__(self, total: int, label: str = "", *, enabled: bool | None = None, stream=None):
        self.total = max(int(total), 1)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.start = time.perf_counter()
        self._last_draw = 0.0

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if done < self.total and now - self._last_draw < 0.1:  # redraw at most 10 times a second
            return
        self._last_draw = now
        frac = min(done / self.total, 1.0)
        filled = int(frac * self.WIDTH)
        elapsed = now - self.start
        eta = elapsed * (1.0 - frac) / frac if frac > 0 else float("nan")
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        self.stream.write(f"\r{self.label} [{bar}] {100 * frac:5.1f}%  {elapsed:6.1f}s elapsed, ~{eta:5.1f}s left")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.update(self.total)
            self.stream.write("\n")
            self.stream.flush()
