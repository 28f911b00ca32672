"""Step counters that restart each epoch: a hand-written loop's `{"epoch": e, "step": s, ...}` rows, or console lines
`Epoch 2/3, Step 10, ...`, count s from 0 again in each epoch. Where the counter goes back and the epoch rises there
(`epoch_restarts`: the one rule, also `_counters.within_epochs`' for step-less rows), the rows are one run's next
epoch, not a new run (runs appended to one file start their epoch again) and not a resumed run (which logs an epoch it
logged before): the step counts on,

    step' = s + sum over the earlier such restarts k of (s_{k-1} - s_k + d),

with d the counter's usual increment (the median positive step difference), so epoch 2's first row follows epoch 1's
last by d. A restart where the epoch does not rise resets the sum: it is read as before (a new run, or a resume).
Every training row must log its epoch, and the steps must be the log's own (not rows a reader numbered, whose
restarts are its own split of the runs).
"""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics.logs._names import canonical_name
from gspo_dynamics.logs._runlog import to_float
from gspo_dynamics.logs._table import RowTable

EPOCH = "epoch"  # the canonical name of an epoch column (`epoch`, `train/epoch`, `Epoch`)


def epoch_key(keys) -> str | None:
    """The epoch column among `keys` (`epoch`, `train/epoch`, `Epoch`; the first by name), or None."""
    return next((k for k in sorted(keys) if canonical_name(k).lower() == EPOCH), None)


def _epochs(rows, groups: dict[tuple, list[int]]) -> np.ndarray | None:
    """(n,) each row's epoch (NaN where it has none), or None where no row logs one; `groups`: the row indices by
    key tuple."""
    key = epoch_key(set().union(*groups))
    if key is None:
        return None
    values = rows.column(key) if isinstance(rows, RowTable) else [record.get(key) for _, record in rows]
    return np.fromiter((math.nan if (x := to_float(v)) is None else x for v in values), float, len(values))


def epoch_restarts(counts: np.ndarray, epochs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the positions where `counts` goes back, whether the epoch rises at each: the count restarts with the
    epoch); counts and epochs (n,), epochs finite."""
    back = np.flatnonzero(counts[1:] < counts[:-1]) + 1
    return back, epochs[back] > epochs[back - 1]


def across_epochs(rows, groups: dict[tuple, list[int]], steps: np.ndarray,
                  is_eval: np.ndarray) -> tuple[np.ndarray, int]:
    """(steps (n,) counted on across the epochs where the counter restarts each epoch, the restarts joined); the
    steps themselves and 0 where none is (see the module docstring). Evaluation rows move with the training rows
    before them."""
    train = np.flatnonzero(~is_eval)
    if train.size < 2:
        return steps, 0
    s = steps[train]  # (T,)
    epochs = _epochs(rows, groups) if np.any(s[1:] < s[:-1]) else None
    if epochs is None or not np.all(np.isfinite(epochs[train])):
        return steps, 0
    back, joined = epoch_restarts(s, epochs[train])  # (B,) positions in `train` where the counter goes back
    if not joined.any():
        return steps, 0
    rises = np.diff(s)[np.diff(s) > 0]
    d = int(np.median(rises)) if rises.size else 1
    jump = np.zeros(steps.size, dtype=np.int64)  # (n,) the offset added from each restart's row on
    reset = np.zeros(steps.size, dtype=bool)
    jump[train[back[joined]]] = s[back[joined] - 1] - s[back[joined]] + d
    reset[train[back[~joined]]] = True
    stretch = np.cumsum(reset)  # (n,) which stretch between unjoined restarts each row is in
    total = np.cumsum(jump)
    start_total = np.concatenate(([0], total[np.flatnonzero(reset)]))  # the sum where each stretch starts
    return steps + (total - start_total[stretch]), int(joined.sum())
