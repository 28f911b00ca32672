"""A plateau whose step the pilot does not time (its standard error exceeds it: "from step 4" where tau = 0.94 +-
4.5) is printed without a step; one timed keeps it."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from gspo_dynamics.fit._implications import Estimate
from gspo_dynamics.logs import RunLog
from gspo_dynamics.predict import _pilot_headline, pilot_forecast, read_run_config
from gspo_dynamics.predict._pilot_headline import UNTIMED, pilot_headline, plateau_timed


@pytest.mark.parametrize("step, stderr, timed", [
    (40.0, 5.0, True), (40.0, 40.0, True), (4.0, 13.0, False), (4.0, math.inf, False), (4.0, math.nan, False),
    (30.0, None, True),  # no standard error computed: the step stands
])
def test_plateau_timed_reads_the_steps_own_error(step, stderr, timed):
    assert plateau_timed(SimpleNamespace(time_to_plateau=Estimate(step, stderr))) is timed


@pytest.mark.parametrize("run_length", [{"max_steps": 400}, {}])
def test_predict_prints_no_step_the_pilot_does_not_time(monkeypatch, run_length):
    """The headline's plateau line and JSON where the step is untimed (the rule patched to say so on a pilot whose
    plateau is identified): no step number, the JSON step null; timed, the step. Beside an end reward (the run's
    length known) the line gives no level of its own: one level per answer, the end's."""
    rng = np.random.default_rng(0)
    n = np.arange(1, 61)
    reward = 0.8 - 0.6 * np.exp(-n / 8) + 0.01 * rng.normal(size=n.size)
    f = pilot_forecast(read_run_config({"learning_rate": 1e-6, "num_generations": 8, **run_length}),
                       RunLog(steps=n, series={"reward": reward}, format="synthetic", source="test"))
    assert _pilot_headline.plateau_identified(f)
    timed = pilot_headline(f)
    text = "\n".join(timed.lines())
    level = f"plateau {f.implications.plateau.value:.3g}"
    if run_length:
        assert "within 5% of its own plateau from step" in text and level not in text
        assert "the level the run ends at is the reward above" in text
    else:
        assert "within 5% of it from step" in text and level in text
    monkeypatch.setattr(_pilot_headline, "plateau_timed", lambda imp: False)
    untimed = pilot_headline(f)
    text = "\n".join(untimed.lines())
    assert UNTIMED in text and "from step" not in text
    line = next(x for x in untimed.lines() if x.startswith("forecast: plateau"))
    assert line.startswith("forecast: plateau: the pilot's fitted curve bends" if run_length else "forecast: plateau 0.")
    assert untimed.to_json()["forecast"]["plateau"]["step"] is None

