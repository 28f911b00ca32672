"""What a log says beyond its reward trend: the reward's scale and ceiling, no learning signal, drift.

- `reward_scale`: whether the reward is a bounded score (a success rate, or partial credit in
  [0, 1]) and so where its ceiling is. A score X in [0, 1] with mean p has, by the Bhatia-Davis
  inequality, Var X <= p (1 - p), with equality for 0/1 (Bernoulli) rewards; a within-group std with
  Bessel's correction over G samples is then at most sqrt(G / (G - 1)) sqrt(p (1 - p)), and the mean
  of per-group stds at most that (Jensen). A logged reward_std above the bound on most rows says the
  reward is not such a score, whatever its range.
- `no_signal`: a run in which no group carries any learning signal (every group's rewards equal:
  reward_std = 0, frac_zero_std = 1, or the batch's lowest reward equal to its highest on almost every row,
  gradient norm 0) is advantage degeneracy,
  not a stall: GRPO's advantages A = (r - mean) / std are all zero, so nothing can change.
- `drift_without_progress`: the KL to the reference or the entropy moving significantly while the
  reward does not: the policy moves, but not towards reward.
- `drift_beside_fall`: the KL to the reference rising significantly while the reward falls: the policy leaves its
  reference as it collapses (said as context of the fall).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gspo_dynamics.diagnose._signals import success_rate
from gspo_dynamics.diagnose._trend_stats import Z_TREND, change
from gspo_dynamics.diagnose._verdict import Verdict, confidence, evidence
from gspo_dynamics.logs import NO_SIGNAL_TOL, flat_rows

BOUND_SLACK = 1.05  # reward_std may exceed the Bhatia-Davis bound by 5% (rounding, averaging over logged rows)
BOUND_ROWS = 0.9  # ... on at most 10% of the rows for the reward to count as a [0, 1] score
CEILING_GAP = 0.05  # late mean within 0.05 of the ceiling (and no longer rising): solved; chosen from {0.02, 0.05, 0.1}
# on four labelled families (paper_repro/diagnose_generalisation.py, the 590000 run: the best on all of them);
# it is also the scale of the evidence that a collapse is below the ceiling (`RewardScale.below_ceiling`)
NO_SIGNAL_SHARE = 0.9  # share of rows whose groups all carry no signal, from which the run has none
# ... and from which most rows carry none (predict's DEAD_SHARE; stated, "most", fitted to no run): a flat reward's
# first fix is the missing signal
MOSTLY_NO_SIGNAL = 0.5
DRIFT_KL_RATIO = 2.0  # KL to the reference at least doubled while the reward stayed flat
DRIFT_ENTROPY_CHANGE = 0.25  # entropy moved by 25% of its early value while the reward stayed flat
LR_DECAYED = 0.25  # a logged lr whose last-quarter mean is under a quarter of its peak: the late rows barely moved
# (a stated threshold, fitted to no run: a linear decay to 0 (a last-quarter mean of 1/8) and a cosine (1/20) count,
# a decay to half of the peak does not)


@dataclass(frozen=True)
class RewardScale:
    """What the reward's values say about its scale."""

    bounded: bool  # every reward in [0, 1] and reward_std (if logged) within the Bhatia-Davis bound
    ceiling: float | None  # 1.0 for a bounded score, None when unknown
    late: float  # late-window mean reward
    std_within_bound: float | None  # share of rows with reward_std <= the bound (None: no reward_std)

    @property
    def at_ceiling(self) -> bool:
        return self.ceiling is not None and self.late >= self.ceiling - CEILING_GAP

    @property
    def below_ceiling(self) -> float:
        """Confidence that the late mean is below the ceiling by more than CEILING_GAP, on the gap's own
        scale: L((ceiling - late - CEILING_GAP) / CEILING_GAP) (0.5 at the gap; 0 without a ceiling)."""
        if self.ceiling is None:
            return 0.0
        return confidence(self.ceiling - self.late - CEILING_GAP, CEILING_GAP)


def reward_scale(log, trend: dict, group_size: int | None = None) -> RewardScale:
    """Infer whether the reward is a [0, 1] score (see the module docstring for the bound used)."""
    r = log["reward"]
    in_range = success_rate(log) is not None  # every reward in [0, 1]
    share = None
    if in_range and "reward_std" in log and log.n_points("reward_std") >= 3:
        std = log["reward_std"]
        keep = np.isfinite(std) & np.isfinite(r)
        p = np.clip(r[keep], 0.0, 1.0)
        bessel = math.sqrt(group_size / (group_size - 1)) if group_size and group_size > 1 else math.sqrt(2.0)
        bound = bessel * np.sqrt(p * (1.0 - p))
        share = float(np.mean(std[keep] <= BOUND_SLACK * bound + NO_SIGNAL_TOL)) if keep.any() else None
    bounded = in_range and (share is None or share >= BOUND_ROWS)
    late = trend.get("late", math.nan) if trend else math.nan
    return RewardScale(bounded, 1.0 if bounded else None, late, share)


