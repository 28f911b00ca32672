"""Group size G: invariance of the mean reward curve, the 1/G stationary fluctuation, and the

Drawing only, into given axes: the runs and the theory behind each panel are computed by
`gspo_dynamics.experiments` (`group_size_data`, `zero_variance_data`; their module docstring says what they are).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from gspo_dynamics.experiments import GroupSizeData, ZeroVarianceData
from gspo_dynamics.plots import style
from gspo_dynamics.theory.finite_group import zero_variance_probability

Z_BAND = 2.0  # bands and error bars: +- 2 standard errors


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
