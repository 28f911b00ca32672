"""Completions cut at the length cap, read from a log: the rule `diagnose`'s truncation finding states over a whole
run and `predict` over a pilot (a pilot whose answers are cut scores unfinished answers).

    share  = mean of the truncation rate (TRL completions/clipped_ratio, verl response_length/clip_ratio) over the late
             window (`window`: the last quarter of the rows, at least MIN_WINDOW); cut where share > TRUNCATION_HIGH,
             some cut where share > TRUNCATION_SOME (either only within the bound below)
    bound  = median over the late rows of mean length / longest length: a completion cut at the cap is as long as the
             step's longest, so a share s cut gives mean >= s x longest, s <= mean / longest; a share past the bound
             by more than TRUNCATION_SLACK is not the cap's cut (TRL counts every completion without an EOS token, one
             a stop string or a tool call ended too)
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics.fit._windows import MIN_WINDOW, window
from gspo_dynamics.logs import RunLog

TRUNCATION_HIGH = 0.5  # more than half of the completions cut at the maximum length, over the late window
TRUNCATION_SOME = 0.2  # a fifth of the completions cut: a fifth of the rewards score unfinished answers (stated)
SHARE_TOL = 1e-9  # a share of exactly a fifth, summed in floats (0.2000...04), is no more than it
TRUNCATION_SLACK = 0.1  # a truncation share past the lengths' bound by more than this is not the cap's cut
LONGEST = ("completions/max_length", "response_length/max")  # the longest completion of a step: TRL, verl


def late_truncation(log: RunLog, rows: np.ndarray | None = None) -> dict | None:
    """The module's reading over `rows` (indices of the log's rows; None: all) where the truncation rate is logged on
    at least 2 MIN_WINDOW of them: {"share", "early", "steps": (first, last late step), "bound" (or None), "cut":
    share > TRUNCATION_HIGH and not past the bound by TRUNCATION_SLACK, "some": the same at TRUNCATION_SOME, "length":
    the late mean length (or None)};
    None where it is not logged so."""
    rows = np.arange(log.steps.size) if rows is None else rows
    if "truncation_rate" not in log:
        return None
    rate, steps = log["truncation_rate"][rows], log.steps[rows]
    keep = np.isfinite(rate)
    if keep.sum() < 2 * MIN_WINDOW:
        return None
    rate, steps = rate[keep], steps[keep]
    late = window(rate, True)
    share = float(np.mean(rate[late]))
    bound = _bound(log, steps[late])
    lengths = log["mean_length"][rows] if "mean_length" in log else np.empty(0)
    lengths = lengths[np.isfinite(lengths)]
    within = not (bound is not None and share > bound + TRUNCATION_SLACK)
    return {"share": share, "early": float(np.mean(rate[window(rate, False)])),
            "steps": (int(steps[late][0]), int(steps[late][-1])), "bound": bound,
            "cut": share > TRUNCATION_HIGH and within, "some": share > TRUNCATION_SOME + SHARE_TOL and within,
            "length": float(np.mean(lengths[window(lengths, True)])) if lengths.size else None}


def _bound(log: RunLog, late_steps: np.ndarray) -> float | None:
    """The most completions a cap can have cut, from the lengths (module docstring), the median over the late rows that
    log both (at least MIN_WINDOW of them); None where the log has no longest length."""
    name = next((n for n in LONGEST if n in log), None)
    if name is None or "mean_length" not in log:
        return None
    rows = np.isin(log.steps, late_steps) & np.isfinite(log["mean_length"]) & np.isfinite(log[name]) & (log[name] > 0)
    if rows.sum() < MIN_WINDOW:
        return None
    return float(np.median(log["mean_length"][rows] / log[name][rows]))
