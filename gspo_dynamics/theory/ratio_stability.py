"""Stability of the stale update per off-policy correction: none, token ratio, sequence ratio.

The linearised update of `linear` has a stale stiffness a (forces computed at the sampling
policy, frozen for T steps) and a fresh stiffness b; the stale drive makes a sharp
refresh-interval threshold (`linear.critical_refresh_interval`). What an importance ratio does
to (a, b), to first order in the staleness x - x_s:

1. Exact ratio, unclipped: E_{pi_s}[w A grad log pi] = E_pi[A grad log pi], the current-policy
   gradient, so the staleness delay disappears in expectation. With the group-mean baseline the
   stale baseline drops out too (E_pi[grad log pi] = 0), so a = 0: `bandit.stiffness_partials`
   with correction "token" gives a_full = 0 for the mean baseline at any G. What is left is
   (ii) the stale group normaliser: with the std advantage A / std_s, a_full != 0
   (`bandit_partials`). The exact ratio is the token ratio on a bandit (L = 1) and the full
   product prod_t w_t on sequences.

2. Share of the first-order correction a ratio delivers, kappa (`correction_share`). Write the
   first-order weight as rho - 1 = sum_u c_u (delta_u(y_u) - E delta_u); the exact ratio has
   c_u = 1. For the gradient of position t with a reward additive over independent positions
   only the u = t term carries staleness (cross terms factor into E[grad log pi] = 0), so

       none: kappa = 0     token (c_t = 1): kappa = 1     sequence (c_u = 1/L): kappa = 1/L

   GSPO's length-normalised geometric mean corrects only 1/L of the staleness, and to first order
   F_kappa = F_none + kappa (F_full - F_none):  a_kappa = (1 - kappa) a_none + kappa a_full, same
   for b. (For rewards coupling positions, e.g. exact match, the token ratio also leaves the
   cross-position share stale; kappa_token < 1 then.)

3. (i) Clipping. A clipped sample loses its correction. With c the clipped share of the expected
   gradient (`ratios.clipped_gradient_fraction`) the drive is modelled as the mixture
   (1 - c) F_kappa + c F_clipped, where the clipped share is either applied uncorrected
   (clip_mode "stale": the truncated-IS / CISPO reading, weight clip(w) ~ 1) or dropped
   (clip_mode "drop": the PPO min, gradient 0). Then, with the KL force always fresh,

       stale:  a_eff = (1 - c) a_kappa + c a_none      drop:  a_eff = (1 - c) a_kappa
       both:   b_eff = b_none + (1 - c)(b_kappa - b_none)      (b_none is the KL part alone)

   For the token ratio with the mean baseline, a_eff = c a_none ("stale"): the effective stale
   stiffness is the stale stiffness times the clipped fraction. The approximation neglects the
   dependence of c on the deviation x itself (boundary terms of the clip indicator) and treats c
   as a property of the window position j only: c_j grows with the staleness j (c_0 = 0).

The threshold (`critical_refresh_interval_ratio`) is then the exact monodromy of the periodic
system with phase-dependent stiffness (a_j, b_j), j = 0..T-1; the gradient-noise temperature fed
to `fluctuations` is multiplied by the window-averaged E[rho^2 1{kept}] (`noise_temperature_factor`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory import ratios
from gspo_dynamics.theory.bandit import TwoArmBandit, stiffness_partials
from gspo_dynamics.theory.hyperparams import CORRECTIONS, Hyperparams
from gspo_dynamics.theory.linear import RHO_TOL, STABLE, spectral_radius, step_matrix

CLIP_MODES: tuple[str, ...] = ("stale", "drop")
_E1 = np.array([1.0, 0.0])  # the refresh x_s <- x adds the x_s column to the x column


def _correction(correction: str) -> str:
    if correction not in CORRECTIONS:
        raise ConfigError(f"correction must be one of {', '.join(CORRECTIONS)}; got {correction!r}")
    return correction


def correction_share(correction: str, length=1) -> np.ndarray:
    """kappa: the share of the first-order staleness correction a ratio delivers (module docstring).

    none: 0;  token: 1;  sequence: 1/L  (rewards additive over independent positions).
    """
    L = ratios._integer("length", length, 1).astype(float)
    shares = {"none": 0.0 * L, "token": np.ones_like(L), "sequence": 1.0 / L}
    return shares[_correction(correction)]


def effective_stiffness(stale_none, fresh_none, stale_full, fresh_full, share, clipped_fraction,
                        clip_mode: str = "stale") -> tuple[np.ndarray, np.ndarray]:
    """(a_eff, b_eff) of the clipped, partially corrected update (module docstring, item 3).

    stale_none, fresh_none = (a, b) without correction; stale_full, fresh_full = (a, b) with the
    exact ratio (`bandit_partials` gives all four on the bandit); share = kappa in [0, 1];
    clipped_fraction = c in [0, 1]. kappa = 1, c = 0 returns the fully corrected pair; c = 1
    returns (a_none, b_none) with clip_mode "stale".
    """
    if clip_mode not in CLIP_MODES:
        raise ConfigError(f"clip mode must be one of {', '.join(CLIP_MODES)}; got {clip_mode!r}")
    k = ratios._real("correction share", share, 0.0, 1.0)
    c = ratios._real("clipped fraction", clipped_fraction, 0.0, 1.0)
    a_n, b_n, a_f, b_f = (np.asarray(v, dtype=float) for v in (stale_none, fresh_none, stale_full, fresh_full))
    a_k = (1.0 - k) * a_n + k * a_f
    b_k = (1.0 - k) * b_n + k * b_f
    a_eff = (1.0 - c) * a_k + (c * a_n if clip_mode == "stale" else 0.0)
    b_eff = b_n + (1.0 - c) * (b_k - b_n)
    return a_eff, b_eff


def bandit_partials(z_star, bandit: TwoArmBandit, hp: Hyperparams) -> tuple[float, float, float, float]:
    """(a_none, b_none, a_full, b_full) at z = z_s = z_star: `bandit.stiffness_partials` without
    correction and with the exact ratio. a_full = 0 for the mean baseline (the staleness is removed
    in expectation); a_full != 0 with the std normaliser (the stale group std)."""
    a_n, b_n = stiffness_partials(z_star, bandit, replace(hp, correction="none"))
    a_f, b_f = stiffness_partials(z_star, bandit, replace(hp, correction="token"))
    return a_n, b_n, a_f, b_f


def window_clipped_fraction(correction: str, drift, window_position, length=1, *, clip_low, clip_high,
                            noise_drift=0.0, positive_share=0.5) -> np.ndarray:
    """c_j: the clipped share of the expected gradient at window position j; 0 for "none"."""
    if _correction(correction) == "none":
        return np.zeros(np.broadcast_shapes(np.shape(drift), np.shape(window_position), np.shape(length)))
    mu, v = ratios.log_ratio_moments(correction, drift, window_position, length, noise_drift)
    return ratios.clipped_gradient_fraction(mu, v, clip_low, clip_high, positive_share)


def noise_temperature_factor(correction: str, drift, refresh_interval: int, length=1, *, clip_low=None,
                             clip_high=None, noise_drift=0.0, positive_share=0.5) -> np.ndarray:
    """(1/T) sum_{j<T} E[rho_j^2 1{kept}]: the factor on the on-policy per-step noise variance
    (`fluctuations.gradient_noise_variance`) for a refresh interval T; 1 for "none" (no ratio).
    clip_low = clip_high = None: unclipped, E[rho_j^2] (`ratios.noise_multiplier`).

    The window average stands in for the phase-dependent noise of `fluctuations` (which takes one
    sigma^2 per step). The token ratio raises the noise (E[w^2] = e^{sigma^2}); the sequence ratio's
    E[s^2] = exp(sigma^2 (2 - L) / L) is below 1 for L > 2, and clipping lowers both.
    """
    T = int(ratios._integer("refresh interval", refresh_interval, 1))
    if _correction(correction) == "none":
        return np.ones(np.broadcast_shapes(np.shape(drift), np.shape(length)))
    ndim = len(np.broadcast_shapes(*(np.shape(x) for x in (drift, length, noise_drift, clip_low, clip_high,
                                                            positive_share))))
    j = np.arange(T).reshape((T,) + (1,) * ndim)  # (T, 1, ...): window positions on a new leading axis
    mu, v = ratios.log_ratio_moments(correction, drift, j, length, noise_drift)
    return ratios.noise_multiplier(mu, v, clip_low, clip_high, positive_share).mean(axis=0)


def critical_refresh_interval_ratio(stale_none, fresh_none, stale_full, fresh_full, lr, momentum, *,
                                    correction: str, drift, length=1, clip_low, clip_high, noise_drift=0.0,
                                    positive_share=0.5, clip_mode: str = "stale", t_max: int = 10_000) -> np.ndarray:
    """Smallest T in [1, t_max] whose one-period map is unstable (rho > 1 + RHO_TOL); STABLE (0) if none.

    Step j of a period uses (a_j, b_j) = `effective_stiffness(..., correction_share(correction, L),
    c_j)` with c_j = `window_clipped_fraction(j)`: the step matrices differ by phase, but c_j does
    not depend on T, so the product P_T = S_{T-1} ... S_0 is accumulated once while T is scanned,
    and M(T) = P_T[:2, :2] + P_T[:2, 2] e1^T (the refresh x_s <- x, as in `linear.monodromy`).
    With drift = 0 (no clipping) or correction "none" this is `linear.critical_refresh_interval`
    at the constant (a_kappa, b_kappa). Broadcasts over all array arguments.
    """
    t_max = int(ratios._integer("t_max", t_max, 1))
    share = correction_share(correction, length)
    shape = np.broadcast_shapes(*(np.shape(x) for x in (stale_none, fresh_none, stale_full, fresh_full, lr,
                                                        momentum, drift, length, clip_low, clip_high,
                                                        noise_drift, positive_share)))
    P = np.broadcast_to(np.eye(3), shape + (3, 3)).copy()
    result = np.full(shape, STABLE, dtype=np.int64)
    pending = np.ones(shape, dtype=bool)
    for j in range(t_max):
        c_j = window_clipped_fraction(correction, drift, j, length, clip_low=clip_low, clip_high=clip_high,
                                      noise_drift=noise_drift, positive_share=positive_share)
        a_j, b_j = effective_stiffness(stale_none, fresh_none, stale_full, fresh_full, share, c_j, clip_mode)
        P = step_matrix(a_j, b_j, lr, momentum) @ P  # (..., 3, 3)
        monodromy = P[..., :2, :2] + P[..., :2, 2:3] * _E1  # (..., 2, 2)
        unstable = spectral_radius(monodromy) > 1.0 + RHO_TOL
        hit = pending & unstable
        result[hit] = j + 1
        pending &= ~hit
        if not pending.any():
            break
    return result


def bandit_critical_refresh_interval(z_star, bandit: TwoArmBandit, hp: Hyperparams, *, drift, length=1,
                                     noise_drift=0.0, positive_share=0.5, clip_mode: str = "stale",
                                     t_max: int = 10_000) -> np.ndarray:
    """`critical_refresh_interval_ratio` with the bandit's partials at z_star and hp's correction,
    clip range, lr and momentum (heavy-ball SGD; use `hyperparams.effective_sgd` for Adam first)."""
    if not isinstance(hp, Hyperparams):
        raise ConfigError(f"hp must be a Hyperparams, got {hp!r}")
    a_n, b_n, a_f, b_f = bandit_partials(z_star, bandit, hp)
    return critical_refresh_interval_ratio(
        a_n, b_n, a_f, b_f, hp.lr, hp.momentum, correction=hp.correction, drift=drift, length=length,
        clip_low=hp.clip_low, clip_high=hp.clip_high, noise_drift=noise_drift, positive_share=positive_share,
        clip_mode=clip_mode, t_max=t_max)
