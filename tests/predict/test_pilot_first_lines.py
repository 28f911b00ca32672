"""A pilot's first lines about itself against its config: a log that runs past the config's run length is said, and
the verdict stands (`_pilot_log.past_the_run`)."""

from __future__ import annotations

import numpy as np

from gspo_dynamics.logs import RunLog
from gspo_dynamics.predict import pilot_forecast, read_run_config
from gspo_dynamics.predict._pilot_headline import pilot_headline


def test_a_log_past_the_configs_run_length_is_said_first_and_the_verdict_stands():
    """A 400-step log read as the pilot of a config whose max_steps is 250: one first line asks whether the config
    is the log's; --run-steps (the log's own length) reads it without the line."""
    n = np.arange(1, 401)
    reward = 0.8 - 0.6 * np.exp(-n / 40) + 0.01 * np.random.default_rng(0).normal(size=n.size)
    log = RunLog(steps=n, series={"reward": reward}, format="synthetic", source="test")
    config = read_run_config({"learning_rate": 1e-6, "num_generations": 8, "max_steps": 250})
    f = pilot_forecast(config, log, pilot_steps=50)
    assert f.brief_lines() == ["pilot longer than the run: the log runs to step 400, past the config's max_steps 250: "
                               "a pilot is its run's start; is this its config? (--run-steps 400 reads the log's own "
                               "length)"]
    assert f.to_json()["log_past_run"] == f.past_run
    assert pilot_forecast(config, log, pilot_steps=50, run_steps=400).past_run is None
    assert pilot_headline(f).verdict == pilot_headline(pilot_forecast(config, log, pilot_steps=50, run_steps=400)).verdict
