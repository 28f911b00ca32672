"""The symbolic derivation against independent routes.

Oracles: repeated squaring of S (linear.monodromy), an explicit Python loop of the step, exact
rational sympy powers of S, numpy eigenvalues, and the discrete decay rate for the continuous
limit (whose convergence order is measured, not assumed). float64 throughout.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gspo_dynamics.theory import linear, symbolic

# Closed form vs repeated squaring / the loop, relative to max(1, max|M|). Both references
# accumulate ~T eps of rounding (measured <= 1e-12 for T <= 40); the closed form is tighter.
MONODROMY_RTOL = 1e-9
# The explicit (Lagrange) form divides by r1 - r2 and 1 - r_i; sampled with gaps >= GAP it
# loses ~eps / GAP^2 to cancellation.
GAP = 0.05
EXPLICIT_RTOL = 1e-8
# Eigenvalues of M are compared only where they are separated by >= GAP (a double eigenvalue
# is sqrt(eps)-sensitive); relative to max(1, |lambda|).
EIG_RTOL = 1e-8
# Jury vs spectral radius is checked only for rho(M) at least this far from 1.
JURY_MARGIN = 1e-6
# The modified equation is second order, so the rate error is O(kappa^3): halving the
# stiffness divides it by 2^3. Tolerance on the observed log2 ratio.
ORDER_SLACK = 0.25

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

intervals = st.integers(1, 40)
configs = st.tuples(
    st.floats(-2.0, 2.0),  # a
    st.one_of(st.just(0.0), st.floats(-0.5, 3.0)),  # b, including exactly 0
    st.floats(1e-3, 1.0),  # eta
    st.floats(0.0, 0.95),  # mu
)


@st.composite
def complex_configs(draw):
    """H has a complex pair: (1 - sqrt mu)^2 < eta b < (1 + sqrt mu)^2."""
    mu = draw(st.floats(0.05, 0.95))
    eta = draw(st.floats(0.05, 1.0))
    q = draw(st.floats(0.01, 0.99))
    lo, hi = (1 - np.sqrt(mu)) ** 2, (1 + np.sqrt(mu)) ** 2
    return draw(st.floats(-2.0, 2.0)), (lo + q * (hi - lo)) / eta, eta, mu


def loop_monodromy(a, b, eta, mu, T):
    """Columns of M: run the step T times from (x, v) = e_i with x_s = x frozen."""
    columns = []
    for x0, v0 in ((1.0, 0.0), (0.0, 1.0)):
        x, v, x_s = x0, v0, x0
        for _ in range(T):
            g = -a * x_s - b * x
            v = mu * v + g
            x = x + eta * v
        columns.append((x, v))
    return np.array(columns).T


def relative_error(M, reference):
    return np.max(np.abs(M - reference)) / max(1.0, np.max(np.abs(reference)))


def check_monodromy(config, T):
    M = symbolic.numeric_monodromy(*config, T)
    assert M.shape == (2, 2)
    assert relative_error(M, linear.monodromy(*config, T)) <= MONODROMY_RTOL
    assert relative_error(M, loop_monodromy(*config, T)) <= MONODROMY_RTOL


@SETTINGS
@given(configs, intervals)
@example((0.7, 0.0, 0.3, 0.5), 17)  # b = 0: r1 = 1
@example((0.7, 1.0, 1.0, 0.0), 5)  # mu = 0, eta b = 1: double eigenvalue 0
@example((0.7, 0.25, 1.0, 0.25), 9)  # eta b = (1 - sqrt mu)^2: double eigenvalue 1/2
@example((0.7, 2.25, 1.0, 0.25), 9)  # eta b = (1 + sqrt mu)^2: double eigenvalue -1/2
@example((-0.3, 1e-13, 0.5, 0.9), 40)  # b -> 0
def test_closed_form_monodromy_matches_squaring_and_loop(config, T):
    check_monodromy(config, T)


@SETTINGS
@given(complex_configs(), intervals)
def test_closed_form_monodromy_with_complex_eigenvalues(config, T):
    a, b, eta, mu = config
    assert (1 + mu - eta * b) ** 2 < 4 * mu  # the strategy really gives a complex pair
    check_monodromy(config, T)


def test_numeric_monodromy_broadcasts_over_all_arguments():
    a = np.array([[0.2], [-0.4], [1.1]])  # (3, 1)
    T = np.array([1, 2, 7, 30])  # (4,)
    M = symbolic.numeric_monodromy(a, 0.6, 0.3, 0.8, T)
    assert M.shape == (3, 4, 2, 2)
    for i in range(3):
        for j, t in enumerate(T):
            assert relative_error(M[i, j], linear.monodromy(a[i, 0], 0.6, 0.3, 0.8, int(t))) <= MONODROMY_RTOL


@pytest.mark.parametrize("T", [0, 2.5])
def test_numeric_monodromy_rejects_bad_interval(T):
    with pytest.raises(ValueError, match="refresh interval"):
        symbolic.numeric_monodromy(0.1, 0.2, 0.3, 0.4, T)


def _separated_sample(n, seed):
    """Configurations (b >= 0.1) whose eigenvalues r1, r2 of H are >= GAP apart and from 1."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(-2, 2, n), rng.uniform(0.1, 3.0, n)
    eta, mu, T = rng.uniform(0.05, 1.0, n), rng.uniform(0.0, 0.95, n), rng.integers(1, 41, n)
    c = (1 + mu - eta * b) / 2
    h = np.sqrt(c.astype(complex) ** 2 - mu)
    r1, r2 = c + h, c - h
    keep = (np.abs(r1 - r2) >= GAP) & (np.abs(1 - r1) >= GAP) & (np.abs(1 - r2) >= GAP)
    return [v[keep] for v in (a, b, eta, mu, T, r1, r2)]


