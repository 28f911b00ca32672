"""The continuous-time rule: the damped oscillator that approximates the discrete update.

Eliminating v from the heavy-ball step gives  x_{t+1} - (1+mu) x_t + mu x_{t-1} = eta g_t.
To second order in the step (the modified equation; derived in `symbolic.derive`) and with the
stale force averaged over the refresh window (lag j uniform in 0..T-1, mean (T-1)/2, expanded to
first order in the lag: x(t - j) ~ x - j x'),

    m x'' + c x' + k x = 0,   m = (1 + mu) / 2,   c = (1 - mu) - eta a (T - 1) / 2,   k = eta (a + b).

Momentum gives the mass, the off-policy lag erodes the damping (the stale stiffness eta a acts
with delay (T-1)/2), and the stiffness is the curvature scale a + b times the learning rate.
Consequences (vectorised over configurations):
  unstable        c <= 0 or k <= 0       ->  T_c = smallest integer T >= 1 + 2 (1 - mu) / (eta a)
  oscillatory     0 < zeta < 1,  zeta = c / (2 sqrt(m k))
  overdamped      zeta >= 1
The rule is an approximation; `linear` gives the exact discrete answer, which can differ by
several times at high momentum. Both are reported.
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics.theory.linear import STABLE


def oscillator_coefficients(stale, fresh, lr, momentum, refresh_interval):
    """(m, c, k) of the continuous rule; broadcasts over arrays."""
    a, b, eta, mu, T = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (stale, fresh, lr, momentum, refresh_interval)))
    return (1.0 + mu) / 2.0, (1.0 - mu) - eta * a * (T - 1.0) / 2.0, eta * (a + b)


def damping_ratio(stale, fresh, lr, momentum, refresh_interval):
    """zeta = c / (2 sqrt(m k)); NaN where k <= 0 (no restoring force)."""
    m, c, k = oscillator_coefficients(stale, fresh, lr, momentum, refresh_interval)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(k > 0.0, c / (2.0 * np.sqrt(np.abs(m * k))), np.nan)


def regime(stale, fresh, lr, momentum, refresh_interval) -> np.ndarray:
    """'unstable' (c <= 0 or k <= 0), 'oscillatory' (zeta < 1) or 'overdamped' (zeta >= 1)."""
    m, c, k = oscillator_coefficients(stale, fresh, lr, momentum, refresh_interval)
    zeta = damping_ratio(stale, fresh, lr, momentum, refresh_interval)
    return np.where((c <= 0.0) | (k <= 0.0), "unstable", np.where(zeta < 1.0, "oscillatory", "overdamped"))


def critical_refresh_interval(stale, fresh, lr, momentum, t_max: int = 10_000) -> np.ndarray:
    """Smallest integer T in [1, t_max] with c(T) <= 0 (or k <= 0); STABLE (0) if none.

    c(T) <= 0  <=>  T >= T* = 1 + 2 (1 - mu) / (eta a)   (only possible for a > 0).
    """
    a, b, eta, mu = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (stale, fresh, lr, momentum)))
    with np.errstate(divide="ignore", invalid="ignore"):
        t_star = np.where(a > 0.0, 1.0 + 2.0 * (1.0 - mu) / (eta * a), np.inf)
    t_c = np.ceil(t_star)
    t_c = np.where(eta * (a + b) <= 0.0, 1.0, t_c)
    return np.where(t_c <= t_max, t_c, STABLE).astype(np.int64)


def oscillatory_refresh_interval(stale, fresh, lr, momentum, t_max: int = 10_000) -> np.ndarray:
    """Smallest integer T in [1, t_max] with zeta(T) < 1 (or unstable); STABLE (0) if none.

    zeta < 1  <=>  c < 2 sqrt(m k)  <=>  T > 1 + 2 (1 - mu - 2 sqrt(m k)) / (eta a)   (a > 0).
    """
    a, b, eta, mu = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (stale, fresh, lr, momentum)))
    m, k = (1.0 + mu) / 2.0, eta * (a + b)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = 1.0 - mu - 2.0 * np.sqrt(np.maximum(m * k, 0.0))
        t_star = np.where(a > 0.0, 1.0 + 2.0 * bound / (eta * a), np.where(bound < 0.0, -np.inf, np.inf))
    t_c = np.maximum(np.floor(t_star) + 1.0, 1.0)  # strict inequality
    t_c = np.where(k <= 0.0, 1.0, t_c)
    return np.where(t_c <= t_max, t_c, STABLE).astype(np.int64)
