"""The CUSUM change-point test (`diagnose._changepoint`): its null is Kolmogorov's (against scipy's), its
false-alarm rate under the null is at its nominal level (simulation), and it finds and names a planted break."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kstwobign

from gspo_dynamics.diagnose._changepoint import change_point, kolmogorov_sf

N_SIM, N_ROWS = 3000, 200
ALPHA = 0.05
# binomial s.e. of a 5% rate over 3000 draws is 0.004; the bridge's discretization at n = 200 makes the test a
# little conservative (the max over 199 points is below the continuous sup), so the band is asymmetric
RATE_LOW, RATE_HIGH = 0.030, 0.062


def test_the_null_is_kolmogorovs_distribution():
    for x in (0.3, 0.5, 0.8, 1.0, 1.36, 1.63, 2.0):
        assert kolmogorov_sf(x) == pytest.approx(kstwobign.sf(x), abs=1e-12)


@pytest.mark.parametrize("noise", ["normal", "bernoulli"])
def test_the_false_alarm_rate_under_the_null_is_nominal(noise):
    rng = np.random.default_rng(7)
    steps = np.arange(N_ROWS)
    hits = 0
    for _ in range(N_SIM):
        x = rng.standard_normal(N_ROWS) if noise == "normal" else rng.binomial(16, 0.3, N_ROWS) / 16
        hits += change_point(steps, x).p_value < ALPHA
    assert RATE_LOW <= hits / N_SIM <= RATE_HIGH


def test_a_planted_break_is_found_at_its_step():
    rng = np.random.default_rng(8)
    steps = 10 * np.arange(N_ROWS)  # logged every 10 steps
    for at in (40, 100, 150):
        x = 0.5 + 0.05 * rng.standard_normal(N_ROWS)
        x[at:] -= 0.1  # a fall of two noise sds
        cp = change_point(steps, x)
        assert cp.significant and abs(cp.index - at) <= 5 and cp.step == steps[cp.index - 1]
        assert cp.before - cp.after == pytest.approx(0.1, abs=0.03)


def test_too_few_rows_or_no_noise_give_no_test():
    assert change_point(np.arange(5), np.ones(5)) is None
    assert change_point(np.arange(50), np.ones(50)) is None
