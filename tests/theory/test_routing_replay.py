"""The flip-mixture model of `theory.routing` against independent routes (float64):

* a Monte Carlo of the same model (drift X_r, Bernoulli flips B, jumps J, gate drift G, sampled
  and summed), whose sample variances are compared with the closed form, with and without a
  covariance between the jump and the drift;
* plug-in moments against np.var (the law of total variance, exact up to rounding);
* the window sum (2) against a loop, the power-law fit against exact power laws.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gspo_dynamics.theory.routing import (
    flip_mixture_variance,
    jump_moments,
    power_law_exponent,
    replay_variance_reduction,
    window_relative_change,
)

Z_SCORE = 5.0  # statistical tolerance in standard errors of the batch means (fixed seed)
BATCHES, PER_BATCH = 40, 50_000  # 2e6 tokens: the s.e. of a variance difference is ~1e-5 here
ROUND = 1e-10  # relative rounding of float64 sums over <= 1e3 terms


def _sample(rng, n, q, jump, base, drift, coupling=0.0):
    """X_r, Delta of n tokens: X_r ~ N(drift), B ~ Bernoulli(q), J = coupling X_r + a skewed jump
    (a shifted exponential of mean and variance `jump`), G ~ N(base)."""
    x = rng.normal(drift[0], np.sqrt(drift[1]), n)
    b = rng.random(n) < q
    scale = np.sqrt(jump[1])  # exponential: mean = std = scale, shifted to mean jump[0]
    j = coupling * x + rng.exponential(scale, n) - scale + jump[0]
    g = rng.normal(base[0], np.sqrt(base[1]), n)
    return x, np.where(b, j, g)


CASES = [  # q, (m_J, v_J), (m_G, v_G): experts replay has G = 0; full replay adds the gate drift
    (0.3, (0.02, 0.004), (0.0, 0.0)),
    (0.7, (-0.05, 0.01), (0.0, 0.0)),
    (0.5, (0.03, 0.002), (-0.01, 0.0005)),
    (0.0, (0.5, 1.0), (0.01, 0.001)),
    (1.0, (0.1, 0.003), (0.2, 0.5)),
]


@pytest.mark.parametrize("q, jump, base", CASES)
def test_variance_reduction_matches_a_monte_carlo_of_the_mixture(q, jump, base):
    rng = np.random.default_rng(3)
    drift = (0.01, 0.02)
    diffs = []
    for _ in range(BATCHES):
        x, delta = _sample(rng, PER_BATCH, q, jump, base, drift)
        diffs.append(np.var(x + delta) - np.var(x))
    diffs = np.array(diffs)
    se = diffs.std(ddof=1) / np.sqrt(BATCHES)
    predicted = replay_variance_reduction(q, *jump, *base)
    assert abs(diffs.mean() - predicted) <= Z_SCORE * se + ROUND


def test_covariance_term_matches_a_monte_carlo_with_coupled_jumps():
    """J = c X_r + noise on flipped tokens: Cov(X_r, Delta) = q c Var(X_r), and (1) with that cov holds."""
    rng = np.random.default_rng(5)
    q, c, drift, jump, base = 0.4, 0.3, (0.0, 0.02), (0.02, 0.004), (0.0, 0.0)
    diffs = []
    for _ in range(BATCHES):
        x, delta = _sample(rng, PER_BATCH, q, jump, base, drift, coupling=c)
        diffs.append(np.var(x + delta) - np.var(x))
    diffs = np.array(diffs)
    se = diffs.std(ddof=1) / np.sqrt(BATCHES)
    # the jump's own moments now include c X_r: mean m_J, variance v_J + c^2 Var(X_r)
    jump_var = jump[1] + c**2 * drift[1]
    predicted = replay_variance_reduction(q, jump[0], jump_var, cov=q * c * drift[1])
    assert abs(diffs.mean() - predicted) <= Z_SCORE * se
    independent = replay_variance_reduction(q, jump[0], jump_var)
    assert abs(diffs.mean() - independent) > Z_SCORE * se  # the cov term is resolved, not noise


def test_experts_replay_form_is_a_bernoulli_gated_jump():
    q, m, v = np.array([0.0, 0.2, 0.5, 1.0]), 0.07, 0.003
    assert np.allclose(flip_mixture_variance(q, m, v), q * v + q * (1 - q) * m**2, rtol=ROUND, atol=0)


@settings(max_examples=50, deadline=None)
@given(arrays(np.float64, st.integers(1, 300), elements=st.floats(-5, 5)), st.integers(0, 2**32 - 1))
def test_plug_in_moments_reproduce_the_sample_variance(delta, seed):
    flipped = np.random.default_rng(seed).random(delta.size) < 0.4
    m = jump_moments(delta, flipped)
    assert 0 <= m["q"] <= 1
    assert np.isclose(flip_mixture_variance(**m), np.var(delta), rtol=1e-9, atol=1e-12)


def test_window_change_is_the_summed_reduction_over_the_summed_variance():
    rng = np.random.default_rng(0)
    var = rng.uniform(0.01, 0.05, 21)
    dv = rng.uniform(0.0, 0.005, 21)
    loop_after, loop_before = 0.0, 0.0
    for v, d in zip(var, dv):
        loop_after += v - d
        loop_before += v
    assert np.isclose(window_relative_change(var, dv), loop_after / loop_before - 1, rtol=ROUND)
    assert window_relative_change(var, np.zeros_like(var)) == 0.0


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0])
def test_power_law_exponent_recovers_an_exact_power_law(alpha):
    j = np.arange(1, 8)
    assert np.isclose(power_law_exponent(j, 0.3 * j**alpha), alpha, rtol=ROUND)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="q must lie"):
        flip_mixture_variance(1.5, 0.0, 1.0)
    with pytest.raises(ValueError, match="variances"):
        flip_mixture_variance(0.5, 0.0, -1.0)
    with pytest.raises(ValueError, match="summed variance"):
        window_relative_change([0.0, 0.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="alike"):
        jump_moments([1.0, 2.0], [True])
    with pytest.raises(ValueError, match="positive"):
        power_law_exponent([1, 2], [1.0, -1.0])
