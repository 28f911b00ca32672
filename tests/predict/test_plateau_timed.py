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


def test_predict_prints_no_step_the_pilot_does_not_time(monkeypatch):
    """The headline's plateau line and JSON where the step is untimed (the rule patched to say so on a pilot whose
    plateau is identified): no step number, the JSON step null; timed, the step."""
    rng = np.random.default_rng(0)
    n = np.arange(1, 61)
    reward = 0.8 - 0.6 * np.exp(-n / 8) + 0.01 * rng.normal(size=n.size)
    f = pilot_forecast(read_run_config({"learning_rate": 1e-6, "num_generations": 8, "max_steps": 400}),
                       RunLog(steps=n, series={"reward": reward}, format="synthetic", source="test"))
    assert _pilot_headline.plateau_identified(f)
    timed = pilot_headline(f)
    assert "within 5% of it from step" in "\n".join(timed.lines())
    monkeypatch.setattr(_pilot_headline, "plateau_timed", lambda imp: False)
    untimed = pilot_headline(f)
    text = "\n".join(untimed.lines())
    assert UNTIMED in text and "within 5% of it from step" not in text
    assert untimed.to_json()["forecast"]["plateau"]["step"] is None