def reward_spread(log) -> tuple[float, str] | None:
    """Per-sample reward spread: the mean logged reward std, or sqrt(p(1-p)) for a success rate. A logged std that is
    the mean of the groups' own stds (TRL before 0.15, `reward_std_kind` group_mean_std) leaves out the spread between
    prompts, which a success rate's sqrt(p(1-p)) holds whole (p(1-p) = E[p_i(1-p_i)] + Var(p_i) over prompts i): the
    larger of the two is the per-sample spread (at G = 2 the groups' mean std read a 0/1 reward's 0.49 as 0.14)."""
    p = success_rate(log)
    binomial = None
    if p is not None:
        mean = float(np.nanmean(p))
        binomial = (math.sqrt(mean * (1.0 - mean)), "sqrt(p(1-p)) at the mean success rate")
    if "reward_std" in log and log.n_points("reward_std") >= 3:
        logged = (float(np.nanmean(log["reward_std"])), f"mean logged reward_std ({log.reward_std_kind})")
        within = log.reward_std_kind == "group_mean_std"
        return binomial if within and binomial is not None and binomial[0] > logged[0] else logged
    return binomial


_NO_SIGNAL_SIGNALS = {  # the evidence line of each reading of `logs.flat_rows`
    "reward_std": "share of rows with reward_std = 0 (no group has reward variance)",
    "frac_zero_std": "share of rows with every group zero-std",
    "reward_min": "share of rows whose lowest reward equals its highest (every response scored alike)",
    "reward": "share of rows whose success rate is exactly 0 or 1 (every response scored alike)"}


def _no_signal_shares(log) -> list[tuple[str, float, int, int, tuple]]:
    """(reading, share of its rows without signal, those rows, its rows, (first, last) step) for each reading of
    `logs.flat_rows` on 3 rows or more."""
    out = []
    for name, (read, flat) in flat_rows(log).items():
        if read.sum() >= 3:
            s = log.steps[read]
            out.append((name, float(np.mean(flat[read])), int(flat[read].sum()), int(read.sum()), (s[0], s[-1])))
    return out


def no_signal(log) -> Verdict | None:
    """Advantage degeneracy when (almost) no row has a group with reward variance (module docstring)."""
    found = _no_signal_shares(log)  # each reading's share of rows without signal
    shares = [share for _, share, *_ in found]
    ev = [evidence(_NO_SIGNAL_SIGNALS[name], share, steps, threshold=NO_SIGNAL_SHARE)
          for name, share, _, _, steps in found]
    if not shares or max(shares) < NO_SIGNAL_SHARE:
        return None
    for item in ev:  # the larger share decides; the other is context
        item.update(side=">=", holds=item["value"] >= NO_SIGNAL_SHARE, caveat=item["value"] < max(shares))
    conf = confidence(max(shares) - NO_SIGNAL_SHARE, 0.02)
    if "grad_norm" in log and log.n_points("grad_norm") >= 3:
        s, g = log.valid("grad_norm")
        zero = float(np.mean(np.abs(g) <= NO_SIGNAL_TOL))
        # a gradient may still flow (a KL or auxiliary loss): the groups carry no reward signal either way
        ev.append(evidence("share of rows with gradient norm 0", zero, (s[0], s[-1]), threshold=NO_SIGNAL_SHARE, side=">=",
                           caveat=True))
    return Verdict("advantage_degeneracy", conf, ev, [_no_signal_advice(log)])


SIGNAL_CARRIED = 0.2  # a logged zero-std fraction at most this over the run: most groups carry signal
CHECK_SIGNAL = "check that the groups carry signal (rewards differ within a group) and that"


def signal_said(log, advice: list[str]) -> list[str]:
    """`advice` with its "check that the groups carry signal" said as measured where the log's zero-std fraction (the
    share of groups whose rewards are all equal, per row) averages at most SIGNAL_CARRIED: the check is done, its
    result given. A reward_std, min and max or success rate do not say how many groups score alike, so they leave the
    advice as it is."""
    if "frac_zero_std" not in log or log.n_points("frac_zero_std") < 3:
        return advice
    share = float(np.mean(log.valid("frac_zero_std")[1]))
    if share > SIGNAL_CARRIED:
        return advice
    said = (f"the groups carry signal (on average {share:.0%} of them score alike, as "
            f"{log.columns.get('frac_zero_std', 'frac_zero_std')} logs); check that")
    return [a.replace(CHECK_SIGNAL, said) for a in advice]


