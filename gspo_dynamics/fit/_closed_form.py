"""Least-squares fits of the closed-form reward trajectories to a measured curve.

Two nested models of R(t), t in optimizer steps:

  exponential   R(t) = R_inf - (R_inf - R_0) exp(-t / tau)                  (3 parameters)
  oscillator    m R'' + c R' + k (R - R_inf) = 0 with m = 1, R(0) = R_0,
                R'(0) = v_0  (`theory.trajectory.trajectory`)                (5 parameters: R_inf, R_0, c, k, v_0)

The exponential is the oscillator's m -> 0 limit (tau = c / k), so the oscillator is the larger
model; `FitResult.bic` lets a caller ask whether the data support inertia or oscillation.
Goodness of fit: R^2 = 1 - SS_res / SS_tot. NaN points are dropped; steps may be irregular.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory.trajectory import Oscillator, single_exponential, trajectory

MIN_POINTS = 8  # fewer points than this cannot separate 5 parameters from noise


@dataclass(frozen=True)
class FitResult:
    model: str  # "exponential" | "oscillator"
    params: dict[str, float]
    r_squared: float
    rss: float  # residual sum of squares
    n: int  # points used

    @property
    def bic(self) -> float:
        """Bayesian information criterion n ln(RSS / n) + p ln n (Gaussian residuals)."""
        p = len(self.params)
        return self.n * math.log(max(self.rss, 1e-300) / self.n) + p * math.log(self.n)

    def predict(self, t) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        q = self.params
        if self.model == "exponential":
            return single_exponential(t, q["r_inf"], q["r0"], q["tau"])
        osc = Oscillator(mass=1.0, damping=q["damping"], stiffness=q["stiffness"])
        return trajectory(osc, t, q["r_inf"], q["r0"], q["v0"])


def _clean(t, r) -> tuple[np.ndarray, np.ndarray]:
    t, r = np.asarray(t, dtype=float), np.asarray(r, dtype=float)
    if t.shape != r.shape or t.ndim != 1:
        raise ConfigError(f"steps and rewards must be 1-d arrays of equal length, got shapes {t.shape} and {r.shape}")
    keep = np.isfinite(t) & np.isfinite(r)
    t, r = t[keep], r[keep]
    if t.size < MIN_POINTS:
        raise ConfigError(f"need at least {MIN_POINTS} finite points to fit a trajectory, got {t.size}")
    order = np.argsort(t, kind="stable")
    t, r = t[order], r[order]
    return t - t[0], r


def _r_squared(r, fitted) -> tuple[float, float]:
    rss = float(np.sum((r - fitted) ** 2))
    tss = float(np.sum((r - r.mean()) ** 2))
    return (1.0 - rss / tss if tss > 0 else (1.0 if rss == 0 else 0.0)), rss


def fit_exponential(t, r) -> FitResult:
    """Fit R_inf - (R_inf - R_0) exp(-t/tau); tau is fitted in log space to stay positive."""
    t, r = _clean(t, r)
    span = max(t[-1], 1.0)

    def residual(x):
        return single_exponential(t, x[0], x[1], math.exp(x[2])) - r

    starts = [math.log(span * f) for f in (0.05, 0.2, 0.6)]
    best = min((least_squares(residual, [r[-1], r[0], s], method="lm") for s in starts), key=lambda s: s.cost)
    r_inf, r0, log_tau = best.x
    r2, rss = _r_squared(r, residual(best.x) + r)
    return FitResult("exponential", {"r_inf": r_inf, "r0": r0, "tau": math.exp(log_tau)}, r2, rss, t.size)


def fit_oscillator(t, r) -> FitResult:
    """Fit the general damped-oscillator solution (mass fixed to 1: only c/m and k/m are identifiable).

    Started from the exponential fit (c = 1/tau_fast + 1/tau, k = 1/(tau tau_fast) with a short
    tau_fast) and from an underdamped guess, keeping the better; k is fitted in log space.
    """
    t, r = _clean(t, r)
    expo = fit_exponential(t, r)
    tau = expo.params["tau"]

    def residual(x):
        osc = Oscillator(mass=1.0, damping=x[2], stiffness=math.exp(min(x[3], 50.0)))
        out = trajectory(osc, t, x[0], x[1], x[4]) - r
        return np.where(np.isfinite(out), out, 1e6)  # growing trial solutions overflow: a large residual

    guesses = []
    for fast in (0.05, 0.3):  # overdamped: a slow mode at the exponential's tau and a fast one
        tf = max(fast * tau, 1e-3)
        guesses.append([expo.params["r_inf"], expo.params["r0"], 1 / tf + 1 / tau, math.log(1 / (tau * tf)), 0.0])
    span = max(t[-1], 1.0)
    for periods in (2.0, 5.0, 12.0, 30.0):  # underdamped: periods per span x damping ratios
        omega = 2 * math.pi * periods / span
        if omega > math.pi:  # beyond the sampling (Nyquist) limit of unit steps
            continue
        for zeta in (0.05, 0.2, 0.5):
            guesses.append([expo.params["r_inf"], r[0], 2 * zeta * omega, math.log(omega**2), 0.0])
    fits = []
    for g in guesses:
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                fit = least_squares(residual, g, method="trf", x_scale="jac", max_nfev=2000)
            if np.isfinite(fit.cost):
                fits.append(fit)
        except (ConfigError, FloatingPointError, ValueError):
            continue
    if not fits:
        raise ConfigError("the oscillator fit did not converge from any starting point")
    best = min(fits, key=lambda s: s.cost)
    r_inf, r0, c, log_k, v0 = best.x
    r2, rss = _r_squared(r, residual(best.x) + r)
    return FitResult("oscillator", {"r_inf": r_inf, "r0": r0, "damping": c, "stiffness": math.exp(log_k), "v0": v0}, r2, rss, t.size)
