"""A [0, 1] score's solved task (`_ranking` applies these): zero-std groups read by which side of 1/2 the success rate
stands (a group of G is all-correct with probability p^G and all-wrong with (1 - p)^G, so at p > 1/2 the zero-std
groups are mostly solved prompts and at p < 1/2 mostly failed ones, for every G), and a flat score at its ceiling
read as solved, not stalled (`stall_at_ceiling`)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from gspo_dynamics.diagnose._context import CEILING_GAP
from gspo_dynamics.diagnose._settled import UNSURE_CONFIDENCE
from gspo_dynamics.diagnose._signals import success_rate
from gspo_dynamics.diagnose._trend import FLAT_SURE
from gspo_dynamics.diagnose._trend_stats import MIN_WINDOW, Z_TREND, change
from gspo_dynamics.diagnose._verdict import CAUSE_MODES, REPORT_CONFIDENCE, Verdict
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


def stall_at_ceiling(verdicts: list[Verdict], scale, log: RunLog) -> None:
    """A flat [0, 1] score is a stall only as far as it stopped below its ceiling (a reward stuck where it could still
    rise); at the ceiling it is a solved task. The evidence that the reward is below it grows with the distance, on
    the scale of the gap the ceiling is known to (as for a concentration, `_ranking._concentration_below_ceiling`):

        conf(stalled) <= b,   b = L((ceiling - late - CEILING_GAP) / CEILING_GAP)     (`RewardScale.below_ceiling`)

    b >= FLAT_SURE: stalled, at most b sure; REPORT_CONFIDENCE <= b < FLAT_SURE: unsure between a stall and
    saturation, at UNSURE_CONFIDENCE, saying what tells; b < REPORT_CONFIDENCE (the late mean within CEILING_GAP of
    the ceiling): healthy saturation at 1 - b, with nothing to change (a flat 0.97 of 1 gains nothing from a larger
    lr). A reward that fell (Welch z <= -Z_TREND) is not flat, and a cause at REPORT_CONFIDENCE keeps the stall."""
    t = next(i for i, v in enumerate(verdicts) if v.mode not in CAUSE_MODES)
    trend = verdicts[t]
    if (trend.mode != "stalled" or not scale.bounded or scale.ceiling is None
            or not change(log.steps, log["reward"]).get("z", math.nan) > -Z_TREND):
        return
    b, gap_size = scale.below_ceiling, scale.ceiling - scale.late
    gap = {"signal": "reward below its ceiling (ceiling - late mean)", "value": gap_size, "steps": None,
           "threshold": CEILING_GAP, "side": ">=" if b >= REPORT_CONFIDENCE else "<",
           "holds": True, "ceiling": scale.ceiling, "late_reward": scale.late}
    if b >= FLAT_SURE:
        verdicts[t] = replace(trend, confidence=min(trend.confidence, b), evidence=trend.evidence + [gap])
        return
    if b >= REPORT_CONFIDENCE:
        tell = (f"whether the task can score above {scale.late:.2f} tells (partial credit can cap a score below "
                f"{scale.ceiling:g}: the best completions' reward, or an eval set's): below a reachable ceiling the "
                "reward stalled, at it the task is solved")
        verdicts[t] = Verdict("stalled", min(trend.confidence, UNSURE_CONFIDENCE), trend.evidence + [gap], [tell],
                              unsure=("stalled", "healthy_saturation"))
        return
    kept = [dict(e, caveat=True) if e.get("holds") is False else e for e in trend.evidence]
    verdicts[t] = Verdict("healthy_saturation", 1.0 - b, kept + [gap],
                          [f"the reward is at its ceiling ({scale.late:.2f} of {scale.ceiling:g}): a solved task; "
                           "harder prompts (or a curriculum) to go further, not a larger learning rate"])