def mostly_no_signal(log) -> tuple[dict, str] | None:
    """(evidence, advice) where most rows carry no signal (the largest `logs.flat_rows` share at least
    MOSTLY_NO_SIGNAL) but not (almost) all (`no_signal`'s cause, from NO_SIGNAL_SHARE): a flat reward read as a stall
    or as noise is first the rows that trained nothing, so its advice leads with the signal's fix."""
    found = _no_signal_shares(log)
    best = max(found, key=lambda item: item[1], default=None)  # the first of equal shares, as the loop kept it
    if best is None or not MOSTLY_NO_SIGNAL <= best[1] < NO_SIGNAL_SHARE:
        return None
    name, share, dead, rows, steps = best
    item = evidence(_NO_SIGNAL_SIGNALS[name], share, steps, threshold=MOSTLY_NO_SIGNAL, side=">=", rows=rows)
    return item, f"on {dead} of {rows} rows {_no_signal_advice(log)}"


def _no_signal_advice(log) -> str:
    """What to do when no group carries signal, by where a success-rate reward sits: all correct (solved
    prompts), all wrong (a reward that never pays), the rows without signal mostly (2:1) solved (harder prompts, not
    easier), about as often solved as unpaid (both fixes), or else (a reward of another scale, or ends that hold under
    half of the rows without signal) the generic advice."""
    lead = "no group carries a learning signal: every response of a group gets the same reward, so every advantage is 0"
    generic = (f"{lead}; check the reward function (does it ever pay?), make the prompts solvable (easier prompts, a "
               "curriculum, a supervised warm-start) or raise G")
    components = [name for name in log.names if name.startswith("reward/")]
    if len(components) >= 2:  # a sum of reward functions: its level says nothing of any one of them
        never = [name.split("/", 1)[1] for name in components
                 if log.n_points(name) and not np.nanmax(np.abs(log[name])) > NO_SIGNAL_TOL]
        return generic + (f"; these reward functions never paid: {', '.join(never)}" if never else "")
    _, reward = log.valid("reward")
    if len(reward) and reward.min() >= 1.0 - NO_SIGNAL_TOL and reward.max() <= 1.0 + NO_SIGNAL_TOL:
        return (f"{lead}; every response earns reward 1 (for a success rate: every prompt solved), so give harder "
                "prompts (a curriculum, or drop the prompts every group solves)")
    if len(reward) and reward.max() <= NO_SIGNAL_TOL and reward.min() >= -NO_SIGNAL_TOL:
        return generic.replace(f"{lead}; ", f"{lead}; no response earns any reward (0 throughout): ")
    solved, unpaid, flat = _flat_ends(log)
    if solved + unpaid < flat / 2:  # the ends explain too few of the rows without signal to choose a fix by
        return generic
    if solved >= 2 * max(unpaid, 1):  # mostly prompts every response solves: the opposite fix of a reward that never pays
        rest = f" (on {unpaid}, none earned any)" if unpaid else ""
        return (f"{lead}; on {solved} of these rows every response earned 1{rest}: the prompts are solved by all, so "
                "give harder prompts (drop the prompts every group solves, as DAPO's dynamic sampling does, or a "
                "curriculum) or raise G")
    if solved and unpaid and max(solved, unpaid) < 2 * min(solved, unpaid):
        return (f"{lead}; on {solved} of these rows every response earned 1 and on {unpaid} none earned any: drop the "
                "prompts every group solves or fails (DAPO's dynamic sampling), match the prompts' difficulty to the "
                "model, or raise G")
    return generic


def _flat_ends(log) -> tuple[int, int, int]:
    """(rows without signal whose success rate is 1, those whose success rate is 0, rows without signal), for a
    reward within [0, 1] (a success rate: 1 is every response right, 0 none); (0, 0, 0) for a reward of another
    scale."""
    found = flat_rows(log)
    reward = log["reward"]
    if "reward" not in found:
        return 0, 0, 0
    flat = np.logical_or.reduce([rows for _, rows in found.values()]) & np.isfinite(reward)
    value = reward[flat]
    return int(np.sum(value >= 1.0 - NO_SIGNAL_TOL)), int(np.sum(value <= NO_SIGNAL_TOL)), int(flat.sum())


