"""Fitting the closed-form trajectories of the reduced-order model to reward curves."""

from gspo_dynamics.fit._closed_form import FitResult, fit_exponential, fit_oscillator

__all__ = ["FitResult", "fit_exponential", "fit_oscillator"]
