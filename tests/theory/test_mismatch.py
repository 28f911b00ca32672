"""theory.mismatch: each closed form against Monte Carlo of its own model (delta ~ N(-s^2/2, s^2) per token,
independent tokens), float64, fixed seeds, tolerances from the sample sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.theory import mismatch as th

N = 400_000  # Monte Carlo samples: a share's standard error is at most 0.5 / sqrt(N) < 1e-3
SHARE_TOL = 4e-3  # 4 standard errors
MEAN_RTOL = 5e-3  # relative error of a mean of |delta| (its relative spread is ~0.75 / sqrt(N))


def _tokens(rng, s: float, shape) -> np.ndarray:
    return -0.5 * s * s + s * rng.standard_normal(shape)


@pytest.mark.parametrize("s", [1e-3, 0.05, 0.3, 1.5])
def test_mean_abs_log_ratio_is_the_monte_carlo_mean_and_inverts(s):
    delta = _tokens(np.random.default_rng(0), s, N)
    assert th.mean_abs_log_ratio(s) == pytest.approx(np.mean(np.abs(delta)), rel=MEAN_RTOL)
    assert th.spread_from_mean_abs(th.mean_abs_log_ratio(s)) == pytest.approx(s, rel=1e-9)


def test_small_spread_limit_is_s_sqrt_2_over_pi():
    assert th.mean_abs_log_ratio(1e-6) == pytest.approx(1e-6 * math.sqrt(2 / math.pi), rel=1e-9)


@pytest.mark.parametrize("s", [0.01, 0.1, 0.5])
def test_kl_k3_and_chi2_estimators_give_back_the_spread(s):
    """Sample means of the estimators verl logs (k1 = E[-delta], k3 = E[e^delta - 1 - delta], chi2 = E[e^2delta] - 1)
    inverted by the closed forms give back s, within 4 standard errors carried through the inverse
    (se(s) = se(estimate) / |d estimate / ds|: s for the KLs, 2 s e^{s^2} for chi2)."""
    delta = _tokens(np.random.default_rng(1), s, N)
    cases = ((-delta, th.spread_from_kl, s), (np.expm1(delta) - delta, th.spread_from_kl, s),
             (np.exp(2 * delta) - 1, th.spread_from_chi2, 2 * s * math.exp(s * s)))
    for values, invert, slope in cases:
        se = values.std() / math.sqrt(N) / slope
        assert float(invert(max(values.mean(), 0.0))) == pytest.approx(s, abs=4 * se)


@pytest.mark.parametrize(("s", "length"), [(0.02, 100), (0.02, 1500), (0.005, 3000), (0.1, 30)])
def test_the_sequence_weight_leaves_the_band_as_the_closed_form_says(s, length):
    """The share of completions whose weight exp(sum of L log-ratios) is outside [0.8, 1.28], and above a cap of 2,
    closed form vs sums of simulated tokens."""
    rng = np.random.default_rng(2)
    sums = _tokens(rng, s, (N // 10, length)).sum(axis=1) if length <= 100 else \
        np.concatenate([_tokens(rng, s, (2_000, length)).sum(axis=1) for _ in range(20)])
    mean, var = th.sequence_log_ratio_moments(s, length)
    w = np.exp(sums)
    outside = np.mean((w < 0.8) | (w > 1.28))
    assert float(th.outside_band_share(mean, var, 0.2, 0.28)) == pytest.approx(outside, abs=0.5 / math.sqrt(sums.size) * 4)
    assert float(th.above_cap_share(mean, var, 2.0)) == pytest.approx(np.mean(w > 2.0), abs=0.5 / math.sqrt(sums.size) * 4)


@pytest.mark.parametrize("s", [0.005, 0.02, 0.05])
def test_half_the_completions_leave_the_band_near_the_leave_length(s):
    """At L* = (log(1 + eps) / (0.6745 s))^2 the share outside [1 - eps, 1 + eps] is 1/2 up to the drift and the
    band's asymmetry in log space (a few points)."""
    length = th.leave_length(s, 0.2, 0.6745)
    mean, var = th.sequence_log_ratio_moments(s, length)
    assert float(th.outside_band_share(mean, var, 0.2, 0.2)) == pytest.approx(0.5, abs=0.06)
    assert float(th.leave_length(s, 0.2, 1.0)) == pytest.approx((math.log(1.2) / s) ** 2)


def test_more_tokens_more_completions_outside_and_a_token_weight_stays_inside():
    lengths = np.array([1, 10, 100, 1000, 10000])
    mean, var = th.sequence_log_ratio_moments(0.02, lengths)
    share = th.outside_band_share(mean, var, 0.2, 0.2)
    assert np.all(np.diff(share) > 0) and share[0] < 1e-12 and share[-1] > 0.8


def test_zero_spread_is_inside_and_bad_input_is_one_sentence():
    assert th.outside_band_share(0.0, 0.0, 0.2, 0.2) == 0.0
    assert th.spread_from_mean_abs(0.0) == 0.0
    with pytest.raises(ConfigError, match="must be a finite number >= 0"):
        th.spread_from_kl(-1.0)
