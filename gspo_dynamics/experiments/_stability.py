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

from gspo_dynamics.sim import simulated_critical_refresh_interval
from gspo_dynamics.theory import continuous, linear
from gspo_dynamics.theory.bandit import TwoArmBandit, fixed_point, stiffness_partials
from gspo_dynamics.theory.hyperparams import SGD, Hyperparams


REGIMES = ("overdamped", "oscillatory", "unstable")  # codes 0, 1, 2 of `PhaseDiagram.regime`


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
