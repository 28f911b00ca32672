"""Exact finite-group statistics for binary (verifiable) rewards.

A group of G responses drawn from a policy with success probability p has k ~ Binomial(G, p)
successes. With the group-mean baseline the advantages are A_i = (r_i - k/G) / s_k, where
s_k = 1 ("mean") or s_k = std_k + eps ("std"), and the group std of binary rewards is

    std_k^2 = k (G - k) / (G (G - 1))   (unbiased, Bessel; torch.std and TRL)
    std_k^2 = k (G - k) / G^2           (biased).

For a two-action softmax policy with score d log pi(a)/dz = 1[a=1] - p, the group's policy
gradient (1/G) sum_i A_i d log pi(a_i)/dz collapses to a function of k alone:

    g_k = (k/G) (1 - k/G) / s_k,            g_0 = g_G = 0  (zero-variance groups).

Its expectation is the drive factor m(p) = E_k[g_k] and its variance the per-group gradient noise.
For G -> infinity, m(p) = p (1 - p) ("mean") or p (1 - p) / (sqrt(p (1 - p)) + eps) ("std").
With the mean baseline the sum is exact:  m(p) = (1 - 1/G) p (1 - p).
"""

from __future__ import annotations

import numpy as np


def zero_variance_probability(p, group_size: int):
    """P(all G rewards equal) = p^G + (1 - p)^G: the chance a group carries no learning signal."""
    p = np.asarray(p, dtype=float)
    return p**group_size + (1.0 - p) ** group_size


def group_std(k, group_size: int, std_estimator: str = "unbiased"):
    """Std of a group of G binary rewards with k successes (see module docstring)."""
    k = np.asarray(k, dtype=float)
    G = group_size
    denom = G * (G - 1) if std_estimator == "unbiased" else G * G
    return np.sqrt(k * (G - k) / denom)


def group_gradient_coefficients(group_size: int, advantage: str, std_estimator: str = "unbiased", std_eps: float = 1e-4):
    """g_k for k = 0..G, shape (G + 1,): the group's gradient as a function of its successes."""
    if advantage not in ("mean", "std") or std_estimator not in ("unbiased", "biased"):
        raise ValueError(f"unknown advantage {advantage!r} or std estimator {std_estimator!r}")
    G = group_size
    k = np.arange(G + 1, dtype=float)
    spread = (k / G) * (1.0 - k / G)
    if advantage == "mean":
        return spread
    with np.errstate(invalid="ignore", divide="ignore"):
        coef = spread / (group_std(k, G, std_estimator) + std_eps)
    return np.where(spread > 0.0, coef, 0.0)


def _binomial_pmf(p, group_size: int):
    from scipy.stats import binom  # imported here: scipy.stats costs ~0.3 s, and most callers never get here

    p = np.asarray(p, dtype=float)
    k = np.arange(group_size + 1)
    return binom.pmf(k, group_size, p[..., None])  # (..., G + 1)


def drive_factor(p, group_size: int | None, advantage: str, std_estimator: str = "unbiased", std_eps: float = 1e-4):
    """m(p) = E_k[g_k], the expected group gradient per unit score (module docstring)."""
    p = np.asarray(p, dtype=float)
    if group_size is None:
        u = p * (1.0 - p)
        if advantage == "mean":
            return u
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(u > 0.0, u / (np.sqrt(u) + std_eps), 0.0)  # -> 0 at p in {0, 1} even with eps = 0
    coef = group_gradient_coefficients(group_size, advantage, std_estimator, std_eps)
    return _binomial_pmf(p, group_size) @ coef


def drive_factor_derivative(p, group_size: int | None, advantage: str, std_estimator: str = "unbiased", std_eps: float = 1e-4):
    """dm/dp, analytically.

    Finite G: the Bernstein-derivative identity d/dp pmf_G(k) = G [pmf_{G-1}(k-1) - pmf_{G-1}(k)]
    gives dm/dp = G sum_k g_k [pmf_{G-1}(k-1) - pmf_{G-1}(k)] (no division by p (1-p), so it
    stays finite at saturated p).
    G -> infinity:  mean: 1 - 2p;  std: (1 - 2p) (sqrt(u)/2 + eps) / (sqrt(u) + eps)^2 with u = p (1 - p).
    """
    p = np.asarray(p, dtype=float)
    if group_size is None:
        u = p * (1.0 - p)
        if advantage == "mean":
            return 1.0 - 2.0 * p
        return (1.0 - 2.0 * p) * (np.sqrt(u) / 2.0 + std_eps) / (np.sqrt(u) + std_eps) ** 2
    coef = group_gradient_coefficients(group_size, advantage, std_estimator, std_eps)
    lower = _binomial_pmf(p, group_size - 1)  # (..., G): pmf_{G-1}(j), j = 0..G-1
    return group_size * (lower @ (coef[1:] - coef[:-1]))


def group_gradient_variance(p, group_size: int | None, advantage: str, std_estimator: str = "unbiased", std_eps: float = 1e-4):
    """Var_k[g_k], the gradient noise of one group (0 for G -> infinity).

    Leading order for the mean baseline: p (1 - p) (1 - 2p)^2 / G, so the 1/G law holds away
    from p = 1/2, where the leading term vanishes and the O(1/G^2) remainder dominates.
    """
    p = np.asarray(p, dtype=float)
    if group_size is None:
        return np.zeros_like(p)
    coef = group_gradient_coefficients(group_size, advantage, std_estimator, std_eps)
    pmf = _binomial_pmf(p, group_size)
    mean = pmf @ coef
    return (pmf * (coef - mean[..., None]) ** 2).sum(-1)  # centred sum: no E[g^2] - m^2 cancellation


def expected_group_std(p, group_size: int, std_estimator: str = "unbiased"):
    """E_k[std_k], the mean group-std estimate; its gap to sqrt(p (1 - p)) is the estimator's bias."""
    k = np.arange(group_size + 1)
    return _binomial_pmf(p, group_size) @ group_std(k, group_size, std_estimator)


def std_estimator_bias(p, group_size: int, std_estimator: str = "unbiased"):
    """E_k[std_k] - sqrt(p (1 - p)) (negative: by Jensen even the Bessel-corrected std is low)."""
    p = np.asarray(p, dtype=float)
    return expected_group_std(p, group_size, std_estimator) - np.sqrt(p * (1.0 - p))
