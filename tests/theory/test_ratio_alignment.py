"""The reward-aligned law of GSPO's sequence ratio (`theory.ratio_alignment`) against independent routes
(float64):

* the importance-sampling identity (1) by exact enumeration of a tabular policy's responses, with
  its first-order error measured to shrink as the square of the policy change;
* the sign-conditional law (3)-(4) against sampling from it;
* the whole chain (2)-(4) against simulated groups of partial-credit rewards and their group-mean
  advantage signs, within the two-point approximation's stated error;
* the window allocation (5) against the first-moment recursion it solves.
"""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gspo_dynamics import ConfigError
from gspo_dynamics.theory import ratio_alignment as ra
from gspo_dynamics.theory import ratios

Z_SCORE = 4.0  # statistical tolerance in standard errors (fixed seeds)
EPS = (3e-4, 4e-4)  # GSPO's clip range
# Two-point approximation: (2) sets |r - r_bar| to its rms, an upper bound on E|r - r_bar| (Jensen), so
# it overstates the alignment when the deviations are spread out. For Binomial(8, p) / 8 rewards in
# groups of 8 (near-Gaussian deviations, E|D| ~ 0.8 rms) at a correlation up to 0.6 it overshoots the
# clip fraction by up to ~0.05 (measured +0.019, +0.037, +0.048 at the settings below); for rewards with a
# few large deviations (the transformer's partial credit near saturation, E|D| = 0.95 rms) by less.
TWO_POINT_ATOL = 0.05


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _enumerate(logits_s, logits_j, target):
    """Every response of a tabular policy (independent positions): (pi_s(y), log s(y), r(y)) arrays."""
    L, V = logits_s.shape
    p_s, p_j = _softmax(logits_s), _softmax(logits_j)
    ys = np.array(list(itertools.product(range(V), repeat=L)))  # (V^L, L)
    rows = np.arange(L)
    prob_s = p_s[rows, ys].prod(-1)
    log_s = np.log(p_j[rows, ys] / p_s[rows, ys]).mean(-1)  # GSPO's log s = mean_t log w_t
    reward = (ys == target).mean(-1)  # partial credit: the share of positions matching the target
    return prob_s, log_s, reward


def test_importance_identity_exact_and_first_order():
    rng = np.random.default_rng(3)
    L, V = 3, 4
    logits = rng.standard_normal((L, V))
    direction = rng.standard_normal((L, V))
    target = rng.integers(0, V, L)
    errors = []
    for scale in (0.04, 0.01):
        prob, log_s, r = _enumerate(logits, logits + scale * direction, target)
        R_s = prob @ r
        gain = prob @ ((np.exp(L * log_s) - 1.0) * (r - R_s))  # E_s[(pi_j / pi_s - 1)(r - R_s)]
        R_j = (_softmax(logits + scale * direction)[np.arange(L), target]).mean()  # exact E_j[r]
        assert gain == pytest.approx(R_j - R_s, rel=1e-10, abs=1e-14)  # the identity is exact
        cov = prob @ ((log_s - prob @ log_s) * (r - R_s))
        errors.append(abs(L * cov - (R_j - R_s)) / abs(R_j - R_s))  # relative error of (1)
    # first order: the relative error is O(scale), so a 4x smaller change makes it ~4x smaller
    assert 3.0 < errors[0] / errors[1] < 5.0


@pytest.mark.parametrize("qp, qn", [(0.5, 0.5), (0.35, 0.45)])
def test_sign_conditional_law_against_sampling(qp, qn):
    rng = np.random.default_rng(11)
    n, L, G, sr = 400_000, 8, 8, 0.1
    c, v, gain = -0.002, 2e-4, 0.02
    M = float(ra.reward_aligned_shift(gain, sr, L, G))
    assert M == pytest.approx(gain * math.sqrt((G - 1) / G) / (L * sr), rel=1e-12)
    up, down = (float(x) for x in ra.sign_shifts(M, qp, qn))
    assert qp * up == pytest.approx(qn * down, rel=1e-12)  # the shifts average to zero
    assert qp * up**2 + qn * down**2 == pytest.approx((qp + qn) * M**2, rel=1e-12)  # and explain (q+ + q-) M^2
    sign = rng.choice(3, size=n, p=[qp, qn, 1 - qp - qn])  # 0: A > 0, 1: A < 0, 2: A = 0
    x = c + np.array([up, -down, 0.0])[sign] + math.sqrt(v) * rng.standard_normal(n)
    # (3) recovers the centre and the within-sign variance from the sample's mean and variance
    fr = ra.aligned_clip_fractions(x.mean(), x.var(), gain, sr, L, G, *EPS, qp, qn)
    lo, hi = math.log(1 - EPS[0]), math.log(1 + EPS[1])
    for pred, meas in ((fr.low, ((sign == 1) & (x < lo)).mean()), (fr.high, ((sign == 0) & (x > hi)).mean()),
                       (fr.below, (x < lo).mean()), (fr.above, (x > hi).mean())):
        assert float(pred) == pytest.approx(meas, abs=Z_SCORE * math.sqrt(meas * (1 - meas) / n) + 1e-3)


