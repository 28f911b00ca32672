"""The Beta mixture law of zero-std groups against independent routes.

Oracles: quadrature of p^G + (1 - p)^G against the Beta density (scipy's QAWS rule takes the
endpoint singularities of a, b < 1 exactly); the Beta-function form through scipy.special.betaln
where it is accurate; a Monte Carlo of prompts of mixed difficulty, each group drawn as G Bernoulli
rewards; exact binomial sums for the pass-rate estimators; the Gamma-ratio asymptote in G.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.special import betaln, gammaln
from scipy.stats import binom

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.theory.finite_group import zero_variance_probability
from gspo_dynamics.theory.zero_std import (
    BATCH_LAW_RTOL,
    Difficulty,
    fit_difficulty,
    fit_difficulty_log,
    group_size_for_zero_std,
    zero_std_share_beta,
    zero_std_share_pass_rates,
)

# Quadrature (QAWS, epsrel 1e-12) against an exact product in float64.
QUAD_RTOL = 1e-8
# betaln's difference cancels ~log10(c) digits; at c <= 100 it keeps ~1e-14 (measured 3e-15).
BETALN_RTOL = 1e-12
# Monte Carlo: groups are iid Bernoulli(z) events, so the count is binomial; 4 standard errors.
MC_PROMPTS = 200_000
MC_SIGMAS = 4.0
# brentq to 1e-13 on log c; the share's slope in log c keeps a, b to ~1e-12.
FIT_RTOL = 1e-6
# At c the share exceeds the batch law by ~ G^2 / c relative: c = 1e12, G <= 64 gives < 1e-8.
LIMIT_RTOL = 1e-6
# At c = 1e-10, 1 - z ~ 2 m (1 - m) c H_{G-1} < 1e-9.
SMALL_C_ATOL = 1e-8
# A sum of n terms over binomial pmfs, each exact to rounding.
EXACT_RTOL = 1e-12

CASES = [(2.0, 3.0, 16), (0.5, 0.5, 8), (0.5912, 0.2415, 16), (5.0, 1.5, 32), (0.3, 4.0, 2), (20.0, 10.0, 64)]

means = st.floats(0.01, 0.99)
groups = st.integers(2, 256)
log_concentrations = st.floats(math.log(1e-3), math.log(1e6))


def _quad_share(a, b, G):
    """int_0^1 (p^G + (1 - p)^G) p^(a-1) (1-p)^(b-1) dp / B(a, b), the weight handled by QAWS."""
    value, _ = quad(lambda p: p**G + (1.0 - p) ** G, 0.0, 1.0, weight="alg", wvar=(a - 1.0, b - 1.0),
                    epsabs=0.0, epsrel=1e-12, limit=200)
    return value * math.exp(-betaln(a, b))


@pytest.mark.parametrize("a, b, G", CASES)
def test_share_matches_quadrature_and_betaln(a, b, G):
    z = zero_std_share_beta(a, b, G)
    assert z == pytest.approx(_quad_share(a, b, G), rel=QUAD_RTOL)
    via_betaln = math.exp(betaln(a + G, b) - betaln(a, b)) + math.exp(betaln(a, b + G) - betaln(a, b))
    assert z == pytest.approx(via_betaln, rel=BETALN_RTOL)


@pytest.mark.parametrize("a, b, G", [(1e-10, 10.0, 8), (10.0, 1e-10, 8), (1e-6, 50.0, 32)])
def test_share_keeps_its_digits_at_extreme_shapes(a, b, G):
    """A shape far below the other: the share keeps its digits (the small moment's error is ~eps of the share)."""
    via_betaln = math.exp(betaln(a + G, b) - betaln(a, b)) + math.exp(betaln(a, b + G) - betaln(a, b))
    assert zero_std_share_beta(a, b, G) == pytest.approx(via_betaln, rel=BETALN_RTOL)


def test_share_broadcasts_over_shapes_and_groups():
    a, b, G = np.array([0.5, 2.0, 7.0]), np.array([[1.0], [0.3]]), np.array([2, 16, 64])
    z = zero_std_share_beta(a, b, G)  # (2, 3)
    assert z.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            assert z[i, j] == pytest.approx(_quad_share(a[j], b[i, 0], G[j]), rel=QUAD_RTOL)
    outer = zero_std_share_beta(a, 1.0, G[:, None])  # (3 groups, 3 shapes)
    assert outer[2, 0] == pytest.approx(zero_std_share_beta(a[0], 1.0, G[2]), rel=EXACT_RTOL)


@pytest.mark.parametrize("a, b, G, seed", [(0.5912, 0.2415, 16, 0), (2.0, 3.0, 8, 1), (0.5, 0.5, 4, 2)])
def test_share_matches_monte_carlo_of_mixed_prompts(a, b, G, seed):
    rng = np.random.default_rng(seed)
    p = rng.beta(a, b, size=MC_PROMPTS)  # (N,)
    rewards = rng.random((MC_PROMPTS, G)) < p[:, None]  # (N, G) Bernoulli rewards
    all_equal = rewards.all(axis=1) | ~rewards.any(axis=1)
    z = zero_std_share_beta(a, b, G)
    stderr = math.sqrt(z * (1.0 - z) / MC_PROMPTS)
    assert abs(all_equal.mean() - z) < MC_SIGMAS * stderr


@settings(max_examples=80, deadline=None)
@given(m=means, G=groups, log_c=log_concentrations, log_ratio=st.floats(math.log(1.5), math.log(100.0)))
def test_share_falls_in_concentration_between_one_and_the_batch_law(m, G, log_c, log_ratio):
    c1, c2 = math.exp(log_c), math.exp(log_c + log_ratio)
    z1, z2 = zero_std_share_beta(m * c1, (1 - m) * c1, G), zero_std_share_beta(m * c2, (1 - m) * c2, G)
    batch = zero_variance_probability(m, G)
    assert 1.0 > z1 > z2 >= batch * (1 - 1e-12)


@settings(max_examples=60, deadline=None)
@given(m=means, log_c=log_concentrations, G=st.integers(1, 300))
def test_share_falls_in_group_size(m, log_c, G):
    c = math.exp(log_c)
    z = zero_std_share_beta(m * c, (1 - m) * c, np.array([G, G + 1]))
    assert z[1] < z[0] <= 1.0
    if G == 1:
        assert z[0] == pytest.approx(1.0, rel=EXACT_RTOL)


@pytest.mark.parametrize("m, G", [(0.71, 16), (0.5, 8), (0.05, 64), (0.97, 4)])
def test_limits_in_concentration(m, G):
    big, small = 1e12, 1e-10
    assert zero_std_share_beta(m * big, (1 - m) * big, G) == pytest.approx(zero_variance_probability(m, G), rel=LIMIT_RTOL)
    assert zero_std_share_beta(m * small, (1 - m) * small, G) == pytest.approx(1.0, abs=SMALL_C_ATOL)


@pytest.mark.parametrize("a, b", [(0.5912, 0.2415), (0.5, 2.0), (3.0, 0.7)])
def test_power_law_asymptote_converges_at_order_one_over_G(a, b):
    """z(G) / [Gamma(a+b)/Gamma(b) G^-a + Gamma(a+b)/Gamma(a) G^-b] - 1 = O(1/G): 16x the group, 1/16 the error."""
    G = np.array([2**12, 2**16])
    asymptote = np.exp(gammaln(a + b) - gammaln(b)) * G**-a + np.exp(gammaln(a + b) - gammaln(a)) * G**-b
    err = np.abs(zero_std_share_beta(a, b, G) / asymptote - 1.0)
    assert err[1] < 1e-3
    assert err[0] / err[1] == pytest.approx(16.0, rel=0.1)


def test_difficulty_properties_and_validation():
    d = Difficulty.from_mean(0.25, 8.0)
    assert (d.a, d.b, d.mean, d.concentration) == pytest.approx((2.0, 6.0, 0.25, 8.0), rel=EXACT_RTOL)
    assert d.std == pytest.approx(math.sqrt(0.25 * 0.75 / 9.0), rel=EXACT_RTOL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.a = 1.0
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ConfigError, match="Beta shape a"):
            Difficulty(a=bad, b=1.0)


@pytest.mark.parametrize("a, b, G", CASES + [(300.0, 200.0, 16), (1e4, 5e3, 8)])
def test_fit_difficulty_round_trips(a, b, G):
    d = fit_difficulty(a / (a + b), zero_std_share_beta(a, b, G), G)
    assert (d.a, d.b) == pytest.approx((a, b), rel=FIT_RTOL)


def test_fit_difficulty_issue_example():
    """verl math run: batch success 0.71, G = 16, 44% zero-std groups logged.

    Fitted: a = 0.5912, b = 0.2415 (concentration 0.833, std of p over prompts 0.335); the batch law
    gives 0.00417. The share reaches 30% at G = 64 and 20% at G = 295; 10% needs G = 4539 (None
    within the default g_max = 1024): b < 1/4, so z ~ G^-b and halving the share takes ~18x the group.
    """
    d = fit_difficulty(0.71, 0.44, 16)
    assert zero_std_share_beta(d.a, d.b, 16) == pytest.approx(0.44, rel=FIT_RTOL)
    assert d.mean == pytest.approx(0.71, rel=EXACT_RTOL)
    assert zero_variance_probability(0.71, 16) == pytest.approx(0.00417, rel=1e-3)
    assert (d.a, d.b) == pytest.approx((0.5912, 0.2415), abs=1e-4)
    assert group_size_for_zero_std(d, 0.2) == 295
    assert group_size_for_zero_std(d, 0.1) is None
    assert group_size_for_zero_std(d, 0.1, g_max=10_000) == 4539


def test_fit_difficulty_at_the_batch_law_is_none_and_bad_input_raises():
    batch = float(zero_variance_probability(0.71, 16))
    assert fit_difficulty(0.71, batch, 16) is None
    assert fit_difficulty(0.71, batch * (1 + 0.1 * BATCH_LAW_RTOL), 16) is None
    assert fit_difficulty(0.71, 0.0, 16) is None
    with pytest.raises(ConfigError, match="share of 1"):
        fit_difficulty(0.71, 1.0, 16)
    for m in (0.0, 1.0):
        with pytest.raises(ConfigError, match="strictly between 0 and 1"):
            fit_difficulty(m, 0.5, 16)
    with pytest.raises(ConfigError, match="G must be an integer >= 2"):
        fit_difficulty(0.71, 0.5, 1)
    with pytest.raises(ConfigError, match="all-or-nothing"):
        fit_difficulty(0.5, 1.0 - 1e-14, 16)


def test_fit_difficulty_log_recovers_a_shared_concentration():
    c, G = 0.83, 16
    steps = np.array([0.55, 0.62, 0.71, 0.78])
    shares = zero_std_share_beta(steps * c, (1 - steps) * c, G)
    assert fit_difficulty_log(steps, shares, G) == pytest.approx(c, rel=FIT_RTOL)
    assert fit_difficulty_log(steps, zero_variance_probability(steps, G), G) is None
    with pytest.raises(ConfigError, match="same nonzero length"):
        fit_difficulty_log(steps, shares[:2], G)


@pytest.mark.parametrize("a, b", [(0.5912, 0.2415), (2.0, 3.0), (0.5, 0.5), (40.0, 10.0)])
@pytest.mark.parametrize("target", [0.3, 0.1, 0.02])
def test_group_size_meets_the_target_and_one_less_does_not(a, b, target):
    d = Difficulty(a=a, b=b)
    G = group_size_for_zero_std(d, target, g_max=5000)
    if G is None:
        assert zero_std_share_beta(a, b, 5000) > target
        return
    assert zero_std_share_beta(a, b, G) <= target
    assert G == 2 or zero_std_share_beta(a, b, G - 1) > target
    looser = group_size_for_zero_std(d, target * 1.5, g_max=5000)
    assert looser is not None and looser <= G


def test_group_size_rejects_unreachable_targets():
    d = Difficulty(a=1.0, b=1.0)
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ConfigError):
            group_size_for_zero_std(d, bad)


