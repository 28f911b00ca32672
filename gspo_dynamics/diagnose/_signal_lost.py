"""A policy thrown dead by an update: groups that carried reward signal, then from one row on none at all, with the
reward fallen to its floor and held there (a learning rate far too large crashes a run within its first updates,
before any rise, window or trend can be read: the atlas's "crash below the warm-up's success").

Rule. k is the first row from which every later row has every group zero-std (frac_zero_std = 1, or without it
reward_std = 0) and the reward at the log's minimum; the rows before k must carry signal (a mean zero-std share q
below DEGENERATE_FRACTION: a task too hard from the start is advantage degeneracy) and a higher mean reward, and at least MIN_DEAD rows must follow. Under the null that the rows after k are drawn as the
rows before it were, a row comes out with every group zero-std at most as often as a single group does, at the
earlier rows' mean zero-std share q, so m dead rows in a row have chance at most q^m:

    confidence = 1 - q^m.

The verdict it feeds is dynamical instability (the update overshot); the degeneracy and any entropy collapse it
leaves rank below it (`_ranking`).
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics.diagnose._signals import DEGENERATE_FRACTION
from gspo_dynamics.logs import RunLog

MIN_DEAD = 4  # dead rows needed after the break (fewer: a bad batch or two)
TOL = 1e-9  # a share of 1 and a std of 0, up to rounding


def signal_lost(log: RunLog) -> dict | None:
    """{"step", "rows_dead", "rows_before", "q", "reward_before", "floor", "confidence"} or None (module rule)."""
    reward = log["reward"]
    if "frac_zero_std" in log:
        dead_groups = log["frac_zero_std"] >= 1.0 - TOL
        share = log["frac_zero_std"]
    elif "reward_std" in log:
        dead_groups = np.abs(log["reward_std"]) <= TOL
        share = dead_groups.astype(float)
    else:
        return None
    rows = np.isfinite(reward) & (np.isfinite(share))
    steps, reward, dead, share = log.steps[rows], reward[rows], dead_groups[rows], share[rows]
    if reward.size < MIN_DEAD + 1:
        return None
    floor = float(np.min(reward))
    dead = dead & (np.abs(reward - floor) <= TOL * max(1.0, abs(floor)))
    if not dead[-1]:
        return None
    k = int(reward.size - np.argmin(dead[::-1])) if not dead.all() else 0  # first row of the final dead run
    m = reward.size - k
    if k == 0 or m < MIN_DEAD:
        return None
    before = reward[:k]
    q = float(np.mean(np.clip(share[:k], 0.0, 1.0)))
    if not q < DEGENERATE_FRACTION or not float(np.mean(before)) > floor:
        return None
    return {"step": int(steps[k]), "rows_dead": m, "rows_before": k, "q": q, "reward_before": float(np.mean(before)),
            "floor": floor, "confidence": 1.0 - q**m}
