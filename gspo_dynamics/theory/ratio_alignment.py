"""GSPO's sequence clip fraction from the reward gain: how far log s is aligned with the advantage.

Why. GSPO clips the sequence ratio s = exp((1/L) sum_t log w_t) at eps ~ 3e-4, far inside the
spread of log s after one stale step, so its clip fraction is set by the sign of log s relative
to the sign of the advantage: an A > 0 response is clipped when log s > ln(1 + eps_high), an A < 0
one when log s < ln(1 - eps_low). Independent signs would clip about half of the informative
samples; the update raises the responses that score well, so log s leans towards the sign of A.
This module predicts how far, from the reward the policy has gained since the refresh.

Identity (importance sampling, exact). For one prompt, responses y ~ pi_s (the sampler) with
reward r(y), R_s = E_s[r] and R_j = E_{pi_j}[r] (the policy after j steps):

    E_s[(pi_j(y) / pi_s(y) - 1) (r(y) - R_s)] = R_j - R_s = Delta R_j.

For responses of equal length L, pi_j / pi_s = prod_t w_t = exp(L log s); to first order in log s

    L Cov_s(log s, r) = Delta R_j.                                                          (1)

Sign-conditional law. Within a group of G responses with sample mean r_bar, the regression of
log s on the deviation D = r - r_bar has slope b = Cov(log s, r) / Var(r) = Delta R / (L sigma_r^2)
(sigma_r^2 = Var(r) per prompt; the logs' reward_std, the mean over groups of the unbiased
within-group std, estimates sigma_r, and a flat group's zero std pairs with its prompt's zero
gain), and E[D^2] = (G - 1) / G sigma_r^2 in a group that is not flat. D is replaced by the
two-point law with the measured sign shares q+ = P(A > 0), q- = P(A < 0) (A = 0: flat groups):
D = +d+ or -d-, with zero mean (q+ d+ = q- d-, as sum_i D_i = 0 in every group) and that second
moment ((q+ d+^2 + q- d-^2) / (q+ + q-) = E[D^2]), so the rarer sign carries the larger deviation
(one success in a group of failures).
The sign of A then moves log s by

    m+ = b d+ = M sqrt(q- / q+),   m- = b d- = M sqrt(q+ / q-),
    M = Delta R sqrt((G - 1) / G) / (L sigma_r),                                            (2)

and log s | A > 0 ~ N(c + m+, v), log s | A < 0 ~ N(c - m-, v), log s | A = 0 ~ N(c, v), where
the shifts average to zero (q+ m+ = q- m-) and explain q+ m+^2 + q- m-^2 = (q+ + q-) M^2 of
Var[log s], so from the measured mean and variance of log s

    c = E[log s],    v = Var[log s] - (q+ + q-) M^2  (>= 0).                                 (3)

Replacing |D| by a point per sign overstates E|D| (Jensen) when deviations spread out (a
Gaussian D would give E|D| = 0.80 rms); a within-sign spread of D adds to v, not to the shifts.
PPO clip fractions as the losses log them (losses/clip_frac_low, _high):

    high = q+ Phi((c + m+ - ln(1 + eps_high)) / sqrt v),  low = q- Phi((ln(1 - eps_low) - c + m-) / sqrt v).  (4)

Which Delta R_j (the refresh window). The reward curve gives the gain over a window of T steps,
Gamma = T x (slope of the smoothed curve); how it is spread over the window's steps is a model.
A PPO-clipped sample carries no gradient (`ratio_stability`'s "drop"), so step k moves the policy
in proportion to its kept share g_k = 1 - c_k (c_0 = 0: at j = 0 the ratio is 1):

    Delta R_j = Gamma sum_{k<j} g_k / sum_{k<T} g_k,                                        (5)

and c_k is (4) at Delta R_k: a fixed point in (c_1 .. c_{T-1}), solved by iteration. It ignores
the optimizer's momentum (which carries the unclipped j = 0 step into the next ones and flattens
the spread) and the second-order terms of (1) (measured L Cov exceeds the exact IS estimate of
Delta R by ~10% at the window's end); both are stated where the prediction is compared.

All functions broadcast their array arguments (numpy float64). No torch.
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory.ratios import ClipFractions, _clip_range, _integer, _log_tail, _real

# Fixed point of (5): stop when no clip fraction moves by more than this between iterations.
FIXED_POINT_TOL = 1e-10
# Damped iteration c <- c + a_k (F(c) - c): a_k = 1/2 for the first DAMPED_ITERATIONS (a contraction
# settles in tens), then a_k = 1/(k - DAMPED_ITERATIONS + 2) (a running average: where F jumps - v = 0,
# the alignment explains all of the measured Var[log s] and the clip is a step - it settles at the
# jump instead of cycling across it), MAX_ITERATIONS in all; the error left there is ~1/MAX_ITERATIONS.
DAMPED_ITERATIONS = 100
MAX_ITERATIONS = 2000


def reward_aligned_shift(reward_gain, reward_std, length, group_size) -> np.ndarray:
    """M = Delta R sqrt((G - 1) / G) / (L sigma_r): the std of E[log s | r] (eq. 2), the scale of
    the shifts of log s towards the sign of A.

    reward_gain = Delta R (any sign: a falling reward aligns log s against A); reward_std = sigma_r,
    the within-group reward std; length = L; group_size = G. sigma_r = 0 (every group flat) gives 0.
    """
    gain = _real("reward gain", reward_gain)
    sr = _real("reward std", reward_std, 0.0)
    L = _integer("length", length, 1).astype(float)
    G = _integer("group size", group_size, 2).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sr > 0.0, gain * np.sqrt((G - 1.0) / G) / (L * np.where(sr > 0.0, sr, 1.0)), 0.0)


def sign_shifts(scale, positive_share, negative_share) -> tuple[np.ndarray, np.ndarray]:
    """(m+, m-) = (M sqrt(q- / q+), M sqrt(q+ / q-)) (eq. 2): the two-point deviation law at the sign
    shares; 0 when either sign has no sample (no group has both)."""
    M = _real("alignment scale", scale)
    qp, qn = _real("positive_share", positive_share, 0.0, 1.0), _real("negative_share", negative_share, 0.0, 1.0)
    if (qp + qn > 1.0 + 1e-12).any():
        raise ConfigError("positive_share + negative_share must be <= 1")
    both = (qp > 0.0) & (qn > 0.0) & (M != 0.0)  # (a share below float resolution gives an infinite shift)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        up = np.where(both, M * np.sqrt(qn / qp), 0.0)
        down = np.where(both, M * np.sqrt(qp / qn), 0.0)
    return up, down


def aligned_clip_fractions(log_mean, log_var, reward_gain, reward_std, length, group_size, clip_low, clip_high,
                           positive_share, negative_share) -> ClipFractions:
    """PPO clip fractions of log s under the sign-conditional law (3) with the shifts (2) (eq. 4).

    log_mean, log_var: E[log s] and Var[log s] over the update's responses (measured, or a theory's);
    the other arguments as in `reward_aligned_shift`; positive_share, negative_share = q+, q-.
    below, above: P(s < 1 - eps_low), P(s > 1 + eps_high) over the whole mixture. At
    reward_gain = 0 this is `ratios.clip_fractions` at (E[log s], Var[log s]) with the sign shares.
    """
    lo, hi = _clip_range(clip_low, clip_high)
    qp, qn = _real("positive_share", positive_share, 0.0, 1.0), _real("negative_share", negative_share, 0.0, 1.0)
    mean, var = _real("E[log s]", log_mean), _real("Var[log s]", log_var, 0.0)
    M = reward_aligned_shift(reward_gain, reward_std, length, group_size)
    up, down = sign_shifts(M, qp, qn)
    q0 = np.clip(1.0 - qp - qn, 0.0, 1.0)
    within = np.maximum(var - np.where((qp > 0.0) & (qn > 0.0), (qp + qn) * M**2, 0.0), 0.0)

    def tail(offset, below):
        return np.exp(_log_tail(mean + offset, within, 0.0, 1.0 - lo if below else 1.0 + hi, below))

    below = qp * tail(up, True) + qn * tail(-down, True) + q0 * tail(0.0, True)
    above = qp * tail(up, False) + qn * tail(-down, False) + q0 * tail(0.0, False)
    return ClipFractions(below=below, above=above, low=qn * tail(-down, True), high=qp * tail(up, False))


def window_reward_gains(window_gain, kept_share) -> np.ndarray:
    """Delta R_j = Gamma sum_{k<j} g_k / sum_{k<T} g_k (eq. 5), (..., T) over window positions j.

    window_gain = Gamma (...,), the reward gained over the whole window; kept_share = g (..., T),
    the share of step k's gradient that the clip keeps (1 - c_k). All g = 0 spreads Gamma evenly.
    """
    gain = _real("window gain", window_gain)
    g = _real("kept share", kept_share, 0.0, 1.0)
    if g.ndim < 1:
        raise ConfigError(f"kept_share needs a window axis last, got shape {g.shape}")
    g = np.where(g.sum(-1, keepdims=True) > 0.0, g, 1.0)
    before = np.cumsum(g, axis=-1) - g  # (..., T) sum_{k<j} g_k
    return gain[..., None] * before / g.sum(-1, keepdims=True)


def aligned_window_clip(window_gain, log_mean, log_var, reward_std, length, group_size, clip_low, clip_high,
                        positive_share, negative_share) -> tuple[ClipFractions, np.ndarray]:
    """The self-consistent clip fractions of a refresh window (eqs. 4 and 5): c_j = (4) at Delta R_j,
    Delta R_j = (5) with g = 1 - c.

    window_gain = Gamma, (...,); every other array argument is per step, (..., T) with window
    position j last (E[log s], Var[log s], sigma_r, q+, q- of the update at position j). Returns the
    ClipFractions and Delta R, each (..., T). The map is iterated (damped, then averaged: see
    DAMPED_ITERATIONS) until no c_j moves by more than FIXED_POINT_TOL, MAX_ITERATIONS at most.
    """
    gain = _real("window gain", window_gain)
    shape = np.broadcast_shapes(np.shape(log_mean), np.shape(log_var), np.shape(reward_std),
                                np.shape(positive_share), np.shape(negative_share), gain.shape + (1,))

    def fractions(clip_share):
        delta = np.broadcast_to(window_reward_gains(gain, 1.0 - clip_share), shape)
        return aligned_clip_fractions(log_mean, log_var, delta, reward_std, length, group_size, clip_low,
                                      clip_high, positive_share, negative_share), delta

    c = np.zeros(shape)
    for k in range(MAX_ITERATIONS):
        fr, _ = fractions(c)
        step = 0.5 if k < DAMPED_ITERATIONS else 1.0 / (k - DAMPED_ITERATIONS + 2)
        new = c + step * (np.clip(fr.total, 0.0, 1.0) - c)
        settled = np.max(np.abs(new - c), initial=0.0) <= FIXED_POINT_TOL
        c = new
        if settled:
            break
    return fractions(c)
