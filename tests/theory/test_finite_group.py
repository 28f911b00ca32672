"""Finite-group statistics against brute-force enumeration of every reward sequence.

The independent route: for small G, list all 2^G reward sequences r in {0, 1}^G, weight each by
p^k (1 - p)^(G - k), compute the group advantages exactly as a trainer does (numpy mean/std with
ddof, + eps, zero-variance groups -> 0) and the group policy gradient
(1/G) sum_i A_i d log pi(a_i)/dz with d log pi(a)/dz = 1[a = 1] - p. Nothing is collapsed to k.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from gspo_dynamics.theory import finite_group as fg

# Enumeration and the binomial sums are both exact finite sums in float64.
ENUM_TOL = 1e-12
# Central differences with step H: truncation O(H^2 m''') ~ 1e-10, rounding ~1e-16 / H ~ 1e-10.
FD_STEP = 1e-6
FD_TOL = 1e-7

PS = [0.03, 0.2, 0.5, 0.61, 0.9]
VARIANTS = [
    ("mean", "unbiased", 0.0),
    ("std", "unbiased", 1e-4),
    ("std", "biased", 1e-4),
    ("std", "unbiased", 0.0),
    ("std", "biased", 0.3),
]


# scipy's binom.pmf raises OverflowError for p below ~1e-308 (subnormal); logits beyond -700 are
# outside anything the model meets, so the properties are stated for p = 0, 1 and p >= 1e-300.
probabilities = st.one_of(st.sampled_from([0.0, 1.0]), st.floats(1e-300, 1.0))
groups = st.integers(2, 200)
variants = st.sampled_from(VARIANTS)


def _enumerate(p, G, advantage, std_estimator, std_eps):
    """(probabilities, group gradients, all-equal flags) over all 2^G reward sequences."""
    r = np.array(list(itertools.product([0.0, 1.0], repeat=G)))  # (2^G, G)
    k = r.sum(axis=1)
    prob = p**k * (1.0 - p) ** (G - k)
    centred = r - r.mean(axis=1, keepdims=True)
    if advantage == "mean":
        adv = centred
    else:
        std = r.std(axis=1, ddof=1 if std_estimator == "unbiased" else 0, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            adv = np.where(std > 0, centred / (std + std_eps), 0.0)
    score = r - p  # d log pi(a)/dz for pi(1) = sigmoid(z)
    grad = (adv * score).mean(axis=1)
    constant = (k == 0) | (k == G)
    return prob, grad, constant


@pytest.mark.parametrize("G", [2, 3, 5, 8, 10])
@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("advantage,std_estimator,std_eps", VARIANTS)
def test_drive_factor_and_variance_match_enumeration(G, p, advantage, std_estimator, std_eps):
    prob, grad, _ = _enumerate(p, G, advantage, std_estimator, std_eps)
    assert prob.sum() == pytest.approx(1.0, rel=ENUM_TOL)
    mean = prob @ grad
    var = prob @ (grad - mean) ** 2
    assert fg.drive_factor(p, G, advantage, std_estimator, std_eps) == pytest.approx(mean, rel=ENUM_TOL, abs=1e-15)
    # the variance is E[g^2] - m^2 in the module: cancellation costs digits when Var << m^2
    got_var = fg.group_gradient_variance(p, G, advantage, std_estimator, std_eps)
    assert got_var == pytest.approx(var, rel=1e-10, abs=1e-15)


@pytest.mark.parametrize("G", [2, 3, 5, 8, 10])
@pytest.mark.parametrize("p", PS)
def test_zero_variance_probability_matches_enumeration(G, p):
    prob, _, constant = _enumerate(p, G, "mean", "unbiased", 0.0)
    assert fg.zero_variance_probability(p, G) == pytest.approx(prob[constant].sum(), rel=ENUM_TOL)


@pytest.mark.parametrize("G", [2, 4, 7, 8])
@pytest.mark.parametrize("std_estimator", ["unbiased", "biased"])
def test_group_std_matches_numpy(G, std_estimator):
    r = np.array(list(itertools.product([0.0, 1.0], repeat=G)))
    expected = r.std(axis=1, ddof=1 if std_estimator == "unbiased" else 0)
    np.testing.assert_allclose(fg.group_std(r.sum(axis=1), G, std_estimator), expected, rtol=ENUM_TOL, atol=1e-15)


@settings(max_examples=60, deadline=None)
@given(probabilities, st.integers(2, 300))
def test_mean_baseline_closed_form(p, G):
    # E[(k/G)(1 - k/G)] = p - (Var k + (G p)^2) / G^2 = (1 - 1/G) p (1 - p)
    assert fg.drive_factor(p, G, "mean") == pytest.approx((1 - 1 / G) * p * (1 - p), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.8])
def test_large_group_approaches_infinite_limit(p):
    # The gap is O(1/G): exactly p (1 - p) / G for the mean baseline; for the std normaliser the
    # delta method on E[sqrt(std^2)] gives relative gap ~ (1 + (1 - 4u) / (8 u)) / G with u = p (1 - p),
    # at most ~1.3 / G on this grid. Tolerance 2 / (G u) bounds both with room.
    G = 4096
    u = p * (1 - p)
    tol = 2.0 / (G * u)
    for advantage in ("mean", "std"):
        finite = fg.drive_factor(p, G, advantage, "unbiased", 1e-4)
        limit = fg.drive_factor(p, None, advantage, "unbiased", 1e-4)
        assert finite == pytest.approx(limit, rel=tol)
        assert abs(finite - limit) > 0.0  # finite G really differs: the limit is not returned early
    assert fg.drive_factor_derivative(p, G, "mean") == pytest.approx(
        fg.drive_factor_derivative(p, None, "mean"), abs=tol
    )
    assert fg.drive_factor_derivative(p, G, "std", std_eps=1e-4) == pytest.approx(
        fg.drive_factor_derivative(p, None, "std", std_eps=1e-4), abs=10 * tol
    )
    assert fg.group_gradient_variance(p, None, "std") == 0.0


@pytest.mark.parametrize("p", [0.1, 0.3, 0.8])
def test_std_drive_second_order_gap(p):
    # Sharper than the bound above: with eps = 0 and the unbiased std, g_k = std_b^2 / std_u
    # = std_b sqrt((G-1)/G), and E[std_b] ~ sqrt(u) (1 - 1/(2G) - (1 - 4u)/(8 G u)), so
    # G (1 - m_G / sqrt(u)) -> 1 + (1 - 4u) / (8u); the remainder is O(1/G).
    G = 4096
    u = p * (1 - p)
    gap = G * (1 - fg.drive_factor(p, G, "std", "unbiased", 0.0) / np.sqrt(u))
    assert gap == pytest.approx(1 + (1 - 4 * u) / (8 * u), abs=50 / (G * u))


@pytest.mark.parametrize("G", [3, 8, 64, None])
@pytest.mark.parametrize("advantage,std_estimator,std_eps", VARIANTS)
def test_derivative_matches_central_differences(G, advantage, std_estimator, std_eps):
    p = np.array([0.05, 0.2, 0.37, 0.5, 0.7, 0.93])
    dm = fg.drive_factor_derivative(p, G, advantage, std_estimator, std_eps)
    fd = (
        fg.drive_factor(p + FD_STEP, G, advantage, std_estimator, std_eps)
        - fg.drive_factor(p - FD_STEP, G, advantage, std_estimator, std_eps)
    ) / (2 * FD_STEP)
    np.testing.assert_allclose(dm, fd, rtol=FD_TOL, atol=FD_TOL)


@pytest.mark.parametrize("p", [0.1, 0.25, 0.7, 0.95])
def test_variance_leading_order(p):
    # Delta method, k/G ~ p + O(G^-1/2):  mean g = f(k/G), f(y) = y (1 - y), Var ~ f'(p)^2 p (1-p) / G;
    # std (eps = 0) g ~ sqrt(y (1 - y)), Var ~ Var(std_b^2) / (4u) = (1 - 4u) / (4G).
    # Relative corrections are O(1/(G u)); G = 4096 and the tolerance 20 / (G u) leave room.
    G = 4096
    u = p * (1 - p)
    rel = 20 / (G * u)
    assert fg.group_gradient_variance(p, G, "mean") == pytest.approx(u * (1 - 2 * p) ** 2 / G, rel=rel)
    assert fg.group_gradient_variance(p, G, "std", std_eps=0.0) == pytest.approx((1 - 4 * u) / (4 * G), rel=rel)


def test_variance_at_one_half_is_second_order():
    # The leading term vanishes at p = 1/2: G Var -> 0 and G^2 Var tends to a constant (1/2 for the
    # mean baseline: g = 1/4 - (k/G - 1/2)^2, Var = Var((k/G - 1/2)^2) = 2 (1/(4G))^2 exactly at leading order).
    v1, v2 = (fg.group_gradient_variance(0.5, G, "mean") for G in (1024, 2048))
    assert np.log2(v1 / v2) == pytest.approx(2.0, abs=1e-2)
    assert 2048**2 * v2 == pytest.approx(2 / 16, rel=1e-2)


@pytest.mark.parametrize("G", [2, 3, 8, 32, 256])
@pytest.mark.parametrize("std_estimator", ["unbiased", "biased"])
def test_std_estimator_bias_is_negative(G, std_estimator):
    # Jensen: E[std] <= sqrt(E[std^2]) and E[std_u^2] = u, E[std_b^2] = (1 - 1/G) u; strict for p in (0, 1).
    p = np.linspace(0.01, 0.99, 25)
    bias = fg.std_estimator_bias(p, G, std_estimator)
    assert np.all(bias < 0)
    # and it is exactly the gap between the enumerated E[std] and sqrt(p (1 - p)) for small G
    if G <= 8:
        for pi in (0.2, 0.5):
            r = np.array(list(itertools.product([0.0, 1.0], repeat=G)))
            k = r.sum(axis=1)
            prob = pi**k * (1 - pi) ** (G - k)
            std = r.std(axis=1, ddof=1 if std_estimator == "unbiased" else 0)
            assert fg.std_estimator_bias(pi, G, std_estimator) == pytest.approx(
                prob @ std - np.sqrt(pi * (1 - pi)), rel=ENUM_TOL
            )


@pytest.mark.parametrize("G", [2, 5, 16])
def test_unbiased_std_squared_is_unbiased(G):
    # E[std_u^2] = p (1 - p): the reason Jensen (and not the estimator) sets the sign of the bias.
    p = np.array([0.1, 0.4, 0.75])
    k = np.arange(G + 1)
    pmf = binom.pmf(k, G, p[:, None])  # (3, G + 1)
    np.testing.assert_allclose(pmf @ fg.group_std(k, G, "unbiased") ** 2, p * (1 - p), rtol=ENUM_TOL)


# ------------------------------------------------------------------------ hypothesis properties


@settings(max_examples=80, deadline=None)
@given(probabilities, groups, variants)
def test_reflection_symmetry(p, G, variant):
    # k -> G - k maps p -> 1 - p and leaves g_k unchanged: m and Var are symmetric, dm/dp antisymmetric.
    for fn in (fg.drive_factor, fg.group_gradient_variance):
        assert fn(p, G, *variant) == pytest.approx(fn(1 - p, G, *variant), rel=1e-9, abs=1e-14)
    assert fg.zero_variance_probability(p, G) == pytest.approx(fg.zero_variance_probability(1 - p, G), rel=1e-12)
    if 1e-3 < p < 1 - 1e-3:
        d1 = fg.drive_factor_derivative(p, G, *variant)
        d2 = fg.drive_factor_derivative(1 - p, G, *variant)
        assert d1 == pytest.approx(-d2, rel=1e-7, abs=1e-9)


@settings(max_examples=80, deadline=None)
@given(probabilities, groups, variants)
def test_ranges(p, G, variant):
    m = fg.drive_factor(p, G, *variant)
    coef = fg.group_gradient_coefficients(G, *variant)
    assert 0.0 <= m <= coef.max() + 1e-15  # an average of the g_k >= 0
    assert fg.group_gradient_variance(p, G, *variant) >= 0.0
    z = fg.zero_variance_probability(p, G)
    assert 2.0 ** (1 - G) - 1e-15 <= z <= 1.0 + 1e-15  # minimised at p = 1/2
    # no learning signal at p in {0, 1}, and only then (for p strictly inside, some group is mixed)
    assert (m == 0.0) == (p in (0.0, 1.0))


@settings(max_examples=60, deadline=None)
@given(probabilities, groups, st.sampled_from(["unbiased", "biased"]), st.floats(0.0, 0.25))
def test_std_normaliser_amplifies(p, G, std_estimator, std_eps):
    # std <= sqrt(G / (4 (G - 1))) <= 0.71 for binary rewards, so with eps <= 0.25 the divisor
    # std + eps < 1 can only enlarge each g_k: m_std >= m_mean (larger eps can shrink it).
    assert fg.drive_factor(p, G, "std", std_estimator, std_eps) >= fg.drive_factor(p, G, "mean") - 1e-15


@settings(max_examples=40, deadline=None)
@given(st.lists(probabilities, min_size=1, max_size=6), st.integers(2, 40), variants)
def test_vectorised_equals_loop(ps, G, variant):
    p = np.array(ps)
    m = fg.drive_factor(p, G, *variant)
    np.testing.assert_allclose(m, [fg.drive_factor(pi, G, *variant) for pi in ps], rtol=1e-13, atol=1e-16)
    # Var = E[g^2] - m^2 cancels: its rounding is relative to E[g^2] = Var + m^2, not to Var itself
    var = fg.group_gradient_variance(p, G, *variant)
    loop = [fg.group_gradient_variance(pi, G, *variant) for pi in ps]
    np.testing.assert_allclose(var, loop, rtol=1e-13, atol=1e-13 * max(np.max(m**2 + var), 1e-300))
