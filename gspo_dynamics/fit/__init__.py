"""Fitting curves to a run's log: the closed-form trajectories of the reduced-order model, their implications,
the published reward-curve laws, and a curve's fall below its running best.

    fit = fit_trajectory(steps, reward)      # model selection, regime, stderr, inertia, oscillation
    imp = implications(fit, hparams, reward_range=(0, 1))   # curvature, damping margin, safe refresh
                                             # interval, plateau (no threshold at a bound plateau)
    fit_sigmoid_scalerl(steps, reward).predict(later)   # the published laws, as forecast baselines (`_laws`)
    reward_fall(steps, reward, (0, 1))       # did the curve lose reward it had (`_fall`)
    with warm_start(fit): fit_trajectory(...)   # a grown curve refitted from fit's optima (the live guard, `_warm`)

What a config and a pilot log forecast (the pilot forecast, its end reward, prior, collapse risk and fall
chance) is `gspo_dynamics.predict`, a layer above.
"""

from gspo_dynamics.fit._closed_form import FitResult, fit_exponential, fit_oscillator
from gspo_dynamics.fit._fall import BLOCK, COLLAPSE_SHARE, FALL_SHARE, Z_FALL, Fall, reward_fall
from gspo_dynamics.fit._identified import check_reward_range, plateau_unidentified, reward_reach_of, within_reach
from gspo_dynamics.fit._implications import (
    Estimate, Implications, implications, max_safe_range_text, max_safe_text,
)
from gspo_dynamics.fit._laws import (
    HELD_STEPS, fit_entropy_law, fit_exponential_saturation, fit_sigmoid_scalerl, held_level, last_value,
    scalerl_sigmoid,
)
from gspo_dynamics.fit._periodogram import (
    MIN_CYCLES,
    PERIODIC_P,
    SWING_NOISE,
    SWING_RANGE,
    alternation,
    fisher_g,
    oscillation_confidence,
    periodic_component,
    reward_span,
)
from gspo_dynamics.fit._trajectory import EVIDENCE_BIC, EXTRAPOLATION_LIMIT, TrajectoryFit, fit_trajectory
from gspo_dynamics.fit._uncertainty import row_scatter
from gspo_dynamics.fit._truncation import TRUNCATION_HIGH, TRUNCATION_SOME, late_truncation
from gspo_dynamics.fit._warm import warm_start
from gspo_dynamics.fit._windows import LENGTH_SHRINK, MIN_WINDOW, WINDOW_FRACTION, change, mean_se, shrank, window

__all__ = [
    "BLOCK",
    "COLLAPSE_SHARE",
    "FALL_SHARE",
    "EXTRAPOLATION_LIMIT",
    "HELD_STEPS",
    "Z_FALL",
    "Estimate",
    "Fall",
    "FitResult",
    "Implications",
    "TrajectoryFit",
    "LENGTH_SHRINK",
    "MIN_WINDOW",
    "WINDOW_FRACTION",
    "change",
    "mean_se",
    "shrank",
    "window",
    "TRUNCATION_HIGH",
    "TRUNCATION_SOME",
    "late_truncation",
    "EVIDENCE_BIC",
    "MIN_CYCLES",
    "PERIODIC_P",
    "SWING_NOISE",
    "SWING_RANGE",
    "alternation",
    "oscillation_confidence",
    "reward_span",
    "row_scatter",
    "check_reward_range",
    "fisher_g",
    "fit_entropy_law",
    "fit_exponential",
    "fit_exponential_saturation",
    "fit_oscillator",
    "fit_sigmoid_scalerl",
    "fit_trajectory",
    "held_level",
    "implications",
    "last_value",
    "max_safe_range_text",
    "max_safe_text",
    "periodic_component",
    "plateau_unidentified",
    "reward_reach_of",
    "reward_fall",
    "scalerl_sigmoid",
    "warm_start",
    "within_reach",
]