def drift_without_progress(log, trend: dict) -> list[dict]:
    """Evidence of the policy moving (KL to the reference, entropy) while the reward shows no significant change."""
    if not trend or abs(trend["z"]) >= Z_TREND:
        return []
    steps, items = log.steps, []
    kl = _kl_rise(log, "while the reward is flat")
    if kl is not None:
        items.append(kl)
    if "entropy" in log and log.n_points("entropy") >= 6:
        ch = change(steps, log["entropy"])
        rel = ch["diff"] / ch["early"] if ch["early"] > 0 else math.nan
        if abs(ch["z"]) > Z_TREND and abs(rel) >= DRIFT_ENTROPY_CHANGE:
            items.append(evidence("entropy change / early entropy while the reward is flat", rel, ch["steps"],
                                  threshold=DRIFT_ENTROPY_CHANGE, early=ch["early"], late=ch["late"], z=ch["z"]))
    return items


def _kl_rise(log, beside: str) -> dict | None:
    """Evidence that the KL to the reference rose: late / early >= DRIFT_KL_RATIO with Welch z > Z_TREND (`change`'s
    windows); None where it did not, or fewer than 6 rows log it."""
    if "kl_ref" not in log or log.n_points("kl_ref") < 6:
        return None
    ch = change(log.steps, log["kl_ref"])
    ratio = ch["late"] / ch["early"] if ch["early"] > 0 else math.inf
    if not (ch["z"] > Z_TREND and ratio >= DRIFT_KL_RATIO):
        return None
    return evidence(f"KL to the reference late / early {beside}", ratio if math.isfinite(ratio) else None,
                    ch["steps"], threshold=DRIFT_KL_RATIO, early=ch["early"], late=ch["late"], z=ch["z"])


def drift_beside_fall(log, trend: dict) -> tuple[dict, str] | None:
    """Where the reward fell (Welch z <= -Z_TREND) while the KL to the reference rose (`_kl_rise`): the evidence and
    its note (the policy left its reference as it fell); None otherwise. Context for a collapse, not a verdict: a KL
    that grows from near 0 is every learning run's, so it is said only beside a fall."""
    if not trend or not trend["z"] <= -Z_TREND:
        return None
    item = _kl_rise(log, "while the reward fell")
    if item is None:
        return None
    note = (f"the KL to the reference went {item['early']:.3g} -> {item['late']:.3g} while the reward fell (Welch z = "
            f"{trend['z']:.3g}): the policy left its reference as it fell; a KL weight (TRL beta; verl "
            "actor_rollout_ref.actor.kl_loss_coef with use_kl_loss) holds it nearer, a lower learning rate slows it")
    return item, note


def drift_note(items: list[dict], reward_z: float) -> str:
    """The note of `drift_without_progress`'s evidence, with the reward's own change in its units (Welch z): "without
    progress" only where that change is within one standard error, else "more than the reward shows"."""
    what = []
    for e in items:
        kind = "the KL to the reference" if e["signal"].startswith("KL") else "the entropy"
        what.append(f"{kind} went {e['early']:.3g} -> {e['late']:.3g}")
    flat = abs(reward_z) < 1.0
    return (" and ".join(what) + f" while the reward's change is not significant (Welch z = {reward_z:.2g}, under "
            f"{Z_TREND:g}): the policy " + ("drifts without progress (updates move it, the reward does not follow)"
                                              if flat else "moves more than the reward shows")
            + "; check the reward signal and the learning rate, and the KL weight if the drift is away from the "
            "reference")


def decayed_lr_advice(log) -> str | None:
    """Where the logged learning rate's mean over the log's last quarter is under LR_DECAYED of its peak, a reward
    that flattened there flattened under a schedule that stopped moving it: the advice for a saturation reading
    (the task's ceiling and the schedule's end are not told apart); None where no lr is logged or it did not decay."""
    if "learning_rate" not in log or log.n_points("learning_rate") < 8:
        return None
    _, lr = log.valid("learning_rate")
    peak, late = float(np.max(lr)), float(np.mean(lr[-max(2, lr.size // 4):]))
    if not peak > 0 or late >= LR_DECAYED * peak:
        return None
    return (f"the reward flattened while the learning rate decayed to {late / peak:.0%} of its peak ({late:.2g} "
            f"against {peak:.2g}) over the last quarter: the schedule's end as much as a plateau of the task; a run "
            "with a longer schedule (max_steps) or a constant lr (TRL lr_scheduler_type: constant) tells which")
