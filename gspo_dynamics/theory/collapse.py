"""Collapse by one large move: the policy's drift within a refresh window under Adam's normalised steps.

The linear model (`theory.linear`) describes small deviations around a fixed point with a restoring
force. Trainer runs show another failure: within one refresh period the policy moves so far from the
sampler that the next rollout draws from a different, often degenerate, policy (entropy falls, the
reward drops to 0 and all-zero groups stop the gradient). This module states the drift that governs it.

Adam moves parameter i by u_i = lr m_i / (sqrt(v_i) + eps) per step. With a steady gradient (the
sampler is frozen for the window, so every step's expected gradient is the same function of a slowly
moving theta) m_i / sqrt(v_i) -> sign(g_i) / sqrt(1 + (s_i / g_i)^2), s_i the gradient's noise: a
step of lr a_i, a_i in [0, 1] set by the signal-to-noise ratio, not by the gradient's size. A sampled
token's log-probability moves by Delta(y) = sum_i d log pi(y) / d theta_i u_i, the same direction at
every step of the window, so after j stale steps the log-ratio to the sampler is j Delta(y) to first
order and its spread over the sampler's tokens is

    sigma_j = j delta,    delta = lr s,                                              (1)

s = std_y(sum_i d log pi(y) / d theta_i a_i): the model's, the task's and the point of training's, not
the learning rate's or the refresh interval's. (Plain SGD has u_i = lr g_i: delta = lr |g| s', also
linear in lr at a fixed gradient, but it scales with the reward too; Adam's does not.)

The next rollout is drawn by the policy T steps after the one that drew the last: consecutive
samplers differ by the displacement

    D(lr, T) = sigma_T = T lr s,                                                     (2)

the on-policy step of each window included, so D is lr s at T = 1 (a single step too large for the
task's basin collapses an on-policy run too: a policy that lands where every group is zero-std gets no
gradient back). The run is at risk when D passes a limit S:

    T lr s > S    <=>    T > T_max = floor(S / (lr s)),    lr > lr_max = S / (T s).            (3)

A ratio clip stops the push on a token (GRPO) or a sequence (GSPO) once its ratio leaves the band in
the direction of its advantage. The first step of a window starts at ratio 1 and is never clipped; the
later ones push only until the band's edge, log(1 + eps_high):

    D_clip(lr, T) = min(T lr s, max(lr s, log(1 + eps_high))),                              (4)

so a clipped objective is at risk at some T only where max(lr s, log(1 + eps_high)) > S, and at every T
once lr s > S. A clip that only caps a detached weight (CISPO: -(1/N) sum sg[clip(w)] A grad log pi) stops no push,
so its D is (2)'s T lr s uncapped, as without a correction (`band_edge`). What the clip does not bound (the drift
of tokens the update moves through shared parameters) is outside this model.

Uncapped is not the whole story under such a clip. Its gradient on a sampled token is sg[min(w, 1 + eps_high)] A
grad log pi with w = pi / pi_old: where A < 0 the push lowers pi, so w falls with it and the push fades; only the
rewarded tokens' push (A > 0, w capped at 1 + eps_high) keeps going past the band edge. A push that only raises
rewarded samples moves the reward down only where a group it reaches keeps a signal. Where the run's success is
absorbing, most of its groups all correct at its held success rate p_h (the share p_h^G of groups of G draws that
all succeed, (9)'s term),

    p_h^G >= ABSORBED_SHARE = 1/2,                                                                     (10)

the groups that push reaches end all correct and stop carrying a gradient, so the displacement that moves the reward
is the one the band edge caps, (4), as under a clip that switches the gradient off; elsewhere (2) uncapped
(`band_edge` with the held success rate; `absorbed`). The threshold 1/2 says "the median group carries no gradient";
it is a model's choice, not derived (how it fared held out: docs/validation.md). A loss without a weight (pg's) has
no fading push: its D stays uncapped whatever p_h; nor has a weight clipped from below at 1 - eps_low >
WEIGHT_FLOOR_MAX (verl's CISPO clamps w to [1 - clip_ratio_low, 1 + clip_ratio_high], 0.8 at its default 0.2): a
negative token's push keeps that share, which Adam's normalised step does not shrink. MiniMax's CISPO, TRL's (it
clamps w from above only) and our trainer's (eps_low = 1) have no floor. WEIGHT_FLOOR_MAX = 0.05 is read off the
softmax bandit of tests/theory/test_collapse.py (a 64-step stale window at lr 0.1 under Adam, three seeds): the
negative arms' push over the window's second half against its first is 0.26-0.30 without a floor, 0.36-0.40 at 0.05,
0.52-0.57 at 0.1, 0.76-0.83 at 0.2 and 1.03-1.17 from 0.5 (pg's, without a weight, 1.13-1.18): up to 0.05 the push
fades to well under half.

How far is too far depends on how peaked the policy is: a shift of the sampled tokens' log-probabilities
by D reorders a policy whose log-probabilities differ by less than D, and barely moves one whose
typical gaps are larger. The mean token entropy H is the scale of those gaps (the expected surprise
-log pi of a sampled token), so the limit is one on the relative displacement,

    D(lr, T) / H > S,        i.e. an absolute limit S H for the run's entropy H,                (5)

with S dimensionless (`relative_limit`); the bounds of (3)-(4) hold with S H in place of S.

A pilot can also see a move too large directly: a policy-gradient step sharpens the policy on its
rewarded samples, so the token entropy falls; an entropy that rises by more than a quarter over its
first value within the first steps (`overshoots`) says the pilot's single step lr s already crosses
the basin. The rise r = max_{j <= OVERSHOOT_STEPS} H_j / H_0 - 1 (`entropy_rise`) is a response to the
step, first order in it, so a run at lr sees r lr / lr_pilot, and every lr with

    r lr / lr_pilot > OVERSHOOT_RISE    <=>    lr > lr_pilot OVERSHOOT_RISE / r   (r > 0)        (6)

is at risk, whatever T (`overshoot_max_learning_rate`): at and above the pilot's lr when the pilot
overshot, and below it too when it overshot by more than a quarter times the ratio.

A rise the entropy's own scatter could give is no reading of the step. The mean token entropy of a row is a mean
over its completions, and over few of them it scatters from row to row (a run at 2 completions a step ranged over
0.38-0.88 and never fell); its row noise, from the first differences (robust to a trend, a drift of the mean moves
each difference by its own small step),

    sigma_H = 1.4826 median_j |H_{j+1} - H_j| / sqrt(2),                                           (6')

and the rise counts as an overshoot only where it also passes OVERSHOOT_Z = 3 standard deviations of a difference
of two rows. The rise is the largest of k = OVERSHOOT_STEPS - 1 differences H_j - H_0, so each is held to the
one-sided tail alpha_k = 1 - (1 - Phi(-3))^(1/k) (Sidak 1967: with the row noise known, the largest of k passes with
chance at most Phi(-3) where nothing moved; the k differences share H_0, a positive dependence under which the bound
holds; with the median's scale below, 0.2-0.3% on pure noise, tests/theory/test_collapse.py). sigma_H is
read from the pilot's own m first differences, so the level widens as a scale estimated from a sample does: to
Student's t quantile of that tail with m - 1 degrees of freedom,

    max_{1 <= j <= k} H_j - H_0 > t_{1 - alpha_k}(m - 1) sqrt(2) sigma_H                           (6')

(`rise_within_noise`: at k = 3, 5.1 at m = 9, 4.2 at m = 15, 3.7 at m = 31, 3.3 as m grows; a median's scale
scatters more than a standard deviation's, so this is the least widening; sigma_H from at least NOISE_ROWS
entropies, else no scatter is read and the rise counts as it is).

Only groups whose rewards differ carry the displacement into the reward. A group-relative advantage is
zero on a group of equal rewards (all correct, all wrong): its prompt is one the policy has absorbed or
never reached, and a move that keeps it all correct loses nothing there. The reward a move can lose is
carried by the share of groups with signal, 1 - z (z the zero-std share), so the displacement that counts
is the signal-weighted one, and the limit (5) becomes

    (1 - z) D(lr, T) / H > S,   i.e. an absolute limit S H / (1 - z) on D                          (7)

(`relative_limit` with `signal_share` = 1 - z). A task whose success is absorbing (z -> 1 as p -> 1:
the run stops moving once it solves its prompts) tolerates a larger step than one whose groups keep a
signal (partial credit, a plateau inside (0, 1)), at the same entropy.

A pilot is also a measured point of the map. One that ran at its own displacement D_p = D(lr_p, T_p)
without losing reward (`fit._fall`: no fall below its running best past its noise) shows that the limit
is not below D_p there, whatever S H / (1 - z) says (on a low-entropy pilot the clip's band edge alone can
pass S H / (1 - z) at every T >= 2, the pilot's own included). The displacement term is then

    (1 - z) D(lr, T) > max(S H, (1 - z) D_p),   i.e. D(lr, T) > max(S H / (1 - z), D_p)            (8)

(`at_risk` with `survived` = D_p; none where the pilot lost reward or is too short to tell). It bounds
only (5)-(7): the overshoot (6) reads the pilot's first updates, not their outcome, and flags the pilot's
own lr where the pilot rose past it.

The share in (7) is the run's, not the pilot's. A run several times longer than its pilot spends most of
its steps near the level the pilot reached, and where success is absorbing few of its groups carry a
signal there. So (9) takes the mean share of a run four times its pilot (a pilot a quarter of its run): its
first quarter at the pilot's measured share 1 - z_p, the rest at the share the pilot's held success rate p_h
(its last rewards' mean, `predict.held_reward`) gives at the run's G,

    1 - z = w (1 - z_p) + (1 - w) (1 - p_h^G - (1 - p_h)^G),    w = PILOT_SHARE_WEIGHT = 1/4        (9)

(`run_signal_share`; p^G + (1 - p)^G is the chance that G draws of a success rate p agree), for a pilot that kept
its reward (as (8): one that fell holds the level of its fall, not one a run settles at; its own share then stands
for the run's). Like S, w is a number set from data (on the 22 development combinations of
paper_repro/pilot_forecast.py, with S fitted at each w: `--fit-weight`; docs/validation.md). Equation (9) is checked
in tests/theory/test_collapse.py against a simulated run of groups. Two of its choices are a model's, not derived:
it reads p^G + (1 - p)^G at the mean held rate, where prompts of differing (or a partial-credit reward) flatten
fewer groups than that, so it overstates the flat share there; and it takes one share for every lr, where a faster
run reaches the held level sooner.

s is measured by a pilot with stale steps (the token log-ratio variance at window position j is
(j delta)^2; `predict.pilot_forecast`), H is the pilot's mean token entropy, 1 - z the run's share of groups with
signal from the pilot's mean zero-std share and its held success rate (9), and
S is one dimensionless number for all models and tasks, set from data (`predict.COLLAPSE_SPREAD` says
where; (5), (6) and (7) are a model judged as a forecast in paper_repro/pilot_forecast.py, not derived). Equation (1)
is checked in tests/theory/test_collapse.py against Adam on a softmax bandit with a frozen sampler:
sigma_j / (j sigma_1) -> 1, sigma_1 proportional to lr and free of the reward's scale, unlike SGD's;
(3) and (4) against scans of D.

Outside this model too: a KL weight's pull on a solved policy. Where the sampler solves nearly every prompt
(zero-std share near 1) the policy gradient nearly vanishes and the KL term moves the policy back toward the
reference for the rest of the window, unseen in the logged (sampler's) reward until the next refresh. It is no
displacement too large: on count/cispo with a KL weight of 0.04, every cell at T = 16 falls at every lr tried,
from a third of the base lr up (the share of seeds that fall grows with lr: 9 and 15 of 16 at a third of and
at the base lr), while at T = 4 no seed of 16 falls at either (paper_repro/kl_unwinding.py, claim
kl-unwinding). Forecasting it needs the run's zero-std share at its own T, which a pilot at another T does
not measure; `predict.pilot_forecast` warns of it beside the collapse bounds instead (`kl_pull_risk`).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError


def _real(value) -> bool:
    """Whether `value` is a real number (Python's or numpy's), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _positive(name: str, value: float) -> float:
    if not _real(value) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def window_spread(drift_per_lr: float, lr: float, position: int) -> float:
    """sigma_j = j lr s, equation (1): the log-ratio spread after `position` stale steps."""
    return positive_int("position", position, minimum=0) * _positive("lr", lr) * _positive("drift_per_lr", drift_per_lr)


