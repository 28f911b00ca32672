"""The trend verdicts' advice on noise: more samples per step where that resolves the change, else an eval set."""

from __future__ import annotations

import math

from gspo_dynamics._keys import COMPLETIONS_KEYS, EVAL_KEYS, GROUP_SIZE_KEYS, PROMPTS_KEYS

# the smallest change of a run that learns, in per-sample reward stds: Cohen's (1988) "small" standardised
# effect d = (mean_late - mean_early) / sd(one sample) = 0.2, the conventional smallest effect a power
# calculation is set to detect (0.1 of a 50% success rate). Fixed by that convention, not tuned on any
# corpus: the leave-one-family-out protocol once tuned it, and two families that cannot tell 0.1 from 0.3
# then handed the third the edge of the grid (paper_repro/RESULTS.md, runs 510000-540000)
MEANINGFUL_CHANGE = 0.2
R2_TARGET = 0.8  # advice: the G that would bring R^2 up to this (trend variance 4x the noise variance)


def r2_factor(r2: float) -> float:
    """The factor the noise std must fall by for R^2 to reach R2_TARGET: the noise variance must fall by
    (1 - R^2)/R^2 x R2_TARGET/(1 - R2_TARGET), its std by the square root."""
    r2 = max(r2, 1e-3)
    return math.sqrt((1.0 - r2) / r2 * R2_TARGET / (1.0 - R2_TARGET))


MAX_SAMPLE_FACTOR = 4.0  # the most G or the prompts per step are advised to grow (a change a user makes)
# a stall's evidence is the reward alone: the checks that need no new run come before the lr change they would void
STALLED_ADVICE = ["no significant change of the reward, and the data favour none over a meaningful one: check that "
                  "the groups carry signal (rewards differ within a group) and that the KL weight does not pin the policy "
                  "to the reference; where both hold, raise the learning rate (2-10x)"]


# a stall while the policy moves (`_context.drift_without_progress`): the updates are not short of size
DRIFT_STALLED_ADVICE = ["the policy moves (its KL to the reference or its entropy changed significantly) while the "
                        "reward does not follow: the updates are not short of size, so a larger learning rate is not "
                        "the lever; check that the groups carry signal (rewards differ within a group) and that the "
                        "reward can still rise (its headroom below the ceiling); a smaller learning rate or a larger "
                        "KL weight keeps a drift that buys nothing in check"]


def noise_advice(group_size: int | None, std_factor: float) -> list[str]:
    """Raise G, or the prompts per step, where that resolves the change: the sampling and stationary fluctuation
    variances scale as 1/G (reduced-order model), so the detectable change shrinks by sqrt(f) when G (or the
    prompts per step) grows f-fold, and f = std_factor^2 brings it to MEANINGFUL_CHANGE. Advised only up to
    MAX_SAMPLE_FACTOR (a change a user makes); beyond it, an eval set of fixed prompts judges the run instead."""
    factor = std_factor * std_factor if std_factor < 1e150 else math.inf  # (huge rewards: no overflow)
    if not math.isfinite(factor):
        return ["check the reward's scale: the change sought is below the noise by many orders of magnitude"]
    if factor > MAX_SAMPLE_FACTOR:
        return [f"judge this run on an eval set of fixed prompts ({EVAL_KEYS}): the training reward's noise would "
                f"need {factor:.0f}x the samples per step to show a change of {MEANINGFUL_CHANGE:g} reward stds"]
    if group_size:
        return [f"raise G from {group_size} to {math.ceil(group_size * factor)} ({GROUP_SIZE_KEYS}), or the prompts per "
                f"step {factor:.1f}x ({PROMPTS_KEYS}): the noise variance scales as 1/G"]
    return [f"raise the completions per step {factor:.1f}x ({COMPLETIONS_KEYS}): the noise variance scales as 1/(N G)"]
