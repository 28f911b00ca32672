"""The changes of the reward that the early-vs-late Welch test of `_trend_stats.change` misses: a rise completed
within the early window (`fitted_rise_test`, read by the closed-form fit; `shift_rise_test`, a level shift wherever
it lies) and a rise that starts late (`late_rise_test`, read by the late half's slope). `_trend.trend_verdict` reads
any of them where the windows see none."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from gspo_dynamics.diagnose._trend_advice import MEANINGFUL_CHANGE
from gspo_dynamics.diagnose._trend_stats import R2_NOISE, Z_TREND, ar1_inflation, late_climb

SHIFT_TRIM = 0.05  # the split points the level-shift test searches: rows [0.05 n, 0.95 n] (Andrews 1993's least trim)
SHIFT_MIN_ROWS = 5  # and at least this many rows on each side of the split
P_TREND = 2.0 * NormalDist().cdf(-Z_TREND)  # the two-sided p of a change at Z_TREND (0.0027): the same bar


def late_rise_test(steps, reward, spread: float | None) -> tuple[float, str, dict] | None:
    """A significant, meaningful climb of the late half (`late_climb` at slope z >= Z_TREND): a rise the quarter
    windows miss (a run that starts learning late). Returns (slope z, which test, {}), else None."""
    late = late_climb(steps, reward, spread)
    if late["climbing"] and late["slope_z"] >= Z_TREND:
        return late["slope_z"], "late-half slope of the reward, a rise the quarter windows miss (z)", {}
    return None


def fitted_rise_test(steps, reward, fit, spread: float | None = None) -> tuple[float, str, dict] | None:
    """The early-vs-late Welch test misses a rise completed within the early window (a fast relaxation
    to a plateau). The closed-form fit sees it: the fitted rise is a change of the reward when

        z = (r_inf - r0) / sqrt(se(r_inf)^2 + se(r0)^2) >= Z_TREND          (fit without oscillation, with
                                                                          R^2 >= R2_NOISE or se(tau) < tau)

    and, where the per-sample spread is known, the rise is meaningful (MEANINGFUL_CHANGE x spread): a
    precisely logged flat run has significant but negligible wiggles. (A whole-run slope test was tried
    as well and dropped: it read the slow real drift under heavy noise of the noise-dominated recipes
    of two families as a rise.) Returns (z, which test), else None."""
    if fit is None or fit.oscillation:  # a ringing fit's r0 is not a start level
        return None
    # the relaxation must be resolved (tau at least one standard error from 0), or r0 is one noisy point
    if not (fit.r_squared >= R2_NOISE or fit.stderr.get("tau", math.inf) < fit.params.get("tau", 0.0)):
        return None
    se = math.hypot(fit.stderr.get("r_inf", math.inf), fit.stderr.get("r0", math.inf))
    rise = fit.params["r_inf"] - fit.params["r0"]
    meaningful = spread is None or not spread > 0 or abs(rise) >= MEANINGFUL_CHANGE * spread
    if se > 0 and math.isfinite(se) and abs(rise) / se >= Z_TREND and meaningful:
        return rise / se, "fitted rise r_inf - r0 / its standard error (z)", {}
    return None


def sup_t_sf(c: float, t0: float, t1: float) -> float:
    """P(sup_{t0 <= t <= t1} |B(t)| / sqrt(t (1 - t)) >= c) for a Brownian bridge B: the null of the largest
    two-sample t over split points at shares t0..t1 of a series (Andrews 1993; the sup-F of his Table 1 is c^2).
    Miller & Siegmund (1982, Biometrics 38, "Maximally selected chi square statistics"), accurate in the tail:

        P ~ phi(c) (c - 1/c) log(t1 (1 - t0) / (t0 (1 - t1))) + 4 phi(c) / c,   capped at 1; 1 for c <= 1,

    where the tail form says nothing (it turns negative below c ~ 0.6). At t0 = 0.05, t1 = 0.95 it gives 0.012 at
    c = 3.607, Andrews' 1% sup-F 13.01 (the approximation on the conservative side)."""
    if not c > 1.0:
        return 1.0
    phi = math.exp(-c * c / 2.0) / math.sqrt(2.0 * math.pi)
    width = math.log(t1 * (1.0 - t0) / (t0 * (1.0 - t1)))
    return min(1.0, phi * (c - 1.0 / c) * width + 4.0 * phi / c)


def shift_rise_test(steps, reward, spread: float | None = None) -> tuple[float, str, dict] | None:
    """A rise the quarter windows miss because it sits inside one of them (a fast rise in the first rows, then a
    long hold): the largest two-sample t of a level shift over the split points k in [SHIFT_TRIM n, (1 - SHIFT_TRIM) n]
    (at least SHIFT_MIN_ROWS a side),

        t_k = (mean x_{k+1..n} - mean x_{1..k}) / (s_k sqrt(1/k + 1/(n - k))),   s_k^2 the pooled within-side variance,

    its standard error widened for correlated rows by `ar1_inflation` of the residuals about the two sides' means at
    the largest |t_k| (a level shift is no autocorrelation), and read against the null of searching every split
    (`sup_t_sf`). A rise when t > 0, its p at most P_TREND (the Welch test's own bar, Z_TREND) and, where the
    per-sample spread is known, the shift meaningful (MEANINGFUL_CHANGE x spread). Returns (z, which test, numbers)
    with z = the normal quantile of p (>= Z_TREND), else None."""
    x = np.asarray(reward, dtype=float)
    keep = np.isfinite(x)
    x, s = x[keep], np.asarray(steps, dtype=float)[keep]
    n = x.size
    lo = max(SHIFT_MIN_ROWS, math.ceil(SHIFT_TRIM * n))
    if n - lo < lo:
        return None
    k = np.arange(lo, n - lo + 1)
    c1, c2 = np.cumsum(x), np.cumsum(x * x)
    m1, m2 = c1[k - 1] / k, (c1[-1] - c1[k - 1]) / (n - k)
    within = (c2[k - 1] - k * m1 ** 2) + (c2[-1] - c2[k - 1] - (n - k) * m2 ** 2)
    sd = np.sqrt(np.maximum(within, 0.0) / (n - 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, (m2 - m1) / (sd * np.sqrt(1.0 / k + 1.0 / (n - k))), 0.0)
    i = int(np.argmax(np.abs(t)))
    split = int(k[i])
    residual = np.concatenate([x[:split] - m1[i], x[split:] - m2[i]])
    stat = float(t[i]) / ar1_inflation(residual)
    p = sup_t_sf(abs(stat), lo / n, (n - lo) / n)
    shift = float(m2[i] - m1[i])
    meaningful = spread is None or not spread > 0 or shift >= MEANINGFUL_CHANGE * spread
    if stat > 0 and p <= P_TREND and meaningful:
        z = -NormalDist().inv_cdf(max(p, 1e-300) / 2.0)
        return z, "level shift up, the largest two-sample t over split points (its p as a normal z)", {
            "t": stat, "p": p, "before": float(m1[i]), "after": float(m2[i]), "split_step": float(s[split - 1])}
    return None
