"""Counters a hand-written loop logs beside its metrics: its count of batches or updates, read as the step by name
(`COUNTER_KEYS`), and any integer column that counts the rows, found by its values (`row_counter`) where no step
column is, so that rows numbered 1, 2, ... are never read across the runs of one file without a word.

A counter counts the rows: each row's value is the row before's plus one constant d > 0 (1, or a logging interval),

    c_{i+1} = c_i + d,   except where c_{i+1} < c_i (the counter starts again: another run appended to the file).

Numbered by position, the rows of several such runs read as one curve whose run boundaries look like falls of the
reward; `read_log` refuses that reading and names the counter as the step (`--map step=COLUMN`), except where an
epoch column rises at each restart and never goes back (`within_epochs`: a count of steps within each epoch of one
run, numbered rightly by row).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from gspo_dynamics.logs._epochs import epoch_key, epoch_restarts
from gspo_dynamics.logs._runlog import to_float

# A hand-written loop's count of its batches or updates (TRL, verl and OpenRLHF log `step`/`global_step`, in
# `_readers.STEP_KEYS`): read as the step after every STEP_KEYS name but W&B's `_step`, and only where no row repeats
# the value of the row before (`repeats`: per-item records share their batch's `batch_idx`).
COUNTER_KEYS = ("batch_index", "batch_idx", "update_step", "update_idx", "global_batch", "step_idx", "step_index")
_MIN_ROWS = 3  # a counter is seen to count: at least two rises


def repeats(steps: list) -> bool:
    """Whether a row's step equals the step of the row before it (None: no step, left out)."""
    held = [step for step in steps if step is not None]
    return any(a == b for a, b in zip(held, held[1:]))


def restarts(values: list) -> int | None:
    """How many times `values` (ints) start again, where they count the rows (`c_{i+1} = c_i + d` with one d > 0,
    except where they fall); None where they do not count them."""
    if len(values) < _MIN_ROWS:
        return None
    rises = {b - a for a, b in zip(values, values[1:]) if b >= a}
    falls = sum(b < a for a, b in zip(values, values[1:]))
    if len(rises) != 1 or 0 in rises or len(values) - 1 - falls < _MIN_ROWS - 1:
        return None
    return falls


def row_counter(records: Iterable[dict], skip: Iterable[str] = ()) -> tuple[str, int] | None:
    """(the column, how many times it starts again) of an integer column held by every record that counts them
    (`restarts`), the one that starts again most, then the one that counts by the smallest step (a row counter before
    a count of items, 4 a row), then the first by name; or None. `skip`: columns not to look at (a map's reward)."""
    records = list(records)
    if not records:
        return None
    skip = set(skip)
    candidates = sorted(k for k, v in records[0].items() if type(v) is int and v >= 0 and k not in skip)
    found = []  # (-restarts, the step it counts by, column)
    for key in candidates:
        values = [record.get(key) for record in records]
        if not all(type(v) is int and v >= 0 for v in values):
            continue
        count = restarts(values)
        if count is not None:
            found.append((-count, min(b - a for a, b in zip(values, values[1:]) if b >= a), key))
    return (min(found)[2], -min(found)[0]) if found else None


def within_epochs(records: list[dict], counter: str) -> bool:
    """Whether the `counter` restarts where the records' epoch (a column named `epoch`, `train/epoch`; on every row)
    rises (`_epochs.epoch_restarts`, the one rule), and that epoch never goes back: steps counted within each epoch of
    one run (runs appended to one file start their epoch again)."""
    key = epoch_key(records[0]) if records else None
    epochs = [to_float(record.get(key)) for record in records] if key is not None else [None]
    if None in epochs or any(not math.isfinite(e) for e in epochs):
        return False
    e = np.asarray(epochs, dtype=float)
    _, joined = epoch_restarts(np.asarray([record[counter] for record in records]), e)
    return bool(np.all(np.diff(e) >= 0) and joined.all())
