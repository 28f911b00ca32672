"""gspo_dynamics.fit._laws: the published reward-curve laws as forecast baselines.

Each law is fitted to a pilot drawn from that law plus Gaussian noise (fixed seeds) and must recover its parameters
and forecast the held-out rest within tolerances of about 3 standard deviations of each estimate over seeds
(measured over 30 seeds when the tolerances were set). Each optimum is checked against scipy.optimize.curve_fit on
the literal formula (an independent route: the entropy law's closed form, the sigmoid's variable projection, the
exponential's log-space tau); degenerate pilots must give finite forecasts with the fallback flagged."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import curve_fit

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.fit._laws import (
    MIN_POINTS, EntropyDecay, fit_entropy_law, fit_exponential_saturation, fit_sigmoid_scalerl, held_level,
    last_value, scalerl_sigmoid,
)

STEPS = np.arange(1.0, 201.0)  # a run of 200 logged steps
NOISE = 0.01  # the reward's (and entropy's) per-step noise
OPTIMUM_RTOL = 1e-4  # two optimisers on the same least-squares problem agree this closely
FIT_LAWS = (fit_exponential_saturation, fit_sigmoid_scalerl)


def saturation(t, r_inf=0.75, r0=0.2, tau=40.0):
    return r_inf - (r_inf - r0) * np.exp(-(t - 1.0) / tau)


def sigmoid_literal(c, r0, a, b, c_mid):
    """ScaleRL's equation (1) as printed: R_0 + (A - R_0) / (1 + (C_mid / C)^B)."""
    return r0 + (a - r0) / (1.0 + (c_mid / c) ** b)


def entropy_pilot(seed: int = 0, n: int = 60):
    """H(t) = 0.1 + 1.2 exp(-t / 30) and R = -0.3 exp(H) + 1.1 (ceiling 0.8), both with noise; the pilot's first n."""
    rng = np.random.default_rng(seed)
    h = 0.1 + 1.2 * np.exp(-STEPS / 30.0)
    r = -0.3 * np.exp(h) + 1.1
    return h, r, h[:n] + rng.normal(0, NOISE, n), r[:n] + rng.normal(0, NOISE, n)


def noisy(curve, seed: int = 0):
    return curve + np.random.default_rng(seed).normal(0, NOISE, curve.size)


def test_exponential_saturation_recovers_its_law_and_forecasts_the_rest():
    """Pilot: the first half (2.5 tau). Over 30 seeds the estimates' standard deviations were R_inf 0.004, R_0 0.003,
    tau 2%, and the forecast's largest error at most 0.008."""
    truth = saturation(STEPS)
    fit = fit_exponential_saturation(STEPS[:100], noisy(truth)[:100])
    assert not fit.fallback
    assert fit.r_inf == pytest.approx(0.75, abs=0.015) and fit.r0 == pytest.approx(0.2, abs=0.01)
    assert fit.tau == pytest.approx(40.0, rel=0.07)
    assert np.max(np.abs(fit.predict(STEPS[100:]) - truth[100:])) < 0.015


def test_scalerl_sigmoid_recovers_its_law_and_forecasts_the_rest():
    """A = 0.7, B = 2, C_mid = 60, R_0 = 0.2, C = step; pilot: the first 120 steps (f reaches 0.8). Over 30 seeds the
    standard deviations were A 0.020, B 6.5%, C_mid 3.5%, and the forecast's largest error at most 0.018 (R_0, fixed at
    the first points' mean, carries their noise into B)."""
    truth = scalerl_sigmoid(STEPS, 0.2, 0.7, 2.0, 60.0)
    fit = fit_sigmoid_scalerl(STEPS[:120], noisy(truth)[:120])
    assert not fit.fallback
    assert fit.r0 == pytest.approx(0.2, abs=3 * NOISE)
    assert fit.asymptote == pytest.approx(0.7, abs=0.07) and fit.efficiency == pytest.approx(2.0, rel=0.25)
    assert fit.c_mid == pytest.approx(60.0, rel=0.15)
    assert np.max(np.abs(fit.predict(STEPS[120:]) - truth[120:])) < 0.025


def test_entropy_law_recovers_its_law_and_forecasts_the_rest():
    """Pilot: the first 60 of 200 steps (the paper forecasts 200 steps from its first 36). Over 30 seeds the standard
    deviations were a 0.8%, b 0.005, the ceiling b - a 0.0026, H_inf 0.011, tau_H 2%, and the forecast's largest error
    at most 0.008."""
    _, r, h_pilot, r_pilot = entropy_pilot()
    fit = fit_entropy_law(h_pilot, r_pilot, steps=STEPS[:60])
    assert not fit.fallback and fit.entropy.kind == "exponential"
    assert fit.a == pytest.approx(0.3, rel=0.03) and fit.b == pytest.approx(1.1, abs=0.015)
    assert fit.ceiling == pytest.approx(0.8, abs=0.008)
    assert fit.entropy.h_inf == pytest.approx(0.1, abs=0.035) and fit.entropy.tau == pytest.approx(30.0, rel=0.07)
    assert np.max(np.abs(fit.predict(STEPS[60:]) - r[60:])) < 0.012


