"""Zero-std groups of a [0, 1] reward read by which side of 1/2 the success rate stands (`_ranking` applies them): a
group of G is all-correct with probability p^G and all-wrong with (1 - p)^G, so at p > 1/2 the zero-std groups are
mostly solved prompts and at p < 1/2 mostly failed ones, for every G."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from gspo_dynamics.diagnose._signals import success_rate
from gspo_dynamics.diagnose._trend_stats import MIN_WINDOW, Z_TREND, change
from gspo_dynamics.diagnose._verdict import Verdict
from gspo_dynamics.logs import RunLog


def solved_to_failed(log: RunLog) -> tuple[float, float] | None:
    """(early, late) success rate where a [0, 1] reward went from above 1/2 to below it, else None. A group of G is
    all-correct with probability p^G and all-wrong with (1 - p)^G, so at p > 1/2 the zero-std groups are mostly
    all-correct and at p < 1/2 mostly all-wrong, for every G: across the flip they are different groups.

    The early rate is the larger of the early window's mean and the first MIN_WINDOW rows' (as `_ranking._early`
    reads the zero-std fraction at the start): a fall inside the first quarter of the rows pulls the window's mean
    down with the rows after it (0.90/0.75/0.95, then 0.17 and zeros: a window mean of 0.28), while the first rows
    are the starting policy's."""
    p = success_rate(log)
    if p is None:
        return None
    ch = change(log.steps, p)
    finite = p[np.isfinite(p)]
    early = max(ch.get("early", math.nan), float(np.mean(finite[:MIN_WINDOW])) if finite.size else math.nan)
    late = ch.get("late", math.nan)
    return (early, late) if early > 0.5 > late else None


def solved_at_ceiling(verdicts: list[Verdict], scale, log: RunLog, silent: Verdict | None = None) -> None:
    """Zero-std groups on a [0, 1] score at its ceiling (late mean within CEILING_GAP of it, `RewardScale.at_ceiling`)
    that has not fallen (Welch z > -Z_TREND) are prompts solved in every sample (p^G > (1-p)^G at p > 1/2): a solved
    task, as DESIGN.md reads a collapse at the ceiling, whether they appeared during the run (`_ranking._solved_task`
    ranks them below the trend) or were there from the start. The degeneracy is measured and stays, but its first
    advice is what a solved task needs (harder prompts), not a larger G, which only finds the rare failures. Where no
    group ever carried a signal (`silent`), that verdict's own advice (which reward functions never paid) stands."""
    j = next((i for i, v in enumerate(verdicts) if v.mode == "advantage_degeneracy"), None)
    if (j is None or not scale.bounded or scale.ceiling is None or not scale.at_ceiling
            or silent is not None or not change(log.steps, log["reward"]).get("z", math.nan) > -Z_TREND):
        return
    deg = verdicts[j]
    solved = (f"the reward is at its ceiling ({scale.late:.2f} of {scale.ceiling:g}): the zero-std groups are prompts "
              "answered right in every sample, a solved task; harder prompts (or a curriculum) give the run signal "
              "again, a larger G only finds the rare failures")
    rest = [a for a in deg.advice if not a.startswith("the prompts have become too easy")]
    verdicts[j] = replace(deg, advice=[solved] + rest)
