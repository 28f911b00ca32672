"""Fitting the closed-form trajectories of the reduced-order model to reward curves.

    fit = fit_trajectory(steps, reward)      # model selection, regime, stderr, inertia, oscillation
    imp = implications(fit, hparams)         # curvature, damping margin, safe refresh interval, plateau
"""

from gspo_dynamics.fit._closed_form import FitResult, fit_exponential, fit_oscillator
from gspo_dynamics.fit._implications import Estimate, Implications, implications
from gspo_dynamics.fit._periodogram import fisher_g, periodic_component
from gspo_dynamics.fit._trajectory import TrajectoryFit, fit_trajectory

__all__ = [
    "Estimate",
    "FitResult",
    "Implications",
    "TrajectoryFit",
    "fit_exponential",
    "fisher_g",
    "fit_oscillator",
    "fit_trajectory",
    "implications",
    "periodic_component",
]
