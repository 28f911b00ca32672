"""Stationary fluctuations: the periodic Lyapunov solution against independent routes.

Routes: the covariance recursion iterated from zero with the refresh applied by hand (no Lyapunov
solve, no period map), the AR(1)/AR(2) closed forms for T = 1, and a seeded Monte-Carlo run of
the nonlinear finite-group bandit for the whole chain (noise, stiffness, delta method).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory import finite_group
from gspo_dynamics.theory.bandit import TwoArmBandit, fixed_point, kl_force, sigmoid, stiffness_partials
from gspo_dynamics.theory.fluctuations import (
    gradient_noise_variance,
    group_size_slope,
    phase_covariances,
    stationary_covariance,
    stationary_reward_variance,
)
from gspo_dynamics.theory.hyperparams import SGD, Adam, Hyperparams
from gspo_dynamics.theory.linear import monodromy, spectral_radius

# Lyapunov solve vs a converged float64 recursion: both carry ~1e-13 rounding; 1e-9 leaves room
# for the conditioning of slowly contracting periods (rho up to ~0.97 here).
REL_TOL = 1e-9
# Closed forms are evaluated in a handful of flops: agreement to rounding.
CLOSED_FORM_TOL = 1e-11

# (a, b, eta, mu, T): stale/fresh stiffness, lr, momentum, refresh interval; all stable.
CONFIGS = [
    (0.0, 0.5, 0.8, 0.0, 1),
    (0.3, 0.1, 0.5, 0.0, 1),
    (0.2, 0.3, 0.6, 0.5, 1),
    (0.1, 0.2, 0.5, 0.3, 3),
    (0.25, 0.05, 0.4, 0.6, 4),
    (0.1, 0.05, 0.3, 0.9, 7),  # heavy momentum, rho ~ 0.93
    (0.4, -0.1, 0.3, 0.2, 5),  # negative fresh stiffness, held by the stale force
]


def _brute_force_covariance(a, b, eta, mu, T, sigma2, max_periods=200_000):
    """Iterate E[s s^T] step by step from s = 0, refreshing x_s <- x by hand every T steps.

    Stops once a whole period changes the phase-0 covariance by < 1e-14 relative (rounding floor ~1e-16); returns the
    phase average of the (x, v) block over the last period.
    """
    S = np.array([[1 - eta * b, eta * mu, -eta * a], [-b, mu, -a], [0.0, 0.0, 1.0]])
    w = np.array([eta, 1.0, 0.0])
    P = np.zeros((3, 3))
    previous = None
    for _ in range(max_periods):
        # refresh: x_s takes x's value, so its row/column copy x's
        P[2, :] = P[0, :]
        P[:, 2] = P[:, 0]
        phases = []
        for _ in range(T):
            phases.append(P[:2, :2].copy())
            P = S @ P @ S.T + sigma2 * np.outer(w, w)
        if previous is not None and np.max(np.abs(phases[0] - previous)) <= 1e-14 * np.max(np.abs(phases[0])):
            return np.mean(phases, axis=0)
        previous = phases[0]
    raise AssertionError("covariance recursion did not converge")


@pytest.mark.parametrize("a,b,eta,mu,T", CONFIGS)
def test_lyapunov_matches_iterated_recursion(a, b, eta, mu, T):
    assert spectral_radius(monodromy(a, b, eta, mu, T)) < 1.0
    sigma2 = 0.37
    expected = _brute_force_covariance(a, b, eta, mu, T, sigma2)
    got = stationary_covariance(a, b, eta, mu, T, sigma2)
    np.testing.assert_allclose(got, expected, rtol=REL_TOL, atol=REL_TOL * np.max(np.abs(expected)))


@pytest.mark.parametrize("a,b,eta,mu,T", CONFIGS)
def test_phases_are_symmetric_psd_and_refreshed(a, b, eta, mu, T):
    phases = phase_covariances(a, b, eta, mu, T, 1.0)
    assert phases.shape == (T, 3, 3)
    np.testing.assert_allclose(phases, np.swapaxes(phases, -1, -2), rtol=0, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(phases) > -1e-10)
    # just after the refresh x_s = x exactly: its variance and covariance with x equal Var(x)
    assert phases[0, 2, 2] == pytest.approx(phases[0, 0, 0], rel=1e-10)
    assert phases[0, 0, 2] == pytest.approx(phases[0, 0, 0], rel=1e-10)


@pytest.mark.parametrize("a,b,eta", [(0.0, 0.5, 0.8), (0.3, 0.1, 0.5), (0.2, 0.3, 1.9), (1.0, 0.0, 0.3)])
def test_on_policy_no_momentum_is_ar1(a, b, eta):
    # T = 1: x_s = x always, so x' = x + eta (-(a + b) x + xi), an AR(1) with coefficient 1 - eta (a + b).
    sigma2 = 2.5
    phi = 1.0 - eta * (a + b)
    expected = eta**2 * sigma2 / (1.0 - phi**2)
    assert stationary_covariance(a, b, eta, 0.0, 1, sigma2)[0, 0] == pytest.approx(expected, rel=CLOSED_FORM_TOL)


@pytest.mark.parametrize("k,eta,mu", [(0.3, 0.5, 0.5), (0.1, 1.0, 0.9), (0.5, 0.2, 0.2)])
def test_on_policy_momentum_is_ar2(k, eta, mu):
    # T = 1, total stiffness k: x_{t+1} = (1 + mu - eta k) x_t - mu x_{t-1} + eta xi_t, an AR(2) with
    # Var = (1 - phi2) s2 / ((1 + phi2) ((1 - phi2)^2 - phi1^2)),  s2 = eta^2 sigma^2 (Box & Jenkins).
    sigma2 = 0.7
    phi1, phi2 = 1.0 + mu - eta * k, -mu
    expected = (1 - phi2) * eta**2 * sigma2 / ((1 + phi2) * ((1 - phi2) ** 2 - phi1**2))
    got = stationary_covariance(0.4 * k, 0.6 * k, eta, mu, 1, sigma2)[0, 0]
    assert got == pytest.approx(expected, rel=CLOSED_FORM_TOL)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(CONFIGS),
    st.floats(1e-6, 1e3),
    st.floats(1e-6, 1e3),
)
def test_variance_scales_exactly_as_sigma2(config, s1, s2):
    a, b, eta, mu, T = config
    c1 = stationary_covariance(a, b, eta, mu, T, s1)
    c2 = stationary_covariance(a, b, eta, mu, T, s2)
    np.testing.assert_allclose(c1 / s1, c2 / s2, rtol=1e-12, atol=0)


def test_zero_noise_gives_zero_covariance():
    assert np.all(stationary_covariance(0.1, 0.2, 0.5, 0.3, 3, 0.0) == 0.0)


@pytest.mark.parametrize(
    "a,b,eta,mu,T",
    [
        (0.3, 0.1, 6.0, 0.0, 1),  # overshoot: 1 - eta (a + b) = -1.4
        (0.0, 0.0, 0.5, 0.3, 2),  # no stiffness: neutral random walk, variance grows without bound
        (0.3, 0.0, 1.0, 0.9, 30),  # stale-force instability at a long refresh interval
        (0.0, -0.1, 0.5, 0.0, 1),  # negative stiffness: repelling
    ],
)
def test_unstable_configurations_raise(a, b, eta, mu, T):
    with pytest.raises(ConfigError, match="spectral radius"):
        stationary_covariance(a, b, eta, mu, T, 1.0)


@pytest.mark.parametrize(
    "bad",
    [dict(noise_variance=-1.0), dict(refresh_interval=0), dict(refresh_interval=2.0), dict(lr=math.nan),
     dict(lr=-0.5), dict(momentum=1.0), dict(stale=np.array([0.1, 0.2]))],
)
def test_bad_input_raises(bad):
    args = dict(stale=0.1, fresh=0.2, lr=0.5, momentum=0.3, refresh_interval=2, noise_variance=1.0) | bad
    with pytest.raises(ConfigError):
        stationary_covariance(**args)


# ---------------------------------------------------------------- the bandit at its fixed point

GROUP_SIZES = [8, 16, 32, 64, 128, 256]
# The fixed point and stiffness drift with G by O(1/G) (m = (1 - 1/G) p (1 - p)), and the noise has
# O(1/G^2) corrections: over G in 8..256 the fitted slope is within ~0.01 of -1 when p* ~ 0.85.
SLOPE_TOL = 0.05


def _hp(**kw):
    base = dict(lr=0.5, kl_coef=0.5, group_size=16, optimizer=SGD(momentum=0.5), refresh_interval=2)
    return Hyperparams(**(base | kw))


def test_reward_variance_assembles_the_pieces():
    bandit, hp = TwoArmBandit(ref_logit=0.0), _hp(num_groups=4)
    fp = fixed_point(bandit, hp)
    p = fp.reward
    sigma2 = finite_group.group_gradient_variance(p, 16, "mean") / 4
    a, b = stiffness_partials(fp.logit, bandit, hp)
    var_x = _brute_force_covariance(a, b, 0.5, 0.5, 2, sigma2)[0, 0]
    assert stationary_reward_variance(bandit, hp) == pytest.approx((p * (1 - p)) ** 2 * var_x, rel=REL_TOL)
    # num_groups averages independent groups: noise, hence variance, falls as 1/num_groups
    assert stationary_reward_variance(bandit, _hp(num_groups=1)) == pytest.approx(
        4 * stationary_reward_variance(bandit, hp), rel=1e-12
    )


@pytest.mark.parametrize("ref_logit,kl_coef", [(0.0, 0.5), (0.5, 1.0), (-2.0, 0.25)])
def test_one_over_g_law_away_from_one_half(ref_logit, kl_coef):
    bandit, hp = TwoArmBandit(ref_logit=ref_logit), _hp(kl_coef=kl_coef)
    assert abs(fixed_point(bandit, hp).reward - 0.5) > 0.2
    assert group_size_slope(bandit, hp, GROUP_SIZES) == pytest.approx(-1.0, abs=SLOPE_TOL)


def test_leading_noise_vanishes_at_one_half():
    # mean advantage, exact KL: z* = z_ref + (1 - 1/G) / beta -> 0 for z_ref = -1/beta, so p* -> 1/2
    # and the noise falls as 1/G^2 (the p (1 - p) (1 - 2p)^2 / G term vanishes).
    bandit, hp = TwoArmBandit(ref_logit=-1.0), _hp(kl_coef=1.0)
    assert group_size_slope(bandit, hp, GROUP_SIZES) == pytest.approx(-2.0, abs=0.1)


def test_adam_uses_noise_as_second_moment():
    # Adam's frozen second moment is sigma^2, so eta_eff ~ 1/sigma and Var(x) ~ sigma ~ G^(-1/2) at small steps.
    bandit = TwoArmBandit(ref_logit=0.0)
    hp = _hp(lr=1e-3, optimizer=Adam(beta1=0.9), refresh_interval=1)
    assert group_size_slope(bandit, hp, [64, 128, 256, 512]) == pytest.approx(-0.5, abs=SLOPE_TOL)


@pytest.mark.parametrize(
    "hp,match",
    [
        (_hp(group_size=None), "finite group size"),
        (_hp(kl_coef=0.0), "no interior fixed point"),
        (_hp(lr=200.0), "spectral radius"),
    ],
)
def test_reward_variance_errors(hp, match):
    with pytest.raises(ConfigError, match=match):
        stationary_reward_variance(TwoArmBandit(), hp)


def test_gradient_noise_needs_finite_group():
    with pytest.raises(ConfigError):
        gradient_noise_variance(0.3, _hp(group_size=None))


def test_monte_carlo_nonlinear_bandit():
    """Seeded simulation of the finite-G bandit (binomial groups, stale sampling, heavy ball).

    Statistical tolerance: Var(R) is estimated from CHAINS independent chains at SNAPSHOTS times
    spaced > 5 relaxation times apart, so ~CHAINS * SNAPSHOTS independent draws; the relative
    standard error of a variance is sqrt(2 / n) ~ 0.8%. Nonlinearity adds O(Var(z)) ~ 1e-3 relative.
    Tolerance 4 standard errors.
    """
    rng = np.random.default_rng(20250314)
    bandit = TwoArmBandit(ref_logit=0.0)
    G, T, eta, mu = 8, 2, 0.2, 0.5
    hp = _hp(lr=eta, group_size=G, optimizer=SGD(momentum=mu), refresh_interval=T)
    expected = stationary_reward_variance(bandit, hp)
    coef = finite_group.group_gradient_coefficients(G, "mean")
    CHAINS, BURN_IN, SPACING, SNAPSHOTS = 4000, 400, 200, 8
    z = np.full(CHAINS, fixed_point(bandit, hp).logit)
    v = np.zeros(CHAINS)
    samples = []
    for step in range(BURN_IN + SPACING * SNAPSHOTS):
        if step % T == 0:
            z_s = z.copy()
        k = rng.binomial(G, sigmoid(z_s))
        v = mu * v + coef[k] + kl_force(z, bandit, hp)
        z = z + eta * v
        if step >= BURN_IN and (step - BURN_IN) % SPACING == 0:
            samples.append(sigmoid(z))
    samples = np.concatenate(samples)
    measured = samples.var()
    standard_error = expected * math.sqrt(2.0 / samples.size)
    assert abs(measured - expected) < 4.0 * standard_error
