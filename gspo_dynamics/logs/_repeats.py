"""Rows that repeat the row before them in every reading.

A logger that writes its last values at every step (a callback that reads the trainer's latest log entry each step,
while the trainer logs every k steps) logs one measurement k times. Read as k points, the repeats shrink every
standard error by about sqrt(k) (990 rows of 98 values: a Welch z of 29 where about 9 is there), so each value is
read once, at its first step, and the reader says so.

Row i repeats row i - 1 where

    x_{i,j} = x_{i-1,j} for every training series j (NaN equal to NaN),
    no evaluation series holds a value on row i, and
    #{j != learning rate : x_{i,j} finite and != 0} >= MIN_MEASURED

(a run pinned at a perfect reward with zero loss, zero KL and zero gradient repeats nothing: it stays where it is;
a constant learning rate is no measurement). Such rows are a logger's copies only where they are the log's pattern:

    #{repeating rows} >= COPY_SHARE x #{rows}, and
    at least MIN_BLOCKS blocks of equal values (a row and the rows repeating it) have one length L >= 2,

since a logger that writes every step and measures every k-th repeats (k - 1) / k >= 1/2 of its rows, in blocks of
k. A run whose deterministic policy gives one batch the same rewards twice repeats a few rows by chance (5 of 330 in
a real float32 reward log), and a run that collapsed and stays pinned holds one long block: both are measurements.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

MIN_MEASURED = 2  # nonzero readings besides the learning rate a row needs for its repeat to be a copy
COPY_SHARE = 0.5  # the least share of the rows repeating for the repeats to be a logger's copies
MIN_BLOCKS = 3  # blocks of one length a logger's period shows at least


def repeated_rows(series: Mapping[str, np.ndarray], training: Iterable[str]) -> np.ndarray:
    """(n,) bool: the rows that repeat the row before them as a logger's copies (module docstring); `training` names
    the training series (the others are evaluation series). All False where the repeats are not the pattern."""
    training = set(training)
    names = sorted(n for n in series if n in training)
    n = len(next(iter(series.values()))) if series else 0
    out = np.zeros(n, dtype=bool)
    if n < 2 or not names:
        return out
    x = np.column_stack([np.asarray(series[name], dtype=float) for name in names])  # (n, k)
    same = np.all((x[1:] == x[:-1]) | (np.isnan(x[1:]) & np.isnan(x[:-1])), axis=1)
    measures = np.array([name != "learning_rate" for name in names])
    measured = np.sum(np.isfinite(x[1:]) & (x[1:] != 0) & measures, axis=1) >= MIN_MEASURED
    evals = [np.asarray(a, dtype=float) for name, a in series.items() if name not in training]
    no_eval = np.all(np.column_stack([np.isnan(a[1:]) for a in evals]), axis=1) if evals else np.ones(n - 1, bool)
    out[1:] = same & measured & no_eval
    return out if out.sum() >= COPY_SHARE * n and _periodic(out) else np.zeros(n, dtype=bool)


def _periodic(repeats: np.ndarray) -> bool:
    """Whether at least MIN_BLOCKS blocks (a row and the rows after it that repeat it) share one length >= 2."""
    starts = np.flatnonzero(~repeats)  # each block starts at a row that repeats nothing
    lengths = np.diff(np.r_[starts, repeats.size])
    lengths = lengths[lengths >= 2]
    return lengths.size > 0 and int(np.max(np.bincount(lengths))) >= MIN_BLOCKS
