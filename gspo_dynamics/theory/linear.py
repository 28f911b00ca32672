"""Exact discrete-time linear stability: the one-period monodromy matrix of the update.

Linearise the expected update around its fixed point z*. With x = z - z* the deviation of the
current logit, x_s the deviation of the sampling policy (frozen for a refresh period) and v the
heavy-ball velocity, one optimizer step is

    g_j     = -a x_s - b x_j                  (a: stale stiffness, b: fresh stiffness)
    v_{j+1} = mu v_j + g_j
    x_{j+1} = x_j + eta v_{j+1}

where a = -dF/dz_s and b = -dF/dz are the derivatives of the expected ascent direction
F(z, z_s) at the fixed point (forces computed at the sampling policy are stale, those computed
at the current policy are fresh). On the state s = (x, v, x_s) the step matrix is

        [ 1 - eta b   eta mu   -eta a ]
    S = [    -b         mu       -a   ]        S = [[H, f], [0, 1]]
        [     0          0        1   ]

and a refresh sets x_s <- x at the start of each period of T steps, so the one-period map on
(x, v) is the monodromy matrix

    M(T) = H^T + u_T e1^T,      u_T = sum_{j<T} H^j f.

The update is asymptotically stable iff the spectral radius rho(M(T)) < 1. All functions
broadcast over arrays of configurations (numpy float64) and never loop over configurations.
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics._checks import positive_int

# A product of up to 10^4 step matrices in float64 carries relative rounding of ~1e-12; a
# spectral radius within this of 1 is treated as stable (neutral), not as a threshold crossing.
RHO_TOL = 1e-9
# Sentinel returned by the threshold scans when no T (or lr) up to the limit is unstable.
STABLE = 0


def step_matrix(stale, fresh, lr, momentum) -> np.ndarray:
    """S, the 3x3 one-step matrix on (x, v, x_s); shape (..., 3, 3)."""
    a, b, eta, mu = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (stale, fresh, lr, momentum)))
    S = np.zeros(a.shape + (3, 3))
    S[..., 0, 0] = 1.0 - eta * b
    S[..., 0, 1] = eta * mu
    S[..., 0, 2] = -eta * a
    S[..., 1, 0] = -b
    S[..., 1, 1] = mu
    S[..., 1, 2] = -a
    S[..., 2, 2] = 1.0
    return S


class _PeriodPowers:
    """Running H^T and u_T for T = 1, 2, ..., elementwise over configurations.

    Recurrence (the third row of S is (0, 0, 1)):  H^{T+1} = H H^T,  u_{T+1} = H u_T + f.
    Written out per entry so that one T costs ~30 array operations, not a batched matmul.
    """

    def __init__(self, stale, fresh, lr, momentum):
        a, b, eta, mu = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (stale, fresh, lr, momentum)))
        self.h = (1.0 - eta * b, eta * mu, -b, mu)  # H entries (11, 12, 21, 22)
        self.f = (-eta * a, -a)
        self.p = self.h  # H^T, starting at T = 1
        self.u = self.f  # u_T, starting at T = 1
        self.T = 1

    def advance(self) -> None:
        h11, h12, h21, h22 = self.h
        p11, p12, p21, p22 = self.p
        u1, u2 = self.u
        self.p = (h11 * p11 + h12 * p21, h11 * p12 + h12 * p22, h21 * p11 + h22 * p21, h21 * p12 + h22 * p22)
        self.u = (h11 * u1 + h12 * u2 + self.f[0], h21 * u1 + h22 * u2 + self.f[1])
        self.T += 1

    def monodromy_entries(self):
        p11, p12, p21, p22 = self.p
        u1, u2 = self.u
        return p11 + u1, p12, p21 + u2, p22


def monodromy(stale, fresh, lr, momentum, refresh_interval: int) -> np.ndarray:
    """M(T), the one-period map on (x, v); shape (..., 2, 2).

    Computed by repeated squaring of S (O(log T) matrix products), an independent route from
    the running recurrence used by the threshold scans; the two are tested against each other.
    """
    T = positive_int("refresh interval", refresh_interval)
    S = step_matrix(stale, fresh, lr, momentum)
    P = np.broadcast_to(np.eye(3), S.shape).copy()
    base = S
    while T:
        if T & 1:
            P = base @ P
        base = base @ base
        T >>= 1
    return P[..., :2, :2] + P[..., :2, 2:3] * np.array([1.0, 0.0])


def eigenvalues_2x2(m11, m12, m21, m22) -> tuple[np.ndarray, np.ndarray]:
    """Both eigenvalues of [[m11, m12], [m21, m22]] (complex), |lambda_1| >= |lambda_2|."""
    tr = np.asarray(m11 + m22, dtype=complex)
    det = np.asarray(m11 * m22 - m12 * m21, dtype=complex)
    root = np.sqrt(tr * tr - 4.0 * det)
    l1, l2 = (tr + root) / 2.0, (tr - root) / 2.0
    swap = np.abs(l2) > np.abs(l1)
    return np.where(swap, l2, l1), np.where(swap, l1, l2)


def _rho(m11, m12, m21, m22) -> np.ndarray:
    """Spectral radius of a 2x2 real matrix from its trace and determinant (no complex sqrt)."""
    tr = m11 + m22
    det = m11 * m22 - m12 * m21
    disc = tr * tr - 4.0 * det
    real = (np.abs(tr) + np.sqrt(np.maximum(disc, 0.0))) / 2.0
    pair = np.sqrt(np.maximum(det, 0.0))  # complex pair: |lambda|^2 = det
    return np.where(disc >= 0.0, real, pair)


def spectral_radius(M: np.ndarray) -> np.ndarray:
    """rho(M) for stacked 2x2 matrices; shape (...)."""
    M = np.asarray(M, dtype=float)
    return _rho(M[..., 0, 0], M[..., 0, 1], M[..., 1, 0], M[..., 1, 1])


def critical_refresh_interval(stale, fresh, lr, momentum, t_max: int = 10_000) -> np.ndarray:
    """Smallest integer T in [1, t_max] with rho(M(T)) > 1 (+RHO_TOL); STABLE (0) if none.

    Stability need not be monotone in T, so this scans T upward (vectorised over
    configurations, stopping once every configuration has crossed) rather than bisecting.
    """
    powers = _PeriodPowers(stale, fresh, lr, momentum)
    shape = np.shape(powers.p[0])
    result = np.full(shape, STABLE, dtype=np.int64)
    pending = np.ones(shape, dtype=bool)
    while True:
        unstable = _rho(*powers.monodromy_entries()) > 1.0 + RHO_TOL
        hit = pending & unstable
        result[hit] = powers.T
        pending &= ~hit
        if not pending.any() or powers.T >= t_max:
            return result
        powers.advance()


def spectral_radius_by_interval(stale, fresh, lr, momentum, t_max: int) -> np.ndarray:
    """rho(M(T)) for T = 1..t_max; shape (t_max, ...)."""
    powers = _PeriodPowers(stale, fresh, lr, momentum)
    out = [_rho(*powers.monodromy_entries())]
    for _ in range(t_max - 1):
        powers.advance()
        out.append(_rho(*powers.monodromy_entries()))
    return np.stack(out)


def critical_learning_rate(
    curvature_stale,
    curvature_fresh,
    momentum,
    refresh_interval: int,
    lr_max: float = 1e4,
    lr_min: float = 1e-8,
    grid: int = 240,
    bisections: int = 50,
) -> np.ndarray:
    """Smallest eta in [lr_min, lr_max] with rho(M(T)) > 1, to ~1e-12 relative; np.inf if none.

    The stiffnesses scale with eta (a, b are per unit logit and eta multiplies them), so the
    configuration is given by the curvatures a, b at eta = 1. A log-spaced scan brackets the
    first unstable eta (rho need not be monotone in eta), then bisection refines the bracket.
    """
    a, b, mu = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (curvature_stale, curvature_fresh, momentum)))
    etas = np.geomspace(lr_min, lr_max, grid).reshape((grid,) + (1,) * a.ndim)
    M = monodromy(a, b, etas, mu, refresh_interval)
    unstable = spectral_radius(M) > 1.0 + RHO_TOL  # (grid, ...)
    any_unstable = unstable.any(axis=0)
    first = np.argmax(unstable, axis=0)
    hi = np.take_along_axis(np.broadcast_to(etas, unstable.shape), first[None], axis=0)[0]
    lo = np.where(first > 0, np.take_along_axis(np.broadcast_to(etas, unstable.shape), np.maximum(first - 1, 0)[None], axis=0)[0], 0.0)
    for _ in range(bisections):
        mid = 0.5 * (lo + hi)
        bad = spectral_radius(monodromy(a, b, mid, mu, refresh_interval)) > 1.0 + RHO_TOL
        hi = np.where(bad, mid, hi)
        lo = np.where(bad, lo, mid)
    return np.where(any_unstable, hi, np.inf)


def discrete_damping_ratio(M: np.ndarray, refresh_interval: int) -> np.ndarray:
    """Damping ratio of the continuous oscillator whose period-T flow equals M.

    With s_i = log(lambda_i) / T the equivalent continuous rates, zeta = -(s1+s2) / (2 sqrt(s1 s2)):
    for a complex pair this is -ln|l| / sqrt(ln|l|^2 + theta^2) (< 1, oscillatory); for two real
    positive eigenvalues it is >= 1 (overdamped). A negative real eigenvalue flips sign every
    period (theta = pi); then the dominant one defines zeta. NaN where undefined (a zero eigenvalue
    or rates of opposite sign, i.e. a saddle).
    """
    M = np.asarray(M, dtype=float)
    l1, l2 = eigenvalues_2x2(M[..., 0, 0], M[..., 0, 1], M[..., 1, 0], M[..., 1, 1])
    with np.errstate(divide="ignore", invalid="ignore"):
        s1, s2 = np.log(l1.astype(complex)), np.log(l2.astype(complex))
        prod = s1 * s2
        zeta_pair = np.real(-(s1 + s2) / (2.0 * np.sqrt(prod)))
        zeta_dominant = -np.log(np.abs(l1)) / np.sqrt(np.log(np.abs(l1)) ** 2 + np.pi**2)
    complex_pair = np.abs(np.imag(l1)) > 1e-14 * np.maximum(np.abs(l1), 1e-300)
    real_positive = ~complex_pair & (np.real(l1) > 0) & (np.real(l2) > 0)
    same_sign_rates = np.real(prod) > 0
    out = np.where(complex_pair | (real_positive & same_sign_rates), zeta_pair, np.nan)
    negative = ~complex_pair & ((np.real(l1) < 0) | (np.real(l2) < 0)) & (np.abs(l1) > 0)
    return np.where(negative, zeta_dominant, out)


def discrete_regime(M: np.ndarray) -> np.ndarray:
    """'unstable' if rho(M) > 1, 'oscillatory' if an eigenvalue is complex or negative, else 'overdamped'."""
    M = np.asarray(M, dtype=float)
    l1, l2 = eigenvalues_2x2(M[..., 0, 0], M[..., 0, 1], M[..., 1, 0], M[..., 1, 1])
    rotating = (np.abs(np.imag(l1)) > 1e-14 * np.maximum(np.abs(l1), 1e-300)) | (np.real(l1) < 0) | (np.real(l2) < 0)
    regime = np.where(rotating, "oscillatory", "overdamped")
    return np.where(spectral_radius(M) > 1.0 + RHO_TOL, "unstable", regime)


def oscillatory_refresh_interval(stale, fresh, lr, momentum, t_max: int = 10_000) -> np.ndarray:
    """Smallest T in [1, t_max] at which M(T) stops being overdamped; STABLE (0) if never."""
    powers = _PeriodPowers(stale, fresh, lr, momentum)
    shape = np.shape(powers.p[0])
    result = np.full(shape, STABLE, dtype=np.int64)
    pending = np.ones(shape, dtype=bool)
    while True:
        m = powers.monodromy_entries()
        M = np.stack([np.stack([m[0], m[1]], -1), np.stack([m[2], m[3]], -1)], -2)
        hit = pending & (discrete_regime(M) != "overdamped")
        result[hit] = powers.T
        pending &= ~hit
        if not pending.any() or powers.T >= t_max:
            return result
        powers.advance()
