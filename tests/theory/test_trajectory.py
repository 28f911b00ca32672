"""Closed-form oscillator trajectories, each checked against an independent route.

Routes: numerical integration of the ODE (scipy solve_ivp, DOP853), numpy's polynomial roots, the
critical-damping closed form written out here, the Taylor series at t = 0, the m -> 0 limit, and
brentq root finding on the forward map. All float64.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory.trajectory import (
    CRITICAL_TOL,
    Oscillator,
    classify_regime,
    curvature_from_timescale,
    fastest_relaxation_rate,
    mode_timescales,
    oscillator_from_hyperparams,
    overdamped_timescale,
    single_exponential,
    slow_start_duration,
    slow_start_quadratic,
    trajectory,
    velocity,
)
from gspo_dynamics.theory.trajectory_family import Y_SERIES, trajectory_family

ODE_RTOL = 1e-10  # closed form vs DOP853 at rtol 1e-13, relative to the solution's scale
ROOT_RTOL = 1e-9  # decay rates vs numpy.roots (companion-matrix eigenvalues)
CONTINUITY_TOL = 1e-7  # zeta = 1 +/- 1e-9 vs the critical form; the true difference is ~1e-8 at most
ROUND_TRIP_RTOL = 1e-8  # lambda -> tau -> lambda
BRENTQ_RTOL = 1e-9  # closed-form inversion vs numerical root finding (xtol 1e-14 relative)
LAG_RTOL = 1e-8  # slow-start lag vs the late-time log of the integrated solution

EPS = np.finfo(np.float64).eps

PROPERTY = settings(max_examples=40, deadline=None, derandomize=True)

# zeta ranges per regime; "critical" is exactly 1; unstable ranges keep growth within e^30 on the grid
ZETA_RANGES = {
    "overdamped": (1.05, 6.0),
    "underdamped": (0.02, 0.95),
    "critical": (1.0, 1.0),
    "unstable_oscillatory": (-0.5, 0.0),
    "unstable_overdamped": (-3.0, -1.05),
}

log_uniform = lambda lo, hi: st.floats(math.log(lo), math.log(hi)).map(math.exp)  # noqa: E731


@st.composite
def oscillators(draw, regimes=tuple(ZETA_RANGES)):
    """(Oscillator, regime key) with m, k log-uniform in [0.1, 10] and zeta drawn from the regime's range."""
    key = draw(st.sampled_from(regimes))
    m, k = draw(log_uniform(0.1, 10.0)), draw(log_uniform(0.1, 10.0))
    lo, hi = ZETA_RANGES[key]
    zeta = lo if lo == hi else draw(st.floats(lo, hi))
    return Oscillator(mass=m, damping=2.0 * zeta * math.sqrt(m * k), stiffness=k), key


initial_states = st.tuples(st.floats(-2.0, 2.0), st.floats(-2.0, 2.0), st.floats(-3.0, 3.0))  # (r_inf, r0, v0)


def integrate(osc: Oscillator, t: np.ndarray, x0: float, v0: float) -> tuple[np.ndarray, np.ndarray]:
    """x = R - R_inf and x' on the grid t, by DOP853 on m x'' + c x' + k x = 0."""
    m, c, k = osc.mass, osc.damping, osc.stiffness
    scale = abs(x0) + abs(v0) / osc.natural_frequency + 1e-300
    sol = solve_ivp(
        lambda _, y: [y[1], -(c * y[1] + k * y[0]) / m],
        (0.0, float(t[-1])),
        [x0, v0],
        method="DOP853",
        t_eval=t,
        rtol=1e-13,
        atol=1e-16 * scale,
        max_step=float(t[-1]) / 300.0,  # long steps leave t_eval to the dense interpolant (~1e-10 error)
    )
    assert sol.success
    return sol.y[0], sol.y[1]


