"""The closed-form trajectory on fixed times, with its parameter derivatives, for a fitter's repeated calls.

`trajectory_family(t)` checks t once and returns R(t; c, k, R_inf, R_0, v_0) of `trajectory.trajectory`
(same formulas, same numbers) and, on request, its Jacobian in those five parameters, analytic:
with EC = e^{-alpha t} C(t), ES = e^{-alpha t} S(t) (`trajectory`'s module docstring), alpha = c/(2m) and
q = alpha^2 - k/m, C and S are entire functions of q t^2 with dC/dq = t S / 2 and dS/dq = (t C - S)/(2q).
"""

from __future__ import annotations

import math

import numpy as np

from gspo_dynamics.theory.trajectory import _anchored, _array, _discriminant, _propagators, _real, _require

# Below |q t^2| this, dS/dq = (t C - S)/(2q) is taken from its series (`_dsq`): the direct form loses
# ~3e-15/|q t^2| to cancellation (< 3e-12 above it), the series' first dropped term is < 1e-17 below it.
Y_SERIES = 1e-3


def _dsq(t: np.ndarray, ec: np.ndarray, es: np.ndarray, alpha: float, q: float) -> np.ndarray:
    """U = d(e^{-alpha t} S)/dq at fixed alpha = e^{-alpha t} (t C - S) / (2q) = (t e^{-alpha t} C - e^{-alpha t} S) / (2q),

    and where |y| = |q t^2| < Y_SERIES (the difference cancels to ~y/3 of its terms) from the series
    U = e^{-alpha t} t^3 sum_{n>=1} n y^{n-1} / (2n+1)! = e^{-alpha t} t^3 (1/6 + y/60 + y^2/1680 + y^3/90720 + O(y^4)).
    """
    y = q * t * t
    small = np.abs(y) < Y_SERIES
    u = (t * ec - es) / (2.0 * q if q != 0.0 else 1.0)
    if small.any():
        ys, ts = y[small], t[small]
        u[small] = np.exp(-alpha * ts) * ts**3 * (1.0 / 6.0 + ys * (1.0 / 60.0 + ys * (1.0 / 1680.0 + ys / 90720.0)))
    return u


def _anchored_jacobian(t, ec, es, m: float, alpha: float, q: float, r_inf: float, r0: float, v0: float) -> np.ndarray:
    """dR/d(c, k, R_inf, R_0, v_0) of R = R_0 + x0 (EC - 1) + (v0 + alpha x0) ES  (`_anchored`; EC = e^{-alpha t} C,
    ES = e^{-alpha t} S, x0 = R_0 - R_inf, alpha = c/(2m), q = alpha^2 - k/m). With dEC/dalpha = -t EC,
    dES/dalpha = -t ES, dEC/dq = t ES / 2 (C, S entire in q t^2) and dES/dq = U (`_dsq`):

        dEC/dc = t (alpha ES - EC) / (2m),   dES/dc = (2 alpha U - t ES) / (2m),   dEC/dk = -t ES / (2m),   dES/dk = -U / m
        dR/dc = x0 dEC/dc + (v0 + alpha x0) dES/dc + x0 ES / (2m),   dR/dk = x0 dEC/dk + (v0 + alpha x0) dES/dk
        dR/dR_inf = 1 - EC - alpha ES,   dR/dR_0 = EC + alpha ES,   dR/dv0 = ES

    t, ec, es: shape (n,). Returns (5, n).
    """
    u = _dsq(t, ec, es, alpha, q)
    x0 = r0 - r_inf
    a = v0 + alpha * x0
    dr_dc = (x0 * t * (alpha * es - ec) + a * (2.0 * alpha * u - t * es) + x0 * es) / (2.0 * m)
    dr_dk = -(x0 * t * es / 2.0 + a * u) / m
    slope = ec + alpha * es
    return np.array([dr_dc, dr_dk, 1.0 - slope, slope, es])


def trajectory_family(t, mass=1.0):
    """R(t) of `trajectory` on fixed times, for a fitter's repeated calls: the function

        (c, k, R_inf, R_0, v_0) -> trajectory(Oscillator(mass=m, damping=c, stiffness=k), t, R_inf, R_0, v_0),

    with jacobian=True (R, dR/d(c, k, R_inf, R_0, v_0)) of shapes (n,) and (5, n) (`_anchored_jacobian`).
    t (1-d, times >= 0) and m are checked here, once; each call checks only its five numbers (finite,
    k > 0), and reuses the previous call's propagators when (c, k) repeats (a Jacobian at the point
    just evaluated).
    """
    t = _array("time t", t, nonnegative=True)
    _require(t.ndim == 1, f"time t must be a 1-d array, got shape {t.shape}")
    m = _real("mass", mass)
    _require(m > 0.0, f"mass m must be positive, got {m}")
    last: dict[tuple[float, float], tuple[np.ndarray, np.ndarray]] = {}  # the previous call's propagators by (c, k)

    def family(damping, stiffness, r_inf, r0, v0, jacobian: bool = False):
        c, k, r_inf, r0, v0 = (float(v) for v in (damping, stiffness, r_inf, r0, v0))
        if not (math.isfinite(c + k + r_inf + r0 + v0) and k > 0.0):
            for name, v in (("damping c", c), ("stiffness k", k), ("r_inf", r_inf), ("r0", r0), ("v0", v0)):
                _real(name, v)
            _require(k > 0.0, f"stiffness k must be positive, got {k}")
        if (c, k) not in last:
            last.clear()
            last[c, k] = _propagators(m, c, k, t)
        ec, es = last[c, k]
        alpha = c / (2.0 * m)
        r = _anchored(ec, es, alpha, r_inf, r0, v0)
        if not jacobian:
            return r
        return r, _anchored_jacobian(t, ec, es, m, alpha, _discriminant(m, c, k) / (4.0 * m * m), r_inf, r0, v0)

    return family
