"""Checks on the other logged series: advantage degeneracy and policy concentration (reward hacking: `_hacking`).

Each check returns (verdict or None, reason it could not run or None).
"""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics._keys import CLIP_HIGH_KEYS, KL_WEIGHT_KEYS
from gspo_dynamics.diagnose._changepoint import change_point
from gspo_dynamics.diagnose._trend_stats import Z_TREND, change
from gspo_dynamics.diagnose._verdict import SUCCESS_RATE_TOL, Verdict, confidence, evidence
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs import NO_SIGNAL_TOL
from gspo_dynamics.theory.finite_group import zero_variance_probability
from gspo_dynamics.theory.zero_std import fit_difficulty, group_size_for_zero_std

DEGENERATE_FRACTION = 0.5  # more than half of the groups carry no learning signal late in the run
NO_ZERO_STD_SERIES = ("advantage degeneracy: the log has no zero-std fraction (frac_reward_zero_std, TRL >= 0.18) and no "
                      "per-group reward std")
ZERO_STD_TARGET = 0.3  # advice: the G that brings the theory's p^G + (1-p)^G under this
AMBIGUOUS_STD = ("advantage degeneracy: the log has no zero-std fraction (frac_reward_zero_std, TRL >= 0.18); its "
                 "reward_std is a mean over the batch, of its groups' stds or of all its rewards (TRL's by release and "
                 "scale_rewards), which does not say how many groups score alike")
UNDECIDED_WITHOUT_G = "undecided without the run's G"  # a share degeneracy at a larger G, the G it implies's own
HETEROGENEITY_GAP = 0.15  # measured zero-std fraction this far above p^G + (1-p)^G: mixed prompt difficulty
SUM_TOL = 5e-4  # the reward is its functions' sum where it differs from it by at most this x (k + 1) on every row
# with all k logged: each value printed to 3 decimals is off by up to 5e-4 (a mean of the k differs by far more)
SUM_ROWS = 0.9  # ... and at least this share of the reward's rows log every function
G_SEARCH = range(2, 257)  # group sizes considered when estimating or advising G
G_MIXTURE_MAX = 256  # the largest G advised over prompts of mixed difficulty (a run with more is not one to advise)
G_WINDOWS = 10  # windows of rows whose means estimate G (`estimate_group_size`)
STD_COLLAPSE_RATIO = 0.2  # late within-group reward std below 20% of its early value: collapsed
ENTROPY_COLLAPSE_RATIO = 0.5  # late entropy below half its early value: the policy is concentrating


def success_rate(log) -> np.ndarray | None:
    """The reward series when it can be a success rate (all values in [0, 1], and not a sum of reward functions that
    reaches past 1, `summed_reach`), else None."""
    r = log["reward"]
    v = r[np.isfinite(r)]
    if v.size and v.min() >= -SUCCESS_RATE_TOL and v.max() <= 1.0 + SUCCESS_RATE_TOL and summed_reach(log) is None:
        return np.clip(r, 0.0, 1.0)
    return None


def summed_reach(log) -> tuple[float, float] | None:
    """(0, k) where the reward is the sum of k >= 2 reward functions (`reward/<fn>`, TRL's reward with its default
    weights: |reward - sum| <= SUM_TOL (k + 1) on the rows that log them all, SUM_ROWS of the reward's rows or more)
    each logged within [0, 1]: the sum reaches k, not the [0, 1] its values may all lie in so far (a format reward
    learnt before the task's: nano-aha-moment's 0.9 of a reach of 2). None otherwise."""
    names = [n for n in log.names if n.startswith("reward/")]
    if len(names) < 2:
        return None
    parts = np.vstack([log[n] for n in names])
    rows = np.isfinite(parts).all(axis=0) & np.isfinite(log["reward"])
    if rows.sum() < SUM_ROWS * np.isfinite(log["reward"]).sum() or not rows.any():
        return None
    if np.min(parts[:, rows]) < -SUCCESS_RATE_TOL or np.max(parts[:, rows]) > 1.0 + SUCCESS_RATE_TOL:
        return None
    if np.max(np.abs(parts[:, rows].sum(axis=0) - log["reward"][rows])) > SUM_TOL * (len(names) + 1):
        return None
    return 0.0, float(len(names))