def test_the_entropy_laws_closed_form_is_curve_fits_optimum():
    _, _, h, r = entropy_pilot(seed=3)
    fit = fit_entropy_law(h, r)
    (a, b), _ = curve_fit(lambda x, a, b: -a * np.exp(x) + b, h, r, p0=[1.0, 0.0])
    assert (fit.a, fit.b) == pytest.approx((a, b), rel=1e-6)
    assert fit.rss == pytest.approx(float(np.sum((-a * np.exp(h) + b - r) ** 2)), rel=1e-9)


def test_the_exponential_fit_is_curve_fits_optimum_of_the_literal_law():
    r = noisy(saturation(STEPS), seed=4)[:100]
    fit = fit_exponential_saturation(STEPS[:100], r)
    p, _ = curve_fit(saturation, STEPS[:100], r, p0=[0.75, 0.2, 40.0])
    assert (fit.r_inf, fit.r0, fit.tau) == pytest.approx(tuple(p), rel=OPTIMUM_RTOL)


def test_the_sigmoid_fit_is_curve_fits_optimum_of_the_printed_formula():
    """Variable projection over (B, C_mid) against a plain 3-parameter fit of equation (1), R_0 held at the fit's."""
    r = noisy(scalerl_sigmoid(STEPS, 0.2, 0.7, 2.0, 60.0), seed=5)[:120]
    fit = fit_sigmoid_scalerl(STEPS[:120], r)
    p, _ = curve_fit(lambda c, a, b, m: sigmoid_literal(c, fit.r0, a, b, m), STEPS[:120], r, p0=[0.7, 2.0, 60.0])
    assert (fit.asymptote, fit.efficiency, fit.c_mid) == pytest.approx(tuple(p), rel=OPTIMUM_RTOL)


def test_the_sigmoid_is_halfway_at_c_mid_and_is_the_printed_formula():
    c = np.geomspace(1e-3, 1e6, 50)
    assert scalerl_sigmoid(c, 0.1, 0.9, 1.7, 300.0) == pytest.approx(sigmoid_literal(c, 0.1, 0.9, 1.7, 300.0), rel=1e-12)
    assert scalerl_sigmoid([300.0], 0.1, 0.9, 1.7, 300.0)[0] == pytest.approx(0.1 + (0.9 - 0.1) / 2, rel=1e-15)
    assert list(scalerl_sigmoid([0.0, -5.0], 0.1, 0.9, 1.7, 300.0)) == [0.1, 0.1]  # C -> 0+: R_0


@pytest.mark.parametrize("law", FIT_LAWS)
def test_an_affine_change_of_reward_units_changes_the_forecast_alike(law):
    """R -> 3 R - 1 (the laws are affine-equivariant; their bounds do not involve the reward's scale)."""
    r = noisy(saturation(STEPS))[:100]
    later = STEPS[100:]
    assert law(STEPS[:100], 3 * r - 1).predict(later) == pytest.approx(3 * law(STEPS[:100], r).predict(later) - 1, rel=1e-5)


@pytest.mark.parametrize("law", FIT_LAWS)
def test_flat_rewards_fall_back_to_their_level(law):
    fit = law(STEPS[:20], np.full(20, 0.4))
    assert fit.fallback and "flat" in fit.reason
    assert np.all(fit.predict([50.0, 1e4, 1e9]) == 0.4)


def test_flat_rewards_flat_entropy_or_no_entropy_at_all_fall_back_in_the_entropy_law():
    """The last: entropies of ~1000 nats (a wrong column), whose exp(H) overflows float64."""
    _, _, h, r = entropy_pilot()
    cases = [(h, np.full(h.size, 0.4), "rewards are flat"), (np.full(h.size, 0.5), r, "entropy is flat"),
             (1000 * h, r, "overflows")]
    for entropy, reward, word in cases:
        fit = fit_entropy_law(entropy, reward, steps=STEPS[:h.size])
        assert fit.fallback and word in fit.reason
        assert np.all(np.isfinite(fit.predict([100.0, 1e6])))
        assert fit.predict([1e6])[0] == pytest.approx(held_level(reward).level)


