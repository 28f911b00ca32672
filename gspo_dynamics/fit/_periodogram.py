"""Fisher's g test for a periodic component in a residual: the frequency search is part of the test.

A least-squares oscillator fit picks the best of many frequencies, so its BIC gain over the
exponential overstates the evidence for oscillation on pure noise (the look-elsewhere effect).
Fisher's (1929) g statistic is the largest periodogram ordinate's share of the total, with the exact
null distribution for white Gaussian noise over all m candidate frequencies.
"""

from __future__ import annotations

import math

import numpy as np

FISHER_EXACT_MAX = 100  # beyond this many ordinates the alternating series loses all digits to cancellation
MIN_FLIPS = 2.0 / 3.0  # an alternation flips the residual's sign on 2 of 3 consecutive rows (white noise: 1 of 2)
MIN_ROWS = 12  # the alternation test's fewest rows (four windows of three)
# A periodic component (or an alternation of rows) that is an instability, not a detail of the curve
# (`oscillation_confidence`; `diagnose` reports one from 0.5, and `predict` calls a pilot with one at risk):
PERIODIC_P = 1e-3  # Fisher g test level for a periodic component: 1 false alarm in 1000 white-noise logs
MIN_CYCLES = 3  # a periodic residual must repeat 3 times: 1-2 cycles over the run are a trend misfit
SWING_NOISE = 1.0  # a swing (peak to peak) as large as the rows' noise std is one the eye sees in the curve ...
SWING_NOISE_SCALE = 0.5  # ... confidence 0.73 at 1.5x, 0.95 at 2.5x
SWING_RANGE = 0.05  # a swing of 5% of what the reward can reach matters (0.05 of a success rate) ...
SWING_RANGE_SCALE = 0.025  # ... confidence 0.73 at 7.5%, 0.95 at 12.5%


def fisher_g(residual: np.ndarray) -> tuple[float, float, int]:
    """Fisher's (1929) g test for one periodic component in white noise.

    g = max_k I_k / sum_k I_k over the periodogram ordinates k = 1..m, m = floor((n-1)/2);
    P(g > x) = sum_{j>=1} (-1)^{j-1} C(m, j) (1 - j x)_+^{m-1}. Returns (g, p-value, k of the peak).
    """
    x = residual - residual.mean()
    n = x.size
    m = (n - 1) // 2
    if m < 2:
        return math.nan, 1.0, 0
    power = np.abs(np.fft.rfft(x)[1 : m + 1]) ** 2
    total = power.sum()
    if total <= 0:
        return 0.0, 1.0, 0
    k = int(np.argmax(power))
    g = float(power[k] / total)
    if m > FISHER_EXACT_MAX:  # the first term alone: an upper bound, exact to O(p^2) where p is small
        return g, float(min(math.exp(math.log(m) + (m - 1) * math.log1p(-g)) if g < 1 else 0.0, 1.0)), k + 1
    p = 0.0
    for j in range(1, min(m, int(1.0 / g)) + 1):
        p += (-1) ** (j - 1) * math.comb(m, j) * (1.0 - j * g) ** (m - 1)
    return g, float(min(max(p, 0.0), 1.0)), k + 1


def periodic_component(t: np.ndarray, residual: np.ndarray) -> tuple[float, float, float]:
    """(p-value, period, share of power) of the strongest periodic component of a residual sampled at
    times t (interpolated onto a uniform grid of the same size first, for irregular steps)."""
    grid = np.linspace(t[0], t[-1], t.size)
    g, p, k = fisher_g(np.interp(grid, t, residual))
    period = (t[-1] - t[0]) / k if k else math.inf
    return p, period, g


