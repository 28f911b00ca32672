"""The one line `gspo-dynamics train` prints about a finished run: how its main series moved.

One step's reward is the mean of N G sampled rewards (32 in the quick start), so the last step alone is a noisy
draw; the line gives each series' mean over the run's first and last WINDOW steps instead, the rise a user
compares runs by:  m_first = mean(x_1..x_w),  m_last = mean(x_{n-w+1}..x_n),  w = min(WINDOW, n // 2).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

WINDOW = 10  # steps averaged at each end of the run
SERIES = (("reward", "reward"), ("entropy", "entropy"), ("frac_reward_zero_std", "zero-std groups"))


def _mean(values: list[Any]) -> float | None:
    """The mean of the finite numbers among `values` (None where there are none)."""
    finite = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else None


def moved(rows: Sequence[dict[str, Any]]) -> str:
    """'reward 0.27 -> 0.88, entropy 0.91 -> 0.059 (means of the first and last 10 steps)', or '' for a run
    of fewer than 2 rows."""
    w = min(WINDOW, len(rows) // 2)
    if w < 1:
        return ""
    parts = []
    for key, name in SERIES:
        first, last = _mean([r.get(key) for r in rows[:w]]), _mean([r.get(key) for r in rows[-w:]])
        if first is not None and last is not None:
            parts.append(f"{name} {first:.2g} -> {last:.2g}")
    steps = "step" if w == 1 else f"{w} steps"
    return f"{', '.join(parts)} (means of the first and last {steps})" if parts else ""
