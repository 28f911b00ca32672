"""The linearised update in closed form: sympy derivation of M(T) and its continuous-time limit.

This module re-derives, symbolically, what `gspo_dynamics.theory.linear` computes numerically.
Conventions are those of linear.py: x is the deviation of the current logit, v the heavy-ball
velocity, x_s the deviation of the sampling policy (frozen for a refresh period of T steps and
reset x_s <- x at the start of each period), a the stale and b the fresh stiffness, eta the
learning rate and mu the momentum. One step is

    g = -a x_s - b x,    v' = mu v + g,    x' = x + eta v',

so on (x, v, x_s) the step matrix is S = [[1 - eta b, eta mu, -eta a], [-b, mu, -a], [0, 0, 1]],
written in blocks S = [[H, f], [0, 1]]. The one-period map on (x, v) is the monodromy matrix

    M(T) = H^T + u_T e1^T,    u_T = W_T f,    W_T = sum_{j<T} H^j.

Closed form for symbolic T. H has det H = mu and tr H = 1 + mu - eta b, so its eigenvalues solve
r^2 - (1 + mu - eta b) r + mu = 0. For any function phi, phi(H) interpolates phi at r1, r2:

    H^T = (r1^T (H - r2 I) - r2^T (H - r1 I)) / (r1 - r2),
    W_T = (G1 (H - r2 I) - G2 (H - r1 I)) / (r1 - r2),    G_i = sum_{j<T} r_i^j = (1 - r_i^T)/(1 - r_i).

Since det(I - H) = eta b, W_T = (I - H)^{-1}(I - H^T) is singular at b = 0, but the geometric
sums are not: there r1 = 1, r2 = mu and G1 = T, which gives the b -> 0 limit. Stability of the
real 2x2 matrix M is decided by its characteristic polynomial lambda^2 - tr(M) lambda + det(M)
through the Jury conditions |det M| < 1 and |tr M| < 1 + det M.

Continuous-time limit. Eliminating v gives x_{t+1} - (1 + mu) x_t + mu x_{t-1} = eta g_t.
Taylor-expanding x_{t+-1} to second order in the step (the "modified equation") and averaging
the stale force over the phase j = 0..T-1 of the refresh window (x_s = x(t - j), expanded to
first order in the lag, mean lag (T - 1)/2) gives the damped oscillator

    m x'' + c x' + k x = 0,   m = (1 + mu)/2,   c = (1 - mu) - eta a (T - 1)/2,   k = eta (a + b),

with damping ratio zeta = c / (2 sqrt(m k)); the damping vanishes at T_c = 1 + 2 (1 - mu)/(eta a).

`derive()` (cached; importing this module derives nothing) returns every expression;
`numeric_monodromy` and `numeric_oscillator` are numpy-broadcasting evaluations; `latex()`
renders the results. sympy and numpy only.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import sympy as sp

from gspo_dynamics._errors import ConfigError

# In phi[z1, z2] = (z1^T - z2^T)/(z1 - z2) the direct quotient loses ~eps |z| / |z1 - z2| to
# cancellation; for |z1 - z2| <= 2 NEAR |z1 + z2| / 2 a cancellation-free form is used instead.
NEAR = 0.5
# The closed form is evaluated in complex arithmetic (complex-conjugate eigenvalues); the
# imaginary part of the result is rounding only and must stay below this, relative to |M|.
IMAG_RTOL = 1e-6


@dataclass(frozen=True)
class Derivation:
    """Symbolic results; matrices are sympy ImmutableMatrix, everything else sympy Expr."""

    a: sp.Symbol  # stale stiffness
    b: sp.Symbol  # fresh stiffness
    eta: sp.Symbol  # learning rate
    mu: sp.Symbol  # heavy-ball momentum
    T: sp.Symbol  # refresh interval (an integer >= 1 for the discrete results)
    lam: sp.Symbol  # eigenvalue variable of the characteristic polynomial
    r1: sp.Symbol  # eigenvalues of H, as symbols in the "spectral" forms
    r2: sp.Symbol
    step: sp.ImmutableMatrix  # S, 3x3 on (x, v, x_s)
    H: sp.ImmutableMatrix  # (x, v) block of S
    f: sp.ImmutableMatrix  # stale-force column of S
    eigenvalues: tuple[sp.Expr, sp.Expr]  # r1, r2 = (tr H +- sqrt(tr H^2 - 4 mu)) / 2
    stale_fixed_point: sp.ImmutableMatrix  # (I - H)^{-1} f = (-a/b, 0)
    power: sp.ImmutableMatrix  # H^T in r1, r2
    power_sum: sp.ImmutableMatrix  # W_T = sum_{j<T} H^j in r1, r2
    monodromy_spectral: sp.ImmutableMatrix  # M(T) in r1, r2
    monodromy: sp.ImmutableMatrix  # M(T) in a, b, eta, mu, T
    monodromy_b0: sp.ImmutableMatrix  # lim_{b -> 0} M(T)
    newton: sp.ImmutableMatrix  # M(T) in Newton form: see `newton_terms`
    newton_terms: dict  # symbol -> its definition in r1, r2, T
    trace: sp.Expr  # tr M(T) in a, b, r1, r2, T (eta, mu eliminated by Vieta; b != 0)
    determinant: sp.Expr  # det M(T), likewise
    charpoly: sp.Expr  # lam^2 - tr M lam + det M
    trace_symbol: sp.Symbol  # tr M and det M as plain symbols, for the Jury conditions
    det_symbol: sp.Symbol
    jury: tuple  # (|det M| < 1, |tr M| < 1 + det M): stable iff both hold
    recursion: sp.Eq  # x_{t+1} - (1+mu) x_t + mu x_{t-1} = eta g_t, Taylor-expanded (h = 1)
    oscillator: sp.Eq  # m x'' + c x' + k x = 0
    m: sp.Expr
    c: sp.Expr
    k: sp.Expr
    zeta: sp.Expr  # c / (2 sqrt(m k))
    critical_refresh_interval: sp.Expr  # T_c solving c = 0


def _step_blocks():
    a, b, eta, mu = sp.symbols("a b eta mu", real=True)
    S = sp.ImmutableMatrix([[1 - eta * b, eta * mu, -eta * a], [-b, mu, -a], [0, 0, 1]])
    return (a, b, eta, mu), S, S[:2, :2], S[:2, 2]


def _interpolate(values, H, r1, r2):
    """phi(H) for 2x2 H with eigenvalues r1 != r2, given (phi(r1), phi(r2)) (Lagrange form)."""
    I = sp.eye(2)
    return sp.ImmutableMatrix((values[0] * (H - r2 * I) - values[1] * (H - r1 * I)) / (r1 - r2))


def _continuous_limit(a, b, eta, mu, T):
    """Modified equation of the eliminated recursion, stale force averaged over the window."""
    t, h, j = sp.symbols("t h j")
    x = sp.Function("x")

    def shifted(lag, order):  # x(t + lag h) to `order` in h
        return sp.series(x(t + lag * h), h, 0, order + 1).removeO().doit()

    lhs = shifted(1, 2) - (1 + mu) * x(t) + mu * shifted(-1, 2)
    stale = sp.summation(shifted(-j, 1), (j, 0, T - 1)) / T  # mean over the refresh phase
    rhs = eta * (-a * stale - b * x(t))
    residual = sp.expand((lhs - rhs).subs(h, 1))
    m = sp.factor(residual.coeff(x(t).diff(t, 2)))
    c = sp.expand(residual.coeff(x(t).diff(t)))
    c = c.subs(eta, 0) + sp.factor(c - c.subs(eta, 0))  # (1 - mu) - eta a (T - 1)/2
    k = sp.factor(residual.subs({x(t).diff(t, 2): 0, x(t).diff(t): 0}).coeff(x(t)))
    recursion = sp.Eq(sp.expand(lhs.subs(h, 1)), sp.expand(rhs.subs(h, 1)))
    oscillator = sp.Eq(m * x(t).diff(t, 2) + c * x(t).diff(t) + k * x(t), 0)
    (t_c,) = sp.solve(sp.Eq(c, 0), T)
    return recursion, oscillator, m, c, k, sp.apart(sp.simplify(t_c), a)


@functools.cache
def derive() -> Derivation:
    """Derive S, M(T) in closed form, its characteristic polynomial, Jury conditions and the
    continuous oscillator (m, c, k). Takes about a second; cached."""
    (a, b, eta, mu), S, H, f = _step_blocks()
    T = sp.Symbol("T", positive=True)
    lam = sp.Symbol("lambda")
    r1, r2 = sp.symbols("r_1 r_2")
    e1 = sp.ImmutableMatrix([[1, 0]])
    I = sp.eye(2)

    # Eigenvalues of H from its own trace and determinant (det H simplifies to mu).
    tr_h, det_h = sp.expand(H.trace()), sp.factor(H.det())
    root = sp.sqrt(tr_h**2 - 4 * det_h)
    eigenvalues = ((tr_h + root) / 2, (tr_h - root) / 2)
    stale_fixed_point = sp.ImmutableMatrix(sp.simplify((I - H).inv() * f))

    # M(T) = H^T + W_T f e1^T with both matrix functions interpolated at the eigenvalues.
    power = _interpolate((r1**T, r2**T), H, r1, r2)
    G1, G2 = sp.symbols("G_1 G_2")  # geometric sums sum_{j<T} r_i^j
    sums = _interpolate((G1, G2), H, r1, r2)
    geometric = {G1: (1 - r1**T) / (1 - r1), G2: (1 - r2**T) / (1 - r2)}
    power_sum = sp.ImmutableMatrix(sums.subs(geometric))
    monodromy_spectral = sp.ImmutableMatrix(power + power_sum * f * e1)
    monodromy = sp.ImmutableMatrix(monodromy_spectral.subs({r1: eigenvalues[0], r2: eigenvalues[1]}))
    # b -> 0: r1 = 1, r2 = mu stay distinct and the geometric sum at r1 = 1 is simply T.
    at_b0 = {b: 0, r1: 1, r2: mu, G1: T, G2: (1 - mu**T) / (1 - mu)}
    monodromy_b0 = sp.ImmutableMatrix((power + sums * f * e1).subs(at_b0))

    # Newton form, stable to evaluate: phi(H) = phi(r2) I + phi[r1, r2] (H - r2 I), with the
    # divided differences of phi(r) = r^T at the nodes (1, r1, r2) as plain symbols.
    p2, d12, g2, g12 = sp.symbols("p_2 d_12 g_2 g_12")
    newton = sp.ImmutableMatrix(p2 * I + d12 * (H - r2 * I) + (g2 * I + g12 * (H - r2 * I)) * f * e1)
    newton_terms = {
        p2: r2**T,  # phi(r2)
        d12: (r1**T - r2**T) / (r1 - r2),  # phi[r1, r2]
        g2: (1 - r2**T) / (1 - r2),  # phi[1, r2] = sum_{j<T} r2^j
        g12: ((1 - r1**T) / (1 - r1) - (1 - r2**T) / (1 - r2)) / (r1 - r2),  # phi[1, r1, r2]
    }

    # Characteristic polynomial of M(T); Vieta (mu = r1 r2, eta b = (1 - r1)(1 - r2)) removes
    # eta and mu from the determinant, which then reads mu^T + (a/b) (...).
    vieta = {mu: r1 * r2, eta: (1 - r1) * (1 - r2) / b}
    trace = sp.factor(sp.simplify(monodromy_spectral.trace().subs(vieta)))
    determinant = sp.factor(sp.simplify(monodromy_spectral.det().subs(vieta)))
    charpoly = lam**2 - trace * lam + determinant
    tau, delta = sp.symbols(r"\operatorname{tr}M \det{M}", real=True)
    jury = (sp.Abs(delta) < 1, sp.Abs(tau) < 1 + delta)

    recursion, oscillator, m, c, k, t_c = _continuous_limit(a, b, eta, mu, T)
    return Derivation(
        a=a, b=b, eta=eta, mu=mu, T=T, lam=lam, r1=r1, r2=r2,
        step=S, H=H, f=f, eigenvalues=eigenvalues, stale_fixed_point=stale_fixed_point,
        power=power, power_sum=power_sum, monodromy_spectral=monodromy_spectral,
        monodromy=monodromy, monodromy_b0=monodromy_b0, newton=newton, newton_terms=newton_terms,
        trace=trace, determinant=determinant, charpoly=charpoly,
        trace_symbol=tau, det_symbol=delta, jury=jury,
        recursion=recursion, oscillator=oscillator, m=m, c=c, k=k,
        zeta=c / (2 * sp.sqrt(m * k)), critical_refresh_interval=t_c,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Numeric evaluation


def _divided_difference(z1, z2, T):
    """phi[z1, z2] = (z1^T - z2^T)/(z1 - z2) for phi(r) = r^T (= T z^{T-1} at z1 = z2); complex.

    Near-coincident nodes (|h| <= NEAR |c| with c, h the midpoint and half-gap, x = h/c) use

        phi[z1, z2] = c^{T-1} (1 - x^2)^{T/2} T sinhc(T atanh x) atanh(x)/x,

    which is (c^T/(2h)) ((1 + x)^T - (1 - x)^T) with no cancellation; it is even in x, so the
    rounding of h (from a square root near a double eigenvalue) enters only to second order.
    """
    z1, z2 = np.asarray(z1, dtype=complex), np.asarray(z2, dtype=complex)
    c, h = (z1 + z2) / 2, (z1 - z2) / 2
    near = np.abs(h) <= NEAR * np.abs(c)  # includes z1 = z2 (c = 0 too)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        direct = (z1**T - z2**T) / (z1 - z2)
        x = np.where(near & (h != 0), h / np.where(c == 0, 1, c), 0)
        y = np.arctanh(x)
        y_over_x = np.where(x == 0, 1, y / np.where(x == 0, 1, x))
        Ty = T * y
        sinhc = np.where(Ty == 0, 1, np.sinh(Ty) / np.where(Ty == 0, 1, Ty))
        close = c ** (T - 1) * np.exp(T / 2 * np.log1p(-x * x)) * T * sinhc * y_over_x
    return np.where(near, close, direct)


def _second_divided_difference(z0, z1, z2, T):
    """phi[z0, z1, z2] for phi(r) = r^T, dividing by the widest gap of the three nodes."""
    z0, z1, z2 = np.broadcast_arrays(*(np.asarray(z, dtype=complex) for z in (z0, z1, z2)))
    gaps = np.stack([np.abs(z1 - z2), np.abs(z0 - z2), np.abs(z0 - z1)])  # gap opposite node i
    nodes = np.stack([z0, z1, z2])
    middle = np.argmax(gaps, axis=0)  # the node not on the widest gap
    mid = np.take_along_axis(nodes, middle[None], 0)[0]
    lo = np.take_along_axis(nodes, ((middle + 1) % 3)[None], 0)[0]
    hi = np.take_along_axis(nodes, ((middle + 2) % 3)[None], 0)[0]
    widest = np.max(gaps, axis=0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        spread = (_divided_difference(lo, mid, T) - _divided_difference(mid, hi, T)) / (lo - hi)
        triple = T * (T - 1) / 2 * z0 ** np.maximum(T - 2, 0)  # phi''(z)/2 when all coincide
    return np.where(widest == 0, triple, spread)


@functools.cache
def _newton_function():
    d = derive()
    args = (d.a, d.b, d.eta, d.mu, d.r2, *d.newton_terms)
    return sp.lambdify(args, list(d.newton), modules="numpy")


@functools.cache
def _oscillator_function():
    d = derive()
    return sp.lambdify((d.a, d.b, d.eta, d.mu, d.T), [d.m, d.c, d.k], modules="numpy")


def _check_interval(T) -> np.ndarray:
    T = np.asarray(T)
    if not np.issubdtype(T.dtype, np.integer) and not np.all(np.mod(T, 1) == 0):
        raise ConfigError(f"refresh interval must be an integer, got {T}")
    if np.any(T < 1):
        raise ConfigError(f"refresh interval must be an integer >= 1, got {T}")
    return T.astype(np.int64)


def numeric_monodromy(a, b, eta, mu, T) -> np.ndarray:
    """M(T) from the closed form, broadcasting over all five arguments; shape (..., 2, 2).

    Evaluates the Newton form  M = phi(r2) I + phi[r1, r2] (H - r2 I)
    + (phi[1, r2] I + phi[1, r1, r2] (H - r2 I)) f e1^T  (phi(r) = r^T) in complex arithmetic
    and returns its real part. The divided differences are computed without cancellation, so
    b = 0 (r1 = 1) and double eigenvalues are fine; accuracy degrades only where 1, r1 and r2
    all nearly coincide (mu -> 1 with eta b -> 0).
    """
    T = _check_interval(T)
    a, b, eta, mu, T = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, eta, mu)), T)
    c = (1.0 + mu - eta * b) / 2  # (r1 + r2) / 2 = tr H / 2
    h = np.sqrt(c.astype(complex) ** 2 - mu)  # (r1 - r2) / 2, imaginary for a complex pair
    r1, r2 = c + h, c - h
    with np.errstate(over="ignore", invalid="ignore"):
        terms = (
            r2**T,
            _divided_difference(r1, r2, T),
            _divided_difference(1.0, r2, T),
            _second_divided_difference(1.0, r1, r2, T),
        )
        entries = [np.broadcast_to(e, a.shape) for e in _newton_function()(a, b, eta, mu, r2, *terms)]
    M = np.stack(entries, axis=-1).reshape(a.shape + (2, 2))
    scale = np.maximum(np.abs(M).max(axis=(-2, -1), initial=0.0), 1.0)[..., None, None]
    if np.any(np.abs(M.imag) > IMAG_RTOL * scale):
        raise FloatingPointError("closed-form monodromy has a non-negligible imaginary part")
    return M.real


def numeric_oscillator(a, b, eta, mu, T) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(m, c, k) of  m x'' + c x' + k x = 0, broadcast over the arguments (T may be real here)."""
    a, b, eta, mu, T = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, eta, mu, T)))
    return tuple(np.broadcast_to(np.asarray(v, dtype=float), a.shape) for v in _oscillator_function()(a, b, eta, mu, T))


