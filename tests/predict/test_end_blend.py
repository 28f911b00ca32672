"""The end reward's combined forecast and band (`predict._end_blend`): the weights of (4) against a brute-force route,
never worse than the held level where learned, the gate (4g) against a loop over repositories left out, each reading's weight a line in the pilot's information, the curve
ensemble among the readings, bands inside the reach."""

from __future__ import annotations

import itertools
import math
import re
import statistics

import numpy as np
import pytest

from gspo_dynamics.fit import fit_trajectory
from gspo_dynamics.predict._end_blend import (
    BAND_QUANTILES, BLEND_GATE, BLEND_WEIGHTS, READINGS, Readings, band, band_quantile, blend, capped_loss, gate, info_group,
    information,
    interval_score, law_readings, learn_weights, learn_weights_capped, loss_cap, mondrian_quantile, pilot_noise,
    reading_weights, scaled_loss, simplex_grid,
)
from gspo_dynamics.predict._curve_ensemble import curve_ensemble
from gspo_dynamics.predict._end_reward import BAND_MAX_HORIZON, blended_end_reward

GRID = 0.02  # the brute-force route's weight spacing
SEEDS = range(4)
K = 3  # features of the toy problems (the program is the same for any number; the brute force is not)


def toy_set(seed: int, m: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """m runs' scaled increments x (m, 3) and outcomes t = x . w* + heavy-tailed noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 2, (m, K))
    w_true = rng.dirichlet(np.ones(K + 1))[:K]
    return x, x @ w_true + rng.standard_t(3, m)


def brute_force(x, t) -> float:
    """The least loss of (4) over a GRID of the simplex {w >= 0, sum w <= 1}."""
    ticks = np.arange(0, 1 + GRID / 2, GRID)
    return min(scaled_loss(x, t, w) for w in itertools.product(ticks, repeat=K) if sum(w) <= 1 + 1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_linear_program_finds_the_least_loss_a_brute_force_grid_finds(seed):
    x, t = toy_set(seed)
    w = learn_weights(x, t)
    assert np.all(w >= 0) and w.sum() <= 1 + 1e-9
    best = brute_force(x, t)
    # the program's optimum is at or below every grid point's, and a grid point lies within GRID of it in each weight
    assert scaled_loss(x, t, w) <= best + 1e-9
    assert best - scaled_loss(x, t, w) <= GRID * K * np.abs(x).sum()


@pytest.mark.parametrize("learn", [learn_weights, learn_weights_capped])
def test_noise_free_outcomes_give_back_their_weights(learn):
    """The LP of (4) and the capped loss of (4') alike."""
    x, _ = toy_set(0)
    w_true = np.array([0.2, 0.5, 0.1])
    assert np.allclose(learn(x, x @ w_true), w_true, atol=1e-7)


@pytest.mark.parametrize("seed", SEEDS)
def test_where_learned_the_blend_is_never_worse_than_the_held_level(seed):
    x, t = toy_set(seed)
    x[:, 1] = np.random.default_rng(seed).normal(0, 5, len(t))  # a reading that carries nothing
    assert scaled_loss(x, t, learn_weights(x, t)) <= scaled_loss(x, t, np.zeros(K)) + 1e-9


def test_the_simplex_grid_is_every_lattice_point_of_the_simplex_once():
    grid = simplex_grid(3, 4)
    ticks = np.arange(5) / 4
    brute = {w for w in itertools.product(ticks, repeat=3) if sum(w) <= 1 + 1e-9}
    assert len(grid) == math.comb(4 + 3, 3) == len(brute) and set(map(tuple, grid)) == brute


def capped_brute_force(x, t, cap) -> float:
    """The least loss of (4') over a GRID of the simplex."""
    ticks = np.arange(0, 1 + GRID / 2, GRID)
    points = np.array([w for w in itertools.product(ticks, repeat=K) if sum(w) <= 1 + 1e-9])
    return float(capped_loss(x, t, points, cap).min())


@pytest.mark.parametrize("seed", SEEDS)
def test_the_capped_loss_search_finds_the_least_loss_a_finer_brute_force_grid_finds(seed):
    x, t = toy_set(seed)
    cap = loss_cap(t)
    w = learn_weights_capped(x, t)
    assert np.all(w >= 0) and w.sum() <= 1 + 1e-9
    # within what the finer grid's spacing can miss of the optimum, and never above the held level (w = 0)
    assert capped_loss(x, t, w, cap) <= capped_brute_force(x, t, cap) + 1e-9
    assert capped_loss(x, t, w, cap) <= capped_loss(x, t, np.zeros(K), cap) + 1e-9


@pytest.mark.parametrize("seed", SEEDS)
def test_a_few_runs_missed_by_many_noise_units_move_the_capped_weights_not_the_typical_runs(seed):
    """Protocol 3's reason: reading 0 is right on 40 runs and 40 noise units off on 4 where the run stayed put. The
    sum of absolute errors (4) gives the reading up for those 4; the capped loss (4') keeps it."""
    rng = np.random.default_rng(seed)
    w_true = np.array([0.6, 0.2, 0.0])
    x = rng.normal(0, 2, (40, K))
    t = x @ w_true + rng.normal(0, 0.3, 40)
    far = np.zeros((4, K))
    far[:, 0] = 40.0
    x, t = np.vstack([x, far]), np.concatenate([t, np.zeros(4)])
    assert abs(learn_weights_capped(x, t)[0] - w_true[0]) < 0.1
    assert learn_weights(x, t)[0] < 0.1


def test_the_information_factor_separates_a_flat_pilot_from_a_trend_and_is_zero_for_a_short_one():
    rng = np.random.default_rng(1)
    flat = 0.5 + 0.01 * rng.standard_normal(60)
    rising = np.linspace(0.1, 0.9, 60) + 0.01 * rng.standard_normal(60)
    g_flat, g_rising = information(flat, pilot_noise(flat, (0, 1))), information(rising, pilot_noise(rising, (0, 1)))
    assert g_flat < 0.5 < g_rising and info_group(g_flat) == "flat" and info_group(g_rising) == "trend"
    assert information(rising[:15], 0.01) == 0.0  # fewer than 2 x HELD_STEPS points: no trend apart from the held window


def left_out_gate(x, t, repos) -> int:
    """G of (4g) by a plain loop: each repository's runs forecast with (4)'s weights learned on the others', the
    medians of the lists of scaled errors compared by the standard library."""
    errors, held = [], []
    for r in sorted(set(repos)):
        out = repos == r
        w = learn_weights(x[~out], t[~out])
        errors += [abs(ti - float(xi @ w)) for xi, ti in zip(x[out], t[out])]
        held += [abs(ti) for ti in t[out]]  # the held level's scaled error: t = (y - H) / sigma
    return int(statistics.median(errors) < statistics.median(held))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_gate_opens_where_left_out_forecasts_beat_the_held_level_and_shuts_on_weights_one_repository_taught(seed):
    repos = np.arange(40) % 10  # 10 repositories of 4 runs
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 2, (40, K))
    signal = (x, x @ np.full(K, 0.3) + 0.5 * rng.standard_t(3, 40))  # outcomes the readings predict
    # one repository (9) whose large increments its outcomes follow teaches a weight that is wrong on the other nine,
    # where the outcome moves against the reading: learned with it, the weights help where they were learned only
    taught = np.zeros((40, K))
    taught[:, 0] = np.where(repos == 9, 50.0, 1.0) * rng.normal(0, 2, 40)
    wrong = (taught, np.where(repos == 9, 1.0, -0.5) * taught[:, 0] + 0.1 * rng.standard_t(3, 40))
    for (x, t), expected in ((signal, 1), (wrong, 0)):
        nested = np.empty(len(t))
        for r in range(10):  # the route of the script's nested forecasts: (4) learned without each run's own repository
            w = learn_weights(x[repos != r], t[repos != r])
            nested[repos == r] = x[repos == r] @ w
        g = gate(np.abs(t - nested), np.abs(t))
        assert g == left_out_gate(x, t, repos) == expected


def test_the_gate_keeps_the_held_level_on_a_tie_or_no_runs_and_compares_the_same_runs():
    assert gate([0.5, 1.0, 2.0], [0.4, 1.0, 3.0]) == 0  # equal medians: no evidence the weights help
    assert gate([0.5, 0.9, 2.0], [0.4, 1.0, 3.0]) == 1
    assert gate([], []) == 0
    with pytest.raises(ValueError, match="same runs"):
        gate([1.0, 2.0], [1.0])


@pytest.mark.parametrize("where", ["near", "far"])
def test_a_shut_gate_forecasts_the_held_level_and_an_open_one_the_learned_blend(where, monkeypatch):
    readings = Readings(0.2, (0.6, 0.5, 0.4, 0.3), 0.5, 0.05, 3.0 if where == "near" else 9.0)
    learned = blend(readings, BLEND_WEIGHTS[where])
    monkeypatch.setitem(BLEND_GATE, where, 1)
    assert blend(readings) == learned
    monkeypatch.setitem(BLEND_GATE, where, 0)
    assert blend(readings) == 0.2


@pytest.mark.parametrize("info", [0.0, 0.3, 1.0])
def test_each_readings_weight_is_a_line_in_the_information_and_the_blend_is_h_plus_the_weighted_increments(info):
    k = len(READINGS)
    w = np.array([0.1, 0.0, 0.05, 0.2, 0.0, 0.3, 0.1, 0.15])
    assert reading_weights(w, info) == pytest.approx(w[:k] + info * w[k:])
    readings = Readings(0.4, (0.9, 0.8, 0.7, 0.6), info, 0.01, 3.0)
    by_hand = 0.4 + sum(wk * (f - 0.4) for wk, f in zip(reading_weights(w, info), (0.9, 0.8, 0.7, 0.6)))
    assert blend(readings, w) == pytest.approx(by_hand)
    assert blend(readings, np.zeros(2 * k)) == 0.4  # zero weights: the held level


def test_the_fourth_reading_is_the_curve_ensemble_as_predict_computes_it():
    steps = np.arange(1, 41, dtype=float)
    reward = 0.8 - 0.6 * np.exp(-steps / 12) + 0.01 * np.random.default_rng(2).standard_normal(40)
    window, fit = np.arange(151, 181, dtype=float), fit_trajectory(steps, reward)
    laws = law_readings(fit, steps, reward, window, (0.0, 1.0), float(np.mean(reward[-8:])))
    assert len(laws) == len(READINGS) and laws[3] == curve_ensemble(steps, reward, window, (0.0, 1.0), fit).value
    end = blended_end_reward(fit, steps, reward, 180, (0.0, 1.0))  # predict's forecast: (3) of these readings
    info = information(reward, pilot_noise(reward, (0.0, 1.0)))
    readings = Readings(float(np.mean(reward[-8:])), laws, info, pilot_noise(reward, (0.0, 1.0)), 180 / 40)
    assert end.value == pytest.approx(float(np.clip(blend(readings), 0.0, 1.0)), abs=1e-12)
    assert f"information g = {info:.2f}" in end.note


def test_the_note_names_what_each_weighted_reading_reads_and_a_law_without_a_reading_apart():
    """Without entropy the entropy law reads the held level: its weight moves nothing, and the note says so rather
    than listing it among the readings that moved the forecast (audit E: 'entropy law 0.21' on a pilot with no
    entropy); with entropy logged it is a reading like the others, its value beside its weight."""
    steps = np.arange(1, 41, dtype=float)
    reward = 0.8 - 0.6 * np.exp(-steps / 12) + 0.01 * np.random.default_rng(2).standard_normal(40)
    fit = fit_trajectory(steps, reward)
    bare = blended_end_reward(fit, steps, reward, 180, (0.0, 1.0))
    w_ent = reading_weights(BLEND_WEIGHTS["near"], information(reward, pilot_noise(reward, (0.0, 1.0))))[2]
    assert f"the entropy law gives no reading here, its weight {w_ent:.2g} stays on the held level" in bare.note
    entropy = (steps, 1.2 * np.exp(-steps / 15) + 0.1)
    logged = blended_end_reward(fit, steps, reward, 180, (0.0, 1.0), entropy)
    assert "entropy law gives no reading" not in logged.note
    assert re.search(rf"entropy law {w_ent:.2g} reading [0-9.]+", logged.note)


def test_a_run_past_the_calibrated_horizon_gets_no_band_and_says_why_in_the_answer():
    """A run 15x its pilot, past BAND_MAX_HORIZON: no interval, and the forecast's own text says so (not only the
    note behind --explain); one within it prints its band."""
    steps = np.arange(1, 41, dtype=float)
    reward = 0.8 - 0.6 * np.exp(-steps / 12) + 0.01 * np.random.default_rng(2).standard_normal(40)
    fit = fit_trajectory(steps, reward)
    far = blended_end_reward(fit, steps, reward, 600, (0.0, 1.0))
    assert far.interval is None and far.band_text() == (
        f" (no 90% interval: the run is 15 times the pilot, the interval is calibrated up to {BAND_MAX_HORIZON:g} "
        "times; a longer pilot gets one)")
    assert "no 90% interval" not in far.summary() and "no band: the run is 15 times" in far.summary()
    # nothing calibrates the value there: no number but the pilot's own held level, in the text and the JSON
    assert not far.identified and far.to_json()["value"] is None and far.to_json()["held"] == pytest.approx(far.held)
    assert f"not identified by this pilot; the pilot holds at {far.held:.3g}" in far.summary()
    assert f"{far.value:.3g}" not in far.summary().split("(")[0]
    near = blended_end_reward(fit, steps, reward, 180, (0.0, 1.0))
    assert near.interval is not None and near.withheld == "" and "90% interval [" in near.band_text()
    assert near.identified and near.to_json()["value"] == near.value


def test_the_blend_lies_between_the_held_level_and_the_readings():
    for where, w in BLEND_WEIGHTS.items():
        assert len(w) == 2 * len(READINGS) and all(v >= 0 for v in w) and sum(w) <= 1 + 1e-9, where
        for info in (0.0, 0.5, 1.0):
            readings = Readings(0.2, (0.6,) * len(READINGS), info, 0.05, 3.0 if where == "near" else 9.0)
            assert 0.2 <= blend(readings) <= 0.6


@pytest.mark.parametrize("value, scale, q", [(0.5, 0.1, 1.9), (0.9, 0.03, 4.5), (0.02, 0.05, 1.0), (3.0, 2.0, 0.5)])
def test_a_band_lies_inside_the_reach_and_is_never_the_whole_reach(value, scale, q):
    reach = (0.0, 1.0) if value <= 1 else (-3.0, 4.5)
    b = band(value, scale, q, reach)
    assert b is not None and reach[0] <= b[0] <= b[1] <= reach[1] and b != reach
    assert band(value, 100.0, q, reach) is None and band(value, scale, math.inf, reach) is None


def test_a_band_spanning_nearly_all_the_reach_is_withheld_too():
    """audit s42p R3: `0.582, 90% interval [0.0127, 1]` on a [0, 1] reward, 99% of its reach, where the same pilot at
    the config's horizon withheld the band as "all the reward can reach": a band spanning NEAR_WHOLE of the reach or
    more is withheld, one just under it is given."""
    from gspo_dynamics.predict._end_blend import NEAR_WHOLE

    assert band(0.582, 0.3, 1.9, (0.0, 1.0)) is None  # [0.012, 1]: 98.8% of the reach
    half = NEAR_WHOLE / 2 - 1e-3  # a band of width just under NEAR_WHOLE, inside the reach
    assert band(0.5, half, 1.0, (0.0, 1.0)) == pytest.approx((0.5 - half, 0.5 + half))
    assert band(0.5, NEAR_WHOLE / 2 + 1e-3, 1.0, (0.0, 1.0)) is None


def test_the_quantile_is_the_conformal_rank_and_covers_exchangeable_scores():
    assert band_quantile(np.arange(1, 10.0)) == 9.0 and band_quantile(np.arange(1, 9.0)) == math.inf
    rng = np.random.default_rng(0)
    hits = [rng.exponential(size=1) <= band_quantile(rng.exponential(size=39)) for _ in range(4000)]
    assert 0.9 - 0.015 <= np.mean(hits) <= 0.9 + 1 / 40 + 0.015  # 1 - alpha <= coverage < 1 - alpha + 1/(m + 1), 3 se
    assert all(q > 0 for groups in BAND_QUANTILES.values() for q in groups.values())


def test_the_interval_score_is_the_width_inside_and_adds_twenty_times_the_miss_outside():
    assert interval_score(0.2, 0.5, 0.3) == pytest.approx(0.3)
    assert interval_score(0.2, 0.5, 0.6) == pytest.approx(0.3 + 20 * 0.1)
    assert interval_score(0.2, 0.5, 0.1) == pytest.approx(0.3 + 20 * 0.1)


def test_a_small_mondrian_group_takes_its_horizon_bins_pooled_scores():
    trend = [("near", "trend", float(s)) for s in range(1, 31)]  # 30 scores: its own q, the 28th smallest
    flat = [("near", "flat", 100.0 + s) for s in range(5)]  # 5 scores: too few, pooled with the bin's 35
    far = [("far", "flat", 1000.0)] * 40  # another bin: never pooled in
    scores = trend + flat + far
    assert mondrian_quantile(scores, "near", "trend") == band_quantile([s for *_, s in trend]) == 28.0
    assert mondrian_quantile(scores, "near", "flat") == band_quantile([s for *_, s in trend + flat])
    assert mondrian_quantile(scores, "far", "trend") == 1000.0
