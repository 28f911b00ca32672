"""gspo_dynamics.predict._end_reward: the reward at a run's end and its split-conformal interval.

The quantile (3) is checked against its definition by counting, its coverage guarantee against simulated
exchangeable runs, the forecast (1) against a loop over the fitted curve, the score's (2) invariance under a
change of the reward's units against a refit of the rescaled pilot, and the shipped quantiles against the
calibration scores they come from (paper_repro/data/end_reward_scores.json.gz)."""

from __future__ import annotations

import functools
import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.fit import fit_trajectory
from gspo_dynamics.predict import (
    INTERVAL_LEVEL, INTERVAL_QUANTILES, conformal_quantile, end_reward, end_window, pilot_forecast, read_run_config,
)
from gspo_dynamics.predict._end_reward import BRACKET_Z, end_reward_value, end_position, has_scale

SCORES = Path(__file__).resolve().parents[2] / "paper_repro" / "data" / "end_reward_scores.json.gz"


def rising(n: int, seed: int = 0, scale: float = 1.0, shift: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = 0.2 + 0.6 * (1 - np.exp(-np.arange(1, n + 1) / 15)) + rng.normal(0, 0.04, n)
    return shift + scale * base


@pytest.mark.parametrize("m, level", [(10, 0.8), (57, 0.9), (400, 0.9), (9, 0.9), (8, 0.9)])
def test_the_quantile_is_the_smallest_score_with_enough_scores_at_or_below_it(m, level):
    """q = the smallest s with #{s_i <= s} >= ceil((m + 1) level), by counting over every candidate; inf when
    no candidate has enough (m = 8 at 0.9: 9 of 8 needed; m = 9 needs all 9, the largest)."""
    scores = np.random.default_rng(m).exponential(size=m)
    need = math.ceil((m + 1) * level)
    by_count = min((s for s in scores if np.sum(scores <= s) >= need), default=math.inf)
    assert conformal_quantile(scores, level) == by_count
    assert (by_count == math.inf) == (m == 8)


def test_the_interval_covers_exchangeable_runs_as_the_guarantee_says():
    """Split conformal coverage (Vovk et al. 2005; Lei et al. 2018): for exchangeable scores without ties
    P(s_new <= q) lies in [level, level + 1 / (m + 1)]; 20 000 draws of m = 30 calibration scores and one new
    (heavy-tailed), 4 standard errors."""
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


@functools.cache  # one fit per curve for the module (a fit takes seconds); the arrays read-only, as they are shared
def pilot(n: int = 24, **kw):
    reward = rising(n, **kw)
    steps = np.arange(1, n + 1)
    reward.flags.writeable = steps.flags.writeable = False
    return fit_trajectory(steps, reward), steps, reward


def test_the_forecast_is_the_fitted_curve_over_the_runs_last_sixth():
    """(1) against a loop: N = 96 reads steps 81..96, the 16 steps the calibration's outcomes average; a run of
    10^12 steps reads END_POINTS evenly spaced steps of its window (no 10^11-step array)."""
    fit, _, _ = pilot()
    assert list(end_window(96)) == list(range(81, 97))
    loop = sum(min(max(float(fit.predict([t])[0]), 0.0), 1.0) for t in range(81, 97)) / 16
    assert end_reward_value(fit, 96, (0.0, 1.0)) == pytest.approx(loop, rel=1e-12)
    huge = end_window(10**12)
    assert len(huge) == 10_000 and huge[-1] == 10**12 and huge[0] == 10**12 - round(10**12 / 6) + 1


@pytest.mark.parametrize("run_steps, calibrated", [(30, 2), (48, 2), (60, 4), (96, 4), (150, 8), (192, 8)])
def test_the_interval_uses_the_calibrated_ratio_next_above_the_runs(run_steps, calibrated):
    """The quantile of the run's position and of the calibrated ratio at or above its own, around R_end with the
    scale (2) recomputed here from the fit's noise and the pilot's last 8 rewards."""
    fit, steps, reward = pilot()
    end = end_reward(fit, steps, reward, run_steps, 1, None)
    scale = fit.residual_std + abs(end.value - reward[-8:].mean())
    q = INTERVAL_QUANTILES["inside"][calibrated]  # no range: inside, clipped to the reach (6)
    lo, hi = reward.min() - (reward.max() - reward.min()), reward.max() + (reward.max() - reward.min())
    assert end.ratio == pytest.approx(run_steps / 24) and end.scale == pytest.approx(scale, rel=1e-12)
    assert end.interval == pytest.approx((max(end.value - q * scale, lo), min(end.value + q * scale, hi)))


def test_a_forecast_at_the_rewards_bound_gets_the_bound_quantile():
    reward = np.clip(rising(24) + 0.5, 0, 1)  # saturated: the forecast is 1
    steps = np.arange(1, 25)
    end = end_reward(fit_trajectory(steps, reward), steps, reward, 96, 1, (0.0, 1.0))
    assert end_position(end.value, (0.0, 1.0)) == "bound" and "at a bound" in end.note
    assert end.interval[0] == pytest.approx(end.value - INTERVAL_QUANTILES["bound"][4] * end.scale) and end.interval[1] == 1.0
    assert end_position(0.5, (0.0, 1.0)) == "inside" and end_position(0.019, (0.0, 1.0)) == "bound"
    assert end_position(0.9, None) == "inside"


def test_past_the_calibration_the_interval_brackets_the_curve_and_the_held_level_within_the_reach():
    """Equation (5) where the conformal quantiles do not apply (a run 9 pilots long, T = 8, a log every 10 steps),
    recomputed here; every interval inside the reach (6)."""
    fit, steps, reward = pilot()
    held, noise = reward[-8:].mean(), fit.residual_std
    lo, hi = reward.min() - (reward.max() - reward.min()), reward.max() + (reward.max() - reward.min())
    for end, why in ((end_reward(fit, steps, reward, 24 * 9, 1, None), "9 times its pilot"),
                     (end_reward(fit, steps, reward, 96, 8, None), "T = 8")):
        assert why in end.note and "between the fitted curve and the held level" in end.note
        expected = (max(min(end.value, held) - BRACKET_Z * noise, lo), min(max(end.value, held) + BRACKET_Z * noise, hi))
        assert end.interval == pytest.approx(expected, rel=1e-12)
    spaced = end_reward(fit_trajectory(steps * 10, reward), steps * 10, reward, 960, 1, None)
    assert spaced.interval is not None and "every 10 steps" in spaced.note
    flat = np.zeros(24)
    constant = end_reward(fit_trajectory(steps, flat), steps, flat, 96, 1, (0.0, 1.0))
    assert constant.interval is None and "do not move" in constant.note and constant.value == 0.0
    bounded = end_reward(fit, steps, reward, 192, 1, (0.0, 1.0))
    assert 0.0 <= bounded.interval[0] <= bounded.value <= bounded.interval[1] <= 1.0


@pytest.mark.parametrize("run_steps", [24, 10, 0, 96.0, True])
def test_a_run_not_past_its_pilot_or_a_bad_length_is_a_config_error(run_steps):
    fit, steps, reward = pilot()
    with pytest.raises(ConfigError, match="run's length"):
        end_reward(fit, steps, reward, run_steps, 1, None)


def test_a_pilot_ending_at_step_zero_or_an_empty_range_is_a_config_error():
    fit, steps, reward = pilot()
    assert end_reward(fit, steps, reward, np.int64(96), 1, None).run_steps == 96  # numpy integers are integers
    with pytest.raises(ConfigError, match="last step must be > 0"):
        end_reward(fit, steps - 24, reward, 96, 1, None)
    for bad in ((0.5, 0.5), (1.0, 0.0)):
        with pytest.raises(ConfigError, match="low end below its high end"):
            end_reward(fit, steps, reward, 96, 1, bad)


@pytest.mark.parametrize("reward_range", [None, (0.0, 1.0)])
def test_the_score_does_not_depend_on_the_rewards_units(reward_range):
    """(2) under R -> a R + b, the range mapped with it: the refitted forecast and its scale move with the
    units, so the interval maps onto the rescaled one (the fit standardises the curve: equal to 1e-6 of the
    scale)."""
    a, b = 20.0, -7.0
    fit, steps, reward = pilot(seed=3)
    one = end_reward(fit, steps, reward, 96, 1, reward_range)
    scaled = a * reward + b
    mapped = None if reward_range is None else (a * reward_range[0] + b, a * reward_range[1] + b)
    other = end_reward(fit_trajectory(steps, scaled), steps, scaled, 96, 1, mapped)
    assert other.value == pytest.approx(a * one.value + b, abs=1e-6 * a)
    assert other.scale == pytest.approx(a * one.scale, rel=1e-6)
    assert other.interval == pytest.approx(tuple(a * x + b for x in one.interval), abs=1e-6 * a)


def test_the_shipped_quantiles_are_those_of_the_calibration_scores():
    """INTERVAL_QUANTILES against (3) on the runs of paper_repro/data/end_reward_scores.json.gz with a scale,
    per position and ratio (three decimals, as shipped)."""
    runs = json.loads(gzip.open(SCORES).read())["runs"]
    for where, by_ratio in INTERVAL_QUANTILES.items():
        for ratio, q in by_ratio.items():
            scores = [r["score"] for r in runs if r["ratio"] == ratio and has_scale(r["value"], r["scale"])
                      and end_position(r["value"], (0.0, 1.0)) == where]
            assert len(scores) >= 900
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
    given = pilot_forecast(read_run_config(trl), log, run_steps=200)
    assert given.end.run_steps == 200 and any("200 steps as given, not the config's 100" in a for a in given.assumed)
    unknown = pilot_forecast(read_run_config({"learning_rate": 1e-6, "num_generations": 8}), log)
    assert unknown.end is None and any("run's length is unknown" in a for a in unknown.assumed)
    reached = pilot_forecast(read_run_config(trl | {"max_steps": 30}), log)
    assert reached.end is None and any("reaches the config's run length" in a for a in reached.assumed)
    with pytest.raises(ConfigError, match="not past the pilot's last step"):
        pilot_forecast(read_run_config(trl), log, run_steps=20)


def test_an_interval_that_is_the_whole_reach_is_said_to_be_and_not_given_as_a_band():
    from gspo_dynamics.predict._end_reward import EndReward

    whole = EndReward(150, 2.5, 0.967, 0.1, (0.0, 1.0), "note", reach=(0.0, 1.0))
    inner = EndReward(150, 2.5, 0.967, 0.1, (0.9, 1.0), "note", reach=(0.0, 1.0))
    assert whole.spans_reach and whole.to_json()["interval_is_reach"] is True
    assert "does not narrow" in whole.band_text() and "[0, 1]" in whole.band_text()
    assert not inner.spans_reach and inner.band_text() == ", 90% interval [0.9, 1]"
    assert not EndReward(150, 2.5, 0.5, 0.1, None, "withheld", reach=(0.0, 1.0)).spans_reach
