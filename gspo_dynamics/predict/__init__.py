"""Predictions from the theory alone, above `theory/` and below the testbeds (no torch).

    predict_bandit(bandit, hp)            the bandit's regime, margins, thresholds, plateau
    predicted_ratio_metrics(m, objective, clip_low, clip_high, config=...)
                                          a sequence run's ratio statistics at its measured spread
    load_sweep("sims/<name>.json")        a declarative grid of `Hyperparams` (sims/README.md)
    read_run_config("grpo.yaml")          a TRL / verl / our trainer's config in the theory's terms
    config_forecast(setup)                what that config alone determines about stability

This is the prediction layer; the pilot-calibrated forecast, which fits a log, is `fit.pilot_forecast`.
"""

from gspo_dynamics.predict._config_forecast import (
    ConfigForecast, config_forecast, hparams_text, stability_grid, stiffness_bounds,
)
from gspo_dynamics.predict._configs import RunSetup, load_config_file, read_run_config
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

__all__ = [
    "ConfigForecast",
    "RunSetup",
    "config_forecast",
    "load_config_file",
    "read_run_config",
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
]
