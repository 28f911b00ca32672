"""The reward at a run's end, forecast from its pilot, with an interval calibrated on runs held out.

The forecast: the pilot's fitted curve (`fit.fit_trajectory`, R_fit) averaged over the run's last END_SHARE
of steps, the pilot log's step units, clipped to the reward's range where it is known,

    R_end = mean_{t = N - k + 1 .. N} R_fit(t),    k = max(1, round(N END_SHARE)),           (1)

N the run's optimizer steps (the config's max_steps, trainer.total_training_steps or steps, or given).

The interval: split conformal prediction (Vovk, Gammerman & Shafer 2005; Lei et al. 2018, "Distribution-free
predictive inference for regression"). Past forecasts with known outcomes R_obs give the nonconformity scores

    s_i = |R_end,i - R_obs,i| / (sigma_i + |R_end,i - R_held,i|),                            (2)

sigma the fit's residual std (the pilot's step-to-step noise) and R_held the pilot's held level (its last
HELD_STEPS rewards' mean): the noise, plus how far the forecast carries the curve past where the pilot left
it. The score is unchanged by an affine change of the reward's units, so one calibration serves any reward
scale. With m scores and level 1 - alpha,

    q = the ceil((m + 1)(1 - alpha))-th smallest s_i   (infinite when that rank exceeds m),  (3)
    R_end +- q (sigma + |R_end - R_held|)                                                      (4)

covers a new run's R_obs with probability at least 1 - alpha (and below 1 - alpha + 1 / (m + 1) for
continuous scores) when the new (forecast, outcome) pair is exchangeable with the calibration pairs (Lei et
al. 2018, Theorem 2.1; checked by simulation in tests/fit/test_end_reward.py). Exchangeability across tasks
is an assumption, so it is measured: paper_repro/end_reward_interval.py computes the scores on every run of
our trainer's grids (T <= 4, the pilot a seed's first n = 12, 24 or 48 of 96 steps: a run N / n = 8, 4
or 2 times its pilot), ships q per ratio (`INTERVAL_QUANTILES`), and reports the coverage on each round of
grids and each task held out of the calibration in turn.

An interval is given for a run at most INTERVAL_MAX_RATIO times as long as its pilot (the calibrated ratio next above
the run's, the most conservative neighbour: q grows with the ratio) and a pilot with T <= INTERVAL_MAX_REFRESH
(a longer window leaves too few samplers in the pilot to calibrate on); otherwise the forecast (1) alone,
with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.fit._trajectory import TrajectoryFit

END_SHARE = 1 / 6  # the run's end: its last sixth (the last 16 of 96 steps, as the calibration's outcomes)
INTERVAL_LEVEL = 0.9  # the interval's nominal coverage 1 - alpha
INTERVAL_MAX_RATIO = 8  # the largest run length / pilot length calibrated
INTERVAL_MAX_REFRESH = 4  # the largest refresh interval T calibrated
# q of equation (3) at INTERVAL_LEVEL per calibrated ratio N / n, from the 3,280 runs at each ratio (3,276 at 8) of
# paper_repro/data/end_reward_scores.json.gz (paper_repro/end_reward_interval.py; tests/fit/test_end_reward.py
# recomputes them from that file)
INTERVAL_QUANTILES = {2: 0.622, 4: 1.107, 8: 3.437}


@dataclass(frozen=True)
class EndReward:
    """The forecast of the reward over a run's last END_SHARE of steps (module docstring)."""

    run_steps: int  # N, in the pilot log's step units
    ratio: float  # N over the pilot's last step
    value: float  # R_end, equation (1)
    scale: float  # sigma + |R_end - R_held|, the denominator of (2)
    interval: tuple[float, float] | None  # (4) at INTERVAL_LEVEL, clipped to the reward's range; None: withheld
    note: str  # how the interval was calibrated, or why it is withheld

    def summary(self) -> str:
        band = "" if self.interval is None else f", {INTERVAL_LEVEL:.0%} interval [{self.interval[0]:.3g}, {self.interval[1]:.3g}]"
        return (f"reward at the run's end (steps {int(end_window(self.run_steps)[0])}-{self.run_steps}, {self.ratio:.3g} times "
                f"the pilot): {self.value:.3g}{band} ({self.note})")

    def to_json(self) -> dict[str, Any]:
        return {"run_steps": self.run_steps, "ratio": self.ratio, "value": self.value, "scale": self.scale,
                "interval": None if self.interval is None else list(self.interval), "level": INTERVAL_LEVEL,
                "note": self.note}


