"""Token- vs sequence-level importance ratios: theory against Monte Carlo and exact enumeration (float64).

The Monte Carlo route draws a random tabular policy (P positions, V tokens, logits N(0, 1)),
perturbs every position's logits by j steps of a known drift (a Gaussian direction, centred and
scaled so that Var_{pi_s}[d] = DRIFT^2 exactly), samples responses from the sampling policy and
evaluates the exact softmax log-ratios. Sequences of length L are consecutive blocks of
positions. Statistical tolerances are Z_SCORE standard errors plus a named model tolerance.
"""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from gspo_dynamics import ConfigError
from gspo_dynamics.theory import linear, ratios
from gspo_dynamics.theory.bandit import TwoArmBandit
from gspo_dynamics.theory.hyperparams import Hyperparams
from gspo_dynamics.theory.ratio_stability import (
    bandit_critical_refresh_interval,
    bandit_partials,
    correction_share,
    critical_refresh_interval_ratio,
    effective_stiffness,
    noise_temperature_factor,
    window_clipped_fraction,
)

Z_SCORE = 4.0  # statistical tolerance in standard errors (fixed seeds; ~6e-5 two-sided per check)
# The log-ratio of a finite categorical is a discrete mixture, not exactly normal: with V = 1024
# tokens and N(0, 1) logits (~V/e effective tokens) its CDF departs from the normal by ~1e-3.
MODEL_CLIP_ATOL = 5e-3
MODEL_REL = 5e-3  # relative model error of moments (higher cumulants of the drift, O(sigma^3))
SLOPE_ATOL = 0.03  # fitted log-log slope of Var[log s] against L
FD_STEP = 1e-5  # central differences on the enumerated expected update: error ~h^2 ~1e-10 relative
FD_RTOL = 1e-6

POSITIONS, VOCAB, SAMPLES = 256, 1024, 10_000
DRIFT = 0.05  # centred std of the per-step logit change at every position
LENGTHS = (1, 4, 64, 256)
WINDOW = (1, 4)


def _tabular_log_ratios(rng, j: int) -> np.ndarray:
    """(SAMPLES, POSITIONS) exact token log-ratios log pi_j(y) - log pi_s(y), y ~ pi_s."""
    logits = rng.standard_normal((POSITIONS, VOCAB))
    logp = logits - logsumexp(logits, axis=1, keepdims=True)  # (P, V), sampling policy
    p = np.exp(logp)
    d = rng.standard_normal((POSITIONS, VOCAB))
    d -= (p * d).sum(1, keepdims=True)
    d *= DRIFT / np.sqrt((p * d * d).sum(1, keepdims=True))  # Var_{pi_s}[d] = DRIFT^2 exactly
    delta = j * d  # coherent drift: j steps in the same direction
    log_w = delta - logsumexp(logp + delta, axis=1, keepdims=True)  # (P, V)
    # Inverse-CDF sampling for all positions at once: row t's CDF shifted to [t, t + 1].
    cdf = np.cumsum(p, axis=1)
    cdf[:, -1] = 1.0
    offsets = np.arange(POSITIONS)
    flat = (cdf + offsets[:, None]).ravel()
    u = rng.random((SAMPLES, POSITIONS)) + offsets  # (N, P)
    index = np.minimum(np.searchsorted(flat, u.ravel()), flat.size - 1).reshape(SAMPLES, POSITIONS)
    return log_w.ravel()[index]


@pytest.fixture(scope="module")
def mc():
    return {j: _tabular_log_ratios(np.random.default_rng(100 + j), j) for j in WINDOW}


def _sequence_log_ratios(log_w: np.ndarray, L: int) -> np.ndarray:
    return log_w.reshape(-1, L).mean(axis=1)  # (N P / L,): mean token log-ratio of each block


def _close(measured, predicted, se, rel=0.0, atol=0.0):
    assert abs(measured - predicted) <= Z_SCORE * se + rel * abs(predicted) + atol, (measured, predicted, se)


# --- ratio statistics against Monte Carlo ---------------------------------------------------


@pytest.mark.parametrize("j", WINDOW)
@pytest.mark.parametrize("L", LENGTHS)
@pytest.mark.parametrize("level", ratios.LEVELS)
def test_log_ratio_moments_match_monte_carlo(mc, level, L, j):
    x = mc[j].ravel() if level == "token" else _sequence_log_ratios(mc[j], L)
    mean, var = ratios.log_ratio_moments(level, DRIFT, j, L)
    n = x.size
    _close(x.mean(), mean, math.sqrt(var / n), rel=MODEL_REL)
    _close(x.var(), var, var * math.sqrt(2.0 / n), rel=MODEL_REL)


