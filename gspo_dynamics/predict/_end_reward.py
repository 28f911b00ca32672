"""The reward at a run's end, forecast from its pilot, with an interval calibrated on runs held out.

What `predict --pilot` prints is `blended_end_reward`: the held level moved toward the fitted curve, the published
laws and the parametric curve ensemble (`predict._curve_ensemble`) by weights learned on finished real runs, with a
conformal band across those runs (`predict._end_blend`, its equations; paper_repro/real_run_end_reward.py, its
protocol and scores). Below: the readings it shares with the
forecast of our trainer's runs, `end_reward` (1)-(5), calibrated on our trainer's grids
(paper_repro/end_reward_interval.py).

The forecast: the pilot's fitted curve (`fit.fit_trajectory`, R_fit) averaged over the run's last END_SHARE
of steps, in the pilot log's step units, clipped to the reward's range where it is known,

    R_end = mean_{t = N - k + 1 .. N} R_fit(t),    k = max(1, round(N END_SHARE)),           (1)

N the run's length (the config's max_steps, trainer.total_training_steps or steps, or given; at most
END_POINTS evenly spaced steps of the window are read).

The interval: split conformal prediction (Vovk, Gammerman & Shafer 2005, "Algorithmic learning in a random
world"; Lei et al. 2018, "Distribution-free predictive inference for regression"). Past forecasts with known
outcomes R_obs give the nonconformity scores

    s_i = |R_end,i - R_obs,i| / (sigma_i + |R_end,i - R_held,i|),                            (2)

sigma the fit's residual std (the pilot's step-to-step noise) and R_held the pilot's held level (its last
HELD_STEPS rewards' mean): the noise, plus how far the forecast carries the curve past where the pilot left
it. Under an affine change of the reward's units, its range (when known) changing with it, the score is
unchanged, so one calibration serves any reward scale. With m scores and level 1 - alpha,

    q = the ceil((m + 1)(1 - alpha))-th smallest s_i   (infinite when that rank exceeds m),  (3)
    R_end +- q (sigma + |R_end - R_held|)                                                      (4)

covers a new run's R_obs with probability at least 1 - alpha (and below 1 - alpha + 1 / (m + 1) when the
scores have no ties) when the new (forecast, outcome) pair is exchangeable with the calibration pairs
(checked by simulation in tests/predict/test_end_reward.py). The guarantee is marginal: a run whose forecast sits
at the reward's bound is covered far more often than one inside the range. So the scores are split by that
position, which the user sees before the run (Mondrian conformal prediction, Vovk et al. 2005, ch. 4): "bound"
when R_end lies within BOUND_SHARE of the range's width of either bound, "inside" otherwise or when the range
is unknown, each with its own q (3) per run length.

Exchangeability across tasks is an assumption, so it is measured: paper_repro/end_reward_interval.py computes
the scores on every run of our trainer's grids (T <= 4, the pilot a seed's first n = 12, 24 or 48 of 96 steps,
logged every step: a run N / n = 8, 4 or 2 times its pilot), ships q per position and ratio
(`INTERVAL_QUANTILES`), and reports the coverage on each round of grids and each task held out of the
calibration in turn.

The conformal interval is given for a run at most INTERVAL_MAX_RATIO times as long as its pilot (the calibrated
ratio next above the run's, the most conservative neighbour: q grows with the ratio), a pilot with
T <= INTERVAL_MAX_REFRESH logged every step (as calibrated: a log of k-step means has another noise and held
level), and a scale (2) above zero. Elsewhere (most real runs: longer than 8 pilots, logged every k steps) the
interval is the bracket of the two readings of the pilot, where the curve goes and where the reward was left,
widened by the pilot's noise at the normal's 95% point on each side (two 5% tails: a 90% interval):

    [min(R_end, R_held) - z sigma,  max(R_end, R_held) + z sigma],    z = BRACKET_Z = 1.645.   (5)

Every forecast and interval lies within the reward's reach: its range where known, else the pilot's observed
range [lo, hi] widened by its width w on each side (a run can move as far again as its pilot did; a pilot pinned at
one value takes w = max(|lo|, 1)), `fit.reward_reach_of`:

    reach = [lo - w,  hi + w],    w = hi - lo.                                                  (6)
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from gspo_dynamics._errors import ConfigError
from gspo_dynamics.fit import HELD_STEPS, TrajectoryFit, reward_reach_of
from gspo_dynamics.predict._end_blend import (
    BAND_LEVEL, BAND_MAX_HORIZON, BAND_QUANTILES, BLEND_WEIGHTS, CALIBRATION, NEAR_WHOLE, Readings, band, band_quantile,
    blend, information, law_readings, pilot_noise, reading_weights,
)
from gspo_dynamics.predict._schedule import effective_run_length

END_SHARE = 1 / 6  # the run's end: its last sixth (the last 16 of 96 steps, as the calibration's outcomes)
END_POINTS = 10_000  # the most steps of the end window the forecast (1) reads (evenly spaced beyond that)
INTERVAL_LEVEL = 0.9  # the interval's nominal coverage 1 - alpha
INTERVAL_MAX_RATIO = 8  # the largest run length / pilot length calibrated
INTERVAL_MAX_REFRESH = 4  # the largest refresh interval T calibrated
BOUND_SHARE = 0.02  # a forecast this share of the range's width from a bound sits "at the bound"
BRACKET_Z = 1.645  # the normal's 95% point: (5) leaves 5% above and 5% below, a 90% interval
SCALE_MIN = 1e-9  # a scale (2) at most this, relative to max(1, |R_end|), is none: no interval
# q of equation (3) at INTERVAL_LEVEL per position and calibrated ratio N / n, from the runs of
# paper_repro/data/end_reward_scores.json.gz with a scale (paper_repro/end_reward_interval.py;
# tests/predict/test_end_reward.py recomputes them from that file)
INTERVAL_QUANTILES = {"bound": {2: 0.210, 4: 0.225, 8: 0.675}, "inside": {2: 1.107, 4: 2.958, 8: 6.557}}


@dataclass(frozen=True)
class EndReward:
    """The forecast of the reward over a run's last END_SHARE of steps (module docstring)."""

    run_steps: int  # N, in the pilot log's step units
    ratio: float  # N over the pilot's last step, on the pilot's clock (under an lr schedule N is predict._schedule's n_eff)
    value: float  # R_end, equation (1)
    scale: float  # sigma + |R_end - R_held|, the denominator of (2)
    interval: tuple[float, float] | None  # (4) at INTERVAL_LEVEL, clipped to the reward's range; None: withheld
    note: str  # how the interval was calibrated, or why it is withheld
    reach: tuple[float, float] | None = None  # (6), what the reward can reach
    withheld: str = ""  # why there is no interval, in a few words (the answer's first lines say it)
    held: float | None = None  # R_held, the pilot's held level (the mean of its last HELD_STEPS rewards)
    unidentified: bool = False  # the blend's band is withheld (run past the calibrated horizons, or the whole
    # reach): nothing calibrates the value, so the answer prints the held level as where the pilot stands instead

    @property
    def identified(self) -> bool:
        """Whether the value is an answer: not where the blend's band is withheld (`unidentified`)."""
        return not self.unidentified

    @property
    def spans_reach(self) -> bool:
        """Whether the interval is the whole reach (6): clipped at both ends, so the pilot narrows nothing."""
        return (self.interval is not None and self.reach is not None
                and all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) for a, b in zip(self.interval, self.reach)))

    def band_text(self) -> str:
        """The interval as the answer prints it: its bounds, that it is the reward's whole reach, or why it is
        withheld."""
        if self.interval is None:
            return f" (no {INTERVAL_LEVEL:.0%} interval: {self.withheld})" if self.withheld else ""
        low, high = self.interval
        if self.spans_reach:
            return (f"; the pilot does not narrow its {INTERVAL_LEVEL:.0%} interval below what the reward can reach, "
                    f"[{low:.3g}, {high:.3g}]")
        return f", {INTERVAL_LEVEL:.0%} interval [{low:.3g}, {high:.3g}]"

    def summary(self) -> str:
        band = self.band_text() if self.interval is not None else ""  # a withheld band's reason is in the note
        value = f"{self.value:.3g}{band}" if self.identified else not_identified_text(self, why=False)  # in the note
        return (f"reward at the run's end (steps {int(end_window(self.run_steps)[0])}-{self.run_steps}, {self.ratio:.3g} times "
                f"the pilot): {value} ({self.note})")

    def to_json(self) -> dict[str, Any]:
        return {"run_steps": self.run_steps, "ratio": self.ratio, "value": self.value if self.identified else None,
                "held": self.held, "scale": self.scale, "interval": None if self.interval is None else list(self.interval),
                "level": INTERVAL_LEVEL, "interval_is_reach": self.spans_reach, "note": self.note}


