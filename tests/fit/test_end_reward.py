"""gspo_dynamics.fit._end_reward: the reward at a run's end and its split-conformal interval.

The quantile (3) is checked against its definition by counting, its coverage guarantee against simulated
exchangeable runs, the forecast (1) against a loop over the fitted curve, the score's (2) invariance under a
change of the reward's units against a refit of the rescaled pilot, and the shipped quantiles against the
calibration scores they come from (paper_repro/data/end_reward_scores.json.gz)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.fit import (
    INTERVAL_LEVEL, INTERVAL_QUANTILES, conformal_quantile, end_reward, end_window, fit_trajectory, held_reward,
    pilot_forecast,
)
from gspo_dynamics.fit._end_reward import end_reward_value
from gspo_dynamics.predict import read_run_config

SCORES = Path(__file__).resolve().parents[2] / "paper_repro" / "data" / "end_reward_scores.json.gz"


def rising(n: int, seed: int = 0, scale: float = 1.0, shift: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = 0.2 + 0.6 * (1 - np.exp(-np.arange(1, n + 1) / 15)) + rng.normal(0, 0.04, n)
    return shift + scale * base


@pytest.mark.parametrize("m, level", [(10, 0.8), (57, 0.9), (400, 0.9), (9, 0.9)])
def test_the_quantile_is_the_smallest_score_with_enough_scores_at_or_below_it(m, level):
    """q = the smallest s with #{s_i <= s} >= ceil((m + 1) level), by counting over every candidate; inf when
    no candidate has enough (m = 9 at 0.9: 9 of 10 needed)."""
    scores = np.random.default_rng(m).exponential(size=m)
    need = math.ceil((m + 1) * level)
    by_count = min((s for s in scores if np.sum(scores <= s) >= need), default=math.inf)
    assert conformal_quantile(scores, level) == by_count


def test_the_interval_covers_exchangeable_runs_as_the_guarantee_says():
    """Lei et al. 2018, Theorem 2.1: for exchangeable continuous scores P(s_new <= q) lies in [level, level +
    1 / (m + 1)]; 20 000 draws of m = 30 calibration scores and one new (heavy-tailed), 4 standard errors."""
    rng = np.random.default_rng(1)
    m, trials = 30, 20_000
    scores = np.abs(rng.standard_t(3, size=(trials, m + 1)))
    hits = np.array([scores[i, -1] <= conformal_quantile(scores[i, :-1], INTERVAL_LEVEL) for i in range(trials)])
    se = math.sqrt(INTERVAL_LEVEL * (1 - INTERVAL_LEVEL) / trials)
    assert INTERVAL_LEVEL - 4 * se <= hits.mean() <= INTERVAL_LEVEL + 1 / (m + 1) + 4 * se


@pytest.mark.parametrize("scores, level", [([], 0.9), ([1.0, -0.1], 0.9), ([1.0, math.nan], 0.9), ([1.0, 2.0], 1.0)])
def test_bad_scores_or_levels_are_config_errors(scores, level):
    with pytest.raises(ConfigError):
        conformal_quantile(scores, level)


def test_the_forecast_is_the_fitted_curve_over_the_runs_last_sixth():
    """(1) against a loop: N = 96 reads steps 81..96, the 16 steps the calibration's outcomes average."""
    reward = rising(24)
    fit = fit_trajectory(np.arange(1, 25), reward)
    assert list(end_window(96)) == list(range(81, 97))
    loop = sum(min(max(float(fit.predict([t])[0]), 0.0), 1.0) for t in range(81, 97)) / 16
    assert end_reward_value(fit, 96, (0.0, 1.0)) == pytest.approx(loop, rel=1e-12)


@pytest.mark.parametrize("run_steps, calibrated", [(30, 2), (48, 2), (60, 4), (96, 4), (150, 8), (192, 8)])
def test_the_interval_uses_the_calibrated_ratio_next_above_the_runs(run_steps, calibrated):
    reward = rising(24)
    fit = fit_trajectory(np.arange(1, 25), reward)
    end = end_reward(fit, 24.0, held_reward(reward), run_steps, 1, None)
    q = INTERVAL_QUANTILES[calibrated]
    assert end.ratio == pytest.approx(run_steps / 24)
    assert end.interval == pytest.approx((end.value - q * end.scale, end.value + q * end.scale))
    assert end.scale == pytest.approx(fit.residual_std + abs(end.value - held_reward(reward)))