@pytest.mark.parametrize("j", WINDOW)
@pytest.mark.parametrize("L", LENGTHS)
@pytest.mark.parametrize("level, clip", [("token", ratios.GRPO_CLIP), ("sequence", ratios.GSPO_CLIP),
                                         ("sequence", ratios.GRPO_CLIP)])
def test_ratio_variance_and_clip_fractions_match_monte_carlo(mc, level, clip, L, j):
    x = mc[j].ravel() if level == "token" else _sequence_log_ratios(mc[j], L)
    rho, n = np.exp(x), x.size
    lo, hi = clip
    stats = ratios.ratio_statistics(level, DRIFT, j, L, clip_low=lo, clip_high=hi)
    # Ratio variance: SE of a sample variance ~ sqrt((m4 - var^2) / n).
    se_var = math.sqrt(np.var((rho - rho.mean()) ** 2) / n)
    _close(rho.var(), stats.variance, se_var, rel=MODEL_REL)
    for measured, predicted in [((rho < 1 - lo).mean(), stats.clip.below), ((rho > 1 + hi).mean(), stats.clip.above)]:
        _close(measured, predicted, math.sqrt(max(predicted * (1 - predicted), 1.0 / n) / n), atol=MODEL_CLIP_ATOL)
    # Symmetric advantage signs (q = 1/2): the clipped gradient share and the kept noise E[rho^2 1{kept}].
    cut = 0.5 * rho * ((rho < 1 - lo) + (rho > 1 + hi))
    _close(cut.mean() / rho.mean(), stats.clipped_gradient_fraction, cut.std() / math.sqrt(n), atol=MODEL_CLIP_ATOL)
    kept = 0.5 * rho**2 * ((rho >= 1 - lo).astype(float) + (rho <= 1 + hi))
    _close(kept.mean(), stats.noise_multiplier, kept.std() / math.sqrt(n), atol=MODEL_CLIP_ATOL)


def test_sequence_log_variance_scales_as_one_over_length(mc):
    lengths = np.array([1, 4, 16, 64, 256])
    for j in WINDOW:
        measured = [_sequence_log_ratios(mc[j], L).var() for L in lengths]
        slope = np.polyfit(np.log(lengths), np.log(measured), 1)[0]
        assert abs(slope + 1.0) < SLOPE_ATOL
        _, predicted = ratios.log_ratio_moments("sequence", DRIFT, j, lengths)
        assert np.polyfit(np.log(lengths), np.log(predicted), 1)[0] == pytest.approx(-1.0, abs=1e-12)


# --- the drift of a tabular policy under noise-only SGD -------------------------------------


def test_tabular_noise_drift_matches_sgd_simulation():
    # R independent runs of j SGD steps on a tabular policy whose advantages are independent of
    # the tokens; each step samples a fresh batch from the (frozen) sampling policy.
    R, P, V, N, steps, lr = 200, 32, 16, 64, 4, 0.5
    rng = np.random.default_rng(7)
    logits_s = rng.standard_normal((P, V)) * 1.5
    p_s = np.exp(logits_s - logsumexp(logits_s, axis=1, keepdims=True))  # (P, V)
    cdf = np.cumsum(p_s, axis=1)
    cdf[:, -1] = 1.0
    flat = (cdf + np.arange(P)[:, None]).ravel()
    theta = np.broadcast_to(logits_s, (R, P, V)).copy()
    for _ in range(steps):
        u = rng.random((R, N, P)) + np.arange(P)
        tok = np.minimum(np.searchsorted(flat, u.ravel()), flat.size - 1).reshape(R, N, P) % V
        A = rng.standard_normal((R, N))  # E[A^2] = 1
        cell = (np.arange(R)[:, None, None] * P + np.arange(P)) * V + tok  # (R, N, P) flat index
        counts = np.bincount(cell.ravel(), weights=np.repeat(A, P), minlength=R * P * V).reshape(R, P, V)
        pi = np.exp(theta - logsumexp(theta, axis=2, keepdims=True))
        theta += lr / (N * P) * (counts - A.sum(1)[:, None, None] * pi)  # sum_i A_i (e_{y_i} - pi) / (N L)
    log_w = theta - logsumexp(theta, axis=2, keepdims=True) - np.log(p_s)  # (R, P, V)
    var_s = (p_s * log_w**2).sum(2) - (p_s * log_w).sum(2) ** 2  # (R, P): Var_{pi_s}[log w]
    n2 = ratios.tabular_noise_drift(lr, p_s, N, P) ** 2  # (P,)
    predicted = ratios.log_ratio_variance(0.0, steps, np.sqrt(n2.mean()))  # j n^2, n^2 averaged over positions
    se = math.sqrt(var_s.var(axis=0).mean() / (R * P))  # runs and positions independent
    _close(var_s.mean(), predicted, se, rel=MODEL_REL)