def conformal_quantile(scores, level: float = INTERVAL_LEVEL) -> float:
    """q of equation (3): the ceil((m + 1) level)-th smallest of the m finite scores; inf when that rank
    exceeds m (too few scores for the level)."""
    s = np.sort(np.asarray(scores, dtype=float))
    if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ConfigError("conformal scores must be a non-empty set of finite numbers >= 0")
    if not 0 < level < 1:
        raise ConfigError(f"the interval's level must lie in (0, 1), got {level!r}")
    rank = math.ceil((s.size + 1) * level)
    return float(s[rank - 1]) if rank <= s.size else math.inf


def end_window(run_steps: int) -> np.ndarray:
    """The steps N - k + 1 .. N of equation (1)."""
    k = max(1, round(run_steps * END_SHARE))
    return np.arange(run_steps - k + 1, run_steps + 1, dtype=float)


def end_reward_value(fit: TrajectoryFit, run_steps: int, reward_range: tuple[float, float] | None) -> float:
    """R_end, equation (1)."""
    curve = fit.predict(end_window(run_steps))
    if reward_range is not None:
        curve = np.clip(curve, *reward_range)
    return float(np.mean(curve))


def score_scale(value: float, held: float, noise: float) -> float:
    """The denominator of (2): sigma + |R_end - R_held|."""
    return float(noise + abs(value - held))


def checked_run_steps(run_steps) -> int:
    """The run's length as given: a positive integer of optimizer steps, or one ConfigError sentence."""
    if isinstance(run_steps, bool) or not isinstance(run_steps, int) or run_steps < 1:
        raise ConfigError(f"the run's length (--run-steps) must be a positive integer of optimizer steps, got {run_steps!r}")
    return run_steps


def end_reward(fit: TrajectoryFit, pilot_end: float, held: float, run_steps: int, refresh_interval: int,
               reward_range: tuple[float, float] | None) -> EndReward:
    """The forecast (1) and, where calibrated, the interval (4) for a run of `run_steps` steps whose pilot ends
    at step `pilot_end` (the same units) and holds `held` (`fit.held_reward`). ConfigError when the run is not
    longer than its pilot."""
    if checked_run_steps(run_steps) <= pilot_end:
        raise ConfigError(f"the run's length, {run_steps} steps, is not past its pilot's last step {pilot_end:g}: "
                          "there is no end left to forecast")
    if not (math.isfinite(held) and math.isfinite(fit.residual_std)):
        raise ConfigError("the pilot's held level and noise must be finite to forecast the run's end")
    value = end_reward_value(fit, run_steps, reward_range)
    scale = score_scale(value, held, fit.residual_std)
    ratio = run_steps / pilot_end
    calibrated = next((r for r in sorted(INTERVAL_QUANTILES) if ratio <= r), None)
    if refresh_interval > INTERVAL_MAX_REFRESH:
        return EndReward(run_steps, ratio, value, scale, None, f"no interval: calibrated on runs with T <= {INTERVAL_MAX_REFRESH}, "
                         f"this one has T = {refresh_interval}")
    if calibrated is None:
        return EndReward(run_steps, ratio, value, scale, None, f"no interval: the run is {ratio:.3g} times its pilot; "
                         f"intervals are calibrated up to {INTERVAL_MAX_RATIO} times, so a longer pilot gives one")
    q = INTERVAL_QUANTILES[calibrated]
    low, high = value - q * scale, value + q * scale
    if reward_range is not None:
        low, high = max(low, reward_range[0]), min(high, reward_range[1])
    return EndReward(run_steps, ratio, value, scale, (low, high),
                     f"split conformal, calibrated on our trainer's runs {calibrated} times their pilot; its coverage on "
                     "rounds and tasks held out: paper_repro/RESULTS.md, end-reward-interval")