def not_identified_text(end: EndReward, why: bool = True) -> str:
    """The answer where the blend's band is withheld: no value, why (unless `why` is False), and where the pilot
    stands."""
    held = "" if end.held is None else f"; the pilot holds at {end.held:.3g} (its last {HELD_STEPS} rewards' mean)"
    reason = f" (no {INTERVAL_LEVEL:.0%} interval: {end.withheld})" if why else ""
    return f"not identified by this pilot{reason}{held}"


def conformal_quantile(scores, level: float = INTERVAL_LEVEL) -> float:
    """q of equation (3): the ceil((m + 1) level)-th smallest of the m finite scores; inf when that rank
    exceeds m (too few scores for the level): `_end_blend.band_quantile`, after these checks."""
    s = np.asarray(scores, dtype=float)
    if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ConfigError("conformal scores must be a non-empty set of finite numbers >= 0")
    if not 0 < level < 1:
        raise ConfigError(f"the interval's level must lie in (0, 1), got {level!r}")
    return band_quantile(s, level)


def end_window(run_steps: int) -> np.ndarray:
    """The steps N - k + 1 .. N of equation (1), at most END_POINTS of them (evenly spaced)."""
    k = max(1, round(run_steps * END_SHARE))
    return np.linspace(float(run_steps - k + 1), float(run_steps), min(k, END_POINTS))