def test_score_spread_closed_forms():
    V = 7
    assert ratios.score_spread(np.full(V, 1 / V)) == pytest.approx((V - 1) / V**2, rel=1e-14)
    assert ratios.score_spread(np.eye(V)[0]) == pytest.approx(0.0, abs=1e-15)  # a deterministic position never moves


# --- properties -----------------------------------------------------------------------------

drifts = st.floats(0.0, 0.5)
windows = st.integers(0, 16)
eps_values = st.floats(1e-5, 0.9)


@settings(max_examples=150, deadline=None)
@given(drifts, windows, eps_values, eps_values, st.floats(0.0, 1.0))
def test_token_and_sequence_ratios_coincide_at_length_one(d, j, lo, hi, q):
    tok = ratios.ratio_statistics("token", d, j, 1, clip_low=lo, clip_high=hi, positive_share=q)
    seq = ratios.ratio_statistics("sequence", d, j, 1, clip_low=lo, clip_high=hi, positive_share=q)
    for name in ("log_mean", "log_var", "clipped_gradient_fraction", "noise_multiplier", "mean", "variance"):
        assert getattr(seq, name) == getattr(tok, name)
    assert seq.clip == tok.clip


@settings(max_examples=150, deadline=None)
@given(drifts, windows, st.sampled_from(ratios.LEVELS), st.integers(1, 256), eps_values, eps_values,
       st.floats(1e-5, 0.5), st.floats(0.0, 1.0))
def test_clip_fractions_are_probabilities_and_fall_as_eps_grows(d, j, level, L, lo, hi, widen, q):
    mu, v = ratios.log_ratio_moments(level, d, j, L)
    narrow = ratios.clip_fractions(mu, v, lo, hi, q)
    wide = ratios.clip_fractions(mu, v, min(lo + widen, 0.999), hi + widen, q)
    for frac in (narrow, wide):
        for x in (frac.below, frac.above, frac.low, frac.high, frac.total, frac.region):
            assert 0.0 <= x <= 1.0
    assert wide.below <= narrow.below and wide.above <= narrow.above and wide.total <= narrow.total
    g = ratios.clipped_gradient_fraction(mu, v, lo, hi, q)
    assert 0.0 <= g <= 1.0
    assert g >= ratios.clipped_gradient_fraction(mu, v, min(lo + widen, 0.999), hi + widen, q)


def test_on_policy_ratio_is_one():
    stats = ratios.ratio_statistics("sequence", 0.3, 0, np.arange(1, 257), clip_low=3e-4, clip_high=4e-4)
    assert np.all(stats.variance == 0.0) and np.all(stats.clip.total == 0.0) and np.all(stats.noise_multiplier == 1.0)


def test_statistics_broadcast_over_window_length_drift_and_eps():
    j = np.array([1, 2, 4])[:, None, None]
    L = np.arange(1, 257)[None, :, None]
    eps = np.array([3e-4, 0.2])
    stats = ratios.ratio_statistics("sequence", DRIFT, j, L, clip_low=eps, clip_high=eps)
    assert stats.clip.total.shape == (3, 256, 2) and stats.noise_multiplier.shape == (3, 256, 2)
    assert ratios.log_ratio_variance(np.array([0.01, 0.1])[:, None], np.array([1, 4]), 0.02).shape == (2, 2)