@pytest.mark.parametrize("p, corr", [(0.5, 0.3), (0.75, 0.5), (0.4, 0.6)])
def test_chain_against_simulated_groups(p, corr):
    """Groups of G partial-credit rewards r = Binomial(L, p) / L; log s = a + b (r - p) + noise with
    Corr(log s, r) = corr; A's sign is that of r - r_bar (group mean). The prediction takes the
    gain from (1) (Delta R = L b Var(r)), the true sigma_r and the sample's mean, variance and sign
    shares, as the transformer's claim takes the logged ones."""
    rng = np.random.default_rng(5)
    L, G, groups = 8, 8, 50_000
    sr = math.sqrt(p * (1 - p) / L)
    sd = 0.02  # std of log s
    b = corr * sd / sr
    r = rng.binomial(L, p, (groups, G)) / L
    x = -1e-3 + b * (r - p) + math.sqrt(sd**2 - (b * sr) ** 2) * rng.standard_normal((groups, G))
    dev = r - r.mean(1, keepdims=True)
    pos, neg = dev > 1e-12, dev < -1e-12
    lo, hi = math.log(1 - EPS[0]), math.log(1 + EPS[1])
    measured = (pos & (x > hi)).mean() + (neg & (x < lo)).mean()
    fr = ra.aligned_clip_fractions(x.mean(), x.var(), L * b * sr**2, sr, L, G, *EPS, pos.mean(), neg.mean())
    assert float(fr.total) == pytest.approx(measured, abs=TWO_POINT_ATOL)
    # and the alignment matters: the sign-blind lognormal misses it by more than the tolerance
    blind = ratios.clip_fractions(x.mean(), x.var(), *EPS, positive_share=pos.mean() / (pos.mean() + neg.mean()))
    assert abs((pos.mean() + neg.mean()) * (float(blind.low) + float(blind.high)) - measured) > TWO_POINT_ATOL


def test_no_gain_is_the_plain_lognormal():
    mu, v, q = -0.01, 0.02, 0.4
    plain = ratios.clip_fractions(mu, v, 0.2, 0.28, positive_share=q)
    mixed = ra.aligned_clip_fractions(mu, v, 0.0, 0.1, 8, 8, 0.2, 0.28, q, 1 - q)
    for k in ("below", "above", "low", "high"):
        assert float(getattr(mixed, k)) == pytest.approx(float(getattr(plain, k)), rel=1e-12)
    assert float(ra.reward_aligned_shift(0.3, 0.0, 8, 8)) == 0.0  # every group flat: no alignment


def test_momentum_gains_are_the_periodic_first_moment():
    """Eq. (5) against the recursion it solves: the first moment's projection a on the reward gradient,
    a <- mu a + (1 - mu) push, with a unit push at every j = 0 and none after, run for many windows;
    the gain of step k is a_k, Delta R_j their sum over k < j, scaled to Gamma over the window."""
    for mu, T in ((0.9, 8), (0.5, 4), (0.0, 3), (0.99, 2)):
        a, gains = 0.0, []
        for step in range(200 * T):
            a = mu * a + (1.0 - mu) * (step % T == 0)
            gains.append(a)
        last = np.array(gains[-T:])  # (T,) the periodic steady state
        expected = 0.3 * np.concatenate([[0.0], np.cumsum(last)[:-1]]) / last.sum()
        assert np.allclose(ra.momentum_window_gains(0.3, mu, T), expected, atol=1e-12)
    assert np.allclose(ra.momentum_window_gains(np.array([0.2, -0.1]), 0.0, 3), [[0, 0.2, 0.2], [0, -0.1, -0.1]])


@settings(max_examples=60, deadline=None)
@given(gain=st.floats(-0.2, 0.2), var=st.floats(0.0, 0.01), sr=st.one_of(st.just(0.0), st.floats(1e-3, 0.5)),
       qp=st.floats(0.0, 1.0), share=st.floats(0.0, 1.0))
def test_fractions_are_probabilities(gain, var, sr, qp, share):
    qn = (1.0 - qp) * share
    fr = ra.aligned_clip_fractions(-var / 2, var, gain, sr, 8, 8, *EPS, qp, qn)
    for k in ("below", "above", "low", "high"):
        assert 0.0 <= float(getattr(fr, k)) <= 1.0 + 1e-12
    assert float(fr.total) <= qp + qn + 1e-12  # a zero advantage is never clipped


def test_bad_inputs_raise():
    with pytest.raises(ConfigError, match="positive_share"):
        ra.aligned_clip_fractions(0.0, 1e-4, 0.01, 0.1, 8, 8, *EPS, 0.7, 0.5)
    with pytest.raises(ConfigError, match="group size"):
        ra.reward_aligned_shift(0.01, 0.1, 8, 1)
    with pytest.raises(ConfigError, match="momentum"):
        ra.momentum_window_gains(0.1, 1.0, 4)
    with pytest.raises(ConfigError, match="refresh interval"):
        ra.momentum_window_gains(0.1, 0.9, 0)
