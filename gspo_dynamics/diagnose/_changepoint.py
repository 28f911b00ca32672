"""Where a series' level broke: the CUSUM change-point test with its exact Brownian-bridge (Kolmogorov) null.

For rows x_1..x_n (the reward or the entropy per logged step) with noise scale sigma, the standardized CUSUM

    C_k = (S_k - (k / n) S_n) / (sigma sqrt(n)),   S_k = sum_{i <= k} x_i,   k = 1..n-1,

is, under the null of one constant mean with independent rows, a discretized Brownian bridge B(k / n)
(Donsker), so the statistic K = max_k |C_k| has Kolmogorov's distribution:

    P(K > x) = 2 sum_{j >= 1} (-1)^(j - 1) exp(-2 j^2 x^2).

The break is named at k* = argmax_k |C_k| (the row after which the mean moved), with the means before and after.
sigma is read from the first differences, sigma^2 = mean((x_{i+1} - x_i)^2) / 2, which a single level shift
moves by only one term in n (the plain standard deviation would absorb the shift and hide it). The test asks for
a change of level; a smooth trend is one too (a saturating rise breaks where most of it happened), which is why
its users read it beside the trend verdicts, never instead of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ALPHA = 0.01  # the false-alarm rate a break is reported at
MIN_ROWS = 12  # fewer rows give no bridge to speak of
KOLMOGOROV_TERMS = 100  # the alternating series converges like exp(-2 j^2 x^2): 100 terms are exact at x >= 0.1


@dataclass(frozen=True, kw_only=True)
class ChangePoint:
    """A level break found by the CUSUM test."""

    step: int  # the last step before the break (x's step at k*)
    index: int  # k*, rows before the break
    statistic: float  # K = max |C_k|
    p_value: float  # P(K > statistic) under the Brownian-bridge null
    before: float  # mean of the rows up to the break
    after: float  # mean of the rows after it

    @property
    def significant(self) -> bool:
        return self.p_value < ALPHA


def kolmogorov_sf(x: float) -> float:
    """P(sup |B(t)| > x) for a Brownian bridge B: 2 sum_j (-1)^(j-1) exp(-2 j^2 x^2) (1 at x <= 0)."""
    if x <= 0.0:
        return 1.0
    if x < 0.1:  # the series converges slowly there; the bridge's sup is below 0.1 with chance ~1e-100
        return 1.0
    j = np.arange(1, KOLMOGOROV_TERMS + 1)
    return float(min(1.0, max(0.0, 2.0 * np.sum((-1.0) ** (j - 1) * np.exp(-2.0 * j * j * x * x)))))


def change_point(steps, x) -> ChangePoint | None:
    """The CUSUM test on the finite rows of x (module docstring); None with fewer than MIN_ROWS rows or no noise."""
    steps, x = np.asarray(steps), np.asarray(x, dtype=float)
    keep = np.isfinite(x)
    steps, x = steps[keep], x[keep]
    n = x.size
    if n < MIN_ROWS:
        return None
    scale = float(np.max(np.abs(x))) or 1.0  # scaled: a cumulative sum of huge values would overflow
    y = x / scale
    sigma = math.sqrt(float(np.mean(np.diff(y) ** 2)) / 2.0)
    if not sigma > 0.0:
        return None
    s = np.cumsum(y)  # (n,)
    k = np.arange(1, n)  # (n - 1,)
    c = (s[:-1] - k / n * s[-1]) / (sigma * math.sqrt(n))
    i = int(np.argmax(np.abs(c)))
    stat = float(abs(c[i]))
    return ChangePoint(step=int(steps[i]), index=i + 1, statistic=stat, p_value=kolmogorov_sf(stat),
                       before=float(np.mean(x[: i + 1])), after=float(np.mean(x[i + 1:])))
