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

4. The law of the ratio that gives c_j and E[rho_j^2 1{kept}] (LAWS):
   "lognormal": the memoryless drift of `ratios`, log rho ~ N(-sigma_j^2/2, sigma_j^2) with
       sigma_j^2 = (j d)^2 + j n^2 from the inputs (drift d, noise_drift n): no restoring force, no
       clip feedback, advantage sign independent of the ratio (positive share q).
   "walk": the clip-aware walk. On the two-armed bandit (L = 1) it is `bandit_ratio_walk`: the law
       of D_j = z_j - z_s stepped with the exact clipped force and the exact lattice of the group
       gradient from hp (lr, momentum: a walk on (D, u), G, num_groups, advantage, KL), at z_s = z*
       (the local model; an optional sampling_spread mixes over z_s around z*). It is the default of
       the `bandit_*` functions. Checked against the bandit simulator (paper_repro/bandit_ratio_walk.py):
       with the linear theory's sampling spread, Var[log w_j] within 15% and c_j within 0.015 where
       the memoryless lognormal misses the variance by up to a factor 18 (it has no restoring force)
       and c_j by up to 0.22.
       On a tabular policy the walk of `ratio_drift` (token clipping, the GRPO update) gives the
       per-class laws of log w_t; `tabular_clipped_fractions` and `tabular_noise_temperature_factor`
       read the token ratio's c_j and E[rho^2 1{kept}] from them, with the advantage's sign that of
       the class (not independent of the ratio); c_j enters `critical_refresh_interval_ratio` as
       clipped_fractions. GSPO's sequence clip acts on log s, whose walls the token walk does not
       have: for the sequence ratio the lognormal law (or the walk's log s law without its own
       feedback) is what there is.
   Clip modes map onto the walk's dynamics: "drop" (PPO min: GRPO, GSPO, DAPO) is the walk with
   soft walls (a sample past its bound stops pushing); "stale" (CISPO's capped, detached weight)
   has no wall: the capped weight keeps pushing, so the ratio drifts as unclipped with the push
   capped at 1 + eps_high, and c_j counts the weights the cap changes.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory import ratios
from gspo_dynamics.theory.bandit import TwoArmBandit, sigmoid, stiffness_partials
from gspo_dynamics.theory.bandit_ratio_walk import bandit_noise_drift, bandit_ratio_walk
from gspo_dynamics.theory.ratio_drift import LogRatioLaw, SignedAdvantage
from gspo_dynamics.theory.hyperparams import CORRECTIONS, Hyperparams
from gspo_dynamics.theory.linear import RHO_TOL, STABLE, spectral_radius, step_matrix

CLIP_MODES: tuple[str, ...] = ("stale", "drop")
LAWS: tuple[str, ...] = ("walk", "lognormal")  # module docstring, item 4
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
                                    correction: str, drift=None, length=1, clip_low=None, clip_high=None,
                                    noise_drift=0.0, positive_share=0.5, clip_mode: str = "stale",
                                    clipped_fractions=None, t_max: int = 10_000) -> np.ndarray:
    """Smallest T in [1, t_max] whose one-period map is unstable (rho > 1 + RHO_TOL); STABLE (0) if none.

    Step j of a period uses (a_j, b_j) = `effective_stiffness(..., correction_share(correction, L),
    c_j)`: the step matrices differ by phase, but c_j does not depend on T, so the product
    P_T = S_{T-1} ... S_0 is accumulated once while T is scanned, and M(T) = P_T[:2, :2] +
    P_T[:2, 2] e1^T (the refresh x_s <- x, as in `linear.monodromy`). c_j comes from one of
    (exactly one given):
      drift (with clip_low, clip_high, noise_drift, positive_share): the lognormal law,
          c_j = `window_clipped_fraction(j)`;
      clipped_fractions: c_j given, an array (J, ...) over j = 0..J-1 (e.g. a walk's
          `clipped_fraction()`), its last row held for j >= J (a stationary law).
    With drift = 0 (no clipping) or correction "none" this is `linear.critical_refresh_interval`
    at the constant (a_kappa, b_kappa). Broadcasts over all array arguments.
    """
    t_max = int(ratios._integer("t_max", t_max, 1))
    share = correction_share(correction, length)
    if (drift is None) == (clipped_fractions is None):
        raise ConfigError("give exactly one of drift (the lognormal law) and clipped_fractions (c_j given)")
    if drift is not None and (clip_low is None or clip_high is None):
        raise ConfigError(f"the lognormal law needs clip_low and clip_high, got {clip_low!r}, {clip_high!r}")
    if clipped_fractions is not None:
        given = ratios._real("clipped fraction", clipped_fractions, 0.0, 1.0)
        if given.ndim == 0 or given.shape[0] < 1:
            raise ConfigError(f"clipped_fractions must be an array (J, ...) with J >= 1, got shape {given.shape}")
        if _correction(correction) == "none":
            given = np.zeros_like(given)

        def clipped(j):
            return given[min(j, given.shape[0] - 1)]
        law_shapes = [given.shape[1:]]
    else:
        def clipped(j):
            return window_clipped_fraction(correction, drift, j, length, clip_low=clip_low, clip_high=clip_high,
                                           noise_drift=noise_drift, positive_share=positive_share)
        law_shapes = [np.shape(x) for x in (drift, clip_low, clip_high, noise_drift, positive_share)]
    shape = np.broadcast_shapes(*(np.shape(x) for x in (stale_none, fresh_none, stale_full, fresh_full, lr,
                                                        momentum, length)), *law_shapes)
    P = np.broadcast_to(np.eye(3), shape + (3, 3)).copy()
    result = np.full(shape, STABLE, dtype=np.int64)
    pending = np.ones(shape, dtype=bool)
    for j in range(t_max):
        a_j, b_j = effective_stiffness(stale_none, fresh_none, stale_full, fresh_full, share, clipped(j), clip_mode)
        P = step_matrix(a_j, b_j, lr, momentum) @ P  # (..., 3, 3)
        monodromy = P[..., :2, :2] + P[..., :2, 2:3] * _E1  # (..., 2, 2)
        unstable = spectral_radius(monodromy) > 1.0 + RHO_TOL
        hit = pending & unstable
        result[hit] = j + 1
        pending &= ~hit
        if not pending.any():
            break
    return result


