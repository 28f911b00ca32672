"""The entropy floor (report._entropy_floor): the law and the floor step (2) recovered from exact decays, the
covariance against scipy's curve_fit (an independent route), the interval's coverage on noisy decays, and
"not identified" where the data do not identify it."""

import math

import numpy as np
import pytest
from scipy.optimize import curve_fit

from gspo_dynamics.report import entropy_floor
from gspo_dynamics.report._entropy_floor import covariance

COVERAGE_MIN = 0.85  # of 2-se intervals holding the true floor step (95% nominal; measured 0.96 over 500 runs)


def decay(t, h_f=0.2, h0=1.0, tau=40.0):
    return h_f + (h0 - h_f) * np.exp(-(t - t[0]) / tau)


def test_an_exact_decay_gives_its_floor_step():
    t = np.arange(10, 310, 2.0)
    f = entropy_floor(t, decay(t) + 1e-9 * np.sin(t))  # a trace of noise so the covariance is defined
    assert f.identified and f.reached
    assert f.tau == pytest.approx(40.0, rel=1e-5) and f.floor == pytest.approx(0.2, abs=1e-7)
    assert f.step == pytest.approx(10 + 40.0 * math.log(20), rel=1e-5)
    assert f.predict(t) == pytest.approx(decay(t), abs=1e-6)


def test_the_covariance_is_curve_fits():
    rng = np.random.default_rng(5)
    t = np.arange(0, 200.0)
    h = decay(t) + rng.normal(0, 0.02, t.size)
    f = entropy_floor(t, h)

    def law(x, h_f, h0, tau):
        return h_f + (h0 - h_f) * np.exp(-x / tau)

    p, pcov = curve_fit(law, t, h, p0=[0.3, 0.9, 30.0])
    assert [f.floor, f.h0, f.tau] == pytest.approx(list(p), rel=1e-4)
    np.testing.assert_allclose(covariance(t, h, f.floor, f.h0, f.tau), pcov, rtol=1e-3)
    assert f.step_se == pytest.approx(math.log(20) * math.sqrt(pcov[2, 2]), rel=1e-3)


def test_the_interval_holds_the_true_floor_step():
    rng = np.random.default_rng(6)
    t = np.arange(0, 150.0)
    truth = 40.0 * math.log(20)
    hits = [abs(f.step - truth) <= 2 * f.step_se for f in (entropy_floor(t, decay(t) + rng.normal(0, 0.03, t.size))
                                                          for _ in range(100)) if f.identified]
    assert len(hits) >= 90 and np.mean(hits) >= COVERAGE_MIN


@pytest.mark.parametrize("values, why", [
    (lambda t, rng: 0.5 + rng.normal(0, 0.02, t.size), "does not fall significantly"),
    (lambda t, rng: 1.0 - 0.004 * t + rng.normal(0, 0.01, t.size), "below zero"),  # a line down to 0.2
    (lambda t, rng: 1.0 - 0.0005 * t + rng.normal(0, 0.01, t.size), ""),  # a slow line: not a floor either
])
def test_no_floor_where_the_data_show_none(values, why):
    t = np.arange(0, 200.0)
    f = entropy_floor(t, values(t, np.random.default_rng(7)))
    assert not f.identified and why in f.reason
    assert f.text().startswith("entropy floor: not identified")


def test_a_second_slower_fall_is_no_floor():
    """A fast drop then a slow drift (two time scales, as a real verl run's entropy): (1)'s floor would be the end of
    the drop, so none is given."""
    t = np.arange(0, 300.0)
    h = 0.15 + 0.4 * np.exp(-t / 10) - 0.0002 * t + np.random.default_rng(8).normal(0, 0.005, t.size)
    f = entropy_floor(t, h)
    assert not f.identified and "keeps falling after the fitted floor" in f.reason


def test_a_flat_entropy_has_nothing_to_fit():
    f = entropy_floor(np.arange(50.0), np.zeros(50))  # a trainer that logs 0.0 without computing it
    assert not f.identified and "flat" in f.reason


def test_too_few_points():
    f = entropy_floor(np.arange(5.0), np.ones(5))
    assert not f.identified and f.reason.startswith("5 entropy points")