def test_noise_multipliers_unclipped_closed_forms():
    sigma2, L = 0.04, np.array([1, 2, 8, 256])
    tok = ratios.noise_multiplier(*ratios.log_ratio_moments("token", 0.2, 1, L))
    seq = ratios.noise_multiplier(*ratios.log_ratio_moments("sequence", 0.2, 1, L))
    np.testing.assert_allclose(tok, np.exp(sigma2), rtol=1e-14)
    np.testing.assert_allclose(seq, np.exp(sigma2 * (2 - L) / L), rtol=1e-14)
    # Window average with a clip range too wide to bind: mean_j exp((j d)^2).
    factor = noise_temperature_factor("token", 0.1, 5, clip_low=1 - 1e-12, clip_high=1e12)
    assert factor == pytest.approx(np.mean(np.exp((0.1 * np.arange(5)) ** 2)), rel=1e-12)
    assert noise_temperature_factor("none", 0.1, 5) == 1.0


# --- stability per correction type ----------------------------------------------------------


def _enumerated_update(z, z_s, L: int, ratio: str) -> float:
    """Expected update of position 0's logit: L two-arm positions, reward mean_t 1[y_t = 1], mean
    baseline at G -> infinity, all positions at the same logits (mean-field); exact enumeration."""
    p, p_s = 1 / (1 + math.exp(-z)), 1 / (1 + math.exp(-z_s))
    total = 0.0
    for y in itertools.product((0, 1), repeat=L):
        y = np.array(y)
        prob = np.prod(np.where(y == 1, p_s, 1 - p_s))
        log_w = np.where(y == 1, math.log(p / p_s), math.log((1 - p) / (1 - p_s)))
        weight = {"none": 1.0, "token": math.exp(log_w[0]), "sequence": math.exp(log_w.mean())}[ratio]
        total += prob * weight * (y.mean() - p_s) * (y[0] - p) / L  # A (1/L) d log pi(y_0) / dz_0
    return total


@pytest.mark.parametrize("L", [1, 2, 4, 6])
def test_sequence_ratio_corrects_one_over_length_of_the_staleness(L):
    z, h = 0.7, FD_STEP
    stale = {r: -(_enumerated_update(z, z + h, L, r) - _enumerated_update(z, z - h, L, r)) / (2 * h)
             for r in ("none", "token", "sequence")}
    for r in ("token", "sequence"):
        # a_kappa = (1 - kappa) a_none + kappa a_full with a_full = 0 (mean baseline)
        expected = (1 - correction_share(r, L)) * stale["none"]
        assert stale[r] == pytest.approx(float(expected), rel=FD_RTOL, abs=FD_RTOL * abs(stale["none"]))


def test_exact_ratio_removes_the_stale_stiffness_of_the_mean_baseline_only():
    bandit = TwoArmBandit(ref_logit=-1.0)
    for G in (None, 4):
        a_n, _, a_f, _ = bandit_partials(1.0, bandit, Hyperparams(lr=1.0, kl_coef=0.5, group_size=G))
        assert a_n > 0 and abs(a_f) < 1e-15
    _, _, a_std, _ = bandit_partials(1.0, bandit, Hyperparams(lr=1.0, kl_coef=0.5, advantage="std"))
    assert abs(a_std) > 1e-3  # the stale group normaliser is left


@settings(max_examples=100, deadline=None)
@given(st.floats(0.0, 1.0), st.floats(0.01, 2.0), st.floats(0.0, 1.0))
def test_effective_stale_stiffness_interpolates_between_corrected_and_stale(c, a, b):
    # Token ratio, mean baseline: a_full = 0, so a_eff = c a; the KL part b_none stays fresh.
    a_eff, b_eff = effective_stiffness(a, b, 0.0, b + 0.3, 1.0, c)
    assert a_eff == pytest.approx(c * a, rel=1e-12, abs=1e-15)
    assert b_eff == pytest.approx(b + (1 - c) * 0.3, rel=1e-12)
    assert effective_stiffness(a, b, 0.0, b + 0.3, 1.0, 1.0)[0] == pytest.approx(a, rel=1e-15)
    assert effective_stiffness(a, b, 0.0, b + 0.3, 1.0, 0.0)[0] == 0.0
    assert effective_stiffness(a, b, 0.0, b + 0.3, 1.0, c, clip_mode="drop")[0] == 0.0


