"""The exact discrete stability machinery against independent routes (float64)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics.theory import continuous, linear

RTOL = 1e-9  # products of <= 64 well-conditioned 3x3 matrices: rounding ~1e-13, margin for growth


def loop_monodromy(a, b, eta, mu, T):
    """Plain-Python reference: run one period of the step from each basis vector."""
    cols = []
    for x0, v0 in ((1.0, 0.0), (0.0, 1.0)):
        x, v, xs = x0, v0, x0
        for _ in range(T):
            v = mu * v - a * xs - b * x
            x = x + eta * v
        cols.append((x, v))
    return np.array(cols).T


config = st.tuples(
    st.floats(-0.3, 0.5), st.floats(-0.1, 0.5), st.floats(0.01, 5.0), st.floats(0.0, 0.99), st.integers(1, 64)
)


@settings(max_examples=200, deadline=None)
@given(config)
def test_monodromy_matches_loop_and_running_recurrence(cfg):
    a, b, eta, mu, T = cfg
    ref = loop_monodromy(a, b, eta, mu, T)
    scale = max(1.0, np.abs(ref).max())
    np.testing.assert_allclose(linear.monodromy(a, b, eta, mu, T), ref, rtol=0, atol=RTOL * scale)
    powers = linear._PeriodPowers(a, b, eta, mu)
    for _ in range(T - 1):
        powers.advance()
    running = np.array(powers.monodromy_entries()).reshape(2, 2)
    np.testing.assert_allclose(running, ref, rtol=0, atol=RTOL * scale)


@settings(max_examples=200, deadline=None)
@given(config)
def test_spectral_radius_matches_numpy_eigenvalues(cfg):
    M = linear.monodromy(*cfg)
    assert linear.spectral_radius(M) == pytest.approx(np.abs(np.linalg.eigvals(M)).max(), rel=1e-9, abs=1e-12)


def test_critical_refresh_interval_is_first_unstable_T_brute_force():
    rng = np.random.default_rng(1)
    a, b = rng.uniform(0, 0.3, 300), rng.uniform(0, 0.3, 300)
    eta, mu = 10 ** rng.uniform(-1, 1, 300), rng.choice([0.0, 0.5, 0.9], 300)
    got = linear.critical_refresh_interval(a, b, eta, mu, t_max=64)
    for i in range(300):
        rhos = [np.abs(np.linalg.eigvals(loop_monodromy(a[i], b[i], eta[i], mu[i], T))).max() for T in range(1, 65)]
        unstable = [T for T, r in zip(range(1, 65), rhos) if r > 1 + linear.RHO_TOL]
        assert got[i] == (unstable[0] if unstable else linear.STABLE)


def test_on_policy_pure_fresh_heavy_ball_has_the_textbook_threshold():
    # T = 1, a = 0: heavy ball on a quadratic is stable iff 0 < eta b < 2 (1 + mu).
    mu, b = 0.5, 1.0
    lr_c = linear.critical_learning_rate(0.0, b, mu, 1)
    assert lr_c == pytest.approx(2 * (1 + mu) / b, rel=1e-9)


def test_critical_learning_rate_sits_on_the_boundary():
    a, b, mu, T = 0.09, 0.007, 0.9, 4
    lr_c = float(linear.critical_learning_rate(a, b, mu, T))
    below = linear.spectral_radius(linear.monodromy(a, b, lr_c * (1 - 1e-6), mu, T))
    above = linear.spectral_radius(linear.monodromy(a, b, lr_c * (1 + 1e-6), mu, T))
    assert below < 1 < above


def test_without_stale_force_no_refresh_interval_is_unstable():
    # a = 0 (e.g. an unclipped importance ratio): the monodromy is H^T, stable for every T when H is.
    assert linear.critical_refresh_interval(0.0, 0.1, 1.0, 0.9, t_max=2000) == linear.STABLE


def test_regime_and_damping_ratio_agree_with_the_continuous_rule_at_small_stiffness():
    # In the continuum limit (eta a, eta b -> 0) the period-T flow is the oscillator's flow.
    a, b, mu, T = 0.02, 0.01, 0.5, 3
    for eta in (1e-3, 1e-2, 0.5):
        M = linear.monodromy(a, b, eta, mu, T)
        zeta_d = float(linear.discrete_damping_ratio(M, T))
        zeta_c = float(continuous.damping_ratio(a, b, eta, mu, T))
        assert (zeta_d >= 1) == (zeta_c >= 1)
    eta = 1e-3
    zeta_d = float(linear.discrete_damping_ratio(linear.monodromy(a, b, eta, mu, T), T))
    assert zeta_d == pytest.approx(float(continuous.damping_ratio(a, b, eta, mu, T)), rel=2e-2)


def test_discrete_regime_labels():
    assert linear.discrete_regime(linear.monodromy(0.0, 0.01, 0.1, 0.0, 1)) == "overdamped"
    assert linear.discrete_regime(linear.monodromy(0.0, 1.0, 1.0, 0.9, 1)) == "oscillatory"
    assert linear.discrete_regime(linear.monodromy(0.09, 0.007, 2.0, 0.9, 4)) == "unstable"


def test_oscillatory_interval_precedes_or_equals_instability():
    rng = np.random.default_rng(2)
    a, b = rng.uniform(0.01, 0.3, 200), rng.uniform(0, 0.3, 200)
    eta, mu = 10 ** rng.uniform(-1, 0.5, 200), rng.choice([0.0, 0.5, 0.9], 200)
    osc = linear.oscillatory_refresh_interval(a, b, eta, mu, 200)
    crit = linear.critical_refresh_interval(a, b, eta, mu, 200)
    both = (osc != 0) & (crit != 0)
    assert both.any() and np.all(osc[both] <= crit[both])
