"""Reward hacking: the training reward rising for the wrong reason, read from the other logged series (the eval
reward leaving the training reward, completions growing or running into the cap beside a significant rise, one reward
component carrying the gain while another falls by a share of it).

`hacking` returns (verdict or None, the reason it could not run or None), as the checks of `_signals` do.
"""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics._keys import MAX_LENGTH_KEYS
from gspo_dynamics.diagnose._finding import NOTE
from gspo_dynamics.diagnose._change_tests import shift_rise_test
from gspo_dynamics.diagnose._findings import DOMINANT_SHARE, LENGTH_SHRINK, Z_NOT_RISING, Z_RISE
from gspo_dynamics.diagnose._length_growth import MIN_SERIES_POINTS, TRUNCATION_RISE, length_growth
from gspo_dynamics.diagnose._trend_stats import STILL_RISING_FRACTION, Z_TREND, change
from gspo_dynamics.diagnose._verdict import Verdict, confidence, evidence
from gspo_dynamics.fit import row_scatter

LENGTH_BLOWUP_RATIO = LENGTH_SHRINK  # mean completion length doubled from early to late (the mirror of halved)
# one reward component carries DOMINANT_SHARE of the total gain ...
# ... while another falls: a reward component (or function) fell where its Welch z late - early <= -3, a change as real
# as the trend's (`_trend_stats.Z_TREND`, p ~ 0.001 by chance; at 2 one component in ~40 "falls" by chance) and the
# divergence finding's "fell" (`_findings.Z_RISE`): both hacking rules (`hacking`, `_diverging_functions`) read it
COMPONENT_FALL_Z = Z_TREND
# ... and by as much as matters: a component's fall (early - late) of at least this share of the reward's rise (late -
# early) counts. A smaller one moves the total by less than the share of the rise the trend calls negligible
# (`_trend_stats.STILL_RISING_FRACTION`): a significant but negligible fall (an overlong penalty -0.003 -> -0.009
# beside a reward up 0.3) is no task given up. Components are compared as logged (TRL's reward_weights of 1).
FALL_SHARE = STILL_RISING_FRACTION
EVAL_DROP_FRACTION = 0.3  # eval reward below its peak by 30% of its rise to the peak (train rising): divergence


def eval_divergence(log, trend: dict) -> dict | None:
    """Evidence that the eval reward left the train reward: while the train reward rises (Welch z >
    Z_TREND), the eval reward's late mean (last quarter, w points) fell below its peak, the largest
    running mean of w points before the late window, by a significant amount:

        drop = peak - late > Z_TREND sigma sqrt(2 / w),   sigma^2 = Var(e_{i+1} - e_i) / 2,

    reported as drop / (peak - first eval). A rise then fall counts as much as a steady fall. None when
    there is no such divergence."""
    if not trend or not trend["z"] > Z_TREND:
        return None
    es, evals = log.valid("eval/reward")
    w = max(2, int(round(0.25 * evals.size)))
    if evals.size < 2 * w + 1:
        return None
    running = np.convolve(evals[:-w], np.ones(w) / w, mode="valid")  # (n - 2w + 1,) means of w points
    k = int(np.argmax(running))
    peak, late = float(running[k]), float(evals[-w:].mean())
    sigma = row_scatter(evals)  # step-to-step scatter of one eval
    drop = peak - late
    if not drop > Z_TREND * sigma * math.sqrt(2.0 / w):
        return None
    rise = max(peak - float(evals[0]), 1e-12)  # a fall from the first eval on: the ratio is huge, as it should be
    return evidence("eval reward drop from its peak / its rise to the peak, while the train reward rises",
                    min(drop / rise, 1e6), (es[0], es[-1]), threshold=EVAL_DROP_FRACTION, side=">", peak=peak,
                    peak_step=int(es[k + w - 1]), late=late, train_z=trend["z"], eval_points=int(evals.size))


def fall_share(early: float, late: float, trend: dict) -> float:
    """A component's fall (early - late) over the reward's rise (late - early, `trend`): inf where the reward did not
    rise (any fall then matters as much as the rise it is set against), NaN without a trend."""
    if not trend:
        return math.nan
    return (early - late) / trend["diff"] if trend["diff"] > 0 else math.inf


