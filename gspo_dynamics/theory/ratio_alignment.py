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
At j = 0 the ratio is 1 and nothing is clipped, so that step pushes along the reward gradient.
At j >= 1 GSPO's clip (eps -> 0) drops every sample whose log s moved with its advantage; for a
linear response log s_i = phi_i . dtheta / L the kept ones have A_i phi_i . dtheta < 0, so the
kept gradient has no positive projection on the update so far (taken as zero: measured on the
tiny transformer, the exact IS estimate of Delta R_j follows the profile below within ~10%). The
optimizer's first moment (heavy-ball mu, or Adam's beta1; the second moment is steady over a
window) carries the j = 0 push: along the reward gradient its projection a_k obeys
a_0 = mu a_{T-1} + (1 - mu) push, a_k = mu a_{k-1}, whose periodic solution is a_k ~ mu^k, so

    Delta R_j = Gamma sum_{k<j} mu^k / sum_{k<T} mu^k = Gamma (1 - mu^j) / (1 - mu^T)       (5)

(mu = 0: the whole gain at the first step). It ignores the second-order terms of (1) (measured
L Cov exceeds the exact IS estimate of Delta R by ~10% at the window's end) and that the two signs'
within-sign spreads differ (the A < 0 responses, of less likely tokens, spread ~2x wider on the
tiny transformer); both are stated where the prediction is compared.

All functions broadcast their array arguments (numpy float64). No torch.
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory.ratios import ClipFractions, _clip_range, _integer, _log_tail, _real


def reward_aligned_shift(reward_gain, reward_std, length, group_size) -> np.ndarray:
    """M = Delta R sqrt((G - 1) / G) / (L sigma_r) = b rms(D) (eq. 2): the scale of the shifts of
    log s towards the sign of A.

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


def momentum_window_gains(window_gain, momentum, refresh_interval) -> np.ndarray:
    """Delta R_j = Gamma (1 - mu^j) / (1 - mu^T), j = 0..T-1 (eq. 5), shape (..., T).

    window_gain = Gamma (...,), the reward gained over a whole window; momentum = mu in [0, 1), the
    optimizer's first-moment decay (SGD's heavy ball, Adam's beta1); refresh_interval = T.
    """
    gain = _real("window gain", window_gain)
    mu = _real("momentum", momentum, 0.0, 1.0, hi_open=True)
    T = int(_integer("refresh interval", refresh_interval, 1))
    j = np.arange(T, dtype=float)
    share = (1.0 - mu**j) / (1.0 - mu**T)  # (T,) sum_{k<j} mu^k / sum_{k<T} mu^k
    return gain[..., None] * share