def test_threshold_reduces_to_linear_without_correction_or_clipping():
    a = np.array([0.1, 0.3, 1.0])[:, None]
    b = np.array([0.0, 0.05])
    lr, mu = 0.5, 0.3
    none = critical_refresh_interval_ratio(a, b, 0.0, b + 0.2, lr, mu, correction="none", drift=0.1,
                                           clip_low=0.2, clip_high=0.28, t_max=500)
    np.testing.assert_array_equal(none, linear.critical_refresh_interval(a, b, lr, mu, t_max=500))
    L = 8
    seq = critical_refresh_interval_ratio(a, b, 0.0, b + 0.2, lr, mu, correction="sequence", drift=0.0, length=L,
                                          clip_low=3e-4, clip_high=4e-4, t_max=500)
    k = 1 / L
    np.testing.assert_array_equal(seq, linear.critical_refresh_interval((1 - k) * a, (1 - k) * b + k * (b + 0.2),
                                                                        lr, mu, t_max=500))


def test_threshold_matches_direct_iteration_of_the_periodic_update():
    # Independent route: iterate (x, v, x_s) with phase-dependent (a_j, b_j) for many periods.
    a_n, b_n, a_f, b_f, lr, mu = 0.3, 0.05, 0.0, 0.25, 0.5, 0.0
    kw = dict(correction="sequence", drift=0.1, length=4, clip_low=0.2, clip_high=0.28)
    T_c = int(critical_refresh_interval_ratio(a_n, b_n, a_f, b_f, lr, mu, t_max=1000, **kw))
    assert T_c > 1

    def growth(T):
        x, v = 1.0, 0.0
        for _ in range(400):
            x_s = x
            for j in range(T):
                c = window_clipped_fraction("sequence", kw["drift"], j, 4, clip_low=0.2, clip_high=0.28)
                a, b = effective_stiffness(a_n, b_n, a_f, b_f, correction_share("sequence", 4), c)
                v = mu * v - a * x_s - b * x
                x = x + lr * v
        return abs(x) + abs(v)

    assert growth(T_c) > 1e3 and growth(T_c - 1) < 1.0


def test_bandit_threshold_token_clipping_restores_a_finite_threshold():
    bandit = TwoArmBandit(ref_logit=-1.0)
    hp = Hyperparams(lr=2.0, kl_coef=0.5, correction="token", clip_low=0.2, clip_high=0.2)
    z = 1.0
    none = int(bandit_critical_refresh_interval(z, bandit, Hyperparams(lr=2.0, kl_coef=0.5), drift=0.0, t_max=2000))
    unclipped = int(bandit_critical_refresh_interval(z, bandit, hp, drift=0.0, t_max=2000))
    # All advantages positive (q = 1): c_j -> 1 as the drift grows, so the threshold falls towards "none".
    clipped = [int(bandit_critical_refresh_interval(z, bandit, hp, drift=d, positive_share=1.0, t_max=2000))
               for d in (0.05, 0.2, 0.5)]
    assert none > 1 and unclipped == linear.STABLE
    assert linear.STABLE not in clipped and clipped == sorted(clipped, reverse=True) and clipped[-1] >= none


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize("call, match", [
    (lambda: ratios.log_ratio_variance(-0.1, 1), "drift"),
    (lambda: ratios.log_ratio_variance(0.1, 1.5), "window position"),
    (lambda: ratios.log_ratio_moments("sequence", 0.1, 1, 0), "length"),
    (lambda: ratios.log_ratio_moments("tokens", 0.1, 1), "token, sequence"),
    (lambda: ratios.clip_fractions(0.0, 0.1, 1.5, 0.2), "clip_low"),
    (lambda: ratios.clip_fractions(0.0, 0.1, 0.2, -0.2), "clip_high"),
    (lambda: ratios.clip_fractions(0.0, 0.1, 0.2, 0.2, positive_share=2.0), "positive_share"),
    (lambda: ratios.noise_multiplier(0.0, 0.1, clip_low=0.2), "both"),
    (lambda: ratios.score_spread([0.5, 0.6]), "sum to 1"),
    (lambda: ratios.tabular_noise_drift(0.0, [0.5, 0.5], 8, 4), "lr"),
    (lambda: correction_share("seq", 4), "none, token, sequence"),
    (lambda: effective_stiffness(1, 0, 0, 1, 1, 0.5, clip_mode="zero"), "stale, drop"),
    (lambda: effective_stiffness(1, 0, 0, 1, 1, 1.5), "clipped fraction"),
])
def test_bad_input_raises_config_error(call, match):
    with pytest.raises(ConfigError, match=match):
        call()