def _window_law(law: LogRatioLaw) -> int:
    if not isinstance(law, LogRatioLaw) or law.window != tuple(range(1, len(law.window) + 1)):
        raise ConfigError("need a LogRatioLaw over the window positions 1..J (clipped_log_ratio_law(window=range(1, J + 1)))")
    return len(law.window)


def tabular_clipped_fractions(law: LogRatioLaw, probs, advantage: SignedAdvantage, *, clip_low: float, clip_high: float,
                              clip_mode: str = "drop") -> np.ndarray:
    """c_j for j = 0..J of the token ratio from the tabular walk, (J + 1,): c_0 = 0 (w = 1 at the
    refresh), then `LogRatioLaw.token_clip_readouts` (law computed with keep_classes=True over the
    window 1..J; "drop" with the clipped law, "stale" with the unclipped one: CISPO has no wall)."""
    _window_law(law)
    c = law.token_clip_readouts(probs, advantage, clip_low, clip_high, clip_mode)["clipped_fraction"]
    return np.concatenate([[0.0], c])


def tabular_noise_temperature_factor(law: LogRatioLaw, probs, advantage: SignedAdvantage, refresh_interval: int, *,
                                     clip_low: float, clip_high: float, clip_mode: str = "drop") -> float:
    """(1/T) sum_{j<T} E[rho_j^2 1{kept}] of the token ratio from the tabular walk (j = 0 contributes 1)."""
    T = int(ratios._integer("refresh interval", refresh_interval, 1))
    J = _window_law(law)
    if T - 1 > J:
        raise ConfigError(f"the walk covers j <= {J}; refresh interval {T} needs j <= {T - 1}")
    noise = law.token_clip_readouts(probs, advantage, clip_low, clip_high, clip_mode)["noise_factor"]
    return float(np.concatenate([[1.0], noise[: T - 1]]).mean())


def _law(law, drift) -> str:
    """law None: "lognormal" when a drift is given (its only input), else "walk" (the default)."""
    law = ("lognormal" if drift is not None else "walk") if law is None else law
    if law not in LAWS:
        raise ConfigError(f"law must be one of {', '.join(LAWS)}; got {law!r}")
    if law == "walk" and drift is not None:
        raise ConfigError("drift is the lognormal law's input; the walk derives its steps from hp (give law='lognormal')")
    return law


def _bandit_lognormal_inputs(z_star, bandit: TwoArmBandit, hp: Hyperparams, drift, noise_drift, positive_share):
    """(d, n, q) for the lognormal law on the bandit: as given, or from hp where drift is None:
    d = 0 (the expected step vanishes at z*), n = `bandit_ratio_walk.bandit_noise_drift`,
    q = 1 - p* (the share of the ratio-weighted gradient that A > 0 samples carry: (1 - p) m vs p m)."""
    if drift is not None:
        return drift, noise_drift, 0.5 if positive_share is None else positive_share
    q = 1.0 - float(sigmoid(z_star)) if positive_share is None else positive_share
    return 0.0, bandit_noise_drift(z_star, bandit, hp), q


