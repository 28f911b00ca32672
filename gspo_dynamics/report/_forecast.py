"""The forecast band of a run whose config is given: `predict.pilot_forecast` on the run's own log, read as predict
reads a pilot (nothing re-derived here).

Which part of the log is the pilot: `pilot_steps` where given; else, where the config's run length (TRL max_steps,
verl total_training_steps) lies past the log's last step, the whole log (the forecast is of the rest of the run);
else the first PILOT_SHARE of its reward points, so the rest of the log is the truth the band is shown against.
A pilot that is the whole log is the series `diagnose` fitted: its fit is passed on, not fitted again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.logs import MIN_ANALYSIS_POINTS
from gspo_dynamics.predict import end_window, pilot_forecast, pilot_headline

PILOT_SHARE = 1 / 3  # a finished run's pilot: its first third (the README's example pilots are 60 of 150-250 steps)


@dataclass(frozen=True, kw_only=True)
class ForecastView:
    """What the report shows of a pilot forecast: predict's own lines, the fitted pilot curve and the end band."""

    lines: tuple[str, ...]  # predict's answer (`pilot_headline(...).lines()`), or why there is none
    pilot_end: float | None = None  # the last step of the pilot
    curve: tuple[np.ndarray, np.ndarray] | None = None  # (steps, reward) of the pilot's fit, to the run's end
    band: tuple[float, float, float, float] | None = None  # (first step, last step, low, high) of the end interval
    end: tuple[float, float, float] | None = None  # (first step, last step, value): predict's end reward over its window


def pilot_points(log, setup, pilot_steps: int | None) -> tuple[int | None, int | None, str]:
    """(pilot_steps, run_steps, how) for `pilot_forecast` (module docstring): None run_steps keeps the config's."""
    last = float(log.steps[-1])
    n = log.n_points("reward")
    if pilot_steps is not None:
        how = f"pilot: the first {min(pilot_steps, n)} reward points (--pilot-steps)"
        return pilot_steps, None if setup.run_steps and setup.run_steps > last else int(last), how
    if setup.run_steps and setup.run_steps > last:
        return None, None, f"pilot: the whole log ({n} reward points); the run's length {setup.run_steps} from the config"
    k = max(MIN_ANALYSIS_POINTS, int(n * PILOT_SHARE))
    return k, int(last), f"pilot: the first {k} of {n} reward points; the rest of the log is the truth the band is shown against"


def forecast_view(log, setup, *, pilot_steps: int | None = None, reward_range: tuple[float, float] | None = None,
                  fit=None) -> ForecastView:
    """predict's pilot forecast for `setup` (a `predict.RunSetup`) on `log`: its lines, curve and band; where predict
    refuses (no group size in the config, a log too short), its one-sentence reason as the view's line. `fit`:
    diagnose's closed-form fit of the log's reward (a `fit.TrajectoryFit`, or None), the pilot's where the pilot is the
    whole log."""
    if log.n_points("reward") < 2 * MIN_ANALYSIS_POINTS:
        return ForecastView(lines=(f"forecast: none (the log has {log.n_points('reward')} reward points; a pilot and "
                                   f"the rest need at least {2 * MIN_ANALYSIS_POINTS})",))
    k, run_steps, how = pilot_points(log, setup, pilot_steps)
    try:
        whole = k is None or k >= log.n_points("reward")  # the pilot is the series diagnose fitted
        f = pilot_forecast(setup, log, pilot_steps=k, reward_range=reward_range, run_steps=run_steps,
                           fit=fit if whole else None)
        head = pilot_headline(f).lines()
    except ConfigError as exc:
        return ForecastView(lines=(f"forecast: none ({exc})",))
    pilot_end = float(f.pilot[0][-1]) if f.pilot is not None else None
    curve = band = end = None
    if f.fit is not None and f.end is not None:  # to the run's end where that is forecast, else over the pilot
        t = np.linspace(f.fit.t_start, float(f.end.run_steps if f.end.identified else f.fit.t_end), 200)
        reach = f.end.reach or (-math.inf, math.inf)  # the fitted curve within what the reward can reach
        curve = (t, np.clip(f.fit.predict(t), *reach))
    if f.end is not None and f.end.identified:  # a value no band calibrates is not drawn, as it is not printed
        window = end_window(f.end.run_steps)
        end = (float(window[0]), float(window[-1]), float(f.end.value))
        if f.end.interval is not None and all(math.isfinite(v) for v in f.end.interval):
            band = (end[0], end[1], float(f.end.interval[0]), float(f.end.interval[1]))
    return ForecastView(lines=tuple([how] + head), pilot_end=pilot_end, curve=curve, band=band, end=end)