def estimate_group_size(p: np.ndarray, frac: np.ndarray) -> int | None:
    """G minimising sum_w (f_w - p_w^G - (1 - p_w)^G)^2 over G_WINDOWS consecutive windows of the rows with both
    values (f_w, p_w: the windows' means); None if fewer than G_WINDOWS such rows.

    Window means, not rows: a row's success rate is measured on the very groups whose zero-std share it is
    compared with, so with few groups per row the two are tied whatever G is (one group per row: f = 1 exactly
    when p is 0 or 1, and 0 otherwise, for every G), and a row-by-row fit runs to the largest G searched."""
    keep = np.flatnonzero(np.isfinite(p) & np.isfinite(frac))
    if keep.size < G_WINDOWS:
        return None
    bins = np.array_split(keep, G_WINDOWS)
    pw = np.array([p[b].mean() for b in bins])
    fw = np.array([frac[b].mean() for b in bins])
    Gs = np.asarray(G_SEARCH, dtype=float)[:, None]
    pg = pw ** Gs + (1.0 - pw) ** Gs  # (nG, windows): zero_variance_probability for every G at once
    return int(G_SEARCH[int(np.argmin(((pg - fw) ** 2).sum(axis=1)))])


def group_floor(G: int | None) -> float:
    """The zero-std fraction no success rate can avoid with groups of G binary rewards,

        min_p  p^G + (1 - p)^G = 2^(1 - G)      (at p = 1/2: the function is convex and symmetric about it),

    0.5 at G = 2, 0.25 at G = 3, 0.008 at G = 8; 0 when G is unknown (or < 2). Advantage degeneracy is the
    excess over it: a success rate too far from 1/2 for G, not the group size itself (at G = 2 half the
    groups are zero-std at best, and that is the group's noise, not a task too hard or too easy)."""
    return 2.0 ** (1 - G) if G is not None and G >= 2 else 0.0


def _undecided(late: float, G: int) -> str | None:
    """Where G was inverted from the zero-std share (prompts alike assumed) and leaves no degeneracy, the smallest
    larger G whose floor (`group_floor`) leaves the share DEGENERATE_FRACTION past it: the share is then the prompts'
    mix, so which it is is the run's G's to say (None where no G up to G_SEARCH's last does)."""
    past = next((g for g in G_SEARCH if g > G and (late - group_floor(g)) / (1.0 - group_floor(g)) >= DEGENERATE_FRACTION),
                None)
    if past is None:
        return None
    return (f"advantage degeneracy: {UNDECIDED_WITHOUT_G} ({late:.0%} of groups carry no signal late, what the success "
            f"rate gives at G = {G}, the G inverted from that share; at G >= {past} it is the prompts' mix, past "
            f"{DEGENERATE_FRACTION:.0%} beyond the floor G leaves: --config with the run's config tells)")


def group_size_for(p: float, target: float = ZERO_STD_TARGET) -> int | None:
    """Smallest G with p^G + (1-p)^G <= target (None if beyond G_SEARCH)."""
    for G in G_SEARCH:
        if zero_variance_probability(p, G) <= target:
            return G
    return None


def _mixture(p: float, share: float, G: int, steps) -> tuple[list, list[str]]:
    """Prompts of mixed difficulty read from the late success rate and zero-std share (`theory.zero_std`: per-prompt
    success ~ Beta with mean p whose mixture share at G is the logged one): the evidence line and the G (num_generations,
    rollout.n) that brings the share under ZERO_STD_TARGET, or that none up to G_MIXTURE_MAX does."""
    try:
        difficulty = fit_difficulty(p, share, G)
    except ConfigError:  # a share so near 1 that no spread resolves it: all-or-nothing prompts, said by the advice above
        return [], []
    if difficulty is None:
        return [], []
    need = group_size_for_zero_std(difficulty, ZERO_STD_TARGET, g_max=G_MIXTURE_MAX)
    ev = [evidence("mixture over prompt difficulty: zero-std share at G, per-prompt success ~ Beta(a, b) fitted to it",
                   share, steps, a=difficulty.a, b=difficulty.b, G=G, needed_G=need)]
    if need is None:
        return ev, [f"over these prompts' difficulties no group size up to {G_MIXTURE_MAX} brings the zero-std share "
                    f"under {ZERO_STD_TARGET:.0%} (always-solved and always-failed prompts dominate): filter them "
                    "(DAPO dynamic sampling), a larger num_generations / rollout.n will not"]
    if need > G:
        return ev, [f"over these prompts' difficulties num_generations / rollout.n = {need} brings the zero-std share "
                    f"under {ZERO_STD_TARGET:.0%} (the batch law p^G + (1-p)^G would say far fewer)"]
    return ev, []


def zero_std_rows(log) -> tuple[np.ndarray, np.ndarray]:
    """(steps, 1.0 where the row's reward_std is 0 else 0.0) over the rows with a finite reward_std."""
    s, std = log.valid("reward_std")
    return s, (np.abs(std) <= NO_SIGNAL_TOL).astype(float)


