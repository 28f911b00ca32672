"""The reward curve's statistics the checks share: early and late windows, their means and Welch's z, the late
half's slope and climb.

Windows: "early" and "late" are the first and last WINDOW_FRACTION of a series' finite points
(at least MIN_WINDOW each). The trend test is Welch's z = (mean_late - mean_early) / sqrt(se_e^2 + se_l^2).
"""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics.diagnose._trend_advice import MEANINGFUL_CHANGE
from gspo_dynamics.fit import MIN_WINDOW, WINDOW_FRACTION, change, mean_se, window  # noqa: F401 (the checks' names)

Z_TREND = 3.0  # |z| above this is a real change of the reward (a 3-sigma rise: p ~ 0.001 by chance)
R2_NOISE = 0.5  # R^2 below this: the fluctuation variance exceeds the variance the trend explains
STILL_RISING_FRACTION = 0.10  # a remaining rise above 10% of the total rise is "still rising"
Z_STILL_RISING = 2.0  # ... and at least 2 standard errors above zero
# the share of a log whose climb is the remaining rise at the still-rising boundary: for r = r_inf - A exp(-t / tau)
# logged to T, the climb over the last w T is A exp(-T / tau) (exp(w T / tau) - 1), the remaining rise A exp(-T / tau);
# at remaining = STILL_RISING_FRACTION of the rise (T / tau = ln(1 / STILL_RISING_FRACTION)) they are equal when
# exp(w T / tau) = 2: w = ln 2 / ln(1 / STILL_RISING_FRACTION) = 0.301 (a late half's climb is 2.2x the remaining rise)
TAIL_FRACTION = math.log(2.0) / math.log(1.0 / STILL_RISING_FRACTION)
Z_POWER = 0.8416  # z_{0.8}: "could have seen" = detected with 80% power (one-sided normal quantile)


def ar1_inflation(values: np.ndarray) -> float:
    """How much correlated rows widen the standard error of a window's mean: for an AR(1) series with lag-1
    autocorrelation rho the mean of n rows has the variance of n_eff = n (1 - rho) / (1 + rho) independent ones,

        se_eff / se = sqrt((1 + rho) / (1 - rho)),   rho = max(0, sum d_t d_(t+1) / sum d_t^2),  d = r - mean r,

    rho capped at 0.95 (a reward swinging slowly has few independent rows, not none). 1 for independent rows or
    fewer than 3 finite values."""
    x = values[np.isfinite(values)]
    if x.size < 3:
        return 1.0
    d = x - x.mean()
    ss = float(d @ d)
    rho = min(max(float(d[:-1] @ d[1:]) / ss, 0.0), 0.95) if ss > 0 else 0.0
    return math.sqrt((1.0 + rho) / (1.0 - rho))


def stall_probability(diff: float, se: float, meaningful: float) -> float:
    """The posterior share of "no change" against "a meaningful change" given an observed change `diff` of
    standard error `se`: with d ~ N(Delta, se^2), H0: Delta = 0 against H1: Delta = +-meaningful (the side of d,
    the alternative most favourable to a change), at equal prior odds,

        log BF = [(|d| - meaningful)^2 - d^2] / (2 se^2) = u (u - 2 |z|) / 2,   u = meaningful / se,  z = d / se,
        P(H0 | d) = 1 / (1 + exp(-log BF)).

    0.5 where the data cannot tell them apart (u -> 0) or where |d| is halfway to a meaningful change; -> 1 where a
    precise estimate sits at 0. NaN without a finite, positive se and meaningful change."""
    if not (se > 0 and math.isfinite(se) and meaningful > 0 and math.isfinite(diff)):
        return math.nan
    u, z = meaningful / se, abs(diff) / se
    log_bf = u * (u - 2.0 * z) / 2.0
    return 1.0 / (1.0 + math.exp(-max(min(log_bf, 50.0), -50.0)))