def _diverging_functions(found, ev: list, confs: list, advice: list, trend: dict | None = None) -> None:
    """One reward function rising while another stays below its ceiling (`_findings.reward_function_divergence`:
    a format reward learned without the task) as hacking evidence, confidence

        min(L(z_up - Z_RISE), L((Z_NOT_RISING - z_lag) / 0.5), L(-z_lag - COMPONENT_FALL_Z),
            L((fall / rise - FALL_SHARE) / 0.05)),

    the third term the evidence that the lagging function fell (0.5 at a fall of COMPONENT_FALL_Z standard errors,
    where the finding's own words turn from "did not rise" to "fell"), the last that the fall matters to the reward
    (`fall_share`: 0.5 at FALL_SHARE of the reward's rise; without a `trend` it is not judged): an exploit is one
    function carrying the gain while another falls; one that merely did not rise, or fell by a negligible amount,
    is a task not learned (the finding says so), not an exploit. A finding whose gain several functions share (a
    note: no one function carries it) is no exploit's evidence either."""
    if found is None or found.severity == NOTE:
        return
    up, lag = found.evidence
    ev.append(evidence(up["signal"] + ", rising", up["value"], up["steps"], threshold=Z_RISE, side=">=",
                       early=up["early"], late=up["late"]))
    ev.append(evidence(lag["signal"] + ", lagging", lag["value"], lag["steps"], threshold=Z_NOT_RISING, side="<",
                       early=lag["early"], late=lag["late"]))
    conf = min(confidence(up["value"] - Z_RISE, 1.0), confidence(Z_NOT_RISING - lag["value"], 0.5),
               confidence(-lag["value"] - COMPONENT_FALL_Z, 1.0))
    share = fall_share(lag["early"], lag["late"], trend)
    if not math.isnan(share):
        name = lag["signal"].split(" change", 1)[0]
        ev.append(evidence(f"{name} fall / the reward's rise", share, lag["steps"], threshold=FALL_SHARE, side=">=",
                           caveat=not share >= FALL_SHARE, fall=lag["early"] - lag["late"],
                           reward_rise=trend["diff"]))
        conf = min(conf, confidence(share - FALL_SHARE, 0.05))
    confs.append(conf)
    advice += found.advice


def _dominant_component(log, components: list[str], trend: dict, ev: list, confs: list, advice: list) -> None:
    """One reward component carrying more than DOMINANT_SHARE of the components' gains while another falls (z <=
    -COMPONENT_FALL_Z, by FALL_SHARE of the reward's rise or more): its evidence, confidence and advice appended."""
    gains = {n: change(log.steps, log[n]) for n in components}
    gains = {n: g for n, g in gains.items() if g}
    pos = sum(max(g["diff"], 0.0) for g in gains.values())
    if pos <= 0:
        return
    top = max(gains, key=lambda n: gains[n]["diff"])
    share = gains[top]["diff"] / pos
    fallers = [n for n, g in gains.items() if n != top and g["z"] <= -COMPONENT_FALL_Z
               and not fall_share(g["early"], g["late"], trend) < FALL_SHARE]
    if share > DOMINANT_SHARE and fallers:
        ev.append(evidence("share of the reward gain from one component", share, gains[top]["steps"],
                           threshold=DOMINANT_SHARE, side=">", component=top, falling=fallers))
        confs.append(min(confidence(share - DOMINANT_SHARE, 0.05),
                         confidence(-min(gains[n]["z"] for n in fallers) - COMPONENT_FALL_Z, 1.0)))
        advice.append(f"{top.split('/', 1)[1]} carries the gain while {', '.join(f.split('/', 1)[1] for f in fallers)} "
                      "falls: re-weight the reward components or cap the dominating one")


