"""An end-reward interval past the rewards a pilot saw, on a reward whose bounds are unknown (neither given nor a
[0, 1] success rate), says so and names --reward-range; with the range given it is kept within it and says nothing."""

from __future__ import annotations

import numpy as np

from gspo_dynamics.logs import RunLog
from gspo_dynamics.predict import pilot_forecast, read_run_config
from gspo_dynamics.predict._pilot_headline import pilot_headline

NOTE = "(the reward's bounds are unknown: --reward-range LO HI keeps the interval within them)"


def _forecast(reward_range=None):
    rng = np.random.default_rng(0)
    n = np.arange(1, 121)
    reward = 1.9 - 1.4 * np.exp(-n / 60) + 0.15 * rng.normal(size=n.size)  # format + correctness, capped at 2
    log = RunLog(steps=n, series={"reward": np.minimum(reward, 2.0)}, format="synthetic", source="test")
    config = read_run_config({"learning_rate": 1e-6, "num_generations": 8, "max_steps": 600})
    return pilot_forecast(config, log, reward_range=reward_range)


def test_an_interval_past_the_rewards_seen_names_the_unknown_bounds():
    f = _forecast()
    assert f.reward_range is None and f.end is not None and f.end.interval is not None
    line = next(t for t in pilot_headline(f).lines() if t.startswith("forecast: reward over steps"))
    low, high = f.end.interval
    assert (NOTE in line) == (high > f.pilot[1].max() or low < f.pilot[1].min())
    assert NOTE in line  # this pilot's interval reaches past its largest reward


def test_a_given_range_bounds_the_interval_and_needs_no_note():
    f = _forecast(reward_range=(0.0, 2.0))
    line = next(t for t in pilot_headline(f).lines() if t.startswith("forecast: reward over steps"))
    assert NOTE not in line and f.end.interval[1] <= 2.0
