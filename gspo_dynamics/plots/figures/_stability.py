"""Stability phase diagram: learning rate x refresh interval, one panel per momentum.

For the two-armed bandit (`theory.bandit`) with heavy-ball SGD, the linearised update around the
fixed point has stale and fresh stiffnesses a, b per unit learning rate (`stiffness_partials`),
independent of eta, mu and T at G -> infinity with no correction. Three boundaries are drawn:

  exact discrete   first T with rho(M(T)) > 1, M the one-period monodromy (`theory.linear`);
  continuous rule  first T with c(T) <= 0, T >= 1 + 2 (1 - mu) / (eta a)  (`theory.continuous`);
  simulated        first T whose expected dynamics, started 1e-6 from z*, grow (`sim.stability`).

The background is the exact regime of every (eta, T) cell (`linear.discrete_regime`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from matplotlib.colors import ListedColormap, to_rgb
from matplotlib.patches import Patch

from gspo_dynamics.plots import style
from gspo_dynamics.sim import simulated_critical_refresh_interval
from gspo_dynamics.theory import continuous, linear
from gspo_dynamics.theory.bandit import TwoArmBandit, fixed_point, stiffness_partials
from gspo_dynamics.theory.hyperparams import SGD, Hyperparams

REGIMES = ("overdamped", "oscillatory", "unstable")  # codes 0, 1, 2 of `PhaseDiagram.regime`
REGIME_COLORS = (style.OK, style.COLORS["sky_blue"], style.THEORY)
REGIME_ALPHA = 0.22  # light fills, so the boundary lines and points stay readable on top


@dataclass(frozen=True)
class PhaseDiagram:
    """One momentum's panel. T_c entries are 0 (`linear.STABLE`) where no T <= t_max is unstable."""

    momentum: float
    lr: np.ndarray  # (n,) learning rates of the theory grid
    intervals: np.ndarray  # (t_max,) T = 1..t_max
    regime: np.ndarray  # (t_max, n) int codes into REGIMES
    exact: np.ndarray  # (n,) exact discrete T_c
    continuous: np.ndarray  # (n,) continuous-rule T_c
    sim_lr: np.ndarray  # (k,) learning rates simulated
    simulated: np.ndarray  # (k,) simulated T_c


def stiffness(bandit: TwoArmBandit, base: Hyperparams) -> tuple[float, float]:
    """(a, b) at the fixed point of `base` (its lr, momentum and T do not enter at G -> infinity)."""
    fp = fixed_point(bandit, base)
    return stiffness_partials(fp.logit, bandit, base)


def phase_diagram_data(bandit: TwoArmBandit, base: Hyperparams, momenta: Sequence[float], lr: np.ndarray,
                       sim_lr: np.ndarray, t_max: int, sim_horizon: int | None = None) -> list[PhaseDiagram]:
    """Theory on the (lr, T) grid and the simulated boundary at `sim_lr`, for each momentum.

    All simulated configurations (momenta x sim_lr x T) run as one batch; sim_horizon as in
    `simulated_critical_refresh_interval` (None: its default, 100 periods of t_max).
    """
    a, b = stiffness(bandit, base)
    lr = np.asarray(lr, dtype=float)
    sim_lr = np.asarray(sim_lr, dtype=float)
    configs = [dataclasses.replace(base, lr=float(eta), optimizer=SGD(momentum=float(mu))) for mu in momenta for eta in sim_lr]
    simulated = np.asarray(simulated_critical_refresh_interval(bandit, configs, t_max, start="local", horizon=sim_horizon))
    simulated = simulated.reshape(len(momenta), len(sim_lr))
    panels = []
    for i, mu in enumerate(momenta):
        regime = np.stack([linear.discrete_regime(linear.monodromy(a, b, lr, mu, T)) for T in range(1, t_max + 1)])
        codes = np.select([regime == name for name in REGIMES], range(len(REGIMES)))  # (t_max, n)
        panels.append(PhaseDiagram(
            momentum=float(mu), lr=lr, intervals=np.arange(1, t_max + 1), regime=codes,
            exact=linear.critical_refresh_interval(a, b, lr, mu, t_max),
            continuous=continuous.critical_refresh_interval(a, b, lr, mu, t_max),
            sim_lr=sim_lr, simulated=simulated[i]))
    return panels


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

