"""The finding `length_growth`: completions growing, or running into the length cap, while the reward stays where it
was. Beside a significant rise `_hacking` reads the same signs as an exploit's evidence, beside a significant fall
`_hacking` says they are a symptom of the collapse; between the two no verdict names them, and a plain answer of
"stalled or noise" would hide a run that burns ever more tokens (audit s39 D3: 139 -> 2572 tokens, 0% -> 25% cut at
the cap, said only under --explain)."""

from __future__ import annotations

import numpy as np

from gspo_dynamics.diagnose._change_tests import shift_rise_test
from gspo_dynamics.diagnose._finding import Finding
from gspo_dynamics.diagnose._trend_stats import MIN_WINDOW, Z_TREND, change
from gspo_dynamics.diagnose._verdict import evidence
from gspo_dynamics.fit import LENGTH_SHRINK, late_truncation

TRUNCATION_RISE = 0.2  # the truncation rate up by 20 points from the early window to the late one
START_FRACTION = 0.1  # the run's first tenth: where a growth done early is read from (`_grown`; stated)
MIN_SERIES_POINTS = 6  # fewer points of a length or truncation series give no early and late windows to compare


def length_growth(log, hparams=None) -> Finding | None:
    """A warning where the reward neither rose nor fell significantly (|Welch z| < Z_TREND, `_trend_stats.change`,
    and no level shift up, `_change_tests.shift_rise_test`) while the mean completion length grew past LENGTH_SHRINK
    times its early value, significantly (z >= Z_TREND: the mirror of `length_collapse`), or the share of completions
    cut at the cap rose by more than TRUNCATION_RISE: tokens spent on nothing the reward shows, the loss's length bias
    (a per-sequence 1/|o| weights a long wrong answer's penalty less: Dr. GRPO) or a drift, whatever the lr."""
    if log.n_points("reward") < 2 * MIN_WINDOW:
        return None
    reward = change(*log.valid("reward"))
    if not reward or abs(reward["z"]) >= Z_TREND or shift_rise_test(*log.valid("reward")) is not None:
        return None  # a rise the windows miss (a level shift, `_change_tests`) moved the reward too
    grew, ev = [], []
    if log.n_points("mean_length") >= MIN_SERIES_POINTS:
        c = _grown(*log.valid("mean_length"))
        if c.get("from_start") and abs(change(*log.valid("reward"), start=START_FRACTION)["z"]) >= Z_TREND:
            c = {}  # read from the first tenth, the reward's change is read from there too: it moved
        if c:
            grew.append(f"the completions grew from {_tokens(c['early'])} to {_tokens(c['late'])} tokens on average "
                        f"({c['late'] / c['early']:.1f}x, steps {c['steps'][0]}-{c['steps'][1]})")
            ev.append(evidence("mean completion length late / early", c["late"] / c["early"], c["steps"],
                               threshold=LENGTH_SHRINK, side=">", early=c["early"], late=c["late"], z=c["z"]))
    if log.n_points("truncation_rate") >= MIN_SERIES_POINTS and not (late_truncation(log) or {}).get("cut"):
        t = change(*log.valid("truncation_rate"))  # (most cut at the cap: the `truncation` finding says it)
        if t and t["late"] - t["early"] > TRUNCATION_RISE:
            grew.append(f"the share cut at the length cap rose {t['early']:.0%} -> {t['late']:.0%}")
            ev.append(evidence("truncation rate rise", t["late"] - t["early"], t["steps"], threshold=TRUNCATION_RISE,
                               side=">", early=t["early"], late=t["late"]))
    if not grew:
        return None
    summary = (" and ".join(grew) + f" while the reward did not move significantly (Welch z {reward['z']:.2f}): "
               "tokens spent on nothing the reward shows")
    advice = ["read the late completions (repetition, padding, unfinished reasoning); a token-level normalisation that "
              "does not favour long answers (TRL loss_type: dr_grpo; verl actor_rollout_ref.actor.loss_agg_mode: "
              "token-mean) or an overlong penalty (DAPO; TRL trl.rewards.get_soft_overlong_punishment among the "
              "reward_funcs) stops the growth"]
    return Finding("length_growth", "warning", summary, ev, advice)


def _grown(steps: np.ndarray, lengths: np.ndarray) -> dict:
    """`change` of the mean length where its late window's mean is above LENGTH_SHRINK times the early window's, by
    Welch z >= Z_TREND; else the same with the run's first tenth as the early window (START_FRACTION, "from_start"
    set): a growth done inside the first quarter puts most of itself into the early window's mean (2.5x reached a
    fifth of the way in reads 1.6x quarter to quarter). {} where neither holds."""
    for start in (None, START_FRACTION):
        c = change(steps, lengths, start)
        if c and c["early"] > 0 and c["late"] > LENGTH_SHRINK * c["early"] and c["z"] >= Z_TREND:
            return dict(c, from_start=start is not None)
    return {}


def _tokens(x: float) -> str:
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"
