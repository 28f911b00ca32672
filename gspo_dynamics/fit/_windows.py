"""Early and late windows of a series, their means with standard errors and Welch's z: the trend statistics
`diagnose` reads over a whole run and `predict` over a pilot (its completion length).

Windows: "early" and "late" are the first and last WINDOW_FRACTION of a series' finite points (at least MIN_WINDOW
each). The trend test is Welch's z = (mean_late - mean_early) / sqrt(se_e^2 + se_l^2).
"""

from __future__ import annotations

import math

import numpy as np

WINDOW_FRACTION = 0.25  # early/late windows: a quarter of the run each, long enough to average noise
MIN_WINDOW = 3  # fewer points cannot give a standard error
LENGTH_SHRINK = 2.0  # a mean completion length late below half its early value has shrunk (`shrank`)


def window(values: np.ndarray, late: bool) -> slice:
    n = values.size
    w = max(MIN_WINDOW, int(round(WINDOW_FRACTION * n)))
    return slice(n - w, n) if late else slice(0, w)


def mean_se(x: np.ndarray) -> tuple[float, float]:
    """Mean and its standard error, computed on x / max|x| so that huge values do not overflow."""
    x = x[np.isfinite(x)]
    if x.size == 0:
        return math.nan, math.nan
    a = float(np.max(np.abs(x))) or 1.0
    y = x / a
    if x.size < 2:
        return a * float(y[0]), math.nan
    return a * float(y.mean()), a * float(y.std(ddof=1) / math.sqrt(x.size))


def change(steps: np.ndarray, values: np.ndarray, start: float | None = None) -> dict:
    """Early/late means, their difference, Welch z, and the step ranges used (finite points only). `start`: the early
    window as that share of the rows (at least MIN_WINDOW) instead of `window`'s quarter."""
    keep = np.isfinite(values)
    s, v = steps[keep], values[keep]
    if v.size < 2 * MIN_WINDOW:
        return {}
    e = window(v, False) if start is None else slice(0, max(MIN_WINDOW, int(round(start * v.size))))
    l = window(v, True)
    (me, se_e), (ml, se_l) = mean_se(v[e]), mean_se(v[l])
    se = math.hypot(se_e, se_l)
    diff = ml - me
    z = diff / se if se > 0 else (0.0 if diff == 0 else math.copysign(math.inf, diff))
    return {"early": me, "late": ml, "diff": diff, "se": se, "z": z, "early_steps": (s[e][0], s[e][-1]),
            "late_steps": (s[l][0], s[l][-1]), "steps": (s[0], s[-1]), "n": int(v.size)}


def shrank(steps: np.ndarray, values: np.ndarray, z: float) -> dict:
    """`change` of a positive series whose late mean fell below 1 / LENGTH_SHRINK of its early one, significantly
    (Welch z <= -`z`): diagnose's length collapse over a run, predict's over a pilot; {} otherwise."""
    c = change(steps, values)
    return c if c and c["early"] > 0 and c["late"] * LENGTH_SHRINK < c["early"] and c["z"] <= -z else {}
