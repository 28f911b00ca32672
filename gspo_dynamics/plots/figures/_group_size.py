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
from gspo_dynamics.plots import style
from gspo_dynamics.sim import BanditTask, simulate
from gspo_dynamics.theory.bandit import TwoArmBandit
from gspo_dynamics.theory.finite_group import zero_variance_probability
from gspo_dynamics.theory.fluctuations import reward_variance_by_group_size
from gspo_dynamics.theory.hyperparams import Hyperparams
from gspo_dynamics.theory.nonlinear import expected_trajectory

Z_BAND = 2.0  # bands and error bars: +- 2 standard errors


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


TRANSIENT_STEPS = 300  # the mean-curve panel shows the transient, where a G-dependence would show


def draw_mean_curves(ax, d: GroupSizeData, until: int = TRANSIENT_STEPS) -> None:
    colors = (style.FIT, style.ALT, style.OK)
    ax.set_xlim(0, min(until, int(d.steps[-1])))
    for i, G in enumerate(d.curve_groups):
        c = colors[i % len(colors)]
        ax.fill_between(d.steps, d.mean[i] - Z_BAND * d.se[i], d.mean[i] + Z_BAND * d.se[i], color=c, alpha=0.25, lw=0)
        ax.plot(d.steps, d.mean[i], color=c, lw=1.0, label=f"simulation G = {G} (mean $\\pm${Z_BAND:g} s.e.)")
        ax.plot(d.steps, d.theory[i], color=style.THEORY if i == 0 else style.COLORS["black"], ls="--", lw=1.2,
                label=f"theory G = {G} (exact expected map)")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("mean reward R over seeds")
    ax.set_title("mean curves: G enters through the drive (1 - 1/G)")


def draw_fluctuation(ax, d: GroupSizeData) -> None:
    G = d.groups.astype(float)
    ax.errorbar(G, d.variance, yerr=Z_BAND * d.variance_se, fmt="o", color=style.DATA, ms=5, capsize=2,
                label="simulation (stationary half)")
    fine = np.geomspace(G[0], G[-1], 50)
    ax.plot(G, d.lyapunov, color=style.THEORY, ls="--", marker="s", ms=3, label="discrete Lyapunov prediction")
    slope = float(np.polyfit(np.log(G), np.log(d.variance), 1)[0])
    ax.plot(fine, d.lyapunov[-1] * G[-1] / fine, color=style.COLORS["black"], lw=0.8, ls=":", label="slope -1 (1/G)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("group size G (responses per prompt)")
    ax.set_ylabel("stationary Var(R)")
    ax.set_title(f"fluctuation ~ 1/G (fitted slope {slope:.2f})")


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


def draw_zero_variance(ax, d: ZeroVarianceData) -> None:
    for i, G in enumerate(d.groups):
        c = style.CYCLE[i % len(style.CYCLE)]
        ax.plot(d.p, d.theory[i], color=c, label=f"G = {G}")
        ax.plot(d.p_points, d.simulated[i], "o", color=c, ms=4, mfc="white", mew=1.2)
    ax.plot([], [], color=style.DATA, label="theory $p^G + (1-p)^G$")
    ax.plot([], [], "o", color=style.DATA, ms=4, mfc="white", mew=1.2, label=f"simulated ({d.samples} groups per point)")
    ax.set_xlabel("success rate p")
    ax.set_ylabel("share of zero-variance groups")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("groups with no learning signal")


def draw_zero_variance_vs_group(ax, d: ZeroVarianceData, p_values: Sequence[float]) -> None:
    """The same law against G at fixed p (log scale): the share falls geometrically, slowest at extreme p."""
    G = np.arange(2, max(d.groups) * 2 + 1)
    styles = ("-", "--", ":", "-.")  # black lines: the colours already mean G in the other panel
    for i, q in enumerate(p_values):
        ax.plot(G, zero_variance_probability(q, G), color=style.COLORS["black"], ls=styles[i % len(styles)], lw=1.2,
                label=f"p = {q:g}")
        k = np.flatnonzero(np.isclose(d.p_points, q))
        if k.size:
            ax.plot(np.asarray(d.groups), d.simulated[:, k[0]], "o", color=style.COLORS["black"], ms=4, mfc="white", mew=1.2)
    ax.legend(loc="lower left", title="theory at")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylim(1e-8, 2.0)
    ax.set_xlabel("group size G (responses per prompt)")
    ax.set_ylabel("share of zero-variance groups")
    ax.set_title("vs group size at fixed p (points: simulated)")
