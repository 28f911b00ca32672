"""Checks on the other logged series: advantage degeneracy, policy concentration, reward hacking.

Each check returns (verdict or None, reason it could not run or None).
"""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics._keys import CLIP_HIGH_KEYS, KL_WEIGHT_KEYS, MAX_LENGTH_KEYS
from gspo_dynamics.diagnose._findings import Z_NOT_RISING, Z_RISE
from gspo_dynamics.diagnose._changepoint import change_point
from gspo_dynamics.diagnose._trend_stats import STILL_RISING_FRACTION, Z_TREND, change
from gspo_dynamics.diagnose._verdict import SUCCESS_RATE_TOL, Verdict, confidence, evidence
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory.finite_group import zero_variance_probability
from gspo_dynamics.theory.zero_std import fit_difficulty, group_size_for_zero_std

DEGENERATE_FRACTION = 0.5  # more than half of the groups carry no learning signal late in the run
NO_SIGNAL_TOL = 1e-9  # a reward_std (or grad norm) this small is zero
NO_ZERO_STD_SERIES = ("advantage degeneracy: the log has no zero-std fraction (frac_reward_zero_std, TRL >= 0.18) and no "
                      "per-group reward std")
ZERO_STD_TARGET = 0.3  # advice: the G that brings the theory's p^G + (1-p)^G under this
HETEROGENEITY_GAP = 0.15  # measured zero-std fraction this far above p^G + (1-p)^G: mixed prompt difficulty
G_SEARCH = range(2, 257)  # group sizes considered when estimating or advising G
G_MIXTURE_MAX = 256  # the largest G advised over prompts of mixed difficulty (a run with more is not one to advise)
G_WINDOWS = 10  # windows of rows whose means estimate G (`estimate_group_size`)
STD_COLLAPSE_RATIO = 0.2  # late within-group reward std below 20% of its early value: collapsed
ENTROPY_COLLAPSE_RATIO = 0.5  # late entropy below half its early value: the policy is concentrating
LENGTH_BLOWUP_RATIO = 2.0  # mean completion length doubled from early to late
TRUNCATION_RISE = 0.2  # truncation rate up by 20 points from early to late
DOMINANT_SHARE = 0.9  # one reward component carries 90% of the total gain ...
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


def success_rate(log) -> np.ndarray | None:
    """The reward series when it can be a success rate (all values in [0, 1]), else None."""
    r = log["reward"]
    v = r[np.isfinite(r)]
    if v.size and v.min() >= -SUCCESS_RATE_TOL and v.max() <= 1.0 + SUCCESS_RATE_TOL:
        return np.clip(r, 0.0, 1.0)
    return None


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
                if need is not None and need > G and not mixed:
                    g_is = (f"G = {G}" if source == "hparams" else  # the user's G, or one the log's shares suggest
                            f"G = {G} (estimated from the zero-std share: --group-size gives yours)")
                    advice.append(f"raise the group size: at success rate {p_late:.2f}, {g_is} leaves {expected:.0%} of "
                                  f"groups without signal; G >= {need} brings it under {ZERO_STD_TARGET:.0%}")
            side = "easy (all responses correct)" if p_late > 0.5 else "hard (all responses wrong)"
            advice.append(f"the prompts have become too {side} for the policy: use {'harder' if p_late > 0.5 else 'easier'} "
                          "prompts or a curriculum")
        else:
            advice.append("the reward is not a success rate in [0, 1], so p^G + (1-p)^G could not be compared; "
                          "filter prompts whose groups all score the same (DAPO dynamic sampling) or raise G")
        floor = group_floor(G)
        excess = (late - floor) / (1.0 - floor)  # the share the success rate, not the group size, empties
        climbing = ch["z"] > Z_TREND and excess > DEGENERATE_FRACTION / 2  # still climbing: getting worse
        if floor > 0:
            ev.append(evidence("zero-std fraction beyond the group size's floor, (f - 2^(1-G)) / (1 - 2^(1-G))", excess,
                               ch["late_steps"], threshold=DEGENERATE_FRACTION, side=">=", caveat=climbing, floor=floor,
                               G=G))
        ev[0]["caveat"] = floor > 0 or climbing  # the floor-adjusted share, or the climb, decides
        if excess < DEGENERATE_FRACTION and not climbing:
            return None, None
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
    return None, NO_ZERO_STD_SERIES


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
    sigma = float(np.std(np.diff(evals), ddof=1)) / math.sqrt(2.0)  # step-to-step scatter of one eval
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
    is a task not learned (the finding says so), not an exploit."""
    if found is None:
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
    if "mean_length" in log and log.n_points("mean_length") >= 6:
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
    if "truncation_rate" in log and log.n_points("truncation_rate") >= 6:
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
        missing.append("fewer than two reward components")
    if collapse_symptoms:
        notes.append(" and ".join(collapse_symptoms) + " while the reward fell: a symptom of the collapse, "
                     "not reward hacking (hacking raises the training reward)")
    if unpaid:
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
