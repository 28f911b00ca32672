"""Did a reward curve lose reward it had? The largest fall of its block means below their running best.

A pilot that collapses (the reward drops to the floor within a few updates and stays there) is fitted by
the closed forms as a curve settling at a "plateau" at the reward's bound; the fit cannot tell that plateau
from a solved task's. The curve's own history can: with block means m_k of B consecutive points and their
running best M_k = max_{i <= k} m_i,

    fall = max_k (M_k - m_k),                                                          (1)

the reward lost after it was had (the measure paper_repro/pilot_forecast.py applies to each seed of its
grid). The per-point scatter s comes from the first differences, which a trend barely enters and a sudden
drop enters once: s = MAD(r_{i+1} - r_i) / (0.6745 sqrt 2) (the median absolute deviation of a normal
variable is 0.6745 of its std; a difference of two points has std s sqrt 2), or std(diff) / sqrt 2 where
the median deviation is 0 (a reward stuck on one value). One block mean has standard error s / sqrt(B),
a difference of two s sqrt(2 / B), and the fall is real when

    fall > Z_FALL s sqrt(2 / B)   and   [fall > FALL_SHARE (hi - lo)
                                         or (fall > COLLAPSE_SHARE (M - lo) and M - lo >= FALL_SHARE (hi - lo) / 2)]  (2)

for a reward in [lo, hi] and M the running best the fall is from (the bracket only where the range is
known: a significant but tiny fall is noise in the policy, not a collapse; its second clause, a loss of
most of a low best, is a curve that starts at a tenth of the range and falls to the floor, which a fall
of a tenth cannot pass; paper_repro/pilot_forecast.py's measure has the same clause, version 8). The fall
is the largest of many differences of block means and s is a median-based estimate from few points, so a
one-pair 3-sigma rule would call a fall on 7-12% of flat noisy curves; Z_FALL = 5 calls it on 0.4% of 24-point ones and 0.2% of 48-point ones (20 000
normal curves each, 2026-11-25; tests/fit/test_fall.py checks the bound), while a pilot that collapsed
in its first block (0.38, 0.5, then ~0) reads z = 10.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

BLOCK = 4  # points per block mean: a 24-step pilot has 6 blocks, enough to see a rise, then a fall
Z_FALL = 5.0  # standard errors of a difference of two block means (the largest of many pairs: see (2))
MAD_TO_STD = 0.6745  # the median absolute deviation of a normal variable in units of its std
FALL_SHARE = 0.1  # of the reward's range: as paper_repro/pilot_forecast.py's DRAWDOWN_MARGIN on [0, 1]
COLLAPSE_SHARE = 0.8  # of a running best at least FALL_SHARE / 2 of the range above its floor: a loss of most of it


@dataclass(frozen=True)
class Fall:
    """The largest fall (1) of a curve's block means and where it was measured (steps of the log)."""

    fall: float  # M_k - m_k at its largest, in reward units (0: never below its best)
    best: float  # the running best at that block
    best_steps: tuple[int, int]  # first and last step of the block that set it
    after: float  # the block mean that fell furthest below it
    after_steps: tuple[int, int]
    z: float  # fall / (s sqrt(2 / BLOCK)), s the per-point scatter from the first differences
    lost: bool  # the fall is real by (2)

    def to_json(self) -> dict:
        """The fields; where the curve never fell below its running best (fall 0) no two blocks are compared, so
        best, after and their steps are null (the first block against itself would read as a comparison)."""
        if self.fall <= 0:
            return {"fall": 0.0, "best": None, "best_steps": None, "after": None, "after_steps": None, "z": 0.0,
                    "lost": False}
        return {"fall": self.fall, "best": self.best, "best_steps": list(self.best_steps), "after": self.after,
                "after_steps": list(self.after_steps), "z": self.z, "lost": self.lost}


def reward_fall(steps: np.ndarray, reward: np.ndarray, reward_range=None) -> Fall | None:
    """The fall (1) of `reward` over blocks of BLOCK points and whether it is real (2) for a reward in
    `reward_range` (lo, hi), or None (not known). None with fewer than two blocks."""
    steps, reward = np.asarray(steps), np.asarray(reward, dtype=float)
    n = reward.size // BLOCK * BLOCK
    if n < 2 * BLOCK:
        return None
    blocks = reward[:n].reshape(-1, BLOCK)  # (n_blocks, BLOCK)
    means = blocks.mean(axis=1)
    diff = np.diff(reward)
    scatter = float(np.median(np.abs(diff - np.median(diff)))) / (MAD_TO_STD * math.sqrt(2.0))
    if scatter == 0.0:  # a reward stuck on one value: the median says nothing, the differences' spread does
        scatter = float(diff.std()) / math.sqrt(2.0)
    best = np.maximum.accumulate(means)
    k = int(np.argmax(best - means))
    j = int(np.flatnonzero(means[: k + 1] == best[k])[0])  # the block that set the best
    fall = float(best[k] - means[k])
    se = scatter * math.sqrt(2.0 / BLOCK)
    z = fall / se if se > 0 else (math.inf if fall > 0 else 0.0)
    if reward_range is None:
        big = True
    else:
        lo, width, top = reward_range[0], reward_range[1] - reward_range[0], float(best[k]) - reward_range[0]
        big = fall > FALL_SHARE * width or (fall > COLLAPSE_SHARE * top and top >= FALL_SHARE * width / 2)
    span = [(int(steps[i * BLOCK]), int(steps[i * BLOCK + BLOCK - 1])) for i in (j, k)]
    return Fall(fall=fall, best=float(best[k]), best_steps=span[0], after=float(means[k]), after_steps=span[1],
                z=float(z), lost=bool(z > Z_FALL and big))
