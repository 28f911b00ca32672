"""Ranking what follows from another mode below it (the consequences of a cause).

A verdict explained by another is kept, with its evidence, but ranked below its cause
(DERIVED_DISCOUNT x the cause's confidence): zero-std groups left by a collapse, by an exploit or by a
task being solved, a rise made by the few groups with signal, an entropy collapse caused by an exploit
or by a solved task, a stalled or noisy mean explained by a cause. Each rule is its own function;
`rank_consequences` applies them in order.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from gspo_dynamics.diagnose import _context  # CEILING_GAP read at call time (the LOFO protocol sets it)
from gspo_dynamics.diagnose._context import reward_spread
from gspo_dynamics.diagnose._concentrated_first import collapse_before_fall, concentrated_first
from gspo_dynamics.diagnose._signals import DEGENERATE_FRACTION, zero_std_rows
from gspo_dynamics.diagnose._solved_groups import solved_at_ceiling, solved_to_failed, stall_at_ceiling
from gspo_dynamics.diagnose._trend_stats import MIN_WINDOW, Z_TREND, change, late_climb
from gspo_dynamics.diagnose._verdict import CAUSE_MODES, FALL_ITEMS, REPORT_CONFIDENCE, Verdict
from gspo_dynamics.logs import RunLog

DERIVED_DISCOUNT = 0.9  # a verdict explained by another is ranked this fraction of the other's confidence
EXPLAINS = 0.7  # a cause this confident explains a stalled or noisy reward (`_explained_symptom`)
DEGENERACY_CAUSES = ("policy_concentration", "dynamical_instability")  # collapses that empty the groups
DIVERGENCE_SIGNALS = FALL_ITEMS  # the instability's falls (`_instability`)
FALL_HIDES = ("still_rising", "healthy_saturation")  # trend readings a collapse ranks below (`_fall_not_rise`)
TRAIN_LONGER = "train longer and diagnose again"  # how the unsure rise's advice (`_settled.sure_or_unsure`) begins
CYCLE_SIGNALS = ("periodic component", "alternation of consecutive rows", "damping ratio of the fit")  # its oscillations


def rank_consequences(verdicts: list[Verdict], scale, log: RunLog, silent: Verdict | None, notes: list[str]) -> None:
    """Rank what follows from another mode below it (each rule in its own function)."""
    _fall_settles_rise(verdicts, log)
    _solved_task(verdicts, scale, log, notes)
    solved_at_ceiling(verdicts, scale, log, silent)
    stall_at_ceiling(verdicts, scale, log)
    _concentration_while_rising(verdicts, log, notes)
    _degeneracy_while_rising(verdicts, log, notes)
    _hard_task(verdicts, scale, log)
    _attribute_to_divergence(verdicts, log, scale)
    _cycle_not_settled(verdicts)
    _fall_not_rise(verdicts)
    _attribute_degeneracy(verdicts, log)
    _attribute_to_hacking(verdicts, log)
    _attribute_to_silence(verdicts, silent)
    _explained_symptom(verdicts)


def _fall_settles_rise(verdicts: list[Verdict], log: RunLog) -> None:
    """A significant rise whose late half falls (`_trend_stats.late_climb`'s "falling") is read as unsure between
    still rising and saturated where nothing else reads the fall (a longer run tells whether it stops). Where the
    instability reports it (at REPORT_CONFIDENCE, resting on a fall: `DIVERGENCE_SIGNALS`), the fall is the reading:
    the rise is settled, neither going on nor at a plateau. The trend verdict is then sure, at its own (low)
    confidence, its evidence kept and its advice to train longer dropped; run first, so that no rule below reads the
    falling reward as one that may still rise (`_still_rising`: an entropy collapse or zero-std groups excused while
    the reward climbs)."""
    t = next(i for i, v in enumerate(verdicts) if v.mode not in CAUSE_MODES)
    trend = verdicts[t]
    if set(trend.unsure) != set(FALL_HIDES) or _fall_instability(verdicts) is None:
        return
    spread = reward_spread(log)
    if not late_climb(log.steps, log["reward"], spread[0] if spread else None)["falling"]:
        return
    verdicts[t] = replace(trend, unsure=(), advice=[a for a in trend.advice if not a.startswith(TRAIN_LONGER)])


def _fall_instability(verdicts: list[Verdict]) -> Verdict | None:
    """The reported instability that rests on a fall of the reward (`DIVERGENCE_SIGNALS`), or None."""
    return next((v for v in verdicts if v.mode == "dynamical_instability" and v.confidence >= REPORT_CONFIDENCE
                 and any(e["signal"].startswith(DIVERGENCE_SIGNALS) for e in v.evidence)), None)


def _explained_symptom(verdicts: list[Verdict]) -> None:
    """A stalled or noise-dominated reward with a cause at EXPLAINS or above is that cause's symptom: no
    signal in the groups, a limit cycle around a flat mean, a collapsed policy, an exploit all leave the
    mean reward flat or noisy. The trend verdict is then ranked below the cause (DERIVED_DISCOUNT x its
    confidence). A healthy or rising reward is not a symptom and keeps its rank."""
    t = next(i for i, v in enumerate(verdicts) if v.mode not in CAUSE_MODES)
    trend = verdicts[t]
    causes = [v for v in verdicts if v.mode in CAUSE_MODES and v.confidence >= EXPLAINS]
    if trend.mode not in ("stalled", "noise_dominated") or not causes:
        return
    cause = max(causes, key=lambda v: v.confidence)
    _rank_below(verdicts, t, cause.confidence, f"this follows from the {cause.mode.replace('_', ' ')}: treat that first")


def _solved_task(verdicts: list[Verdict], scale, log: RunLog, notes: list[str]) -> None:
    """A solved task, or one being solved, concentrates the policy and empties the groups: not a failure.

    Concentration at the ceiling: with the reward a [0, 1] score (`_context.reward_scale`) that has stopped
    rising (`_stopped_rising`) at its ceiling, a policy that answers every prompt the same way answers it
    right: the concentration verdict is dropped and its evidence goes to the trend verdict; near the
    ceiling it is only as confident as the reward is below it (`_concentration_below_ceiling`).

    All-correct groups: for binary rewards with success probability p per sample, a group of G is
    all-correct with probability p^G and all-wrong with (1 - p)^G, so at a late success rate p > 1/2 the
    zero-std groups are mostly all-correct, for every G (prompts of one difficulty). Zero-std groups that
    appeared as the reward rose (early fraction below DEGENERATE_FRACTION) at such a p are prompts the
    run has learned to solve: the degeneracy verdict is ranked below the healthy or rising trend verdict
    (DERIVED_DISCOUNT x its confidence). Zero-std groups from the first steps (a task too easy from the
    start), or at p <= 1/2 (all-wrong groups), stay advantage degeneracy; with a collapse reported
    (concentration below the ceiling, instability) they are its consequence (`_attribute_degeneracy`).
    """
    trend = next(v for v in verdicts if v.mode not in CAUSE_MODES)
    i = _index(verdicts, "policy_concentration")
    if i is not None and scale.ceiling is not None and _stopped_rising(trend, log):
        _concentration_below_ceiling(verdicts, i, trend, scale, notes)
    j = _index(verdicts, "advantage_degeneracy")
    collapse = any(v.mode in DEGENERACY_CAUSES and v.confidence >= REPORT_CONFIDENCE for v in verdicts)
    if (j is None or collapse or not scale.bounded or not scale.late > 0.5
            or trend.mode not in ("healthy_saturation", "still_rising") or not _early_zero_std(log) < DEGENERATE_FRACTION):
        return
    _rank_below(verdicts, j, trend.confidence, f"at success rate {scale.late:.2f} the zero-std groups are mostly "
                                               "all-correct (p^G > (1-p)^G): the run is solving its prompts; harder "
                                               "prompts (or a curriculum) will give it signal again")


def _concentration_while_rising(verdicts: list[Verdict], log: RunLog, notes: list[str]) -> None:
    """An entropy collapse while the reward still rises (the trend verdict still rising at REPORT_CONFIDENCE, or
    unsure whether it still rises; the reward not fallen, Welch z > -Z_TREND) is not a failure: a group-relative
    gradient concentrates the policy on the answers it learns, and the curve shows no harm (no stall, no fall) for a
    cause to explain. The concentration verdict, and its advice to hold the policy back, are dropped for a note; it
    stands where the reward stopped below its ceiling or fell."""
    trend = next(v for v in verdicts if v.mode not in CAUSE_MODES)
    i = _index(verdicts, "policy_concentration")
    if i is None or not _still_rising(trend) or not change(log.steps, log["reward"]).get("z", math.nan) > -Z_TREND:
        return
    conc = verdicts.pop(i)
    entropy = next(e for e in conc.evidence if e["signal"] == "entropy late / early")
    kept = {k: v for k, v in entropy.items() if k not in ("side", "holds")}  # context: it supports no verdict now
    trend.evidence.append(dict(kept, signal="entropy late / early, while the reward rises"))
    notes.append(f"the entropy fell to {entropy['value']:.2g} of its start while the reward still rises: the policy "
                 "concentrates on what it learns, not a failure while the reward climbs (diagnose again if it stops "
                 "below its ceiling)")


def _still_rising(trend: Verdict) -> bool:
    """The trend verdict says the reward still rises (at REPORT_CONFIDENCE), or is unsure whether it does."""
    return (trend.mode == "still_rising" and trend.confidence >= REPORT_CONFIDENCE) or "still_rising" in trend.unsure


def _degeneracy_while_rising(verdicts: list[Verdict], log: RunLog, notes: list[str]) -> None:
    """Zero-std groups that appeared during the run (early fraction below DEGENERATE_FRACTION) while the reward still
    rises (`_still_rising`) are prompts the run is solving as it learns: the curve shows no harm for the degeneracy to
    explain yet, so it ranks below the trend (DERIVED_DISCOUNT x its confidence); where that leaves it below
    REPORT_CONFIDENCE a note says what it saw. From the first steps (a task too hard or too easy) it stays
    (`_hard_task`)."""
    trend = next(v for v in verdicts if v.mode not in CAUSE_MODES)
    j = _index(verdicts, "advantage_degeneracy")
    if j is None or not _still_rising(trend) or not _early_zero_std(log) < DEGENERATE_FRACTION:
        return
    _rank_below(verdicts, j, trend.confidence, "the reward still rises: these groups are prompts the run is solving; "
                                               "harder prompts (or a curriculum) will give it signal again")
    if verdicts[j].confidence < REPORT_CONFIDENCE:
        late = verdicts[j].evidence[0]["value"]
        notes.append(f"the share of zero-std groups rose to {late:.2f} while the reward still rises: prompts being solved, "
                     "not a failure yet (diagnose again if the reward stops)")


def _hard_task(verdicts: list[Verdict], scale, log: RunLog) -> None:
    """A rise made while most groups carried no signal from the first steps on is the degeneracy's story.

    At a late success rate p < 1/2 a zero-std group is all-wrong with probability (1 - p)^G > p^G (the
    mirror of `_solved_task`'s all-correct groups); present from the start (early fraction at or above
    DEGENERATE_FRACTION) they say the task is too hard for the policy, and only the few groups with
    signal drive whatever rise the reward makes. The healthy or rising trend verdict is then ranked below
    the degeneracy (DERIVED_DISCOUNT x its confidence): the degeneracy is what limits the run.
    """
    j = _index(verdicts, "advantage_degeneracy")
    t = next(i for i, v in enumerate(verdicts) if v.mode not in CAUSE_MODES)
    if (j is None or verdicts[j].confidence < REPORT_CONFIDENCE or not scale.bounded or not scale.late < 0.5
            or verdicts[t].mode not in ("healthy_saturation", "still_rising")
            or not _early_zero_std(log) >= DEGENERATE_FRACTION):
        return
    _rank_below(verdicts, t, verdicts[j].confidence, "the rise is made by the few groups with signal: most groups "
                                                     "are all-wrong from the start; treat the degeneracy first")


def _concentration_below_ceiling(verdicts: list[Verdict], i: int, trend: Verdict, scale, notes: list[str]) -> None:
    """An entropy collapse on a [0, 1] score whose reward has stopped rising: concentration only as far as
    the reward stopped below its ceiling. The ceiling of a score is 1 only where every prompt has a fully
    right answer the policy can reach (partial credit can cap it lower), so the evidence that the
    reward is stuck below it grows with the distance, on the scale of the gap the ceiling is known to:

        conf <= L((ceiling - late - CEILING_GAP) / CEILING_GAP)     (`RewardScale.below_ceiling`)

    0.5 at the gap, 0.73 at twice it, 0.95 at four times. Within the gap (below 0.5) it is a solved task:
    the verdict is dropped, its evidence goes to the trend verdict and a note says so."""
    conc = verdicts[i]
    below = scale.below_ceiling
    gap = {"signal": "reward below its ceiling, the rise stopped (ceiling - late mean)", "value": scale.ceiling - scale.late,
           "steps": None, "threshold": _context.CEILING_GAP, "side": ">=",
           "holds": scale.ceiling - scale.late >= _context.CEILING_GAP, "ceiling": scale.ceiling, "late_reward": scale.late}
    if below >= REPORT_CONFIDENCE:
        verdicts[i] = Verdict(conc.mode, min(conc.confidence, below), conc.evidence + [gap], conc.advice)
        return
    verdicts.pop(i)
    entropy = next(e for e in conc.evidence if e["signal"] == "entropy late / early")
    trend.evidence.append(dict(entropy, signal="entropy late / early, at the reward's ceiling (a solved task)",
                               late_reward=scale.late, ceiling=scale.ceiling))
    notes.append(f"the entropy fell to {entropy['value']:.2g} of its start while the reward reached "
                 f"{scale.late:.3g}, at its ceiling {scale.ceiling:g}: a solved task concentrates on the right "
                 "answers; not policy concentration")


def _stopped_rising(trend: Verdict, log: RunLog) -> bool:
    """The reward has stopped rising: not still rising by the trend verdict, nor by the late half climbing
    (`_trend_stats.late_climb`). A reward still climbing has not reached its ceiling: an entropy collapse ahead of it
    is the policy concentrating before the task is solved."""
    if trend.mode == "still_rising" or "still_rising" in trend.unsure:
        return False
    spread = reward_spread(log)
    return not late_climb(log.steps, log["reward"], spread[0] if spread else None)["climbing"]


def _early_zero_std(log: RunLog) -> float:
    """The zero-std fraction at the start: the least of the early window's mean, the first MIN_WINDOW rows'
    and the first row's. A collapse within the first refresh fills the early window with the zero-std
    groups it makes, and one within the first few logged rows (a row averaging 10 steps of a collapse
    that takes 30) fills the first rows too; the first row is the starting policy's groups, before any
    update has had its effect. NaN without a zero-std series."""
    if "frac_zero_std" not in log or log.n_points("frac_zero_std") < MIN_WINDOW:
        return math.nan
    _, frac = log.valid("frac_zero_std")
    return _early(log.steps, log["frac_zero_std"], frac)


def _early(steps: np.ndarray, series: np.ndarray, finite: np.ndarray) -> float:
    """The least of the early window's mean, the first MIN_WINDOW finite values' mean and the first value."""
    return min(change(steps, series).get("early", math.nan), float(np.mean(finite[:MIN_WINDOW])), float(finite[0]))


def _rank_below(verdicts: list[Verdict], i: int, cause_confidence: float, advice: str) -> None:
    """Rank verdicts[i] below a cause it follows from: DERIVED_DISCOUNT x the cause's confidence at most."""
    v = verdicts[i]
    verdicts[i] = replace(v, confidence=min(v.confidence, DERIVED_DISCOUNT * cause_confidence), advice=v.advice + [advice])


def _index(verdicts: list[Verdict], mode: str) -> int | None:
    return next((i for i, v in enumerate(verdicts) if v.mode == mode), None)


def _rank_mode_below(verdicts: list[Verdict], mode: str, cause_confidence: float, advice: str) -> None:
    """`_rank_below` for the verdict of `mode`, where there is one."""
    i = _index(verdicts, mode)
    if i is not None:
        _rank_below(verdicts, i, cause_confidence, advice)


def _eval_hack(verdicts: list[Verdict]) -> Verdict | None:
    """The reward hacking verdict when it rests on the eval reward leaving the train reward, or on one reward
    function carrying the gain while another lags (`_signals._diverging_functions`): the train reward's rise is
    then the exploit's."""
    return next((v for v in verdicts if v.mode == "reward_hacking" and v.confidence >= REPORT_CONFIDENCE
                 and any(e["signal"].startswith("eval reward drop") or e["signal"].endswith(", lagging")
                         for e in v.evidence)), None)


def _attribute_to_hacking(verdicts: list[Verdict], log: RunLog) -> None:
    """While the eval reward falls from its peak, the train reward's rise is the exploit's, not progress,
    an entropy collapse is the policy concentrating on the exploit, and zero-std groups that appeared
    during the run (early fraction below DEGENERATE_FRACTION) are groups the exploit pays in full: all
    three rank below the hacking."""
    hack = _eval_hack(verdicts)
    if hack is None:
        return
    t = next(i for i, v in enumerate(verdicts) if v.mode not in CAUSE_MODES)
    if verdicts[t].mode in ("healthy_saturation", "still_rising"):
        _rank_below(verdicts, t, hack.confidence, "the train reward's rise is the reward hacking's: treat that first")
    _rank_mode_below(verdicts, "policy_concentration", hack.confidence,
                     "this follows from the reward hacking: the policy concentrates on the exploit")
    j = _index(verdicts, "advantage_degeneracy")
    if j is not None and _early_zero_std(log) < DEGENERATE_FRACTION:
        _rank_below(verdicts, j, hack.confidence, "this follows from the reward hacking: the exploit pays every "
                                                  "response of these groups alike")


def _attribute_to_silence(verdicts: list[Verdict], silent: Verdict | None) -> None:
    """With no reward signal in any group (and no eval divergence), an entropy collapse moves for another
    reason (a KL or auxiliary term) and length or truncation growth exploits nothing: both rank below
    the degeneracy."""
    if silent is None or _eval_hack(verdicts) is not None:
        return
    _rank_mode_below(verdicts, "policy_concentration", silent.confidence,
                     "this follows from no group carrying any reward signal: the reward does not drive this collapse")
    _rank_mode_below(verdicts, "reward_hacking", silent.confidence,
                     "no group carries any reward signal: the length change is not reward-driven")


def _attribute_to_divergence(verdicts: list[Verdict], log: RunLog | None = None, scale=None) -> None:
    """An entropy collapse while the training reward falls (a collapse after a real peak, or a fall from the
    start: the instability's divergence evidence) follows from the divergence. A group-relative policy
    gradient ascends the reward it is trained on, so concentrating by following it raises or holds that
    reward; a policy thrown onto one answer while that reward falls is the update overshooting (stale or
    too large steps), whose answer happens to be a single one. Concentration is then ranked below the
    instability (DERIVED_DISCOUNT x its confidence), unless the entropy had collapsed and the reward held below its
    ceiling before the fall (`_concentrated_first.concentrated_first`): then the fall follows the concentration, ranked
    below it. Where the entropy collapsed long before the fall but the reward's ceiling is unknown (or was reached),
    the instability still comes first, said with both steps, not as a collapse during the fall."""
    inst = next((v for v in verdicts if v.mode == "dynamical_instability" and v.confidence >= REPORT_CONFIDENCE
                 and any(e["signal"].startswith(DIVERGENCE_SIGNALS) for e in v.evidence)), None)
    i = _index(verdicts, "policy_concentration")
    if inst is None or i is None:
        return
    first = concentrated_first(log, scale) if log is not None and scale is not None else None
    if first is not None:  # the policy had concentrated, and the reward stood below its ceiling, before the fall
        conc = verdicts[i]
        verdicts[i] = replace(conc, evidence=conc.evidence + [first])
        _rank_mode_below(verdicts, "dynamical_instability", conc.confidence,
                         f"the entropy had collapsed by step {first['value']} and the reward stood at "
                         f"{first['held_reward']:.3g}, below its ceiling, before it fell at step {first['fell_at_step']}: "
                         "the fall follows the concentration; treat that first")
        return
    apart = collapse_before_fall(log) if log is not None else None
    if apart is not None:  # the entropy collapsed long before the fall: no consequence of it (audit s38 D4)
        _rank_below(verdicts, i, inst.confidence, f"the entropy had collapsed by step {apart[0]}, before the reward "
                                                  f"fell at step {apart[1].step}: the fall came later; treat it first")
        return
    _rank_below(verdicts, i, inst.confidence, "the reward fell while the entropy collapsed: the policy was thrown "
                                              "onto one answer by the divergence; treat the instability first")


def _cycle_not_settled(verdicts: list[Verdict]) -> None:
    """A reward that keeps swinging (a reported instability resting on an oscillation: a periodic residual, an
    alternation of rows, ringing) has not settled at a plateau, nor is its rise the healthy kind: the healthy or
    rising trend verdict is ranked below the instability (DERIVED_DISCOUNT x its confidence)."""
    inst = next((v for v in verdicts if v.mode == "dynamical_instability" and v.confidence >= REPORT_CONFIDENCE
                 and any(e["signal"].startswith(CYCLE_SIGNALS) for e in v.evidence)), None)
    t = next(i for i, v in enumerate(verdicts) if v.mode not in CAUSE_MODES)
    if inst is None or verdicts[t].mode not in ("healthy_saturation", "still_rising"):
        return
    _rank_below(verdicts, t, inst.confidence, "the reward keeps swinging around its level: treat the instability first")


def _fall_not_rise(verdicts: list[Verdict]) -> None:
    """A reward that fell by more than its noise after a rise (a reported instability resting on a fall: a drop below
    the peak, sustained or to the end, a fall from the start or to the floor, `DIVERGENCE_SIGNALS`) has collapsed,
    whether or not it climbs again after: a still-rising or saturated reading of the same curve ("train longer",
    "nothing to change") would lead with the part after the fall. The trend verdict is ranked below the instability
    (DERIVED_DISCOUNT x its confidence) and keeps its evidence; the collapse's advice comes first."""
    inst = _fall_instability(verdicts)
    t = next(i for i, v in enumerate(verdicts) if v.mode not in CAUSE_MODES)
    if inst is None or verdicts[t].mode not in FALL_HIDES:
        return
    _rank_below(verdicts, t, inst.confidence, "the reward fell by more than its noise after its rise: treat the "
                                              "collapse first")


def _attribute_degeneracy(verdicts: list[Verdict], log: RunLog) -> None:
    """Zero-std groups that appeared during the run with a collapse are its consequence, not the data's.

    A concentrated policy answers every prompt the same way, and a diverged one (dynamical
    instability: a stale update driving the reward to the floor) fails every sample, so either
    leaves groups with zero reward variance. When the zero-std fraction started below
    DEGENERATE_FRACTION and one of those causes is reported, the degeneracy verdict is kept as
    evidence but ranked below that cause (DERIVED_DISCOUNT x its confidence); so too where they were there from the
    start but on the other side (`_solved_groups.solved_to_failed`: all-correct groups at an early success rate above 1/2, all-wrong
    ones at a late rate below it: the groups the run ends with are the fall's, not the start's). A task too hard from
    the start (zero-std groups from the first steps, all-wrong throughout) stays advantage degeneracy. Without a zero-std fraction the
    share of rows whose reward_std is 0 stands in for it, as in the degeneracy verdict it read.
    """
    causes = [v for v in verdicts if v.mode in DEGENERACY_CAUSES and v.confidence >= REPORT_CONFIDENCE]
    i = next((i for i, v in enumerate(verdicts) if v.mode == "advantage_degeneracy"), None)
    if not causes or i is None:
        return
    early = _early_zero_std(log)
    if "frac_zero_std" not in log and "reward_std" in log:  # the rows whose reward_std is 0, as the verdict read them
        steps, zero = zero_std_rows(log)
        early = _early(steps, zero, zero) if zero.size >= MIN_WINDOW else math.nan
    flip = solved_to_failed(log)
    if not early < DEGENERATE_FRACTION and flip is None:
        return
    cause = max(causes, key=lambda v: v.confidence)
    name = cause.mode.replace("_", " ")
    deg = verdicts[i]
    note = ({"signal": f"zero-std groups appeared with the {name} (early fraction)", "value": early,
             "steps": None, "threshold": DEGENERATE_FRACTION, "side": "<", "holds": early < DEGENERATE_FRACTION}
            if early < DEGENERATE_FRACTION else
            {"signal": f"zero-std groups turned from all-correct to all-wrong with the {name} (success rate early, late)",
             "value": flip[0], "steps": None, "threshold": 0.5, "side": ">", "holds": True, "late_success_rate": flip[1]})
    verdicts[i] = Verdict(deg.mode, min(deg.confidence, DERIVED_DISCOUNT * cause.confidence), deg.evidence + [note],
                          deg.advice + [f"this follows from the {name}: treat that first"])
