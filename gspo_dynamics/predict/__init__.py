"""Predictions from the theory alone, above `theory/` and below the testbeds (no torch).

    predict_bandit(bandit, hp)            the bandit's regime, margins, thresholds, plateau
    predicted_ratio_metrics(m, objective, clip_low, clip_high, config=...)
                                          a sequence run's ratio statistics at its measured spread
    load_sweep("sims/<name>.json")        a declarative grid of `Hyperparams` (sims/README.md)
    read_run_config("grpo.yaml")          a TRL / verl / our trainer's config in the theory's terms
    config_forecast(setup)                what that config alone determines about stability
    config_headline(forecast)             the answer first: verdict, changes in the config's keys, the pilot to run
    zero_std_answer("pass_rates.txt", G)  the zero-std share by G over prompts of mixed difficulty
    forecast = pilot_forecast(read_run_config("grpo.yaml"), "pilot/trainer_state.json")   a config + a pilot
    forecast.end                          the reward at the run's end, with a calibrated interval (`_end_reward`)
    pilot_headline(forecast)              the answer first: verdict, changes in the config's keys, forecast
    pilot_forecast(setup, pilot, prior=["run_a.jsonl", "run_b.jsonl"]).prior   the end level of finished runs (`_prior`)
    fall_chance(margin_grid(forecast, lrs, Ts))   the chance one run falls over an (lr, T) grid (`_fall_chance`)
    collapse_grid(forecast, lrs, Ts)      the collapse model's risk over the grid (`_collapse_risk`)

Everything `predict` computes lives here; a pilot forecast fits its log with `gspo_dynamics.fit`, a layer below.
"""

from gspo_dynamics.predict._config_forecast import (
    ConfigForecast, config_forecast, hparams_text, stability_grid, stiffness_bounds,
)
from gspo_dynamics.predict._configs import RunSetup, load_config_file, read_run_config
from gspo_dynamics.predict._headline import (
    AT_RISK_CHANCE, AT_RISK_SHARE, MARGIN_FACTOR, SCHEMA_VERSION, VERDICTS, Change, Headline, config_headline, lr_change,
    pilot_steps, refresh_changes,
)
from gspo_dynamics.predict._config_keys import ConfigKeys
from gspo_dynamics.predict._zero_std import ZeroStdAnswer, zero_std_answer
from gspo_dynamics.predict._bandit import T_MAX, as_json_ready, heavy_ball, predict_bandit, summary_lines
from gspo_dynamics.predict._ratios import (
    NO_CLIP,
    SEQUENCE_RATIO,
    SIGN_BLIND_CLIP,
    SLOPE_STEPS,
    RatioRunConfig,
    predicted_ratio_metrics,
)
from gspo_dynamics.predict._sweeps import OPTIMIZER_FIELDS, Sweep, load_sweep, make_hyperparams
from gspo_dynamics.predict._collapse_risk import COLLAPSE_SPREAD, SOLVED_SHARE, collapse_grid, kl_pull_risk
from gspo_dynamics.predict._end_reward import (
    INTERVAL_LEVEL, INTERVAL_MAX_RATIO, INTERVAL_MAX_REFRESH, INTERVAL_QUANTILES, EndReward, conformal_quantile,
    end_position, end_reward, end_window, has_scale, held_reward, reward_reach,
)
from gspo_dynamics.predict._fall_chance import FALL_CHANCE, chance_grid, fall_chance, fit_fall_chance, margin_grid
from gspo_dynamics.predict._pilot import PilotForecast, pilot_forecast
from gspo_dynamics.predict._pilot_headline import pilot_headline
from gspo_dynamics.predict._pilot_log import beta_from_logged_kl, config_disagrees, load_pilot
from gspo_dynamics.predict._printed_setup import setup_from_log
from gspo_dynamics.predict._prior import LEVEL as PRIOR_LEVEL
from gspo_dynamics.predict._prior import (
    PriorForecast,
    PriorRun,
    TaskPrior,
    interval_about,
    matched_levels,
    prior_forecast,
    prior_interval,
    shrunk_level,
    task_prior,
)

__all__ = [
    "AT_RISK_CHANCE",
    "AT_RISK_SHARE",
    "MARGIN_FACTOR",
    "SCHEMA_VERSION",
    "lr_change",
    "refresh_changes",
    "VERDICTS",
    "Change",
    "ConfigKeys",
    "Headline",
    "ZeroStdAnswer",
    "config_headline",
    "pilot_steps",
    "zero_std_answer",
    "ConfigForecast",
    "RunSetup",
    "config_forecast",
    "load_config_file",
    "read_run_config",
    "setup_from_log",
    "config_disagrees",
    "stability_grid",
    "stiffness_bounds",
    "NO_CLIP",
    "OPTIMIZER_FIELDS",
    "SEQUENCE_RATIO",
    "SIGN_BLIND_CLIP",
    "SLOPE_STEPS",
    "RatioRunConfig",
    "Sweep",
    "T_MAX",
    "as_json_ready",
    "hparams_text",
    "heavy_ball",
    "load_sweep",
    "make_hyperparams",
    "predict_bandit",
    "predicted_ratio_metrics",
    "summary_lines",
    "COLLAPSE_SPREAD",
    "FALL_CHANCE",
    "INTERVAL_LEVEL",
    "INTERVAL_MAX_RATIO",
    "INTERVAL_MAX_REFRESH",
    "INTERVAL_QUANTILES",
    "SOLVED_SHARE",
    "EndReward",
    "PilotForecast",
    "PRIOR_LEVEL",
    "PriorForecast",
    "PriorRun",
    "TaskPrior",
    "chance_grid",
    "collapse_grid",
    "conformal_quantile",
    "end_position",
    "end_reward",
    "end_window",
    "fall_chance",
    "fit_fall_chance",
    "has_scale",
    "held_reward",
    "kl_pull_risk",
    "beta_from_logged_kl",
    "load_pilot",
    "margin_grid",
    "pilot_forecast",
    "pilot_headline",
    "interval_about",
    "matched_levels",
    "prior_forecast",
    "prior_interval",
    "shrunk_level",
    "reward_reach",
    "task_prior",
]