def end_reward_value(fit: TrajectoryFit, run_steps: int, reward_range: tuple[float, float] | None) -> float:
    """R_end, equation (1), the curve clipped to `reward_range` (the reach (6) where the range is unknown)."""
    curve = fit.predict(end_window(run_steps))
    if reward_range is not None:
        curve = np.clip(curve, *reward_range)
    return float(np.mean(curve))


def reward_reach(reward, reward_range: tuple[float, float] | None) -> tuple[float, float]:
    """What the reward can reach, equation (6): its range where known, else the observed range [a, b] widened by its
    span on each side (`fit.reward_reach_of`, the one rule; a reward pinned at a takes max(|a|, 1) for its span, not
    the point [a, a])."""
    if reward_range is not None:
        return (float(reward_range[0]), float(reward_range[1]))
    r = np.asarray(reward, dtype=float)
    return reward_reach_of((float(np.min(r)), float(np.max(r))), None)


def bracket_interval(value: float, held: float, noise: float, reach: tuple[float, float]) -> tuple[float, float]:
    """Equation (5), clipped to the reach (6)."""
    low, high = min(value, held) - BRACKET_Z * noise, max(value, held) + BRACKET_Z * noise
    return (max(low, reach[0]), min(high, reach[1]))


def held_reward(reward) -> float:
    """The held level: the mean of the last HELD_STEPS rewards (all of them when fewer), the naive forecast of a
    run's final reward, that the reward stays where the pilot left it."""
    return float(np.mean(np.asarray(reward, dtype=float)[-HELD_STEPS:]))


def score_scale(value: float, held: float, noise: float) -> float:
    """The denominator of (2): sigma + |R_end - R_held|."""
    return float(noise + abs(value - held))


def has_scale(value: float, scale: float) -> bool:
    """Whether the scale (2) is one to calibrate by: above SCALE_MIN relative to max(1, |R_end|)."""
    return scale > SCALE_MIN * max(1.0, abs(value))


def end_position(value: float, reward_range: tuple[float, float] | None) -> str:
    """The forecast's position, "bound" or "inside" (module docstring): its Mondrian group."""
    if reward_range is None:
        return "inside"
    lo, hi = reward_range
    return "bound" if min(value - lo, hi - value) <= BOUND_SHARE * (hi - lo) else "inside"


def checked_run_steps(run_steps) -> int:
    """The run's length as given: a positive integer of steps, or one ConfigError sentence."""
    if isinstance(run_steps, bool) or not isinstance(run_steps, numbers.Integral) or run_steps < 1:
        raise ConfigError(f"the run's length (--run-steps) must be a positive integer of steps, got {run_steps!r}")
    return int(run_steps)


