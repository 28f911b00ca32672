"""Token-level vs sequence-level importance ratios under staleness, for a tabular per-position policy.

Model. A response y = (y_1..y_L) is drawn from the sampling policy pi_s; position t has its own
categorical over V tokens with logits theta_t (no sharing between positions). SGD changes the
logits every step; at window position j (0..T-1, T the refresh interval) the current policy
pi_j differs from pi_s by j steps, delta_t = theta_{j,t} - theta_{s,t}. The token log-ratio is

    log w_t = log pi_j(y_t) - log pi_s(y_t) = delta_t(y_t) - log E_{pi_s}[exp delta_t],   y_t ~ pi_s,

so E_s[w_t] = 1 exactly, E_s[log w_t] = -KL(pi_s || pi_j) <= 0, and to leading order in delta

    sigma^2 = Var_{y ~ pi_s}[delta_t(y) - E_{pi_s} delta_t],    E_s[log w_t] = -sigma^2 / 2.

Drift (the modelling input). The per-step logit change at a position has a coherent part of
centred std `drift` (d, the same direction every step: the mean update) and an independent part
of centred std `noise_drift` (n, fresh minibatch noise every step), both measured under pi_s:

    sigma^2(j) = (j d)^2 + j n^2.

A batch reused for several steps (TRL's num_iterations > 1) repeats its noise: count it in d.
Both scale linearly with the learning rate; `tabular_noise_drift` derives n from lr and the
advantage model for the tabular policy. The drift has no memory of the clip: valid while the
ratios stay inside the clip range (sigma << eps). Under a PPO-clipped update a token past a bound
stops being pushed outward and the spread saturates (measured: half of sigma^2(8) when sigma(8) =
eps_low); `ratio_drift` follows that walk. The advantage's sign is not independent of the ratio
either (the update raises positive-advantage samples): `sign_shift`, `signed_clip_fractions`; for
GSPO's eps ~ 0, where that alignment sets the whole clip fraction, `ratio_alignment` predicts it
from the reward gained since the refresh.
The log-ratio is modelled as normal, log w ~ N(-sigma^2/2,
sigma^2) (w lognormal with E[w] = 1): exact when delta(y), y ~ pi_s, is Gaussian, leading order
(second cumulant) otherwise.

Ratios.  token (GRPO):       rho = w_t,                       log rho ~ N(-sigma^2/2, sigma^2)
         sequence (GSPO):    rho = s = exp((1/L) sum_t log w_t),  log s ~ N(-sigma^2/2, sigma^2/L)
(positions independent; with position-dependent sigma_t^2 use their mean). Note E[s] =
exp(-sigma^2 (L-1) / (2L)) < 1: the geometric mean is biased low, so at large L the sequence
ratio sits below 1 by ~sigma^2/2 while its spread shrinks like sigma / sqrt(L).

Clipping (PPO sign conditions): a sample with A > 0 is clipped when rho > 1 + eps_high, one with
A < 0 when rho < 1 - eps_low. The advantage sign is modelled independent of the ratio (exact for
the noise part of the drift; the coherent part raises ratios of A > 0 samples), with a share q of
positive advantages (q = 1/2 for symmetric signs). The names follow `objectives` metrics:
low = losses/clip_frac_low = (1 - q) P(rho < 1 - eps_low), high = q P(rho > 1 + eps_high).

All functions broadcast their array arguments (numpy float64) and never loop over configurations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.special import log_ndtr

from gspo_dynamics._errors import ConfigError

# GRPO/DAPO clip range (Shao et al. 2024; DAPO's clip-higher, Yu et al. 2025, arXiv 2503.14476).
GRPO_CLIP = (0.2, 0.28)  # (eps_low, eps_high)
# GSPO's sequence-level clip range (Zheng et al. 2025, arXiv 2507.18071): the ratio is a
# length-normalised geometric mean, so its natural scale is ~sigma / sqrt(L), not sigma.
GSPO_CLIP = (3e-4, 4e-4)  # (eps_low, eps_high)
# Probabilities must sum to one along the vocabulary axis to this tolerance.
PROB_SUM_TOL = 1e-9


# --- convert, then check -------------------------------------------------------------------


def _real(name: str, value, lo: float = -np.inf, hi: float = np.inf, lo_open=False, hi_open=False) -> np.ndarray:
    x = np.asarray(value, dtype=float)
    bad = ~np.isfinite(x) | (x <= lo if lo_open else x < lo) | (x >= hi if hi_open else x > hi)
    if bad.any():
        if np.isinf(hi):
            expected = f"{'>' if lo_open else '>='} {lo:g}"
        else:
            expected = f"in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        raise ConfigError(f"{name} must be a finite number {expected}, got {float(x[bad].flat[0])!r}")
    return x


def _integer(name: str, value, minimum: int) -> np.ndarray:
    x = np.asarray(value)
    if x.dtype == bool or not (np.issubdtype(x.dtype, np.integer) or (np.issubdtype(x.dtype, np.floating)
                                                                     and np.all(np.isfinite(x)) and np.all(x == np.round(x)))):
        raise ConfigError(f"{name} must be an integer (or integer array) >= {minimum}, got {value!r}")
    x = x.astype(np.int64)
    if (x < minimum).any():
        raise ConfigError(f"{name} must be >= {minimum}, got {x[x < minimum].flat[0]}")
    return x


def _clip_range(clip_low, clip_high) -> tuple[np.ndarray, np.ndarray]:
    return (_real("clip_low", clip_low, 0.0, 1.0, lo_open=True, hi_open=True),
            _real("clip_high", clip_high, 0.0, lo_open=True))


# --- the log-ratio model -------------------------------------------------------------------


def log_ratio_variance(drift, window_position, noise_drift=0.0) -> np.ndarray:
    """sigma^2(j) = (j d)^2 + j n^2: Var_{y~pi_s}[log w_t] at window position j (module docstring).

    drift = d, centred std of the coherent per-step logit change; noise_drift = n, that of the
    independent per-step change; window_position = j (0 right after a refresh: w = 1).
    """
    d = _real("drift", drift, 0.0)
    n = _real("noise_drift", noise_drift, 0.0)
    j = _integer("window position", window_position, 0).astype(float)
    return (j * d) ** 2 + j * n**2


def _token_log_moments(sigma2, length):
    return -0.5 * sigma2, sigma2 * np.ones_like(length, dtype=float)


def _sequence_log_moments(sigma2, length):
    return -0.5 * sigma2 * np.ones_like(length, dtype=float), sigma2 / length


# Registry: ratio level -> (sigma^2, L) -> (E[log rho], Var[log rho]).
_LEVELS: dict[str, Callable] = {"token": _token_log_moments, "sequence": _sequence_log_moments}
LEVELS: tuple[str, ...] = tuple(_LEVELS)


def log_ratio_moments(level: str, drift, window_position, length=1, noise_drift=0.0) -> tuple[np.ndarray, np.ndarray]:
    """(E[log rho], Var[log rho]) of the token ratio w_t or the GSPO sequence ratio s.

        token:     (-sigma^2 / 2, sigma^2)          sequence:  (-sigma^2 / 2, sigma^2 / L)

    sigma^2 = `log_ratio_variance(drift, window_position, noise_drift)`; length = L >= 1.
    """
    if level not in _LEVELS:
        raise ConfigError(f"ratio level must be one of {', '.join(LEVELS)}; got {level!r}")
    sigma2 = log_ratio_variance(drift, window_position, noise_drift)
    L = _integer("length", length, 1).astype(float)
    mean, var = _LEVELS[level](sigma2, L)
    mean, var = np.broadcast_arrays(mean, var)
    return mean.copy(), var.copy()


# --- lognormal statistics ------------------------------------------------------------------


def ratio_moment(log_mean, log_var, k: float) -> np.ndarray:
    """E[rho^k] = exp(k mu + k^2 v / 2) for log rho ~ N(mu, v)."""
    with np.errstate(over="ignore"):
        return np.exp(k * np.asarray(log_mean, dtype=float) + 0.5 * k * k * np.asarray(log_var, dtype=float))


def _log_tail(log_mean, log_var, k: float, bound, below: bool) -> np.ndarray:
    """log P_k(rho < bound) (below) or log P_k(rho > bound) under the k-tilted law N(mu + k v, v).

    E[rho^k 1{rho < bound}] = E[rho^k] P_k(rho < bound) by completing the square; k = 0 is the
    plain probability. In log space (log_ndtr) so that far tails and large sigma neither underflow
    nor make 0 * inf. At v = 0 the ratio is the constant exp(mu), evaluated directly (no 0/0).
    """
    mu, v, lb = np.broadcast_arrays(np.asarray(log_mean, float), np.asarray(log_var, float), np.log(bound))
    sd = np.sqrt(v)
    safe = np.where(sd > 0.0, sd, 1.0)
    z = (lb - mu - k * v) / safe
    point = (mu < lb) if below else (mu > lb)
    with np.errstate(divide="ignore"):
        return np.where(sd > 0.0, log_ndtr(z if below else -z), np.log(point.astype(float)))


def _partial_moment(log_mean, log_var, k: float, bound, below: bool) -> np.ndarray:
    """E[rho^k 1{rho < bound}] (below) or E[rho^k 1{rho > bound}] for log rho ~ N(mu, v)."""
    mu, v = np.asarray(log_mean, float), np.asarray(log_var, float)
    with np.errstate(over="ignore"):  # E[rho^2] = inf for a huge sigma is the answer, not an error
        return np.exp(k * mu + 0.5 * k * k * v + _log_tail(mu, v, k, bound, below))


@dataclass(frozen=True)
class ClipFractions:
    """Expected clip fractions of a ratio rho under the PPO sign conditions; arrays, broadcast shape.

    below, above: P(rho < 1 - eps_low), P(rho > 1 + eps_high) regardless of the advantage sign;
    low, high: the clipped shares of all samples, (1 - q) below and q above (losses/clip_frac_low,
    losses/clip_frac_high), q the share of positive advantages.
    """

    below: np.ndarray
    above: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @property
    def total(self) -> np.ndarray:
        """low + high: the share of samples whose gradient the clip switches off (losses/clip_frac)."""
        return self.low + self.high

    @property
    def region(self) -> np.ndarray:
        """below + above: the share of ratios outside [1 - eps_low, 1 + eps_high]."""
        return self.below + self.above


def clip_fractions(log_mean, log_var, clip_low, clip_high, positive_share=0.5) -> ClipFractions:
    """Clip fractions of log rho ~ N(mu, v):  below = Phi((ln(1 - eps_low) - mu) / sqrt v),
    above = Phi((mu - ln(1 + eps_high)) / sqrt v),  low = (1 - q) below,  high = q above."""
    lo, hi = _clip_range(clip_low, clip_high)
    q = _real("positive_share", positive_share, 0.0, 1.0)
    below = np.exp(_log_tail(log_mean, log_var, 0.0, 1.0 - lo, below=True))
    above = np.exp(_log_tail(log_mean, log_var, 0.0, 1.0 + hi, below=False))
    return ClipFractions(below=below, above=above, low=(1.0 - q) * below, high=q * above)


def sign_shift(total_var, within_var, positive_share, negative_share) -> np.ndarray:
    """m >= 0 of the sign-conditional mixture from its total and within-sign variances.

    The update pushes positive-advantage responses up and negative ones down, so the ratio is not
    independent of the advantage's sign: model log rho | A > 0 ~ N(mu + m, v), log rho | A < 0 ~
    N(mu - m, v), log rho | A = 0 ~ N(mu, v), with shares q+, q-, q0 = 1 - q+ - q-. The law of total
    variance, Var = v + Var(E[log rho | sign]), gives

        m^2 = (Var - v) / ((q+ + q-) - (q+ - q-)^2),

    0 where Var <= v (no excess) or no sample has a nonzero advantage.
    """
    tot, v = _real("total variance", total_var, 0.0), _real("within-sign variance", within_var, 0.0)
    qp, qn = _real("positive_share", positive_share, 0.0, 1.0), _real("negative_share", negative_share, 0.0, 1.0)
    if (qp + qn > 1.0 + 1e-12).any():
        raise ConfigError("positive_share + negative_share must be <= 1")
    spread = (qp + qn) - (qp - qn) ** 2  # Var of the sign's mean offset per unit m^2
    with np.errstate(divide="ignore", invalid="ignore"):
        m2 = np.where(spread > 0.0, np.maximum(tot - v, 0.0) / np.where(spread > 0.0, spread, 1.0), 0.0)
    return np.sqrt(m2)


def signed_clip_fractions(log_mean, within_var, shift, clip_low, clip_high, positive_share,
                          negative_share) -> ClipFractions:
    """PPO clip fractions of the sign-conditional mixture (`sign_shift`): a sample is clipped when
    A > 0 and rho > 1 + eps_high or A < 0 and rho < 1 - eps_low (A = 0 never), so

        high = q+ Phi((mu + m - ln(1 + eps_high)) / sqrt v),   low = q- Phi((ln(1 - eps_low) - mu + m) / sqrt v);

    below, above: P(rho < 1 - eps_low), P(rho > 1 + eps_high) over the whole mixture. m = 0 and
    q+ + q- = 1 is `clip_fractions` at (mu, v).
    """
    lo, hi = _clip_range(clip_low, clip_high)
    qp, qn = _real("positive_share", positive_share, 0.0, 1.0), _real("negative_share", negative_share, 0.0, 1.0)
    m = _real("sign shift", shift, 0.0)
    mu, v = np.asarray(log_mean, float), _real("within-sign variance", within_var, 0.0)
    q0 = np.clip(1.0 - qp - qn, 0.0, 1.0)

    def tail(offset, below):
        bound = 1.0 - lo if below else 1.0 + hi
        return np.exp(_log_tail(mu + offset, v, 0.0, bound, below))

    below = qp * tail(m, True) + qn * tail(-m, True) + q0 * tail(0.0, True)
    above = qp * tail(m, False) + qn * tail(-m, False) + q0 * tail(0.0, False)
    return ClipFractions(below=below, above=above, low=qn * tail(-m, True), high=qp * tail(m, False))


def clipped_gradient_fraction(log_mean, log_var, clip_low, clip_high, positive_share=0.5) -> np.ndarray:
    """Share of the ratio-weighted expected gradient that the clip switches off:

        c = [(1 - q) E[rho 1{rho < 1 - eps_low}] + q E[rho 1{rho > 1 + eps_high}]] / E[rho].

    The stability model (`ratio_stability`) takes this as the fraction of the correction lost.
    """
    lo, hi = _clip_range(clip_low, clip_high)
    q = _real("positive_share", positive_share, 0.0, 1.0)
    # E[rho 1{.}] / E[rho] is the tail probability of the once-tilted law: no division needed.
    return ((1.0 - q) * np.exp(_log_tail(log_mean, log_var, 1.0, 1.0 - lo, below=True))
            + q * np.exp(_log_tail(log_mean, log_var, 1.0, 1.0 + hi, below=False)))


def noise_multiplier(log_mean, log_var, clip_low=None, clip_high=None, positive_share=0.5) -> np.ndarray:
    """Factor on the on-policy gradient-noise variance from the ratio weighting: E[rho^2 1{kept}].

    Unclipped (clip_low = clip_high = None): E[rho^2] = exp(2 mu + 2 v); e^{sigma^2} for the token
    ratio, exp(sigma^2 (2 - L) / L) for the sequence ratio. Clipped samples carry no gradient:
    (1 - q) E[rho^2 1{rho >= 1 - eps_low}] + q E[rho^2 1{rho <= 1 + eps_high}].
    Assumes rho independent of the per-sample on-policy gradient (a weak coupling for one token of
    a long sequence), so E[rho^2 g^2] = E[rho^2] E[g^2].
    """
    if clip_low is None and clip_high is None:
        return ratio_moment(log_mean, log_var, 2.0)
    if clip_low is None or clip_high is None:
        raise ConfigError(f"give both clip_low and clip_high or neither, got clip_low={clip_low!r}, clip_high={clip_high!r}")
    lo, hi = _clip_range(clip_low, clip_high)
    q = _real("positive_share", positive_share, 0.0, 1.0)
    # A < 0 keeps rho >= 1 - eps_low, A > 0 keeps rho <= 1 + eps_high.
    kept_neg = _partial_moment(log_mean, log_var, 2.0, 1.0 - lo, below=False)
    kept_pos = _partial_moment(log_mean, log_var, 2.0, 1.0 + hi, below=True)
    return (1.0 - q) * kept_neg + q * kept_pos


# --- one call for a sweep --------------------------------------------------------------------


@dataclass(frozen=True)
class RatioStatistics:
    """Statistics of one ratio level over a broadcast grid of (drift, j, L, eps, ...)."""

    level: str  # "token" (GRPO's w_t) or "sequence" (GSPO's s)
    log_mean: np.ndarray  # E[log rho] = -sigma^2 / 2 (= -approx KL per token)
    log_var: np.ndarray  # Var[log rho]: sigma^2 (token) or sigma^2 / L (sequence)
    clip: ClipFractions  # expected clip fractions (PPO sign conditions)
    clipped_gradient_fraction: np.ndarray  # share of the expected gradient the clip switches off
    noise_multiplier: np.ndarray  # E[rho^2 1{kept}], factor on the on-policy gradient noise

    @property
    def mean(self) -> np.ndarray:
        """E[rho]: 1 for the token ratio, exp(-sigma^2 (L - 1) / (2 L)) for the sequence ratio."""
        return ratio_moment(self.log_mean, self.log_var, 1.0)

    @property
    def variance(self) -> np.ndarray:
        """Var[rho] = E[rho]^2 (e^v - 1)."""
        return self.mean**2 * np.expm1(self.log_var)

    @property
    def second_moment(self) -> np.ndarray:
        """E[rho^2], the unclipped noise multiplier."""
        return ratio_moment(self.log_mean, self.log_var, 2.0)


def ratio_statistics(level: str, drift, window_position, length=1, *, clip_low, clip_high,
                     noise_drift=0.0, positive_share=0.5) -> RatioStatistics:
    """All statistics of the token (`level="token"`) or sequence ratio, broadcast over the inputs.

    For example `ratio_statistics("sequence", 0.05, j[:, None], L[None, :], clip_low=3e-4,
    clip_high=4e-4)` with j = [1, 4] and L = 1..256 gives (2, 256) arrays. At L = 1 both levels
    coincide.
    """
    mu, v = log_ratio_moments(level, drift, window_position, length, noise_drift)
    return RatioStatistics(
        level=level, log_mean=mu, log_var=v,
        clip=clip_fractions(mu, v, clip_low, clip_high, positive_share),
        clipped_gradient_fraction=clipped_gradient_fraction(mu, v, clip_low, clip_high, positive_share),
        noise_multiplier=noise_multiplier(mu, v, clip_low, clip_high, positive_share),
    )


# --- the drift of a tabular policy under SGD -------------------------------------------------


def score_spread(probs) -> np.ndarray:
    """c(pi) = E_{y'~pi} Var_{y~pi}[1{y = y'} - pi(y)] = S2 - 2 S3 + S2^2,  S_k = sum_y pi(y)^k.

    The centred variance under pi of one sample's logit gradient e_{y'} - pi, averaged over the
    sample; (V - 1) / V^2 for a uniform pi. probs: (..., V), rows summing to 1; returns (...).
    """
    p = np.asarray(probs, dtype=float)
    if p.ndim < 1 or p.shape[-1] < 2:
        raise ConfigError(f"probs must have a vocabulary axis of size >= 2 last, got shape {p.shape}")
    if not np.all(np.isfinite(p)) or (p < 0.0).any() or (np.abs(p.sum(-1) - 1.0) > PROB_SUM_TOL).any():
        raise ConfigError("probs must be finite, non-negative and sum to 1 along the last axis")
    s2, s3 = (p**2).sum(-1), (p**3).sum(-1)
    return s2 - 2.0 * s3 + s2**2


def tabular_noise_drift(lr, probs, batch_size, length, advantage_second_moment=1.0) -> np.ndarray:
    """n = lr sqrt(E[A^2] c(pi) / (N L^2)): per-step centred std of a position's logit change.

    One SGD step on the batch-mean of per-sequence token-mean losses (GRPO; also DAPO and GSPO at
    rho = 1 for equal lengths L) changes position t's logits by

        Delta theta_t = (lr / (N L)) sum_i A_i (e_{y_it} - pi_t).

    If the advantage is independent of the token at position t (noise-dominated, mean-field: one
    token of many barely moves the reward), the samples' terms are uncorrelated with zero mean and
    E Var_{pi}[Delta theta_t] = lr^2 E[A^2] c(pi_t) / (N L^2), with c = `score_spread`. The
    coherent part (the mean update) is the separate `drift` input. E[A^2] = 1 - 1/G for the std
    advantage, p (1 - p)(1 - 1/G) for the mean baseline on binary rewards. probs: (..., V).
    For the i.i.d.-position formulas use the root mean square of the result over positions.
    """
    eta = _real("lr", lr, 0.0, lo_open=True)
    N = _integer("batch size", batch_size, 1).astype(float)
    L = _integer("length", length, 1).astype(float)
    a2 = _real("advantage second moment", advantage_second_moment, 0.0)
    return eta * np.sqrt(a2 * score_spread(probs) / N) / L
