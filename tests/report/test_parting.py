"""Where two runs part ways (report._divergence, equation (1)): the vectorised statistic against a plain loop, its
false-parting rate on pairs of one configuration, and a planted shift found where it is."""

import math

import numpy as np
import pytest

from gspo_dynamics.report import K_SE, parting
from gspo_dynamics.report._divergence import MIN_WINDOW, first_lasting, row_noise, z_series

FALSE_PARTING_MAX = 0.05  # of same-configuration pairs read as parting (measured 0 of 1000 white-noise pairs, 4% of 300 with AR(1) noise at rho 0.6)


def z_loop(a, b, w):
    """Equation (1) written out row by row: an independent route to z_series."""
    def noise(x):
        return math.sqrt(sum((x[i + 1] - x[i]) ** 2 for i in range(len(x) - 1)) / (2 * (len(x) - 1)))

    se = math.sqrt((noise(a) ** 2 + noise(b) ** 2) / w)
    return [(sum(a[j - w + 1:j + 1]) / w - sum(b[j - w + 1:j + 1]) / w) / se for j in range(w - 1, len(a))]


def test_z_series_equals_the_loop():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=60).cumsum(), rng.normal(size=60)
    np.testing.assert_allclose(z_series(a, b, 7), z_loop(list(a), list(b), 7), rtol=1e-10)


def test_row_noise_reads_white_noise_under_a_trend():
    rng = np.random.default_rng(2)
    x = np.linspace(0, 5, 4000) + rng.normal(0, 0.3, 4000)  # the trend moves 5 row-noise stds per 1000 rows
    assert row_noise(x) == pytest.approx(0.3, rel=0.05)


def test_first_lasting_needs_one_sign_to_the_end_and_a_whole_stretch():
    z = np.array([0, 4, 4, 0, 4, 4, 4, 4, 4, 4.0])
    assert first_lasting(z, 3, 3) == 4
    assert first_lasting(z, 3, 7) is None  # the stretch is 6 long
    assert first_lasting(np.array([4, 4, -4, -4, -4.0]), 3, 3) == 2  # a change of sign starts it again
    assert first_lasting(np.array([4, 4, 4, 0.0]), 3, 1) is None  # back within K at the end: no parting


def test_same_configuration_rarely_parts():
    rng = np.random.default_rng(3)
    steps = np.arange(200)
    trend = 0.8 - 0.6 * np.exp(-steps / 40)
    parted = sum(parting("reward", steps, trend + rng.normal(0, 0.05, 200), steps,
                         trend + rng.normal(0, 0.05, 200)).parts for _ in range(200))
    assert parted / 200 <= FALSE_PARTING_MAX


@pytest.mark.parametrize("shift", [0.1, 0.3])  # 2 and 6 row-noise stds: z 7.7 and 23 once a window is past it
def test_a_planted_shift_is_found_after_it(shift):
    rng = np.random.default_rng(4)
    steps = np.arange(300)
    a = rng.normal(0, 0.05, 300)
    b = rng.normal(0, 0.05, 300) + np.where(steps >= 150, shift, 0.0)
    p = parting("reward", steps, a, steps, b)
    assert p.parts and 150 <= p.step <= 150 + p.window  # found within one window of the shift
    assert p.z < -K_SE and p.min_abs_z > K_SE  # A - B < 0: B moved up


def test_runs_on_other_steps_are_compared_where_both_run():
    steps_a, steps_b = np.arange(0, 200, 1), np.arange(0, 400, 2)
    p = parting("reward", steps_a, np.zeros(200), steps_b, np.zeros(200))
    assert p.common_rows == 200 and not p.parts  # identical, noiseless: no difference at all
    q = parting("reward", steps_a[:10], np.zeros(10), steps_b, np.zeros(200))
    assert not q.parts and q.reason.startswith(f"10 common rows (at least {3 * MIN_WINDOW}")


def test_runs_apart_from_the_start_part_at_the_first_full_window():
    rng = np.random.default_rng(9)
    steps = np.arange(1, 101)
    p = parting("reward", steps, rng.normal(0, 0.05, 100), steps, 0.5 + rng.normal(0, 0.05, 100))
    assert p.from_start and p.step == steps[p.window - 1]
