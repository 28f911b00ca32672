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