def late_slope(steps: np.ndarray, values: np.ndarray, tail: float = 0.5) -> tuple[float, float, tuple]:
    """(slope, its z, the steps used) of the least-squares fit over the last `tail` of the finite points (a half),

        slope = sum (t - t_bar)(r - r_bar) / sum (t - t_bar)^2,
        se^2  = [sum (r - r_bar - slope (t - t_bar))^2 / (n - 2)] / sum (t - t_bar)^2,   z = slope / se:

    a reward still climbing at the end of the log has z >> 0 whatever the fitted plateau (which a near-linear
    rise leaves unresolved). NaN, NaN, () if too short."""
    keep = np.isfinite(values)
    t, r = steps[keep].astype(float), values[keep]
    first = t.size - int(math.ceil(tail * t.size))
    t, r = t[first:], r[first:]
    if t.size < 2 * MIN_WINDOW:
        return math.nan, math.nan, ()
    dt = t - t.mean()
    sxx = float(dt @ dt)
    if sxx == 0:
        return math.nan, math.nan, ()
    a = float(np.max(np.abs(r))) or 1.0  # scaled, as mean_se, against overflow
    y = r / a
    slope = float(dt @ (y - y.mean())) / sxx
    resid = y - y.mean() - slope * dt
    se = math.sqrt(float(resid @ resid) / (t.size - 2) / sxx)
    z = slope / se if se > 0 else (0.0 if slope == 0 else math.copysign(math.inf, slope))
    return a * slope, z, (t[0], t[-1])


def late_climb(steps: np.ndarray, values: np.ndarray, spread: float | None, tail: float = 0.5) -> dict:
    """Whether the late half still climbs: significantly, meaningfully and by a share of the run's rise,

        slope / se(slope) >= Z_STILL_RISING,   climb >= MEANINGFUL_CHANGE x spread,
        climb >= STILL_RISING_FRACTION x (late - start)          (climb = slope (t_last - t_first))

    over the last `tail` of the points, a half by default (`late_slope`; start: the mean of the first MIN_WINDOW
    rows, late: the late window's mean; spread: the per-sample reward std, or None). The effect size is the one that makes a change
    meaningful elsewhere (a precisely logged run creeping 0.99 -> 0.999 has not stopped at its ceiling only
    in the statistical sense), the share the one that makes a run still rising (the within-group std of a
    converged run is small, so the spread alone would call a creep of a few hundredths after a rise of 0.5 a
    climb). Returns {"climbing" (all three), "rising" (significant and a share of the rise: the trend verdict's
    test, which has no precise creep at a ceiling to tell apart), "falling" (the mirror of "climbing": slope z <=
    -Z_STILL_RISING, a fall of MEANINGFUL_CHANGE x spread and of STILL_RISING_FRACTION of the run's change or more:
    no plateau either), "slope_z", "steps", "climb", "share" (climb / rise; NaN if unknown), "meaningful" (the climb's
    size rules; for a negative climb, the fall's: "falling" but for its significance)}; all
    False (and slope_z NaN) when the late half is too short for a slope."""
    slope, slope_z, used = late_slope(steps, values, tail)
    climb = slope * (used[1] - used[0]) if used else math.nan
    meaningful = spread is None or not spread > 0 or climb >= MEANINGFUL_CHANGE * spread
    finite = values[np.isfinite(values)]
    rise = change(steps, values).get("late", math.nan) - float(np.mean(finite[:MIN_WINDOW])) if finite.size else math.nan
    share = climb / rise if rise > 0 else math.nan
    big = not climb < STILL_RISING_FRACTION * rise  # NaN (too short to compare): the climb counts
    rising = bool(slope_z >= Z_STILL_RISING and big)
    falls = ((spread is None or not spread > 0 or -climb >= MEANINGFUL_CHANGE * spread)
             and not -climb < STILL_RISING_FRACTION * abs(rise))
    falling = bool(slope_z <= -Z_STILL_RISING and falls)
    return {"climbing": rising and bool(meaningful), "rising": rising, "falling": falling, "slope_z": slope_z,
            "steps": used, "climb": climb, "share": share,
            "meaningful": bool(falls if climb < 0 else meaningful)}


def recent_level(steps, reward) -> tuple[float, int]:
    """The recent rewards' level, what a fitted plateau is compared with in the advice: the mean of the finite rewards
    of the last TAIL_FRACTION of the rows (at least MIN_WINDOW of them; all, for a shorter log). The last single value
    is one noisy row; the fitted curve's end is the fit's, which a fall and recovery can leave below the data.
    Returns (that mean, the rows it averages)."""
    r = np.asarray(reward, dtype=float)
    r = r[np.isfinite(r)]
    if r.size == 0:
        return math.nan, 0
    n = min(r.size, max(MIN_WINDOW, int(math.ceil(TAIL_FRACTION * r.size))))
    return float(np.mean(r[-n:])), n
