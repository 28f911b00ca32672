"""The `predict --plot` figure: the stability map of a config, with its point, and (with a pilot)
the pilot's reward and the fitted curve it implies.

Without a pilot the map is over the stiffness per step eta K and the refresh interval T (a config
fixes T and mu, not eta K); with a pilot it is over the learning rate and T, the pilot's measured
stiffness scaled with the learning rate (`predict.stability_grid`). Drawing only: the numbers come
from `predict` and `fit`.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from gspo_dynamics.plots.style import DATA, FIT, THEORY, WARN, figure_style, note
from gspo_dynamics.predict import stability_grid, stiffness_bounds

REFRESH_INTERVALS = np.arange(1, 65)
LR_SPAN = 100.0  # the map covers lr / LR_SPAN .. lr x LR_SPAN around the config's
PANEL = (4.2, 3.2)  # inches


def _config_map(ax, forecast) -> None:
    hp = forecast.setup.hparams
    bounds = stiffness_bounds(forecast.momentum, REFRESH_INTERVALS)
    ax.fill_betweenx(REFRESH_INTERVALS, bounds, bounds.max() * 10, color=WARN, alpha=0.25, lw=0, label="unstable")
    ax.plot(bounds, REFRESH_INTERVALS, color=THEORY, lw=1.2, label="x_max(T): exact discrete")
    ax.axhline(hp.refresh_interval, color=DATA, ls="--", lw=0.8, label=f"this config: T = {hp.refresh_interval}")
    ax.set(xscale="log", yscale="log", xlabel="stiffness per step eta K (needs a pilot)", ylabel="refresh interval T",
           title=f"stability, mu = {forecast.momentum:g}")
    ax.legend(fontsize=6, loc="lower left")


def _lr_map(ax, forecast) -> None:
    hp, imp = forecast.config.setup.hparams, forecast.implications
    kappa = None if imp.stiffness_per_step is None else imp.stiffness_per_step.value
    if not kappa or kappa <= 0:
        note(ax, "the pilot's fit gives no stiffness:\nno (lr, T) map")
        return
    lrs = np.geomspace(hp.lr / LR_SPAN, hp.lr * LR_SPAN, 121)
    unstable = stability_grid(kappa / hp.lr, forecast.config.momentum, lrs, REFRESH_INTERVALS)
    ax.pcolormesh(lrs, REFRESH_INTERVALS, unstable, cmap="Oranges", vmin=0, vmax=2.5, shading="nearest")
    ax.plot(hp.lr, hp.refresh_interval, "o", color=THEORY, ms=6, label="this config")
    ax.set(xscale="log", yscale="log", xlabel="learning rate", ylabel="refresh interval T",
           title="stability map from the pilot (shaded: unstable)")
    if forecast.max_safe_lr is None:
        note(ax, "premises fail: the linear map\nis shown, not trusted:\n" + forecast.lr_note[:60])
    ax.legend(fontsize=6, loc="lower left")


def _pilot_curve(ax, forecast) -> None:
    steps, reward = forecast.pilot
    fit = forecast.fit
    ax.plot(steps, reward, "o", color=DATA, ms=2.5, label="pilot")
    t = np.linspace(steps.min(), steps.min() + 4 * (steps.max() - steps.min()), 200)
    curve = fit.predict(t)
    low, high = curve - 2 * fit.residual_std, curve + 2 * fit.residual_std
    if forecast.reward_range is not None:  # the reward cannot leave its range, whatever the fit extrapolates
        curve, low, high = (np.clip(c, *forecast.reward_range) for c in (curve, low, high))
        ax.axhline(forecast.reward_range[1], color=DATA, lw=0.6, ls=":")
    ax.plot(t, curve, color=FIT, lw=1.2, label=f"{fit.model} fit")
    ax.fill_between(t, low, high, color=FIT, alpha=0.15, lw=0, label="+- 2 noise std")
    ax.set(xlabel="step", ylabel="reward", title="the pilot and its forecast curve")
    ax.legend(fontsize=6, loc="lower right")


def stability_map_figure(forecast) -> Figure:
    """One panel (a config-only forecast) or two (pilot-calibrated); not saved."""
    pilot = hasattr(forecast, "implications")
    with figure_style():
        fig = Figure(figsize=(PANEL[0] * (2 if pilot else 1), PANEL[1]), layout="constrained")
        axes = fig.subplots(1, 2 if pilot else 1, squeeze=False)[0]
        if pilot:
            _lr_map(axes[0], forecast)
            _pilot_curve(axes[1], forecast)
        else:
            _config_map(axes[0], forecast)
    return fig
