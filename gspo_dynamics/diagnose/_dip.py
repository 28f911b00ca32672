"""A short fall the run climbed back from (`_fall` reads it where `_fall._trough` sees none): the
trough's running mean averages a quarter of the rows, so a dip a few rows long is averaged away with the rows
around it (0.66 -> 0.22 for three rows of 31, then back, reads as a 0.08 wiggle over eight).

Rule. For each window width k = MIN_WINDOW .. w (w the trough's own window) the deepest drawdown of the running
mean of k rows: the highest window ending before the trough window starts, less the trough window. Its z is the
drop over the standard error of a difference of two k-row means,

    z_k = drop_k / max(sqrt((s(peak)^2 + s(trough)^2) / k), hypot(se_peak, se_trough)),
    sigma^2 = mean((r_{i+1} - r_i)^2) / 2,

sigma the row noise from the first differences (a level shift moves it by a term in n; `_changepoint` reads its
noise so) and the windows' own scatter a floor under it. s(x) = sigma, except on a [0, 1] score, whose rows are
binomial with variance proportional to p (1 - p): sigma is the rows' average noise, at their mean rate pbar, and a
window at a rate x whose p (1 - p) is larger has the larger noise,

    s(x) = sigma max(1, sqrt(x (1 - x) / (pbar (1 - pbar)))),

(without it a success rate near 0, whose differences are mostly exactly 0, reads three rows of one success in 64
against three of none as a 6-sigma fall). The scan looks at every (peak, trough) pair of every
width, M = sum_k (n - 2k + 1)(n - 2k + 2) / 2 of them, so the dip's p-value is Bonferroni's over them,

    p = min(1, M Phi(-z_k)),

taken at the width with the largest z, and a dip counts at p < ALPHA (the change-point test's false-alarm rate).
On white noise the 99% quantile of max_k z_k is 4.34 at n = 31 (Bonferroni's bound at p = 0.01: 4.34) and 5.32 at
n = 400 (bound 5.9): the bound holds, close for short logs, conservative for long ones.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from gspo_dynamics.diagnose._changepoint import ALPHA
from gspo_dynamics.diagnose._trend_advice import MEANINGFUL_CHANGE
from gspo_dynamics.diagnose._trend_stats import MIN_WINDOW, WINDOW_FRACTION, Z_TREND, mean_se
from gspo_dynamics.diagnose._verdict import SUCCESS_RATE_TOL


def short_dip(s: np.ndarray, r: np.ndarray, trend: dict, spread: float | None = None) -> dict | None:
    """The dip of the module rule as `_trough`'s dict (peak, trough, drop relative to the peak's height over the
    lower of the early mean and the trough, the steps, z, the peak window's last step as the break (the fall lies
    between it and the trough window) and the Bonferroni p as its p-value), or None where no width gives p < ALPHA,
    z >= Z_TREND and, with the per-sample spread known, a drop of at least MEANINGFUL_CHANGE of it."""
    n = r.size
    w = max(MIN_WINDOW, int(round(WINDOW_FRACTION * n)))
    if n < 3 * w:
        return None
    a = float(np.max(np.abs(r))) or 1.0  # scaled: squares of huge rewards would overflow
    sigma = a * math.sqrt(float(np.mean(np.diff(r / a) ** 2)) / 2.0)
    if not sigma > 0.0:
        return None
    pbar = float(np.mean(r))
    score = r.min() >= -SUCCESS_RATE_TOL and r.max() <= 1.0 + SUCCESS_RATE_TOL and 0.0 < pbar < 1.0

    def noise(x: float) -> float:  # s(x) of the module docstring
        return sigma * max(1.0, math.sqrt(max(x * (1.0 - x), 0.0) / (pbar * (1.0 - pbar)))) if score else sigma

    pairs = sum((n - 2 * k + 1) * (n - 2 * k + 2) // 2 for k in range(MIN_WINDOW, w + 1))
    best = None
    for k in range(MIN_WINDOW, w + 1):
        run = np.convolve(r, np.ones(k) / k, mode="valid")  # (n - k + 1,) run[i] averages r[i:i + k]
        best_before = np.maximum.accumulate(run[:-k])  # (n - 2k + 1,) the highest window ending before j starts
        j = k + int(np.argmax(best_before - run[k:]))
        i = int(np.argmax(run[:j - k + 1]))
        drop = float(run[i] - run[j])
        se = max(math.hypot(noise(float(run[i])), noise(float(run[j]))) / math.sqrt(k),
                 math.hypot(mean_se(r[i:i + k])[1], mean_se(r[j:j + k])[1]))
        z = drop / se
        if best is None or z > best[0]:
            best = (z, k, i, j, drop)
    z, k, i, j, drop = best
    peak, trough = float(np.mean(r[i:i + k])), float(np.mean(r[j:j + k]))
    level = peak - min(trend["early"], trough)
    p = min(1.0, pairs * NormalDist().cdf(-z))
    meaningful = spread is None or drop > MEANINGFUL_CHANGE * spread
    if not level > 0 or not z >= Z_TREND or not p < ALPHA or not meaningful:
        return None
    return {"peak": peak, "trough": trough, "drop": drop / level, "peak_step": int(s[i]),
            "trough_first_step": int(s[j]), "trough_step": int(s[j + k - 1]), "z": z, "broke_at_step": int(s[i + k - 1]),
            "break_p_value": p, "window_rows": k}