@pytest.mark.parametrize("p", [0.0, 0.03, 0.5, 0.83, 1.0])
@pytest.mark.parametrize("k, G", [(16, 16), (32, 16), (20, 3)])
def test_subset_estimator_is_exactly_unbiased(p, k, G):
    """sum_s pmf_k(s) [C(s, G) + C(k - s, G)] / C(k, G) = p^G + (1 - p)^G, by enumerating s."""
    s = np.arange(k + 1)
    per_count = np.array([zero_std_share_pass_rates([si / k], G, samples=k) for si in s])
    assert binom.pmf(s, k, p) @ per_count == pytest.approx(zero_variance_probability(p, G), rel=EXACT_RTOL)


def test_estimators_on_simulated_evals():
    """Unbiased within 4 standard errors of the truth; the plug-in above it by its predicted Jensen bias."""
    rng = np.random.default_rng(7)
    n, k, G = 20_000, 32, 16
    p = rng.beta(0.5912, 0.2415, size=n)  # (n,) true pass probabilities
    s = rng.binomial(k, p)  # (n,) successes of the eval
    truth = float(np.mean(zero_variance_probability(p, G)))
    per_prompt = np.array([zero_std_share_pass_rates([si / k], G, samples=k) for si in range(k + 1)])[s]
    unbiased = zero_std_share_pass_rates(s / k, G, samples=k)
    assert unbiased == pytest.approx(per_prompt.mean(), rel=EXACT_RTOL)
    stderr = np.std(per_prompt - zero_variance_probability(p, G)) / math.sqrt(n)
    assert abs(unbiased - truth) < MC_SIGMAS * stderr

    plug_in = zero_std_share_pass_rates(s / k, G)
    counts = np.arange(k + 1)
    expected_plug = binom.pmf(counts, k, p[:, None]) @ zero_variance_probability(counts / k, G)  # (n,)
    predicted_bias = float(np.mean(expected_plug - zero_variance_probability(p, G)))
    plug_stderr = np.std(zero_variance_probability(s / k, G) - expected_plug) / math.sqrt(n)
    assert predicted_bias > MC_SIGMAS * plug_stderr  # upward, and resolved by this eval
    assert abs(plug_in - truth - predicted_bias) < MC_SIGMAS * plug_stderr


def test_pass_rate_estimator_rejects_what_it_cannot_estimate():
    with pytest.raises(ConfigError, match="needs samples >= G"):
        zero_std_share_pass_rates([0.5, 0.25], 16, samples=8)
    with pytest.raises(ConfigError, match="no count of samples = 8"):
        zero_std_share_pass_rates([0.5, 0.3], 4, samples=8)
    with pytest.raises(ConfigError, match=r"in \[0, 1\]"):
        zero_std_share_pass_rates([0.5, 1.5], 4)
