"""A growing run log kept at a fixed size: what the live guard diagnoses, at a cost that does not grow with the log.

Rows are added in chunks (`RunLog`s of the new rows only). The view holds at most `size` rows: while the log has
no more, they are the log's own rows (its diagnosis is batch `diagnose`'s, exactly); past that, each view row is
the mean of a block of s consecutive log rows, s the smallest power of two with ceil(n / s) <= size:

    view_j[name] = mean of the finite values of rows j s .. (j + 1) s - 1,   NaN where one of them was logged
                   non-finite (NaN / inf as written) or none is finite
    step_j       = floor(mean step of the block)                       (strictly increasing: blocks are disjoint)

When the blocks outgrow `size`, neighbours are merged in pairs (s doubles): O(size) once per doubling, so a chunk of
k rows costs O(k + size) whatever the log's length. The last block may hold fewer than s rows. Sums are kept per
block, so a merged block is exactly the mean of its rows (no mean of means).

What averaging changes (only past `size` rows): the rows' noise shrinks as 1/sqrt(s) while Welch's z of the trend
windows is kept (the windows' means and standard errors of the mean are those of the rows, for independent rows); a
finding's step is its block's step; a spike one row wide is diluted by s (a grad-norm or KL spike is told at block
resolution); `logging_interval` is the source's times s.
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics.logs import RunLog

DIVERGENCE_SERIES = ("reward", "loss")  # as the readers' (`RunLog.diverged`)
VIEW_ROWS = 512  # the view's most rows: TRL runs checked live here log <= 400-500 rows (issue 49's atlas: 400 steps),
# whose view is the log itself (block means only past it); one diagnose of 512 rows costs about what one of 50 does


class LogView:
    """The fixed-size view of a log that grows by chunks (module docstring)."""

    def __init__(self, size: int = VIEW_ROWS) -> None:
        if size < 2:
            raise ValueError(f"the view needs at least 2 rows, got {size}")
        self.size = size
        self.rows = 0  # log rows added
        self.block = 1  # s: log rows per view row
        self.last_step: int | None = None
        self._n = 0  # blocks in use (the last may be partial)
        cap = 2 * size + 2
        self._count = np.zeros(cap, dtype=np.int64)  # rows per block
        self._step_sum = np.zeros(cap)
        self._sum: dict[str, np.ndarray] = {}  # name -> (cap,) sum of finite values
        self._finite: dict[str, np.ndarray] = {}  # name -> (cap,) count of finite values
        self._bad: dict[str, np.ndarray] = {}  # name -> (cap,) bool: a value logged non-finite in the block
        self._meta: RunLog | None = None  # the first chunk: format, source, trainer, ...
        self._columns: dict[str, str] = {}
        self._unread: dict[str, None] = {}
        self._eval_points = 0
        self.diverged: dict[str, tuple[int, int]] = {}  # the log's trailing non-finite runs (as `RunLog.diverged`)
        self._seen_finite: set[str] = set()  # DIVERGENCE_SERIES with a finite value so far

    def add(self, chunk: RunLog) -> None:
        """Append the rows of `chunk` (steps after the last added; earlier or repeated steps are dropped)."""
        keep = np.ones(chunk.steps.size, dtype=bool) if self.last_step is None else chunk.steps > self.last_step
        steps = chunk.steps[keep]
        if steps.size == 0:
            return
        if self._meta is None:
            self._meta = chunk
        self._columns.update(chunk.columns)
        self._unread.update(dict.fromkeys(chunk.unread))
        self._eval_points += chunk.n_eval_points
        for name in chunk.series:
            self._ensure(name)
        masks = {name: self._bad_rows(chunk, name, keep) for name in chunk.series}
        values = {name: v[keep] for name, v in chunk.series.items()}
        done = 0
        while done < steps.size:  # one segment per block the new rows fall into
            if self._n == 0 or self._count[self._n - 1] >= self.block:  # the last block is full: open one
                if self._n == self.size:
                    self._merge()
                    continue
                self._n += 1
            j = self._n - 1
            seg = slice(done, min(steps.size, done + self.block - int(self._count[j])))
            self._count[j] += seg.stop - seg.start
            self._step_sum[j] += float(steps[seg].sum())
            for name, x in values.items():
                part = x[seg]
                finite = np.isfinite(part)
                self._sum[name][j] += float(part[finite].sum())
                self._finite[name][j] += int(finite.sum())
                self._bad[name][j] |= bool(masks[name][seg].any())
            done = seg.stop
        for name, x in values.items():
            self._track_divergence(name, steps, x, masks[name])
        self.rows += steps.size
        self.last_step = int(steps[-1])

    def run_log(self) -> RunLog:
        """The view as a `RunLog` (at most `size` rows)."""
        if self._meta is None:
            raise ValueError("no rows were added")
        n, m = self._n, self._meta
        count = self._count[:n]
        steps = np.floor(self._step_sum[:n] / count).astype(np.int64)
        series = {}
        masks = {}
        for name, total in self._sum.items():
            finite = self._finite[name][:n]
            bad = self._bad[name][:n].copy()
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.where(finite > 0, total[:n] / np.maximum(finite, 1), np.nan)
            mean[bad] = np.nan
            series[name] = mean
            masks[name] = bad
        interval = (m.logging_interval or 1) * self.block if self.block > 1 else m.logging_interval
        return RunLog(steps=steps, series=series, format=m.format, source=m.source, trainer=m.trainer,
                      version=m.version, algorithm=m.algorithm, reward_std_kind=m.reward_std_kind,
                      logging_interval=interval, warnings=m.warnings, diverged=dict(self.diverged),
                      logged_non_finite=masks, step_axis=m.step_axis, columns=dict(self._columns),
                      unread=tuple(self._unread), n_eval_points=self._eval_points, placeholders=m.placeholders)

    def _ensure(self, name: str) -> None:
        if name not in self._sum:
            cap = self._count.size
            self._sum[name] = np.zeros(cap)
            self._finite[name] = np.zeros(cap, dtype=np.int64)
            self._bad[name] = np.zeros(cap, dtype=bool)

    @staticmethod
    def _bad_rows(chunk: RunLog, name: str, keep: np.ndarray) -> np.ndarray:
        """Rows where `name` was logged non-finite (NaN / inf as written; a missing value is not one)."""
        x = chunk.series[name][keep]
        logged = chunk.logged_non_finite.get(name)
        return (logged[keep] if logged is not None else np.zeros(x.size, dtype=bool)) | np.isinf(x)

    def _merge(self) -> None:
        """Merge neighbouring blocks in pairs (s doubles); sums and counts add, so a block stays its rows' mean."""
        n = self._n
        half = (n + 1) // 2

        def pairs(a: np.ndarray, combine) -> None:
            a[:n // 2] = combine(a[0:n - n % 2:2], a[1:n - n % 2:2])
            if n % 2:
                a[n // 2] = a[n - 1]
            a[half:n] = 0

        for a in (self._count, self._step_sum, *self._sum.values(), *self._finite.values()):
            pairs(a, np.add)
        for a in self._bad.values():
            pairs(a, np.logical_or)
        self._n = half
        self.block *= 2

    def _track_divergence(self, name: str, steps: np.ndarray, x: np.ndarray, bad: np.ndarray) -> None:
        """`diverged`: a reward or loss whose values turned non-finite after finite ones and stayed so to the last
        row: name -> (its first such step, how many values), as the readers' `RunLog.diverged`."""
        if name not in DIVERGENCE_SERIES:
            return
        finite = np.flatnonzero(np.isfinite(x))
        bad_idx = np.flatnonzero(bad)
        if finite.size:
            after = bad_idx[bad_idx > finite[-1]]
            self._seen_finite.add(name)
            self.diverged.pop(name, None)
            if after.size:
                self.diverged[name] = (int(steps[after[0]]), int(after.size))
        elif bad_idx.size and name in self._seen_finite:
            first, count = self.diverged.get(name, (int(steps[bad_idx[0]]), 0))
            self.diverged[name] = (first, count + int(bad_idx.size))
