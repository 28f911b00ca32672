"""Which came first, the concentration or the fall (`_ranking._attribute_to_divergence` reads it): an entropy
collapse while the reward held below its ceiling, before the reward's level broke, is the fall's cause, not its
consequence."""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics.diagnose._changepoint import change_point
from gspo_dynamics.diagnose._signals import ENTROPY_COLLAPSE_RATIO
from gspo_dynamics.diagnose._trend_stats import MIN_WINDOW, WINDOW_FRACTION, Z_TREND
from gspo_dynamics.logs import RunLog

# a reward held this far below its ceiling before a fall was not a solved task: the top of the ceiling gap's grid
# (0.02, 0.05, 0.1), so that no tuning of the gap turns a nearly solved task's crash into a concentration
HELD_BELOW_CEILING = 0.1


def concentrated_first(log: RunLog, scale) -> dict | None:
    """The evidence that the concentration came before the fall, or None. The fall: the reward's level break after
    its running-mean peak (`change_point`, p < ALPHA, the mean lower after it); the collapse: the first step the
    entropy's running mean (window w, a quarter of the reward rows) is below ENTROPY_COLLAPSE_RATIO of its first w
    rows'; between them the reward held (at least w rows, the last half of them not climbing: slope z < Z_TREND)
    below its ceiling by more than HELD_BELOW_CEILING (a policy that concentrated on a solved or nearly solved task
    and then fell is the fall's, as before)."""
    if scale.ceiling is None:
        return None
    apart = collapse_before_fall(log)
    if apart is None:
        return None
    collapsed, cp, t, late = apart
    if _slope_z(t, late) >= Z_TREND or not float(np.mean(late)) < scale.ceiling - HELD_BELOW_CEILING:
        return None
    return {"signal": "entropy collapsed before the reward fell (step of the collapse)", "value": collapsed,
            "steps": (collapsed, cp.step), "threshold": cp.step, "side": "<", "holds": True,
            "fell_at_step": cp.step, "fall_p_value": cp.p_value, "held_reward": float(np.mean(late)),
            "ceiling": scale.ceiling}


def collapse_before_fall(log: RunLog):
    """(the entropy's collapse step, the reward's break (`change_point`), the steps and rewards of the last half of the
    rows between them) where the entropy collapsed at least w reward rows before the reward's level broke (the
    module's rules: `concentrated_first`), else None. Whatever the reward did between them, the collapse is then no
    consequence of the fall."""
    if "entropy" not in log or log.n_points("entropy") < 2 * MIN_WINDOW:
        return None
    steps, r = log.valid("reward")
    w = max(MIN_WINDOW, int(round(WINDOW_FRACTION * r.size)))
    if r.size < 3 * w:
        return None
    run = np.convolve(r, np.ones(w) / w, mode="valid")  # (n - w + 1,)
    i_peak = int(np.argmax(run))
    cp = change_point(steps[i_peak:], r[i_peak:])
    if cp is None or not cp.significant or not cp.after < cp.before:
        return None
    e_steps, h = log.valid("entropy")
    e_run = np.convolve(h, np.ones(w) / w, mode="valid")
    below = np.flatnonzero(e_run < ENTROPY_COLLAPSE_RATIO * e_run[0])
    if below.size == 0:
        return None
    collapsed = int(e_steps[below[0] + w - 1])  # the last step of the first window below the ratio
    held = (steps > collapsed) & (steps <= cp.step)
    if held.sum() < w:
        return None
    return collapsed, cp, steps[held][held.sum() // 2:].astype(float), r[held][held.sum() // 2:]


def _slope_z(t: np.ndarray, y: np.ndarray) -> float:
    """The OLS slope of y on t over its standard error (0 for fewer than 3 points or no residual)."""
    if y.size < 3:
        return 0.0
    tc = t - t.mean()
    sxx = float(tc @ tc)
    if sxx == 0:
        return 0.0
    b = float(tc @ (y - y.mean())) / sxx
    resid = y - y.mean() - b * tc
    se = math.sqrt(float(resid @ resid) / (y.size - 2) / sxx)
    return b / se if se > 0 else (math.inf if b > 0 else 0.0)
