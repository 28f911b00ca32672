"""Reward trajectories: theory vs simulation in the three damping regimes, and the slow start.

Drawing only, into given axes: the runs and the theory behind each panel are computed by
`gspo_dynamics.experiments` (`regime_data`, `slow_start_data`; their module docstring says what they are).
"""

from __future__ import annotations

import numpy as np

from gspo_dynamics.experiments import RegimeCurves, SlowStart
from gspo_dynamics.plots import style

Z_BAND = 2.0  # the shaded band is the mean +- 2 standard errors over seeds


def draw_regime(ax, c: RegimeCurves, *, ylabel: bool = True) -> None:
    t = c.steps
    ax.fill_between(t, c.mean - Z_BAND * c.se, c.mean + Z_BAND * c.se, color=style.DATA, alpha=0.3, lw=0,
                    label=f"simulation: mean $\\pm${Z_BAND:g} s.e.")
    ax.plot(t, c.mean, color=style.DATA, lw=3.0, alpha=0.6)  # wide and underneath: visible where the curves agree
    ax.plot(t, c.theory, color=style.THEORY, ls="--", label="theory: exact expected map")
    fitted = ""
    if c.fit is not None:
        ax.plot(t, c.fit.predict(t), color=style.FIT, ls=":", lw=1.8, label="closed-form oscillator fit")
        fitted = f", fit $R^2$ = {c.fit.r_squared:.3f}"
    ax.set_title(f"{c.label}\n$\\mu$ = {c.hp.momentum:.3g}, $\\eta$ = {c.hp.lr:g}, $\\zeta$ = {c.zeta:.2f}{fitted}")
    ax.set_xlabel("optimizer step")
    if ylabel:
        ax.set_ylabel("expected reward R")


def draw_slow_start(ax, d: SlowStart, *, zoom: int | None = None) -> None:
    """The simulated curve and both fits; `zoom` restricts to the first `zoom` steps."""
    n = len(d.steps) if zoom is None else int(np.searchsorted(d.steps, zoom, side="right"))
    t = d.steps[:n]
    ax.plot(t, d.reward[:n], "o" if zoom else "-", color=style.DATA, ms=3, lw=2.5, alpha=0.7, label="simulation (expected dynamics)")
    ax.plot(t, d.oscillator.predict(t), color=style.FIT, label=f"oscillator fit from rest, $v_0 = 0$ ($R^2$ = {d.oscillator.r_squared:.4f})")
    ax.plot(t, d.exponential.predict(t), color=style.THEORY, ls="--",
            label=f"single exponential fit ($R^2$ = {d.exponential.r_squared:.4f})")
    if zoom:  # the quadratic is the t -> 0 expansion: drawn over the first third of the zoom only
        early = t <= zoom / 3
        ax.plot(t[early], d.quadratic[:n][early], color=style.ALT, ls=":", lw=2.0,
                label="slow start $R_0 + k(R_\\infty - R_0)t^2/2m$ (fitted k, m)")
        ax.set_ylim(d.reward[0] - 0.01, d.reward[n - 1] + 0.02)
        ax.set_title(f"first {zoom} steps")
    else:
        ax.set_title(f"$\\mu$ = {d.hp.momentum:g}, $\\eta$ = {d.hp.lr:g}, T = {d.hp.refresh_interval}, G $\\to\\infty$")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("expected reward R")
