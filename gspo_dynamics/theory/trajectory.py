"""Closed-form expected-reward trajectories of the training oscillator, and their inversion.

The deterministic part of the reduced-order model (noise dropped), time t in optimizer steps:

    m R'' + c R' + k (R - R_inf) = 0,      R(0) = R_0,  R'(0) = v_0.

With x = R - R_inf, alpha = c / (2m), omega0 = sqrt(k/m) and q = alpha^2 - omega0^2 = (c^2 - 4mk)/(4m^2),
the roots of m s^2 + c s + k are s = -alpha +/- sqrt(q) and, in every regime,

    x(t)  = e^{-alpha t} [ x0 C(t) + (v0 + alpha x0) S(t) ]
    x'(t) = e^{-alpha t} [ v0 C(t) - (alpha v0 + omega0^2 x0) S(t) ]

    C(t) = cosh(sqrt(q) t),  S(t) = sinh(sqrt(q) t) / sqrt(q)      (q > 0, overdamped)
    C(t) = cos(w t),         S(t) = sin(w t) / w,  w = sqrt(-q)    (q < 0, underdamped)

C and S are entire functions of q t^2 (C = sum (q t^2)^n/(2n)!, S = t sum (q t^2)^n/(2n+1)!), so the
formula is continuous through critical damping q = 0, where it reads e^{-alpha t}[x0 + (v0 + alpha x0) t].
The textbook forms (two exponentials over s1 - s2, or sin(w t)/w) are 0/0 there; here S is evaluated
as t sinc(w t) and as t e^{s_slow t} phi(2 sqrt(q) t) with phi(z) = (1 - e^{-z})/z, which have no
division by a vanishing root difference. c < 0 (growing solutions) uses the same formula.

The project's oscillator comes from heavy-ball SGD with momentum mu, learning rate eta, a stale
curvature a (forces computed at the sampling policy, refreshed every T steps) and a fresh curvature b:

    m = (1 + mu) / 2,      c = (1 - mu) - eta a (T - 1) / 2,      k = eta (a + b).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Literal

import numpy as np

from gspo_dynamics._checks import positive_int
from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory import continuous

Regime = Literal["overdamped", "critical", "underdamped", "unstable"]
REGIMES: tuple[str, ...] = ("overdamped", "critical", "underdamped", "unstable")
Branch = Literal["overdamped", "underdamped"]
BRANCHES: tuple[str, ...] = ("overdamped", "underdamped")

# Critical damping is a measure-zero set: |zeta - 1| below this is labelled "critical". zeta is
# computed from (m, c, k) with ~1e-16 relative rounding, amplified by up to ~1e6 by the cancellation
# in c = (1 - mu) - eta a (T - 1)/2 near the stability edge; 1e-8 absorbs that and nothing physical.
CRITICAL_TOL = 1e-8
# Below this z, phi(z) = (1 - e^{-z})/z is taken from its series 1 - z/2 + z^2/6 (the dropped
# z^3/24 is < 1e-16 there), which removes the 0/0 at z = 0.
PHI_SERIES_MAX = 1e-5
# A measured tau within this relative distance of the fastest reachable relaxation time (the
# critical-damping fold, computed with rounding) is treated as lying on the fold, not beyond it.
FOLD_RTOL = 1e-12


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def _real(name: str, value) -> float:
    """`value` as a finite float, or ConfigError naming it."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    _require(ok, f"{name} must be a finite real number, got {value!r}")
    return float(value)