ABSORBED_SHARE = 0.5  # (10): a run's success is absorbing when at least this share of its groups all succeed
WEIGHT_FLOOR_MAX = 0.05  # (10): a capped weight's lower bound 1 - eps_low up to which it lets a negative push fade


def absorbed(held_success: float | None, group_size: int) -> bool:
    """Whether a run's success is absorbing, equation (10): p_h^G >= ABSORBED_SHARE for its held success rate p_h
    (in [0, 1]; None, unknown: False) and group size G (None, G -> infinity: only p_h = 1 is)."""
    if held_success is None:
        return False
    if not _real(held_success) or not 0 <= held_success <= 1:
        raise ConfigError(f"the success rate must be in [0, 1], got {held_success!r}")
    if group_size is None:
        return held_success == 1
    return float(held_success) ** positive_int("group_size", group_size) >= ABSORBED_SHARE


def weight_fades(hp) -> bool:
    """Whether a capped weight (`clip_mode` "cap") can fall far enough to fade a negative token's push, equation (10):
    its lower bound 1 - eps_low at most WEIGHT_FLOOR_MAX."""
    return 1.0 - hp.clip_low <= WEIGHT_FLOOR_MAX


def band_edge(hp, held_success: float | None = None) -> float | None:
    """The clip's upper bound eps_high that caps the displacement (3) of a run with `hp` (theory.Hyperparams): None
    where nothing stops a clipped token's gradient, without a correction or under a clip that caps only a detached
    weight (CISPO, `clip_mode` "cap": its gradient -(1/N) sum sg[clip(w)] A grad log pi never vanishes, so the policy
    keeps moving past the band edge at T lr s), but for the latter eps_high again where the run's success is absorbing
    at its held success rate `held_success` (None: unknown) and the weight has no floor (1 - eps_low <=
    WEIGHT_FLOOR_MAX), equation (10)."""
    if hp.correction == "none":
        return None
    if hp.clip_mode == "cap":
        return hp.clip_high if weight_fades(hp) and absorbed(held_success, hp.group_size) else None
    return hp.clip_high


