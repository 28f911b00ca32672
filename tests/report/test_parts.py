"""The report's smaller parts: thinning keeps a spike, run names tell runs apart, and the forecast section is
predict's own answer on the run's first part."""

import json

import numpy as np
import pytest

from gspo_dynamics.logs import read_log
from gspo_dynamics.predict import pilot_forecast, pilot_headline, read_run_config
from gspo_dynamics.report._forecast import forecast_view
from gspo_dynamics.report._model import labels
from gspo_dynamics.report._svg import MAX_POINTS, thin


def test_thinning_keeps_the_spike_and_the_order():
    steps = np.arange(20000)
    values = np.sin(steps / 500.0)
    values[12345] = 50.0
    s, v = thin(steps, values)
    assert s.size <= MAX_POINTS + 3 and np.all(np.diff(s) > 0)
    assert v.max() == 50.0 and s[v.argmax()] == 12345
    assert s[0] == 0 and v.min() == pytest.approx(-1.0, abs=1e-3)


@pytest.mark.parametrize("paths, names", [
    (["runs/lr1e-3/trainer_state.json", "runs/lr3e-3/trainer_state.json"], ["lr1e-3", "lr3e-3"]),
    (["a/run_x.jsonl", "b/run_y.jsonl"], ["x.jsonl", "y.jsonl"]),
    (["same.json", "same.json"], ["same.json (1)", "same.json (2)"]),
    (["one/log.jsonl"], ["log.jsonl"]),
])
def test_run_names_tell_runs_apart(paths, names):
    assert labels(paths) == names


def test_the_forecast_is_predicts_own(run_file, tmp_path):
    config = tmp_path / "grpo_config.json"
    config.write_text(json.dumps({"learning_rate": 1e-3, "num_generations": 8, "per_device_train_batch_size": 32,
                                  "max_steps": 150}))
    setup, log = read_run_config(str(config)), read_log(run_file(n=150))
    view = forecast_view(log, setup)
    assert view.lines[0] == "pilot: the first 50 of 150 reward points; the rest of the log is the truth the band is shown against"
    expected = pilot_headline(pilot_forecast(setup, log, pilot_steps=50, run_steps=150)).lines()
    assert list(view.lines[1:]) == expected
    assert view.pilot_end == 50 and view.curve is not None and view.curve[0][-1] == 150
    forecast = pilot_forecast(setup, log, pilot_steps=50, run_steps=150).end
    assert view.end[2] == forecast.value and (view.band is None) == (forecast.interval is None)
    longer = forecast_view(log, read_run_config(str(config), overrides=["max_steps=400"]))
    assert longer.lines[0].startswith("pilot: the whole log (150 reward points); the run's length 400")
    far = forecast_view(log, read_run_config(str(config), overrides=["max_steps=1800", "lr_scheduler_type=constant"]))
    assert far.end is None and far.band is None and far.curve[0][-1] == 150  # no band calibrates 12x: the fit stops