def bandit_clipped_fractions(z_star, bandit: TwoArmBandit, hp: Hyperparams, window: int, *, law=None, drift=None,
                             noise_drift=0.0, positive_share=None, clip_mode: str = "drop",
                             sampling_spread: float = 0.0) -> np.ndarray:
    """c_j for j = 0..window-1 on the bandit at z_star, (window,); zeros for correction "none".

    law "walk" (the default): `BanditRatioWalk.clipped_fraction` of `bandit_ratio_walk(z_star, bandit,
    hp, window, clip_mode, sampling_spread)`. law "lognormal": `window_clipped_fraction` with the
    inputs of `_bandit_lognormal_inputs` (drift given: as given, positive share 1/2 unless given).
    """
    law = _law(law, drift)
    J = int(ratios._integer("window", window, 1))
    if _correction(hp.correction) == "none":
        return np.zeros(J)
    if law == "walk":
        return bandit_ratio_walk(z_star, bandit, hp, J, clip_mode=clip_mode,
                                 sampling_spread=sampling_spread).clipped_fraction()
    d, n, q = _bandit_lognormal_inputs(z_star, bandit, hp, drift, noise_drift, positive_share)
    return window_clipped_fraction(hp.correction, d, np.arange(J), clip_low=hp.clip_low, clip_high=hp.clip_high,
                                   noise_drift=n, positive_share=q)


def bandit_noise_temperature_factor(z_star, bandit: TwoArmBandit, hp: Hyperparams, *, law=None, drift=None,
                                    noise_drift=0.0, positive_share=None, clip_mode: str = "drop",
                                    sampling_spread: float = 0.0) -> float:
    """(1/T) sum_{j<T} E[rho_j^2 1{kept}] on the bandit, T = hp.refresh_interval; 1 for "none".

    law "walk": E[h(D_j)^2] of `bandit_ratio_walk` (the step noise is sigma^2 h^2, exactly);
    law "lognormal": `noise_temperature_factor` with `_bandit_lognormal_inputs`.
    """
    law = _law(law, drift)
    T = hp.refresh_interval
    if _correction(hp.correction) == "none":
        return 1.0
    if law == "walk":
        walk = bandit_ratio_walk(z_star, bandit, hp, T, clip_mode=clip_mode, sampling_spread=sampling_spread)
        return float(walk.noise_factor().mean())
    d, n, q = _bandit_lognormal_inputs(z_star, bandit, hp, drift, noise_drift, positive_share)
    return float(noise_temperature_factor(hp.correction, d, T, clip_low=hp.clip_low, clip_high=hp.clip_high,
                                          noise_drift=n, positive_share=q))


def bandit_critical_refresh_interval(z_star, bandit: TwoArmBandit, hp: Hyperparams, *, drift=None, length=1,
                                     noise_drift=0.0, positive_share=None, clip_mode: str | None = None,
                                     law=None, sampling_spread: float = 0.0, t_max: int = 10_000) -> np.ndarray:
    """`critical_refresh_interval_ratio` with the bandit's partials at z_star and hp's correction,
    clip range, lr and momentum (heavy-ball SGD; use `hyperparams.effective_sgd` for Adam first).

    law (module docstring, item 4): None picks "lognormal" when drift is given (as before: c_j from
    `window_clipped_fraction` with drift, length, noise_drift, positive_share (default 1/2)), else
    "walk": c_j = `bandit_clipped_fractions` for j < t_max from hp alone (L = 1; a stationary law
    is held). "lognormal" without drift takes its inputs from hp (`_bandit_lognormal_inputs`).
    clip_mode None: "drop" for the walk (the PPO min of the bandit simulator's GRPO loss), "stale"
    for the lognormal law (its former default).
    """
    if not isinstance(hp, Hyperparams):
        raise ConfigError(f"hp must be a Hyperparams, got {hp!r}")
    law = _law(law, drift)
    mode = ("drop" if law == "walk" else "stale") if clip_mode is None else clip_mode
    t_max = int(ratios._integer("t_max", t_max, 1))
    a_n, b_n, a_f, b_f = bandit_partials(z_star, bandit, hp)
    common = dict(correction=hp.correction, clip_mode=mode, t_max=t_max)
    if law == "walk" or drift is None:
        if law == "walk" and np.any(np.asarray(length) != 1):
            raise ConfigError(f"the bandit walk has one position (L = 1), got length={length!r}")
        c = bandit_clipped_fractions(z_star, bandit, hp, t_max, law=law, positive_share=positive_share,
                                     clip_mode=mode, sampling_spread=sampling_spread)
        return critical_refresh_interval_ratio(a_n, b_n, a_f, b_f, hp.lr, hp.momentum, clipped_fractions=c,
                                               length=length, **common)
    return critical_refresh_interval_ratio(
        a_n, b_n, a_f, b_f, hp.lr, hp.momentum, drift=drift, length=length, clip_low=hp.clip_low,
        clip_high=hp.clip_high, noise_drift=noise_drift, positive_share=0.5 if positive_share is None else positive_share,
        **common)