def test_explicit_closed_form_matches_squaring():
    d = symbolic.derive()
    a, b, eta, mu, T, _, _ = _separated_sample(400, seed=0)
    f = sp.lambdify((d.a, d.b, d.eta, d.mu, d.T), list(d.monodromy), modules="numpy")
    M = np.stack([np.broadcast_to(e, a.shape) for e in f(*(v.astype(complex) for v in (a, b, eta, mu, T)))], -1)
    for i in range(len(a)):
        reference = linear.monodromy(a[i], b[i], eta[i], mu[i], int(T[i]))
        assert np.max(np.abs(M[i].imag)) <= EXPLICIT_RTOL * max(1.0, np.max(np.abs(reference)))
        assert relative_error(M[i].real.reshape(2, 2), reference) <= EXPLICIT_RTOL


@pytest.mark.parametrize(
    "params",
    [(sp.Rational(1, 3), sp.Rational(1, 2), sp.Rational(1, 5), sp.Rational(1, 7)),  # real pair
     (sp.Rational(-1, 2), sp.Integer(1), sp.Rational(1, 2), sp.Rational(9, 10))],  # complex pair
)  # fmt: skip
@pytest.mark.parametrize("T", [1, 3, 6])
def test_explicit_closed_form_is_exact_on_rationals(params, T):
    d = symbolic.derive()
    values = dict(zip((d.a, d.b, d.eta, d.mu), params))
    power = d.step.subs(values) ** T
    reference = power[:2, :2] + power[:2, 2] * sp.Matrix([[1, 0]])
    closed = d.monodromy.subs(values).subs(d.T, T)
    assert (closed - reference).applyfunc(lambda e: sp.simplify(sp.expand(sp.radsimp(e)))) == sp.zeros(2)


def test_newton_form_equals_lagrange_form():
    d = symbolic.derive()
    difference = d.newton.subs(d.newton_terms) - d.monodromy_spectral
    assert difference.applyfunc(sp.simplify) == sp.zeros(2)


@SETTINGS
@given(st.floats(-2.0, 2.0), st.floats(1e-3, 1.0), st.floats(0.0, 0.95), intervals)
def test_b0_limit_matches_squaring(a, eta, mu, T):
    d = symbolic.derive()
    M = np.array(d.monodromy_b0.subs({d.a: a, d.eta: eta, d.mu: mu, d.T: T}).evalf(), dtype=float)
    assert relative_error(M, linear.monodromy(a, 0.0, eta, mu, T)) <= MONODROMY_RTOL


def test_characteristic_polynomial_roots_are_eigenvalues():
    d = symbolic.derive()
    assert d.charpoly.free_symbols == {d.lam, d.a, d.b, d.r1, d.r2, d.T}  # eta, mu eliminated
    _, p1, p0 = sp.Poly(d.charpoly, d.lam).all_coeffs()
    coefficients = sp.lambdify((d.a, d.b, d.r1, d.r2, d.T), [p1, p0], modules="numpy")
    a, b, eta, mu, T, r1, r2 = _separated_sample(400, seed=1)
    p1, p0 = (np.broadcast_to(v, a.shape) for v in coefficients(a + 0j, b + 0j, r1, r2, T))
    disc = np.sqrt(p1 * p1 - 4 * p0)
    roots = np.stack([(-p1 + disc) / 2, (-p1 - disc) / 2], -1)
    checked = 0
    for i in range(len(a)):
        eig = np.linalg.eigvals(linear.monodromy(a[i], b[i], eta[i], mu[i], int(T[i])))
        scale = max(1.0, np.max(np.abs(eig)))
        if abs(eig[0] - eig[1]) < GAP * scale:
            continue
        error = min(np.max(np.abs(roots[i] - eig)), np.max(np.abs(roots[i][::-1] - eig)))
        assert error <= EIG_RTOL * scale
        checked += 1
    assert checked > 100


