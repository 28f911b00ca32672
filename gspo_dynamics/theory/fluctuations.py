"""Stationary fluctuations of the linearised stochastic update: a periodic discrete Lyapunov equation.

The expected update of `linear` plus sampling noise. With x = z - z* the deviation of the current
logit, x_s that of the sampling policy and v the heavy-ball velocity, one optimizer step is

    g_j     = -a x_s - b x_j + xi_j          xi_j i.i.d., E[xi] = 0, Var[xi] = sigma^2
    v_{j+1} = mu v_j + g_j
    x_{j+1} = x_j + eta v_{j+1}

(a, b: stale and fresh stiffness; xi_j: the noise of the step's minibatch, drawn afresh every step
from the sampling policy). On s = (x, v, x_s) this is  s_{j+1} = S s_j + w xi_j  with S the step
matrix of `linear.step_matrix` and w = (eta, 1, 0), so the covariance P_j = E[s_j s_j^T] obeys

    P_{j+1} = S P_j S^T + Q,        Q = sigma^2 w w^T.

Every T steps the sampling policy is refreshed, x_s <- x:  s <- E s with E = [[1,0,0],[0,1,0],[1,0,0]].
Over one period, started just after a refresh, the covariance maps as

    P_0' = M P_0 M^T + Q_T,    M = E S^T,    Q_T = E (sum_{j<T} S^j Q S^jT) E^T,

M has the eigenvalues of the monodromy M(T) of `linear.monodromy` and a structural 0 (x_s = x
after a refresh), so a stationary P_0 exists iff rho(M(T)) < 1. It solves the discrete Lyapunov
equation above; the phases follow as P_{j+1} = S P_j S^T + Q (j = 0..T-2), and the covariance of
(x, v) seen by a uniform sample of steps is the phase average (1/T) sum_j P_j[:2, :2].

For T = 1, mu = 0 this reduces to the AR(1)  x' = (1 - eta (a + b)) x + eta xi, with
Var(x) = eta^2 sigma^2 / (1 - (1 - eta (a + b))^2).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy.linalg import solve_discrete_lyapunov

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory import finite_group
from gspo_dynamics.theory.bandit import TwoArmBandit, fixed_point, stiffness_partials
from gspo_dynamics.theory.hyperparams import Hyperparams, effective_sgd
from gspo_dynamics.theory.linear import RHO_TOL, monodromy, spectral_radius, step_matrix

_NEEDS_FINITE_GROUP = "stationary fluctuations need a finite group size, got group_size=None (G -> infinity has no noise)"
# The refresh x_s <- x on (x, v, x_s).
_REFRESH = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])


def _check_config(stale, fresh, lr, momentum, refresh_interval, noise_variance) -> tuple:
    """Convert, then check: finite scalars, eta > 0, 0 <= mu < 1, T >= 1, sigma^2 >= 0, a contracting period."""
    values = {"stale stiffness": stale, "fresh stiffness": fresh, "lr": lr, "momentum": momentum,
              "noise variance": noise_variance}
    for name, value in values.items():
        if not (np.ndim(value) == 0 and math.isfinite(float(value))):
            raise ConfigError(f"{name} must be one finite number, got {value!r}")
    a, b, eta, mu, sigma2 = (float(v) for v in values.values())
    T = positive_int("refresh interval", refresh_interval)
    if eta <= 0.0:
        raise ConfigError(f"learning rate must be positive, got {eta}")
    if not 0.0 <= mu < 1.0:
        raise ConfigError(f"momentum must be in [0, 1), got {mu}")
    if sigma2 < 0.0:
        raise ConfigError(f"noise variance must be >= 0, got {sigma2}")
    rho = float(spectral_radius(monodromy(a, b, eta, mu, int(T))))
    # rho within RHO_TOL of 1 is neutral: the variance grows without bound, there is no stationary state.
    if not rho < 1.0 - RHO_TOL:
        raise ConfigError(
            f"no stationary fluctuations: the one-period map has spectral radius {rho:.6g} (expected < 1) "
            f"at lr={eta:g}, momentum={mu:g}, refresh interval={T}, stiffness a={a:g}, b={b:g}"
        )
    return a, b, eta, mu, int(T), sigma2


def phase_covariances(stale, fresh, lr, momentum, refresh_interval: int, noise_variance) -> np.ndarray:
    """Stationary covariances P_j of s = (x, v, x_s) at the start of step j of a period; shape (T, 3, 3).

    P_0 (just after the refresh, so x_s = x) solves  P_0 = M P_0 M^T + Q_T  (module docstring) and
    P_{j+1} = S P_j S^T + Q for j = 0..T-2. Scalar configuration only (one Lyapunov solve).
    Raises ConfigError when rho(M(T)) >= 1 (no stationary state).
    """
    a, b, eta, mu, T, sigma2 = _check_config(stale, fresh, lr, momentum, refresh_interval, noise_variance)
    S = step_matrix(a, b, eta, mu)  # (3, 3)
    w = np.array([eta, 1.0, 0.0])  # how xi_j enters (x, v, x_s)
    Q = sigma2 * np.outer(w, w)
    # Q_T accumulated by the same recursion as the phases: C_{j+1} = S C_j S^T + Q from C_0 = 0.
    S_T = np.eye(3)
    C = np.zeros((3, 3))
    for _ in range(T):
        C = S @ C @ S.T + Q
        S_T = S @ S_T
    M = _REFRESH @ S_T
    P0 = solve_discrete_lyapunov(M, _REFRESH @ C @ _REFRESH.T)
    phases = np.empty((T, 3, 3))
    phases[0] = 0.5 * (P0 + P0.T)  # symmetrise away the solver's rounding
    for j in range(1, T):
        phases[j] = S @ phases[j - 1] @ S.T + Q
    return phases


def stationary_covariance(stale, fresh, lr, momentum, refresh_interval: int, noise_variance) -> np.ndarray:
    """Phase-averaged stationary covariance of (x, v):  (1/T) sum_{j<T} P_j[:2, :2]; shape (2, 2).

    Arguments in the order of `linear.step_matrix`: a = stale, b = fresh, eta = lr, mu = momentum,
    T = refresh_interval, sigma^2 = noise_variance (per-step variance of the ascent direction).
    The result is proportional to sigma^2. Raises ConfigError when rho(M(T)) >= 1.
    """
    return phase_covariances(stale, fresh, lr, momentum, refresh_interval, noise_variance)[:, :2, :2].mean(axis=0)


def gradient_noise_variance(p, hp: Hyperparams) -> float:
    """sigma^2 = Var_k[g_k] / num_groups: the per-step variance of the ascent direction at success p.

    Var_k[g_k] is `finite_group.group_gradient_variance` (k ~ Binomial(G, p)); a step averages
    num_groups independent groups. The KL force is exact (no sampling noise), as in `bandit`.
    A ratio correction multiplies g_k by w = 1 + O(x): the same noise at leading order.
    """
    if hp.group_size is None:
        raise ConfigError(_NEEDS_FINITE_GROUP)
    var = finite_group.group_gradient_variance(p, hp.group_size, hp.advantage, hp.std_estimator, hp.std_eps)
    return float(var) / hp.num_groups


def stationary_reward_variance(bandit: TwoArmBandit, hp: Hyperparams) -> float:
    """Var(R) at the two-armed bandit's fixed point, to leading order in the noise.

        sigma^2  = Var_k[g_k](p*) / num_groups                     (`gradient_noise_variance`)
        (a, b)   = `bandit.stiffness_partials(z*)`
        (eta, mu) = `hyperparams.effective_sgd(hp, s_bar = sigma^2)`
        Var(x)   = `stationary_covariance(a, b, eta, mu, T, sigma^2)[0, 0]`
        Var(R)   = (p* (1 - p*))^2 Var(x)                          (delta method, dR/dz = p (1 - p))

    For Adam the frozen second moment is s_bar = E[g^2] = sigma^2: at the fixed point the mean
    ascent direction vanishes, so the second moment is the noise variance (to leading order).
    Then eta_eff ~ 1/sigma and, for small eta_eff (a + b), Var(x) ~ eta_eff sigma^2 / (2 (a + b))
    ~ sigma: Adam's stationary spread falls like G^(-1/2), not the 1/G of SGD.
    Raises ConfigError for G = infinity, for no interior fixed point (p -> 1), or when unstable.
    """
    if hp.group_size is None:
        raise ConfigError(_NEEDS_FINITE_GROUP)
    fp = fixed_point(bandit, hp)
    if not fp.interior or not 0.0 < fp.reward < 1.0:
        raise ConfigError(
            f"no interior fixed point (kl_coef={hp.kl_coef:g}, advantage={hp.advantage!r}): "
            "the policy saturates at R = 1 and has no stationary fluctuations"
        )
    p = fp.reward
    sigma2 = gradient_noise_variance(p, hp)
    a, b = stiffness_partials(fp.logit, bandit, hp)
    eta, mu = effective_sgd(hp, second_moment=sigma2)
    var_x = stationary_covariance(a, b, eta, mu, hp.refresh_interval, sigma2)[0, 0]
    return float((p * (1.0 - p)) ** 2 * var_x)


def reward_variance_by_group_size(bandit: TwoArmBandit, hp: Hyperparams, group_sizes) -> np.ndarray:
    """`stationary_reward_variance` at each G in `group_sizes` (other settings fixed); shape (len,)."""
    return np.array([stationary_reward_variance(bandit, replace(hp, group_size=int(G))) for G in group_sizes])


def group_size_slope(bandit: TwoArmBandit, hp: Hyperparams, group_sizes) -> float:
    """Least-squares slope of log Var(R) against log G over `group_sizes`.

    SGD: -> -1 for large G (the 1/G law), because Var_k[g_k] ~ p (1 - p) (1 - 2p)^2 / G while the
    stiffness and fixed point converge. At p* = 1/2 the leading term vanishes and the O(1/G^2)
    remainder dominates (slope -> -2). Adam: -> -1/2 in its small-step linear regime (see
    `stationary_reward_variance`).
    """
    sizes = list(group_sizes)
    G = np.asarray(sizes, dtype=float)
    if G.size < 2:
        raise ConfigError(f"a slope needs at least two group sizes, got {sizes!r}")
    var = reward_variance_by_group_size(bandit, hp, G.astype(int))
    return float(np.polyfit(np.log(G), np.log(var), 1)[0])
