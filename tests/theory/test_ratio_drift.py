"""The clip-aware walk of `theory.ratio_drift` against independent routes (float64):

* a particle Monte Carlo of the same stochastic model, written as a plain loop over classes;
* the memoryless theory of `ratios` in the limit where the two must agree (one unclipped step,
  advantage independent of the token): Var = n^2 with n = `tabular_noise_drift`, mean = -Var/2;
* the sign-conditional mixture of `ratios` (sign_shift, signed_clip_fractions) against sampling.
"""

import math

import numpy as np
import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics.theory import ratios
from gspo_dynamics.theory.ratio_drift import SignedAdvantage, clipped_log_ratio_law

Z_SCORE = 4.0  # statistical tolerance in standard errors (fixed seeds)
# The grid deposit inflates each step's variance by at most h^2/4 (h = 0.005): 6e-6 per step, and
# moves tail probabilities by at most the mass of one cell next to the bound (~h x density <~ 0.01).
GRID_VAR_ATOL = 8 * 0.005**2 / 4
GRID_TAIL_ATOL = 0.01
PARTICLES = 20_000
RNG_SEED = 7


def _setting(L=3, V=5, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((L, V))
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    # advantages given the token: a two-point-ish law per class with a token-dependent tilt
    tilt = rng.normal(0.0, 0.3, (L, V))
    samples = rng.standard_normal((L, V, 4000)) + tilt[..., None]
    return probs, SignedAdvantage.from_samples(samples)


def _monte_carlo(probs, adv, lr, N, steps, clip, rng):
    """Particles of every class (position t, token y), stepped by the module docstring's law: the
    mean-field terms from the particles' own averages, the normaliser re-imposed by a common shift."""
    L, V = probs.shape
    lo, hi = (-np.inf, np.inf) if clip is None else (math.log(1 - clip[0]), math.log(1 + clip[1]))
    X = np.zeros((L, V, PARTICLES))
    history = []
    for _ in range(steps):
        new = np.empty_like(X)
        for t in range(L):
            p = probs[t]
            s2 = float(p @ p)
            kp, kn = (X[t] <= hi), (X[t] >= lo)  # (V, M) kept by the positive / negative side
            w = np.exp(X[t])
            ga = w * (adv.pos_mean[t][:, None] * kp + adv.neg_mean[t][:, None] * kn)  # E[a | y, x]
            ga2 = w**2 * (adv.pos_sq[t][:, None] * kp + adv.neg_sq[t][:, None] * kn)
            gbar, g2bar = ga.mean(1), ga2.mean(1)
            for y in range(V):
                mean_u = np.zeros(PARTICLES)
                sq_u = np.zeros(PARTICLES)
                for z in range(V):
                    c = (y == z) - p[y] - p[z] + s2
                    if z == y:
                        mean_u += p[z] * c * ga[y]
                        sq_u += p[z] * c * c * ga2[y]
                    else:
                        mean_u += p[z] * c * gbar[z]
                        sq_u += p[z] * c * c * g2bar[z]
                sd = lr / L * np.sqrt(np.maximum(sq_u - mean_u**2, 0.0) / N)
                new[t, y] = X[t, y] + lr / L * mean_u + sd * rng.standard_normal(PARTICLES)
            # E_{pi_s}[w] = 1 at every position: a common shift
            new[t] -= math.log(float(p @ np.exp(new[t]).mean(1)))
        X = new
        history.append(X.copy())
    return history


def _mc_stats(X, probs, rng, clip_tok, clip_seq):
    """Token (pooled over positions, y ~ p) and sequence (log s = mean_t X_t) samples' statistics."""
    L, V, M = X.shape
    ys = np.stack([rng.choice(V, size=M, p=probs[t]) for t in range(L)])  # (L, M) tokens
    xs = X[np.arange(L)[:, None], ys, np.arange(M)[None, :]]  # (L, M): one particle per draw
    tok, seq = xs.ravel(), xs.mean(0)
    out = {}
    for name, x, (lo, hi) in (("token", tok, clip_tok), ("sequence", seq, clip_seq)):
        out[name] = {"mean": x.mean(), "var": x.var(), "below": (x < math.log(1 - lo)).mean(),
                     "above": (x > math.log(1 + hi)).mean(), "n": x.size}
    return out


# lr: clipped, large enough that most of the spread at j = 6 sits at the walls; unclipped, small
# enough that the e^x feedback keeps log w inside the grid (|log w| < 1.5)
@pytest.mark.parametrize("clip, lr", [((0.2, 0.28), 4.0), (None, 1.0)], ids=["clipped", "unclipped"])
def test_walk_matches_monte_carlo_of_the_same_model(clip, lr):
    probs, adv = _setting()
    N, window = 16, (1, 3, 6)
    law = clipped_log_ratio_law(probs, adv, lr=lr, batch_size=N, window=window,
                                clip_low=None if clip is None else clip[0], clip_high=None if clip is None else clip[1])
    rng = np.random.default_rng(RNG_SEED)
    history = _monte_carlo(probs, adv, lr, N, max(window), clip, rng)
    tok, seq = law.token(0.2, 0.28), law.sequence(0.02, 0.02)
    for i, j in enumerate(window):
        mc = _mc_stats(history[j - 1], probs, rng, (0.2, 0.28), (0.02, 0.02))
        for name, pred in (("token", tok), ("sequence", seq)):
            m = mc[name]
            # sampling s.e.: var ~ var sqrt(2 / n) (x1.5 for the non-Gaussian walls), tails sqrt(p(1-p)/n)
            n_eff = min(m["n"], PARTICLES)
            assert pred["var"][i] == pytest.approx(m["var"], abs=Z_SCORE * 1.5 * m["var"] * math.sqrt(2 / n_eff)
                                                   + GRID_VAR_ATOL), (name, j)
            assert pred["mean"][i] == pytest.approx(m["mean"], abs=Z_SCORE * math.sqrt(m["var"] / n_eff) + 1e-4), (name, j)
            for k in ("below", "above"):
                se = math.sqrt(max(m[k] * (1 - m[k]), 1e-4) / n_eff)
                assert pred[k][i] == pytest.approx(m[k], abs=Z_SCORE * se + GRID_TAIL_ATOL), (name, j, k)
    assert law.edge_mass.max() < 1e-4  # nothing piles up at the grid edge
    if clip is not None:  # the walls confine the walk: well below the unclipped spread by j = 6
        free = clipped_log_ratio_law(probs, adv, lr=lr, batch_size=N, window=window).token(0.2, 0.28)
        assert np.all(tok["var"] <= free["var"] + 1e-12) and tok["var"][-1] < 0.5 * free["var"][-1]


def test_one_unclipped_step_is_the_memoryless_noise_drift():
    """Advantage independent of the token (E[A | y] = 0): one step's pooled Var[log w] equals
    `log_ratio_variance(0, 1, n)` with n = `tabular_noise_drift` (the identity sum_yy' p p' c^2 =
    score_spread), and E[log w] = -Var/2 to second order (the normaliser)."""
    rng = np.random.default_rng(3)
    L, V, N, lr = 4, 12, 32, 6.0
    logits = rng.standard_normal((L, V))
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    a2 = 0.9
    half = np.full((L, V), 0.5 * a2)
    first = np.full((L, V), 0.4)
    adv = SignedAdvantage(first, -first, half, half)
    tok = clipped_log_ratio_law(probs, adv, lr=lr, batch_size=N, window=1).token(0.2, 0.28)
    n = ratios.tabular_noise_drift(lr, probs, N, L, a2)  # (L,)
    var = float(ratios.log_ratio_variance(0.0, 1, np.sqrt(np.mean(n**2))))
    # tolerance: deposit variance <= h^2/4 = 6e-6 on var ~ 0.03, and the O(var^2) normaliser curvature
    assert tok["var"][0] == pytest.approx(var, rel=2e-3)
    assert tok["mean"][0] == pytest.approx(-var / 2, rel=0.05)


def test_law_validates_its_inputs():
    probs, adv = _setting()
    with pytest.raises(ConfigError, match="probs"):
        clipped_log_ratio_law(probs[:, :1], adv, lr=1.0, batch_size=4, window=1)
    with pytest.raises(ConfigError, match="both"):
        clipped_log_ratio_law(probs, adv, lr=1.0, batch_size=4, window=1, clip_low=0.2)
    with pytest.raises(ConfigError, match="lr"):
        clipped_log_ratio_law(probs, adv, lr=0.0, batch_size=4, window=1)
    with pytest.raises(ConfigError, match="shape"):
        clipped_log_ratio_law(probs[:2], adv, lr=1.0, batch_size=4, window=1)
    with pytest.raises(ConfigError):
        SignedAdvantage(adv.pos_mean, adv.pos_mean, adv.pos_sq, adv.neg_sq)  # neg_mean must be <= 0


# --- the sign-conditional mixture -------------------------------------------------------------

@pytest.mark.parametrize("qp, qn", [(0.5, 0.5), (0.3, 0.45)])
def test_sign_mixture_against_sampling(qp, qn):
    rng = np.random.default_rng(11)
    mu, v, m, n = -0.002, 1.5e-4, 0.01, 400_000
    sign = rng.choice(3, size=n, p=[qp, qn, 1 - qp - qn])  # 0: A > 0, 1: A < 0, 2: A = 0
    x = mu + np.array([m, -m, 0.0])[sign] + math.sqrt(v) * rng.standard_normal(n)
    # law of total variance, inverted: the shift from the total and within-sign variances
    m_hat = float(ratios.sign_shift(x.var(), v, qp, qn))
    assert m_hat == pytest.approx(m, rel=0.03)  # s.e. of the sample variance ~0.2% -> ~1% on m
    lo, hi = 3e-4, 4e-4
    fr = ratios.signed_clip_fractions(mu, v, m, lo, hi, qp, qn)
    low = ((sign == 1) & (x < math.log(1 - lo))).mean()
    high = ((sign == 0) & (x > math.log(1 + hi))).mean()
    for pred, meas in ((fr.low, low), (fr.high, high), (fr.below, (x < math.log(1 - lo)).mean()),
                       (fr.above, (x > math.log(1 + hi)).mean())):
        assert float(pred) == pytest.approx(meas, abs=Z_SCORE * math.sqrt(meas * (1 - meas) / n))


def test_sign_mixture_without_shift_is_the_plain_lognormal():
    mu, v = -0.01, 0.02
    plain = ratios.clip_fractions(mu, v, 0.2, 0.28, positive_share=0.4)
    mixed = ratios.signed_clip_fractions(mu, v, 0.0, 0.2, 0.28, 0.4, 0.6)
    for k in ("below", "above", "low", "high"):
        assert float(getattr(mixed, k)) == pytest.approx(float(getattr(plain, k)), rel=1e-12)
    assert float(ratios.sign_shift(0.01, 0.02, 0.5, 0.5)) == 0.0  # no excess variance: no shift
    with pytest.raises(ConfigError):
        ratios.sign_shift(0.01, 0.005, 0.7, 0.5)


def test_conditional_sequence_mean_loop_reference_and_reductions():
    probs, adv = _setting(L=4, V=6, seed=5)
    law = clipped_log_ratio_law(probs, adv, lr=3.0, batch_size=16, window=(2, 5), clip_low=0.2, clip_high=0.28)
    weight = np.random.default_rng(1).uniform(0.0, 1.0, probs.shape)
    got = law.conditional_sequence_mean(probs, weight)
    for i in range(len(law.window)):  # Bayes' rule per position, as a loop
        ref = 0.0
        for t in range(probs.shape[0]):
            z = sum(probs[t, y] * weight[t, y] for y in range(probs.shape[1]))
            ref += sum(probs[t, y] * weight[t, y] / z * law.class_mean[i, t, y] for y in range(probs.shape[1]))
        assert got[i] == pytest.approx(ref / probs.shape[0], rel=1e-12)
    # a sign-blind event leaves the plain mean: the class means average to the density's mean
    plain = law.conditional_sequence_mean(probs, np.full(probs.shape, 0.5))
    assert plain == pytest.approx(law.token(0.2, 0.28)["mean"], abs=1e-12)
    assert plain == pytest.approx(law.sequence(3e-4, 4e-4)["mean"], abs=1e-9)  # mean of the L-fold convolution
