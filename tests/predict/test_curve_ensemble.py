"""The parametric curve ensemble (`predict._curve_ensemble`): each family's fit recovers a planted curve, the Schwarz
weights (2) sum to one and match the Gaussian likelihood's BIC computed by scipy, a flat pilot is read as its mean."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.fit import fit_trajectory
from gspo_dynamics.predict._curve_ensemble import (
    FAMILIES, CurveEnsemble, bic, bic_weights, curve_ensemble, fit_log_linear,
)

STEPS = np.arange(1, 41, dtype=float)  # a 40-step pilot
WINDOW = np.arange(151, 181, dtype=float)  # the last sixth of a 180-step run
REACH = (0.0, 1.0)
NOISE = 0.01
END_TOL = 0.03  # a family's end within 3 noise std of the planted curve's


def noisy(curve: np.ndarray, seed: int = 0) -> np.ndarray:
    return curve + NOISE * np.random.default_rng(seed).standard_normal(curve.size)


def exponential(t):
    return 0.8 - 0.6 * np.exp(-(t - 1) / 15)


def sigmoid(t):
    return 0.1 + (0.7 - 0.1) / (1 + (30 / t) ** 3)


def test_the_log_linear_family_recovers_its_planted_parameters():
    a, b, rss = fit_log_linear(STEPS, 0.2 + 0.1 * np.log(STEPS - STEPS[0] + 1))
    assert (a, b) == pytest.approx((0.2, 0.1), abs=1e-12) and rss < 1e-20
    # against an independent route: numpy's polynomial fit in ln(t - t0 + 1) on noisy rewards
    r = noisy(0.2 + 0.1 * np.log(STEPS))
    a, b, rss = fit_log_linear(STEPS, r)
    slope, intercept = np.polyfit(np.log(STEPS), r, 1)
    assert (a, b) == pytest.approx((intercept, slope), abs=1e-10)
    assert rss == pytest.approx(float(np.sum((r - intercept - slope * np.log(STEPS)) ** 2)), rel=1e-9)


@pytest.mark.parametrize("family, curve", [("exponential", exponential), ("sigmoid", sigmoid)])
def test_each_law_family_recovers_its_planted_curves_end_and_outweighs_the_constant(family, curve):
    r = noisy(curve(STEPS))
    ens = curve_ensemble(STEPS, r, WINDOW, REACH, fit_trajectory(STEPS, r))
    ends = dict(zip(ens.families, ens.ends))
    weights = dict(zip(ens.families, ens.weights))
    assert ends[family] == pytest.approx(float(np.mean(curve(WINDOW))), abs=END_TOL)
    assert weights[family] > 1e3 * weights["constant"]


def test_the_schwarz_weights_sum_to_one_and_match_the_gaussian_likelihoods_bic():
    """(1) is the BIC of a normal likelihood at its maximum (sigma^2 = RSS / n) up to a constant shared by every family:
    -2 ln L = n ln(2 pi RSS / n) + n, computed here by scipy's normal log-density."""
    r = noisy(exponential(STEPS), seed=3)
    ens = curve_ensemble(STEPS, r, WINDOW, REACH, fit_trajectory(STEPS, r))
    assert set(ens.families) == set(FAMILIES)
    w = ens.weights
    assert np.all(w >= 0) and w.sum() == pytest.approx(1.0, abs=1e-12)
    n = r.size

    def scipy_bic(rss: float, p: int) -> float:
        residual = np.sqrt(rss / n) * np.ones(n)  # any residuals with this RSS give the same likelihood
        return -2 * float(np.sum(stats.norm.logpdf(residual, scale=math.sqrt(rss / n)))) + p * math.log(n)

    rss_p = [(0.5, 1), (0.2, 2), (0.05, 3), (0.049, 5)]
    ours = bic_weights([bic(rss, n, p) for rss, p in rss_p])
    theirs = np.exp(-0.5 * (np.array([scipy_bic(rss, p) for rss, p in rss_p]) - min(scipy_bic(rss, p) for rss, p in rss_p)))
    assert ours == pytest.approx(theirs / theirs.sum(), rel=1e-9)


def test_weights_far_apart_do_not_underflow_and_the_value_is_the_weighted_mean():
    assert bic_weights([-5000.0, 0.0, 3000.0]) == pytest.approx([1.0, 0.0, 0.0])
    ens = CurveEnsemble(families=("constant", "log_linear"), ends=(0.2, 0.6), bic=(0.0, 2 * math.log(3)))
    assert ens.weights == pytest.approx([0.75, 0.25]) and ens.value == pytest.approx(0.3)
    assert ens.spread == pytest.approx(math.sqrt(0.75 * 0.1 ** 2 + 0.25 * 0.3 ** 2))


def test_a_flat_pilot_is_read_as_its_mean_within_the_reach():
    r = noisy(np.full(STEPS.size, 0.5), seed=1)
    ens = curve_ensemble(STEPS, r, WINDOW, REACH, None)
    assert "closed_form" not in ens.families
    assert ens.value == pytest.approx(float(np.mean(r)), abs=3 * NOISE) and ens.spread < 3 * NOISE
    rising = np.linspace(0.2, 0.99, STEPS.size)
    ens = curve_ensemble(STEPS, rising, WINDOW, REACH, fit_trajectory(STEPS, rising))
    assert all(REACH[0] <= e <= REACH[1] for e in ens.ends) and REACH[0] <= ens.value <= REACH[1]


def test_an_ensemble_without_a_family_or_with_a_non_finite_end_is_refused():
    with pytest.raises(ConfigError):
        CurveEnsemble(families=(), ends=(), bic=())
    with pytest.raises(ConfigError):
        CurveEnsemble(families=("constant",), ends=(math.nan,), bic=(0.0,))
