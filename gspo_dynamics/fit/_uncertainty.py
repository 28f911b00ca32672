"""Parameter uncertainties of a least-squares fit of the closed forms (`fit._trajectory`).

    cov = s^2 (J^T J)^{-1},   s^2 = RSS / (n - p),

J the Jacobian of the model curve with respect to its fitted parameters at the optimum, by central
differences of step FD_REL_STEP times each parameter's scale (error O(step^2)); stderr = sqrt(diag cov).
A derived quantity f gets its error by the delta method, var f = g^T cov g, g from `partial_derivative`.
Checked against the scatter of refits on simulated noise in tests/fit/test_fit_trajectory.py.

A series' own scatter about a smooth curve, without a fit (`row_scatter`): first differences cancel a slow drift,

    sigma_row = std(r_{t+1} - r_t) / sqrt(2)   (independent rows of noise sigma: var(r_{t+1} - r_t) = 2 sigma^2).
"""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.fit._closed_form import FitResult

FD_REL_STEP = 1e-5  # central-difference step relative to each parameter's scale (error ~ step^2)


def model_curve(model: str, params: dict[str, float], t: np.ndarray) -> np.ndarray:
    """The closed form `model` with `params` at times t (a FitResult's curve without its fit)."""
    return FitResult(model, params, math.nan, math.nan, 0).predict(t)


def _scale(name: str, q: dict[str, float], r_range: float, span: float) -> float:
    """A typical size of parameter `name`, for finite-difference steps."""
    if name in ("r_inf", "r0"):
        return max(abs(q[name]), r_range, 1e-12)
    if name == "v0":
        return max(abs(q["v0"]), r_range / span, 1e-12)
    if name == "damping":
        return max(abs(q["damping"]), math.sqrt(q["stiffness"]), 1e-12)
    # tau, stiffness: positive, relative steps, which keep a tau ~ 0 (a step in the first rows) positive
    return q[name] if q[name] > 0 else 1e-12


def partial_derivative(f, q: dict[str, float], name: str, scale: float | None = None) -> float:
    h = FD_REL_STEP * (scale if scale is not None else max(abs(q[name]), 1e-12))
    up, down = dict(q), dict(q)
    up[name] += h
    down[name] -= h
    try:
        return (f(up) - f(down)) / (2.0 * h)
    except (ConfigError, ValueError, ZeroDivisionError, OverflowError):
        return math.nan


def covariance(fit: FitResult, t: np.ndarray, r: np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
    """cov = s^2 (J^T J)^{-1} over the fitted parameters; inf on the diagonal where J^T J is singular."""
    names = tuple(n for n in fit.params if n not in fit.fixed)
    r_range = float(np.ptp(r)) or 1.0
    span = float(max(t[-1] - t[0], 1.0))
    cols = []
    for name in names:
        h = FD_REL_STEP * _scale(name, fit.params, r_range, span)
        up, down = dict(fit.params), dict(fit.params)
        up[name] += h
        down[name] -= h
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                cols.append((model_curve(fit.model, up, t) - model_curve(fit.model, down, t)) / (2.0 * h))
        except ConfigError:  # a step leaves the model's domain (tau <= 0): the parameter sits on its edge
            cols.append(np.full(t.shape, math.nan))
    J = np.stack(cols, axis=1)  # (n, p)
    dof = max(t.size - len(names), 1)
    s2 = fit.rss / dof
    p = len(names)
    if not np.all(np.isfinite(J)):  # inf: not identified (an unbounded curve, or a parameter at its domain's edge)
        return names, np.full((p, p), math.inf)
    # Scale columns to unit norm before inverting (the parameters differ by orders of magnitude).
    norms = np.linalg.norm(J, axis=0)
    if np.any(norms == 0):
        cov = np.full((p, p), math.inf)
        return names, cov
    Js = J / norms
    u, sv, vt = np.linalg.svd(Js, full_matrices=False)
    if sv[-1] <= sv[0] * 1e-10:  # not identifiable: some combination leaves the curve unchanged
        return names, np.full((p, p), math.inf)
    inv = (vt.T / sv**2) @ vt
    return names, s2 * inv / np.outer(norms, norms)


def standard_errors(chosen: FitResult, names: tuple[str, ...], cov: np.ndarray) -> dict[str, float]:
    """Standard errors from the covariance's diagonal (0 for a parameter held fixed, NaN below 0)."""
    stderr = {n: 0.0 for n in chosen.params}
    for i, name in enumerate(names):
        stderr[name] = float(math.sqrt(cov[i, i])) if cov[i, i] >= 0 else math.nan
    return stderr


def row_scatter(values) -> float:
    """sigma_row of the module docstring over the finite values; 0 for fewer than 3."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    return float(np.std(np.diff(x), ddof=1) / math.sqrt(2)) if x.size >= 3 else 0.0
