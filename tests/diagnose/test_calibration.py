"""Platt recalibration of diagnose's confidences: the fit recovers a known calibration map (an
independent route: data simulated from it), it is monotone, and identity parameters change nothing."""

import numpy as np
import pytest

from gspo_dynamics.diagnose._calibration import _logit, calibrate, fit_platt


def test_fit_recovers_the_map_the_data_were_drawn_from():
    rng = np.random.default_rng(0)
    raw = rng.uniform(0.3, 0.999, 8_000)
    a, b = 0.6, -0.4
    q = 1 / (1 + np.exp(-(a * _logit(raw) + b)))
    right = rng.random(raw.size) < q
    fa, fb = fit_platt(raw, right)
    # maximum likelihood on 8k Bernoulli draws (s.e. ~0.03) over a grid of steps 0.02 / 0.05
    assert fa == pytest.approx(a, abs=0.1) and fb == pytest.approx(b, abs=0.1)


def test_the_map_never_claims_more_certainty_than_the_raw_confidence():
    # every verdict right: an unconstrained fit would send every confidence to 1
    a, b = fit_platt(np.linspace(0.55, 0.99, 40), [True] * 40)
    assert a == 1.0 and b == 0.0
    a, b = fit_platt(np.full(100, 0.99), np.arange(100) < 60)  # 60% right at a claimed 0.99
    assert calibrate(0.99, (a, b)) == pytest.approx(0.6, abs=0.05)


def test_calibration_is_monotone_and_identity_is_identity():
    c = np.linspace(0.01, 0.99, 50)
    q = [calibrate(x, (0.5, -0.3)) for x in c]
    assert np.all(np.diff(q) > 0)
    assert [calibrate(x, (1.0, 0.0)) for x in c] == pytest.approx(c, rel=1e-9)
    assert 0.0 <= calibrate(1.0, (0.5, 0.0)) < 1.0 and calibrate(0.0, (0.5, 0.0)) > 0.0


def test_all_right_data_give_a_finite_fit():
    a, b = fit_platt([0.6, 0.8, 0.95, 0.99], [True] * 4)
    assert np.isfinite(a) and np.isfinite(b)
