"""Rows written in an order other than their steps': a table sorted newest first (a spreadsheet's or a dashboard's
export, steps 150, 149, ..., 1) or shuffled. Read in file order, every fall of the step counter would start a new
run (`_rows.run_starts`): 150 one-row runs, 149 of them dropped. The training rows are in another order where

    every step is distinct   (runs appended to one file, or a resumed run, repeat their steps)
    and the counter goes back on at least OUT_OF_ORDER of the rows, over at least MIN_ROWS rows

(a resumed or appended run goes back once per resume; runs written in turn, `_interleaved`, are told apart before
this rule is asked; fewer rows are too short to analyse either way, and three falling steps may as well be three
runs that stopped at their first step). Such rows are read in step order (training rows before an evaluation row
of the same step), and the log's step axis says so.
"""

from __future__ import annotations

import numpy as np

OUT_OF_ORDER = 0.25  # the counter goes back on at least this share of the training rows (stated, fitted to no log: a
# resumed or appended run goes back a handful of times, a shuffled table on about half its rows, a reversed one on all)
MIN_ROWS = 8  # training rows, as many as an analysis needs (`logs.MIN_ANALYSIS_POINTS`)


def step_order(steps: np.ndarray, is_eval: np.ndarray) -> tuple[np.ndarray | None, str]:
    """(the row order that reads the rows in step order, the words the step axis adds), or (None, "") where the
    rows are in their steps' order or are not out of order by the module docstring's rule. steps, is_eval: (n,)."""
    s = steps[~is_eval]
    backs = int(np.sum(s[1:] < s[:-1]))
    if s.size < MIN_ROWS or backs < OUT_OF_ORDER * (s.size - 1) or np.unique(s).size < s.size:
        return None, ""
    how = "newest first" if backs == s.size - 1 else \
        f"out of order: the step goes back on {backs} of {s.size} rows, no step repeated"
    return np.lexsort((is_eval, steps)), f"the rows read in step order (the file's are {how})"