def displacement(drift_per_lr: float, lr: float, refresh_interval: int, clip_high: float | None = None) -> float:
    """D = T lr s between consecutive samplers, equation (2); under a ratio clip (eps_high, None for
    none) min(T lr s, max(lr s, log(1 + eps_high))), equation (4)."""
    step = _positive("lr", lr) * _positive("drift_per_lr", drift_per_lr)
    coherent = positive_int("refresh_interval", refresh_interval) * step
    return coherent if clip_high is None else min(coherent, max(step, math.log1p(_positive("clip_high", clip_high))))


def displacement_grid(drift_per_lr: float, lrs, refresh_intervals, clip_high: float | None = None) -> np.ndarray:
    """`displacement` over a grid, vectorised: D[i, j] at (lrs[j], refresh_intervals[i]), equations (2)
    and (4) (checked against the scalar route in tests/theory/test_collapse.py)."""
    step = _positive("drift_per_lr", drift_per_lr) * np.asarray(lrs, dtype=float)[None, :]
    coherent = np.asarray(refresh_intervals, dtype=float)[:, None] * step
    if clip_high is None:
        return coherent
    return np.minimum(coherent, np.maximum(step, math.log1p(_positive("clip_high", clip_high))))


def max_safe_refresh_interval(drift_per_lr: float, lr: float, limit: float, clip_high: float | None = None) -> int | None:
    """The largest T with D(lr, T) <= S, equations (3)-(4): 0 when even T = 1 passes S, None when no T
    does (a clip whose band edge is within S)."""
    step = _positive("lr", lr) * _positive("drift_per_lr", drift_per_lr)
    limit = _positive("limit", limit)
    if step > limit:
        return 0
    if clip_high is not None and math.log1p(_positive("clip_high", clip_high)) <= limit:
        return None
    T = math.floor(limit / step)
    return T + 1 if (T + 1) * step <= limit else T - 1 if T * step > limit else T  # the quotient's rounding, undone