def alternation(steps: np.ndarray, reward: np.ndarray, fit) -> dict | None:
    """A limit cycle whose period is two logged rows (a square wave of period 2T logged every T steps):
    the frequency Fisher's g leaves out (the Nyquist ordinate). With x the residual around the fit,

        rho_1 = sum_t x_t x_{t+1} / sum_t x_t^2,   z = rho_1 sqrt(n)   (rho_1 ~ N(0, 1/n) for white noise),

    an alternation gives rho_1 -> -1; -rho_1 is about the share of the residual variance it carries: for
    x_t = a (-1)^t + noise of std s, rho_1 = -a^2 / (a^2 + s^2), so a = sqrt(-rho_1 var x), s = sqrt((1 + rho_1) var x).
    It must also flip the residual's sign on at least MIN_FLIPS of consecutive rows (white noise: 1/2).
    Returns {"rho1", "z", "p_value" (one-sided normal), "share_of_variance", "cycles", "amplitude", "noise_std"} or
    None."""
    keep = np.isfinite(reward)
    t, r = steps[keep].astype(float), reward[keep]
    if r.size < MIN_ROWS:
        return None
    x = r - fit.predict(t)
    x = x - x.mean()
    denom = float(x @ x)
    if denom <= 0:
        return None
    rho = float(x[1:] @ x[:-1]) / denom
    # an alternation flips sign at (almost) every row; a few isolated spikes on a constant also give
    # rho_1 < 0 (the normal approximation fails for such sparse residuals) but rarely flip
    flips = float(np.mean(np.sign(x[1:]) * np.sign(x[:-1]) < 0))
    if flips < MIN_FLIPS:
        return None
    z = rho * math.sqrt(x.size)
    total = float(np.sum((r - r.mean()) ** 2))
    share = -rho * min(denom / total, 1.0) if total > 0 else 0.0  # of the reward's whole variance
    var = denom / x.size
    return {"rho1": rho, "z": z, "p_value": 0.5 * math.erfc(-z / math.sqrt(2.0)), "share_of_variance": share,
            "amplitude": math.sqrt(max(-rho, 0.0) * var), "noise_std": math.sqrt(max(1.0 + rho, 0.0) * var),
            "cycles": x.size / 2.0}


def _logistic(excess: float, scale: float) -> float:
    """1 / (1 + exp(-excess / scale)), 0.5 at excess 0 (as `diagnose`'s confidences)."""
    if not math.isfinite(excess):
        return 1.0 if excess > 0 else 0.0
    return 1.0 / (1.0 + math.exp(-max(min(excess / scale, 50.0), -50.0)))


def oscillation_confidence(p_value: float, swing_to_noise: float, swing_to_range: float, cycles: float) -> float:
    """Confidence that the reward oscillates, each piece on the logistic scale of the other evidence (0.5 at
    its threshold):

        conf = min( L(log10(PERIODIC_P / p) / 1),                          significance (Fisher's g p-value)
                    L((swing / noise - SWING_NOISE) / SWING_NOISE_SCALE),  the swing against the rows' noise
                    L((swing / range - SWING_RANGE) / SWING_RANGE_SCALE),  the swing against the reward's range
                    L((cycles - MIN_CYCLES) / 1) )                         cycles seen over the run

    with swing the component's peak-to-peak size (2 x its amplitude), noise the std of the rest of the residual
    around the trend, and range what the reward can reach (or its observed span). The weakest piece limits the
    verdict: a very significant component that is small against the noise, or against what the reward can
    do, is a detail of the curve, not an instability. How much of the reward's whole variance it carries is
    not a piece: a large rise before a limit cycle would hide the cycle. Non-decreasing in -p, the swings and
    cycles.
    """
    return min(_logistic(math.log10(PERIODIC_P / max(p_value, 1e-300)), 1.0),
               _logistic(swing_to_noise - SWING_NOISE, SWING_NOISE_SCALE),
               _logistic(swing_to_range - SWING_RANGE, SWING_RANGE_SCALE),
               _logistic(cycles - MIN_CYCLES, 1.0))


def reward_span(reward: np.ndarray, reward_range: tuple[float, float] | None) -> float:
    """What the reward can span: hi - lo of the given range; 1 for a score within [0, 1]; else its observed
    5-95% span (a quantile span, so one outlier row does not set it)."""
    if reward_range is not None:
        return float(reward_range[1] - reward_range[0])
    r = reward[np.isfinite(reward)]
    if r.size and r.min() >= 0.0 and r.max() <= 1.0:
        return 1.0
    lo, hi = np.quantile(r, (0.05, 0.95)) if r.size else (math.nan, math.nan)
    return float(hi - lo)