def _array(name: str, value, nonnegative: bool = False) -> np.ndarray:
    """`value` as a float64 array of finite (and, if asked, >= 0) entries, or ConfigError naming it."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a real number or an array of real numbers, got {value!r}") from None
    _check_all(name, arr, np.isfinite(arr), "finite")
    if nonnegative:
        _check_all(name, arr, arr >= 0.0, ">= 0 (time since the start)")
    return arr


def _check_all(name: str, arr: np.ndarray, ok: np.ndarray, expected: str) -> None:
    """ConfigError naming the first entry of `arr` where `ok` fails."""
    if not np.all(ok):
        bad = np.broadcast_to(arr, np.shape(ok))[~ok].flat[0]
        where = "" if arr.ndim == 0 else " (an entry)"
        raise ConfigError(f"{name} must be {expected}, got {bad}{where}")


@dataclass(frozen=True, kw_only=True)
class Oscillator:
    """The damped oscillator  m R'' + c R' + k (R - R_inf) = 0  (time in optimizer steps)."""

    mass: float  # m > 0, inertia; (1 + mu)/2 for heavy-ball momentum mu
    damping: float  # c, any real; (1 - mu) - eta a (T - 1)/2, eroded by stale forces; c <= 0 is unstable
    stiffness: float  # k > 0, restoring force; eta (a + b), learning rate times curvature

    def __post_init__(self) -> None:
        for name in ("mass", "damping", "stiffness"):
            _real(name, getattr(self, name))
        _require(self.mass > 0.0, f"mass m must be positive, got {self.mass}")
        _require(self.stiffness > 0.0, f"stiffness k must be positive, got {self.stiffness}")

    @property
    def natural_frequency(self) -> float:
        """omega0 = sqrt(k / m)."""
        return math.sqrt(self.stiffness / self.mass)

    @property
    def damping_ratio(self) -> float:
        """zeta = c / (2 sqrt(m k)); 1 is critical, < 0 is negative damping."""
        return self.damping / (2.0 * math.sqrt(self.mass * self.stiffness))

    @property
    def discriminant(self) -> float:
        """c^2 - 4 m k = (c - 2 sqrt(mk)) (c + 2 sqrt(mk)): > 0 two real roots, < 0 a complex pair."""
        return _discriminant(self.mass, self.damping, self.stiffness)

    @property
    def decay_rates(self) -> tuple[float, float]:
        """(r_slow, r_fast) = -Re(s) of the roots of m s^2 + c s + k, r_slow <= r_fast.

        Real roots (c^2 > 4mk):  r = (c -/+ sqrt(c^2 - 4mk)) / (2m), the smaller one written as
        2k / (c + sqrt(c^2 - 4mk)) when c > 0 to avoid cancellation (r_slow r_fast = k/m).
        Complex pair: r_slow = r_fast = c/(2m). Negative rates are growth rates (c < 0).
        """
        return _decay_rates(self.mass, self.damping, self.stiffness)

    @property
    def relaxation_time(self) -> float:
        """tau = 1 / r_slow, the slowest decay time (2m/c, the envelope time, if underdamped); inf if c <= 0."""
        r = self.decay_rates[0]
        return 1.0 / r if r > 0.0 else math.inf

    @property
    def damped_frequency(self) -> float:
        """w = sqrt(4mk - c^2) / (2m) if the roots are a complex pair, else 0."""
        d = self.discriminant
        return math.sqrt(-d) / (2.0 * self.mass) if d < 0.0 else 0.0

    @property
    def regime(self) -> Regime:
        """'unstable' if c <= 0, else 'critical' if |zeta - 1| < CRITICAL_TOL, else over-/underdamped."""
        if not self.damping > 0.0:
            return "unstable"
        zeta = self.damping_ratio
        if abs(zeta - 1.0) < CRITICAL_TOL:
            return "critical"
        return "overdamped" if zeta > 1.0 else "underdamped"


def _phi(z: np.ndarray) -> np.ndarray:
    """phi(z) = (1 - e^{-z}) / z for z >= 0, phi(0) = 1 (series below PHI_SERIES_MAX)."""
    small = z < PHI_SERIES_MAX
    zs = np.where(small, 1.0, z)
    out = np.asarray(-np.expm1(-zs) / zs)  # an array also for a 0-d z
    zt = z[small]  # the few entries near z = 0 (t = 0 among them): the series
    out[small] = 1.0 - zt / 2.0 + zt * zt / 6.0
    return out


def _discriminant(m: float, c: float, k: float) -> float:
    """c^2 - 4 m k = (c - 2 sqrt(mk)) (c + 2 sqrt(mk)) (`Oscillator.discriminant`)."""
    s = 2.0 * math.sqrt(m * k)
    return (c - s) * (c + s)


def _decay_rates(m: float, c: float, k: float) -> tuple[float, float]:
    """(r_slow, r_fast) of `Oscillator.decay_rates`."""
    d = _discriminant(m, c, k)
    if d <= 0.0:
        return c / (2.0 * m), c / (2.0 * m)
    root = math.sqrt(d)
    if c > 0.0:
        return 2.0 * k / (c + root), (c + root) / (2.0 * m)
    return (c - root) / (2.0 * m), 2.0 * k / (c - root)


