"""The stability read-outs of the tabular clip-aware walk (`LogRatioLaw.token_clip_readouts`,
`ratio_stability.tabular_*`): against a particle Monte Carlo of the same walk (the loop of
test_ratio_drift), against the pooled formula where the advantage's sign carries no class
information, and in the limits (c_0 = 0, eps -> infinity).
"""

import math

import numpy as np
import pytest
from test_ratio_drift import _monte_carlo, _setting

from gspo_dynamics import ConfigError
from gspo_dynamics.theory.ratio_drift import SignedAdvantage, clipped_log_ratio_law
from gspo_dynamics.theory.ratio_stability import (
    critical_refresh_interval_ratio,
    tabular_clipped_fractions,
    tabular_noise_temperature_factor,
)

Z_SCORE = 4.0  # statistical tolerance in standard errors (fixed seeds)
# read-outs weigh atoms by indicators at the bounds: a cell next to a bound is counted on one side
# (mass of one cell, <~ 0.01 x the ratio weight); deposits add <= h^2/4 per step to the variance
GRID_TAIL_ATOL = 0.01
RNG_SEED = 5
EPS = (0.2, 0.28)


def _mc_readouts(X, probs, adv, clip_mode):
    """The read-out formulas evaluated on particles X (L, V, M) of every class."""
    lo, hi = math.log(1 - EPS[0]), math.log(1 + EPS[1])
    w = np.exp(X)
    pm, nm, ps, ns = (probs * getattr(adv, k) for k in ("pos_mean", "neg_mean", "pos_sq", "neg_sq"))
    E = lambda f: f.mean(-1)  # noqa: E731  (L, V) class expectations
    if clip_mode == "drop":
        cut = (pm * E(w * (X > hi))).sum() - (nm * E(w * (X < lo))).sum()
        kept = (ps * E(w**2 * (X <= hi))).sum() + (ns * E(w**2 * (X >= lo))).sum()
    else:
        cut = ((pm - nm) * E(w * ((X > hi) | (X < lo)))).sum()
        kept = ((ps + ns) * E(np.clip(w, 1 - EPS[0], 1 + EPS[1]) ** 2)).sum()
    return cut / ((pm - nm) * E(w)).sum(), kept / (ps + ns).sum()


@pytest.mark.parametrize("clip_mode", ["drop", "stale"])
def test_readouts_match_a_monte_carlo_of_the_same_walk(clip_mode):
    probs, adv = _setting()
    N, lr, J = 16, 4.0, 6
    clip = EPS if clip_mode == "drop" else None  # CISPO has no wall: its law is the unclipped walk
    law = clipped_log_ratio_law(probs, adv, lr=lr if clip else 1.0, batch_size=N, window=range(1, J + 1),
                                clip_low=None if clip is None else clip[0], clip_high=None if clip is None else clip[1],
                                keep_classes=True)
    history = _monte_carlo(probs, adv, lr if clip else 1.0, N, J, clip, np.random.default_rng(RNG_SEED))
    c = tabular_clipped_fractions(law, probs, adv, clip_low=EPS[0], clip_high=EPS[1], clip_mode=clip_mode)
    noise = law.token_clip_readouts(probs, adv, *EPS, clip_mode)["noise_factor"]
    assert c[0] == 0.0 and c.shape == (J + 1,)
    M = history[0].shape[-1]
    for j in range(1, J + 1):
        c_mc, noise_mc = _mc_readouts(history[j - 1], probs, adv, clip_mode)
        # s.e. of a share ~ sqrt(c (1 - c) / M) per class, pooled over L V classes (conservative: one class)
        se_c = math.sqrt(max(c_mc * (1 - c_mc), 1e-4) / M)
        assert c[j] == pytest.approx(c_mc, abs=Z_SCORE * se_c + GRID_TAIL_ATOL), j
        assert noise[j - 1] == pytest.approx(noise_mc, rel=0.02, abs=Z_SCORE * noise_mc / math.sqrt(M)), j
    assert c[-1] > 0.05  # the clip binds: the comparison is not vacuous