def max_safe_learning_rate(drift_per_lr: float, refresh_interval: int, limit: float, clip_high: float | None = None) -> float:
    """The largest lr with D(lr, T) <= S, equations (3)-(4): S / (T s); S / s under a clip whose band
    edge is within S (past it only the window's first step moves)."""
    T, s, limit = positive_int("refresh_interval", refresh_interval), _positive("drift_per_lr", drift_per_lr), _positive("limit", limit)
    if clip_high is not None and math.log1p(_positive("clip_high", clip_high)) <= limit:
        return limit / s
    return limit / (T * s)


PILOT_SHARE_WEIGHT = 0.25  # w of (9): the pilot's measured share of groups with signal counts for a quarter of the run's
OVERSHOOT_RISE = 0.25  # the entropy rise over its first value that marks a move too large (`overshoots`)
OVERSHOOT_STEPS = 4  # the first steps in which it is looked for: the first updates, before learning sharpens the policy
OVERSHOOT_Z = 3.0  # (6'): the rise must pass this many standard deviations of a difference of two rows
NOISE_ROWS = 8  # entropies (6') reads a row noise from: as many as a pilot's shortest fit


def relative_limit(limit: float, entropy: float, signal_share: float = 1.0) -> float:
    """The absolute displacement limit S H / (1 - z) of equations (5) and (7) for a run of mean token
    entropy H (nats) whose groups carry a signal at the share 1 - z (`signal_share`, in (0, 1])."""
    share = _positive("signal_share", signal_share)
    if share > 1:
        raise ConfigError(f"signal_share is a share of groups, in (0, 1], got {signal_share!r}")
    return _positive("limit", limit) * _positive("entropy", entropy) / share


