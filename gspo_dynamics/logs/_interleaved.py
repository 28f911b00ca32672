"""Runs written into one file in turn: two processes appending to one CSV (steps 1, 189, 2, 3, 190, 4, ...). Read as
one run, the counter goes back on every other row, and dropping the rows before each fall (a resumed run's rule,
`_rows.resumed_rows`) would keep one run's rows with the other's first ones lost.

The training rows are parted into the fewest non-decreasing chains of steps, built from the file's end backward
(each row joins the chain whose first step is the least at or above its own; a new chain where none is: the greedy
cover, which uses the fewest chains, and from the end, so the runs' last rows, not their first, seed them). The file
holds k interleaved runs where

    the counter goes back at least INTERLEAVED_BACKS times,  2 <= k <= MAX_RUNS,  each chain >= MIN_ROWS rows,
    and consecutive training rows change chains on at least SWITCH_SHARE of them

(runs in turn alternate row by row; a run resumed a few times changes chain only where it was resumed). The greedy
cover cannot tell which run a row at an end belongs to (a run's last row, before the other run's rows end, joins the
chain it can precede): each row then moves to the chain whose neighbouring rows (in the file) bracket its step most
closely, the sum of the gaps to them, where it keeps that chain non-decreasing (`_nearest_chains`). An evaluation row
goes with the chain of the training row before it; the runs are numbered by their first row in the file.
"""

from __future__ import annotations

import numpy as np

INTERLEAVED_BACKS = 4  # the counter goes back at least this often (a resumed run: once per resume)
MAX_RUNS = 4  # more chains than this is no pair of processes writing in turn: left to the resumed-run rule
MIN_ROWS = 8  # every run at least this many training rows
SWITCH_SHARE = 0.25  # consecutive training rows in different chains, at least this share of them


def interleaved_runs(steps: np.ndarray, is_eval: np.ndarray) -> list[np.ndarray] | None:
    """The row indices of each run written in turn (module docstring), in the order of their first rows; None where
    the rows are not such runs. steps, is_eval: (n,)."""
    train = np.flatnonzero(~is_eval)
    s = steps[train]
    if int(np.sum(s[1:] < s[:-1])) < INTERLEAVED_BACKS:
        return None
    firsts: list[int] = []  # each chain's first step so far (built from the end)
    label = np.empty(s.size, dtype=np.int64)
    for j in range(s.size - 1, -1, -1):
        above = [c for c, first in enumerate(firsts) if first >= s[j]]
        if above:
            c = min(above, key=firsts.__getitem__)
        elif len(firsts) == MAX_RUNS:
            return None
        else:
            firsts.append(0)
            c = len(firsts) - 1
        firsts[c], label[j] = int(s[j]), c
    sizes = np.bincount(label, minlength=len(firsts))
    if len(firsts) < 2 or sizes.min() < MIN_ROWS or np.sum(label[1:] != label[:-1]) < SWITCH_SHARE * s.size:
        return None
    label = _nearest_chains(s, label, len(firsts))
    rows = np.full(steps.size, -1, dtype=np.int64)
    rows[train] = label
    before = np.maximum.accumulate(np.where(rows >= 0, np.arange(steps.size), -1))  # the training row at or before
    rows = np.where(before >= 0, rows[np.maximum(before, 0)], label[0])  # an eval row: its training row's chain
    order = sorted(range(len(firsts)), key=lambda c: int(np.flatnonzero(rows == c)[0]))
    return [np.flatnonzero(rows == c) for c in order]


def in_turn_said(turns: list[np.ndarray], steps: np.ndarray, run_index: int) -> str:
    """The reader's warning for runs written in turn: how many, each one's steps, which was read."""
    spans = ", ".join(f"{int(steps[t[0]])}...{int(steps[t[-1]])}" for t in turns)
    return (f"the rows hold {len(turns)} runs written into the file in turn (their steps interleave: {spans}), of which "
            f"run {run_index} was read (--run picks another)")


def _nearest_chains(s: np.ndarray, label: np.ndarray, k: int) -> np.ndarray:
    """label with each of the rows at a chain's ends (its first two and last two, where a cover errs) moved, where it
    fits, to the chain whose rows bracket its step most closely (module docstring): the gap to that chain's row before
    it in the file plus to its row after it (either absent: 0); a row stays where its own chain brackets it as closely.
    Two passes (a move changes the ends)."""
    label = label.copy()
    for _ in range(2):
        ends = {int(i) for c in range(k) for i in np.flatnonzero(label == c)[[0, 1, -2, -1]]}  # where a cover errs
        for j in sorted(ends):
            best, best_cost = int(label[j]), None
            for c in range(k):
                members = np.flatnonzero(label == c)
                members = members[members != j]
                if members.size == 0:
                    continue  # a chain of this row alone: no neighbours to bracket it
                at = int(np.searchsorted(members, j))
                low = s[members[at - 1]] if at > 0 else None
                high = s[members[at]] if at < members.size else None
                if (low is not None and low > s[j]) or (high is not None and high < s[j]):
                    continue  # the row would break the chain's order
                cost = (s[j] - low if low is not None else 0) + (high - s[j] if high is not None else 0)
                if best_cost is None or cost < best_cost or (cost == best_cost and c == label[j]):
                    best, best_cost = c, cost
            label[j] = best
    return label
