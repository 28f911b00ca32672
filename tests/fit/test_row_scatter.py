"""`fit.row_scatter`: a series' own scatter from its first differences, against the noise it was drawn with
(a simulation) and a loop over the differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gspo_dynamics.fit import row_scatter


@pytest.mark.parametrize("sigma", [0.01, 0.3, 2.0])
def test_the_scatter_of_noise_about_a_drifting_curve_is_the_noise(sigma):
    rng = np.random.default_rng(7)
    t = np.arange(4000)
    values = 0.5 + 0.3 * (1 - np.exp(-t / 800)) + sigma * rng.standard_normal(t.size)  # a slow drift cancels
    assert row_scatter(values) == pytest.approx(sigma, rel=0.05)


def test_the_scatter_is_the_loop_over_differences_and_reads_finite_values_only():
    values = np.array([1.0, np.nan, 1.4, 0.9, np.inf, 1.3, 1.1])
    x = [v for v in values if math.isfinite(v)]
    d = [b - a for a, b in zip(x, x[1:])]
    mean = sum(d) / len(d)
    loop = math.sqrt(sum((e - mean) ** 2 for e in d) / (len(d) - 1)) / math.sqrt(2)
    assert row_scatter(values) == pytest.approx(loop, rel=1e-12)
    assert row_scatter([1.0, 2.0]) == 0.0 and row_scatter([3.0, 3.0, 3.0]) == 0.0