def held_signal_share(success: float, group_size: int) -> float:
    """1 - p^G - (1 - p)^G: the share of groups of G draws of a success rate p (in [0, 1]) whose rewards
    differ, the held level's term of equation (9)."""
    if not _real(success) or not 0 <= success <= 1:
        raise ConfigError(f"the success rate must be in [0, 1], got {success!r}")
    G = positive_int("group_size", group_size)
    p = float(success)
    return 1.0 - p**G - (1.0 - p) ** G


def run_signal_share(pilot_share: float, held_success: float, group_size: int,
                     weight: float = PILOT_SHARE_WEIGHT) -> float:
    """The run's share of groups with signal, equation (9): w (1 - z_p) + (1 - w) (1 - p_h^G - (1 - p_h)^G)
    for the pilot's share 1 - z_p (`pilot_share`, in (0, 1]), its held success rate p_h (in [0, 1]) and the
    run's group size G (`held_signal_share`); w = `weight`, in [0, 1]."""
    share = _positive("pilot_share", pilot_share)
    if share > 1:
        raise ConfigError(f"pilot_share is a share of groups, in (0, 1], got {pilot_share!r}")
    if not _real(weight) or not 0 <= weight <= 1:
        raise ConfigError(f"weight must be in [0, 1], got {weight!r}")
    return float(weight) * share + (1.0 - float(weight)) * held_signal_share(held_success, group_size)


def entropy_rise(entropy) -> float | None:
    """r = max_{1 <= j < OVERSHOOT_STEPS} H_j / H_0 - 1 over the first OVERSHOOT_STEPS finite entropies
    (module docstring, (6)); None with fewer than two or a first value <= 0 (nothing to compare with)."""
    first = [float(h) for h in list(entropy)[:OVERSHOOT_STEPS] if math.isfinite(float(h))]
    if len(first) < 2 or not first[0] > 0:
        return None
    return max(first[1:]) / first[0] - 1


def overshoot_max_learning_rate(rise: float | None, lr_pilot: float) -> float | None:
    """The largest lr with r lr / lr_pilot <= OVERSHOOT_RISE, equation (6): lr_pilot OVERSHOOT_RISE / r;
    None (no bound) when the entropy did not rise (r <= 0) or is unknown."""
    lr_pilot = _positive("lr_pilot", lr_pilot)
    return None if rise is None or not rise > 0 else lr_pilot * OVERSHOOT_RISE / rise