def _checked_run(steps: np.ndarray, run_steps, reward_range) -> int:
    """The run's length, past a pilot ending at a step > 0, with a non-empty reward range; else one ConfigError."""
    pilot_end = float(steps[-1])
    if not pilot_end > 0:
        raise ConfigError(f"the pilot's last step must be > 0 to measure the run's length against it, got {pilot_end:g}")
    if reward_range is not None and not reward_range[0] < reward_range[1]:
        raise ConfigError(f"the reward's range must have its low end below its high end, got {tuple(reward_range)!r}")
    run_steps = checked_run_steps(run_steps)
    if run_steps <= pilot_end:
        raise ConfigError(f"the run's length, {run_steps} steps, is not past its pilot's last step {pilot_end:g}: "
                          "there is no end left to forecast")
    return run_steps


def end_reward(fit: TrajectoryFit, steps, reward, run_steps: int, refresh_interval: int,
               reward_range: tuple[float, float] | None) -> EndReward:
    """The forecast (1) and, where calibrated, the interval (4) for a run of `run_steps` steps from its pilot's
    fit and its logged (steps, reward) (the same units; steps sorted, unique and finite, as `predict.load_pilot`
    gives them). ConfigError when the run is not past its pilot, the pilot ends at a step <= 0, or the reward's
    range is empty."""
    steps, reward = np.asarray(steps, dtype=float), np.asarray(reward, dtype=float)
    run_steps = _checked_run(steps, run_steps, reward_range)
    pilot_end = float(steps[-1])
    held = held_reward(reward)
    if not (math.isfinite(held) and math.isfinite(fit.residual_std)):
        raise ConfigError("the pilot's held level and noise must be finite to forecast the run's end")
    reach = reward_reach(reward, reward_range)
    value = end_reward_value(fit, run_steps, reach)
    scale = score_scale(value, held, fit.residual_std)
    ratio = run_steps / pilot_end
    where = end_position(value, reward_range)
    calibrated = next((r for r in sorted(INTERVAL_QUANTILES[where]) if ratio <= r), None)
    spacing = float(np.median(np.diff(steps))) if steps.size > 1 else 1.0

    def bracket(why: str) -> EndReward:
        return EndReward(run_steps, ratio, value, scale, bracket_interval(value, held, fit.residual_std, reach),
                         f"between the fitted curve and the held level, widened by {BRACKET_Z:g} x the pilot's noise "
                         f"(predict._end_reward (5); {why})", reach)

    if not has_scale(value, scale):
        why = "the pilot's rewards do not move around the forecast, so there is nothing to scale an interval by"
        return EndReward(run_steps, ratio, value, scale, None, f"no interval: {why}", withheld=why)
    if refresh_interval > INTERVAL_MAX_REFRESH:
        return bracket(f"the conformal interval is calibrated on runs with T <= {INTERVAL_MAX_REFRESH}, this one has "
                       f"T = {refresh_interval}")
    if calibrated is None:
        return bracket(f"the run is {ratio:.3g} times its pilot; the conformal interval is calibrated up to "
                       f"{INTERVAL_MAX_RATIO} times")
    if spacing != 1.0:
        return bracket(f"the pilot logs a row every {spacing:g} steps; the conformal interval is calibrated on logs of "
                       "every step")
    q = INTERVAL_QUANTILES[where][calibrated]
    low, high = max(value - q * scale, reach[0]), min(value + q * scale, reach[1])
    return EndReward(run_steps, ratio, value, scale, (low, high),
                     f"split conformal, calibrated on our trainer's runs {calibrated} times their pilot whose forecast sits "
                     f"{'at a bound' if where == 'bound' else 'inside the range'}; its coverage on rounds and tasks held "
                     "out: paper_repro/RESULTS.md, end-reward-interval", reach)