def _degeneracy_bound(log) -> Verdict | None:
    """Without a zero-std fraction, the rows whose reward_std is 0 bound it from below: a std of 0 (of the batch, or
    the mean of the groups' stds, which are >= 0) means every group scored its responses alike, so a row's zero-std
    share f_t >= 1[std_t = 0] and

        late mean of f  >=  late share of rows with reward_std = 0.

    Advantage degeneracy where that bound reaches DEGENERATE_FRACTION (confidence L((share - DEGENERATE_FRACTION) /
    0.1), as the measured fraction's); None below it (the bound decides nothing there)."""
    ch = change(*zero_std_rows(log))
    if not ch or ch["late"] < DEGENERATE_FRACTION:
        return None
    ev = [evidence("share of rows with reward_std = 0 (late; a lower bound on the zero-std group share)", ch["late"],
                   ch["late_steps"], threshold=DEGENERATE_FRACTION, side=">=", early=ch["early"])]
    return Verdict("advantage_degeneracy", confidence(ch["late"] - DEGENERATE_FRACTION, 0.1), ev,
                   ["on most late rows every group scored its responses alike (reward_std 0): filter prompts whose "
                    "groups all score the same (DAPO dynamic sampling), raise G, or make the reward give partial credit"])


def degeneracy(log, hparams, theory: dict) -> tuple[Verdict | None, str | None]:
    steps = log.steps
    p_series = success_rate(log)
    if "frac_zero_std" in log and log.n_points("frac_zero_std") >= 6:
        frac = log["frac_zero_std"]
        ch = change(steps, frac)
        late = ch["late"]
        ev = [evidence("fraction of zero-std groups (late mean)", late, ch["late_steps"], threshold=DEGENERATE_FRACTION,
                       side=">=", early=ch["early"])]
        advice = []
        G, source = (hparams.group_size, "hparams") if hparams is not None and hparams.group_size else (None, None)
        if p_series is not None:
            if G is None:
                G, source = estimate_group_size(p_series, frac), "estimated from the zero-std fraction"
            pc = change(steps, p_series)
            p_late = pc["late"]
            if G is not None:
                expected = float(zero_variance_probability(p_late, G))
                theory.update(group_size=G, group_size_source=source)
                ev.append(evidence("theory p^G + (1-p)^G at the late success rate", expected, pc["late_steps"],
                                   success_rate=p_late, G=G, G_source=source, measured=late))
                mixed = late - expected > HETEROGENEITY_GAP and 0 < p_late < 1 and late < 1
                if mixed:
                    advice.append(f"the measured zero-std fraction {late:.2f} is above the {expected:.2f} that G = {G} "
                                  f"gives at success rate {p_late:.2f}: prompt difficulties are mixed (many all-solved "
                                  "or all-failed prompts); filter such prompts (DAPO dynamic sampling) or rebalance the data")
                    ev_mix, advice_mix = _mixture(p_late, late, G, pc["late_steps"])
                    ev += ev_mix
                    advice += advice_mix
                need = group_size_for(p_late)
                if need is not None and need > G and not mixed and source == "hparams":
                    advice.append(f"raise the group size: at success rate {p_late:.2f}, G = {G} leaves {expected:.0%} of "
                                  f"groups without signal; G >= {need} brings it under {ZERO_STD_TARGET:.0%}")
                elif need is not None and need > G and not mixed:  # G inverted from the share: prompts alike assumed
                    advice.append(f"{late:.0%} of groups carry no signal at success rate {p_late:.2f}: raise the group "
                                  "size (TRL num_generations, verl actor_rollout_ref.rollout.n) or filter prompts whose "
                                  "groups all score alike (DAPO dynamic sampling); your G (--config with the run's config) "
                                  f"tells which: prompts alike in difficulty leave under {ZERO_STD_TARGET:.0%} at G >= "
                                  f"{need}")
            side = "easy (all responses correct)" if p_late > 0.5 else "hard (all responses wrong)"
            advice.append(f"the prompts have become too {side} for the policy: use {'harder' if p_late > 0.5 else 'easier'} "
                          "prompts or a curriculum")
        else:
            advice.append("filter prompts whose groups all score the same (DAPO dynamic sampling) or raise G (TRL "
                          "num_generations, verl actor_rollout_ref.rollout.n); the reward is not a success rate in "
                          "[0, 1], so the share G alone would leave, p^G + (1-p)^G, is not compared")
        floor = group_floor(G)
        excess = (late - floor) / (1.0 - floor)  # the share the success rate, not the group size, empties
        climbing = ch["z"] > Z_TREND and excess > DEGENERATE_FRACTION / 2  # still climbing: getting worse
        if floor > 0:
            ev.append(evidence("zero-std fraction beyond the group size's floor, (f - 2^(1-G)) / (1 - 2^(1-G))", excess,
                               ch["late_steps"], threshold=DEGENERATE_FRACTION, side=">=", caveat=climbing, floor=floor,
                               G=G))
        ev[0]["caveat"] = floor > 0 or climbing  # the floor-adjusted share, or the climb, decides
        if excess < DEGENERATE_FRACTION and not climbing:
            return None, _undecided(late, G) if source not in (None, "hparams") else None
        conf = confidence(excess - DEGENERATE_FRACTION, 0.1)
        if ch["z"] > Z_TREND:  # still climbing: the degeneracy is getting worse
            conf = max(conf, confidence((late + 0.5 * ch["diff"] - floor) / (1.0 - floor) - DEGENERATE_FRACTION, 0.1))
        return Verdict("advantage_degeneracy", conf, ev, advice), None
    if "reward_std" not in log or log.n_points("reward_std") < 6:
        return None, NO_ZERO_STD_SERIES
    bound = _degeneracy_bound(log)
    if bound is not None:
        return bound, None
    if log.reward_std_kind == "group_mean_std":
        ch = change(steps, log["reward_std"])
        if ch["early"] <= 0:
            return None, None
        ratio = ch["late"] / ch["early"]
        if ratio >= STD_COLLAPSE_RATIO:
            return None, None
        ev = [evidence("within-group reward std late / early", ratio, ch["late_steps"], threshold=STD_COLLAPSE_RATIO,
                       side="<", early=ch["early"], late=ch["late"])]
        return Verdict("advantage_degeneracy", confidence(STD_COLLAPSE_RATIO - ratio, 0.05), ev,
                       ["groups have stopped differing: raise G or filter prompts whose groups all score the same"]), None
    return None, AMBIGUOUS_STD


