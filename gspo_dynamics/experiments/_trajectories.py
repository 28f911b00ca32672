"""Reward trajectories: theory vs simulation in the three damping regimes, and the slow start.

Regimes (two-armed bandit, finite G, T = 1). The damping ratio of the continuous rule is
zeta = c / (2 sqrt(m k)) with m = (1 + mu)/2, c = 1 - mu, k = eta (a + b) (`theory.continuous`);
zeta = 1 (critical) is solved for mu at fixed eta:  (1 - mu)^2 = 2 (1 + mu) eta (a + b). Each panel
shows the mean over seeds of the stochastic simulation (`sim.simulate`), the exact finite-G
expected map from pi_ref (`theory.nonlinear.expected_trajectory`), and the closed-form oscillator
fitted to the simulated mean (`fit.fit_oscillator`).

Slow start (expected dynamics, G -> infinity, heavy momentum, overdamped): the oscillator from
rest starts quadratically, R - R_0 ~ k (R_inf - R_0) t^2 / (2m) (`trajectory.slow_start_quadratic`),
which the single exponential R_inf - (R_inf - R_0) exp(-t/tau), linear at t = 0, cannot follow.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from gspo_dynamics.fit import FitResult, fit_exponential, fit_oscillator
from gspo_dynamics.sim import BanditTask, simulate
from gspo_dynamics.theory import continuous
from gspo_dynamics.theory.bandit import TwoArmBandit, fixed_point, stiffness_partials
from gspo_dynamics.theory.hyperparams import SGD, Hyperparams
from gspo_dynamics.theory.nonlinear import expected_trajectory
from gspo_dynamics.theory.trajectory import Oscillator, slow_start_quadratic


def critical_momentum(a: float, b: float, lr: float) -> float:
    """mu in [0, 1) with continuous damping ratio exactly 1 at T = 1; ConfigError-free: the root
    exists whenever zeta(mu = 0) > 1 (zeta falls monotonically to 0 as mu -> 1)."""
    def zeta_minus_one(mu):
        return float(continuous.damping_ratio(a, b, lr, mu, 1)) - 1.0
    return brentq(zeta_minus_one, 0.0, 1.0 - 1e-9, xtol=1e-12)


@dataclass(frozen=True)
class RegimeCurves:
    label: str  # "overdamped" | "critically damped" | "underdamped"
    hp: Hyperparams
    zeta: float  # continuous damping ratio
    steps: np.ndarray  # (n,) optimizer steps
    mean: np.ndarray  # (n,) mean reward over seeds
    se: np.ndarray  # (n,) standard error of the mean
    theory: np.ndarray  # (n,) exact finite-G expected map
    fit: FitResult | None  # closed-form oscillator fitted to `mean` (None if not asked for)


def regime_configs(bandit: TwoArmBandit, base: Hyperparams, lr: float, underdamped_momentum: float) -> dict[str, Hyperparams]:
    """Over-, critically and under-damped configurations at learning rate `lr` (T = 1)."""
    fp = fixed_point(bandit, base)
    a, b = stiffness_partials(fp.logit, bandit, base)
    mu_c = critical_momentum(a, b, lr)
    return {name: dataclasses.replace(base, lr=lr, optimizer=SGD(momentum=mu), refresh_interval=1)
            for name, mu in (("overdamped", 0.0), ("critically damped", mu_c), ("underdamped", underdamped_momentum))}


def _fit(fitter, t, r) -> FitResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fitter(t, r)


def regime_data(bandit: TwoArmBandit, configs: dict[str, Hyperparams], *, steps: int, seeds: int, seed: int = 0,
                fit: bool = True) -> list[RegimeCurves]:
    """Simulate every configuration (one batch: they share G and everything but lr and momentum).

    fit=False skips the closed-form fits (`RegimeCurves.fit` is None): they dominate the cost on
    noisy curves (~4 s each).
    """
    hps = list(configs.values())
    run = simulate(BanditTask.from_theory(bandit), hps, steps=steps, seeds=seeds, seed=seed)
    curves = run.mean_reward  # (steps + 1, C, S)
    out = []
    for i, (label, hp) in enumerate(configs.items()):
        fp = fixed_point(bandit, hp)
        a, b = stiffness_partials(fp.logit, bandit, hp)
        mean = curves[:, i, :].mean(axis=1)
        se = curves[:, i, :].std(axis=1, ddof=1) / math.sqrt(seeds)
        t = run.steps.astype(float)
        out.append(RegimeCurves(
            label=label, hp=hp, zeta=float(continuous.damping_ratio(a, b, hp.lr, hp.momentum, 1)), steps=run.steps,
            mean=mean, se=se, theory=expected_trajectory(bandit, hp, hp.lr, hp.momentum, steps)[run.steps],
            fit=_fit(fit_oscillator, t, mean) if fit else None))
    return out


@dataclass(frozen=True)
class SlowStart:
    hp: Hyperparams
    steps: np.ndarray  # (n,)
    reward: np.ndarray  # (n,) simulated expected dynamics
    oscillator: FitResult
    exponential: FitResult
    quadratic: np.ndarray  # (n,) R_0 + k (R_inf - R_0) t^2 / (2m) of the fitted oscillator


def slow_start_data(bandit: TwoArmBandit, hp: Hyperparams, *, steps: int) -> SlowStart:
    """Expected dynamics (G -> infinity) of `hp` and both closed forms fitted to it."""
    run = simulate(BanditTask.from_theory(bandit), [hp], steps=steps, expected=True)
    r = run.mean_reward[:, 0, 0]
    t = run.steps.astype(float)
    osc, expo = _fit(lambda t, r: fit_oscillator(t, r, v0=0.0), t, r), _fit(fit_exponential, t, r)  # from rest
    q = osc.params  # fit_oscillator fixes the mass to 1: damping and stiffness are per unit mass
    fitted = Oscillator(mass=1.0, damping=q["damping"], stiffness=q["stiffness"])
    return SlowStart(hp=hp, steps=run.steps, reward=r, oscillator=osc, exponential=expo,
                     quadratic=slow_start_quadratic(fitted, t, q["r_inf"], q["r0"]))
