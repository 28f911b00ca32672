"""The `predict --plot` figure: the stability map of a config, with its point, and (with a pilot)
the pilot's reward and the fitted curve it implies, to the run's end where its length is known, with the
reward there and its calibrated interval (`predict.end_reward`).

The axes are named in the config's own keys (`predict.ConfigKeys`): T is the optimizer steps per rollout its
keys give (TRL steps_per_generation x num_iterations / gradient_accumulation_steps, ...), the learning rate is
TRL's `learning_rate`, verl's `actor_rollout_ref.actor.optim.lr`, our trainer's `lr`. Without a pilot the map is
over the stiffness per step eta K = lr x curvature and T: a config fixes T and mu, not the curvature, so the lr
scale is not identified and the figure says so. With a pilot it is over the config's learning rate and T, the
pilot's stiffness per unit lr converting eta K to lr: kappa / (m_p lr), m_p the pilot's mean share of the peak lr
under the config's schedule (`predict._schedule`), read back from the printed bound as x_max(T_config) /
max_safe_lr, so the map's edge at the config's T is that bound. Shaded, with its edge lr_max(T) = x_max(T) /
(kappa / (m_p lr)) (the exact discrete bound, re-scaled): the linear model (`predict.stability_grid`, where its
premises hold; the fall chance's linear rule, `predict.margin_grid`, scales kappa / lr without m_p, so under a
decaying schedule its contours are not placed against this edge);
hatched, the collapse model's risk (`predict.collapse_grid`: the displacement between
samplers past S H / (1 - z), or past the pilot's own D where the pilot kept its reward, or the pilot's
entropy overshoot scaled to the lr); dotted, the chance that one run loses its reward (`predict.fall_chance`) at
10%, 50% and 90%. Drawing only: the numbers come
from `predict` and `fit`.
"""

from __future__ import annotations

import textwrap

import numpy as np
from matplotlib.figure import Figure

from gspo_dynamics.predict import (
    INTERVAL_LEVEL, chance_grid, collapse_grid, end_window, stability_grid, stiffness_bounds,
)
from gspo_dynamics.plots.style import DATA, FIT, THEORY, WARN, figure_style, note

REFRESH_INTERVALS = np.arange(1, 65)
LR_SPAN = 100.0  # the map covers lr / LR_SPAN .. lr x LR_SPAN around the config's
PANEL = (4.2, 3.2)  # inches (the pilot panels 1 inch taller: the map's legend goes below it)
NOTE_WIDTH = 60  # characters per line of a note drawn on a panel (6 pt across most of its width)
FALL_CHANCE_LEVELS = (0.1, 0.5, 0.9)  # the chance's contours drawn on the (lr, T) map
LABEL_WIDTH = 52  # characters per line of the eta K axis's label (9 pt across the panel)
T_LABEL_WIDTH = 40  # characters per line of the T axis's label (the panel is less tall than wide)
# T in each framework's keys, as `predict._config_keys` maps them (its module docstring)
REFRESH_KEYS = {
    "trl": "steps_per_generation x num_iterations / gradient_accumulation_steps",
    "verl": "ppo_epochs x data.train_batch_size / ppo_mini_batch_size",
    "trainer": "steps_per_generation x num_iterations",
    "openrlhf": "max_epochs x rollout_batch_size x n_samples_per_prompt / train_batch_size",
}


def _lr_key(setup) -> str:
    """The learning rate's key in the config's framework (`ConfigKeys.lr`); "lr" for the theory's own names."""
    return "lr" if setup.keys is None else setup.keys.lr


def _refresh_label(setup) -> str:
    """The T axis: the optimizer steps per rollout, with the config's keys that make it."""
    keys = "" if setup.keys is None else f" ({REFRESH_KEYS[setup.keys.framework]})"
    return textwrap.fill(f"optimizer steps per rollout T{keys}", T_LABEL_WIDTH)


