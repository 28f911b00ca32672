"""Predictions from the theory alone, above `theory/` and below the testbeds (no torch).

    predict_bandit(bandit, hp)            the bandit's regime, margins, thresholds, plateau
    predicted_ratio_metrics(m, objective, clip_low, clip_high, config=...)
                                          a sequence run's ratio statistics at its measured spread
    load_sweep("sims/<name>.json")        a declarative grid of `Hyperparams` (sims/README.md)

This is the prediction layer: a forecast of a real run from a config and a pilot log lands here.
"""

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
    "NO_CLIP",
    "OPTIMIZER_FIELDS",
    "SEQUENCE_RATIO",
    "SIGN_BLIND_CLIP",
    "SLOPE_STEPS",
    "RatioRunConfig",
    "Sweep",
    "T_MAX",
    "as_json_ready",
    "heavy_ball",
    "load_sweep",
    "make_hyperparams",
    "predict_bandit",
    "predicted_ratio_metrics",
    "summary_lines",
]
