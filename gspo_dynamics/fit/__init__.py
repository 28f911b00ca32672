"""Fitting the closed-form trajectories of the reduced-order model to reward curves.

    fit = fit_trajectory(steps, reward)      # model selection, regime, stderr, inertia, oscillation
    imp = implications(fit, hparams, reward_range=(0, 1))   # curvature, damping margin, safe refresh
                                             # interval, plateau (no threshold at a bound plateau)
    forecast = pilot_forecast(read_run_config("grpo.yaml"), "pilot/trainer_state.json")   # a config + a pilot
    forecast.end                             # the reward at the run's end, with a calibrated interval
    pilot_headline(forecast)                 # the answer first: verdict, changes in the config's keys, forecast
    pilot_forecast(setup, pilot, prior=["run_a.jsonl", "run_b.jsonl"]).prior   # the end level of finished runs
    fit_sigmoid_scalerl(steps, reward).predict(later)   # the published laws, as forecast baselines (`_laws`)
    fall_chance(margin_grid(forecast, lrs, Ts))   # the chance one run falls over an (lr, T) grid (`_fall_chance`)
"""

from gspo_dynamics.fit._closed_form import FitResult, fit_exponential, fit_oscillator
from gspo_dynamics.fit._collapse_risk import COLLAPSE_SPREAD, SOLVED_SHARE, collapse_grid, kl_pull_risk
from gspo_dynamics.fit._end_reward import (
    HELD_STEPS, INTERVAL_LEVEL, INTERVAL_MAX_RATIO, INTERVAL_MAX_REFRESH, INTERVAL_QUANTILES, EndReward, conformal_quantile,
    end_position, end_reward, end_window, has_scale, held_reward, reward_reach,
)
from gspo_dynamics.fit._laws import (
    fit_entropy_law, fit_exponential_saturation, fit_sigmoid_scalerl, held_level, last_value, scalerl_sigmoid,
)
from gspo_dynamics.fit._fall import COLLAPSE_SHARE, reward_fall
from gspo_dynamics.fit._fall_chance import FALL_CHANCE, chance_grid, fall_chance, fit_fall_chance, margin_grid
from gspo_dynamics.fit._implications import Estimate, Implications, check_reward_range, implications, max_safe_text
from gspo_dynamics.fit._periodogram import fisher_g, periodic_component
from gspo_dynamics.fit._pilot import PilotForecast, pilot_forecast
from gspo_dynamics.fit._pilot_headline import pilot_headline
from gspo_dynamics.fit._pilot_log import load_pilot
from gspo_dynamics.fit._prior import PriorForecast, TaskPrior, prior_forecast, prior_interval, task_prior
from gspo_dynamics.fit._trajectory import EXTRAPOLATION_LIMIT, TrajectoryFit, fit_trajectory

__all__ = [
    "COLLAPSE_SHARE",
    "COLLAPSE_SPREAD",
    "EXTRAPOLATION_LIMIT",
    "FALL_CHANCE",
    "HELD_STEPS",
    "INTERVAL_LEVEL",
    "INTERVAL_MAX_RATIO",
    "INTERVAL_MAX_REFRESH",
    "INTERVAL_QUANTILES",
    "EndReward",
    "Estimate",
    "FitResult",
    "Implications",
    "PilotForecast",
    "PriorForecast",
    "SOLVED_SHARE",
    "TaskPrior",
    "TrajectoryFit",
    "chance_grid",
    "check_reward_range",
    "collapse_grid",
    "conformal_quantile",
    "end_position",
    "end_reward",
    "end_window",
    "fall_chance",
    "fit_entropy_law",
    "fit_exponential_saturation",
    "fit_sigmoid_scalerl",
    "held_level",
    "last_value",
    "reward_fall",
    "reward_reach",
    "scalerl_sigmoid",
    "fit_exponential",
    "fit_fall_chance",
    "fisher_g",
    "fit_oscillator",
    "fit_trajectory",
    "has_scale",
    "held_reward",
    "implications",
    "kl_pull_risk",
    "load_pilot",
    "margin_grid",
    "max_safe_text",
    "periodic_component",
    "pilot_forecast",
    "pilot_headline",
    "prior_forecast",
    "prior_interval",
    "task_prior",
]