@PROPERTY
@given(oscillators(), initial_states)
def test_closed_form_solves_the_ode(drawn, state):
    osc, _ = drawn
    r_inf, r0, v0 = state
    w0 = osc.natural_frequency
    t_end = 10.0 / w0 if osc.damping > 0 else 10.0 / (w0 * (1.0 + 2.0 * abs(osc.damping_ratio)))
    t = np.linspace(0.0, t_end, 61)
    x_num, v_num = integrate(osc, t, r0 - r_inf, v0)
    x_scale = max(np.abs(x_num).max(), abs(r0 - r_inf), abs(v0) / w0, 1e-12)
    v_scale = max(np.abs(v_num).max(), abs(v0), w0 * abs(r0 - r_inf), 1e-12)
    np.testing.assert_allclose(trajectory(osc, t, r_inf, r0, v0), r_inf + x_num, rtol=0, atol=ODE_RTOL * x_scale)
    np.testing.assert_allclose(velocity(osc, t, r_inf, r0, v0), v_num, rtol=0, atol=ODE_RTOL * v_scale)


@PROPERTY
@given(oscillators(), initial_states)
def test_initial_conditions_hold_exactly(drawn, state):
    osc, _ = drawn
    r_inf, r0, v0 = state
    t = np.array([0.0, 1.0, 2.0])
    assert trajectory(osc, t, r_inf, r0, v0)[0] == r0
    assert velocity(osc, t, r_inf, r0, v0)[0] == v0
    assert trajectory(osc, 0.0, r_inf, r0, v0) == r0


@PROPERTY
@given(oscillators(regimes=("overdamped", "underdamped", "unstable_oscillatory", "unstable_overdamped")))
def test_properties_match_polynomial_roots(drawn):
    osc, _ = drawn
    roots = np.roots([osc.mass, osc.damping, osc.stiffness])
    rates = np.sort(-roots.real)
    np.testing.assert_allclose(osc.decay_rates, rates, rtol=ROOT_RTOL, atol=ROOT_RTOL * osc.natural_frequency)
    assert osc.damped_frequency == pytest.approx(np.abs(roots.imag).max(), rel=ROOT_RTOL, abs=ROOT_RTOL * osc.natural_frequency)
    assert osc.natural_frequency == pytest.approx(math.sqrt(abs(np.prod(roots))))  # s1 s2 = k/m
    assert osc.damping_ratio == pytest.approx(-roots.sum().real / (2.0 * osc.natural_frequency))  # s1+s2 = -c/m


@PROPERTY
@given(log_uniform(0.1, 10.0), log_uniform(0.1, 10.0), initial_states)
def test_continuous_through_critical_damping(m, k, state):
    r_inf, r0, v0 = state
    x0, w0 = r0 - r_inf, math.sqrt(k / m)
    t = np.linspace(0.0, 20.0 / w0, 201)
    # independent route: the critical closed form, alpha = omega0
    x_crit = np.exp(-w0 * t) * (x0 + (v0 + w0 * x0) * t)
    v_crit = np.exp(-w0 * t) * (v0 - w0 * (v0 + w0 * x0) * t)
    scale = abs(x0) + abs(v0) / w0 + 1e-12
    for zeta in (1.0 - 1e-9, 1.0, 1.0 + 1e-9):
        osc = Oscillator(mass=m, damping=2.0 * zeta * math.sqrt(m * k), stiffness=k)
        assert osc.regime == "critical"
        np.testing.assert_allclose(trajectory(osc, t, r_inf, r0, v0), r_inf + x_crit, rtol=0, atol=CONTINUITY_TOL * scale)
        np.testing.assert_allclose(velocity(osc, t, r_inf, r0, v0), v_crit, rtol=0, atol=CONTINUITY_TOL * scale * w0)
    exact = Oscillator(mass=m, damping=2.0 * math.sqrt(m * k), stiffness=k)
    assert exact.damping_ratio == 1.0 and exact.discriminant == 0.0


