"""Group size G: invariance of the mean reward curve, the 1/G stationary fluctuation, and the
share of zero-variance groups.

Mean curve. The deterministic trajectory depends on G only through the finite-group drive factor
(1 - 1/G) p (1 - p) of the mean baseline (`theory.finite_group`), so curves at G = 4 and 16 nearly
coincide; the exact finite-G expected map (`theory.nonlinear.expected_trajectory`) predicts the
residual gap. Fluctuation. Around the fixed point the stationary Var(R) is the discrete Lyapunov
solution with per-step gradient noise Var_k[g_k] / num_groups (`theory.fluctuations`), ~ 1/G.
Zero variance. A group of G Bernoulli(p) rewards is flat (all equal, zero advantage) with
probability p^G + (1 - p)^G (`finite_group.zero_variance_probability`); the simulated points
draw groups and count those whose advantages (`objectives.group_advantages`) are all zero.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from gspo_dynamics.objectives import group_advantages
from gspo_dynamics.sim import BanditTask, simulate
from gspo_dynamics.theory.bandit import TwoArmBandit
from gspo_dynamics.theory.finite_group import zero_variance_probability
from gspo_dynamics.theory.fluctuations import reward_variance_by_group_size
from gspo_dynamics.theory.hyperparams import Hyperparams
from gspo_dynamics.theory.nonlinear import expected_trajectory


@dataclass(frozen=True)
class GroupSizeData:
    steps: np.ndarray  # (n,) optimizer steps of the mean curves
    curve_groups: tuple[int, ...]  # G of the mean curves
    mean: np.ndarray  # (len(curve_groups), n) mean reward over seeds
    se: np.ndarray  # (len(curve_groups), n)
    theory: np.ndarray  # (len(curve_groups), n) exact finite-G expected map
    groups: np.ndarray  # (m,) G of the fluctuation panel
    variance: np.ndarray  # (m,) measured stationary Var(R)
    variance_se: np.ndarray  # (m,) its standard error (across seeds)
    lyapunov: np.ndarray  # (m,) predicted stationary Var(R)


def group_size_data(bandit: TwoArmBandit, base: Hyperparams, groups: Sequence[int], curve_groups: Sequence[int], *,
                    steps: int, seeds: int, seed: int = 0) -> GroupSizeData:
    """One stochastic batch per G (the simulator batches configs of equal G only).

    Var(R) per seed is the variance over the stationary second half of the run; the estimate is
    its mean over seeds (the across-seed spread of R, averaged over time, as in
    paper_repro/one_over_g.py, estimates the same stationary variance), with the s.e. over seeds.
    """
    task = BanditTask.from_theory(bandit)
    runs = {}
    for G in sorted(set(groups) | set(curve_groups)):
        hp = dataclasses.replace(base, group_size=int(G))
        runs[G] = (hp, simulate(task, [hp], steps=steps, seeds=seeds, seed=seed + G))
    record = runs[groups[0]][1].steps
    variance, variance_se = [], []
    for G in groups:
        tail = runs[G][1].mean_reward[steps // 2:, 0, :]  # (n_tail, S) stationary half
        across = tail.var(axis=1, ddof=1)  # (n_tail,) spread over seeds at each step
        variance.append(float(across.mean()))
        per_seed = tail.var(axis=0, ddof=1)  # (S,) time variance of each seed: for the error bar
        variance_se.append(float(per_seed.std(ddof=1) / math.sqrt(seeds)))
    mean = np.stack([runs[G][1].mean_reward[:, 0, :].mean(axis=1) for G in curve_groups])
    se = np.stack([runs[G][1].mean_reward[:, 0, :].std(axis=1, ddof=1) / math.sqrt(seeds) for G in curve_groups])
    theory = np.stack([expected_trajectory(bandit, runs[G][0], base.lr, base.momentum, steps) for G in curve_groups])
    return GroupSizeData(steps=record, curve_groups=tuple(curve_groups), mean=mean, se=se, theory=theory,
                         groups=np.asarray(groups), variance=np.array(variance), variance_se=np.array(variance_se),
                         lyapunov=reward_variance_by_group_size(bandit, base, list(groups)))


@dataclass(frozen=True)
class ZeroVarianceData:
    p: np.ndarray  # (n,) success rates of the theory curves
    groups: tuple[int, ...]  # G of the curves
    theory: np.ndarray  # (len(groups), n) p^G + (1 - p)^G
    p_points: np.ndarray  # (k,) simulated success rates
    simulated: np.ndarray  # (len(groups), k) share of flat groups in `samples` draws
    samples: int  # groups drawn per point


def zero_variance_data(groups: Sequence[int], p_points: Sequence[float], *, samples: int, seed: int = 0) -> ZeroVarianceData:
    """Theory on a fine p grid; simulated shares from `samples` groups of Bernoulli(p) rewards per point."""
    gen = torch.Generator().manual_seed(seed)
    p = np.linspace(0.0, 1.0, 201)
    sim = np.empty((len(groups), len(p_points)))
    for i, G in enumerate(groups):
        for k, q in enumerate(p_points):
            rewards = torch.bernoulli(torch.full((samples, G), float(q), dtype=torch.float64), generator=gen)  # (N, G)
            advantages = group_advantages(rewards)  # (N, G), exactly 0 for a flat group
            sim[i, k] = float((advantages == 0).all(dim=1).double().mean())
    theory = np.stack([zero_variance_probability(p, G) for G in groups])
    return ZeroVarianceData(p=p, groups=tuple(groups), theory=theory, p_points=np.asarray(p_points, dtype=float),
                            simulated=sim, samples=samples)