def _config_map(ax, forecast) -> None:
    """Over (eta K, T): a config alone does not fix the curvature, so its learning rate has no place on this axis."""
    setup = forecast.setup
    bounds = stiffness_bounds(forecast.momentum, REFRESH_INTERVALS)
    ax.fill_betweenx(REFRESH_INTERVALS, bounds, bounds.max() * 10, color=WARN, alpha=0.25, lw=0, label="unstable")
    ax.plot(bounds, REFRESH_INTERVALS, color=THEORY, lw=1.2, label="x_max(T): exact discrete")
    ax.axhline(setup.hparams.refresh_interval, color=DATA, ls="--", lw=0.8,
               label=f"this config: T = {setup.hparams.refresh_interval}")
    xlabel = (textwrap.fill(f"stiffness per step eta K = {_lr_key(setup)} x curvature", LABEL_WIDTH)
              + "\n(the lr scale is not identified without a pilot)")
    ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel=_refresh_label(setup),
           title=f"stability, mu = {forecast.momentum:g} (no pilot)")
    ax.legend(fontsize=6, loc="lower left")


def _lr_map(ax, forecast) -> None:
    """Shaded: the linear model's unstable region (the pilot's stiffness scaled with lr), where its premises
    hold; hatched, with its edge: the collapse model's risk (`predict.collapse_grid`)."""
    setup, imp = forecast.config.setup, forecast.implications
    hp = setup.hparams
    kappa = None if imp.stiffness_per_step is None else imp.stiffness_per_step.value
    lrs = np.geomspace(hp.lr / LR_SPAN, hp.lr * LR_SPAN, 121)
    collapse = collapse_grid(forecast, lrs, REFRESH_INTERVALS)
    if (not kappa or kappa <= 0) and collapse is None:
        note(ax, "the pilot gives no stiffness and no drift:\nno (lr, T) map")
        return
    if kappa and kappa > 0 and forecast.max_safe_lr is not None:
        # the pilot's stiffness per unit (peak) lr, eta K = per_lr x lr: kappa / (m_p lr) as the printed bound has it
        per_lr = float(stiffness_bounds(forecast.config.momentum, [hp.refresh_interval])[0]) / forecast.max_safe_lr
        unstable = stability_grid(per_lr, forecast.config.momentum, lrs, REFRESH_INTERVALS)
        ax.pcolormesh(lrs, REFRESH_INTERVALS, unstable, cmap="Oranges", vmin=0, vmax=2.5, shading="nearest")
        edge = stiffness_bounds(forecast.config.momentum, REFRESH_INTERVALS) / per_lr  # x_max(T) in lr units
        ax.plot(edge, REFRESH_INTERVALS, color=THEORY, lw=1.2,
                label="largest stable lr at each T: exact discrete x_max(T) over the pilot's stiffness per unit lr")
        top = ax.secondary_xaxis("top", functions=(lambda lr: lr * per_lr, lambda x: x / per_lr))
        top.set_xlabel(f"stiffness per step eta K = {per_lr:.3g} x {_lr_key(setup)} (the pilot's curvature)",
                       fontsize=7)
        if forecast.lost:  # the linear model's reading of a fall's curve: no safe region
            _legend_note(ax, "the pilot lost reward at its own lr: the shading is the linear model's reading of that "
                             "fall, no safe region")
    else:
        _legend_note(ax, "linear map withheld: " + forecast.lr_note.split(":")[0])
    if collapse is not None and collapse.any():
        ax.contourf(lrs, REFRESH_INTERVALS, collapse.astype(float), levels=[0.5, 1.5], colors="none", hatches=["///"])
        ax.contour(lrs, REFRESH_INTERVALS, collapse.astype(float), levels=[0.5], colors=[WARN], linewidths=1.0)
        ax.plot([], [], color=WARN, lw=1.0, label="collapse risk (hatched): the displacement past its limit or the "
                                                  "entropy overshoot")
    _fall_chance_lines(ax, forecast, lrs)
    ax.plot(hp.lr, hp.refresh_interval, "o", color=DATA, mec="white", ms=6,
            label=f"this config: {_lr_key(setup)} {hp.lr:.3g}, T = {hp.refresh_interval}")
    ax.set(xscale="log", yscale="log", xlabel=f"learning rate (config key {_lr_key(setup)})",
           ylabel=_refresh_label(setup),
           title="stability map from the pilot (shaded: linear model)", xlim=(lrs[0], lrs[-1]),
           ylim=(REFRESH_INTERVALS[0] / 1.25, REFRESH_INTERVALS[-1]))  # the whole domain, a T = 1 point whole
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(0.0, -0.2), frameon=False)  # below: the map stays clear