def test_no_precision_loss_approaching_critical():
    """Far inside the 0/0 of the textbook forms (zeta - 1 from 1e-2 down to 1e-15), the result moves
    smoothly towards the critical form: the deviation shrinks in proportion to zeta - 1."""
    t = np.linspace(0.0, 20.0, 201)
    x_crit = np.exp(-t) * (1.0 + t)  # x0 = 1, v0 = 0, omega0 = 1
    for sign in (1.0, -1.0):
        deltas = 10.0 ** -np.arange(2, 16)
        errs = [np.abs(trajectory(Oscillator(mass=1.0, damping=2.0 * (1.0 + sign * d), stiffness=1.0), t, 0.0, 1.0) - x_crit).max() for d in deltas]
        assert all(e <= 2.0 * d + 1e-15 for e, d in zip(errs, deltas))


def test_single_exponential_is_the_massless_limit():
    """sup_t |R_osc - R_exp| = O(m k / c^2): measured convergence order 1 in m."""
    c, k, r_inf, r0 = 2.0, 0.5, 0.9, 0.1
    tau = c / k
    t = np.linspace(0.0, 10.0 * tau, 4001)
    masses = c * c / k * np.array([1e-2, 1e-3, 1e-4, 1e-5])
    errs = []
    for m in masses:
        osc = Oscillator(mass=m, damping=c, stiffness=k)
        assert overdamped_timescale(osc) == tau
        assert mode_timescales(osc)[0] == pytest.approx(tau, rel=2.0 * m * k / c**2)
        errs.append(np.abs(trajectory(osc, t, r_inf, r0) - single_exponential(t, r_inf, r0, tau)).max())
    orders = np.diff(np.log(errs)) / np.diff(np.log(masses))
    np.testing.assert_allclose(orders, 1.0, atol=0.05)


def test_single_exponential_solves_first_order_ode():
    t = np.linspace(0.0, 5.0, 11)
    r = single_exponential(t, 1.0, 0.2, 1.5)
    assert r[0] == 0.2
    np.testing.assert_allclose(r, 1.0 - 0.8 * np.exp(-t / 1.5), rtol=1e-15)


@PROPERTY
@given(oscillators(), st.floats(-2.0, 2.0), st.floats(-2.0, 2.0))
def test_slow_start_is_quadratic(drawn, r_inf, r0):
    """From rest, (R - R_0) / (k (R_inf - R_0) t^2 / 2m) = 1 - c t / (3m) + O(t^2) (Taylor at t = 0)."""
    osc, _ = drawn
    assume(abs(r_inf - r0) > 1e-3)
    m, c, k = osc.mass, osc.damping, osc.stiffness
    h = m / (abs(c) + math.sqrt(m * k))  # the shortest timescale; the t^2 term is <= (t/h)^2 / 12
    assert velocity(osc, 0.0, r_inf, r0) == 0.0
    for u in (1e-2, 3e-3, 1e-3):
        t = u * h
        rise = slow_start_quadratic(osc, t, r_inf, r0) - r0
        ratio = (trajectory(osc, t, r_inf, r0) - r0) / rise
        rounding = 8.0 * EPS * (abs(r0) + abs(r_inf)) / abs(rise)  # R carries ~eps |R| absolute error
        assert abs(ratio - (1.0 - c * t / (3.0 * m))) <= u * u / 6.0 + rounding


@PROPERTY
@given(log_uniform(0.1, 10.0), log_uniform(0.1, 10.0), st.floats(1.2, 5.0))
def test_slow_start_lag_is_the_late_time_delay(m, k, zeta):
    osc = Oscillator(mass=m, damping=2.0 * zeta * math.sqrt(m * k), stiffness=k)
    tau_slow, tau_fast = mode_timescales(osc)
    t_late = 35.0 / (1.0 / tau_fast - 1.0 / tau_slow)  # fast mode and its cross term below e^-35
    x, _ = integrate(osc, np.array([0.0, t_late]), 1.0, 0.0)
    lag = t_late + tau_slow * math.log(x[-1])  # x = exp(-(t - t_lag)/tau_slow) at late times
    assert slow_start_duration(osc) == pytest.approx(lag, rel=LAG_RTOL, abs=LAG_RTOL * tau_slow)