def blended_end_reward(fit: TrajectoryFit, steps, reward, run_steps: int, reward_range: tuple[float, float] | None,
                       entropy=None, clock: str = "") -> EndReward:
    """The forecast `predict` prints: the held level moved toward the curve, the laws and the curve ensemble
    (`predict._end_blend` (3), weights learned on finished real runs), with its conformal band (5); where the band
    would be the reward's whole reach or the run is longer than the calibration's, no band and no value (`unidentified`,
    the reason in `withheld`, the held level beside it). `entropy`: (steps, values) of the pilot's logged entropy, or
    None; `clock`: how `run_steps` is counted where it is not in steps (said in the reason). ConfigError as
    `end_reward`."""
    steps, reward = np.asarray(steps, dtype=float), np.asarray(reward, dtype=float)
    run_steps = _checked_run(steps, run_steps, reward_range)
    reach = reward_reach(reward, reward_range)
    noise = pilot_noise(reward, reach)
    held = held_reward(reward)
    laws = law_readings(fit, steps, reward, end_window(run_steps), reach, held, entropy)
    readings = Readings(held, laws, information(reward, noise), noise, run_steps / float(steps[-1]))
    value = float(np.clip(blend(readings), *reach))
    how = (f"the held level {held:.3g} moved toward the readings by the weights learned for a run {readings.horizon:.3g} "
           f"times its pilot with information g = {readings.info:.2f} ({_weights_text(readings)}; predict._end_blend, "
           f"learned on {CALIBRATION})")
    if readings.horizon > BAND_MAX_HORIZON:
        return EndReward(run_steps, readings.horizon, value, readings.scale, None, how + f"; no band: the run is "
                         f"{readings.horizon:.3g} times its pilot, the band is calibrated up to {BAND_MAX_HORIZON:g} times", reach,
                         withheld=f"the run is {readings.horizon:.3g} times the pilot{clock}, the interval is calibrated up to "
                                  f"{BAND_MAX_HORIZON:g} times; a longer pilot gets one", held=held, unidentified=True)
    interval = band(value, readings.scale, BAND_QUANTILES[readings.where][readings.group], reach)
    if interval is None:
        return EndReward(run_steps, readings.horizon, value, readings.scale, None, how + f"; no band: the calibrated "
                         f"{BAND_LEVEL:.0%} band would span {NEAR_WHOLE:.0%} or more of the reward's reach "
                         f"[{reach[0]:.3g}, {reach[1]:.3g}], so the pilot narrows nothing", reach,
                         withheld=f"it would span {NEAR_WHOLE:.0%} or more of what the reward can reach; a longer "
                                  "pilot narrows it", held=held, unidentified=True)
    return EndReward(run_steps, readings.horizon, value, readings.scale, interval, how + f"; the band is conformal across "
                     "those runs, left out by repository: paper_repro/RESULTS.md, real-run-end-reward-2", reach, held=held)


def _weights_text(readings: Readings) -> str:
    """Each weighted reading with what it reads, those that read the held level itself (a law that does not apply:
    no entropy logged, a sigmoid that fell back, an unidentified plateau) named apart: their weight moves nothing."""
    names = ("curve", "sigmoid", "entropy law", "curve ensemble")
    weights = reading_weights(BLEND_WEIGHTS[readings.where], readings.info)
    moved = [f"{k} {w:.2g} reading {f:.3g}" for k, w, f in zip(names, weights, readings.laws)
             if w >= 0.005 and f != readings.held]
    idle = [f"the {k} gives no reading here, its weight {w:.2g} stays on the held level"
            for k, w, f in zip(names, weights, readings.laws) if w >= 0.005 and f == readings.held]
    return "; ".join([", ".join(moved) or "none: the held level"] + idle)


def pilot_end_reward(fit: TrajectoryFit, steps: np.ndarray, reward: np.ndarray, run_steps: int | None, refresh_interval: int,
                reward_range, assumed: list[str], schedule=(None, 1.0), entropy=None) -> EndReward | None:
    """The reward at the run's end (`blended_end_reward`; `refresh_interval` is `end_reward`'s), read on the pilot's clock where the lr follows a schedule
    (`predict._schedule` (2); `schedule` = (the LRSchedule or None, the pilot's mean factor)), or None with the reason in
    `assumed`: the run's length unknown, or the pilot already at it."""
    if run_steps is None:
        assumed.append("the run's length is unknown (TRL max_steps, verl trainer.total_training_steps, our steps, or "
                       "--run-steps): no forecast of the reward at its end")
        return None
    if run_steps <= steps[-1]:
        assumed.append(f"the pilot reaches the config's run length ({run_steps} steps): no end left to forecast")
        return None
    effective = effective_run_length(schedule[0], steps[-1], run_steps, schedule[1])
    if effective == run_steps:
        return blended_end_reward(fit, steps, reward, run_steps, reward_range, entropy)
    assumed.append(f"the lr schedule ({schedule[0].describe()}) makes the run's {run_steps} steps move the reward as far "
                   f"as {effective} steps at the pilot's lr would (predict._schedule (2)): the end reward is the fit's there")
    clock = f" on the lr schedule's clock ({run_steps / float(steps[-1]):.3g} times in steps)"
    return dataclasses.replace(blended_end_reward(fit, steps, reward, effective, reward_range, entropy, clock),
                               run_steps=run_steps)