def test_class_laws_mix_to_the_position_laws_and_the_sign_blind_limit():
    probs, adv = _setting()
    law = clipped_log_ratio_law(probs, adv, lr=4.0, batch_size=16, window=range(1, 5), clip_low=EPS[0],
                                clip_high=EPS[1], keep_classes=True)
    np.testing.assert_allclose(np.einsum("lv,jlvg->jlg", probs, law.class_density), law.density, atol=1e-14)
    # advantage sign independent of the class, symmetric (m+ = -m-): the pooled formula with q = 1/2
    L, V = probs.shape
    flat = SignedAdvantage(np.full((L, V), 0.4), np.full((L, V), -0.4), np.full((L, V), 0.3), np.full((L, V), 0.3))
    out = law.token_clip_readouts(probs, flat, *EPS)
    x, w = law.grid, np.exp(law.grid)
    lo, hi = math.log(1 - EPS[0]), math.log(1 + EPS[1])
    pooled = law.density.mean(1)  # (J, G): positions weigh equally
    c = 0.5 * (pooled @ (w * (x > hi)) + pooled @ (w * (x < lo))) / (pooled @ w)
    noise = 0.5 * (pooled @ (w**2 * (x <= hi)) + pooled @ (w**2 * (x >= lo)))
    np.testing.assert_allclose(out["clipped_fraction"], c, rtol=1e-12)
    np.testing.assert_allclose(out["noise_factor"], noise, rtol=1e-12)


def test_wide_clip_range_clips_nothing_and_feeds_the_threshold_scan():
    probs, adv = _setting()
    law = clipped_log_ratio_law(probs, adv, lr=1.0, batch_size=16, window=range(1, 8), keep_classes=True)
    c = tabular_clipped_fractions(law, probs, adv, clip_low=1 - 1e-12, clip_high=1e12)
    assert (c == 0.0).all()
    factor = tabular_noise_temperature_factor(law, probs, adv, 8, clip_low=1 - 1e-12, clip_high=1e12)
    w2 = np.einsum("lv,jlvg,g->j", probs, law.class_density, np.exp(2 * law.grid)) / probs.shape[0]
    pm, nm, ps, ns = (probs * getattr(adv, k) for k in ("pos_mean", "neg_mean", "pos_sq", "neg_sq"))
    weighted = np.einsum("lv,jlvg,g->j", ps + ns, law.class_density, np.exp(2 * law.grid)) / (ps + ns).sum()
    assert factor == pytest.approx(float(np.concatenate([[1.0], weighted]).mean()), rel=1e-12)
    assert (w2 > 1.0).all()  # E[w^2] > 1 unclipped
    # c = 0 everywhere: the scan is the constant-share threshold of the "none"-free corrected system
    a_n, b_n, a_f, b_f, lr, mu = 0.3, 0.05, 0.0, 0.25, 0.5, 0.0
    zero = critical_refresh_interval_ratio(a_n, b_n, a_f, b_f, lr, mu, correction="token", clipped_fractions=c, t_max=200)
    lognormal = critical_refresh_interval_ratio(a_n, b_n, a_f, b_f, lr, mu, correction="token", drift=0.0,
                                                clip_low=0.2, clip_high=0.2, t_max=200)
    assert int(zero) == int(lognormal)


def test_readouts_need_the_class_laws_and_a_contiguous_window():
    probs, adv = _setting()
    law = clipped_log_ratio_law(probs, adv, lr=1.0, batch_size=16, window=range(1, 4))
    with pytest.raises(ConfigError, match="keep_classes"):
        law.token_clip_readouts(probs, adv, *EPS)
    gappy = clipped_log_ratio_law(probs, adv, lr=1.0, batch_size=16, window=(1, 3), keep_classes=True)
    with pytest.raises(ConfigError, match="1..J"):
        tabular_clipped_fractions(gappy, probs, adv, clip_low=0.2, clip_high=0.2)
    full = clipped_log_ratio_law(probs, adv, lr=1.0, batch_size=16, window=range(1, 4), keep_classes=True)
    with pytest.raises(ConfigError, match="refresh interval 8"):
        tabular_noise_temperature_factor(full, probs, adv, 8, clip_low=0.2, clip_high=0.2)
    with pytest.raises(ConfigError, match="drop, stale"):
        full.token_clip_readouts(probs, adv, *EPS, "cispo")