def latex() -> dict[str, str]:
    """LaTeX for the step matrix, the closed-form M(T), its characteristic polynomial and the
    continuous oscillator with (m, c, k) and T_c."""
    d = derive()
    L = sp.latex
    r1, r2, T = L(d.r1), L(d.r2), L(d.T)
    eig = rf"{r1}, {r2} = {L(d.eigenvalues[0])}, \; {L(d.eigenvalues[1])}"
    state = r"\begin{pmatrix} x \\ v \\ x_s \end{pmatrix}"
    return {
        "step_matrix": rf"{state}_{{j+1}} = {L(d.step)} {state}_j, \quad x_s \leftarrow x"
        rf" \text{{ every }} {T} \text{{ steps}}",
        "monodromy": rf"M({T}) = H^{{{T}}} + \sum_{{j<{T}}} H^j f e_1^\top, \quad"
        rf" H^{{{T}}} = \frac{{{r1}^{{{T}}} (H - {r2} I) - {r2}^{{{T}}} (H - {r1} I)}}{{{r1} - {r2}}},"
        rf" \quad \sum_{{j<{T}}} H^j = \frac{{G_1 (H - {r2} I) - G_2 (H - {r1} I)}}{{{r1} - {r2}}},"
        rf" \quad G_i = \frac{{1 - r_i^{{{T}}}}}{{1 - r_i}}, \quad H = {L(d.H)}, \; f = {L(d.f)},"
        rf" \quad {eig}",
        "characteristic_polynomial": rf"\lambda^2 - \operatorname{{tr}}M({T}) \lambda + \det M({T}),"
        rf" \quad \operatorname{{tr}}M({T}) = {L(d.trace)}, \quad \det M({T}) = {L(d.determinant)}",
        "jury": rf"|\det M({T})| < 1, \quad |\operatorname{{tr}}M({T})| < 1 + \det M({T})",
        "oscillator": rf"m \ddot x + c \dot x + k x = 0, \quad m = {L(d.m)}, \quad c = {L(d.c)},"
        rf" \quad k = {L(d.k)}, \quad \zeta = \frac{{c}}{{2\sqrt{{m k}}}}, \quad"
        rf" T_c = {L(d.critical_refresh_interval)}",
    }
