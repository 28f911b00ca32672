"""Train-inference mismatch: the sampler's and the trainer's log-probs of the same tokens, and the
importance weights they imply over a whole completion.

Model. The sampler (vLLM, SGLang) and the trainer (FSDP, Megatron) compute log-probs of the same
sampled token with different kernels and precisions. Per token the mismatch log-ratio is

    delta_t = log pi_train(y_t) - log pi_sampler(y_t),    y_t ~ pi_sampler,

modelled as in `ratios` (its module docstring): delta_t ~ N(-s^2/2, s^2), so that E[exp delta_t] = 1
(a ratio of two normalised distributions), with s the per-token spread; tokens independent. Exact
for Gaussian logit noise, leading order (second cumulant) otherwise; real mismatches are heavier-
tailed (most tokens agree to the last bit, a few disagree a lot), so s read from a mean is a
typical spread, not a tail.

From the metrics trainers log (each an exact identity under the model):

    mean |delta|      (TRL sampling/sampling_logp_difference/mean)   folded normal, `mean_abs_log_ratio`
    E[-delta] = s^2/2 (verl rollout_corr/kl, k1)                      s = sqrt(2 kl)
    E[e^delta - 1 - delta] = s^2/2 (verl rollout_corr/k3_kl)          s = sqrt(2 k3)
    E[e^{2 delta}] - 1 = e^{s^2} - 1 (verl rollout_corr/chi2_token)   s = sqrt(log(1 + chi2))

Over a completion of L tokens the true importance weight is the product w = exp(S),

    S = sum_t delta_t ~ N(-L s^2/2, L s^2):    its spread grows like s sqrt(L),

so however small s is, a long enough completion is off-policy: the weight leaves the band
[1 - eps_low, 1 + eps_high] for most samples once s sqrt(L) passes log(1 + eps), i.e. past

    L* = (log(1 + eps) / (z s))^2        (`leave_length`: the sum's std reaches log(1+eps) / z).

GSPO's length-normalised ratio exp(S / L) has log-mean -s^2/2 and variance s^2 / L: it shrinks with
length instead. A token-level weight exp(delta_t) is the L = 1 case. All functions broadcast their
array arguments (numpy float64) and are torch-free.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr

from gspo_dynamics._errors import ConfigError

# The bracket of `spread_from_mean_abs`: a per-token log-prob spread of 50 nats is no mismatch of kernels.
_MAX_SPREAD = 50.0


def _nonnegative(name: str, value) -> np.ndarray:
    x = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise ConfigError(f"{name} must be a finite number >= 0, got {float(x[~(np.isfinite(x) & (x >= 0))].flat[0])!r}")
    return x


def mean_abs_log_ratio(spread) -> np.ndarray:
    """E|delta| for delta ~ N(-s^2/2, s^2) (the folded normal's mean, mu = -s^2/2, sigma = s):

        E|delta| = s sqrt(2/pi) exp(-s^2/8) + (s^2/2) (2 Phi(s/2) - 1)        (~ s sqrt(2/pi) for small s)

    spread: s >= 0, the per-token log-ratio std."""
    s = _nonnegative("the log-ratio spread", spread)
    return s * math.sqrt(2.0 / math.pi) * np.exp(-s * s / 8.0) + 0.5 * s * s * (2.0 * ndtr(s / 2.0) - 1.0)


def spread_from_mean_abs(mean_abs) -> np.ndarray:
    """The s whose `mean_abs_log_ratio` is `mean_abs` (TRL's sampling/sampling_logp_difference/mean); increasing,
    so the root is unique (brentq on [0, 50])."""
    m = _nonnegative("the mean absolute log-prob difference", mean_abs)
    flat = [0.0 if v == 0 else brentq(lambda s, v=v: float(mean_abs_log_ratio(s)) - v, 0.0, _MAX_SPREAD)
            for v in m.ravel()]
    return np.asarray(flat, dtype=float).reshape(m.shape)


def spread_from_kl(kl) -> np.ndarray:
    """s = sqrt(2 KL): under the model both E[-delta] (k1) and E[e^delta - 1 - delta] (k3) equal s^2 / 2."""
    return np.sqrt(2.0 * _nonnegative("the sampler-trainer KL", kl))


def spread_from_chi2(chi2) -> np.ndarray:
    """s = sqrt(log(1 + chi2)): E[e^{2 delta}] = e^{s^2} for delta ~ N(-s^2/2, s^2)."""
    return np.sqrt(np.log1p(_nonnegative("the token chi-square divergence", chi2)))


def sequence_log_ratio_moments(spread, length) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) of S = sum of L token log-ratios: (-L s^2 / 2, L s^2)."""
    s, n = _nonnegative("the log-ratio spread", spread), _nonnegative("the length", length)
    return -0.5 * n * s * s, n * s * s


def outside_band_share(log_mean, log_var, clip_low, clip_high) -> np.ndarray:
    """P(exp(X) < 1 - eps_low) + P(exp(X) > 1 + eps_high) for X ~ N(log_mean, log_var) (0 where log_var = 0 and
    exp(log_mean) is inside): the share of weights outside the clip band [1 - eps_low, 1 + eps_high]."""
    mean, var = np.asarray(log_mean, float), _nonnegative("the log-ratio variance", log_var)
    lo, hi = np.log1p(-np.asarray(clip_low, float)), np.log1p(np.asarray(clip_high, float))
    sd = np.sqrt(var)
    with np.errstate(divide="ignore", invalid="ignore"):
        below = np.where(sd > 0, ndtr((lo - mean) / sd), (mean < lo).astype(float))
        above = np.where(sd > 0, ndtr((mean - hi) / sd), (mean > hi).astype(float))
    return below + above


def above_cap_share(log_mean, log_var, cap) -> np.ndarray:
    """P(exp(X) > C) for X ~ N(log_mean, log_var): the share of weights a truncation (or mask) at cap C acts on."""
    mean, var = np.asarray(log_mean, float), _nonnegative("the log-ratio variance", log_var)
    sd = np.sqrt(var)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, ndtr((mean - np.log(np.asarray(cap, float))) / sd),
                        (mean > np.log(np.asarray(cap, float))).astype(float))


def leave_length(spread, eps, z: float = 1.0) -> np.ndarray:
    """L* = (log(1 + eps) / (z s))^2: the completion length at which the std s sqrt(L) of the sequence log-ratio
    sum reaches log(1 + eps) / z (inf for s = 0). The drift -L s^2 / 2 is left out: at L* it is log(1 + eps) / (2 z)
    times the std (0.09 at eps = 0.2, z = 1), whatever s."""
    s = _nonnegative("the log-ratio spread", spread)
    with np.errstate(divide="ignore"):
        return (np.log1p(np.asarray(eps, float)) / (z * s)) ** 2