def _propagators(m: float, c: float, k: float, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(e^{-alpha t} C(t), e^{-alpha t} S(t)) of the oscillator (m, c, k), both continuous through q = 0.

    q > 0:  e^{-alpha t} C = e^{s_slow t} (1 + e^{-2 sqrt(q) t}) / 2,  e^{-alpha t} S = t e^{s_slow t} phi(2 sqrt(q) t),
            with s_slow = sqrt(q) - alpha, so neither cosh nor sinh overflows at late times.
    q <= 0: e^{-alpha t} C = e^{-alpha t} cos(w t),               e^{-alpha t} S = t e^{-alpha t} sinc(w t).
    """
    d = _discriminant(m, c, k)
    if d > 0.0:
        beta = math.sqrt(d) / (2.0 * m)  # sqrt(q)
        grow = np.exp(-_decay_rates(m, c, k)[0] * t)  # e^{s_slow t}
        z = 2.0 * beta * t
        return grow * (1.0 + np.exp(-z)) / 2.0, grow * t * _phi(z)
    w = math.sqrt(-d) / (2.0 * m)
    envelope = np.exp(-c / (2.0 * m) * t)
    return envelope * np.cos(w * t), envelope * t * np.sinc(w * t / np.pi)  # np.sinc(u) = sin(pi u)/(pi u)


def _check_oscillator(osc) -> None:
    if not isinstance(osc, Oscillator):
        raise TypeError(f"expected an Oscillator, got {type(osc).__name__}")


def trajectory(osc: Oscillator, t, r_inf, r0, v0=0.0) -> np.ndarray:
    """R(t) solving  m R'' + c R' + k (R - R_inf) = 0,  R(0) = R_0,  R'(0) = v_0, in every regime.

        R(t) = R_0 + x0 (e^{-alpha t} C(t) - 1) + (v0 + alpha x0) e^{-alpha t} S(t),   x0 = R_0 - R_inf

    (the module docstring defines C, S). Anchoring at R_0 makes R(0) = R_0 exactly.
    t: times >= 0, any shape; r_inf, r0, v0 broadcast against t. Returns float64 of the broadcast
    shape (a numpy scalar for scalar inputs).
    """
    _check_oscillator(osc)
    t = _array("time t", t, nonnegative=True)
    r_inf, r0, v0 = (_array(n, v) for n, v in (("r_inf", r_inf), ("r0", r0), ("v0", v0)))
    ec, es = _propagators(osc.mass, osc.damping, osc.stiffness, t)
    return _anchored(ec, es, osc.damping / (2.0 * osc.mass), r_inf, r0, v0)[()]


def _anchored(ec, es, alpha, r_inf, r0, v0) -> np.ndarray:
    """R_0 + x0 (e^{-alpha t} C - 1) + (v0 + alpha x0) e^{-alpha t} S,  x0 = R_0 - R_inf (`trajectory`)."""
    x0 = r0 - r_inf
    return r0 + x0 * (ec - 1.0) + (v0 + alpha * x0) * es


def velocity(osc: Oscillator, t, r_inf, r0, v0=0.0) -> np.ndarray:
    """R'(t) = e^{-alpha t} [ v0 C(t) - (alpha v0 + omega0^2 x0) S(t) ],  x0 = R_0 - R_inf; R'(0) = v0 exactly.

    Shapes as in `trajectory`.
    """
    _check_oscillator(osc)
    t = _array("time t", t, nonnegative=True)
    r_inf, r0, v0 = (_array(n, v) for n, v in (("r_inf", r_inf), ("r0", r0), ("v0", v0)))
    x0 = r0 - r_inf
    ec, es = _propagators(osc.mass, osc.damping, osc.stiffness, t)
    alpha = osc.damping / (2.0 * osc.mass)
    return (v0 * ec - (alpha * v0 + osc.stiffness / osc.mass * x0) * es)[()]


def single_exponential(t, r_inf, r0, tau) -> np.ndarray:
    """The saturation law  R(t) = R_inf - (R_inf - R_0) exp(-t / tau),  i.e. c R' + k (R - R_inf) = 0.

    Evaluated as R_0 - (R_inf - R_0) expm1(-t/tau), exact at t = 0. Shapes as in `trajectory`.
    """
    t = _array("time t", t, nonnegative=True)
    r_inf, r0 = _array("r_inf", r_inf), _array("r0", r0)
    tau = _real("timescale tau", tau)
    _require(tau > 0.0, f"timescale tau must be positive, got {tau}")
    return (r0 - (r_inf - r0) * np.expm1(-t / tau))[()]


def _require_stable(osc: Oscillator, what: str) -> None:
    _require(osc.damping > 0.0, f"{what} needs positive damping c, got c = {osc.damping} (an unstable oscillator)")


def overdamped_timescale(osc: Oscillator) -> float:
    """tau = c / k, the timescale of the massless limit m k / c^2 -> 0 (dropping m R'').

    The slow mode tends to it: tau_slow = (c + sqrt(c^2 - 4mk)) / (2k) = (c/k) (1 - mk/c^2 + O((mk/c^2)^2)).
    """
    _check_oscillator(osc)
    _require_stable(osc, "the overdamped timescale c/k")
    return osc.damping / osc.stiffness


def mode_timescales(osc: Oscillator) -> tuple[float, float]:
    """(tau_slow, tau_fast) = (1 / r_slow, 1 / r_fast), tau_slow >= tau_fast.

    Overdamped:  tau_slow = (c + sqrt(c^2 - 4mk)) / (2k) -> c/k,   tau_fast = 2m / (c + sqrt(c^2 - 4mk)) -> m/c
    (as m k / c^2 -> 0). Critical or underdamped: both equal the envelope time 2m/c.
    """
    _check_oscillator(osc)
    _require_stable(osc, "mode timescales")
    r_slow, r_fast = osc.decay_rates
    return 1.0 / r_slow, 1.0 / r_fast


def slow_start_quadratic(osc: Oscillator, t, r_inf, r0) -> np.ndarray:
    """Early-time trajectory from rest (v0 = 0):  R(t) = R_0 + k (R_inf - R_0) t^2 / (2m) + O(t^3).

    From R''(0) = -k (R_0 - R_inf) / m; the relative correction is -c t / (3m) + O(t^2).
    """
    _check_oscillator(osc)
    t = _array("time t", t, nonnegative=True)
    r_inf, r0 = _array("r_inf", r_inf), _array("r0", r0)
    return (r0 + osc.stiffness * (r_inf - r0) * t * t / (2.0 * osc.mass))[()]


def slow_start_duration(osc: Oscillator) -> float:
    """Late-time lag t_lag of the trajectory started from rest behind the slow-mode exponential.

    Overdamped, v0 = 0:  x(t) = x0 [A e^{-r_slow t} + (1 - A) e^{-r_fast t}],  A = r_fast / (r_fast - r_slow) > 1,
    so at late times  R(t) = R_inf - (R_inf - R_0) exp(-(t - t_lag) / tau_slow) + O(e^{-r_fast t})  with

        t_lag = tau_slow ln A = -log1p(-r_slow / r_fast) / r_slow,

    the delay inertia adds to a single exponential of time constant tau_slow started at t = 0.
    t_lag -> tau_fast = m/c as m k / c^2 -> 0 and diverges (logarithmically) at critical damping, so
    it is defined for the overdamped regime only.
    """
    _check_oscillator(osc)
    _require(
        osc.regime == "overdamped",
        f"the slow-start lag needs an overdamped oscillator (zeta > 1), got zeta = {osc.damping_ratio} ({osc.regime})",
    )
    r_slow, r_fast = osc.decay_rates
    return -math.log1p(-r_slow / r_fast) / r_slow


def classify_regime(mass, damping, stiffness) -> np.ndarray:
    """Elementwise `Oscillator.regime` over broadcast arrays: 'unstable' (c <= 0), 'critical'
    (|zeta - 1| < CRITICAL_TOL), 'overdamped' (zeta > 1) or 'underdamped', zeta = c / (2 sqrt(m k)).

    Returns a numpy array of str with the broadcast shape (0-d for scalars).
    """
    m, c, k = np.broadcast_arrays(*(_array(n, v) for n, v in (("mass", mass), ("damping", damping), ("stiffness", stiffness))))
    _check_all("mass m", m, m > 0.0, "positive")
    _check_all("stiffness k", k, k > 0.0, "positive")
    zeta = c / (2.0 * np.sqrt(m * k))
    conditions = [~(c > 0.0), np.abs(zeta - 1.0) < CRITICAL_TOL, zeta > 1.0]
    return np.select(conditions, ["unstable", "critical", "overdamped"], default="underdamped")


def _check_hyperparams(lr, momentum, refresh_interval) -> tuple[float, float, int]:
    eta, mu = _real("learning rate", lr), _real("momentum", momentum)
    _require(eta > 0.0, f"learning rate must be positive, got {eta}")
    _require(0.0 <= mu < 1.0, f"momentum must be in [0, 1), got {mu}")
    return eta, mu, positive_int("refresh interval", refresh_interval)


def oscillator_from_hyperparams(curvature_stale, curvature_fresh, lr, momentum, refresh_interval) -> Oscillator:
    """The continuous oscillator of heavy-ball SGD with stale curvature a and fresh curvature b
    (`continuous.oscillator_coefficients`):

        m = (1 + mu) / 2,   c = (1 - mu) - eta a (T - 1) / 2,   k = eta (a + b).
    """
    a, b = _real("stale curvature", curvature_stale), _real("fresh curvature", curvature_fresh)
    eta, mu, T = _check_hyperparams(lr, momentum, refresh_interval)
    _require(a + b > 0.0, f"total curvature a + b must be positive, got {a} + {b}")
    m, c, k = (float(x) for x in continuous.oscillator_coefficients(a, b, eta, mu, T))
    return Oscillator(mass=m, damping=c, stiffness=k)


def _timescale_terms(lr, momentum, refresh_interval, stale_fraction) -> tuple[float, float, float, float]:
    """(eta, m, c0, g) of `curvature_from_timescale`'s docstring, the inputs checked."""
    eta, mu, T = _check_hyperparams(lr, momentum, refresh_interval)
    f = _real("stale fraction", stale_fraction)
    _require(0.0 <= f <= 1.0, f"stale fraction must be in [0, 1], got {f}")
    return eta, (1.0 + mu) / 2.0, 1.0 - mu, eta * f * (T - 1) / 2.0


def fastest_relaxation_rate(lr, momentum=0.0, refresh_interval=1, stale_fraction=1.0) -> float:
    """r_c, the fastest decay rate per step any curvature gives these hyperparameters (critical damping; the
    equation in `curvature_from_timescale`'s docstring): a fitted time scale below 1 / r_c has no curvature."""
    return _critical_rate(*_timescale_terms(lr, momentum, refresh_interval, stale_fraction))


def _critical_rate(eta: float, m: float, c0: float, g: float) -> float:
    """r_c = c0 eta / (m eta + sqrt(m^2 eta^2 + m g c0 eta)) (`curvature_from_timescale`'s docstring)."""
    return c0 * eta / (m * eta + math.sqrt(m * m * eta * eta + m * g * c0 * eta))


def curvature_from_timescale(
    tau, lr, momentum=0.0, refresh_interval=1, stale_fraction=1.0, *, branch: Branch = "overdamped"
) -> float:
    """Total curvature lambda whose oscillator relaxes with the measured timescale tau (optimizer steps).

    With a = f lambda, b = (1 - f) lambda (f = stale_fraction):  m = (1 + mu)/2,  c = c0 - g lambda,
    k = eta lambda,  c0 = 1 - mu,  g = eta f (T - 1)/2. The slowest decay rate r = 1/tau obeys:

      overdamped branch (c^2 >= 4mk): -r is a root, m r^2 - c r + k = 0, linear in lambda:
            lambda = r (c0 - m r) / (eta + g r)
      underdamped branch (c^2 < 4mk): envelope rate r = c / (2m):
            lambda = (c0 - 2 m r) / g

    r(lambda) rises along the overdamped branch to its maximum at critical damping,
            r_c = c0 eta / (m eta + sqrt(m^2 eta^2 + m g c0 eta))   (root of m g r^2 + 2 m eta r - c0 eta = 0),
    then falls along the underdamped branch (stays at c0/(2m) if g = 0). So tau < 1/r_c has no solution
    and tau > 1/r_c has one on each branch: `branch` picks which (the overdamped one, the smaller lambda,
    by default). Raises ConfigError when no lambda reproduces tau.
    """
    tau = _real("timescale tau", tau)
    _require(tau > 0.0, f"timescale tau must be positive, got {tau}")
    _require(branch in BRANCHES, f"branch must be one of {', '.join(BRANCHES)}; got {branch!r}")
    eta, m, c0, g = _timescale_terms(lr, momentum, refresh_interval, stale_fraction)
    r_c = _critical_rate(eta, m, c0, g)
    r = 1.0 / tau
    _require(
        r <= r_c * (1.0 + FOLD_RTOL),
        f"timescale tau = {tau:.4g} is shorter than the fastest relaxation these hyperparameters allow "
        f"(critical damping, tau = {1.0 / r_c:.4g} steps); expected tau >= {1.0 / r_c:.4g}",
    )
    r = min(r, r_c)
    if branch == "overdamped":
        return r * (c0 - m * r) / (eta + g * r)
    _require(
        g > 0.0,
        f"an underdamped envelope time does not determine the curvature without stale forces "
        f"(refresh_interval = {refresh_interval}, stale_fraction = {stale_fraction}); expected branch='overdamped'",
    )
    return (c0 - 2.0 * m * r) / g