def hacking(log, trend: dict, notes: list[str], divergence=None) -> tuple[Verdict | None, str | None]:
    """Reward-hacking evidence: the eval reward leaving the train reward, length or truncation growing while the
    reward rises significantly (Welch z >= Z_TREND; otherwise a note), one component carrying the gain while another
    falls (z <= -COMPONENT_FALL_Z, by FALL_SHARE of the reward's rise or more), and `divergence` (the log's
    `reward_function_divergence` finding, or None)."""
    steps = log.steps
    ev, confs, advice, missing = [], [], [], []
    if "eval/reward" in log and log.n_points("eval/reward") >= 4:
        item = eval_divergence(log, trend)
        if item is not None:
            ev.append(item)
            confs.append(confidence(item["value"] - EVAL_DROP_FRACTION, 0.1))
            advice.append("train reward rises while the eval reward falls from its peak: the policy exploits the "
                          "training reward; check samples, tighten the reward, raise the KL weight beta or stop at "
                          f"the eval peak (step {item['peak_step']})")
    else:
        missing.append("no eval reward")
    # An exploit is the training reward rising for the wrong reason: completions growing or running into the length
    # cap are its evidence only beside a significant rise (Welch z >= Z_TREND). While the reward falls significantly
    # they are a symptom of the collapse (instability); while it does not move, nothing was exploited: the loss's
    # length bias (a per-sequence 1/|o| rewards long wrong answers less negatively: Dr. GRPO) or a drift. Both: notes.
    falling = bool(trend) and trend["z"] < -Z_TREND
    rose = bool(trend) and trend["z"] >= Z_TREND
    collapse_symptoms, unpaid = [], []
    if "mean_length" in log and log.n_points("mean_length") >= MIN_SERIES_POINTS:
        lc = change(steps, log["mean_length"])
        ratio = lc["late"] / lc["early"] if lc["early"] > 0 else math.nan
        if ratio > LENGTH_BLOWUP_RATIO and not rose:
            (collapse_symptoms if falling else unpaid).append(f"the mean completion length grew {ratio:.1f}x")
        elif ratio > LENGTH_BLOWUP_RATIO:
            ev.append(evidence("mean completion length late / early", ratio, lc["steps"], threshold=LENGTH_BLOWUP_RATIO,
                               side=">", welch_z=trend["z"]))
            confs.append(confidence(ratio - LENGTH_BLOWUP_RATIO, 0.5))
            advice.append("completions are growing: add a length penalty or an overlong penalty (DAPO), "
                          "or use a token-level normalisation that does not favour long answers (Dr. GRPO)")
    else:
        missing.append("no completion length")
    if "truncation_rate" in log and log.n_points("truncation_rate") >= MIN_SERIES_POINTS:
        tc = change(steps, log["truncation_rate"])
        if tc["late"] - tc["early"] > TRUNCATION_RISE and not rose:
            (collapse_symptoms if falling else unpaid).append(
                f"the truncation rate rose {tc['early']:.0%} -> {tc['late']:.0%}")
        elif tc["late"] - tc["early"] > TRUNCATION_RISE:
            ev.append(evidence("truncation rate rise", tc["late"] - tc["early"], tc["steps"], threshold=TRUNCATION_RISE, side=">",
                               late=tc["late"], welch_z=trend["z"]))
            confs.append(confidence(tc["late"] - tc["early"] - TRUNCATION_RISE, 0.1))
            advice.append(f"the share of completions cut at the maximum length rose {tc['early']:.0%} -> {tc['late']:.0%} "
                          f"while the reward rose: check that truncated answers earn no reward, add an overlong "
                          f"penalty (DAPO), or raise the cap ({MAX_LENGTH_KEYS})")
    components = [n for n in log.names if n.startswith("reward/") and log.n_points(n) >= 6]
    if len(components) >= 2:
        _dominant_component(log, components, trend, ev, confs, advice)
        _diverging_functions(divergence, ev, confs, advice, trend)
    else:
        missing.append("fewer than two reward components read (a reward function's own column, rewards/<fn>)")
    if collapse_symptoms:
        notes.append(" and ".join(collapse_symptoms) + " while the reward fell: a symptom of the collapse, "
                     "not reward hacking (hacking raises the training reward)")
    # where the finding says it, not again; nor where a rise the windows miss moved the reward (`shift_rise_test`)
    if unpaid and length_growth(log) is None and shift_rise_test(*log.valid("reward")) is None:
        notes.append(" and ".join(unpaid) + f" while the reward did not rise significantly (Welch z {trend['z']:.2f} < "
                     f"{Z_TREND:g}): not reward hacking, which raises the training reward; longer answers that earn "
                     "nothing more are the loss's length bias or a drift: a token-level normalisation that does not "
                     "favour long answers (Dr. GRPO) or an overlong penalty (DAPO) stops it")
    reason = None
    if len(missing) == 3:
        reason = "reward hacking: " + ", ".join(missing) + " in the log"
    if not confs:
        return None, reason
    return Verdict("reward_hacking", max(confs), ev, advice), None