def concentration(log, hparams) -> tuple[Verdict | None, str | None]:
    steps = log.steps
    if "entropy" not in log or log.n_points("entropy") < 6:
        return None, "policy concentration: the log has no entropy series (TRL logs it from v0.20)"
    ch = change(steps, log["entropy"])
    if not ch["early"] > 0:
        return None, None
    ratio = ch["late"] / ch["early"]
    span = ch["steps"][1] - ch["steps"][0]
    rate = -math.log(max(ratio, 1e-12)) / max(span, 1) * 100.0
    cp = change_point(*log.valid("entropy"))  # where the entropy's level broke (CUSUM, Brownian-bridge null)
    broke = {"broke_at_step": cp.step, "break_p_value": cp.p_value} if cp is not None and cp.significant else {}
    ev = [evidence("entropy late / early", ratio, ch["steps"], threshold=ENTROPY_COLLAPSE_RATIO, side="<", early=ch["early"],
                   late=ch["late"], decay_per_100_steps=rate, **broke)]
    conf = confidence(ENTROPY_COLLAPSE_RATIO - ratio, 0.1)
    if "reward_std" in log and log.n_points("reward_std") >= 6 and log.reward_std_kind != "batch_std":
        sc = change(steps, log["reward_std"])
        if sc and sc["early"] > 0:
            sratio = sc["late"] / sc["early"]
            ev.append(evidence("within-group reward std late / early", sratio, sc["steps"], threshold=STD_COLLAPSE_RATIO,
                               side="<", caveat=True))  # supports where it collapsed too; not needed
            if ratio < ENTROPY_COLLAPSE_RATIO and sratio < STD_COLLAPSE_RATIO:
                conf = max(conf, confidence(STD_COLLAPSE_RATIO - sratio, 0.05))
    if ratio >= ENTROPY_COLLAPSE_RATIO:
        return None, None
    advice = []
    if hparams is not None:
        beta = hparams.kl_coef
        advice.append(f"raise the KL weight beta ({KL_WEIGHT_KEYS}; now {beta:g}, "
                      f"{'e.g. 0.01-0.04' if beta == 0 else f'e.g. to {2 * beta:g}'}) to hold the policy near the reference")
        if hparams.correction == "sequence":  # GSPO's band is on the sequence ratio, about 1e-4 wide
            advice.append(f"the upper clip (now {hparams.clip_high:g}) bounds the sequence ratio here: DAPO's token-level "
                          "clip-higher (0.28) does not carry over to it")
        else:
            advice.append(f"raise the upper clip eps_high ({CLIP_HIGH_KEYS}; now {hparams.clip_high:g}; DAPO's "
                          "clip-higher uses 0.28) so unlikely tokens can still gain probability")
    else:
        advice.append(f"raise the KL weight beta ({KL_WEIGHT_KEYS}), or for a token-level clip the upper bound eps_high "
                      f"({CLIP_HIGH_KEYS}; DAPO's clip-higher: 0.28)")
    advice.append("or lower the learning rate, or add an entropy bonus")
    return Verdict("policy_concentration", conf, ev, advice), None