def test_slow_start_lag_tends_to_fast_timescale():
    for eps in (1e-2, 1e-3, 1e-4):  # eps = m k / c^2
        osc = Oscillator(mass=eps, damping=1.0, stiffness=1.0)
        lag = slow_start_duration(osc)
        assert lag == pytest.approx(osc.mass / osc.damping, rel=2.0 * eps)
        assert lag == pytest.approx(mode_timescales(osc)[1], rel=eps)


@PROPERTY
@given(
    st.lists(st.tuples(log_uniform(0.1, 10.0), st.floats(-3.0, 3.0), log_uniform(0.1, 10.0)), min_size=1, max_size=20),
    st.lists(st.sampled_from([1.0, 1.0 + 1e-9, 1.0 - 1e-9, 1.0 + 1e-7, 1.0 - 1e-7]), min_size=1, max_size=5),
)
def test_classify_regime_agrees_with_oscillator(params, near_critical):
    m, zeta, k = (np.array(v) for v in zip(*params))
    c = 2.0 * zeta * np.sqrt(m * k)
    c_near = 2.0 * np.array(near_critical) * math.sqrt(m[0] * k[0])  # points in and out of the band
    c_all = np.concatenate([c, c_near])
    m_all = np.concatenate([m, np.full(len(near_critical), m[0])])
    k_all = np.concatenate([k, np.full(len(near_critical), k[0])])
    labels = classify_regime(m_all, c_all, k_all)
    assert labels.shape == c_all.shape
    expected = [Oscillator(mass=mi, damping=ci, stiffness=ki).regime for mi, ci, ki in zip(m_all, c_all, k_all)]
    assert labels.tolist() == expected
    # independent route away from the critical band: sign of c and of the discriminant c^2 - 4mk
    disc = c_all**2 - 4.0 * m_all * k_all
    far = np.abs(c_all / (2.0 * np.sqrt(m_all * k_all)) - 1.0) > 10.0 * CRITICAL_TOL
    by_roots = np.where(c_all <= 0, "unstable", np.where(disc > 0, "overdamped", "underdamped"))
    assert (labels[far] == by_roots[far]).all()


def test_classify_regime_broadcasts():
    labels = classify_regime(1.0, np.array([[3.0], [1.0], [-1.0], [2.0]]), np.array([1.0, 1.0]))
    assert labels.shape == (4, 2)
    assert labels[:, 0].tolist() == ["overdamped", "underdamped", "unstable", "critical"]
    assert classify_regime(1.0, 0.0, 1.0) == "unstable"


hyperparams = st.tuples(
    log_uniform(1e-3, 1e2),  # lambda, total curvature
    log_uniform(1e-4, 1.0),  # eta
    st.floats(0.0, 0.95),  # mu
    st.integers(1, 32),  # T
    st.floats(0.0, 1.0),  # stale fraction f
)


def _branch(osc: Oscillator) -> str:
    return "overdamped" if osc.damping_ratio > 1.0 else "underdamped"


@PROPERTY
@given(hyperparams)
def test_curvature_round_trip(hp):
    lam, eta, mu, T, f = hp
    osc = oscillator_from_hyperparams(f * lam, (1.0 - f) * lam, eta, mu, T)
    assert osc.mass == (1.0 + mu) / 2.0 and osc.stiffness == pytest.approx(eta * lam)
    assume(osc.damping > 0.0 and abs(osc.damping_ratio - 1.0) > 1e-6)
    # the envelope rate c/(2m) = (c0 - g lambda)/(2m) pins lambda to relative precision eps c0 / (g lambda)
    g_lam = eta * f * lam * (T - 1) / 2.0
    assume(_branch(osc) == "overdamped" or g_lam > 1e-4 * (1.0 - mu))
    back = curvature_from_timescale(osc.relaxation_time, eta, mu, T, f, branch=_branch(osc))
    assert back == pytest.approx(lam, rel=ROUND_TRIP_RTOL)