def survived_limit(bound: float, survived: float | None) -> float:
    """The displacement limit a pilot's outcome leaves, equation (8): max(S H / (1 - z), D_p) for the absolute
    limit `bound` = S H / (1 - z) and the displacement D_p a pilot ran at without losing reward (`survived`;
    None: no such pilot, the bound itself)."""
    bound = _positive("bound", bound)
    return bound if survived is None else max(bound, _positive("survived", survived))


def at_risk(drift_per_lr: float, entropy: float, rise: float | None, lr_pilot: float, lrs, refresh_intervals,
            limit: float, clip_high: float | None = None, signal_share: float = 1.0,
            survived: float | None = None) -> np.ndarray:
    """The collapse forecast over a grid, (len(refresh_intervals), len(lrs)) booleans: (1 - z) D(lr, T) > S H
    (equations (5) and (7), D from `displacement_grid`, 1 - z the `signal_share`), the limit raised to the
    displacement a pilot survived (`survived`, equation (8)), or r lr / lr_pilot > OVERSHOOT_RISE (equation
    (6); no overshoot term when the rise r is unknown)."""
    lrs = np.asarray(lrs, dtype=float)
    bound = survived_limit(relative_limit(limit, entropy, signal_share), survived)
    risk = displacement_grid(drift_per_lr, lrs, refresh_intervals, clip_high) > bound
    if rise is None:
        return risk
    return risk | (rise * lrs / _positive("lr_pilot", lr_pilot) > OVERSHOOT_RISE)[None, :]


def overshoots(entropy) -> bool:
    """Whether the token entropy rises by more than OVERSHOOT_RISE over its first value within the first
    OVERSHOOT_STEPS steps, past its own row scatter (module docstring, (6) and (6')): the pilot's single step is
    already past the basin."""
    rise = entropy_rise(entropy)
    return rise is not None and rise > OVERSHOOT_RISE and not rise_within_noise(entropy)


def entropy_row_noise(entropy) -> float | None:
    """sigma_H of (6'), 1.4826 median |H_{j+1} - H_j| / sqrt(2) over the finite entropies in order; None with fewer
    than NOISE_ROWS of them."""
    h = np.asarray([float(x) for x in entropy], dtype=float)
    h = h[np.isfinite(h)]
    if h.size < NOISE_ROWS:
        return None
    return float(1.4826 * np.median(np.abs(np.diff(h))) / math.sqrt(2.0))


def rise_within_noise(entropy) -> bool:
    """Whether the first updates' rise, max_{1 <= j < OVERSHOOT_STEPS} H_j - H_0 (nats), is within `rise_level`
    sqrt(2) sigma_H (6'); False where no rise or no row noise is read."""
    first = [float(h) for h in list(entropy)[:OVERSHOOT_STEPS] if math.isfinite(float(h))]
    noise = entropy_row_noise(entropy)
    if len(first) < 2 or noise is None:
        return False
    return max(first[1:]) - first[0] <= rise_level(entropy) * math.sqrt(2.0) * noise


def rise_level(entropy) -> float:
    """(6')'s level in standard deviations for these entropies: `overshoot_level`(m, k), m their finite values' first
    differences (the ones sigma_H is read from), k the first updates' rows the rise is the largest of."""
    h = [float(x) for x in entropy]
    first = [x for x in h[:OVERSHOOT_STEPS] if math.isfinite(x)]
    return overshoot_level(sum(math.isfinite(x) for x in h) - 1, max(len(first) - 1, 1))


def overshoot_level(m: int, rows: int = 1) -> float:
    """The (6') level in standard deviations for a scale read from m differences and a rise that is the largest of
    `rows` differences H_j - H_0: Student's t quantile with m - 1 degrees of freedom at the one-sided tail
    1 - (1 - Phi(-OVERSHOOT_Z))^(1 / rows) (Sidak's, so that the largest of the rows passes it with chance at most
    Phi(-OVERSHOOT_Z) where none moved; OVERSHOOT_Z itself for one row as m grows)."""
    from scipy import stats

    tail = -math.expm1(math.log1p(-float(stats.norm.sf(OVERSHOOT_Z))) / max(int(rows), 1))
    return float(stats.t.isf(tail, max(int(m) - 1, 1)))
