import numpy as np
import pytest

from gspo_dynamics.theory import continuous, linear


def test_critical_interval_is_first_T_with_nonpositive_damping():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.001, 0.3, 500), rng.uniform(0, 0.3, 500)
    eta, mu = 10 ** rng.uniform(-1, 1, 500), rng.choice([0.0, 0.5, 0.9], 500)
    got = continuous.critical_refresh_interval(a, b, eta, mu, t_max=10_000)
    for i in range(0, 500, 7):
        Ts = np.arange(1, 10_001)
        _, c, k = continuous.oscillator_coefficients(a[i], b[i], eta[i], mu[i], Ts)
        bad = Ts[(c <= 0) | (k <= 0)]
        assert got[i] == (bad[0] if bad.size else linear.STABLE)


def test_oscillatory_interval_is_first_T_with_zeta_below_one():
    rng = np.random.default_rng(1)
    a, b = rng.uniform(0.001, 0.3, 300), rng.uniform(0.001, 0.3, 300)
    eta, mu = 10 ** rng.uniform(-1, 1, 300), rng.choice([0.0, 0.5, 0.9], 300)
    got = continuous.oscillatory_refresh_interval(a, b, eta, mu, t_max=5000)
    for i in range(0, 300, 5):
        Ts = np.arange(1, 5001)
        regimes = continuous.regime(a[i], b[i], eta[i], mu[i], Ts)
        hit = Ts[regimes != "overdamped"]
        assert got[i] == (hit[0] if hit.size else linear.STABLE)


def test_no_stale_force_no_threshold():
    assert continuous.critical_refresh_interval(0.0, 0.1, 1.0, 0.9) == linear.STABLE


def test_regime_labels():
    assert continuous.regime(0.0, 0.001, 1.0, 0.0, 1) == "overdamped"
    assert continuous.regime(0.0, 1.0, 1.0, 0.9, 1) == "oscillatory"
    assert continuous.regime(0.1, 0.0, 1.0, 0.9, 10) == "unstable"
    assert continuous.damping_ratio(0.0, 1.0, 1.0, 0.0, 1) == pytest.approx(1.0 / (2 * np.sqrt(0.5)))