@pytest.mark.parametrize(
    "lam, eta, mu, T, f",
    [
        (0.5, 0.1, 0.0, 1, 1.0),  # overdamped, no stale forces
        (1.0, 0.01, 0.5, 4, 1.0),  # overdamped, stale forces
        (0.1, 0.1, 0.0, 4, 1.0),  # overdamped, stale forces
        (0.3, 0.05, 0.9, 8, 0.5),  # underdamped
        (0.01, 1.0, 0.95, 16, 0.3),  # underdamped
        (0.01, 0.02, 0.99, 30, 1.0),  # underdamped, close to the stability edge
    ],
)
def test_curvature_matches_brentq_on_forward_map(lam, eta, mu, T, f):
    """Independent route: bracket the sign changes of r(lambda) - 1/tau on a grid, refine with brentq."""
    osc = oscillator_from_hyperparams(f * lam, (1.0 - f) * lam, eta, mu, T)
    assert osc.regime in ("overdamped", "underdamped")  # a stable case, away from the fold
    tau = osc.relaxation_time

    def excess_rate(x: float) -> float:  # r(lambda) - 1/tau, r = 0 when unstable
        return 1.0 / oscillator_from_hyperparams(f * x, (1.0 - f) * x, eta, mu, T).relaxation_time - 1.0 / tau

    grid = np.geomspace(lam * 0.93e-6, lam * 1.07e6, 2001)  # no node at lambda itself
    signs = np.sign([excess_rate(x) for x in grid])
    crossings = np.flatnonzero(signs[:-1] != signs[1:])
    roots = [brentq(excess_rate, grid[i], grid[i + 1], xtol=1e-14 * grid[i], rtol=1e-15) for i in crossings]
    assert 1 <= len(roots) <= 2 and any(r == pytest.approx(lam, rel=1e-8) for r in roots)
    assert curvature_from_timescale(tau, eta, mu, T, f) == pytest.approx(roots[0], rel=BRENTQ_RTOL)
    if len(roots) == 2:
        assert curvature_from_timescale(tau, eta, mu, T, f, branch="underdamped") == pytest.approx(roots[1], rel=BRENTQ_RTOL)


def test_fastest_timescale_is_critical():
    """At the fold the two branches meet at critical damping; just below it there is no solution."""
    eta, mu, T, f = 0.05, 0.9, 8, 0.5
    lams = np.geomspace(1e-3, 1e3, 20001)
    taus = [oscillator_from_hyperparams(f * x, (1 - f) * x, eta, mu, T).relaxation_time for x in lams]
    tau_min = min(taus)
    lam_over = curvature_from_timescale(tau_min * (1 + 1e-6), eta, mu, T, f)
    lam_under = curvature_from_timescale(tau_min * (1 + 1e-6), eta, mu, T, f, branch="underdamped")
    assert lam_over == pytest.approx(lam_under, rel=1e-2)
    assert oscillator_from_hyperparams(f * lam_over, (1 - f) * lam_over, eta, mu, T).damping_ratio == pytest.approx(1.0, abs=1e-2)
    with pytest.raises(ConfigError, match="shorter than the fastest relaxation"):
        curvature_from_timescale(tau_min * (1 - 1e-4), eta, mu, T, f)