@pytest.mark.parametrize("seed", range(6))
def test_short_noisy_pilots_give_finite_forecasts(seed):
    """MIN_POINTS points of noise (a fallback is allowed, a raise or a non-finite forecast is not); fewer fall back."""
    rng = np.random.default_rng(seed)
    steps, reward, entropy = STEPS[:MIN_POINTS], rng.normal(0.5, 0.2, MIN_POINTS), rng.normal(1.0, 0.3, MIN_POINTS)
    far = np.array([6.0, 50.0, 1e4])
    fits = [law(steps, reward) for law in FIT_LAWS] + [fit_entropy_law(entropy, reward, steps=steps)]
    for fit in fits:
        assert np.all(np.isfinite(fit.predict(far)))
        assert fit.fallback == bool(fit.reason)
    for fit in [law(steps[:4], reward[:4]) for law in FIT_LAWS] + [fit_entropy_law(entropy[:4], reward[:4])]:
        assert fit.fallback and "fewer than" in fit.reason


def test_non_finite_points_are_dropped_and_order_does_not_matter():
    """NaN rewards, NaN steps and a shuffle give exactly the fit of the clean, sorted pilot."""
    r = noisy(saturation(STEPS))[:100]
    steps, dirty = STEPS[:100].copy(), r.copy()
    dirty[[3, 40, 77]] = np.nan
    steps[[10, 60]] = np.nan
    keep = np.isfinite(steps) & np.isfinite(dirty)
    order = np.random.default_rng(1).permutation(100)
    for law in FIT_LAWS:
        assert law(steps[order], dirty[order]) == law(STEPS[:100][keep], r[keep])
    _, _, h, rh = entropy_pilot()  # a NaN entropy leaves both the law and the entropy trajectory
    h_dirty = h.copy()
    h_dirty[[5, 30]] = np.nan
    clean = np.isfinite(h_dirty)
    assert fit_entropy_law(h_dirty, rh, steps=STEPS[:60]) == fit_entropy_law(h[clean], rh[clean], steps=STEPS[:60][clean])
    rh_dirty = rh.copy()  # a NaN reward leaves the law only: the entropy trajectory keeps that step's entropy
    rh_dirty[[5, 30]] = np.nan
    with_gaps = fit_entropy_law(h, rh_dirty, steps=STEPS[:60])
    assert (with_gaps.a, with_gaps.b) == (fit_entropy_law(h[clean], rh[clean]).a, fit_entropy_law(h[clean], rh[clean]).b)
    assert with_gaps.entropy == fit_entropy_law(h, rh, steps=STEPS[:60]).entropy


def test_bad_pilots_are_config_errors():
    with pytest.raises(ConfigError, match="equal length"):
        fit_exponential_saturation(STEPS[:10], np.ones(9))
    with pytest.raises(ConfigError, match="no point"):
        fit_sigmoid_scalerl(STEPS[:3], [np.nan] * 3)
    with pytest.raises(ConfigError, match="without steps"):
        fit_entropy_law(*entropy_pilot()[2:]).predict([100.0])


def test_held_level_and_last_value():
    r = [0.1, np.nan, 0.2, 0.3, 0.4, np.nan]
    assert held_level(r, k=2).level == pytest.approx(0.35) and held_level(r, k=10).level == pytest.approx(0.25)
    assert held_level(r, k=10).k == 4 and float(last_value(r)) == 0.4
    assert list(last_value(r).predict([7, 8])) == [0.4, 0.4]
    with pytest.raises(ConfigError):
        held_level(r, k=0)


def test_forecasts_are_clipped_only_to_a_range_the_caller_gives():
    """A sigmoid whose asymptote lies above 1: unclipped by default, clipped to (0, 1) when asked."""
    fit = fit_sigmoid_scalerl(STEPS[:120], noisy(scalerl_sigmoid(STEPS, 0.5, 1.3, 2.0, 60.0))[:120])
    far = fit.predict([1e4])[0]
    assert far > 1.1
    assert fit.predict([1e4], reward_range=(0.0, 1.0))[0] == 1.0
    with pytest.raises(ConfigError):
        fit.predict([1e4], reward_range=(1.0, 0.0))


def test_a_linear_entropy_trajectory_stays_between_zero_and_the_pilots_largest_entropy():
    line = EntropyDecay(kind="linear", h0=1.0, slope=-0.01, h_max=1.2, t0=0.0)
    assert list(line.predict([-50.0, 0.0, 50.0, 100.0, 1e6])) == pytest.approx([1.2, 1.0, 0.5, 0.0, 0.0])
    with pytest.raises(ConfigError):
        EntropyDecay(kind="exponential", h0=1.0, t0=0.0, h_inf=-0.1, tau=5.0)
    assert math.isnan(line.tau)