def _legend_note(ax, text: str) -> None:
    """A note on the map, wrapped, as a legend entry without a mark (below the panel, off the map)."""
    ax.plot([], [], " ", label=textwrap.fill(text, NOTE_WIDTH))


def _fall_chance_lines(ax, forecast, lrs) -> None:
    """Dotted, labelled: where the chance that one run loses its reward (`predict.fall_chance` of the verdicts' margin)
    crosses FALL_CHANCE_LEVELS; only where the pilot measured drift and entropy (what the chance was fitted on)."""
    chance = chance_grid(forecast, lrs, REFRESH_INTERVALS)
    if chance is None:
        return
    levels = [v for v in FALL_CHANCE_LEVELS if chance.min() < v < chance.max()]
    if levels:
        lines = ax.contour(lrs, REFRESH_INTERVALS, chance, levels=levels, colors=[FIT], linewidths=0.7, linestyles="dotted")
        ax.clabel(lines, fmt=lambda v: f"{v:.0%}", fontsize=6)
        ax.plot([], [], color=FIT, lw=0.7, ls="dotted", label="chance a run falls (predict.fall_chance)")


def _pilot_curve(ax, forecast) -> None:
    steps, reward = forecast.pilot
    fit = forecast.fit
    ax.plot(steps, reward, "o", color=DATA, ms=2.5, label="pilot")
    end = forecast.end
    # the fit is drawn as far as an answer reaches: to the run's end where that is forecast, else over the pilot only
    # (an end no band calibrates, or a length not known, is not drawn any more than printed)
    t = np.linspace(steps.min(), end.run_steps if end is not None and end.identified else steps.max(), 200)
    curve = fit.predict(t)
    low, high = curve - 2 * fit.residual_std, curve + 2 * fit.residual_std
    if forecast.reward_range is not None:  # the reward cannot leave its range, whatever the fit extrapolates
        curve, low, high = (np.clip(c, *forecast.reward_range) for c in (curve, low, high))
        ax.axhline(forecast.reward_range[1], color=DATA, lw=0.6, ls=":")
    ax.plot(t, curve, color=FIT, lw=1.2, label=f"{fit.model} fit")
    ax.fill_between(t, low, high, color=FIT, alpha=0.15, lw=0, label="+- 2 noise std")
    if end is not None and end.identified:  # the reward over the run's last sixth, with its interval where there is one
        window = end_window(end.run_steps)
        mid = (window[0] + window[-1]) / 2
        if end.interval is not None:
            ax.errorbar([mid], [end.value], yerr=[[end.value - end.interval[0]], [end.interval[1] - end.value]], fmt="s",
                        color=FIT, ms=4, capsize=3, label=f"run's end, {INTERVAL_LEVEL:.0%} interval")
        else:
            ax.plot([mid], [end.value], "s", color=FIT, ms=4, label="run's end (no interval)")
    forecast_drawn = end is not None and end.identified
    ax.set(xlabel="step", ylabel="reward", title="the pilot and its forecast curve" if forecast_drawn else "the pilot and its fit")
    ax.legend(fontsize=6, loc="lower right")


def stability_map_figure(forecast) -> Figure:
    """One panel (a config-only forecast) or two (pilot-calibrated); not saved."""
    pilot = hasattr(forecast, "implications")
    with figure_style():
        fig = Figure(figsize=(PANEL[0] * (2 if pilot else 1), PANEL[1] + (1.0 if pilot else 0.0)), layout="constrained")
        axes = fig.subplots(1, 2 if pilot else 1, squeeze=False)[0]
        if pilot:
            _lr_map(axes[0], forecast)
            _pilot_curve(axes[1], forecast)
        else:
            _config_map(axes[0], forecast)
    return fig
