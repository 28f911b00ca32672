"""The dual clip: a token whose advantage is negative and whose ratio passed c gets no gradient.

verl's vanilla loss (dual-clip PPO, `clip_ratio_c`, default 3) takes min(max(-A r, -A clip(r)), -A c) where A < 0;
TRL's `delta` clamps the unclipped ratio at delta. Either way the push on a token with A < 0 and r > c is switched
off. With the log-ratio after j stale steps normal, log r_j ~ N(0, (j delta)^2), independent of the advantage's sign
(`predict._drift`'s model of the clip fractions), the window mean of the share of tokens the dual clip silences is

    s_c(delta, T) = (1/T) sum_{j=1}^{T-1} P(log r_j > log c) / 2 = (1/T) sum_j erfc(log c / (j delta sqrt 2)) / 4,   (1)

increasing in delta from 0 to (T - 1) / (4 T); zero on-policy (T = 1: the ratio is 1 at every step). The drift at
which it reaches a share s, delta_c(s), solves (1) (bisection in log delta).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erfc


def dual_clip_share(delta: float, refresh_interval: int, cap: float) -> float:
    """s_c(delta, T), equation (1)."""
    if delta <= 0 or refresh_interval < 2:
        return 0.0
    j = np.arange(1, refresh_interval) * delta
    return float((erfc(math.log(cap) / (j * math.sqrt(2.0))) / 4).sum() / refresh_interval)


def drift_for_share(share: float, refresh_interval: int, cap: float) -> float | None:
    """delta_c(s): the per-step drift at which equation (1) reaches `share`; None where it never does."""
    if refresh_interval < 2 or not 0.0 < share < (refresh_interval - 1) / (4 * refresh_interval):
        return None
    lo, hi = 1e-8, 1e4
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if dual_clip_share(mid, refresh_interval, cap) < share else (lo, mid)
    return math.sqrt(lo * hi)