@pytest.mark.parametrize("eta, mu, T, f", [(0.05, 0.9, 8, 0.5), (1.0, 0.9, 1, 1.0), (1.0, 0.0, 4, 1.0), (0.2, 0.5, 16, 0.3)])
def test_fastest_relaxation_rate_is_the_largest_rate_over_curvatures(eta, mu, T, f):
    """r_c in closed form against a scan of the oscillator's slowest decay rate over curvatures: a log grid of
    2001 (steps of 1.2%), then twice 2001 more between the best point's neighbours (steps of 1e-5, then 1e-8,
    relative). The maximum is a kink (critical damping), so the scan's error is first order in the grid step:
    1e-6 relative after the refinements; it never exceeds r_c."""
    def rates(lams):
        return np.array([1.0 / oscillator_from_hyperparams(f * x, (1 - f) * x, eta, mu, T).relaxation_time for x in lams])

    grid = np.geomspace(1e-6, 1e4, 2001)
    for _ in range(2):
        i = int(np.argmax(rates(grid)))
        grid = np.linspace(grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)], 2001)
    best = rates(grid).max()
    r_c = fastest_relaxation_rate(eta, mu, T, f)
    assert best == pytest.approx(r_c, rel=1e-6) and best <= r_c * (1 + 1e-12)