def test_jury_conditions_agree_with_spectral_radius():
    d = symbolic.derive()
    jury = sp.lambdify((d.trace_symbol, d.det_symbol), sp.And(*d.jury), modules="numpy")
    rng = np.random.default_rng(2)
    n = 4000
    a, b, eta = rng.uniform(-2, 2, n), rng.uniform(-0.5, 3.0, n), rng.uniform(1e-3, 1.0, n)
    mu, T = rng.uniform(0.0, 0.95, n), rng.integers(1, 41, n)
    M = np.stack([linear.monodromy(*v, int(t)) for *v, t in zip(a, b, eta, mu, T)])
    rho = linear.spectral_radius(M)
    stable = jury(np.trace(M, axis1=-2, axis2=-1), np.linalg.det(M))
    clear = np.abs(rho - 1) > JURY_MARGIN
    assert np.array_equal(stable[clear], rho[clear] < 1)
    assert 100 < np.sum(stable[clear]) < np.sum(clear) - 100  # both outcomes are exercised


def test_continuous_coefficients():
    d = symbolic.derive()
    a, b, eta, mu, T = d.a, d.b, d.eta, d.mu, d.T
    expected = {
        "m": (1 + mu) / 2,
        "c": (1 - mu) - eta * a * (T - 1) / 2,
        "k": eta * (a + b),
        "zeta": ((1 - mu) - eta * a * (T - 1) / 2) / (2 * sp.sqrt((1 + mu) / 2 * eta * (a + b))),
        "critical_refresh_interval": 1 + 2 * (1 - mu) / (eta * a),
    }
    for name, value in expected.items():
        assert sp.simplify(getattr(d, name) - value) == 0, name
    assert sp.simplify(d.c.subs(T, d.critical_refresh_interval)) == 0
    m, c, k = symbolic.numeric_oscillator(0.3, np.array([0.1, 0.2]), 0.5, 0.9, 4)
    assert m.shape == c.shape == k.shape == (2,)
    np.testing.assert_allclose(m, 0.95, rtol=1e-15)
    np.testing.assert_allclose(c, 0.1 - 0.5 * 0.3 * 1.5, rtol=1e-14)
    np.testing.assert_allclose(k, 0.5 * np.array([0.4, 0.5]), rtol=1e-14)


def test_eliminated_recursion_holds_for_the_step():
    """x_{t+1} - (1 + mu) x_t + mu x_{t-1} = eta g_t on a simulated trajectory (T = 1)."""
    a, b, eta, mu = 0.4, 0.3, 0.7, 0.6
    xs = [1.0]
    v = 0.5
    for _ in range(20):
        v = mu * v - (a + b) * xs[-1]
        xs.append(xs[-1] + eta * v)
    x = np.array(xs)
    np.testing.assert_allclose(x[2:] - (1 + mu) * x[1:-1] + mu * x[:-2], -eta * (a + b) * x[1:-1], atol=1e-14)


def _rate_error(eps, T, mass=None):
    """|slow discrete rate per step - slow root of m s^2 + c s + k| at stiffness scale eps."""
    a, b, eta, mu = 0.3 * eps, 0.7 * eps, 1.0, 0.5
    eig = np.linalg.eigvals(linear.monodromy(a, b, eta, mu, T))
    rate = np.log(np.max(np.abs(eig))) / T
    m, c, k = symbolic.numeric_oscillator(a, b, eta, mu, T)
    m = m if mass is None else mass
    root = -2 * k / (c + np.sqrt(c * c - 4 * m * k))  # the root near 0, without cancellation
    return abs(rate - root)


@pytest.mark.parametrize("T", [1, 2, 3, 5])
def test_modified_equation_is_second_order(T):
    errors = [_rate_error(eps, T) for eps in (0.01, 0.005, 0.0025)]
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.abs(orders - 3) < ORDER_SLACK), orders
    # Control: a wrong mass leaves an O(kappa^2) error, which this measurement detects.
    wrong = [_rate_error(eps, T, mass=1.0) for eps in (0.005, 0.0025)]
    assert abs(np.log2(wrong[0] / wrong[1]) - 2) < ORDER_SLACK


def test_latex_strings():
    rendered = symbolic.latex()
    assert {"step_matrix", "monodromy", "characteristic_polynomial", "oscillator"} <= set(rendered)
    for name, text in rendered.items():
        assert text and "T" in text, name
        assert text.count("{") == text.count("}"), name


def test_import_is_lazy_and_torch_free():
    code = (
        "import sys; from gspo_dynamics.theory import symbolic; "
        "assert symbolic.derive.cache_info().currsize == 0; assert 'torch' not in sys.modules"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True)
