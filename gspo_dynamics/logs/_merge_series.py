"""The training and the evaluation rows' series on one step axis (`_rows.series_of`)."""

from __future__ import annotations

import numpy as np


def merge_series(train, evals):
    """(steps, series, logged) of the training and the evaluation series on the union of their steps; a name in
    both (a training row's own `eval/` key) keeps the training values and takes the evaluation ones where it has
    none. Training series already on those steps are kept as they are (read-only)."""
    (t_steps, t_series, t_logged), (e_steps, e_series, e_logged) = train, evals
    steps = _union(t_steps, e_steps)  # (N,)
    series: dict[str, np.ndarray] = {}
    logged: dict[str, np.ndarray] = {}
    for source_steps, source, masks in ((t_steps, t_series, t_logged), (e_steps, e_series, e_logged)):
        if source_steps.size == steps.size and not any(name in series for name in source):
            series.update(source)  # already on every step: nothing to move
            logged.update(masks)
            continue
        at = np.searchsorted(steps, source_steps)
        for name, values in source.items():
            column = series.get(name)
            column = np.full(steps.shape, np.nan) if column is None else column.copy()
            mask = logged.get(name)
            mask = np.zeros(steps.shape, dtype=bool) if mask is None else mask.copy()
            free = np.isnan(column[at]) & ~mask[at]
            column[at[free]] = values[free]
            mask[at[free]] = masks[name][free]
            column.flags.writeable = mask.flags.writeable = False
            series[name], logged[name] = column, mask
    steps.flags.writeable = False
    return steps, series, logged


def _union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.union1d of two sorted unique step arrays: `a` itself where it holds every step of `b` (evaluations at
    training steps), without the sort."""
    at = np.searchsorted(a, b)  # (len(b),) nondecreasing: within `a` where its last is
    if b.size and at[-1] < a.size and np.array_equal(a[at], b):
        return a
    return np.union1d(a, b)
