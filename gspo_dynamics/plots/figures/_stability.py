"""Stability phase diagram: learning rate x refresh interval, one panel per momentum.

Drawing only, into given axes: the runs and the theory behind each panel are computed by
`gspo_dynamics.experiments` (`phase_diagram_data`; its module docstring says what it is).
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap, to_rgb
from matplotlib.patches import Patch

from gspo_dynamics.experiments import REGIMES, PhaseDiagram
from gspo_dynamics.plots import style
from gspo_dynamics.theory import linear

REGIME_COLORS = (style.OK, style.COLORS["sky_blue"], style.THEORY)
REGIME_ALPHA = 0.22  # light fills, so the boundary lines and points stay readable on top


def _edges(x: np.ndarray) -> np.ndarray:
    """Cell edges of a log-spaced grid (geometric midpoints, extended by half a step)."""
    mid = np.sqrt(x[1:] * x[:-1])
    return np.concatenate([[x[0] ** 2 / mid[0]], mid, [x[-1] ** 2 / mid[-1]]])


def _masked(t: np.ndarray) -> np.ndarray:
    """T_c as floats with 'stable up to t_max' (0) hidden."""
    return np.where(t == linear.STABLE, np.nan, t).astype(float)


def draw_phase_diagram(ax, panel: PhaseDiagram, *, ylabel: bool = True) -> None:
    """Regime background, exact and continuous T_c lines and simulated T_c points on `ax`."""
    T = panel.intervals.astype(float)
    cmap = ListedColormap([(*to_rgb(c), REGIME_ALPHA) for c in REGIME_COLORS])
    ax.pcolormesh(_edges(panel.lr), np.concatenate([T - 0.5, [T[-1] + 0.5]]), panel.regime, cmap=cmap,
                  vmin=-0.5, vmax=len(REGIMES) - 0.5, shading="flat", rasterized=True)
    ax.plot(panel.lr, _masked(panel.exact), color=style.COLORS["black"], drawstyle="steps-mid", label="exact discrete $T_c$")
    ax.plot(panel.lr, _masked(panel.continuous), color=style.FIT, ls="--", drawstyle="steps-mid", label="continuous rule $T_c$")
    ax.plot(panel.sim_lr, _masked(panel.simulated), "o", color=style.ALT, ms=5, mfc="white", mew=1.5, label="simulated $T_c$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(panel.lr[0], panel.lr[-1])
    ax.set_ylim(0.5, T[-1] + 0.5)
    ax.set_title(f"momentum $\\mu$ = {panel.momentum:g}")
    ax.set_xlabel("learning rate $\\eta$")
    if ylabel:
        ax.set_ylabel("refresh interval T (steps)")
    ax.grid(False)


def regime_handles() -> list[Patch]:
    """Legend patches of the regime background."""
    return [Patch(facecolor=(*to_rgb(c), REGIME_ALPHA * 2), edgecolor="none", label=name) for name, c in zip(REGIMES, REGIME_COLORS)]