OSC = Oscillator(mass=1.0, damping=0.5, stiffness=1.0)
BAD_INPUTS = {
    "zero mass": lambda: Oscillator(mass=0.0, damping=1.0, stiffness=1.0),
    "negative stiffness": lambda: Oscillator(mass=1.0, damping=1.0, stiffness=-2.0),
    "nan damping": lambda: Oscillator(mass=1.0, damping=float("nan"), stiffness=1.0),
    "infinite mass": lambda: Oscillator(mass=float("inf"), damping=1.0, stiffness=1.0),
    "string mass": lambda: Oscillator(mass="1", damping=1.0, stiffness=1.0),
    "negative time": lambda: trajectory(OSC, [0.0, -1.0], 1.0, 0.0),
    "nan time": lambda: velocity(OSC, float("nan"), 1.0, 0.0),
    "infinite r0": lambda: trajectory(OSC, 1.0, 1.0, float("inf")),
    "zero tau": lambda: single_exponential(1.0, 1.0, 0.0, 0.0),
    "unstable timescale": lambda: overdamped_timescale(Oscillator(mass=1.0, damping=-0.1, stiffness=1.0)),
    "unstable modes": lambda: mode_timescales(Oscillator(mass=1.0, damping=0.0, stiffness=1.0)),
    "underdamped lag": lambda: slow_start_duration(OSC),
    "classify zero mass": lambda: classify_regime([1.0, 0.0], 1.0, 1.0),
    "classify nan": lambda: classify_regime(1.0, [1.0, float("nan")], 1.0),
    "negative tau": lambda: curvature_from_timescale(-3.0, 0.1),
    "zero lr": lambda: curvature_from_timescale(10.0, 0.0),
    "momentum one": lambda: curvature_from_timescale(10.0, 0.1, momentum=1.0),
    "fractional refresh": lambda: curvature_from_timescale(10.0, 0.1, refresh_interval=1.5),
    "zero refresh": lambda: oscillator_from_hyperparams(1.0, 1.0, 0.1, 0.0, 0),
    "stale fraction > 1": lambda: curvature_from_timescale(10.0, 0.1, stale_fraction=1.5),
    "tau too short": lambda: curvature_from_timescale(0.5, 0.1),
    "envelope without stale forces": lambda: curvature_from_timescale(10.0, 0.1, branch="underdamped"),
    "unknown branch": lambda: curvature_from_timescale(10.0, 0.1, branch="critical"),
    "no curvature": lambda: oscillator_from_hyperparams(0.0, 0.0, 0.1, 0.0, 1),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_raises_config_error(case):
    with pytest.raises(ConfigError) as info:
        BAD_INPUTS[case]()
    message = str(info.value)
    assert "\n" not in message and ". " not in message  # one sentence
    assert "got" in message or "expected" in message


FAMILY_RTOL = 1e-14  # the fast path evaluates the same formulas as `trajectory`
JACOBIAN_RTOL = 1e-6  # analytic derivatives vs central differences (step 1e-6 relative: error ~1e-9 of the scale)


def _family_cases(mass: float):
    """(c, k, r_inf, r0, v0): over-, under-, critically, nearly critically damped (the series of dS/dq at every
    t), growing, tiny stiffness."""
    k = 0.02
    critical = 2.0 * math.sqrt(mass * k)
    return [(0.6, k, 0.7, 0.2, 0.01), (0.05, k, 0.3, 0.9, -0.02), (critical, k, 0.7, 0.2, 0.0),
            (critical * (1 + 1e-9), k, 0.7, 0.2, 0.03), (-0.01, k, 0.1, 0.2, 0.0), (0.2, 1e-5, 0.5, 0.0, 0.001)]


FAMILY_T = np.concatenate([[0.0], np.sort(np.random.default_rng(3).uniform(0, 300, 200))])


@pytest.mark.parametrize("mass", [1.0, 0.75])
def test_trajectory_family_is_trajectory(mass):
    family = trajectory_family(FAMILY_T, mass=mass)
    for c, k, r_inf, r0, v0 in _family_cases(mass):
        expected = trajectory(Oscillator(mass=mass, damping=c, stiffness=k), FAMILY_T, r_inf, r0, v0)
        for _ in range(2):  # the second call reuses the first call's propagators
            np.testing.assert_allclose(family(c, k, r_inf, r0, v0), expected, rtol=FAMILY_RTOL, atol=0)


@pytest.mark.parametrize("mass", [1.0, 0.75])
def test_trajectory_family_jacobian_matches_central_differences(mass):
    family = trajectory_family(FAMILY_T, mass=mass)
    for params in _family_cases(mass):
        r, jac = family(*params, jacobian=True)
        assert jac.shape == (5, FAMILY_T.size)
        for i in range(5):
            h = 1e-6 * max(abs(params[i]), 1e-3)
            up, down = list(params), list(params)
            up[i], down[i] = params[i] + h, params[i] - h
            num = (trajectory(Oscillator(mass=mass, damping=up[0], stiffness=up[1]), FAMILY_T, *up[2:])
                   - trajectory(Oscillator(mass=mass, damping=down[0], stiffness=down[1]), FAMILY_T, *down[2:])) / (2 * h)
            scale = np.max(np.abs(num))
            np.testing.assert_allclose(jac[i], num, rtol=0, atol=JACOBIAN_RTOL * scale, err_msg=f"{params}, column {i}")


def test_dsq_series_meets_the_direct_form():
    """dS/dq from its series just below Y_SERIES equals the direct (t C - S)/(2q) just above it."""
    t = np.array([10.0])
    for q in (Y_SERIES / 100.0 * (1 - 1e-9), -Y_SERIES / 100.0 * (1 - 1e-9)):  # y = q t^2 at the switch, both signs
        osc = Oscillator(mass=1.0, damping=0.3, stiffness=0.0225 - q)  # alpha = 0.15, q = alpha^2 - k
        below = trajectory_family(t)(osc.damping, osc.stiffness, 0.0, 1.0, 0.0, jacobian=True)[1][1]
        osc = Oscillator(mass=1.0, damping=0.3, stiffness=0.0225 - q * (1 + 2e-9) / (1 - 1e-9))
        above = trajectory_family(t)(osc.damping, osc.stiffness, 0.0, 1.0, 0.0, jacobian=True)[1][1]
        np.testing.assert_allclose(below, above, rtol=1e-8)


def test_trajectory_family_checks_times_once_and_parameters_per_call():
    with pytest.raises(ConfigError, match="time t"):
        trajectory_family([0.0, -1.0])
    family = trajectory_family(np.arange(5.0))
    with pytest.raises(ConfigError, match="stiffness k"):
        family(0.1, 0.0, 0.0, 0.0, 0.0)
    with pytest.raises(ConfigError, match="finite"):
        family(np.nan, 0.1, 0.0, 0.0, 0.0)