def test_the_interval_is_withheld_past_the_calibration_and_clipped_to_the_rewards_range():
    reward = rising(24)
    fit = fit_trajectory(np.arange(1, 25), reward)
    far = end_reward(fit, 24.0, held_reward(reward), 24 * 9, 1, None)
    assert far.interval is None and "9 times its pilot" in far.note
    stale = end_reward(fit, 24.0, held_reward(reward), 96, 8, None)
    assert stale.interval is None and "T = 8" in stale.note
    bounded = end_reward(fit, 24.0, held_reward(reward), 192, 1, (0.0, 1.0))
    assert 0.0 <= bounded.interval[0] <= bounded.value <= bounded.interval[1] <= 1.0


@pytest.mark.parametrize("run_steps", [24, 10, 0, 96.0, True])
def test_a_run_not_past_its_pilot_or_a_bad_length_is_a_config_error(run_steps):
    reward = rising(24)
    fit = fit_trajectory(np.arange(1, 25), reward)
    with pytest.raises(ConfigError, match="run's length"):
        end_reward(fit, 24.0, held_reward(reward), run_steps, 1, None)


def test_the_score_does_not_depend_on_the_rewards_units():
    """(2) under R -> a R + b: the refitted forecast and its scale move with the units, so the interval maps
    onto the rescaled one (the fit standardises the curve: equal to 1e-6 of the scale)."""
    a, b = 20.0, -7.0
    reward = rising(24)
    steps = np.arange(1, 25)
    one = end_reward(fit_trajectory(steps, reward), 24.0, held_reward(reward), 96, 1, None)
    scaled = a * reward + b
    other = end_reward(fit_trajectory(steps, scaled), 24.0, held_reward(scaled), 96, 1, None)
    assert other.value == pytest.approx(a * one.value + b, abs=1e-6 * a)
    assert other.scale == pytest.approx(a * one.scale, rel=1e-6)
    assert other.interval == pytest.approx(tuple(a * x + b for x in one.interval), abs=1e-6 * a)


def test_the_shipped_quantiles_are_those_of_the_calibration_scores():
    """INTERVAL_QUANTILES against (3) on every run of paper_repro/data/end_reward_scores.json.gz, per ratio
    (three decimals, as shipped)."""
    runs = json.loads(gzip.open(SCORES).read())["runs"]
    for ratio, q in INTERVAL_QUANTILES.items():
        scores = [r["score"] for r in runs if r["ratio"] == ratio]
        assert len(scores) >= 800
        assert round(conformal_quantile(scores, INTERVAL_LEVEL), 3) == q


def pilot_log(tmp_path, n: int) -> str:
    path = tmp_path / "pilot.jsonl"
    path.write_text("".join(json.dumps({"step": i + 1, "reward": float(r)}) + "\n" for i, r in enumerate(rising(n))))
    return str(path)


def test_the_pilot_forecast_reads_the_runs_length_from_the_config_or_the_caller(tmp_path):
    log = pilot_log(tmp_path, 30)
    trl = {"learning_rate": 1e-6, "num_generations": 8, "max_steps": 100}
    f = pilot_forecast(read_run_config(trl), log)
    assert f.end.run_steps == 100 and f.end.interval is not None
    assert f.to_json()["end_reward"]["run_steps"] == 100
    assert any("reward at the run's end (steps 84-100" in line for line in f.summary_lines())
    assert pilot_forecast(read_run_config(trl), log, run_steps=200).end.run_steps == 200
    unknown = pilot_forecast(read_run_config({"learning_rate": 1e-6, "num_generations": 8}), log)
    assert unknown.end is None and any("run's length is unknown" in a for a in unknown.assumed)
    reached = pilot_forecast(read_run_config(trl | {"max_steps": 30}), log)
    assert reached.end is None and any("reaches the config's run length" in a for a in reached.assumed)
    with pytest.raises(ConfigError, match="not past the pilot's last step"):
        pilot_forecast(read_run_config(trl), log, run_steps=20)
