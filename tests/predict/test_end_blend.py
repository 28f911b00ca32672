"""The end reward's combined forecast and band (`predict._end_blend`): the weights of (4) against a brute-force route,
never worse than the held level where learned, the held level for a flat or short pilot, bands inside the reach."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from gspo_dynamics.fit import fit_trajectory
from gspo_dynamics.predict._end_blend import (
    BAND_QUANTILES, BLEND_WEIGHTS, READINGS, Readings, band, band_quantile, blend, information, interval_score,
    learn_weights, pilot_noise, scaled_loss,
)
from gspo_dynamics.predict._end_reward import blended_end_reward

GRID = 0.02  # the brute-force route's weight spacing
SEEDS = range(4)


def toy_set(seed: int, m: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """m runs' scaled increments x (m, 3) and outcomes t = x . w* + heavy-tailed noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 2, (m, len(READINGS)))
    w_true = rng.dirichlet(np.ones(len(READINGS) + 1))[:len(READINGS)]
    return x, x @ w_true + rng.standard_t(3, m)


def brute_force(x, t) -> float:
    """The least loss of (4) over a GRID of the simplex {w >= 0, sum w <= 1}."""
    ticks = np.arange(0, 1 + GRID / 2, GRID)
    return min(scaled_loss(x, t, w) for w in itertools.product(ticks, repeat=len(READINGS)) if sum(w) <= 1 + 1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_linear_program_finds_the_least_loss_a_brute_force_grid_finds(seed):
    x, t = toy_set(seed)
    w = learn_weights(x, t)
    assert np.all(w >= 0) and w.sum() <= 1 + 1e-9
    best = brute_force(x, t)
    # the program's optimum is at or below every grid point's, and a grid point lies within GRID of it in each weight
    assert scaled_loss(x, t, w) <= best + 1e-9
    assert best - scaled_loss(x, t, w) <= GRID * len(READINGS) * np.abs(x).sum()


def test_noise_free_outcomes_give_back_their_weights():
    x, _ = toy_set(0)
    w_true = np.array([0.2, 0.5, 0.1])
    assert np.allclose(learn_weights(x, x @ w_true), w_true, atol=1e-7)


@pytest.mark.parametrize("seed", SEEDS)
def test_where_learned_the_blend_is_never_worse_than_the_held_level(seed):
    x, t = toy_set(seed)
    x[:, 1] = np.random.default_rng(seed).normal(0, 5, len(t))  # a reading that carries nothing
    assert scaled_loss(x, t, learn_weights(x, t)) <= scaled_loss(x, t, np.zeros(len(READINGS))) + 1e-9


def test_a_flat_or_short_pilot_is_read_as_its_held_level():
    rng = np.random.default_rng(1)
    flat = 0.5 + 0.01 * rng.standard_normal(60)
    rising = np.linspace(0.1, 0.9, 60) + 0.01 * rng.standard_normal(60)
    assert information(flat, pilot_noise(flat, (0, 1))) < 0.5 < information(rising, pilot_noise(rising, (0, 1)))
    assert information(rising[:15], 0.01) == 0.0  # fewer than 2 x HELD_STEPS points: no trend apart from the held window
    readings = Readings(0.4, (0.9, 0.8, 0.7), 0.0, 0.01, 3.0)
    assert blend(readings) == 0.4
    steps = np.arange(1, 16, dtype=float)
    end = blended_end_reward(fit_trajectory(steps, rising[:15]), steps, rising[:15], 60, (0.0, 1.0))
    assert end.value == pytest.approx(np.mean(rising[15 - 8:15]))


def test_the_blend_lies_between_the_held_level_and_the_readings():
    for where, w in BLEND_WEIGHTS.items():
        assert all(v >= 0 for v in w) and sum(w) <= 1 + 1e-9, where
        readings = Readings(0.2, (0.6, 0.6, 0.6), 1.0, 0.05, 3.0 if where == "near" else 9.0)
        assert 0.2 <= blend(readings) <= 0.6


@pytest.mark.parametrize("value, scale, q", [(0.5, 0.1, 1.9), (0.9, 0.03, 4.5), (0.02, 0.05, 1.0), (3.0, 2.0, 0.5)])
def test_a_band_lies_inside_the_reach_and_is_never_the_whole_reach(value, scale, q):
    reach = (0.0, 1.0) if value <= 1 else (-3.0, 4.5)
    b = band(value, scale, q, reach)
    assert b is not None and reach[0] <= b[0] <= b[1] <= reach[1] and b != reach
    assert band(value, 100.0, q, reach) is None and band(value, scale, math.inf, reach) is None


def test_the_quantile_is_the_conformal_rank_and_covers_exchangeable_scores():
    assert band_quantile(np.arange(1, 10.0)) == 9.0 and band_quantile(np.arange(1, 9.0)) == math.inf
    rng = np.random.default_rng(0)
    hits = [rng.exponential(size=1) <= band_quantile(rng.exponential(size=39)) for _ in range(4000)]
    assert 0.9 - 0.015 <= np.mean(hits) <= 0.9 + 1 / 40 + 0.015  # 1 - alpha <= coverage < 1 - alpha + 1/(m + 1), 3 se
    assert all(math.isfinite(q) and q > 0 for q in BAND_QUANTILES.values())


def test_the_interval_score_is_the_width_inside_and_adds_twenty_times_the_miss_outside():
    assert interval_score(0.2, 0.5, 0.3) == pytest.approx(0.3)
    assert interval_score(0.2, 0.5, 0.6) == pytest.approx(0.3 + 20 * 0.1)
    assert interval_score(0.2, 0.5, 0.1) == pytest.approx(0.3 + 20 * 0.1)
